"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, concatenate, pad, rev, iota.

Also the lax functions built on them: ``expand_dims``, ``broadcast``,
``broadcasted_iota``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from minijax.core import sharding_rules as _srules
from minijax.core import dtypes
from minijax.core.aval import ShapedArray, canonicalize_dim, canonicalize_shape
from minijax.core.primitives import broadcast_in_dim_p, transpose_p
from minijax.core.trace import Primitive, get_aval
from minijax.lax._util import (check_nonnegative_shape, check_out_sharding, static_int,
                               static_ints, type_error)
from minijax.lowering.types import i64_array
from minijax.transforms.ad import deflinear, defjvp_zero, is_undefined
from minijax.transforms.batching import broadcast_batch, moveaxis

def canonicalize_axis(axis: int, ndim: int) -> int:
    """``axis`` in ``[0, ndim)``; negative axes count from the end (ValueError if out of range).

    TypeError when ``axis`` is not an integer (``2.5`` is not axis 2).
    """
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"axis must be an integer, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis + ndim if axis < 0 else axis


# ---- rules shared below ----------------------------------------------------------------
#
# Every primitive here except iota is linear in its (floating) operands, so its jvp is the
# primitive applied to the tangents and its transpose is the adjoint structural op. Batching
# rules fold the batch dimension into the op's parameters, so the batched operand is never
# transposed when the op can keep the batch dimension where it is.
# Sharding in types: each primitive's rule (core/sharding_rules.py) sits in its block.


def _shift(dims, at: int) -> tuple[int, ...]:
    """``dims`` renumbered after a new dimension is inserted at position ``at``."""
    return tuple(d if d < at else d + 1 for d in dims)


def _zeros(shape, dtype):
    return broadcast_in_dim(np.zeros((), dtype), tuple(shape), ())


def _aval_of(x) -> ShapedArray:
    """The aval of a transpose rule's operand (an ``UndefinedPrimal`` or a value)."""
    return x.aval if is_undefined(x) else get_aval(x)


# ---- broadcast_in_dim ----------------------------------------------------------------

@broadcast_in_dim_p.def_abstract_eval
def _broadcast_in_dim_abstract(x, *, broadcast_dimensions, shape, sharding=None):
    check_nonnegative_shape("broadcast_in_dim", "shape", tuple(shape), x)
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
def _broadcast_in_dim_lower(ctx, x, *, broadcast_dimensions, shape, sharding=None):
    # ctx.broadcast_in_dim re-emits a broadcast scalar constant at full shape (XLA's HLO
    # converter would fold the broadcast and drop its metadata).
    return ctx.broadcast_in_dim(x, ctx.avals_out[0], broadcast_dimensions)


def _broadcast_in_dim_pp(params: dict) -> dict:
    # As jax prints it: the shape is in the binder's type; trivial dimensions are hidden.
    shown = {}
    if params["broadcast_dimensions"]:
        shown["broadcast_dimensions"] = params["broadcast_dimensions"]
    if params.get("sharding") is not None:
        shown["sharding"] = params["sharding"]
    return shown


broadcast_in_dim_p.pp_params = _broadcast_in_dim_pp


def broadcast_in_dim(operand, shape: Sequence[int], broadcast_dimensions: Sequence[int], *,
                     out_sharding=None):
    """Broadcast ``operand`` to ``shape``; its dim ``i`` becomes dim
    ``broadcast_dimensions[i]``."""
    check_out_sharding("broadcast_in_dim", out_sharding)
    shape = canonicalize_shape(shape, "shape of broadcast_in_dim")
    dims = static_ints(broadcast_dimensions, "broadcast_in_dim broadcast_dimensions")
    aval = get_aval(operand)
    if aval.shape == shape and dims == tuple(range(len(shape))) and hasattr(operand, "aval"):
        return operand
    return broadcast_in_dim_p.bind(operand, broadcast_dimensions=dims, shape=shape, sharding=None)


def broadcast(operand, sizes: Sequence[int], *, out_sharding=None):
    """Add leading dimensions of ``sizes`` to ``operand`` (as ``jax.lax.broadcast``)."""
    check_out_sharding("broadcast", out_sharding)
    aval = get_aval(operand)
    sizes = canonicalize_shape(sizes, "sizes of broadcast")
    dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
    return broadcast_in_dim(operand, sizes + aval.shape, dims)


def _broadcast_in_dim_transpose(ct, x, *, broadcast_dimensions, shape, sharding=None):
    from minijax.lax.reduce import reduce_sum
    in_shape = x.aval.shape
    # Sum over the new dimensions and over operand dimensions of size 1 that were expanded.
    expanded = [od for d, od in zip(in_shape, broadcast_dimensions) if d == 1 and shape[od] != 1]
    axes = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions or i in expanded)
    out = reduce_sum(ct, axes) if axes else ct
    return [reshape(out, in_shape)]


def _broadcast_in_dim_batch(trace, vals, dims, *, broadcast_dimensions, shape, sharding=None):
    (x,), (b,) = vals, dims
    # The batch dimension goes right after the output dimension of operand dim b - 1, so the
    # broadcast dimensions stay increasing and the operand is not transposed.
    out_b = broadcast_dimensions[b - 1] + 1 if b > 0 else 0
    new_dims = list(_shift(broadcast_dimensions, out_b))
    new_dims.insert(b, out_b)
    new_shape = list(shape)
    new_shape.insert(out_b, trace.axis_size)
    out = broadcast_in_dim_p.bind(x, broadcast_dimensions=tuple(new_dims),
                                  shape=tuple(new_shape), sharding=sharding)
    return out, out_b


deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
broadcast_in_dim_p.def_batch(_broadcast_in_dim_batch)
_srules.def_sharding_rule(broadcast_in_dim_p, _srules.broadcast_in_dim_rule)


# ---- reshape ------------------------------------------------------------------------

reshape_p = Primitive("reshape")


@reshape_p.def_abstract_eval
def _reshape_abstract(x, *, dimensions=None, new_sizes, sharding=None):
    check_nonnegative_shape("reshape", "new_sizes", tuple(new_sizes), x)
    if math.prod(new_sizes) != x.size or any(d < 0 for d in new_sizes):
        raise type_error("reshape", f"cannot reshape array of shape {x.shape} (size {x.size}) "
                         f"into shape {tuple(new_sizes)} (size {math.prod(new_sizes)})", x)
    if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
        raise type_error("reshape", f"dimensions {dimensions} must be a permutation of the "
                         f"operand dimensions {tuple(range(x.ndim))}", x)
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


@reshape_p.def_lowering
def _reshape_lower(ctx, x, *, dimensions=None, new_sizes, sharding=None):
    if dimensions is not None:
        shape = tuple(x.aval.shape[d] for d in dimensions)
        x = ctx.op("stablehlo.transpose", [x], ShapedArray(shape, x.aval.dtype),
                   {"permutation": i64_array(dimensions)})
    return ctx.op("stablehlo.reshape", [x], ctx.avals_out[0])


def reshape(operand, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None, *,
            out_sharding=None):
    """Reshape ``operand`` to ``new_sizes``; ``dimensions`` transposes the operand first."""
    check_out_sharding("reshape", out_sharding)
    new_sizes = canonicalize_shape(new_sizes, "new_sizes of reshape")
    aval = get_aval(operand)
    dims = None
    if dimensions is not None:
        dims = static_ints(dimensions, "reshape dimensions")
        if dims == tuple(range(aval.ndim)):
            dims = None
    if aval.shape == new_sizes and dims is None and hasattr(operand, "aval"):
        return operand
    return reshape_p.bind(operand, dimensions=dims, new_sizes=new_sizes, sharding=None)


def _reshape_transpose(ct, x, *, dimensions=None, new_sizes, sharding=None):
    if dimensions is None:
        return [reshape(ct, x.aval.shape)]
    permuted = reshape(ct, tuple(x.aval.shape[d] for d in dimensions))
    return [transpose(permuted, tuple(int(i) for i in np.argsort(dimensions)))]


def _reshape_batch(trace, vals, dims, *, dimensions=None, new_sizes, sharding=None):
    (x,), (b,) = vals, dims
    n = trace.axis_size
    shape = get_aval(x).shape
    if dimensions is not None:  # fold the batch dimension into the operand permutation
        perm = (b,) + _shift(dimensions, b)
        return reshape_p.bind(x, dimensions=perm, new_sizes=(n,) + new_sizes,
                              sharding=sharding), 0
    # In row-major order the batch dimension can stay in place when the operand dims before
    # it have the same number of elements as a prefix of the new shape.
    before = math.prod(shape[:b])
    for k in range(len(new_sizes) + 1):
        if math.prod(new_sizes[:k]) == before:
            out_shape = new_sizes[:k] + (n,) + new_sizes[k:]
            return reshape_p.bind(x, dimensions=None, new_sizes=out_shape, sharding=sharding), k
    x = moveaxis(x, b, 0)
    return reshape_p.bind(x, dimensions=None, new_sizes=(n,) + new_sizes, sharding=sharding), 0


deflinear(reshape_p, _reshape_transpose)
reshape_p.def_batch(_reshape_batch)
_srules.def_sharding_rule(reshape_p, _srules.reshape_rule)


# ---- transpose ----------------------------------------------------------------------

@transpose_p.def_abstract_eval
def _transpose_abstract(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise type_error("transpose", f"transpose permutation isn't a permutation of operand "
                         f"dimensions, got permutation {permutation} for operand shape "
                         f"{x.shape}", x)
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


@transpose_p.def_lowering
def _transpose_lower(ctx, x, *, permutation):
    return ctx.op("stablehlo.transpose", [x], ctx.avals_out[0],
                  {"permutation": i64_array(permutation)})


def transpose(operand, permutation: Sequence[int]):
    """Permute the dimensions of ``operand``: output dim ``i`` is operand dim ``permutation[i]``."""
    perm = static_ints(permutation, "transpose permutation")
    if perm == tuple(range(get_aval(operand).ndim)) and hasattr(operand, "aval"):
        return operand
    return transpose_p.bind(operand, permutation=perm)


def _transpose_transpose(ct, x, *, permutation):
    return [transpose(ct, tuple(int(i) for i in np.argsort(permutation)))]


def _transpose_batch(trace, vals, dims, *, permutation):
    (x,), (b,) = vals, dims
    perm = list(_shift(permutation, b))
    perm.insert(b, b)  # the batch dimension stays where it is
    return transpose_p.bind(x, permutation=tuple(perm)), b


deflinear(transpose_p, _transpose_transpose)
transpose_p.def_batch(_transpose_batch)


def _transpose_sharding(x, *, permutation):
    s = _srules.sharding_of(x)
    entries = _srules.spec_entries(s, len(x.shape))
    return _srules.with_entries(s, [entries[p] for p in permutation])


_srules.def_sharding_rule(transpose_p, _transpose_sharding)


# ---- squeeze / expand_dims ------------------------------------------------------------

squeeze_p = Primitive("squeeze")


def _check_squeeze(x: ShapedArray, dimensions) -> None:
    if any(not 0 <= d < x.ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise ValueError(f"squeeze: dimensions {dimensions} must be distinct axes of an array "
                         f"of shape {x.shape}")
    if any(x.shape[d] != 1 for d in dimensions):
        raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                         f"one, got shape={x.shape} and dimensions={dimensions}")


@squeeze_p.def_abstract_eval
def _squeeze_abstract(x, *, dimensions):
    _check_squeeze(x, dimensions)
    shape = tuple(d for i, d in enumerate(x.shape) if i not in dimensions)
    return ShapedArray(shape, x.dtype, x.weak_type)


@squeeze_p.def_lowering
def _squeeze_lower(ctx, x, *, dimensions):
    return ctx.op("stablehlo.reshape", [x], ctx.avals_out[0])


def squeeze(array, dimensions: Sequence[int]):
    """Remove the size-1 ``dimensions`` of ``array`` (negative dimensions count from the end)."""
    aval = get_aval(array)
    dims = tuple(sorted(canonicalize_axis(d, aval.ndim) for d in dimensions))
    if not dims and hasattr(array, "aval"):
        return array
    _check_squeeze(aval, dims)
    return squeeze_p.bind(array, dimensions=dims)


def expand_dims(array, dimensions: Sequence[int]):
    """Insert size-1 dimensions at ``dimensions`` (positions in the result)."""
    aval = get_aval(array)
    ndim_out = aval.ndim + len(dimensions)
    dims = [canonicalize_axis(d, ndim_out) for d in dimensions]
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {tuple(dimensions)}")
    shape = list(aval.shape)
    for d in sorted(dims):
        shape.insert(d, 1)
    kept = tuple(i for i in range(ndim_out) if i not in dims)
    return broadcast_in_dim(array, shape, kept)


def _squeeze_transpose(ct, x, *, dimensions):
    return [reshape(ct, x.aval.shape)]


def _squeeze_batch(trace, vals, dims, *, dimensions):
    (x,), (b,) = vals, dims
    new_dims = _shift(dimensions, b)
    out_b = b - sum(d < b for d in new_dims)
    return squeeze_p.bind(x, dimensions=new_dims), out_b


deflinear(squeeze_p, _squeeze_transpose)
squeeze_p.def_batch(_squeeze_batch)


def _squeeze_sharding(x, *, dimensions):
    s = _srules.sharding_of(x)
    entries = _srules.spec_entries(s, len(x.shape))
    dims = {d % max(len(x.shape), 1) for d in dimensions}
    return _srules.with_entries(s, [e for i, e in enumerate(entries) if i not in dims])


_srules.def_sharding_rule(squeeze_p, _squeeze_sharding)


# ---- concatenate ----------------------------------------------------------------------

concatenate_p = Primitive("concatenate")


@concatenate_p.def_abstract_eval
def _concatenate_abstract(*xs, dimension):
    if not xs:
        raise TypeError("concatenate: needs at least one operand")
    shapes = ", ".join(str(x.shape) for x in xs)
    x0 = xs[0]
    if any(x.ndim != x0.ndim for x in xs):
        raise type_error("concatenate", f"Cannot concatenate arrays with different numbers of "
                         f"dimensions: got {shapes}.", *xs)
    if not 0 <= dimension < x0.ndim:
        raise type_error("concatenate", f"concatenate dimension out of bounds: dimension "
                         f"{dimension} for shapes {shapes}.", *xs)
    if any(x.shape[:dimension] + x.shape[dimension + 1:]
           != x0.shape[:dimension] + x0.shape[dimension + 1:] for x in xs):
        raise type_error("concatenate", f"Cannot concatenate arrays with shapes that differ in "
                         f"dimensions other than the one being concatenated: concatenating "
                         f"along dimension {dimension} for shapes {shapes}.", *xs)
    if any(x.dtype != x0.dtype for x in xs):
        raise type_error("concatenate", "operands must have the same dtype; convert them "
                         "first (jnp.concatenate promotes)", *xs)
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, x0.dtype, all(x.weak_type for x in xs))


@concatenate_p.def_lowering
def _concatenate_lower(ctx, *xs, dimension):
    return ctx.op("stablehlo.concatenate", list(xs), ctx.avals_out[0],
                  {"dimension": f"{dimension} : i64"})


def concatenate(operands: Sequence, dimension: int):
    """Join ``operands`` (same dtype and rank) along ``dimension``."""
    operands = list(operands)
    if not operands:
        raise ValueError("concatenate requires a non-empty sequence of operands")
    if len(operands) == 1 and hasattr(operands[0], "aval"):
        return operands[0]
    return concatenate_p.bind(*operands, dimension=static_int(dimension, "concatenate dimension"))


def _concatenate_transpose(ct, *xs, dimension):
    from minijax.lax.slicing import slice_in_dim
    cts, start = [], 0
    for x in xs:
        size = _aval_of(x).shape[dimension]
        cts.append(slice_in_dim(ct, start, start + size, 1, dimension) if is_undefined(x)
                   else None)
        start += size
    return cts


def _concatenate_batch(trace, vals, dims, *, dimension):
    # Keep the first batched operand's batch dimension; the others are moved (or broadcast,
    # if unbatched) to match it.
    b = next(d for d in dims if d is not None)
    xs = [broadcast_batch(x, trace.axis_size, b) if d is None else moveaxis(x, d, b)
          for x, d in zip(vals, dims)]
    return concatenate_p.bind(*xs, dimension=dimension + (dimension >= b)), b


deflinear(concatenate_p, _concatenate_transpose)
concatenate_p.def_batch(_concatenate_batch)


# ---- pad ------------------------------------------------------------------------------

pad_p = Primitive("pad")


@pad_p.def_abstract_eval
def _pad_abstract(x, padding_value, *, padding_config):
    if padding_value.ndim != 0:
        raise type_error("pad", "padding_value must be a scalar", x, padding_value)
    if padding_value.dtype != x.dtype:
        raise type_error("pad", "padding_value must have the operand's dtype", x, padding_value)
    if len(padding_config) != x.ndim:
        raise ValueError(f"length of padding_config must equal the number of axes of operand, "
                         f"got padding_config {padding_config} for operand shape {x.shape}")
    if any(interior < 0 for _, _, interior in padding_config):
        raise ValueError(f"interior padding in padding_config must be nonnegative, got "
                         f"padding_config {padding_config}")
    shape = tuple(lo + hi + d + max(d - 1, 0) * interior
                  for d, (lo, hi, interior) in zip(x.shape, padding_config))
    if any(d < 0 for d in shape):
        raise ValueError(f"Dimension size after padding is not at least 0, got result shape "
                         f"{shape}, for padding_config {padding_config} and operand shape "
                         f"{x.shape}")
    return ShapedArray(shape, x.dtype, x.weak_type and padding_value.weak_type)


@pad_p.def_lowering
def _pad_lower(ctx, x, padding_value, *, padding_config):
    lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
    return ctx.op("stablehlo.pad", [x, padding_value], ctx.avals_out[0], {
        "edge_padding_high": i64_array(hi),
        "edge_padding_low": i64_array(lo),
        "interior_padding": i64_array(interior),
    })


def pad(operand, padding_value, padding_config: Sequence[tuple[int, int, int]]):
    """Pad ``operand`` with ``padding_value``: ``(low, high, interior)`` per dimension.

    Negative ``low``/``high`` remove elements from that edge.
    """
    config = tuple(static_ints(c, "pad padding_config entry") for c in padding_config)
    if any(len(c) != 3 for c in config):
        raise ValueError(f"pad: padding_config must hold (low, high, interior) triples, got "
                         f"{padding_config!r}")
    return pad_p.bind(operand, padding_value, padding_config=config)


def _pad_transpose(ct, x, padding_value, *, padding_config):
    from minijax.lax.reduce import reduce_sum
    from minijax.lax.select import select
    from minijax.lax.slicing import slice as slice_
    x_aval = _aval_of(x)
    ct_aval = get_aval(ct)
    dt = ct_aval.dtype
    x_ct = pv_ct = None
    if is_undefined(x):
        # Undo the edge padding (negative edges were cropped: pad them back with zeros),
        # then take every (interior + 1)-th element.
        unpad = tuple((-lo, -hi, 0) for lo, hi, _ in padding_config)
        t = pad(ct, np.zeros((), dt), unpad)
        x_ct = slice_(t, (0,) * ct_aval.ndim, get_aval(t).shape,
                      tuple(interior + 1 for _, _, interior in padding_config))
    if is_undefined(padding_value):
        # The padding value's cotangent sums ct over the padded positions.
        is_pad = pad(_zeros(x_aval.shape, np.bool_), np.ones((), np.bool_), padding_config)
        masked = select(is_pad, ct, _zeros(ct_aval.shape, dt))
        pv_ct = reduce_sum(masked, tuple(range(ct_aval.ndim)))
    return [x_ct, pv_ct]


def _pad_batch(trace, vals, dims, *, padding_config):
    from minijax.lax.select import select
    (x, pv), (bx, bp) = vals, dims
    if bx is None:
        x, bx = broadcast_batch(x, trace.axis_size, 0), 0
    config = list(padding_config)
    config.insert(bx, (0, 0, 0))
    config = tuple(config)
    if bp is None:
        return pad_p.bind(x, pv, padding_config=config), bx
    # A batched padding value: pad with zeros, then select the padding value where padded.
    aval = get_aval(x)
    out = pad_p.bind(x, np.zeros((), aval.dtype), padding_config=config)
    out_shape = get_aval(out).shape
    is_pad = pad(_zeros(aval.shape, np.bool_), np.ones((), np.bool_), config)
    pv = broadcast_in_dim(pv, out_shape, (bx,))
    return select(is_pad, pv, out), bx


deflinear(pad_p, _pad_transpose)
pad_p.def_batch(_pad_batch)


# ---- rev ------------------------------------------------------------------------------

rev_p = Primitive("rev")


@rev_p.def_abstract_eval
def _rev_abstract(x, *, dimensions):
    if len(set(dimensions)) != len(dimensions):
        raise type_error("rev", f"rev dimensions must be unique, got {dimensions}.", x)
    if any(not 0 <= d < x.ndim for d in dimensions):
        raise type_error("rev", f"rev dimensions must all be less than operand ndim, got "
                         f"dimensions {dimensions} for operand ndim {x.ndim}.", x)
    return x


@rev_p.def_lowering
def _rev_lower(ctx, x, *, dimensions):
    return ctx.op("stablehlo.reverse", [x], ctx.avals_out[0],
                  {"dimensions": i64_array(dimensions)})


def rev(operand, dimensions: Sequence[int]):
    """Reverse ``operand`` along ``dimensions``."""
    return rev_p.bind(operand, dimensions=static_ints(dimensions, "rev dimensions"))


def _rev_transpose(ct, x, *, dimensions):
    return [rev(ct, dimensions)]


def _rev_batch(trace, vals, dims, *, dimensions):
    (x,), (b,) = vals, dims
    return rev_p.bind(x, dimensions=_shift(dimensions, b)), b


deflinear(rev_p, _rev_transpose)
rev_p.def_batch(_rev_batch)


# ---- iota -------------------------------------------------------------------------------

iota_p = Primitive("iota")


@iota_p.def_abstract_eval
def _iota_abstract(*, dimension, dtype, shape, sharding=None):
    aval = ShapedArray(shape, dtype)
    if not (dtypes.is_int(dtype) or dtypes.is_inexact(dtype)):
        raise type_error("iota", f"iota does not accept dtype {np.dtype(dtype).name}; use a "
                         f"numeric dtype", aval)
    check_nonnegative_shape("iota", "shape", tuple(shape))
    if not 0 <= dimension < len(shape):
        raise type_error("iota", f"iota dimension must be between 0 and len(shape)={len(shape)}"
                         f", got dimension={dimension}", aval)
    return aval


@iota_p.def_lowering
def _iota_lower(ctx, *, dimension, dtype, shape, sharding=None):
    out = ctx.avals_out[0]
    attrs = {"iota_dimension": f"{dimension} : i64"}
    if dtypes.is_complex(dtype):
        real = ctx.op("stablehlo.iota", [], ShapedArray(shape, np.finfo(dtype).dtype), attrs)
        return ctx.op("stablehlo.convert", [real], out)
    return ctx.op("stablehlo.iota", [], out, attrs)


def broadcasted_iota(dtype, shape: Sequence[int], dimension: int, *, out_sharding=None):
    """An array of ``shape`` whose values count 0, 1, ... along ``dimension``."""
    check_out_sharding("broadcasted_iota", out_sharding)
    shape = canonicalize_shape(shape, "shape of broadcasted_iota")
    dimension = (canonicalize_axis(dimension, len(shape)) if shape
                 else static_int(dimension, "iota dimension"))
    return iota_p.bind(dimension=dimension, dtype=dtypes.canonicalize(dtype), shape=shape,
                       sharding=None)


def iota(dtype, size: int):
    """``[0, 1, ..., size - 1]`` as ``dtype``."""
    return broadcasted_iota(dtype, (canonicalize_dim(size, "size of iota"),), 0)


# iota has no operands: it is never differentiated nor batched (an unbatched call just
# binds it); its jvp rule only says that its output has a zero tangent.
defjvp_zero(iota_p)


def _iota_sharding(*, dimension, dtype, shape, sharding=None):
    return sharding


_srules.def_sharding_rule(iota_p, _iota_sharding)
