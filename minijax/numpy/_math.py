"""More elementwise functions of minijax.numpy: inverse trigonometric and hyperbolic
functions (with the Array API spellings ``acos``, ``asinh``, ...), complex parts,
``logaddexp``, ``isclose``, floating-point decomposition (``frexp``, ``ldexp``,
``modf``, ``spacing``, ``signbit``), ``gcd``/``lcm``, ``hypot``, ``sinc``, ``i0``...

Dtype rules are jax.numpy's: functions of real analysis promote integers and booleans
to the default float (``promote_args_inexact``), the rest keep their operands' promoted
dtype. Elementwise functions are ``@fused``: one cached program when called eagerly.
"""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.numpy import _c99
from minijax.numpy._promote import (check_args, broadcast_arrays, ensure_array,
                                    promote_args, promote_args_inexact, promote_args_numeric,
                                    promote_dtypes, promote_dtypes_inexact)
from minijax.numpy._ufuncs import (absolute, ceil, floor, floor_divide, full_like_bool, isinf,
                                   isnan, logical_and, logical_or, multiply, remainder, where_)
from minijax.stages.eager import fused
from minijax.api.custom_derivatives import custom_jvp


def _dtype(x) -> np.dtype:
    return get_aval(x).dtype


def scalar_like(x, value):
    """``value`` as a rank-0 constant of ``x``'s dtype (lax binary ops broadcast it), weakly
    typed if ``x`` is a weakly typed scalar: jax's rule, which decides the weak type of
    the results."""
    aval = get_aval(x)
    c = np.asarray(value, aval.dtype)
    return lax.convert_element_type(c, aval.dtype, True) if aval.weak_type and not aval.shape \
        else c


def _strong_const(x, value):
    """``value`` as a rank-0, strongly typed constant of ``x``'s dtype."""
    return np.asarray(value, _dtype(x))


def _zeros_like(x):
    """Zeros of ``x``'s shape, dtype and weak type."""
    return lax.broadcast_in_dim(scalar_like(x, 0), get_aval(x).shape, ())


def _unary_inexact(name: str, fn, doc: str):
    def f(x, /):
        (x,) = promote_args_inexact(name, x)
        return fn(x)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc + " Integer and boolean inputs promote to the default float."
    return fused(f)


# ---- inverse trigonometric and hyperbolic functions ----------------------------------------

arcsin = _unary_inexact("arcsin", lax.asin, "Elementwise inverse sine, in [-pi/2, pi/2].")
arccos = _unary_inexact("arccos", _c99.arccos, "Elementwise inverse cosine, in [0, pi].")
arctan = _unary_inexact("arctan", lax.atan, "Elementwise inverse tangent, in [-pi/2, pi/2].")
sinh = _unary_inexact("sinh", _c99.sinh, "Elementwise hyperbolic sine.")
cosh = _unary_inexact("cosh", _c99.cosh, "Elementwise hyperbolic cosine.")
arcsinh = _unary_inexact("arcsinh", _c99.arcsinh, "Elementwise inverse hyperbolic sine.")
arctanh = _unary_inexact("arctanh", _c99.arctanh, "Elementwise inverse hyperbolic tangent.")


@fused
def arccosh(x, /):
    """Elementwise inverse hyperbolic cosine; for complex inputs the branch with a
    non-negative real part (NumPy's)."""
    (x,) = promote_args_inexact("arccosh", x)
    out = _c99.arccosh(x)
    if dtypes.is_complex(_dtype(out)):
        out = _select(lax.lt(lax.real(out), scalar_like(lax.real(out), 0)), lax.neg(out), out)
    return out


def _array_api_alias(name: str, target):
    def f(x, /):
        (x,) = promote_args(name, x)
        return target(x)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The Array API name of :func:`{target.__name__}`."
    return fused(f)


acos = _array_api_alias("acos", arccos)
asin = _array_api_alias("asin", arcsin)
atan = _array_api_alias("atan", arctan)
acosh = _array_api_alias("acosh", arccosh)
asinh = _array_api_alias("asinh", arcsinh)
atanh = _array_api_alias("atanh", arctanh)


@fused
def atan2(x1, x2, /):
    """The Array API name of :func:`arctan2`: the angle of the point ``(x2, x1)``."""
    x1, x2 = promote_args_inexact("atan2", x1, x2)
    return lax.atan2(x1, x2)


def _select(c, x, y):
    return where_(c, x, y)


# ---- complex parts ---------------------------------------------------------------------------

@fused
def real(val, /):
    """The real part (the array itself for real inputs)."""
    (val,) = promote_args("real", val)
    return lax.real(val) if dtypes.is_complex(_dtype(val)) else val


@fused
def imag(val, /):
    """The imaginary part (zeros of the input's dtype for real inputs)."""
    (val,) = promote_args("imag", val)
    if dtypes.is_complex(_dtype(val)):
        return lax.imag(val)
    aval = get_aval(val)
    return lax.broadcast_in_dim(lax.convert_element_type(np.zeros((), aval.dtype), aval.dtype,
                                                         aval.weak_type), aval.shape, ())


@fused
def conjugate(x, /):
    """The complex conjugate (the array itself for real inputs)."""
    (x,) = promote_args("conjugate", x)
    return lax.conj(x) if dtypes.is_complex(_dtype(x)) else x


@fused
def conj(x, /):
    """The complex conjugate; the same as :func:`conjugate`."""
    return conjugate(x)


def angle(z, deg: bool = False):
    """The angle of a complex number, ``arctan2(imag(z), real(z))`` (in degrees if ``deg``)."""
    (z,) = check_args("angle", (z,))
    z = ensure_array(z)
    re, im = real(z), imag(z)
    dt = _dtype(re)
    if not dtypes.is_inexact(dt) or (dtypes.is_float(_dtype(z)) and get_aval(z).ndim == 0):
        dt = dtypes.default_float()
        re, im = lax.convert_element_type(re, dt), lax.convert_element_type(im, dt)
    out = lax.atan2(im, re)
    return degrees(out) if deg else out


@fused
def iscomplex(x, /):
    """Whether each element has a non-zero imaginary part."""
    i = imag(x)
    return lax.ne(i, scalar_like(i, 0))


@fused
def isreal(x, /):
    """Whether each element has a zero imaginary part."""
    i = imag(x)
    return lax.eq(i, scalar_like(i, 0))


# ---- simple functions of one operand -------------------------------------------------------

@fused
def fabs(x, /):
    """Absolute value as a float (integers promote to the default float)."""
    (x,) = promote_args_inexact("fabs", x)
    if dtypes.is_complex(_dtype(x)):
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return lax.abs(x)


@fused
def rint(x, /):
    """Round to the nearest integer, ties to even; integer inputs become the default float."""
    (x,) = promote_args("rint", x)
    dt = _dtype(x)
    if dt == dtypes.bool_ or dtypes.is_int(dt):
        return lax.convert_element_type(x, dtypes.default_float())
    if dtypes.is_complex(dt):
        return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
    return lax.round(x, 1)


@fused
def trunc(x, /):
    """Round toward zero (integers and booleans are returned as they are)."""
    (x,) = promote_args("trunc", x)
    if not dtypes.is_inexact(_dtype(x)):
        return x
    return _select(lax.lt(x, scalar_like(x, 0)), ceil(x), floor(x))


@fused
def deg2rad(x, /):
    """Degrees to radians."""
    (x,) = promote_args_inexact("deg2rad", x)
    return lax.mul(x, scalar_like(x, np.pi / 180))


@fused
def rad2deg(x, /):
    """Radians to degrees."""
    (x,) = promote_args_inexact("rad2deg", x)
    return lax.mul(x, scalar_like(x, 180 / np.pi))


def radians(x, /):
    """Degrees to radians; the same as :func:`deg2rad`."""
    return deg2rad(x)


def degrees(x, /):
    """Radians to degrees; the same as :func:`rad2deg`."""
    return rad2deg(x)


@fused
def signbit(x, /):
    """Whether the sign bit is set (true for ``-0.0`` and negative NaNs too)."""
    (x,) = promote_args("signbit", x)
    dt = _dtype(x)
    if dtypes.is_int(dt):
        return lax.lt(x, _strong_const(x, 0))
    if dt == dtypes.bool_:
        return full_like_bool(x, False)
    if not dtypes.is_float(dt):
        raise ValueError(f"jax.numpy.signbit is not well defined for {dt}")
    bits = np.dtype(dt).itemsize * 8
    as_int = lax.bitcast_convert_type(x, _INT_OF_BITS[bits])
    return lax.lt(as_int, np.zeros((), _INT_OF_BITS[bits]))


_INT_OF_BITS = {16: dtypes.int16, 32: dtypes.int32, 64: dtypes.int64}


@fused
def isposinf(x, /):
    """Whether each element is positive infinity (ValueError for complex inputs)."""
    return _isinf_signed("isposinf", x, np.inf)


@fused
def isneginf(x, /):
    """Whether each element is negative infinity (ValueError for complex inputs)."""
    return _isinf_signed("isneginf", x, -np.inf)


def _isinf_signed(name: str, x, inf: float):
    (x,) = promote_args(name, x)
    dt = _dtype(x)
    if dtypes.is_complex(dt):
        raise ValueError("isposinf/isneginf are not well defined for complex types")
    if not dtypes.is_float(dt):
        return full_like_bool(x, False)
    return lax.eq(x, _strong_const(x, inf))


@fused
def bitwise_invert(x, /):
    """The Array API name of :func:`bitwise_not`."""
    (x,) = promote_args("bitwise_invert", x)
    return lax.bitwise_not(x)


@fused
def bitwise_left_shift(x1, x2, /):
    """The Array API name of :func:`left_shift`."""
    x1, x2 = promote_args_numeric("bitwise_left_shift", x1, x2)
    return lax.shift_left(x1, x2)


@fused
def bitwise_right_shift(x1, x2, /):
    """The Array API name of :func:`right_shift` (booleans shift as integers)."""
    x1, x2 = promote_args_numeric("bitwise_right_shift", x1, x2)
    if dtypes.is_unsigned(_dtype(x1)):
        return lax.shift_right_logical(x1, x2)
    return lax.shift_right_arithmetic(x1, x2)


@fused
def bitwise_count(x, /):
    """The number of 1 bits in the absolute value of each element, as uint8."""
    (x,) = promote_args("bitwise_count", x)
    if _dtype(x) == dtypes.bool_:
        x = lax.convert_element_type(x, dtypes.uint8)
    if not dtypes.is_int(_dtype(x)):
        raise TypeError(f"bitwise_count requires integer arguments, got {_dtype(x)}")
    return lax.convert_element_type(lax.population_count(absolute(x)), dtypes.uint8)


# ---- functions of two operands ---------------------------------------------------------------

@fused
def copysign(x1, x2, /):
    """``x1``'s magnitude with ``x2``'s sign (``-0.0`` counts as negative)."""
    x1, x2 = promote_args_inexact("copysign", x1, x2)
    if dtypes.is_complex(_dtype(x1)):
        raise TypeError("copysign does not support complex-valued inputs")
    mag = lax.abs(x1)
    return _select(signbit(x2), lax.neg(mag), mag)


def _ordered(op, x1, x2):
    """``op`` (lax.gt or lax.lt) after promotion; complex numbers compare by (real, imag)."""
    x1, x2 = promote_args("compare", x1, x2)
    if dtypes.is_complex(_dtype(x1)):
        r1, r2 = lax.real(x1), lax.real(x2)
        return lax.bitwise_or(op(r1, r2), lax.bitwise_and(lax.eq(r1, r2),
                                                          op(lax.imag(x1), lax.imag(x2))))
    return op(x1, x2)


@fused
def fmax(x1, x2):
    """Elementwise maximum that ignores NaNs (NaN only where both are NaN)."""
    return _select(logical_or(_ordered(lax.gt, x1, x2), isnan(x2)), x1, x2)


@fused
def fmin(x1, x2):
    """Elementwise minimum that ignores NaNs (NaN only where both are NaN)."""
    return _select(logical_or(_ordered(lax.lt, x1, x2), isnan(x2)), x1, x2)


@fused
def nextafter(x1, x2, /):
    """The next representable floating-point value after ``x1`` toward ``x2``."""
    x1, x2 = promote_args_inexact("nextafter", x1, x2)
    return lax.nextafter(x1, x2)


@fused
def heaviside(x1, x2, /):
    """The Heaviside step: 0 for negative ``x1``, 1 for positive, ``x2`` at zero."""
    x1, x2 = check_args("heaviside", (x1, x2))
    x1, x2 = broadcast_arrays(*promote_dtypes_inexact(x1, x2))
    zero = scalar_like(x1, 0)
    return _select(lax.lt(x1, zero), zero,
                   _select(lax.gt(x1, zero), scalar_like(x1, 1), _select(isnan(x1), x1, x2)))


@fused
def hypot(x1, x2, /):
    """``sqrt(x1**2 + x2**2)`` without overflow or underflow in the squares."""
    x1, x2 = promote_args_inexact("hypot", x1, x2)
    if dtypes.is_complex(_dtype(x1)):
        raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please "
                         "convert to real values first, such as by using abs(x)")
    x1, x2 = lax.abs(x1), lax.abs(x2)
    inf = lax.bitwise_or(lax.eq(x1, scalar_like(x1, np.inf)), lax.eq(x2, scalar_like(x2, np.inf)))
    big, small = lax.max(x1, x2), lax.min(x1, x2)
    zero = lax.eq(big, scalar_like(big, 0))
    safe = _select(zero, lax.add(_zeros_like(big), scalar_like(big, 1)), big)
    ratio = lax.div(small, safe)
    out = _select(zero, big, lax.mul(big, lax.sqrt(lax.add(scalar_like(big, 1),
                                                           lax.mul(ratio, ratio)))))
    return _select(inf, lax.add(_zeros_like(out), scalar_like(out, np.inf)), out)


# logaddexp and logaddexp2 differentiate with exp(x - out): finite where an operand is -inf.

def _replace_inf(x):
    return _select(lax.eq(x, scalar_like(x, np.inf)), _zeros_like(x), x)


def _complex_max(x, y):
    """The larger of two complex numbers by (real, imag) order (lax.max's for complex)."""
    rx, ry = lax.real(x), lax.real(y)
    take_x = lax.bitwise_or(lax.gt(rx, ry),
                            lax.bitwise_and(lax.eq(rx, ry), lax.gt(lax.imag(x), lax.imag(y))))
    return _select(take_x, x, y)


def _wrap_between(x, period):
    """``x`` wrapped into ``(-period, period]``."""
    two = lax.mul(scalar_like(x, 2), scalar_like(x, period))
    rem = remainder(lax.add(x, scalar_like(x, period)), two)
    return lax.sub(rem, scalar_like(x, period))


def _make_logaddexp(name: str, exp_fn, scale: float, doc: str):
    def scaled(x):
        return x if scale == 1.0 else lax.mul(scalar_like(x, scale), x)

    @custom_jvp
    def impl(x1, x2):
        if dtypes.is_complex(_dtype(x1)):
            amax = _complex_max(x1, x2)
            delta = lax.sub(lax.add(x1, x2), lax.mul(amax, scalar_like(amax, 2)))
            out = lax.add(amax, scaled(lax.log1p(exp_fn(delta))))
            return lax.complex(lax.real(out), _wrap_between(lax.imag(out), np.pi * scale))
        amax = lax.max(x1, x2)
        delta = lax.sub(x1, x2)
        # NaN delta: NaN operands, or infinities of the same sign (their sum is the answer).
        return _select(isnan(delta), lax.add(x1, x2),
                       lax.add(amax, scaled(lax.log1p(exp_fn(lax.neg(lax.abs(delta)))))))

    @impl.defjvp
    def impl_jvp(primals, tangents):
        x1, x2 = primals
        t1, t2 = tangents
        out = impl(x1, x2)
        w1 = exp_fn(lax.sub(_replace_inf(x1), _replace_inf(out)))
        w2 = exp_fn(lax.sub(_replace_inf(x2), _replace_inf(out)))
        return out, lax.add(lax.mul(t1, w1), lax.mul(t2, w2))

    def f(x1, x2, /):
        x1, x2 = promote_args_inexact(name, x1, x2)
        return impl(x1, x2)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return fused(f)


logaddexp = _make_logaddexp("logaddexp", lax.exp, 1.0,
                            "``log(exp(x1) + exp(x2))``, computed without overflow.")
logaddexp2 = _make_logaddexp("logaddexp2", lax.exp2, 1 / np.log(2),
                             "``log2(2**x1 + 2**x2)``, computed without overflow.")


@fused(max_args=2)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether ``|a - b| <= atol + rtol * |b|`` elementwise (infinities equal only to
    themselves; NaNs equal only if ``equal_nan``)."""
    a, b = promote_args("isclose", a, b)
    a, b = promote_args_inexact("isclose", a, b)
    dt = _dtype(a)
    if dtypes.is_complex(dt):
        dt = np.finfo(dt).dtype
    rtol = lax.convert_element_type(rtol, dt)
    atol = lax.convert_element_type(atol, dt)
    both_nan = logical_and(isnan(a), isnan(b))
    finite_b = lax.bitwise_not(lax.bitwise_or(isnan(b), isinf(b)))
    in_range = lax.le(lax.abs(lax.sub(a, b)),
                      _bcast_add(atol, lax.mul(rtol, lax.abs(b))))
    out = logical_or(lax.eq(a, b), logical_and(finite_b, in_range))
    return logical_or(out, both_nan) if equal_nan else out


def _bcast_add(x, y):
    x, y = broadcast_arrays(x, y)
    return lax.add(x, y)


@fused(max_args=2)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """Whether every element of ``a`` and ``b`` is close (see :func:`isclose`)."""
    check_args("allclose", (a, b))
    from minijax.numpy._reductions import all as all_
    return all_(isclose(a, b, rtol, atol, equal_nan))


@fused(max_args=1)
def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """NaN to ``nan``, infinities to ``posinf``/``neginf`` (the largest finite values by
    default); complex inputs are handled part by part."""
    del copy
    (x,) = promote_args("nan_to_num", x)
    dt = _dtype(x)
    if not dtypes.is_inexact(dt):
        return x
    if dtypes.is_complex(dt):
        return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = dtypes.finfo(dt)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf

    def value(v):
        return lax.convert_element_type(ensure_array(v) if not hasattr(v, "aval") else v, dt)

    out = _select(isnan(x), value(nan), x)
    out = _select(lax.eq(out, scalar_like(out, np.inf)), value(posinf), out)
    return _select(lax.eq(out, scalar_like(out, -np.inf)), value(neginf), out)


# ---- floating-point decomposition ------------------------------------------------------------

def _frexp_parts(x):
    """(mantissa in [0.5, 1), exponent) of finite non-zero ``x`` by bit manipulation;
    subnormals are first scaled into the normal range."""
    dt = _dtype(x)
    info = dtypes.finfo(dt)
    int_t = _INT_OF_BITS[info.bits]
    nmant, nexp = int(info.nmant), int(info.nexp)
    mask = (1 << nexp) - 1
    bias = 1 - int(info.minexp)
    tiny = lax.lt(lax.abs(x), scalar_like(x, info.tiny))
    x1 = _select(tiny, lax.mul(x, scalar_like(x, float(1 << nmant))), x)
    e = _select(tiny, np.full(get_aval(x).shape, -nmant, int_t), np.zeros(get_aval(x).shape,
                                                                           int_t))
    bits = lax.bitcast_convert_type(x1, int_t)
    c = lambda v: np.asarray(v, int_t)  # noqa: E731
    e = lax.add(e, lax.sub(lax.bitwise_and(lax.shift_right_logical(bits, c(nmant)), c(mask)),
                           c(bias - 1)))
    bits = lax.bitwise_and(bits, c(~(mask << nmant)))
    bits = lax.bitwise_or(bits, c((bias - 1) << nmant))
    m = lax.bitcast_convert_type(bits, dt)
    special = lax.bitwise_or(lax.bitwise_or(isinf(x), isnan(x)), lax.eq(x, scalar_like(x, 0)))
    e = _select(special, _zeros_like(e), e)
    return _select(special, x, m), lax.convert_element_type(e, dtypes.int32)


@custom_jvp
def _frexp(x):
    # One program when called eagerly, as jax's jitted frexp: op by op, XLA:CPU treats
    # subnormal operands differently and the numbers would not be jax's.
    return _frexp_fused(x)


_frexp_fused = fused(_frexp_parts)


@_frexp.defjvp
def _frexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    m, e = _frexp(x)
    scale = lax.exp2(lax.neg(lax.convert_element_type(e, _dtype(t))))
    return (m, e), (lax.mul(t, scale), np.zeros(get_aval(e).shape, dtypes.float0))


@fused
def frexp(x, /):
    """``(mantissa, exponent)`` with ``x == mantissa * 2**exponent``, ``|mantissa|`` in
    [0.5, 1) (0, inf and NaN give themselves and exponent 0); the exponent is int32."""
    (x,) = check_args("frexp", (x,))
    (x,) = promote_dtypes_inexact(ensure_array(x))
    if dtypes.is_complex(_dtype(x)):
        raise TypeError("frexp does not support complex-valued inputs")
    return _frexp(x)


@fused
def ldexp(x1, x2, /):
    """``x1 * 2**x2`` for an integer ``x2``, without overflow in the power of two."""
    x1, x2 = [ensure_array(v) for v in check_args("ldexp", (x1, x2))]
    if dtypes.is_complex(_dtype(x1)) or dtypes.is_inexact(_dtype(x2)):
        raise ValueError(f"ldexp not supported for input types {(_dtype(x1), _dtype(x2))}")
    (x1,) = promote_args_inexact("ldexp", x1)
    x2_dt = _dtype(x2)
    x1, x2 = broadcast_arrays(x1, lax.convert_element_type(x2, _dtype(x1)))
    m, e = frexp(x1)
    e = lax.convert_element_type(
        lax.add(lax.convert_element_type(e, x2_dt), lax.convert_element_type(x2, x2_dt)),
        _dtype(x1))
    # the exponent may overflow by one and the result still be finite
    pos = lax.gt(e, scalar_like(e, 0))
    m = _select(pos, lax.mul(m, scalar_like(m, 2)), m)
    e = _select(pos, lax.sub(e, scalar_like(e, 1)), e)
    out = lax.mul(m, lax.pow(lax.add(_zeros_like(e), scalar_like(e, 2)), e))
    return _select(lax.bitwise_or(isinf(x1), lax.eq(x1, scalar_like(x1, 0))), x1, out)


@fused(max_args=1)
def modf(x, /, out=None):
    """``(fractional part, integral part)``, both with ``x``'s sign."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
    (x,) = check_args("modf", (x,))
    (x,) = promote_dtypes_inexact(ensure_array(x))
    whole = _select(lax.ge(x, scalar_like(x, 0)), floor(x), ceil(x))
    return lax.sub(x, whole), whole


@fused
def spacing(x, /):
    """The distance from ``x`` to the next representable value away from zero."""
    (x,) = promote_args_inexact("spacing", x)
    dt = _dtype(x)
    if dtypes.is_complex(dt):
        raise ValueError("jnp.spacing is not defined for complex inputs.")
    inf = lax.add(_zeros_like(x), scalar_like(x, np.inf))
    if dt == dtypes.float16:
        return lax.sub(lax.nextafter(x, inf), x)
    result = lax.sub(lax.nextafter(x, copysign(inf, x)), x)
    tiny = dtypes.finfo(dt).smallest_subnormal  # a NumPy scalar: the result is strongly typed
    return _select(lax.eq(result, scalar_like(result, 0)), copysign(tiny, x), result)


# ---- integer functions --------------------------------------------------------------------

def _gcd_body(carry):
    x1, x2 = carry
    nz = lax.ne(x2, scalar_like(x2, 0))
    safe = _select(nz, x2, lax.add(_zeros_like(x2), scalar_like(x2, 1)))
    x1, x2 = _select(nz, x2, x1), _select(nz, lax.rem(x1, safe), _zeros_like(x2))
    swap = lax.lt(x1, x2)
    return _select(swap, x2, x1), _select(swap, x1, x2)


def _gcd_cond(carry):
    from minijax.numpy._reductions import any as any_
    return any_(lax.ne(carry[1], scalar_like(carry[1], 0)))


@fused
def gcd(x1, x2, /):
    """The greatest common divisor of ``|x1|`` and ``|x2|`` (Euclid's algorithm)."""
    x1, x2 = promote_dtypes(*check_args("gcd", (x1, x2)))
    if not dtypes.is_int(get_aval(x1).dtype):
        raise ValueError("Arguments to jax.numpy.gcd must be integers.")
    x1, x2 = broadcast_arrays(ensure_array(x1), ensure_array(x2))
    if get_aval(x1).shape != get_aval(x2).shape:
        from minijax.numpy._promote import broadcast_to_shape
        shape = get_aval(x1).shape or get_aval(x2).shape
        x1, x2 = broadcast_to_shape(x1, shape), broadcast_to_shape(x2, shape)
    out, _ = lax.while_loop(_gcd_cond, _gcd_body, (absolute(x1), absolute(x2)))
    return out


@fused
def lcm(x1, x2, /):
    """The least common multiple of ``|x1|`` and ``|x2|`` (0 if either is 0)."""
    x1, x2 = promote_dtypes(*check_args("lcm", (x1, x2)))
    if not dtypes.is_int(get_aval(x1).dtype):
        raise ValueError("Arguments to jax.numpy.lcm must be integers.")
    x1, x2 = absolute(x1), absolute(x2)
    d = gcd(x1, x2)
    return _select(lax.eq(d, scalar_like(d, 0)), _zeros_like(d), multiply(x1, floor_divide(x2, d)))


# ---- special functions -----------------------------------------------------------------------

def _sinc_maclaurin_fun(k: int, x):
    """The k-th derivative of sin(x)/x at 0, shaped like ``x`` (sinc's value and
    derivatives at zero)."""
    if k % 2:
        return lax.mul(x, scalar_like(x, 0))
    return lax.add(lax.mul(x, scalar_like(x, 0)), scalar_like(x, (-1) ** (k // 2) / (k + 1)))


_sinc_maclaurin = custom_jvp(_sinc_maclaurin_fun, nondiff_argnums=(0,))


@_sinc_maclaurin.defjvp
def _sinc_maclaurin_jvp(k, primals, tangents):
    (x,), (t,) = primals, tangents
    return _sinc_maclaurin(k, x), lax.mul(_sinc_maclaurin(k + 1, x), t)


@fused
def sinc(x, /):
    """The normalized sinc function ``sin(pi x) / (pi x)`` (1 at 0, with all its derivatives
    there computed exactly)."""
    (x,) = check_args("sinc", (x,))
    (x,) = promote_dtypes_inexact(ensure_array(x))
    zero = lax.eq(x, scalar_like(x, 0))
    pi_x = lax.mul(scalar_like(x, np.pi), x)
    safe = _select(zero, lax.add(_zeros_like(x), scalar_like(x, 1)), pi_x)
    return _select(zero, _sinc_maclaurin(0, pi_x), lax.div(lax.sin(safe), safe))


def _chebyshev(x, coefficients):
    """Clenshaw's recurrence for a Chebyshev series (Cephes' ``chbevl`` convention)."""
    b0, b1, b2 = lax.add(_zeros_like(x), scalar_like(x, coefficients[0])), _zeros_like(x), None
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = lax.add(lax.sub(lax.mul(x, b1), b2), scalar_like(x, c))
    return lax.mul(scalar_like(x, 0.5), lax.sub(b0, b2))


def _i0_coefficients():
    # The Chebyshev coefficients of exp(-x) I0(x) on [0, 8] and of sqrt(x) exp(-x) I0(x)
    # on [8, inf) (Cephes), as NumPy's own i0 uses them.
    from numpy.lib import _function_base_impl as impl
    return impl._i0A, impl._i0B


@custom_jvp
def _i0(x):
    a, b = _i0_coefficients()
    ax = lax.abs(x)
    small = lax.le(ax, scalar_like(ax, 8.0))
    safe_big = lax.max(ax, scalar_like(ax, 8.0))
    e_small = _chebyshev(lax.sub(lax.mul(ax, scalar_like(ax, 0.5)), scalar_like(ax, 2.0)), a)
    t_big = lax.sub(lax.div(scalar_like(ax, 32.0), safe_big), scalar_like(ax, 2.0))
    e_big = lax.div(_chebyshev(t_big, b), lax.sqrt(safe_big))
    return lax.mul(lax.exp(ax), _select(small, e_small, e_big))


@_i0.defjvp
def _i0_jvp(primals, tangents):
    from minijax.api.ad import jvp
    (x,), (t,) = primals, tangents
    out, t_out = jvp(_i0.fun, (x,), (t,))
    return out, _select(lax.eq(x, scalar_like(x, 0)), _zeros_like(t_out), t_out)


@fused
def i0(x, /):
    """The modified Bessel function of the first kind, order 0 (real inputs)."""
    (x,) = promote_args_inexact("i0", x)
    if not dtypes.is_float(_dtype(x)):
        raise ValueError(f"Unsupported input type to jax.numpy.i0: {_dtype(x)}")
    return _i0(x)
