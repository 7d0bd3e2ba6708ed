"""The special matrices (toeplitz, hilbert, pascal, hadamard, dft, block_diag, ...)."""

from __future__ import annotations

import math
import operator

import numpy as np

from minijax import lax, numpy as jnp
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.numpy._promote import promote_dtypes, promote_dtypes_inexact
from minijax.numpy._reductions import arraylike
from minijax.scipy.linalg._common import _mm, _shape
from minijax.stages.jit import jit


# ---- special matrices -------------------------------------------------------------------------

@jit
def block_diag(*arrs):
    """Block-diagonal matrix of the (at most 2-D) arguments."""
    if not arrs:
        arrs = (jnp.zeros((1, 0)),)
    for i, a in enumerate(arrs):
        arraylike("block_diag", a)
        if np.ndim(a) > 2 and get_aval(a).ndim > 2:
            raise ValueError(f"Arguments to minijax.scipy.linalg.block_diag must have at most "
                             f"2 dimensions, got {a} at argument {i}.")
    blocks = [jnp.atleast_2d(a) for a in promote_dtypes(*arrs)]
    total = sum(_shape(b)[1] for b in blocks)
    rows, col = [], 0
    for b in blocks:
        cols = _shape(b)[1]
        rows.append(jnp.pad(b, ((0, 0), (col, total - col - cols))))
        col += cols
    return jnp.concatenate(rows, axis=0)


def _diagonal_constant(vals, nrows: int, ncols: int, flip: bool):
    """``out[i, j] = vals[(nrows-1) - i + j]`` (Toeplitz) or ``vals[i + j]`` (Hankel,
    ``flip``) for ``vals`` ``[nrows + ncols - 1]``."""
    i = np.arange(nrows)[:, None]
    j = np.arange(ncols)[None, :]
    idx = i + j if flip else (nrows - 1) - i + j
    return vals[idx]


def _toeplitz_1d(c, r):
    m, n = _shape(c)[0], _shape(r)[0]
    if m == 0 or n == 0:
        return jnp.zeros((m, n), jnp.result_type(c, r))
    c, r = promote_dtypes(c, r)
    return _diagonal_constant(jnp.concatenate([jnp.flip(c), r[1:]]), m, n, flip=False)


def toeplitz(c, r=None):
    """Toeplitz matrix with first column ``c`` and first row ``r`` (default
    ``conj(c)``); ``r[0]`` is ignored. Leading dimensions of ``c`` and ``r`` broadcast."""
    arraylike("toeplitz", c)
    c = jnp.atleast_1d(jnp.asarray(c))
    if r is None:
        r = jnp.conj(c)
    else:
        arraylike("toeplitz", r)
        r = jnp.atleast_1d(jnp.asarray(r))
    return jnp.vectorize(_toeplitz_1d, signature="(m),(n)->(m,n)")(c, r)


def _hankel_1d(c, r):
    m, n = _shape(c)[0], _shape(r)[0]
    if m == 0 or n == 0:
        return jnp.zeros((m, n), jnp.result_type(c, r))
    c, r = promote_dtypes(c, r)
    return _diagonal_constant(jnp.concatenate([c, r[1:]]), m, n, flip=True)


def hankel(c, r=None):
    """Hankel matrix with first column ``c`` and last row ``r`` (default zeros);
    ``r[0]`` is ignored. Leading dimensions broadcast."""
    arraylike("hankel", c)
    c = jnp.asarray(c)
    r = jnp.zeros_like(c) if r is None else jnp.asarray(arraylike("hankel", r))
    if c.ndim == 0:
        raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
    if r.ndim == 0:
        raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
    return jnp.vectorize(_hankel_1d, signature="(m),(n)->(m,n)")(c, r)


def circulant(c):
    """Circulant matrix with first column ``c`` (leading dimensions are batch)."""
    arraylike("circulant", c)
    c = jnp.atleast_1d(jnp.asarray(c))
    n = _shape(c)[-1]
    idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % n
    return c[..., idx]


def leslie(f, s):
    """Leslie matrix: fecundities ``f`` ``[n]`` in the first row, survival ``s``
    ``[n-1]`` on the subdiagonal."""
    arraylike("leslie", f)
    arraylike("leslie", s)
    f, s = jnp.atleast_1d(f), jnp.atleast_1d(s)
    if _shape(f)[-1] < 2:
        raise ValueError(f"The length of f along the last axis must be at least 2; got shape "
                         f"{_shape(f)}.")
    if _shape(s)[-1] != _shape(f)[-1] - 1:
        raise ValueError(f"Incorrect lengths for f and s. The length of s along the last axis "
                         f"must be one less than the length of f; got f shape {_shape(f)} and "
                         f"s shape {_shape(s)}.")

    def one(f, s):
        f, s = promote_dtypes(f, s)
        return jnp.diag(s, k=-1).at[0].set(f)

    return jnp.vectorize(one, signature="(n),(m)->(n,n)")(f, s)


def companion(a):
    """Companion matrix of the polynomial with coefficients ``a`` (highest first)."""
    arraylike("companion", a)
    a, = promote_dtypes_inexact(jnp.atleast_1d(a))
    if _shape(a)[-1] < 2:
        raise ValueError(f"The length of `a` along the last axis must be at least 2; got shape "
                         f"{_shape(a)}.")

    def one(a):
        m = _shape(a)[0] - 1
        return jnp.eye(m, m, k=-1, dtype=a.dtype).at[0].set(-a[1:] / a[0])

    return jnp.vectorize(one, signature="(n)->(m,m)")(a)


def fiedler(a):
    """Fiedler matrix ``|a[i] - a[j]|`` (leading dimensions are batch)."""
    arraylike("fiedler", a)
    a = jnp.atleast_1d(a)
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """Fiedler companion matrix of the polynomial with coefficients ``a``: pentadiagonal,
    with the same eigenvalues as ``companion(a)``."""
    arraylike("fiedler_companion", a)
    a, = promote_dtypes_inexact(jnp.atleast_1d(a))
    if _shape(a)[-1] == 0:
        raise ValueError(f"fiedler_companion requires the last axis of 'a' to have nonzero "
                         f"length, but got an array of shape {_shape(a)}.")

    def one(a):
        n = _shape(a)[0] - 1
        if n == 0:
            return jnp.zeros((0, 0), a.dtype)
        a = a / a[0]
        if n == 1:
            return -a[1:].reshape(1, 1)
        # The product of the elementary Fiedler factors F_1 F_2 ... (Fiedler 2003): the
        # coefficients sit on the first two rows/columns of each 2x2 block pattern.
        i = np.arange(n)[:, None]
        j = np.arange(n)[None, :]
        even = i % 2 == 0
        out = jnp.zeros((n, n), a.dtype)
        out = jnp.where((i == 0) & (j == 0), -a[1], out)
        out = jnp.where((i == 1) & (j == 0), 1, out)
        out = jnp.where(even & (j == i + 1), -a[np.minimum(i + 2, n)], out)
        out = jnp.where(even & (j == i + 2), 1, out)
        out = jnp.where(even & (i >= 2) & (j == i - 1), -a[np.minimum(i + 1, n)], out)
        out = jnp.where(~even & (i >= 3) & (j == i - 2), 1, out)
        return out

    return jnp.vectorize(one, signature="(n)->(m,m)")(a)


@jit(static_argnames=("n", "mode"))
def convolution_matrix(a, n: int, mode: str = "full"):
    """Matrix ``M`` with ``M @ v == convolve(a, v, mode)`` for ``v`` of length ``n``."""
    n = operator.index(n)
    if n <= 0:
        raise ValueError(f"n must be a positive integer; got {n}.")
    arraylike("convolution_matrix", a)
    a = jnp.asarray(a)
    if a.ndim == 0:
        raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
    m = _shape(a)[-1]
    if m < 1:
        raise ValueError(f"len(a) must be at least 1; got shape {_shape(a)}.")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
    # Rows of the full (m + n - 1) x n matrix are out[i, j] = a[i - j]; 'same' and
    # 'valid' keep a centred band of rows.
    full = m + n - 1
    if mode == "full":
        start, rows = 0, full
    elif mode == "same":
        start, rows = (min(n, m) - 1) // 2, max(m, n)
    else:
        start, rows = min(n, m) - 1, max(m, n) - min(m, n) + 1
    i = np.arange(start, start + rows)[:, None]
    j = np.arange(n)[None, :]
    k = i - j
    valid = (k >= 0) & (k < m)
    vals = a[..., np.clip(k, 0, m - 1)]
    return jnp.where(valid, vals, jnp.zeros((), a.dtype))


@jit(static_argnames=("n",))
def hilbert(n: int):
    """Hilbert matrix ``1 / (i + j + 1)`` of order ``n``."""
    a = lax.broadcasted_iota(dtypes.default_float(), (n, 1), 0)
    return 1 / (a + a.T + 1)


def _comb(n, k):
    """Binomial coefficients of float arrays (``0`` outside ``0 <= k <= n``), rounded to
    integers."""
    ok = (k >= 0) & (k <= n)
    n, k = jnp.where(ok, n, 0), jnp.where(ok, k, 0)
    val = jnp.exp(lax.lgamma(n + 1.0) - lax.lgamma(k + 1.0) - lax.lgamma(n - k + 1.0))
    return jnp.where(ok, jnp.round(val), 0)


@jit(static_argnames=("n",))
def invhilbert(n: int):
    """Inverse of the Hilbert matrix of order ``n`` (exact integer entries, as floats)."""
    a = jnp.arange(n, dtype=dtypes.default_float())
    i, j = a[:, None], a[None, :]
    s = i + j
    sign = 1 - 2 * (s % 2)
    return (sign * (s + 1) * _comb(n + i, n - j - 1) * _comb(n + j, n - i - 1)
            * _comb(s, i) ** 2)


def _check_kind(kind):
    kind = "symmetric" if kind is None else kind
    valid = ["symmetric", "lower", "upper"]
    if kind not in valid:
        raise ValueError(f"Expected kind to be one of: {valid}; got {kind}")
    return kind


def _triangle_kind(lower, kind: str):
    if kind == "lower":
        return lower
    if kind == "upper":
        return lower.T
    return None


@jit(static_argnames=("n", "kind"))
def pascal(n: int, kind: str | None = None):
    """Pascal matrix of order ``n``: ``'symmetric'`` (default), ``'lower'`` or
    ``'upper'`` triangular."""
    kind = _check_kind(kind)
    a = jnp.arange(n, dtype=np.float32)
    lower = _comb(a[:, None], a[None, :])
    out = _triangle_kind(lower, kind)
    return _mm(lower, lower.T) if out is None else out


@jit(static_argnames=("n", "kind"))
def invpascal(n: int, kind: str | None = None):
    """Inverse of ``pascal(n, kind)``."""
    kind = _check_kind(kind)
    a = jnp.arange(n, dtype=dtypes.default_float())
    i, j = a[:, None], a[None, :]
    lower = (1 - 2 * ((i - j) % 2)) * _comb(i, j)
    out = _triangle_kind(lower, kind)
    return _mm(lower.T, lower) if out is None else out


@jit(static_argnames=("n", "full"))
def helmert(n: int, full: bool = False):
    """Helmert matrix: ``n - 1`` orthonormal contrast rows of length ``n`` (with the
    row ``1/sqrt(n)`` first if ``full``)."""
    if n < 1:
        raise ValueError(f"n must be a positive integer; got {n}.")
    i = np.arange(n - 1)[:, None]
    j = np.arange(n)[None, :]
    k = jnp.asarray(i + 1, dtypes.default_float())
    denom = jnp.sqrt(k * (k + 1))
    h = jnp.where(j <= i, 1 / denom, jnp.where(j == i + 1, -k / denom, 0))
    if full:
        h = jnp.concatenate([jnp.full((1, n), 1 / math.sqrt(n), h.dtype), h], axis=0)
    return h


@jit(static_argnames=("n", "dtype"))
def hadamard(n: int, dtype=int):
    """Hadamard matrix of order ``n`` (a power of 2), Sylvester's construction."""
    if n < 1 or not math.log2(n).is_integer():
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    # H[i, j] = (-1)^popcount(i & j)
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    bits = np.vectorize(lambda v: bin(v).count("1"))(i & j)
    return jnp.asarray(1 - 2 * (bits % 2), dtype=dtype)


@jit(static_argnames=("n", "scale", "dtype"))
def dft(n: int, scale: str | None = None, *, dtype=None):
    """Discrete Fourier transform matrix ``exp(-2 pi i j k / n)``; ``scale`` ``None``,
    ``'sqrtn'`` or ``'n'``."""
    if scale is not None and scale not in ("sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    if dtype is None:
        dtype = dtypes.default_complex()
    else:
        dtype = dtypes.check_user_dtype(dtype, "dft")
        if not dtypes.is_complex(dtype):
            raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
    a = jnp.arange(n, dtype=dtype)
    w = jnp.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
    if scale == "sqrtn":
        w = w / math.sqrt(n)
    elif scale == "n":
        w = w / n
    return w
