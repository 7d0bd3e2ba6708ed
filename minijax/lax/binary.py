"""Elementwise two-operand primitives: arithmetic, bitwise/logical and comparisons.

Operands must have the same dtype; shapes must be equal except that a rank-0
operand broadcasts (as in jax's jaxprs: ``mul b 2.0:f32[]``).
"""

from __future__ import annotations

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive
from minijax.lax._util import (binary_primitive, broadcast_operand, broadcast_shapes_scalar,
                               check_dtype, same_dtypes)

add_p = binary_primitive("add", "stablehlo.add", "fciub")
sub_p = binary_primitive("sub", "stablehlo.subtract", "fciu")
mul_p = binary_primitive("mul", "stablehlo.multiply", "fciub")
div_p = binary_primitive("div", "stablehlo.divide", "fciu")
rem_p = binary_primitive("rem", "stablehlo.remainder", "fiu")
pow_p = binary_primitive("pow", "stablehlo.power", "fc")
max_p = binary_primitive("max", "stablehlo.maximum", "fiub")
min_p = binary_primitive("min", "stablehlo.minimum", "fiub")
atan2_p = binary_primitive("atan2", "stablehlo.atan2", "f")
and_p = binary_primitive("and", "stablehlo.and", "biu")
or_p = binary_primitive("or", "stablehlo.or", "biu")
xor_p = binary_primitive("xor", "stablehlo.xor", "biu")
nextafter_p = binary_primitive("nextafter", "chlo.next_after", "f")
shift_left_p = binary_primitive("shift_left", "stablehlo.shift_left", "iu")
shift_right_arithmetic_p = binary_primitive(
    "shift_right_arithmetic", "stablehlo.shift_right_arithmetic", "iu")
shift_right_logical_p = binary_primitive(
    "shift_right_logical", "stablehlo.shift_right_logical", "iu")


def _compare_type(dt) -> str:
    if dtypes.is_inexact(dt):
        return "FLOAT"
    if dtypes.is_signed(dt):
        return "SIGNED"
    return "UNSIGNED"


def _comparison(name: str, direction: str, kinds: str = "fciub") -> Primitive:
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
    return p


eq_p = _comparison("eq", "EQ")
ne_p = _comparison("ne", "NE")
lt_p = _comparison("lt", "LT", "fiub")
le_p = _comparison("le", "LE", "fiub")
gt_p = _comparison("gt", "GT", "fiub")
ge_p = _comparison("ge", "GE", "fiub")


def add(x, y): return add_p.bind(x, y)
def sub(x, y): return sub_p.bind(x, y)
def mul(x, y): return mul_p.bind(x, y)
def div(x, y): return div_p.bind(x, y)
def rem(x, y): return rem_p.bind(x, y)
def pow(x, y): return pow_p.bind(x, y)  # noqa: A001
def max(x, y): return max_p.bind(x, y)  # noqa: A001
def min(x, y): return min_p.bind(x, y)  # noqa: A001
def atan2(x, y): return atan2_p.bind(x, y)
def bitwise_and(x, y): return and_p.bind(x, y)
def bitwise_or(x, y): return or_p.bind(x, y)
def bitwise_xor(x, y): return xor_p.bind(x, y)
def nextafter(x, y): return nextafter_p.bind(x, y)
def shift_left(x, y): return shift_left_p.bind(x, y)
def shift_right_arithmetic(x, y): return shift_right_arithmetic_p.bind(x, y)
def shift_right_logical(x, y): return shift_right_logical_p.bind(x, y)
def eq(x, y): return eq_p.bind(x, y)
def ne(x, y): return ne_p.bind(x, y)
def lt(x, y): return lt_p.bind(x, y)
def le(x, y): return le_p.bind(x, y)
def gt(x, y): return gt_p.bind(x, y)
def ge(x, y): return ge_p.bind(x, y)
