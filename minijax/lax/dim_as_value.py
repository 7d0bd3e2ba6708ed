"""dim_as_value: a dimension size (a symbolic dimension expression) as an integer value.

``export.dim_as_value(b)`` / ``core.dimension_as_value(b)``, and arithmetic that mixes a
symbolic dimension with arrays (``x * x.shape[0]``), bind it. The result is a weakly
typed integer scalar (int32, or int64 with x64), as jax's. Lowered as the dimension's
arithmetic over the dimension variables of the shape-polymorphic function
(``lowering.builder.dim_value``); it has no eager implementation (symbolic dimensions
exist only while tracing) and no tangent (an integer).
"""

from __future__ import annotations

from minijax.core import dtypes
from minijax.core import shape_poly
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive

dim_as_value_p = Primitive("dim_as_value")


def _dtype():
    return dtypes.canonicalize(dtypes.int64)


@dim_as_value_p.def_abstract_eval
def _abstract(*, dim):
    return ShapedArray((), _dtype(), weak_type=True)


@dim_as_value_p.def_impl
def _impl(*, dim):
    raise ValueError(f"the symbolic dimension '{dim}' has a value only inside a "
                     "shape-polymorphic trace (export with symbolic shapes)")


@dim_as_value_p.def_lowering
def _lower(ctx, *, dim):
    v = ctx.dim_value(dim)
    out = ctx.avals_out[0]
    if out.dtype != v.aval.dtype:
        v = ctx.op("stablehlo.convert", [v], out)
    return v


def dim_as_value(d):
    """``d`` (an int or a symbolic dimension) as a value to compute with."""
    if type(d) is not shape_poly.DimExpr:
        return d
    return dim_as_value_p.bind(dim=d)


shape_poly.set_dim_as_value(dim_as_value)
