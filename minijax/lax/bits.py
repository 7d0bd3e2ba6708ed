"""Bit-level primitives: reinterpreting bits as another dtype, and counting bits.

- ``bitcast_convert_type``: the same bits read as another dtype. Between dtypes of
  equal width the shape is unchanged; to a narrower dtype a trailing dimension of
  ``old_bits // new_bits`` is added; to a wider dtype the trailing dimension (which
  must equal ``new_bits // old_bits``) is consumed.
- ``clz``: the number of leading zero bits of each integer.
- ``population_count``: the number of set bits of each integer.
"""

from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive
from minijax.lax._util import check_dtype, type_error, unary_primitive
from minijax.transforms.ad import defjvp_zero
from minijax.transforms.batching import moveaxis

# ---- bitcast_convert_type ---------------------------------------------------------------------
bitcast_convert_type_p = Primitive("bitcast_convert_type")


def _bitcast_abstract(x, *, new_dtype):
    check_dtype("bitcast_convert_type", x, "fiu")
    new_dtype = np.dtype(new_dtype)
    if not (dtypes.is_int(new_dtype) or dtypes.is_float(new_dtype)):
        raise type_error("bitcast_convert_type",
                         f"cannot bitcast to {new_dtype.name}: only integer and floating-point "
                         f"dtypes are supported", x)
    old_size, new_size = x.dtype.itemsize, new_dtype.itemsize
    if old_size == new_size:
        shape = x.shape
    elif old_size > new_size:
        shape = (*x.shape, old_size // new_size)
    else:
        ratio = new_size // old_size
        if not x.shape or x.shape[-1] != ratio:
            raise type_error("bitcast_convert_type",
                             f"bitcasting {x.dtype.name} to the wider {new_dtype.name} needs a "
                             f"trailing dimension of size {ratio}", x)
        shape = x.shape[:-1]
    return ShapedArray(shape, new_dtype)


def _bitcast_lower(ctx, x, *, new_dtype):
    return ctx.op("stablehlo.bitcast_convert", [x], ctx.avals_out[0])


def _bitcast_batch(trace, vals, dims, *, new_dtype):
    # Only the trailing dimension can change: a leading batch dimension is untouched.
    (x,), (d,) = vals, dims
    return bitcast_convert_type_p.bind(moveaxis(x, d, 0), new_dtype=new_dtype), 0


# Registration. jvp: the bits of a value are not differentiable (a zero tangent, as in jax).
bitcast_convert_type_p.def_abstract_eval(_bitcast_abstract)
bitcast_convert_type_p.def_lowering(_bitcast_lower)
bitcast_convert_type_p.def_batch(_bitcast_batch)
defjvp_zero(bitcast_convert_type_p)


def bitcast_convert_type(operand, new_dtype):
    """``operand``'s bits reinterpreted as ``new_dtype`` (mirrors ``jax.lax``).

    >>> bitcast_convert_type(np.float32(1.0), np.uint32)   # 0x3f800000
    Array(1065353216, dtype=uint32)
    """
    return bitcast_convert_type_p.bind(operand, new_dtype=dtypes.canonicalize(new_dtype))


# ---- clz and population_count -------------------------------------------------------------
# Elementwise (unary_primitive registers abstract eval, lowering and batching); integer
# results of integer operands, so their jvps are zero.

clz_p = unary_primitive("clz", "stablehlo.count_leading_zeros", "iu")
defjvp_zero(clz_p)


def clz(x):
    """The number of leading zero bits of each element of the integer array ``x``."""
    return clz_p.bind(x)


population_count_p = unary_primitive("population_count", "stablehlo.popcnt", "iu")
defjvp_zero(population_count_p)


def population_count(x):
    """The number of set bits of each element of the integer array ``x``."""
    return population_count_p.bind(x)
