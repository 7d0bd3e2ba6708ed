"""convert_element_type: change an array's dtype (and weak-type flag)."""

from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, Tracer, get_aval
from minijax.transforms.ad import JVPTracer, Zero, tangent_aval
from minijax.transforms.batching import def_elementwise_batch

convert_element_type_p = Primitive("convert_element_type")


@convert_element_type_p.def_abstract_eval
def _convert_abstract(x, *, new_dtype, weak_type=False):
    return ShapedArray(x.shape, new_dtype, weak_type)


@convert_element_type_p.def_lowering
def _convert_lower(ctx, x, *, new_dtype, weak_type=False):
    # As jax: a convert even between equal dtypes (a change of weak type only), and a
    # convert after the comparison that makes a bool.
    out = ctx.avals_out[0]
    src = x.aval.dtype
    if out.dtype == dtypes.bool_:
        zero = ctx.constant(0, src, x.aval.shape)
        kind = ("FLOAT" if dtypes.is_inexact(src) else
                "SIGNED" if dtypes.is_signed(src) else "UNSIGNED")
        x = ctx.op("stablehlo.compare", [x, zero], out, {
            "comparison_direction": "#stablehlo<comparison_direction NE>",
            "compare_type": f"#stablehlo<comparison_type {kind}>",
        })
        return ctx.op("stablehlo.convert", [x], out)
    if dtypes.is_complex(src) and not dtypes.is_complex(out.dtype):
        x = ctx.op("stablehlo.real", [x], ShapedArray(x.aval.shape, np.finfo(src).dtype))
        if x.aval.dtype == out.dtype:
            return x
    return ctx.op("stablehlo.convert", [x], out)


def convert_element_type(operand, new_dtype, weak_type: bool = False):
    """Convert ``operand`` to ``new_dtype`` (canonicalized for the x64 flag)."""
    new_dtype = dtypes.canonicalize(new_dtype)
    aval = get_aval(operand)
    if aval.dtype == new_dtype and aval.weak_type == weak_type and hasattr(operand, "aval") \
            and not is_concrete_jvp(operand):
        return operand
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


def is_concrete_jvp(x) -> bool:
    """Whether ``x`` is a jvp tracer of a concrete value: jax converts it even to its own
    dtype (so a Python-number tangent becomes an array, as in ``jvp(lambda x: x + 1)``)."""
    return type(x) is JVPTracer and not isinstance(x.primal, Tracer)


# ---- differentiation rules ---------------------------------------------------------------


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    out_aval = get_aval(out)
    if type(t) is Zero or not dtypes.is_inexact(new_dtype) or \
            not dtypes.is_inexact(get_aval(x).dtype):
        return out, Zero(tangent_aval(out_aval))
    xa = get_aval(x)
    if isinstance(t, Tracer) and xa.dtype == new_dtype and xa.weak_type == weak_type:
        return out, t  # an identity conversion: jax forwards its (traced) tangent
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type=False):
    return [convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=x.aval.weak_type)]


convert_element_type_p.def_jvp(_convert_jvp)
convert_element_type_p.def_transpose(_convert_transpose)


def_elementwise_batch(convert_element_type_p)
