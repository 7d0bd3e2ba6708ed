"""Elementwise two-operand primitives: arithmetic, bitwise/logical and comparisons.

Operands must have the same dtype; shapes must be equal except that a rank-0
operand broadcasts (as in jax's jaxprs: ``mul b 2.0:f32[]``). The helpers the rules
share come first; then one block per primitive: its definition (``binary_primitive``
gives the abstract eval, lowering and elementwise batching), its jvp and transpose, its
lax function.
"""

from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax.convert import convert_element_type
from minijax.lax._util import (binary_primitive, broadcast_operand, broadcast_shapes_scalar,
                               check_dtype, const_like, same_dtypes)
from minijax.transforms.ad import (Zero, defjvp, defjvp_zero, instantiate, is_undefined,
                                   tangent_aval)
from minijax.transforms.batching import def_elementwise_batch


# ---- helpers the rules share --------------------------------------------------------------

def unbroadcast(ct, aval):
    """Sum ``ct`` down to ``aval``'s shape (a rank-0 operand was broadcast)."""
    if get_aval(ct).shape == aval.shape:
        return ct
    from minijax.lax.reduce import reduce_sum
    return reduce_sum(ct, tuple(range(get_aval(ct).ndim)))


def _out_shape(*operands) -> tuple:
    """The output shape of an elementwise binary op (a rank-0 operand broadcasts)."""
    for x in operands:
        shape = get_aval(x).shape
        if shape:
            return shape
    return ()


def _shaped(t, shape: tuple):
    """``t`` broadcast to ``shape`` when it came from a rank-0 operand."""
    if get_aval(t).shape == shape:
        return t
    from minijax.lax.shape import broadcast_in_dim
    return broadcast_in_dim(t, shape, ())


def _binary_linear_jvp(prim):
    def rule(primals, tangents):
        out = prim.bind(*primals)
        tx, ty = tangents
        if type(tx) is Zero and type(ty) is Zero:
            return out, Zero(tangent_aval(get_aval(out)))
        shape = get_aval(out).shape
        if type(ty) is Zero:
            return out, _shaped(tx, shape)
        if type(tx) is Zero:
            t = _shaped(ty, shape)
            if prim is sub_p:
                from minijax.lax.unary import neg
                t = neg(t)
            return out, t
        return out, prim.bind(instantiate(tx), instantiate(ty))
    return rule


def _compare_type(dt) -> str:
    if dtypes.is_inexact(dt):
        return "FLOAT"
    if dtypes.is_signed(dt):
        return "SIGNED"
    return "UNSIGNED"


def _comparison(name: str, direction: str, kinds: str = "fciub") -> Primitive:
    """A comparison primitive: a bool result, elementwise batching, a zero derivative."""
    p = Primitive(name)

    def abstract_eval(x, y):
        check_dtype(name, x, kinds)
        same_dtypes(name, [x, y])
        # Like jax, the result is weakly typed when both operands are.
        return ShapedArray(broadcast_shapes_scalar(name, [x, y]), dtypes.bool_,
                           x.weak_type and y.weak_type)

    def lowering(ctx, x, y):
        out = ctx.avals_out[0]
        x = broadcast_operand(ctx, x, out.shape)
        y = broadcast_operand(ctx, y, out.shape)
        return ctx.op("stablehlo.compare", [x, y], out, {
            "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
            "compare_type": f"#stablehlo<comparison_type {_compare_type(x.aval.dtype)}>",
        })

    p.def_abstract_eval(abstract_eval)
    p.def_lowering(lowering)
    def_elementwise_batch(p)
    defjvp_zero(p)
    return p


# ---- add, sub: linear -------------------------------------------------------------------------
add_p = binary_primitive("add", "stablehlo.add", "fciub")


def _add_transpose(ct, x, y):
    return [unbroadcast(ct, x.aval) if is_undefined(x) else None,
            unbroadcast(ct, y.aval) if is_undefined(y) else None]


add_p.def_jvp(_binary_linear_jvp(add_p))
add_p.def_transpose(_add_transpose)
def add(x, y): return add_p.bind(x, y)


sub_p = binary_primitive("sub", "stablehlo.subtract", "fciu")


def _sub_transpose(ct, x, y):
    from minijax.lax.unary import neg
    return [unbroadcast(ct, x.aval) if is_undefined(x) else None,
            unbroadcast(neg(ct), y.aval) if is_undefined(y) else None]


sub_p.def_jvp(_binary_linear_jvp(sub_p))
sub_p.def_transpose(_sub_transpose)
def sub(x, y): return sub_p.bind(x, y)


# ---- mul, div: linear in one operand ----------------------------------------------------------
mul_p = binary_primitive("mul", "stablehlo.multiply", "fciub")


def _mul_transpose(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise NotImplementedError("mul is not linear in both operands at once")
    if is_undefined(x):
        return [unbroadcast(mul(ct, y), x.aval), None]
    return [None, unbroadcast(mul(x, ct), y.aval)]


defjvp(mul_p, lambda t, x, y: _shaped(mul(t, y), _out_shape(x, y)),
       lambda t, x, y: _shaped(mul(x, t), _out_shape(x, y)))
mul_p.def_transpose(_mul_transpose)


def mul(x, y, *, out_dtype=None):
    """Elementwise product; with ``out_dtype`` both operands are converted to it first
    (as jax's ``mul(..., out_dtype=)`` does on CPU)."""
    if out_dtype is not None:
        x, y = convert_element_type(x, out_dtype), convert_element_type(y, out_dtype)
    return mul_p.bind(x, y)


div_p = binary_primitive("div", "stablehlo.divide", "fciu")


def _div_jvp_rhs(t, x, y):
    # (-t * x) * y**-2, jax's form: derivatives through x / y round as jax's do
    from minijax.lax.unary import integer_pow, neg
    return _shaped(mul(mul(neg(t), x), integer_pow(y, -2)), _out_shape(x, y))


def _div_transpose(ct, x, y):
    if is_undefined(y):
        raise NotImplementedError("div is not linear in its divisor")
    return [unbroadcast(div(ct, y), x.aval), None]


defjvp(div_p, lambda t, x, y: _shaped(div(t, y), _out_shape(x, y)), _div_jvp_rhs)
div_p.def_transpose(_div_transpose)
def div(x, y): return div_p.bind(x, y)


# ---- rem, pow, atan2 --------------------------------------------------------------------------
rem_p = binary_primitive("rem", "stablehlo.remainder", "fiu")


def _rem_jvp_y(t, x, y):
    from minijax.lax.unary import abs as _abs, floor, neg, sign
    q = div(x, y)
    trunc = mul(sign(q), floor(_abs(q)))  # rem(x, y) = x - y * trunc(x / y)
    return _shaped(neg(mul(t, trunc)), _out_shape(x, y))


defjvp(rem_p, lambda t, x, y: _shaped(t, _out_shape(x, y)), _rem_jvp_y)
def rem(x, y): return rem_p.bind(x, y)


pow_p = binary_primitive("pow", "stablehlo.power", "fc")


def _pow_jvp_x(t, x, y):
    one = dtypes.scalar_const(1, get_aval(x).dtype)
    return _shaped(mul(t, mul(y, pow(x, sub(y, one)))), _out_shape(x, y))


def _pow_jvp_y(t, x, y):
    from minijax.lax.unary import log
    from minijax.lax.select import select
    zero = dtypes.scalar_const(0, get_aval(x).dtype)
    # d/dy x**y = log(x) x**y, taken as 0 where x == 0 (as jax does).
    shape = _out_shape(x, y)
    out = pow(x, y)
    safe_log = select(_shaped(eq(x, zero), shape), _shaped(zero, shape),
                      _shaped(log(x), shape))
    return mul(_shaped(t, shape), mul(safe_log, out))


defjvp(pow_p, _pow_jvp_x, _pow_jvp_y)
def pow(x, y): return pow_p.bind(x, y)  # noqa: A001


atan2_p = binary_primitive("atan2", "stablehlo.atan2", "fc")


def _atan2_jvp(which):
    def f(t, x, y):
        denom = add(mul(x, x), mul(y, y))
        num = y if which == 0 else x
        from minijax.lax.unary import neg
        g = div(num, denom) if which == 0 else neg(div(num, denom))
        return _shaped(mul(t, g), _out_shape(x, y))
    return f


defjvp(atan2_p, _atan2_jvp(0), _atan2_jvp(1))
def atan2(x, y): return atan2_p.bind(x, y)


# ---- max, min: complex values ordered as (real, imag) ----------------------------------------

def _minmax_partials(chooses_x):
    """Tangent partials of max/min: the tangent follows the chosen operand and ties split
    it evenly, as jax does. ``chooses_x(x, y)`` is where x is strictly chosen."""
    def partial(which):
        def f(t, x, y):
            from minijax.lax.select import select
            shape = _out_shape(x, y)
            t = _shaped(t, shape)
            zero = _shaped(const_like(x, 0), shape)
            half = mul(t, const_like(x, 0.5))
            x_wins, tie = _shaped(chooses_x(x, y), shape), _shaped(eq(x, y), shape)
            if which == 0:
                return select(x_wins, t, select(tie, half, zero))
            return select(x_wins, zero, select(tie, half, t))
        return f
    return partial(0), partial(1)


def emit_minmax(ctx, kind: str, x, y, out):
    """``maximum``/``minimum`` of two same-shaped values (``kind`` 'max' or 'min'); complex
    values compare lexicographically as (real, imag) pairs, as jax orders them."""
    op = "stablehlo.maximum" if kind == "max" else "stablehlo.minimum"
    if not dtypes.is_complex(out.dtype):
        return ctx.op(op, [x, y], out)
    real = ShapedArray(out.shape, np.empty(0, out.dtype).real.dtype)
    pred = ShapedArray(out.shape, dtypes.bool_)
    direction = "GT" if kind == "max" else "LT"

    def cmp(a, b, d):
        return ctx.op("stablehlo.compare", [a, b], pred, {
            "comparison_direction": f"#stablehlo<comparison_direction {d}>",
            "compare_type": "#stablehlo<comparison_type FLOAT>"})

    rx, ry = ctx.op("stablehlo.real", [x], real), ctx.op("stablehlo.real", [y], real)
    ix, iy = ctx.op("stablehlo.imag", [x], real), ctx.op("stablehlo.imag", [y], real)
    which = ctx.op("stablehlo.select", [cmp(rx, ry, "EQ"), cmp(ix, iy, direction),
                                        cmp(rx, ry, direction)], pred)
    return ctx.op("stablehlo.select", [which, x, y], out)


def _minmax_lowering(kind):
    def lowering(ctx, x, y):
        out = ctx.avals_out[0]
        if x.aval.shape != out.shape:
            x = broadcast_operand(ctx, x, out.shape)
        if y.aval.shape != out.shape:
            y = broadcast_operand(ctx, y, out.shape)
        return emit_minmax(ctx, kind, x, y, out)
    return lowering


def strictly_greater(x, y):
    """``x > y``, complex values ordered lexicographically as ``max`` orders them."""
    if dtypes.is_complex(get_aval(x).dtype):
        return bitwise_and(ne(x, y), eq(max(x, y), x))
    return gt(x, y)


def strictly_less(x, y):
    """``x < y``, complex values ordered lexicographically as ``min`` orders them."""
    if dtypes.is_complex(get_aval(x).dtype):
        return bitwise_and(ne(x, y), eq(min(x, y), x))
    return lt(x, y)


max_p = binary_primitive("max", "stablehlo.maximum", "fciub")
max_p.def_lowering(_minmax_lowering("max"))
defjvp(max_p, *_minmax_partials(strictly_greater))
def max(x, y): return max_p.bind(x, y)  # noqa: A001


min_p = binary_primitive("min", "stablehlo.minimum", "fciub")
min_p.def_lowering(_minmax_lowering("min"))
defjvp(min_p, *_minmax_partials(strictly_less))
def min(x, y): return min_p.bind(x, y)  # noqa: A001


# ---- bitwise and logical: zero derivatives ------------------------------------------------
and_p = binary_primitive("and", "stablehlo.and", "biu")
defjvp_zero(and_p)
def bitwise_and(x, y): return and_p.bind(x, y)


or_p = binary_primitive("or", "stablehlo.or", "biu")
defjvp_zero(or_p)
def bitwise_or(x, y): return or_p.bind(x, y)


xor_p = binary_primitive("xor", "stablehlo.xor", "biu")
defjvp_zero(xor_p)
def bitwise_xor(x, y): return xor_p.bind(x, y)


nextafter_p = binary_primitive("nextafter", "chlo.next_after", "f")
defjvp_zero(nextafter_p)
def nextafter(x1, x2): return nextafter_p.bind(x1, x2)


shift_left_p = binary_primitive("shift_left", "stablehlo.shift_left", "iu")
defjvp_zero(shift_left_p)
def shift_left(x, y): return shift_left_p.bind(x, y)


shift_right_arithmetic_p = binary_primitive(
    "shift_right_arithmetic", "stablehlo.shift_right_arithmetic", "iu")
defjvp_zero(shift_right_arithmetic_p)
def shift_right_arithmetic(x, y): return shift_right_arithmetic_p.bind(x, y)


shift_right_logical_p = binary_primitive(
    "shift_right_logical", "stablehlo.shift_right_logical", "iu")
defjvp_zero(shift_right_logical_p)
def shift_right_logical(x, y): return shift_right_logical_p.bind(x, y)


# ---- comparisons (``_comparison``: all their rules) -----------------------------------------
eq_p = _comparison("eq", "EQ")
def eq(x, y): return eq_p.bind(x, y)


ne_p = _comparison("ne", "NE")
def ne(x, y): return ne_p.bind(x, y)


lt_p = _comparison("lt", "LT", "fiub")
def lt(x, y): return lt_p.bind(x, y)


le_p = _comparison("le", "LE", "fiub")
def le(x, y): return le_p.bind(x, y)


gt_p = _comparison("gt", "GT", "fiub")
def gt(x, y): return gt_p.bind(x, y)


ge_p = _comparison("ge", "GE", "fiub")
def ge(x, y): return ge_p.bind(x, y)
