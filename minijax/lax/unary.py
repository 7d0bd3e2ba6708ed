"""Elementwise one-operand primitives.

One block per primitive: its definition, abstract eval and StableHLO lowering, its
transform rules (jvp, transpose, batching) and its lax-level function, together. The
simple ones come from ``unary_primitive`` (abstract eval, one-op lowering, elementwise
batching); the blocks below them add what differs.
"""

from __future__ import annotations

import operator

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax import binary as _b
from minijax.lax._util import check_dtype, const_like, type_error, unary_primitive
from minijax.lax.dot_algorithm import AccuracyMode, Tolerance
from minijax.transforms.ad import Zero, defjvp, defjvp2, deflinear, defjvp_zero, tangent_aval
from minijax.transforms.batching import def_elementwise_batch

_const_like = const_like


def check_accuracy(x, accuracy):
    """``x``, after checking jax's ``accuracy=`` (None, a ``Tolerance`` or an
    ``AccuracyMode``). XLA:CPU has one implementation of each function, so the request
    does not change the result (jax's results on CPU do not change either)."""
    if accuracy is not None and not isinstance(accuracy, (Tolerance, AccuracyMode)):
        raise NotImplementedError(f"Accuracy {accuracy} not supported")
    return x


# ---- neg --------------------------------------------------------------------------------
neg_p = unary_primitive("neg", "stablehlo.negate", "fciu")
deflinear(neg_p, lambda ct, x: [neg(ct)])
def neg(x): return neg_p.bind(x)


# ---- sin, cos, tan, tanh ------------------------------------------------------------------
sin_p = unary_primitive("sin", "stablehlo.sine")
defjvp(sin_p, lambda t, x: _b.mul(t, cos(x)))
def sin(x, *, accuracy=None): return sin_p.bind(check_accuracy(x, accuracy))


cos_p = unary_primitive("cos", "stablehlo.cosine")
defjvp(cos_p, lambda t, x: neg(_b.mul(t, sin(x))))
def cos(x, *, accuracy=None): return cos_p.bind(check_accuracy(x, accuracy))


tan_p = unary_primitive("tan", "stablehlo.tan")
defjvp2(tan_p, lambda t, ans, x: _b.mul(t, _b.add(_const_like(x, 1), integer_pow(ans, 2))))
def tan(x, *, accuracy=None): return tan_p.bind(check_accuracy(x, accuracy))


tanh_p = unary_primitive("tanh", "stablehlo.tanh")
# (t + t*ans) * (1 - ans): jax's form, so gradients through tanh round as jax's do
defjvp2(tanh_p, lambda t, ans, x: _b.mul(_b.add(t, _b.mul(t, ans)),
                                        _b.sub(_const_like(x, 1), ans)))
def tanh(x, *, accuracy=None): return tanh_p.bind(check_accuracy(x, accuracy))


# ---- exp, exp2, log, log1p, expm1 ---------------------------------------------------------
exp_p = unary_primitive("exp", "stablehlo.exponential")
defjvp2(exp_p, lambda t, ans, x: _b.mul(t, ans))
def exp(x, *, accuracy=None): return exp_p.bind(check_accuracy(x, accuracy))


# exp2(x) = exp(x * log(2))
exp2_p = Primitive("exp2")


@exp2_p.def_abstract_eval
def _exp2_abstract(x):
    check_dtype("exp2", x, "fc")
    return x


@exp2_p.def_lowering
def _exp2_lower(ctx, x):
    aval = ctx.avals_out[0]
    ln2 = ctx.constant(np.log(2.0), aval.dtype, aval.shape)
    prod = ctx.op("stablehlo.multiply", [x, ln2], aval)
    return ctx.op("stablehlo.exponential", [prod], aval)


defjvp2(exp2_p, lambda t, ans, x: _b.mul(_const_like(x, np.log(2.0)), _b.mul(t, ans)))
def_elementwise_batch(exp2_p)
def exp2(x, *, accuracy=None): return exp2_p.bind(check_accuracy(x, accuracy))


log_p = unary_primitive("log", "stablehlo.log")
defjvp(log_p, lambda t, x: _b.div(t, x))
def log(x, *, accuracy=None): return log_p.bind(check_accuracy(x, accuracy))


log1p_p = unary_primitive("log1p", "stablehlo.log_plus_one")
defjvp(log1p_p, lambda t, x: _b.div(t, _b.add(x, _const_like(x, 1))))
def log1p(x, *, accuracy=None): return log1p_p.bind(check_accuracy(x, accuracy))


expm1_p = unary_primitive("expm1", "stablehlo.exponential_minus_one")
defjvp2(expm1_p, lambda t, ans, x: _b.mul(t, _b.add(ans, _const_like(x, 1))))
def expm1(x, *, accuracy=None): return expm1_p.bind(check_accuracy(x, accuracy))


# ---- sqrt, rsqrt, cbrt, logistic ----------------------------------------------------------
sqrt_p = unary_primitive("sqrt", "stablehlo.sqrt")
defjvp2(sqrt_p, lambda t, ans, x: _b.mul(t, _b.div(_const_like(x, 0.5), ans)))  # jax's rounding
def sqrt(x, *, accuracy=None): return sqrt_p.bind(check_accuracy(x, accuracy))


rsqrt_p = unary_primitive("rsqrt", "stablehlo.rsqrt")
defjvp2(rsqrt_p, lambda t, ans, x: _b.mul(t, _b.mul(_const_like(x, -0.5), _b.div(ans, x))))
def rsqrt(x, *, accuracy=None): return rsqrt_p.bind(check_accuracy(x, accuracy))


cbrt_p = unary_primitive("cbrt", "stablehlo.cbrt", "f")
defjvp2(cbrt_p, lambda t, ans, x: _b.mul(t, _b.mul(_const_like(x, 1 / 3), integer_pow(ans, -2))))
def cbrt(x, *, accuracy=None): return cbrt_p.bind(check_accuracy(x, accuracy))


logistic_p = unary_primitive("logistic", "stablehlo.logistic")
defjvp2(logistic_p, lambda t, ans, x: _b.mul(t, _b.mul(ans, _b.sub(_const_like(x, 1), ans))))
def logistic(x, *, accuracy=None): return logistic_p.bind(check_accuracy(x, accuracy))


# ---- sign, floor, ceil, round, not, is_finite: zero derivatives ---------------------------
sign_p = unary_primitive("sign", "stablehlo.sign", "fciu")


# stablehlo.sign takes no unsigned integers: there sign(x) is 1 where x != 0, else 0.
@sign_p.def_lowering
def _sign_lower(ctx, x):
    aval = ctx.avals_out[0]
    if not dtypes.is_unsigned(aval.dtype):
        return ctx.op("stablehlo.sign", [x], aval)
    zero = ctx.constant(0, aval.dtype, aval.shape)
    nonzero = ctx.op("stablehlo.compare", [x, zero], ShapedArray(aval.shape, dtypes.bool_), {
        "comparison_direction": "#stablehlo<comparison_direction NE>",
        "compare_type": "#stablehlo<comparison_type UNSIGNED>"})
    return ctx.op("stablehlo.select", [nonzero, ctx.constant(1, aval.dtype, aval.shape), zero],
                  aval)


defjvp_zero(sign_p)
def sign(x): return sign_p.bind(x)


floor_p = unary_primitive("floor", "stablehlo.floor", "f")
defjvp_zero(floor_p)
def floor(x): return floor_p.bind(x)


ceil_p = unary_primitive("ceil", "stablehlo.ceil", "f")
defjvp_zero(ceil_p)
def ceil(x): return ceil_p.bind(x)


# round: rounding_method 0 = away from zero, 1 = to nearest even (jax's RoundingMethod).
round_p = Primitive("round")


@round_p.def_abstract_eval
def _round_abstract(x, *, rounding_method=0):
    check_dtype("round", x, "f")
    return x


@round_p.def_lowering
def _round_lower(ctx, x, *, rounding_method=0):
    op = "stablehlo.round_nearest_even" if int(rounding_method) == 1 else \
        "stablehlo.round_nearest_afz"
    return ctx.op(op, [x], ctx.avals_out[0])


defjvp_zero(round_p)
def_elementwise_batch(round_p)


def round(x, rounding_method=0):  # noqa: A001
    """Round to integral values; ``rounding_method`` 0 = away from zero, 1 = to even."""
    return round_p.bind(x, rounding_method=int(rounding_method))


not_p = unary_primitive("not", "stablehlo.not", "biu")
defjvp_zero(not_p)
def bitwise_not(x): return not_p.bind(x)


is_finite_p = Primitive("is_finite")


@is_finite_p.def_abstract_eval
def _is_finite_abstract(x):
    check_dtype("is_finite", x, "f")
    return ShapedArray(x.shape, dtypes.bool_)


@is_finite_p.def_lowering
def _is_finite_lower(ctx, x):
    return ctx.op("stablehlo.is_finite", [x], ctx.avals_out[0])


defjvp_zero(is_finite_p)
def_elementwise_batch(is_finite_p)
def is_finite(x): return is_finite_p.bind(x)


# ---- abs: real for a complex operand --------------------------------------------------------
abs_p = Primitive("abs")


@abs_p.def_abstract_eval
def _abs_abstract(x):
    check_dtype("abs", x, "fciu")
    if dtypes.is_complex(x.dtype):
        return ShapedArray(x.shape, np.finfo(x.dtype).dtype, x.weak_type)
    return x


@abs_p.def_lowering
def _abs_lower(ctx, x):
    if dtypes.is_unsigned(x.aval.dtype):
        return x
    return ctx.op("stablehlo.abs", [x], ctx.avals_out[0])


def _abs_jvp(t, x):
    # +t where x >= 0 (so the derivative at 0 is 1, as in jax), -t elsewhere.
    from minijax.lax.select import select
    if dtypes.is_complex(get_aval(x).dtype):
        # d|x| = Re(conj(x) t) / |x|, and 0 where x == 0 (as in jax).
        ans = abs(x)
        num = _b.add(_b.mul(real(x), real(t)), _b.mul(imag(x), imag(t)))
        zero = _b.eq(ans, _const_like(ans, 0))
        return _b.div(num, select(zero, _b.add(ans, _const_like(ans, 1)), ans))
    return select(_b.ge(x, _const_like(x, 0)), t, neg(t))


defjvp(abs_p, _abs_jvp)
def_elementwise_batch(abs_p)
def abs(x): return abs_p.bind(x)  # noqa: A001


# ---- erf ------------------------------------------------------------------------------------
erf_p = Primitive("erf")


@erf_p.def_abstract_eval
def _erf_abstract(x):
    check_dtype("erf", x, "f")
    return x


@erf_p.def_lowering
def _erf_lower(ctx, x):
    return ctx.op("chlo.erf", [x], ctx.avals_out[0])


defjvp(erf_p, lambda t, x: _b.mul(t, _b.mul(_const_like(x, 2 / np.sqrt(np.pi)),
                                            exp(neg(_b.mul(x, x))))))
def_elementwise_batch(erf_p)
def erf(x): return erf_p.bind(x)


# ---- integer_pow, square --------------------------------------------------------------------
integer_pow_p = Primitive("integer_pow")


@integer_pow_p.def_abstract_eval
def _integer_pow_abstract(x, *, y: int):
    check_dtype("integer_pow", x, "fciu")
    if not isinstance(y, (int, np.integer)):
        raise type_error("integer_pow", f"exponent must be a Python int, got {y!r}", x)
    if y < 0 and dtypes.is_int(x.dtype):
        raise type_error("integer_pow", f"negative exponent {y} of an integer array", x)
    return x


@integer_pow_p.def_lowering
def _integer_pow_lower(ctx, x, *, y: int):
    # Exponentiation by squaring, as multiplies (what XLA would do for a constant exponent).
    aval = ctx.avals_out[0]
    n = -int(y) if y < 0 else int(y)  # (the module defines its own abs)
    if n == 0:
        return ctx.constant(1, aval.dtype, aval.shape)
    acc = None
    base = x
    while n:
        if n & 1:
            acc = base if acc is None else ctx.op("stablehlo.multiply", [acc, base], aval)
        n >>= 1
        if n:
            base = ctx.op("stablehlo.multiply", [base, base], aval)
    if y < 0:
        one = ctx.constant(1, aval.dtype, aval.shape)
        acc = ctx.op("stablehlo.divide", [one, acc], aval)
    return acc


def _integer_pow_jvp(t, x, *, y: int):
    # As jax: no equation for the constant x**0 or for x**1, and x * 2 for y == 2, so
    # grad(lambda x: x ** 2) is ``mul 2.0 x`` with no ``integer_pow[y=1]``.
    if y == 0:
        return Zero(tangent_aval(get_aval(t)))
    if y == 1:
        return t
    return _b.mul(t, _b.mul(_const_like(x, y), x if y == 2 else integer_pow(x, y - 1)))


defjvp(integer_pow_p, _integer_pow_jvp)
def_elementwise_batch(integer_pow_p)


def integer_pow(x, y: int):
    """``x ** y`` for a static integer ``y`` (TypeError for any other exponent)."""
    try:
        y = operator.index(y)
    except TypeError:
        raise TypeError(f"integer_pow: the exponent must be a static integer, got "
                        f"{y!r}") from None
    return integer_pow_p.bind(x, y=y)


square_p = Primitive("square")


@square_p.def_abstract_eval
def _square_abstract(x):
    check_dtype("square", x, "fciu")
    return x


@square_p.def_lowering
def _square_lower(ctx, x):
    return ctx.op("stablehlo.multiply", [x, x], ctx.avals_out[0])


defjvp(square_p, lambda t, x: _b.mul(t, _b.mul(_const_like(x, 2), x)))
def_elementwise_batch(square_p)
def square(x): return square_p.bind(x)


# ---- real, imag: linear -----------------------------------------------------------------------
# Transposes follow jax's convention for complex cotangents (no conjugation):
# <ct, f(t)> = Re(sum(ct * f(t))). real(t) pulls ct back to ct + 0j, imag(t) to -ct * 1j.
real_p = Primitive("real")


@real_p.def_abstract_eval
def _real_abstract(x):
    check_dtype("real", x, "c")
    return ShapedArray(x.shape, np.finfo(x.dtype).dtype, x.weak_type)


@real_p.def_lowering
def _real_lower(ctx, x):
    return ctx.op("stablehlo.real", [x], ctx.avals_out[0])


def _real_transpose(ct, x):
    from minijax.lax.convert import convert_element_type
    return [convert_element_type(ct, x.aval.dtype)]


deflinear(real_p, _real_transpose)
def_elementwise_batch(real_p)
def real(x): return real_p.bind(x)


imag_p = Primitive("imag")


@imag_p.def_abstract_eval
def _imag_abstract(x):
    check_dtype("imag", x, "c")
    return ShapedArray(x.shape, np.finfo(x.dtype).dtype, x.weak_type)


@imag_p.def_lowering
def _imag_lower(ctx, x):
    return ctx.op("stablehlo.imag", [x], ctx.avals_out[0])


def _imag_transpose(ct, x):
    from minijax.lax.convert import convert_element_type
    return [_b.mul(convert_element_type(ct, x.aval.dtype), _const_like(x, -1j))]


deflinear(imag_p, _imag_transpose)
def_elementwise_batch(imag_p)
def imag(x): return imag_p.bind(x)
