"""The decompositions and what solves directly with them: cholesky, solve, inv, slogdet,
det, qr, eigh/eigvalsh, eig/eigvals, svd/svdvals, and the simple matrix_transpose,
diagonal and trace."""

from __future__ import annotations


import numpy as np

from minijax import lax
from minijax.api.custom_derivatives import custom_jvp
from minijax.core import dtypes
from minijax.lax import linalg as lax_linalg
from minijax.lax.linalg._common import (H as _H, T as _T, diagonal as _main_diagonal, eye as _eye,
                                        matmul as _matmul, permute_rows as _permute_rows)
from minijax.lax.linalg.lu import lu_solve as _lu_solve
from minijax.numpy._promote import broadcast_shapes, broadcast_to_shape, promote_dtypes_inexact
from minijax.numpy._reductions import _check_arraylike, sum as _np_sum
from minijax.numpy.linalg._common import (EighResult, EigResult, QRResult, SlogdetResult, SVDResult,
                                          _count_last, _dtype, _full, _ndim, _real, _select,
                                          _shape, _sum_last, promote_inexact_args)
from minijax.stages.jit import jit


# ---- simple functions --------------------------------------------------------------------------

def matrix_transpose(x, /):
    """Swap the last two axes of ``x`` (at least 2-D)."""
    x = _check_arraylike("jnp.linalg.matrix_transpose", x)
    nd = _ndim(x)
    if nd < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={nd}")
    return lax.transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def diagonal(x, /, *, offset: int = 0):
    """The ``offset``-th diagonals of the matrices of ``x``: shape ``[..., k]``."""
    x = _check_arraylike("jnp.linalg.diagonal", x)
    shape = _shape(x)
    if len(shape) < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got "
                         f"{len(shape)}")
    *batch, m, n = shape
    nb = len(batch)
    offset = int(offset)
    if offset > 0:
        x = lax.slice(x, (0,) * (nb + 1) + (min(offset, n),), tuple(shape))
    elif offset < 0:
        x = lax.slice(x, (0,) * nb + (min(-offset, m), 0), tuple(shape))
    return _main_diagonal(x)


def trace(x, /, *, offset: int = 0, dtype=None):
    """Sum of the ``offset``-th diagonals of the matrices of ``x``: shape ``[...]``."""
    x = _check_arraylike("jnp.linalg.trace", x)
    return _np_sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


# ---- cholesky ---------------------------------------------------------------------------------

@jit(static_argnames=("upper", "symmetrize_input"))
def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """Cholesky factor of Hermitian positive-definite matrices ``[..., n, n]``.

    Returns the lower factor ``L`` with ``a = L @ L^H`` (the upper factor ``L^H`` if
    ``upper``); matrices that are not positive definite give NaNs.
    """
    a, = promote_inexact_args("jnp.linalg.cholesky", a)
    L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(L) if upper else L


# ---- solve, inv ---------------------------------------------------------------------------------

@custom_jvp
def _solve_matrices(a, b):
    """``a^-1 b`` for ``a`` ``[..., m, m]`` and ``b`` ``[..., m, k]`` (same batch dims)."""
    lu_, _, perm = lax_linalg.lu(lax.stop_gradient(a))
    return _lu_solve(lu_, perm, b)


@_solve_matrices.defjvp
def _solve_matrices_jvp(primals, tangents):
    # dx = a^-1 (db - da x), solved with the factors of the primal solve.
    a, b = primals
    da, db = tangents
    lu_, _, perm = lax_linalg.lu(a)
    x = _lu_solve(lu_, perm, b)
    dx = _lu_solve(lu_, perm, lax.sub(db, _matmul(da, x)))
    return x, dx


def _solve_linear(a, b):
    """``a^-1 b`` for ``a`` and ``b`` ``[..., m, m]``, linear in ``b`` through
    transposable primitives only (for use on tangents inside jvp rules, where the
    custom_jvp ``_solve_matrices`` would have to be transposed)."""
    lu_, _, perm = lax_linalg.lu(a)
    return _lu_solve(lu_, perm, b)


@jit
def solve(a, b):
    """Solve ``a @ x = b`` for square ``a`` ``[..., m, m]``.

    ``b`` is a vector ``[m]`` or a stack of matrices ``[..., m, n]``; leading
    dimensions broadcast. The LU factors of ``a`` are reused by the derivatives.
    """
    a, b = promote_inexact_args("jnp.linalg.solve", a, b)
    a_shape, b_shape = _shape(a), _shape(b)
    if len(a_shape) < 2:
        raise ValueError(f"left hand array must be at least two dimensional; got "
                         f"a.shape={a_shape}")
    if (len(b_shape) > 1 and len(a_shape) == len(b_shape) + 1
            and a_shape[-1] == b_shape[-1] and a_shape[-1] != b_shape[-2]):
        raise ValueError(f"Invalid shapes for solve: {a_shape}, {b_shape}. Prior to JAX "
                         f"v0.5.0, this would have been treated as a batched 1-dimensional "
                         f"solve. To recover this behavior, use solve(a, b[..., None])"
                         f".squeeze(-1).")
    m = a_shape[-1]
    vector = len(b_shape) == 1
    if a_shape[-2] != m or (b_shape[0] if vector else b_shape[-2]) != m:
        raise ValueError(f"solve: a must have shape [..., m, m] and b [m] or [..., m, n]; "
                         f"got a.shape={a_shape}, b.shape={b_shape}")
    b_batch = () if vector else b_shape[:-2]
    batch = broadcast_shapes(a_shape[:-2], b_batch)
    if vector:
        b = lax.reshape(b, (m, 1))
    k = _shape(b)[-1]
    a = broadcast_to_shape(a, batch + (m, m))
    b = broadcast_to_shape(b, batch + (m, k))
    x = _solve_matrices(a, b)
    return lax.reshape(x, batch + (m,)) if vector else x


@jit
def inv(a):
    """Inverse of square matrices ``[..., n, n]`` (via ``solve``)."""
    a = _check_arraylike("jnp.linalg.inv", a)
    shape = _shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to inv must have shape [..., n, n], got {shape}.")
    a, = promote_dtypes_inexact(a)
    return solve(a, _eye(_dtype(a), shape))


# ---- slogdet, det --------------------------------------------------------------------------------

def _entry(a, i: int, j: int):
    """``a[..., i, j]``."""
    shape = _shape(a)
    nb = len(shape) - 2
    x = lax.slice(a, (0,) * nb + (i, j), (*shape[:-2], i + 1, j + 1))
    return lax.reshape(x, shape[:-2])


def _log_abs(x):
    """log |x| (real for complex x)."""
    return lax.log(lax.abs(x))


def _sign_of(x):
    """x / |x| (0 at 0), the sign of a real or complex number."""
    if not dtypes.is_complex(_dtype(x)):
        return lax.sign(x)
    mag = lax.convert_element_type(lax.abs(x), _dtype(x))
    zero = _full(_shape(x), 0, _dtype(x))
    safe = _select(lax.eq(mag, zero), _full(_shape(x), 1, _dtype(x)), mag)
    return _select(lax.eq(mag, zero), zero, lax.div(x, safe))


def _slogdet_small_values(a):
    n = _shape(a)[-1]
    if n == 1:
        d = _entry(a, 0, 0)
    else:
        d = lax.sub(lax.mul(_entry(a, 0, 0), _entry(a, 1, 1)),
                    lax.mul(_entry(a, 0, 1), _entry(a, 1, 0)))
    return _sign_of(d), _log_abs(d)


@custom_jvp
def _slogdet_small(a):
    return _slogdet_small_values(a)


@_slogdet_small.defjvp
def _slogdet_small_jvp(primals, tangents):
    x, = primals
    g, = tangents
    n = _shape(x)[-1]
    sign, ans = _slogdet_small_values(x)
    e = _entry
    if n == 1:
        ans_dot = lax.div(e(g, 0, 0), e(x, 0, 0))
    else:
        det = lax.sub(lax.mul(e(x, 0, 0), e(x, 1, 1)), lax.mul(e(x, 0, 1), e(x, 1, 0)))
        num = lax.add(lax.sub(lax.mul(e(g, 0, 0), e(x, 1, 1)), lax.mul(e(g, 0, 1), e(x, 1, 0))),
                      lax.sub(lax.mul(e(g, 1, 1), e(x, 0, 0)), lax.mul(e(g, 1, 0), e(x, 0, 1))))
        ans_dot = lax.div(num, det)
    return (sign, ans), _slogdet_tangents(sign, ans_dot)


def _slogdet_tangents(sign, ans_dot):
    """(sign_dot, logabsdet_dot) from d log det = ans_dot (complex: its imaginary part
    turns the sign)."""
    if dtypes.is_complex(_dtype(ans_dot)):
        re = lax.convert_element_type(lax.real(ans_dot), _dtype(ans_dot))
        return lax.mul(lax.sub(ans_dot, re), sign), lax.real(ans_dot)
    return lax.mul(sign, np.asarray(0, _dtype(sign))), ans_dot


def _parity_sign(parity, dtype):
    """(-1) ** parity, as ``dtype``."""
    odd = lax.rem(parity, np.int32(2))
    return lax.convert_element_type(lax.sub(np.int32(1), lax.mul(np.int32(2), odd)), dtype)


def _slogdet_lu_values(a):
    dt = _dtype(a)
    lu_, pivots, _ = lax_linalg.lu(a)
    diag = _main_diagonal(lu_)
    zero = _full(_shape(diag), 0, dt)
    is_zero = lax.reduce_or(lax.eq(diag, zero), (_ndim(diag) - 1,))
    iota = lax.broadcasted_iota(np.int32, _shape(pivots), _ndim(pivots) - 1)
    parity = _count_last(lax.ne(pivots, iota))
    if dtypes.is_complex(dt):
        sign = lax.reduce_prod(_sign_of(diag), (_ndim(diag) - 1,))
    else:
        sign = _full(_shape(parity), 1, dt)
        parity = lax.add(parity, _count_last(lax.lt(diag, zero)))
    batch = _shape(parity)
    sign = _select(is_zero, _full(batch, 0, dt), lax.mul(sign, _parity_sign(parity, dt)))
    logdet = _sum_last(_log_abs(diag))
    logdet = _select(is_zero, _full(batch, -np.inf, _dtype(logdet)), logdet)
    return sign, logdet


@custom_jvp
def _slogdet_lu(a):
    return _slogdet_lu_values(a)


@_slogdet_lu.defjvp
def _slogdet_lu_jvp(primals, tangents):
    x, = primals
    g, = tangents
    sign, ans = _slogdet_lu_values(x)
    ans_dot = trace(_solve_linear(x, g))
    return (sign, ans), _slogdet_tangents(sign, ans_dot)


@jit(static_argnames=("method",))
def slogdet(a, *, method: str | None = None):
    """Sign and natural log of the absolute value of the determinant of ``[..., n, n]``.

    Returns ``SlogdetResult(sign, logabsdet)``; a singular matrix has sign 0 and
    logabsdet ``-inf``. ``method`` is ``'lu'`` (default) or ``'qr'``.
    """
    a, = promote_inexact_args("jnp.linalg.slogdet", a)
    shape = _shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Argument to slogdet() must have shape [..., n, n], got {shape}")
    if method is None or method == "lu":
        if shape[-1] in (1, 2):
            return SlogdetResult(*_slogdet_small(a))
        return SlogdetResult(*_slogdet_lu(a))
    if method == "qr":
        return SlogdetResult(*_slogdet_qr(a))
    raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' (`None`), "
                     f"and 'qr'.")


def _slogdet_qr_values(a):
    if dtypes.is_complex(_dtype(a)):
        raise NotImplementedError("slogdet method='qr' not implemented for complex inputs")
    n = _shape(a)[-1]
    r, taus = lax_linalg.geqrf(a)
    diag = _main_diagonal(r)
    last = _ndim(diag) - 1
    logdet = lax.reduce_sum(_log_abs(diag), (last,))
    sign = lax.reduce_prod(lax.sign(diag), (last,))
    # Each Householder reflector with tau != 0 has determinant -1.
    taus = lax.slice_in_dim(taus, 0, n - 1, axis=_ndim(taus) - 1)
    zero = _full(_shape(taus), 0, _dtype(taus))
    flips = _select(lax.ne(taus, zero), _full(_shape(taus), -1, _dtype(taus)),
                       _full(_shape(taus), 1, _dtype(taus)))
    return lax.mul(sign, lax.reduce_prod(flips, (last,))), logdet


@custom_jvp
def _slogdet_qr(a):
    return _slogdet_qr_values(a)


@_slogdet_qr.defjvp
def _slogdet_qr_jvp(primals, tangents):
    x, = primals
    g, = tangents
    sign, ans = _slogdet_qr_values(x)
    return (sign, ans), _slogdet_tangents(sign, trace(_solve_linear(x, g)))


def _cofactor_solve(a, b):
    """``(det(a), adj(a) @ b)`` for ``a``, ``b`` ``[..., n, n]``, accurate for ``a`` of
    rank ``n - 1`` too (where ``det(a) a^-1`` is not defined).

    With ``P a = L U``, ``adj(a) b = det(a) U^-1 L^-1 P b``. Writing ``U = D U'``,
    ``D = diag(1, ..., 1, det(a))`` (so ``U'`` is ``U`` with its last diagonal entry
    replaced by ``1 / (det(a) / u_nn)``, finite while the first ``n - 1`` pivots are
    non-zero), ``adj(a) b = U'^-1 [det(a) y_1, ..., det(a) y_{n-1}, y_n]`` with
    ``y = L^-1 P b``. When ``U'`` is singular (rank below ``n - 1``) the adjugate is 0.
    """
    shape = _shape(a)
    n = shape[-1]
    if n == 1:
        return _entry(a, 0, 0), b
    dt = _dtype(a)
    batch = shape[:-2]
    nb = len(batch)
    lu_, pivots, perm = lax_linalg.lu(a)
    diag = _main_diagonal(lu_)
    iota = lax.broadcasted_iota(np.int32, _shape(pivots), nb)
    parity = _count_last(lax.ne(pivots, iota))
    sign = _parity_sign(parity, dt)
    partial = lax.mul(lax.cumprod(diag, axis=nb),
                      lax.broadcast_in_dim(sign, _shape(diag), tuple(range(nb))))
    det = lax.reshape(lax.slice_in_dim(partial, n - 1, n, axis=nb), batch)
    det_minor = lax.reshape(lax.slice_in_dim(partial, n - 2, n - 1, axis=nb), batch)
    # U': the last diagonal entry replaced.
    corner = lax.div(_full(batch, 1, dt), det_minor)
    is_corner = lax.bitwise_and(
        lax.eq(lax.broadcasted_iota(np.int32, shape, nb), np.int32(n - 1)),
        lax.eq(lax.broadcasted_iota(np.int32, shape, nb + 1), np.int32(n - 1)))
    lu_ = _select(is_corner, lax.broadcast_in_dim(corner, shape, tuple(range(nb))), lu_)
    # Rank below n - 1: U' is singular; the adjugate is zero.
    ones = _full(batch + (n,), 1, dt)
    d = lax_linalg.triangular_solve(lu_, ones, left_side=True, lower=False)
    bad = lax.bitwise_not(lax.reduce_and(lax.is_finite(_real(d)), (nb,)))
    if dtypes.is_complex(dt):
        bad = lax.bitwise_or(bad, lax.bitwise_not(lax.reduce_and(lax.is_finite(lax.imag(d)),
                                                                 (nb,))))
    bad = lax.broadcast_in_dim(bad, shape, tuple(range(nb)))
    zeros = _full(shape, 0, dt)
    x = _select(bad, zeros, b)
    x = _permute_rows(x, perm)
    x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    scale = _select(
        lax.eq(lax.broadcasted_iota(np.int32, shape, nb), np.int32(n - 1)),
        _full(shape, 1, dt), lax.broadcast_in_dim(det, shape, tuple(range(nb))))
    x = lax.mul(x, scale)
    x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
    return det, _select(bad, zeros, x)


def _det_2x2(a):
    e = _entry
    return lax.sub(lax.mul(e(a, 0, 0), e(a, 1, 1)), lax.mul(e(a, 0, 1), e(a, 1, 0)))


def _det_3x3(a):
    e = _entry

    def prod3(i, j, k):
        return lax.mul(lax.mul(e(a, 0, i), e(a, 1, j)), e(a, 2, k))
    plus = lax.add(lax.add(prod3(0, 1, 2), prod3(1, 2, 0)), prod3(2, 0, 1))
    minus = lax.add(lax.add(prod3(2, 1, 0), prod3(0, 2, 1)), prod3(1, 0, 2))
    return lax.sub(plus, minus)


@custom_jvp
def _det(a):
    sign, logdet = slogdet(a)
    return lax.mul(sign, lax.convert_element_type(lax.exp(logdet), _dtype(sign)))


@_det.defjvp
def _det_jvp(primals, tangents):
    x, = primals
    g, = tangents
    y, z = _cofactor_solve(x, g)
    return y, trace(z)


@jit
def det(a):
    """Determinant of square matrices ``[..., n, n]``."""
    a, = promote_inexact_args("jnp.linalg.det", a)
    shape = _shape(a)
    if len(shape) >= 2 and shape[-2:] == (2, 2):
        return _det_2x2(a)
    if len(shape) >= 2 and shape[-2:] == (3, 3):
        return _det_3x3(a)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        return _det(a)
    raise ValueError(f"Argument to _det() must have shape [..., n, n], got {shape}")


# ---- qr, eigh, svd, eig ----------------------------------------------------------------------

@jit(static_argnames=("mode",))
def qr(a, mode: str = "reduced"):
    """QR decomposition of ``[..., m, n]``.

    ``mode``: ``'reduced'`` (default; ``Q`` ``[..., m, k]``, ``R`` ``[..., k, n]``,
    ``k = min(m, n)``), ``'complete'`` (``Q`` ``[..., m, m]``), ``'r'`` (only ``R``)
    or ``'raw'`` (LAPACK's Householder form: ``(h^T, tau)``).
    """
    a, = promote_inexact_args("jnp.linalg.qr", a)
    if mode == "raw":
        h, taus = lax_linalg.geqrf(a)
        return QRResult(matrix_transpose(h), taus)
    if mode in ("reduced", "r", "full"):
        full_matrices = False
    elif mode == "complete":
        full_matrices = True
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    q, r = lax_linalg.qr(a, pivoting=False, full_matrices=full_matrices)
    if mode == "r":
        return r
    return QRResult(q, r)


@jit(static_argnames=("UPLO", "symmetrize_input"))
def eigh(a, UPLO: str | None = None, symmetrize_input: bool = True):  # noqa: N803 (numpy's name)
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices ``[..., n, n]``.

    Returns ``EighResult(eigenvalues, eigenvectors)``; ``UPLO`` ('L' or 'U') picks
    the triangle read when ``symmetrize_input`` is False.
    """
    a = _check_arraylike("jnp.linalg.eigh", a)
    if UPLO is None or UPLO == "L":
        lower = True
    elif UPLO == "U":
        lower = False
    else:
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
    a, = promote_dtypes_inexact(a)
    v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
    return EighResult(w, v)


@jit(static_argnames=("UPLO", "symmetrize_input"))
def eigvalsh(a, UPLO: str | None = "L", *, symmetrize_input: bool = True):  # noqa: N803
    """Eigenvalues (ascending) of Hermitian matrices ``[..., n, n]``."""
    a, = promote_inexact_args("jnp.linalg.eigvalsh", a)
    return eigh(a, UPLO, symmetrize_input=symmetrize_input).eigenvalues


def eig(a):
    """Eigenvalues and right eigenvectors of general square matrices (complex results).

    Returns ``EigResult(eigenvalues, eigenvectors)``. CPU only, as in jax.
    """
    a, = promote_inexact_args("jnp.linalg.eig", a)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


@jit
def eigvals(a):
    """Eigenvalues of general square matrices (complex)."""
    a, = promote_inexact_args("jnp.linalg.eigvals", a)
    return lax_linalg.eig(a, compute_left_eigenvectors=False,
                          compute_right_eigenvectors=False)[0]


def _sort_desc_with(s, *others):
    """Sort ``s`` descending along the last axis, carrying ``others`` along."""
    last = _ndim(s) - 1
    out = lax.sort((lax.neg(s),) + tuple(others), dimension=last, num_keys=1)
    return (lax.neg(out[0]),) + tuple(out[1:])


@jit(static_argnames=("full_matrices", "compute_uv", "hermitian", "subset_by_index"))
def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: tuple[int, int] | None = None):
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` of ``[..., m, n]``.

    Returns ``SVDResult(U, S, Vh)`` (``S`` real, descending), or only ``S`` without
    ``compute_uv``. With ``hermitian`` the decomposition comes from ``eigh``.
    """
    a, = promote_inexact_args("jnp.linalg.svd", a)
    if hermitian:
        v, w = lax_linalg.eigh(a, subset_by_index=subset_by_index)
        s = lax.abs(w)
        if not compute_uv:
            return _sort_desc_with(s)[0]
        sign = lax.sign(w)
        idx = lax.broadcasted_iota(np.int32, _shape(s), _ndim(s) - 1)
        s, idx, sign = _sort_desc_with(s, idx, sign)
        # Columns of v in the new order: u = v[..., :, idx].
        u = _T(_permute_rows(_T(v), idx))
        sign_c = lax.convert_element_type(sign, _dtype(u))
        scaled = lax.mul(u, lax.broadcast_in_dim(sign_c, _shape(u),
                                                 (*range(_ndim(u) - 2), _ndim(u) - 1)))
        return SVDResult(u, s, _H(scaled))
    if compute_uv:
        u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True,
                                  subset_by_index=subset_by_index)
        return SVDResult(u, s, vh)
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=False,
                          subset_by_index=subset_by_index)


def svdvals(x, /):
    """Singular values of ``[..., m, n]`` (descending)."""
    x, = promote_inexact_args("jnp.linalg.svdvals", x)
    return svd(x, compute_uv=False, hermitian=False)
