"""eig: eigendecomposition of general square matrices (CPU).

``eig_p`` maps ``[..., n, n]`` to ``[w, vl?, vr?]``: complex eigenvalues and,
on request, left and right eigenvectors (columns, unit 2-norm, largest
component real, as LAPACK normalizes them). It is lowered to LAPACK's ``geev``
(jaxlib's ``lapack_?geev_ffi``), which returns real input's eigenvalues as
separate real and imaginary parts; matrices the kernel fails on come back as
NaNs. Eigenvalue derivatives always exist for distinct eigenvalues;
eigenvector derivatives are opt-in (``enable_eigvec_derivs``), as in jax.
"""

from __future__ import annotations

import enum

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax import binary as _b
from minijax.lax import shape as _shape
from minijax.lax.complex import complex as lax_complex
from minijax.lax.convert import convert_element_type
from minijax.lax.linalg._common import (H, T, batch_dims, check_dtype, conj, def_batch_leading,
                                        diagonal, eye, info_ok, lapack_call, lapack_target,
                                        matmul, nan_unless)
from minijax.lax.linalg.lu import lu, lu_solve
from minijax.lax.reduce import argmax, reduce_sum
from minijax.lax.unary import imag, real
from minijax.transforms.ad import Zero, tangent_aval



class EigImplementation(enum.Enum):
    """Eigendecomposition algorithm: LAPACK (the CPU one), CUSOLVER or MAGMA (GPU)."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


eig_p = Primitive("eig", multiple_results=True)

_COMPUTE, _SKIP = ord("V"), ord("N")  # LAPACK's jobvl/jobvr letters


def _complex_dtype(dt) -> np.dtype:
    return np.dtype(np.complex64) if np.dtype(dt) in (np.float32, np.complex64) \
        else np.dtype(np.complex128)


# ---- abstract eval -----------------------------------------------------------------------------

@eig_p.def_abstract_eval
def _eig_abstract(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
                  enable_eigvec_derivs=False, implementation=None):
    batch_dims("eig", [x], [2])
    check_dtype("eig", x)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"The input to eig must be a square matrix. Got shape "
                         f"{x.shape[-2:]}.")
    cdt = _complex_dtype(x.dtype)
    count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    return [ShapedArray(x.shape[:-1], cdt)] + [ShapedArray(x.shape, cdt)] * count


# ---- lowering ----------------------------------------------------------------------------------

@eig_p.def_lowering
def _eig_lower(ctx, x, *, compute_left_eigenvectors, compute_right_eigenvectors,
               enable_eigvec_derivs=False, implementation=None):
    if implementation is not None and implementation != EigImplementation.LAPACK:
        raise ValueError("Only the lapack implementation is supported on CPU.")
    aval = x.aval
    batch = aval.shape[:-2]
    cdt = _complex_dtype(aval.dtype)
    is_real = not dtypes.is_complex(aval.dtype)
    w_aval = ShapedArray(aval.shape[:-1], aval.dtype)
    v_aval = ShapedArray(aval.shape, cdt)
    info_aval = ShapedArray(batch, np.dtype(np.int32))
    results = ([w_aval] if is_real else []) + [w_aval, v_aval, v_aval, info_aval]
    config = {"compute_left": _COMPUTE if compute_left_eigenvectors else _SKIP,
              "compute_right": _COMPUTE if compute_right_eigenvectors else _SKIP}
    *w, vl, vr, info = lapack_call(ctx, lapack_target("geev_ffi", aval.dtype), [x], results,
                                   config=config)
    if is_real:  # (real parts, imaginary parts) -> complex
        w = ctx.op("stablehlo.complex", [w[0], w[1]], ShapedArray(aval.shape[:-1], cdt))
    else:
        w = w[0]
    ok = info_ok(ctx, info)
    out = [nan_unless(ctx, ok, w)]
    if compute_left_eigenvectors:
        out.append(nan_unless(ctx, ok, vl))
    if compute_right_eigenvectors:
        out.append(nan_unless(ctx, ok, vr))
    return out


# ---- the lax-level function -----------------------------------------------------------------

def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
    """Eigenvalues and eigenvectors of general square matrices ``[..., n, n]`` (CPU).

    Returns ``[w, vl, vr]`` (fewer when eigenvectors are not requested): complex
    eigenvalues ``w`` ``[..., n]``; ``vl[..., :, j]`` and ``vr[..., :, j]`` are the left
    (``vl^H x = w vl^H``) and right (``x vr = w vr``) eigenvectors.
    ``enable_eigvec_derivs`` opts into eigenvector derivatives, valid only for
    distinct eigenvalues (see jax issue 2748). ``use_magma`` is ignored (GPU only).
    """
    del use_magma
    if implementation is not None:
        implementation = EigImplementation(implementation)
    return list(eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors),
                           enable_eigvec_derivs=bool(enable_eigvec_derivs),
                           implementation=implementation))


# ---- differentiation ------------------------------------------------------------------------

def _solve(a, b):
    """``a^-1 b`` (linear in ``b``)."""
    lu_, _, perm = lu(a)
    return lu_solve(lu_, perm, b)


def _eig_vec_jvp(w, v, da):
    # Distinct eigenvalues: with P = v^-1 da v, dw = diag(P) and dv = U + v diag(c),
    # U = v (F * P), F_ij = 1 / (w_j - w_i) off the diagonal; c fixes LAPACK's
    # normalization (unit norm, largest-magnitude component real).
    shape = get_aval(v).shape
    nb = len(shape) - 2
    dt = get_aval(v).dtype
    eye_n = eye(dt, shape)
    w_j = _shape.broadcast_in_dim(w, shape, tuple(range(nb)) + (nb + 1,))
    w_i = _shape.broadcast_in_dim(w, shape, tuple(range(nb)) + (nb,))
    f = _b.sub(_b.div(np.asarray(1, dt), _b.add(eye_n, _b.sub(w_j, w_i))), eye_n)
    p = matmul(_solve(v, da), v)
    dw = diagonal(p)
    u = matmul(v, _b.mul(f, p))
    k = argmax(_abs_sq(v), nb, np.int32)  # the largest component of each column
    rows = _shape.broadcasted_iota(np.int32, shape, nb)
    mask = convert_element_type(_b.eq(rows, _shape.broadcast_in_dim(k, shape, _skip(nb, nb))),
                                dt)
    re = _b.mul(real(reduce_sum(_b.mul(conj(v), u), (nb,))), np.asarray(-1, _real(dt)))
    im = _b.div(_b.mul(imag(reduce_sum(_b.mul(mask, u), (nb,))), np.asarray(-1, _real(dt))),
                real(reduce_sum(_b.mul(mask, v), (nb,))))
    c = _shape.broadcast_in_dim(lax_complex(re, im), shape, _skip(nb, nb))
    return dw, _b.add(u, _b.mul(v, c))


def _real(dt):
    return np.finfo(dt).dtype


def _abs_sq(v):
    return _b.add(_b.mul(real(v), real(v)), _b.mul(imag(v), imag(v)))


def _skip(nb: int, axis: int) -> tuple:
    """Broadcast dims for an array of rank ``nb + 1`` missing ``axis`` of rank ``nb + 2``."""
    return tuple(d for d in range(nb + 2) if d != axis)


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs=False, implementation=None):
    a, = primals
    da, = tangents
    if (compute_left_eigenvectors or compute_right_eigenvectors) and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on "
            "the input that minijax cannot check (see the enable_eigvec_derivs argument to "
            "minijax.lax.linalg.eig). Pass enable_eigvec_derivs=True to "
            "minijax.lax.linalg.eig to opt in. See https://github.com/jax-ml/jax/issues/2748 "
            "for discussion.")
    outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=True,
                      enable_eigvec_derivs=enable_eigvec_derivs, implementation=implementation)
    w, vr = outs[0], outs[-1]
    primal = [w] + ([outs[1]] if compute_left_eigenvectors else []) + \
        ([vr] if compute_right_eigenvectors else [])
    if type(da) is Zero:
        return primal, [Zero(tangent_aval(get_aval(o))) for o in primal]
    da = convert_element_type(da, get_aval(vr).dtype)
    if not (compute_left_eigenvectors or compute_right_eigenvectors):
        nd = get_aval(vr).ndim
        return [w], [reduce_sum(_b.mul(_solve(vr, da), T(vr)), (nd - 1,))]
    dw, dvr = _eig_vec_jvp(w, vr, da)
    tangent = [dw]
    if compute_left_eigenvectors:
        _, dvl = _eig_vec_jvp(conj(w), outs[1], H(da))
        tangent.append(dvl)
    if compute_right_eigenvectors:
        tangent.append(dvr)
    return primal, tangent


# ---- registration -----------------------------------------------------------------------------

eig_p.def_jvp(_eig_jvp)
def_batch_leading(eig_p)
