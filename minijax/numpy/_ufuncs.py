"""Elementwise functions of minijax.numpy (jax.numpy semantics)."""

from __future__ import annotations

import operator

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import get_aval, is_python_scalar
from minijax.numpy import _c99
from minijax.numpy._promote import (check_args, promote_args, promote_args_inexact,
                                    promote_args_numeric, promote_dtypes, promote_dtypes_inexact,
                                    convert,
                                    result_type_of)
# Called eagerly on device arrays, a @fused function is one cached, jitted program;
# anywhere else it is a plain call (see minijax.stages.eager.Fused).
from minijax.stages.eager import fused


def _dtype(x):
    return get_aval(x).dtype


def _unary_inexact(name, fn):
    def f(x, /):
        (x,) = promote_args_inexact(name, x)
        return fn(x)
    f.__name__ = name
    f.__doc__ = f"Elementwise {name} (integer inputs promote to the default float)."
    return fused(f)


sin = _unary_inexact("sin", lax.sin)
cos = _unary_inexact("cos", lax.cos)
tan = _unary_inexact("tan", lax.tan)
tanh = _unary_inexact("tanh", _c99.tanh)
exp = _unary_inexact("exp", _c99.exp)
exp2 = _unary_inexact("exp2", lax.exp2)
log = _unary_inexact("log", _c99.log)
log1p = _unary_inexact("log1p", _c99.log1p)
expm1 = _unary_inexact("expm1", _c99.expm1)
sqrt = _unary_inexact("sqrt", _c99.sqrt)
cbrt = _unary_inexact("cbrt", lax.cbrt)


def log2(x, /):
    (x,) = promote_args_inexact("log2", x)
    return lax.div(lax.log(x), lax.log(convert(2.0, _dtype(x))))


def log10(x, /):
    (x,) = promote_args_inexact("log10", x)
    return lax.div(lax.log(x), lax.log(convert(10.0, _dtype(x))))


@fused
def negative(x, /):
    (x,) = promote_args("negative", x)
    if _dtype(x) == dtypes.bool_:
        raise TypeError("negative is not defined for boolean arrays; use logical_not")
    return lax.neg(x)


def positive(x, /):
    (x,) = promote_args("positive", x)
    return x


@fused
def absolute(x, /):
    (x,) = promote_args("absolute", x)
    if _dtype(x) == dtypes.bool_:
        return x
    return lax.abs(x)


abs = absolute  # noqa: A001


@fused
def sign(x, /):
    (x,) = promote_args("sign", x)
    if _dtype(x) == dtypes.bool_:
        raise TypeError("sign does not accept dtype bool. Accepted dtypes are subtypes of "
                        "integer, floating, complexfloating.")
    return _c99.sign(x) if dtypes.is_inexact(_dtype(x)) else lax.sign(x)


def _real_only(name: str, x) -> None:
    if dtypes.is_complex(_dtype(x)):
        raise TypeError(f"{name} does not accept dtype {_dtype(x)}. Accepted dtypes are "
                        f"subtypes of floating.")


@fused
def floor(x, /):
    (x,) = promote_args("floor", x)
    _real_only("floor", x)
    return lax.floor(x) if dtypes.is_float(_dtype(x)) else x


@fused
def ceil(x, /):
    (x,) = promote_args("ceil", x)
    _real_only("ceil", x)
    return lax.ceil(x) if dtypes.is_float(_dtype(x)) else x


def round(x, decimals: int = 0, out=None):  # noqa: A001
    """Round half to even (numpy's rule), to ``decimals`` places."""
    try:
        decimals = operator.index(decimals)
    except TypeError:
        raise TypeError(f"round: decimals must be an integer, got {decimals!r}") from None
    (x,) = promote_args("round", x)
    dt = _dtype(x)
    if dt == dtypes.bool_:
        raise ValueError(f"data type {np.bool_} not inexact")
    if dtypes.is_int(dt) and decimals < 0:
        raise NotImplementedError("integer round is not implemented for decimals < 0")
    if dtypes.is_complex(dt):  # the real and imaginary parts, each
        return lax.complex(round(lax.real(x), decimals), round(lax.imag(x), decimals))
    if not dtypes.is_float(dt):
        return x
    if decimals == 0:
        return lax.round(x, 1)
    if decimals > np.log10(float(dtypes.finfo(dt).max)):
        return x  # rounding beyond the type's precision changes nothing (as jax)
    # float16 is scaled in float32, as jax does (10**decimals * x overflows float16 early).
    work = dtypes.float32 if dt == dtypes.float16 else dt
    y = lax.convert_element_type(x, work) if work != dt else x
    factor = convert(10.0 ** decimals, work)
    out = lax.div(lax.round(lax.mul(y, factor), 1), factor)
    return lax.convert_element_type(out, dt) if work != dt else out


around = round


@fused
def square(x, /):
    (x,) = promote_args_numeric("square", x)
    return lax.square(x)


@fused
def reciprocal(x, /):
    (x,) = promote_args_inexact("reciprocal", x)
    return lax.integer_pow(x, -1)


@fused
def add(x, y, /):
    x, y = promote_args("add", x, y)
    if _dtype(x) == dtypes.bool_:
        return lax.bitwise_or(x, y)
    return lax.add(x, y)


@fused
def subtract(x, y, /):
    x, y = promote_args("subtract", x, y)
    if _dtype(x) == dtypes.bool_:
        raise TypeError("subtract is not defined for boolean arrays; use logical_xor")
    return lax.sub(x, y)


@fused
def multiply(x, y, /):
    x, y = promote_args("multiply", x, y)
    if _dtype(x) == dtypes.bool_:
        return lax.bitwise_and(x, y)
    return lax.mul(x, y)


@fused
def true_divide(x, y, /):
    x, y = promote_args_inexact("true_divide", x, y)
    return lax.div(x, y)


divide = true_divide


def _one(x, dt):
    """1 of dtype ``dt``, weakly typed like ``x`` (keeps ``x - 1`` in ``x``'s type)."""
    return lax.convert_element_type(np.ones((), dt), dt, get_aval(x).weak_type)


def _select(c, x, y):
    """``lax.select`` after broadcasting rank-0 operands to the common shape."""
    return lax.select(*_broadcast3(c, x, y))


@fused
def floor_divide(x, y, /):
    """Python's ``//``: the quotient rounded toward negative infinity.

    Integer division by zero gives what jax gives: XLA's truncating division
    yields -1 (all bits set for unsigned types), and signed operands then take the
    round-down correction, so ``7 // 0 == -2``, ``0 // 0 == -1`` and ``u32 7 // 0 == 2**32-1``.
    """
    x, y = promote_args_numeric("floor_divide", x, y)
    dt = _dtype(x)
    if dtypes.is_unsigned(dt):
        return lax.div(x, y)
    if dtypes.is_int(dt):
        # Truncate, then subtract 1 where the signs differ and the division is inexact.
        q = lax.div(x, y)
        zero = convert(0, dt)
        fix = lax.bitwise_and(lax.ne(lax.sign(x), lax.sign(y)), lax.ne(lax.rem(x, y), zero))
        return _select(fix, lax.sub(q, _one(q, dt)), q)
    if dtypes.is_complex(dt):
        raise TypeError("floor_divide does not support complex-valued inputs")
    return _float_divmod(x, y, dt)[0]


def _float_divmod(x, y, dt):
    """Floating-point ``(x // y, x % y)`` computed as CPython does (``float_divmod``).

    The quotient comes from ``(x - fmod(x, y)) / y``, which is exact enough that
    ``1.0 // 0.1 == 9.0`` (``floor(1.0 / 0.1)`` would give 10).
    """
    zero = convert(0, dt)
    mod = lax.rem(x, y)
    div = lax.div(_select(lax.eq(y, zero), x, lax.sub(x, mod)), y)
    fix = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.sign(y), lax.sign(mod)))
    mod = _select(fix, lax.add(mod, y), mod)
    div = _select(fix, lax.sub(div, _one(div, dt)), div)
    return lax.round(div, 0), mod


@fused
def remainder(x, y, /):
    """Python's ``%``: the result has the sign of the divisor.

    An integer remainder by zero is 0, as in jax (the divisor 0 is replaced by 1).
    """
    x, y = promote_args_numeric("remainder", x, y)
    dt = _dtype(x)
    zero = convert(0, dt)
    if dtypes.is_int(dt):
        y = _select(lax.eq(y, zero), _one(y, dt), y)
    r = lax.rem(x, y)
    fix = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(y, zero)))
    return _select(fix, lax.add(r, y), r)


mod = remainder


@fused
def fmod(x, y, /):
    """C's ``fmod``: the remainder has the sign of the dividend.

    An integer ``fmod`` by zero is 0, as in jax (booleans are not integers here:
    ``fmod(True, False)`` is XLA's remainder by zero, 1).
    """
    ints = dtypes.is_int(result_type_of(*check_args("fmod", (x, y)))[0])
    x, y = promote_args_numeric("fmod", x, y)
    dt = _dtype(x)
    if ints:
        y = _select(lax.eq(y, convert(0, dt)), _one(y, dt), y)
    return lax.rem(x, y)


def divmod(x, y, /):  # noqa: A001
    """``(x // y, x % y)``, elementwise, with jax's results for a zero divisor."""
    x, y = promote_args_numeric("divmod", x, y)
    dt = _dtype(x)
    if dtypes.is_int(dt):
        return floor_divide(x, y), remainder(x, y)
    if dtypes.is_complex(dt):
        raise TypeError("divmod does not support complex-valued inputs")
    return _float_divmod(x, y, dt)


def power(x, y, /):
    """``x ** y``; a Python int exponent becomes repeated multiplication."""
    if is_python_scalar(y) and isinstance(y, int) and not isinstance(y, bool):
        (x,) = promote_args_numeric("power", x)
        if y < 0 and dtypes.is_int(_dtype(x)):
            raise ValueError("Integers cannot be raised to negative integer powers")
        return lax.integer_pow(x, y)
    return _power(x, y)


@fused
def _power(x, y, /):
    x, y = promote_args_numeric("power", x, y)
    dt = _dtype(x)
    if dtypes.is_int(dt):
        return _integer_power(x, y, dt)
    return lax.pow(x, y)


pow = power  # noqa: A001


def _integer_power(x, y, dt):
    # Square-and-multiply over the bits of y.
    from minijax.numpy._promote import broadcast_shapes, broadcast_to_shape
    shape = broadcast_shapes(get_aval(x).shape, get_aval(y).shape)
    x, y = broadcast_to_shape(x, shape), broadcast_to_shape(y, shape)
    one, zero = convert(1, dt), convert(0, dt)
    acc = lax.add(lax.mul(x, zero), one)
    base, e = x, y
    for _ in range(8 * np.dtype(dt).itemsize):
        odd = lax.ne(lax.bitwise_and(e, one), zero)
        acc = lax.select(odd, lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        e = lax.shift_right_logical(e, one)
    return acc


def float_power(x, y, /):
    x, y = promote_dtypes_inexact(x, y)
    return power(x, y)


def _lexicographic(op, x, y):
    """``op`` on complex values as (real, imag) pairs, the order jax uses."""
    rx, ry = lax.real(x), lax.real(y)
    return lax.select(lax.eq(rx, ry), op(lax.imag(x), lax.imag(y)), op(rx, ry))


@fused
def maximum(x, y, /):
    x, y = promote_args("maximum", x, y)
    return lax.max(x, y)  # complex values compare lexicographically, as jax's


@fused
def minimum(x, y, /):
    x, y = promote_args("minimum", x, y)
    return lax.min(x, y)  # complex values compare lexicographically, as jax's


@fused
def arctan2(x, y, /):
    x, y = promote_args_inexact("arctan2", x, y)
    return lax.atan2(x, y)


def _cmp(name, fn):
    ordered = fn not in (lax.eq, lax.ne)

    def f(x, y, /):
        x, y = promote_args(name, x, y)
        if ordered and dtypes.is_complex(_dtype(x)):
            return _lexicographic(fn, x, y)
        return fn(x, y)
    f.__name__ = name
    return fused(f)


equal = _cmp("equal", lax.eq)
not_equal = _cmp("not_equal", lax.ne)
less = _cmp("less", lax.lt)
less_equal = _cmp("less_equal", lax.le)
greater = _cmp("greater", lax.gt)
greater_equal = _cmp("greater_equal", lax.ge)


def _bitwise(name, fn):
    def f(x, y, /):
        x, y = promote_args(name, x, y)
        dt = _dtype(x)
        if not (dtypes.is_int(dt) or dt == dtypes.bool_):
            raise TypeError(f"{name} requires integer or boolean arguments, got {dt.name}")
        return fn(x, y)
    f.__name__ = name
    return fused(f)


bitwise_and = _bitwise("bitwise_and", lax.bitwise_and)
bitwise_or = _bitwise("bitwise_or", lax.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", lax.bitwise_xor)


def bitwise_not(x, /):
    (x,) = promote_args("bitwise_not", x)
    return lax.bitwise_not(x)


invert = bitwise_not


def left_shift(x, y, /):
    x, y = promote_args("left_shift", x, y)
    return lax.shift_left(x, y)


def right_shift(x, y, /):
    x, y = promote_args("right_shift", x, y)
    if dtypes.is_unsigned(_dtype(x)):
        return lax.shift_right_logical(x, y)
    return lax.shift_right_arithmetic(x, y)


def _to_bool(x):
    return convert(x, dtypes.bool_) if _dtype(x) != dtypes.bool_ else x


@fused
def logical_and(x, y, /):
    x, y = promote_args("logical_and", _to_bool(x), _to_bool(y))
    return lax.bitwise_and(x, y)


@fused
def logical_or(x, y, /):
    x, y = promote_args("logical_or", _to_bool(x), _to_bool(y))
    return lax.bitwise_or(x, y)


@fused
def logical_xor(x, y, /):
    x, y = promote_args("logical_xor", _to_bool(x), _to_bool(y))
    return lax.bitwise_xor(x, y)


@fused
def logical_not(x, /):
    return lax.bitwise_not(_to_bool(x))


@fused
def isnan(x, /):
    (x,) = promote_args("isnan", x)
    if not dtypes.is_inexact(_dtype(x)):
        return full_like_bool(x, False)
    return lax.ne(x, x)


@fused
def isfinite(x, /):
    (x,) = promote_args("isfinite", x)
    if not dtypes.is_inexact(_dtype(x)):
        return full_like_bool(x, True)
    if dtypes.is_complex(_dtype(x)):
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x)


@fused
def isinf(x, /):
    (x,) = promote_args("isinf", x)
    dt = _dtype(x)
    if not dtypes.is_float(dt):
        return full_like_bool(x, False)
    return lax.eq(lax.abs(x), convert(np.inf, dt))


def full_like_bool(x, value: bool):
    shape = get_aval(x).shape
    return lax.broadcast_in_dim(np.asarray(value), shape, ())


@fused
def where_(cond, x, y):
    """``x`` where ``cond`` else ``y``, with promotion and broadcasting."""
    cond = _to_bool(cond)
    # dtype promotion only: jax's where broadcasts without the rank-promotion check
    x, y = promote_dtypes(*check_args("where", (x, y)))
    cond, x, y = _broadcast3(cond, x, y)
    return lax.select(cond, x, y)


def _broadcast3(c, x, y):
    from minijax.numpy._promote import broadcast_shapes, broadcast_to_shape
    shape = broadcast_shapes(get_aval(c).shape, get_aval(x).shape, get_aval(y).shape)
    return [broadcast_to_shape(v, shape) for v in (c, x, y)]


@fused
def clip(x, min=None, max=None):  # noqa: A002
    """Clip to ``[min, max]`` (either may be None)."""
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x
