"""Cholesky, the triangular and general solves, LU, QR and the other decompositions
(svd, eigh, schur, hessenberg, polar, ...), on ``minijax.lax.linalg``'s LAPACK primitives."""

from __future__ import annotations

from functools import partial

import numpy as np

from minijax import lax, numpy as jnp
from minijax.api.custom_derivatives import custom_jvp
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.lax import linalg as lax_linalg
from minijax.lax.linalg.lu import lu_solve as _lu_solve_factors
from minijax.numpy._reductions import _check_arraylike
from minijax.numpy.linalg._common import promote_inexact_args
from minijax.scipy.linalg._common import (_check_square, _complex_dtype, _mH, _mm, _shape,
                                          _vector_signature)
from minijax.stages.jit import jit


# ---- Cholesky ---------------------------------------------------------------------------------

@jit(static_argnames=("lower",))
def _cholesky(a, lower: bool):
    a, = promote_inexact_args("cholesky", a)
    factor = lax_linalg.cholesky(a if lower else _mH(a), symmetrize_input=False)
    return factor if lower else _mH(factor)


def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """Cholesky factor of Hermitian positive-definite matrices ``[..., n, n]``: the upper
    factor ``U`` with ``a = U^H U`` (the lower one with ``lower=True``). Only the chosen
    triangle of ``a`` is read."""
    del overwrite_a, check_finite
    return _cholesky(a, bool(lower))


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(c, lower)`` for ``cho_solve``: the Cholesky factor and which triangle it is."""
    del overwrite_a, check_finite
    return cholesky(a, lower=lower), lower


def _tri_solve(c, b, *, lower: bool, transpose_a: bool, conjugate_a: bool,
               unit_diagonal: bool = False):
    return lax_linalg.triangular_solve(c, b, left_side=True, lower=lower,
                                       transpose_a=transpose_a, conjugate_a=conjugate_a,
                                       unit_diagonal=unit_diagonal)


def _cho_solve_2d(c, b, lower: bool):
    # c c^H x = b (lower) or c^H c x = b (upper): two triangular solves.
    y = _tri_solve(c, b, lower=lower, transpose_a=not lower, conjugate_a=not lower)
    return _tri_solve(c, y, lower=lower, transpose_a=lower, conjugate_a=lower)


def _vector_or_matrix(fun, signature: str):
    """Apply ``fun`` (factor ``[n, n]``, right-hand side ``[n, k]``) along ``signature``;
    a vector right-hand side is given a trailing axis of 1."""
    if signature == "(n,n),(n)->(n)":
        def vec(c, b):
            return fun(c, b[:, None])[:, 0]
        return jnp.vectorize(vec, signature=signature)
    return jnp.vectorize(fun, signature=signature)


@jit(static_argnames=("lower",))
def _cho_solve(c, b, lower: bool):
    c, b = promote_inexact_args("cho_solve", c, b)
    sig = _vector_signature("cho_solve", c, b)
    return _vector_or_matrix(partial(_cho_solve_2d, lower=lower), sig)(c, b)


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """Solve ``a x = b`` given ``cho_factor(a)``."""
    del overwrite_b, check_finite
    c, lower = c_and_lower
    return _cho_solve(c, b, bool(lower))


# ---- solves -----------------------------------------------------------------------------------

_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}


@jit(static_argnames=("trans", "lower", "unit_diagonal"))
def _solve_triangular(a, b, trans, lower: bool, unit_diagonal: bool):
    transpose_a, conjugate_a = _TRANS[trans]
    a, b = promote_inexact_args("solve_triangular", a, b)
    sig = _vector_signature("solve_triangular", a, b)
    fun = partial(_tri_solve, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
                  unit_diagonal=unit_diagonal)
    return _vector_or_matrix(fun, sig)(a, b)


def solve_triangular(a, b, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False, debug=None,
                     check_finite: bool = True):
    """Solve ``a x = b`` for triangular ``a`` ``[..., n, n]`` (only the ``lower`` or upper
    triangle is read). ``trans``: ``0``/``'N'`` (``a x = b``), ``1``/``'T'``
    (``a^T x = b``), ``2``/``'C'`` (``a^H x = b``); ``unit_diagonal`` assumes ones on the
    diagonal. ``b`` is ``[n]`` or ``[..., n, k]``."""
    del overwrite_b, debug, check_finite
    if isinstance(trans, bool) or trans not in _TRANS:
        raise ValueError(f"Invalid 'trans' value {trans}")
    return _solve_triangular(a, b, trans, bool(lower), bool(unit_diagonal))


def _pos_solve_2d(a, b, lower: bool):
    """``a^-1 b`` for positive-definite ``a`` ``[n, n]`` and ``b`` ``[n, k]``: Cholesky
    factors of the ``lower`` (or upper) triangle; derivatives as for a general solve."""
    @custom_jvp
    def pos_solve(a, b):
        c = _cholesky(lax.stop_gradient(a), lower)
        return _cho_solve_2d(c, b, lower)

    @pos_solve.defjvp
    def pos_solve_jvp(primals, tangents):
        a, b = primals
        da, db = tangents
        c = _cholesky(a, lower)
        x = _cho_solve_2d(c, b, lower)
        return x, _cho_solve_2d(c, db - _mm(da, x), lower)

    return pos_solve(a, b)


@jit(static_argnames=("assume_a", "lower"))
def _solve(a, b, assume_a: str, lower: bool):
    if assume_a != "pos":
        return jnp.linalg.solve(a, b)
    a, b = promote_inexact_args("solve", a, b)
    a_shape, b_shape = _shape(a), _shape(b)
    _check_square("solve", a)
    vector = len(b_shape) == len(a_shape) - 1
    if vector:
        b = b[..., None]
    fun = jnp.vectorize(partial(_pos_solve_2d, lower=lower), signature="(n,n),(n,k)->(n,k)")
    x = fun(a, b)
    return x[..., 0] if vector else x


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """Solve ``a x = b`` for square ``a`` ``[..., n, n]``; ``b`` is ``[..., n]`` or
    ``[..., n, k]``. ``assume_a``: ``'gen'``, ``'sym'``, ``'her'`` (LU) or ``'pos'``
    (Cholesky of the ``lower`` or upper triangle)."""
    del overwrite_a, overwrite_b, debug, check_finite
    valid = ["gen", "sym", "her", "pos"]
    if assume_a not in valid:
        raise ValueError(f"Expected assume_a to be one of {valid}; got {assume_a!r}")
    return _solve(a, b, assume_a, bool(lower))


# ---- LU ---------------------------------------------------------------------------------------

@jit
def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """``(lu, piv)``: the packed LU factors of ``a`` ``[..., m, n]`` and LAPACK's 0-based
    row swaps, for ``lu_solve``."""
    del overwrite_a, check_finite
    a, = promote_inexact_args("lu_factor", a)
    lu_, pivots, _ = lax_linalg.lu(a)
    return lu_, pivots


def _lu_solve_2d(lu_, perm, b, trans: int):
    return _lu_solve_factors(lu_, perm, b, trans=trans)


@jit(static_argnames=("trans",))
def _lu_solve(lu_, pivots, b, trans: int):
    lu_, b = promote_inexact_args("lu_solve", lu_, b)
    m = _shape(lu_)[-2]
    perm = lax_linalg.lu_pivots_to_permutation(pivots, m)
    sig = _vector_signature("lu_solve", lu_, b)
    if sig == "(n,n),(n)->(n)":
        def fun(lu_, perm, b):
            return _lu_solve_2d(lu_, perm, b[:, None], trans)[:, 0]
    else:
        fun = partial(_lu_solve_2d, trans=trans)
    return jnp.vectorize(fun, signature=sig.replace("(n,n),", "(n,n),(n),"))(lu_, perm, b)


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
    """Solve ``a x = b`` (``trans=1``: ``a^T x = b``, ``2``: ``a^H x = b``) given
    ``lu_factor(a)``."""
    del overwrite_b, check_finite
    if trans not in (0, 1, 2):
        raise ValueError(f"Invalid 'trans' value {trans}; expected 0, 1 or 2")
    lu_, pivots = lu_and_piv
    return _lu_solve(lu_, pivots, b, int(trans))


@jit(static_argnames=("permute_l",))
def _lu(a, permute_l: bool):
    a, = promote_inexact_args("lu", a)
    m, n = _shape(a)[-2:]
    k = min(m, n)
    packed, _, perm = lax_linalg.lu(a)
    dtype = get_aval(a).dtype
    p = (perm[..., None, :] == jnp.arange(m, dtype=perm.dtype)[:, None]).astype(dtype)
    lower = jnp.tril(packed, -1)[..., :, :k] + jnp.eye(m, k, dtype=dtype)
    upper = jnp.triu(packed)[..., :k, :]
    if permute_l:
        return _mm(p, lower), upper
    return p, lower, upper


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """LU decomposition with partial pivoting of ``a`` ``[..., m, n]``: ``(p, l, u)`` with
    ``a = p @ l @ u`` (``(p @ l, u)`` with ``permute_l``)."""
    del overwrite_a, check_finite
    return _lu(a, bool(permute_l))


# ---- QR ---------------------------------------------------------------------------------------

@jit(static_argnames=("mode", "pivoting"))
def _qr(a, mode: str, pivoting: bool):
    a, = promote_inexact_args("qr", a)
    q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=mode != "economic")
    if mode == "r":
        return (r, p[0]) if pivoting else (r,)
    return (q, r, p[0]) if pivoting else (q, r)


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """QR decomposition of ``a`` ``[..., m, n]``. ``mode``: ``'full'`` (``q`` ``[m, m]``),
    ``'economic'`` (``q`` ``[m, k]``, ``r`` ``[k, n]``) or ``'r'`` (``(r,)`` alone);
    ``pivoting`` appends the column permutation ``p`` with ``a[:, p] = q @ r``."""
    del overwrite_a, lwork, check_finite
    if mode not in ("full", "r", "economic"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    return _qr(a, mode, bool(pivoting))


@jit(static_argnames=("mode", "pivoting", "conjugate"))
def _qr_multiply(a, c, mode: str, pivoting: bool, conjugate: bool):
    a, c = promote_inexact_args("qr_multiply", a, c)
    onedim = get_aval(c).ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = _shape(a)[-2:]
    k = min(m, n)
    if mode == "left" and _shape(c)[-2] != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                         f"{_shape(a)} so Q has {k} columns, but c has {_shape(c)[-2]} rows "
                         f"(expected {k}).")
    if mode == "right" and _shape(c)[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                         f"{_shape(a)} so Q has {m} rows, but c has {_shape(c)[-1]} columns "
                         f"(expected {m}).")
    batch = jnp.broadcast_shapes(_shape(a)[:-2], _shape(c)[:-2])
    a = jnp.broadcast_to(a, batch + _shape(a)[-2:])
    c = jnp.broadcast_to(c, batch + _shape(c)[-2:])
    if pivoting:
        r, p, taus = lax_linalg.geqp3(a, jnp.zeros(batch + (n,), np.int32))
        p = p - 1
    else:
        r, taus = lax_linalg.geqrf(a)
    if mode == "left" and m > k:
        c = jnp.concatenate([c, jnp.zeros(batch + (m - k, _shape(c)[-1]), c.dtype)], axis=-2)
    # Q @ c, c @ Q (ormqr), or with ``conjugate`` conj(Q) @ c = (c^T Q^H)^T and similarly.
    if conjugate:
        c = jnp.swapaxes(c, -1, -2)
    out = lax_linalg.ormqr(r, taus, c, left=(mode == "left") != conjugate, transpose=conjugate)
    if conjugate:
        out = jnp.swapaxes(out, -1, -2)
    if mode == "right":
        out = out[..., :k]
    if onedim:
        out = out.ravel()
    r = jnp.triu(r[..., :k, :])
    return (out, r, p) if pivoting else (out, r)


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """``(Q @ c, R)`` (``mode='left'``) or ``(c @ Q, R)`` (``'right'``) for the economic QR
    decomposition of ``a``, without forming ``Q``; ``conjugate`` uses ``conj(Q)``;
    ``pivoting`` appends the column permutation."""
    del overwrite_a, overwrite_c
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    return _qr_multiply(a, c, mode, bool(pivoting), bool(conjugate))


# ---- other decompositions ---------------------------------------------------------------------

@jit(static_argnames=("full_matrices", "compute_uv"))
def _svd(a, full_matrices: bool, compute_uv: bool):
    a, = promote_inexact_args("svd", a)
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """Singular value decomposition ``(u, s, vh)`` of ``a`` ``[..., m, n]`` (``s`` alone
    without ``compute_uv``)."""
    del overwrite_a, check_finite, lapack_driver
    return _svd(a, bool(full_matrices), bool(compute_uv))


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """Determinant of square matrices ``[..., n, n]`` (``minijax.numpy.linalg.det``)."""
    del overwrite_a, check_finite
    return jnp.linalg.det(a)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """Inverse of square matrices ``[..., n, n]`` (``minijax.numpy.linalg.inv``)."""
    del overwrite_a, check_finite
    return jnp.linalg.inv(a)


@jit(static_argnames=("lower", "eigvals_only"))
def _eigh(a, lower: bool, eigvals_only: bool):
    a, = promote_inexact_args("eigh", a)
    v, w = lax_linalg.eigh(a, lower=lower)
    return w if eigvals_only else (w, v)


def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,  # noqa: A002
         check_finite: bool = True):
    """Eigenvalues (ascending) and eigenvectors ``(w, v)`` of Hermitian matrices
    ``[..., n, n]``, reading the ``lower`` (or upper) triangle; ``w`` alone with
    ``eigvals_only``. The generalized problem (``b``) is not implemented, as in jax."""
    del overwrite_a, overwrite_b, turbo, check_finite
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    return _eigh(a, bool(lower), bool(eigvals_only))


@jit(static_argnames=("eigvals_only", "select", "select_range"))
def _eigh_tridiagonal(d, e, eigvals_only: bool, select: str, select_range):
    n = _shape(d)[0]
    real = dtypes.finfo(d.dtype).dtype
    if n <= 1:
        w = jnp.real(d).astype(real)
        vecs = jnp.eye(n, dtype=d.dtype)
    else:
        # The Hermitian tridiagonal matrix, lower triangle read by the dense solver.
        t = jnp.diag(d) + jnp.diag(e, -1) + jnp.diag(jnp.conj(e), 1)
        vecs, w = lax_linalg.eigh(t, lower=True, symmetrize_input=False)
    if select == "i":
        lo, hi = select_range
        w, vecs = w[lo:hi + 1], vecs[:, lo:hi + 1]
    return w if eigvals_only else (w, vecs)


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple[float, float] | None = None, tol: float | None = None,
                     key=None):
    """Eigenvalues (ascending), and eigenvectors unless ``eigvals_only``, of the Hermitian
    tridiagonal matrix with diagonal ``d`` ``[n]`` and subdiagonal ``e`` ``[n-1]``.
    ``select='i'`` with ``select_range=(lo, hi)`` keeps eigenvalues ``lo..hi``
    (inclusive). Computed with the dense Hermitian eigensolver; ``tol`` and ``key``
    (jax's bisection tolerance and inverse-iteration seed) are accepted and unused."""
    del tol, key
    _check_arraylike("eigh_tridiagonal", d)
    _check_arraylike("eigh_tridiagonal", e)
    d, e = jnp.asarray(d), jnp.asarray(e)
    if d.dtype != e.dtype:
        raise TypeError(f"diagonal and off-diagonal values must have same dtype, got "
                        f"{d.dtype} and {e.dtype}")
    if d.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise TypeError(f"Only float32 and float64 inputs are supported as inputs to "
                        f"minijax.scipy.linalg.eigh_tridiagonal, got {d.dtype} and {e.dtype}")
    if d.ndim != 1 or _shape(e) != (max(_shape(d)[0] - 1, 0),):
        raise ValueError(f"eigh_tridiagonal: expected d of shape [n] and e of shape [n-1], "
                         f"got {_shape(d)} and {_shape(e)}")
    if select == "i":
        if select_range is None:
            raise ValueError("for select='i', select_range must be specified.")
        if select_range[0] > select_range[1]:
            raise ValueError("Got empty index range in select_range.")
        select_range = (int(select_range[0]), int(select_range[1]))
    elif select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    elif select != "a":
        raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
    else:
        select_range = None
    return _eigh_tridiagonal(d, e, bool(eigvals_only), select, select_range)


@jit(static_argnames=("output",))
def _schur(a, output: str):
    a, = promote_inexact_args("schur", a)
    if output == "complex":
        a = a.astype(_complex_dtype(a.dtype))
    return lax_linalg.schur(a)


def schur(a, output: str = "real"):
    """Schur decomposition ``(t, z)`` with ``a = z @ t @ z^H`` of square ``a``: ``t``
    quasi-upper-triangular (``output='real'``) or upper triangular (``'complex'``)."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got "
                         f"output={output!r}.")
    return _schur(a, output)


@jit(static_argnames=("calc_q",))
def _hessenberg(a, calc_q: bool):
    a, = promote_inexact_args("hessenberg", a)
    n = _check_square("hessenberg", a)
    if n == 0:
        return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
    packed, taus = lax_linalg.hessenberg(a)
    h = jnp.triu(packed, -1)
    if not calc_q:
        return h
    batch = _shape(a)[:-2]
    q_sub = lax_linalg.householder_product(packed[..., 1:, :-1], taus)
    q = jnp.zeros(batch + (n, n), a.dtype)
    q = q.at[..., 0, 0].set(1).at[..., 1:, 1:].set(q_sub)
    return h, q


def hessenberg(a, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True):
    """Upper Hessenberg form ``h`` of square ``a`` (and ``q`` with ``a = q h q^H`` if
    ``calc_q``)."""
    del overwrite_a, check_finite
    return _hessenberg(a, bool(calc_q))


def _polar_2d(a, side: str, method: str):
    m, n = _shape(a)
    if method == "qdwh" and not ((m >= n and side == "right") or (m < n and side == "left")):
        raise NotImplementedError(f"method='qdwh' only supports mxn matrices where m < n where "
                                  f"side='right' and m >= n side='left', got {(m, n)} with "
                                  f"side={side!r}")
    u, s, vh = lax_linalg.svd(a, full_matrices=False)
    s = s.astype(u.dtype)
    unitary = _mm(u, vh)
    if side == "right":
        posdef = _mm(_mH(vh) * s[None, :], vh)
    else:
        posdef = _mm(u * s[None, :], _mH(u))
    return unitary, posdef


@jit(static_argnames=("side", "method"))
def _polar(a, side: str, method: str):
    a, = promote_inexact_args("polar", a)
    sig = "(m,n)->(m,n),(n,n)" if side == "right" else "(m,n)->(m,n),(m,m)"
    return jnp.vectorize(partial(_polar_2d, side=side, method=method), signature=sig)(a)


def polar(a, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
          max_iterations: int | None = None):
    """Polar decomposition ``(u, p)``: ``a = u @ p`` (``side='right'``) or ``p @ u``
    (``'left'``) with ``u`` unitary and ``p`` Hermitian positive semi-definite.
    Both methods are computed from the SVD (``eps`` and ``max_iterations``, QDWH
    parameters, are unused); ``'qdwh'`` keeps jax's shape restrictions."""
    del eps, max_iterations
    _check_arraylike("polar", a)
    if np.ndim(a) < 2 and get_aval(a).ndim < 2:
        raise ValueError("The input `a` must be at least a 2-D array.")
    if side not in ("right", "left"):
        raise ValueError("The argument `side` must be either 'right' or 'left'.")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"Unknown polar decomposition method {method}.")
    return _polar(a, side, method)
