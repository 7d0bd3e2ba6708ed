"""Polynomials and 1-D convolutions of minijax.numpy: ``convolve``/``correlate`` (one
``conv_general_dilated``), ``vander``, ``polyval``, ``polyadd``/``polysub``/``polymul``/
``polydiv``, ``polyder``/``polyint``, ``poly``, ``roots`` (eigenvalues of the companion
matrix) and ``polyfit`` (least squares on the scaled Vandermonde matrix).

Coefficients are ordered from the highest power down, as in NumPy.
"""

from __future__ import annotations

import operator

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.numpy._promote import ensure_array, promote_dtypes, promote_dtypes_inexact
from minijax.numpy._setops import concrete, trim_zeros
from minijax.numpy._shape import atleast_1d, concatenate, flip


def _array(name: str, x):
    if isinstance(x, (list, tuple)):
        raise TypeError(f"{name} requires ndarray or scalar arguments, got "
                        f"{type(x).__name__}. Use minijax.numpy.asarray(...) to convert it.")
    return ensure_array(x)


def _shape(x) -> tuple:
    return get_aval(x).shape


def _dtype(x) -> np.dtype:
    return get_aval(x).dtype


def _static_int(x, what: str) -> int:
    try:
        return operator.index(x)
    except TypeError:
        from minijax.core.errors import ConcretizationTypeError
        raise ConcretizationTypeError(f"{what} must be a static integer, got {x!r}") from None


# ---- convolution ------------------------------------------------------------------------------

def _conv(name: str, x, y, mode: str, precision, preferred_element_type):
    x, y = _array(name, x), _array(name, y)
    if len(_shape(x)) != 1 or len(_shape(y)) != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    if preferred_element_type is None:
        x, y = promote_dtypes_inexact(x, y)
    else:
        x, y = promote_dtypes(x, y)
    x, y = ensure_array(x), ensure_array(y)
    if _shape(x)[0] == 0 or _shape(y)[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {_shape(x)} and "
                         f"{_shape(y)}.")
    reverse_out = False
    if name == "correlate":
        from minijax.numpy._math import conj
        y = conj(y)
        if _shape(x)[0] < _shape(y)[0]:
            x, y, reverse_out = y, x, True
    else:
        if _shape(x)[0] < _shape(y)[0]:
            x, y = y, x
        y = flip(y)
    m = _shape(y)[0]
    if mode == "valid":
        padding = [(0, 0)]
    elif mode == "same":
        padding = [(m // 2, m - m // 2 - 1)]
    elif mode == "full":
        padding = [(m - 1, m - 1)]
    else:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    out = lax.conv_general_dilated(lax.reshape(x, (1, 1) + _shape(x)),
                                   lax.reshape(y, (1, 1) + _shape(y)), (1,), padding,
                                   precision=precision,
                                   preferred_element_type=preferred_element_type)
    out = lax.reshape(out, _shape(out)[2:])
    return lax.rev(out, (0,)) if reverse_out else out


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """The discrete linear convolution of two 1-D arrays (``mode``: ``'full'``, ``'same'``,
    ``'valid'``)."""
    return _conv("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation of two 1-D arrays, ``sum(a[n + k] * conj(v[k]))``."""
    return _conv("correlate", a, v, mode, precision, preferred_element_type)


# ---- evaluation and arithmetic ------------------------------------------------------------------

def vander(x, N: int | None = None, increasing: bool = False):
    """The Vandermonde matrix: columns ``x ** (N - 1)``, ..., ``x ** 0`` (or increasing)."""
    from minijax.numpy._ufuncs import power
    x = _array("vander", x)
    if len(_shape(x)) != 1:
        raise ValueError("x must be a one-dimensional array")
    N = _shape(x)[0] if N is None else _static_int(N, "'N' argument of jnp.vander()")
    if N < 0:
        raise ValueError("N must be nonnegative")
    powers = lax.iota(_dtype(x), N)
    if not increasing:
        powers = lax.sub(np.asarray(N - 1, _dtype(x)), powers)
    return power(lax.expand_dims(x, (1,)), lax.expand_dims(powers, (0,)))


def polyval(p, x, *, unroll: int = 16):
    """The polynomial with coefficients ``p`` at ``x`` (Horner's rule in a ``scan``)."""
    p, x = promote_dtypes(_array("polyval", p), _array("polyval", x))
    p, x = ensure_array(p), ensure_array(x)
    from minijax.numpy._promote import broadcast_shapes
    from minijax.numpy._ufuncs import add, multiply
    shape = broadcast_shapes(_shape(p)[1:], _shape(x))
    y = lax.broadcast_in_dim(np.zeros((), _dtype(x)), shape, ())
    y, _ = lax.scan(lambda acc, c: (add(multiply(acc, x), c), None), y, p, unroll=unroll)
    return y


def polyadd(a1, a2):
    """The sum of two polynomials."""
    a1, a2 = promote_dtypes(_array("polyadd", a1), _array("polyadd", a2))
    a1, a2 = ensure_array(a1), ensure_array(a2)
    if _shape(a2)[0] <= _shape(a1)[0]:
        return a1.at[-_shape(a2)[0]:].add(a2)
    return a2.at[-_shape(a1)[0]:].add(a1)


def polysub(a1, a2):
    """The difference of two polynomials."""
    a1, a2 = promote_dtypes(_array("polysub", a1), _array("polysub", a2))
    from minijax.numpy._ufuncs import negative
    return polyadd(a1, negative(a2))


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """The product of two polynomials."""
    a1, a2 = promote_dtypes_inexact(_array("polymul", a1), _array("polymul", a2))
    a1, a2 = ensure_array(a1), ensure_array(a2)
    if not _shape(a1) or not _shape(a2):
        raise TypeError("polymul: the coefficients must be 1-D arrays, got a 0-d array")
    if trim_leading_zeros and (_shape(a1)[0] > 1 or _shape(a2)[0] > 1):
        a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
    if _shape(a1)[0] == 0:
        a1 = lax.broadcast_in_dim(np.zeros((), _dtype(a2)), (1,), ())
    if _shape(a2)[0] == 0:
        a2 = lax.broadcast_in_dim(np.zeros((), _dtype(a1)), (1,), ())
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros: bool = False):
    """``(quotient, remainder)`` of the polynomial division ``u / v``."""
    u, v = promote_dtypes_inexact(_array("polydiv", u), _array("polydiv", v))
    u, v = ensure_array(u), ensure_array(v)
    if not _shape(u) or not _shape(v):
        raise TypeError("polydiv: the coefficients must be 1-D arrays, got a 0-d array")
    m, n = _shape(u)[0] - 1, _shape(v)[0] - 1
    from minijax.numpy._ufuncs import multiply, negative, true_divide
    scale = true_divide(1.0, v[0])
    q = lax.broadcast_in_dim(np.zeros((), _dtype(u)), (max(m - n + 1, 1),), ())
    for k in range(0, m - n + 1):
        d = multiply(scale, u[k])
        q = q.at[k].set(d)
        u = u.at[k:k + n + 1].add(negative(multiply(d, v)))
    if trim_leading_zeros:
        tol = float(np.sqrt(np.finfo(_dtype(u)).eps))
        values = np.abs(concrete(u, "polydiv(trim_leading_zeros=True)"))
        keep = np.flatnonzero(values >= tol)
        u = u[int(keep[0]):] if keep.size else u[:0]
    return q, u


def polyder(p, m: int = 1):
    """The ``m``-th derivative of a polynomial."""
    (p,) = promote_dtypes_inexact(_array("polyder", p))
    p = ensure_array(p)
    if not _shape(p):
        raise TypeError("polyder: p must be an array of coefficients, got a 0-d array")
    m = _static_int(m, "'m' argument of jnp.polyder")
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if m == 0:
        return p
    n = _shape(p)[0]
    coeff = np.prod(np.arange(m, n)[None, :] - np.arange(m)[:, None], axis=0)
    from minijax.numpy._ufuncs import multiply
    return multiply(p[:-m], np.asarray(coeff[::-1], _dtype(p)))


def polyint(p, m: int = 1, k=None):
    """The ``m``-th integral of a polynomial, with integration constants ``k`` (0 by
    default; a scalar or one per integration)."""
    m = _static_int(m, "'m' argument of jnp.polyint")
    p, k = promote_dtypes_inexact(_array("polyint", p), _array("polyint", 0 if k is None else k))
    p, k = ensure_array(p), atleast_1d(ensure_array(k))
    if not _shape(p):
        raise TypeError("polyint: p must be an array of coefficients, got a 0-d array")
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    if _shape(k)[0] == 1:
        k = lax.broadcast_in_dim(lax.reshape(k, ()), (m,), ())
    if _shape(k) != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    if m == 0:
        return p
    n = _shape(p)[0]
    grid = np.arange(n + m)[None, :] - np.arange(m)[:, None]
    coeff = np.maximum(1, grid).prod(0)[::-1]
    from minijax.numpy._ufuncs import true_divide
    return true_divide(concatenate([p, k]), np.asarray(coeff, _dtype(p)))


# ---- roots and fitting --------------------------------------------------------------------------

def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (or the characteristic
    polynomial of a square matrix)."""
    (z,) = promote_dtypes_inexact(_array("poly", seq_of_zeros))
    z = atleast_1d(ensure_array(z))
    sh = _shape(z)
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        from minijax.numpy import linalg
        z = linalg.eigvals(z)
    if len(_shape(z)) != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    dt = _dtype(z)
    a = lax.broadcast_in_dim(np.ones((), dt), (1,), ())
    if _shape(z)[0] == 0:
        return lax.reshape(a, ())
    from minijax.numpy._shape import stack
    for k in range(_shape(z)[0]):
        a = convolve(a, stack([np.ones((), dt), lax.neg(z[k])]), mode="full")
    return a


def _companion_roots(p):
    from minijax.numpy import linalg
    n = _shape(p)[0]
    complex_dt = dtypes.complex128 if _dtype(p) in (dtypes.float64, dtypes.complex128) \
        else dtypes.complex64
    if n < 2:
        return lax.broadcast_in_dim(np.zeros((), dtypes.canonicalize(complex_dt)), (0,), ())
    from minijax.numpy._arrays import diag
    from minijax.numpy._ufuncs import negative, true_divide
    A = diag(lax.broadcast_in_dim(np.ones((), _dtype(p)), (n - 2,), ()), -1)
    A = A.at[0, :].set(negative(true_divide(p[1:], p[0])))
    return linalg.eigvals(A)


def roots(p, *, strip_zeros: bool = True):
    """The roots of the polynomial with coefficients ``p`` (eigenvalues of its companion
    matrix). Leading zeros are stripped, which needs concrete values; under jit pass
    ``strip_zeros=False``, and the roots they would remove are NaN."""
    (p,) = promote_dtypes_inexact(_array("roots", p))
    p = atleast_1d(ensure_array(p))
    if len(_shape(p)) != 1:
        raise ValueError("Input must be a rank-1 array.")
    n = _shape(p)[0]
    if n < 2:
        return _companion_roots(p)
    from minijax.numpy._reductions import all as all_, argmin
    from minijax.numpy._ufuncs import where_
    zero = lax.eq(p, np.zeros((), _dtype(p)))
    leading = where_(all_(zero), n, argmin(zero))
    if strip_zeros:
        k = int(concrete(leading, "roots (pass strip_zeros=False under jit)"))
        return _companion_roots(p[k:])
    # jit-compatible: roll the leading zeros to the end (their roots are 0), then mark them
    from minijax.numpy._arrays import roll
    p = where_(lax.eq(np.asarray(n), leading), np.ones((), _dtype(p)), p)
    r = _companion_roots(roll(p, lax.neg(leading)))
    r = lax.sort((lax.eq(r, np.zeros((), _dtype(r))), r), dimension=0, num_keys=1)[1]
    valid = lax.lt(lax.iota(dtypes.default_int(), _shape(r)[0]),
                   lax.sub(np.asarray(_shape(r)[0], dtypes.default_int()),
                           lax.convert_element_type(leading, dtypes.default_int())))
    return where_(valid, r, np.asarray(complex(np.nan, np.nan), _dtype(r)))


def polyfit(x, y, deg: int, rcond: float | None = None, full: bool = False, w=None,
            cov: bool = False):
    """The least-squares polynomial of degree ``deg`` through the points ``(x, y)`` (``y``
    1-D or one column per data set), optionally weighted by ``w``; ``full`` also returns
    residuals, rank, singular values and ``rcond``; ``cov`` the coefficients' covariance."""
    from minijax.numpy import linalg
    from minijax.numpy._linalg_ops import dot, outer
    from minijax.numpy._ufuncs import multiply, sqrt, true_divide
    x, y = _array("polyfit", x), _array("polyfit", y)
    deg = _static_int(deg, "deg must be int")
    order = deg + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if len(_shape(x)) != 1:
        raise TypeError("expected 1D vector for x")
    if _shape(x)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if len(_shape(y)) < 1 or len(_shape(y)) > 2:
        raise TypeError("expected 1D or 2D array for y")
    if _shape(x)[0] != _shape(y)[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = _shape(x)[0] * float(dtypes.finfo(_dtype(x)).eps)
    rcond = float(rcond)
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        (w,) = promote_dtypes_inexact(_array("polyfit", w))
        w = ensure_array(w)
        if len(_shape(w)) != 1:
            raise TypeError("expected a 1-d array for weights")
        if _shape(w)[0] != _shape(y)[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = multiply(lhs, lax.expand_dims(w, (1,)))
        rhs = multiply(rhs, lax.expand_dims(w, (1,)) if len(_shape(rhs)) == 2 else w)
    from minijax.numpy._reductions import sum as sum_
    scale = sqrt(sum_(multiply(lhs, lhs), axis=0))
    lhs = true_divide(lhs, lax.expand_dims(scale, (0,)))
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    from minijax.numpy._shape import transpose
    if len(_shape(c)) > 1:
        c = transpose(true_divide(transpose(c), lax.expand_dims(scale, (0,))))
    else:
        c = true_divide(c, scale)
    if full:
        return c, resids, rank, s, ensure_array(rcond)
    if cov:
        vbase = true_divide(linalg.inv(dot(transpose(lhs), lhs)), outer(scale, scale))
        if cov == "unscaled":
            fac = ensure_array(1.0)
        else:
            if _shape(x)[0] <= order:
                raise ValueError("the number of data points must exceed order to scale the "
                                 "covariance matrix")
            fac = true_divide(resids, _shape(x)[0] - order)
        if len(_shape(y)) == 1:
            return c, multiply(vbase, lax.expand_dims(atleast_1d(fac), (0,)))
        return c, multiply(lax.expand_dims(vbase, (2,)),
                           lax.expand_dims(atleast_1d(fac), (0, 1)))
    return c
