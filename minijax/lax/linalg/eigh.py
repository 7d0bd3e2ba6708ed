"""eigh: eigendecomposition of Hermitian (real symmetric) matrices.

``eigh_p`` maps ``[..., n, n]`` to ``(v, w)``: eigenvectors as the columns of
``v`` and real eigenvalues ``w`` in ascending order. It is lowered on CPU to
LAPACK's divide-and-conquer ``syevd``/``heevd`` (jaxlib's
``lapack_?syevd_ffi``/``lapack_?heevd_ffi``) on the whole stack; matrices the
kernel fails on come back as NaNs. The jvp is first-order perturbation theory
for distinct eigenvalues, as in jax.
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
                                        diagonal, eye, info_ok, lapack_call, lapack_target,
                                        matmul, nan_unless, real_dtype, symmetrize)
from minijax.lax.unary import integer_pow, real
from minijax.transforms.ad import Zero, tangent_aval



class EighImplementation(enum.Enum):
    """Eigendecomposition algorithm: QR (LAPACK's, the CPU one), JACOBI (GPU/TPU) or
    QDWH (TPU)."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


eigh_p = Primitive("eigh", multiple_results=True)


def _check_subset(subset_by_index, n: int) -> None:
    if not (subset_by_index is None or tuple(subset_by_index) == (0, n)):
        raise NotImplementedError("subset_by_index not supported on CPU and GPU")


# ---- abstract eval -----------------------------------------------------------------------------

@eigh_p.def_abstract_eval
def _eigh_abstract(x, *, lower, sort_eigenvalues, subset_by_index, algorithm=None):
    batch = batch_dims("eigh", [x], [2])
    check_dtype("eigh", x)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"Argument to symmetric eigendecomposition must have shape "
                         f"[..., n, n], got shape {x.shape[-2:]}")
    n = x.shape[-1]
    d = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
    return [ShapedArray(batch + (n, d), x.dtype), ShapedArray(batch + (d,), real_dtype(x.dtype))]


# ---- lowering ----------------------------------------------------------------------------------

@eigh_p.def_lowering
def _eigh_lower(ctx, x, *, lower, sort_eigenvalues, subset_by_index, algorithm=None):
    aval = x.aval
    _check_subset(subset_by_index, aval.shape[-1])
    if algorithm == EighImplementation.QDWH:
        raise NotImplementedError("QDWH implementation is only supported on TPU")
    if algorithm == EighImplementation.JACOBI:
        raise NotImplementedError("Jacobi implementation is not supported on CPU")
    v_aval, w_aval = ctx.avals_out
    info_aval = ShapedArray(aval.shape[:-2], np.dtype(np.int32))
    base = "heevd_ffi" if dtypes.is_complex(aval.dtype) else "syevd_ffi"
    v, w, info = lapack_call(ctx, lapack_target(base, aval.dtype), [x],
                             [v_aval, w_aval, info_aval],
                             config={"mode": char("V"), "uplo": char("L" if lower else "U")},
                             aliases={0: 0})
    ok = info_ok(ctx, info)
    return [nan_unless(ctx, ok, v), nan_unless(ctx, ok, w)]


# ---- the lax-level function -----------------------------------------------------------------

def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None,
         implementation=None):
    """Eigenvectors and eigenvalues of Hermitian matrices ``[..., n, n]``.

    Parameters
    ----------
    x : array ``[..., n, n]``
    lower : bool
        Without ``symmetrize_input``, which triangle of ``x`` is read.
    symmetrize_input : bool
        Use ``(x + x^H) / 2`` (default).
    sort_eigenvalues : bool
        Ascending order (the LAPACK kernel always sorts).
    subset_by_index : ``(start, end)`` or None; only ``(0, n)`` is supported on CPU.
    implementation : an ``EighImplementation`` (or its value) or None; CPU has QR.

    Returns
    -------
    ``(v, w)``: ``v[..., :, i]`` is the unit eigenvector of eigenvalue ``w[..., i]``
    (``w`` real, ascending).
    """
    if symmetrize_input:
        x = symmetrize(x)
    if subset_by_index is not None:
        subset_by_index = (int(subset_by_index[0]), int(subset_by_index[1]))
    if implementation is not None:
        implementation = EighImplementation(implementation)
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                       subset_by_index=subset_by_index, algorithm=implementation)
    return v, w


# ---- differentiation ------------------------------------------------------------------------

def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm=None):
    # Distinct eigenvalues: with M = v^H da v, dw = real(diag(M)) and
    # dv = v (F * M), F_ij = 1 / (w_j - w_i) off the diagonal and 0 on it.
    a, = primals
    a_dot, = tangents
    aval = get_aval(a)
    n = aval.shape[-1]
    _check_subset(subset_by_index, n)
    v, w_real = eigh_p.bind(symmetrize(a), lower=lower, sort_eigenvalues=sort_eigenvalues,
                            subset_by_index=subset_by_index, algorithm=algorithm)
    if type(a_dot) is Zero:
        return [v, w_real], [Zero(tangent_aval(get_aval(v))), Zero(tangent_aval(get_aval(w_real)))]
    dt = aval.dtype
    w = convert_element_type(w_real, dt)
    shape = get_aval(v).shape
    nb = len(shape) - 2
    eye_n = eye(dt, shape)
    w_cols = _shape.broadcast_in_dim(w, shape, tuple(range(nb)) + (nb + 1,))  # w_j
    w_rows = _shape.broadcast_in_dim(w, shape, tuple(range(nb)) + (nb,))      # w_i
    f = _b.sub(integer_pow(_b.add(eye_n, _b.sub(w_cols, w_rows)), -1), eye_n)
    vh_adot_v = matmul(matmul(H(v), a_dot), v)
    dv = matmul(v, _b.mul(f, vh_adot_v))
    re = real(vh_adot_v) if dtypes.is_complex(dt) else vh_adot_v
    dw = diagonal(re)
    return [v, w_real], [dv, dw]


# ---- registration -----------------------------------------------------------------------------

eigh_p.def_jvp(_eigh_jvp)
def_batch_leading(eigh_p)
