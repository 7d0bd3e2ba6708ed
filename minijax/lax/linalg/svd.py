"""svd: singular value decomposition.

``svd_p`` maps ``[..., m, n]`` to ``(s, u, vt)`` (``(s,)`` without
``compute_uv``) with ``x = u @ diag(s) @ vt``, singular values real and in
descending order. It is lowered on CPU to LAPACK's divide-and-conquer
``gesdd`` (or ``gesvd`` with ``algorithm=SvdAlgorithm.QR``) on the whole
stack; matrices the kernel fails on come back as NaNs. The jvp is jax's
(not defined for full ``u``/``vt`` of a non-square matrix, as in jax).
"""

from __future__ import annotations

import enum

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax import binary as _b
from minijax.lax import shape as _shape
from minijax.lax.convert import convert_element_type
from minijax.lax.linalg._common import (H, batch_dims, char, check_dtype, def_batch_leading,
                                        diag_matrix, diagonal, eye, info_ok, lapack_call,
                                        lapack_target, lower_fun, matmul, nan_unless, real_dtype)
from minijax.lax.unary import real
from minijax.transforms.ad import Zero, tangent_aval


class SvdAlgorithm(enum.Enum):
    """Which SVD kernel to use (CPU: DEFAULT and DIVIDE_AND_CONQUER are ``gesdd``,
    QR is ``gesvd``; JACOBI and POLAR are GPU/TPU algorithms)."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


svd_p = Primitive("svd", multiple_results=True)


def _rank(m: int, n: int, full_matrices: bool, subset_by_index) -> int:
    rank = min(m, n)
    if subset_by_index is not None:
        if full_matrices and tuple(subset_by_index) != (0, rank):
            raise ValueError("full_matrices and subset_by_index cannot both be set")
        rank = min(rank, subset_by_index[1] - subset_by_index[0])
    return rank


# ---- abstract eval -----------------------------------------------------------------------------

@svd_p.def_abstract_eval
def _svd_abstract(x, *, full_matrices, compute_uv, subset_by_index, algorithm=None):
    batch = batch_dims("svd", [x], [2])
    check_dtype("svd", x)
    m, n = x.shape[-2:]
    rank = _rank(m, n, full_matrices, subset_by_index)
    s = ShapedArray(batch + (rank,), real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    u = ShapedArray(batch + (m, m if full_matrices else rank), x.dtype)
    vt = ShapedArray(batch + (n if full_matrices else rank, n), x.dtype)
    return [s, u, vt]


# ---- lowering ----------------------------------------------------------------------------------

def _empty_svd(x, *, full_matrices, compute_uv):
    *batch, m, n = get_aval(x).shape
    dt = get_aval(x).dtype

    def zeros(shape, dtype=dt):
        return _shape.broadcast_in_dim(np.zeros((), dtype), tuple(shape), ())

    s = zeros((*batch, 0), real_dtype(dt))
    if not compute_uv:
        return [s]
    if full_matrices:
        size = max(m, n)
        u = eye(dt, (*batch, size, size))
    else:
        u = zeros((*batch, m, n))
    v = zeros((*batch, 0, 0))
    if m < n:
        u, v = v, u
    return [s, u, v]


@svd_p.def_lowering
def _svd_lower(ctx, x, *, full_matrices, compute_uv, subset_by_index, algorithm=None):
    aval = x.aval
    *batch, m, n = aval.shape
    batch = tuple(batch)
    if not (subset_by_index is None or tuple(subset_by_index) == (0, min(m, n))):
        raise NotImplementedError("subset_by_index not implemented for CPU and GPU")
    if m == 0 or n == 0:
        return lower_fun(ctx, lambda a: _empty_svd(a, full_matrices=full_matrices,
                                                   compute_uv=compute_uv), x)
    algorithm = SvdAlgorithm.DEFAULT if algorithm is None else SvdAlgorithm(algorithm)
    if algorithm in (SvdAlgorithm.DEFAULT, SvdAlgorithm.DIVIDE_AND_CONQUER):
        base = "gesdd_ffi"
    elif algorithm == SvdAlgorithm.QR:
        base = "gesvd_ffi"
    else:
        raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented on "
                                  "CPU.")
    mode = "N" if not compute_uv else ("A" if full_matrices else "S")
    if compute_uv:
        s_aval, u_aval, vt_aval = ctx.avals_out
    else:  # the kernel's u and vt outputs exist but are not written
        s_aval, = ctx.avals_out
        k = min(m, n)
        u_aval = ShapedArray(batch + (m, m if full_matrices else k), aval.dtype)
        vt_aval = ShapedArray(batch + (n if full_matrices else k, n), aval.dtype)
    info_aval = ShapedArray(batch, np.dtype(np.int32))
    _, s, u, vt, info = lapack_call(ctx, lapack_target(base, aval.dtype), [x],
                                    [aval, s_aval, u_aval, vt_aval, info_aval],
                                    config={"mode": char(mode)}, aliases={0: 0})
    ok = info_ok(ctx, info)
    if not compute_uv:
        return [nan_unless(ctx, ok, s)]
    return [nan_unless(ctx, ok, s), nan_unless(ctx, ok, u), nan_unless(ctx, ok, vt)]


# ---- the lax-level function -----------------------------------------------------------------

def svd(x, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None, algorithm=None):
    """Singular value decomposition ``x = u @ diag(s) @ vt`` of ``[..., m, n]``.

    Returns ``(u, s, vt)`` (``u`` ``[..., m, m]`` and ``vt`` ``[..., n, n]``, or
    ``[..., m, k]`` and ``[..., k, n]`` with ``k = min(m, n)`` unless
    ``full_matrices``), or only ``s`` (real, descending) without ``compute_uv``.
    """
    if subset_by_index is not None:
        subset_by_index = (int(subset_by_index[0]), int(subset_by_index[1]))
    if algorithm is not None:
        algorithm = SvdAlgorithm(algorithm)
    out = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                     subset_by_index=subset_by_index, algorithm=algorithm)
    if compute_uv:
        s, u, vt = out
        return u, s, vt
    return out[0]


# ---- differentiation ------------------------------------------------------------------------

def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm=None):
    # With dS = U^H dA V: ds = real(diag(dS)); dU and dV from the off-diagonal part of
    # dS (F_ij = 1 / (s_j^2 - s_i^2)), plus, for non-square A, the components of dA
    # outside the span of U (tall) or V (wide).
    a, = primals
    da, = tangents
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True,
                          subset_by_index=subset_by_index, algorithm=algorithm)
    aval = get_aval(a)
    m, n = aval.shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("Singular value decomposition JVP not implemented for full "
                                  "matrices")
    outs = [s, u, vt] if compute_uv else [s]
    if type(da) is Zero:
        return outs, [Zero(tangent_aval(get_aval(o))) for o in outs]
    dt = aval.dtype
    ut, v = H(u), H(vt)
    ds_mat = matmul(matmul(ut, da), v)
    ds = diagonal(real(ds_mat) if dtypes.is_complex(dt) else ds_mat)
    if not compute_uv:
        return [s], [ds]
    k = get_aval(s).shape[-1]
    shape = get_aval(ds_mat).shape  # [..., k, k]
    nb = len(shape) - 2
    rdt = get_aval(s).dtype
    rshape = shape[:-2] + (k, k)
    s_j = _shape.broadcast_in_dim(s, rshape, tuple(range(nb)) + (nb + 1,))
    s_i = _shape.broadcast_in_dim(s, rshape, tuple(range(nb)) + (nb,))
    s_diffs = _b.mul(_b.add(s_j, s_i), _b.sub(s_j, s_i))
    eye_k = eye(rdt, rshape)
    f = _b.sub(_b.div(np.asarray(1, rdt), _b.add(s_diffs, eye_k)), eye_k)
    f = convert_element_type(f, dt)
    s_j_c, s_i_c = convert_element_type(s_j, dt), convert_element_type(s_i, dt)
    dss = _b.mul(s_j_c, ds_mat)   # dS diag(s)
    sds = _b.mul(s_i_c, ds_mat)   # diag(s) dS
    zero = np.asarray(0, rdt)
    s_zeros = convert_element_type(_b.eq(s, _shape.broadcast_in_dim(zero, get_aval(s).shape,
                                                                    ())), rdt)
    s_inv = _b.sub(_b.div(np.asarray(1, rdt), _b.add(s, s_zeros)), s_zeros)
    s_inv_mat = convert_element_type(diag_matrix(s_inv), dt)
    dudv_diag = _b.mul(_b.mul(np.asarray(0.5, dt), _b.sub(ds_mat, H(ds_mat))), s_inv_mat)
    du = matmul(u, _b.add(_b.mul(f, _b.add(dss, H(dss))), dudv_diag))
    dv = matmul(v, _b.mul(f, _b.add(sds, H(sds))))
    if m > n:
        dav = matmul(da, v)
        rows = _shape.broadcast_in_dim(convert_element_type(s, dt), get_aval(dav).shape,
                                       tuple(range(nb)) + (nb + 1,))
        du = _b.add(du, _b.div(_b.sub(dav, matmul(u, matmul(ut, dav))), rows))
    if n > m:
        dahu = matmul(H(da), u)
        rows = _shape.broadcast_in_dim(convert_element_type(s, dt), get_aval(dahu).shape,
                                       tuple(range(nb)) + (nb + 1,))
        dv = _b.add(dv, _b.div(_b.sub(dahu, matmul(v, matmul(vt, dahu))), rows))
    return [s, u, vt], [ds, du, H(dv)]


# ---- registration -----------------------------------------------------------------------------

svd_p.def_jvp(_svd_jvp)
def_batch_leading(svd_p)
