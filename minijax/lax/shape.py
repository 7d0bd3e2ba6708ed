"""Shape primitives: broadcast_in_dim, reshape (more join this family)."""

from __future__ import annotations

from typing import Sequence

from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax._util import type_error
from minijax.lowering.types import i64_array

broadcast_in_dim_p = Primitive("broadcast_in_dim")
reshape_p = Primitive("reshape")


@broadcast_in_dim_p.def_abstract_eval
def _broadcast_in_dim_abstract(x, *, shape, broadcast_dimensions, sharding=None):
    if len(broadcast_dimensions) != x.ndim:
        raise type_error("broadcast_in_dim", f"broadcast_dimensions {broadcast_dimensions} must "
                         f"have one entry per operand dimension", x)
    for d, od in zip(x.shape, broadcast_dimensions):
        if not 0 <= od < len(shape) or d not in (1, shape[od]):
            raise type_error("broadcast_in_dim", f"cannot broadcast operand shape {x.shape} to "
                             f"{tuple(shape)} with broadcast_dimensions {broadcast_dimensions}", x)
    if list(broadcast_dimensions) != sorted(broadcast_dimensions):
        raise type_error("broadcast_in_dim", "broadcast_dimensions must be increasing", x)
    return ShapedArray(shape, x.dtype, x.weak_type)


@broadcast_in_dim_p.def_lowering
def _broadcast_in_dim_lower(ctx, x, *, shape, broadcast_dimensions, sharding=None):
    return ctx.op("stablehlo.broadcast_in_dim", [x], ctx.avals_out[0],
                  {"broadcast_dimensions": i64_array(broadcast_dimensions)})


def broadcast_in_dim(x, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    shape = tuple(int(d) for d in shape)
    dims = tuple(int(d) for d in broadcast_dimensions)
    aval = get_aval(x)
    if aval.shape == shape and dims == tuple(range(len(shape))) and hasattr(x, "aval"):
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims, sharding=None)


@reshape_p.def_abstract_eval
def _reshape_abstract(x, *, new_sizes, dimensions=None, sharding=None):
    import math
    if math.prod(new_sizes) != x.size or any(d < 0 for d in new_sizes):
        raise type_error("reshape", f"cannot reshape array of shape {x.shape} (size {x.size}) "
                         f"into shape {tuple(new_sizes)}", x)
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


@reshape_p.def_lowering
def _reshape_lower(ctx, x, *, new_sizes, dimensions=None, sharding=None):
    return ctx.op("stablehlo.reshape", [x], ctx.avals_out[0])


def reshape(x, new_sizes: Sequence[int], dimensions=None):
    new_sizes = tuple(int(d) for d in new_sizes)
    aval = get_aval(x)
    if aval.shape == new_sizes and hasattr(x, "aval"):
        return x
    return reshape_p.bind(x, new_sizes=new_sizes, dimensions=None, sharding=None)
