"""``gather`` and the scatters (``scatter``, ``scatter-add``, ``scatter-mul``,
``scatter-min``, ``scatter-max``), with the dimension numbers and out-of-bounds modes they
share: each primitive's abstract eval, lowering, jvp, transpose and batching, then one
registration block.

Out-of-bounds rules are XLA's: ``gather`` clamps its indices unless ``mode="fill"`` (windows
that are not fully in bounds read ``fill_value``); a scatter drops updates whose window is
not fully in bounds unless ``mode="clip"`` (indices clamped first). ``gather`` and
``scatter-add`` are linear in their array operands and each other's transposes; ``scatter``,
``scatter-mul``, ``scatter-min`` and ``scatter-max`` have jvps built from linear ops.
Batching folds a batch dimension into the op's batching dimensions, so the emitted code has
no loops.
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray, canonicalize_shape
from minijax.core.shape_poly import DimExpr
from minijax.core.trace import Primitive, Tracer, get_aval, trace_to_jaxpr
from minijax.lax._util import static_ints, type_error
from minijax.lax.binary import add, div, eq, max as max_, mul, sub
from minijax.lax.convert import convert_element_type
from minijax.lax.select import select
from minijax.lax.shape import broadcast_in_dim, iota, reshape
from minijax.lowering.types import i64_array
from minijax.transforms.ad import Zero, add_tangents, instantiate, is_undefined, tangent_aval
from minijax.transforms.batching import bdim_at, broadcast_batch, moveaxis


class GatherScatterMode(enum.Enum):
    """How gather/scatter treat out-of-bounds indices.

    ``CLIP``: indices are clamped so the whole window is in bounds.
    ``FILL_OR_DROP``: a gather window not fully in bounds reads ``fill_value``;
    such a scatter window is dropped.
    ``PROMISE_IN_BOUNDS``: no checks (XLA clamps gathers and drops scatters).
    """

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    @staticmethod
    def from_any(s: str | GatherScatterMode | None) -> GatherScatterMode:
        """Parse ``'clip'``, ``'fill'``/``'drop'`` (also None) or ``'promise_in_bounds'``."""
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f'Unknown gather mode "{s}"; use "clip", "fill", "drop" or '
                         f'"promise_in_bounds"')


class GatherDimensionNumbers(NamedTuple):
    """How operand, indices and output dimensions of a gather relate (XLA's Gather).

    The index vector is always the last dimension of the indices.
    """

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How operand, indices and updates dimensions of a scatter relate (XLA's Scatter).

    The index vector is always the last dimension of the indices.
    """

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


def _tuples(dn: NamedTuple) -> NamedTuple:
    return type(dn)(*(static_ints(f, f"{type(dn).__name__}.{name}")
                      for name, f in zip(dn._fields, dn)))


def _bool_attr(b: bool) -> str:
    return "true" if b else "false"


def _dims_attr(name: str, dims) -> str:
    return f"{name} = [{', '.join(str(d) for d in dims)}]"


def _shift(dims, at: int) -> tuple[int, ...]:
    """``dims`` renumbered after a new dimension is inserted at position ``at``."""
    return tuple(d if d < at else d + 1 for d in dims)


def _insert_range(positions: Sequence[int], k: int, rank: int) -> tuple[int, int]:
    """Where a new dimension can be inserted into an array of ``rank`` so that exactly ``k``
    of the (sorted) ``positions`` come before it: an inclusive range ``(lo, hi)``."""
    lo = positions[k - 1] + 1 if k > 0 else 0
    hi = positions[k] if k < len(positions) else rank
    return lo, hi


def _full(shape, value, dtype):
    return broadcast_in_dim(np.asarray(value, dtype), tuple(shape), ())


def _zero_tangent(out):
    return Zero(tangent_aval(get_aval(out)))


def _aval_of(x) -> ShapedArray:
    """The aval of a transpose rule's operand (an ``UndefinedPrimal`` or a value)."""
    return x.aval if is_undefined(x) else get_aval(x)


# ---- gather --------------------------------------------------------------------------------


def _check_dims(prim: str, name: str, dims, rank: int, avals, sorted_: bool = True) -> None:
    if sorted_ and list(dims) != sorted(dims):
        raise type_error(prim, f"{name} must be sorted; got {dims}", *avals)
    if len(set(dims)) != len(dims):
        raise type_error(prim, f"{name} must not repeat; got {dims}", *avals)
    if any(not 0 <= d < rank for d in dims):
        raise type_error(prim, f"{name} must be in [0, {rank}); got {dims}", *avals)


def _gather_abstract(operand, indices, *, dimension_numbers, fill_value, indices_are_sorted,
                     mode, slice_sizes, unique_indices):
    avals = (operand, indices)
    dn = dimension_numbers
    if not dtypes.is_int(indices.dtype):
        raise type_error("gather", f"indices must have an integer type, got "
                         f"{indices.dtype.name}", *avals)
    if indices.ndim < 1:
        raise type_error("gather", "indices must have at least one dimension (the last one "
                         "holds the index vectors)", *avals)
    batch_rank = indices.ndim - 1
    out_rank = len(dn.offset_dims) + batch_rank
    _check_dims("gather", "offset_dims", dn.offset_dims, out_rank, avals)
    _check_dims("gather", "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim, avals)
    _check_dims("gather", "operand_batching_dims", dn.operand_batching_dims, operand.ndim,
                avals)
    _check_dims("gather", "start_index_map", dn.start_index_map, operand.ndim, avals,
                sorted_=False)
    _check_dims("gather", "start_indices_batching_dims", dn.start_indices_batching_dims,
                batch_rank, avals, sorted_=False)
    if len(dn.start_index_map) != indices.shape[-1]:
        raise type_error("gather", f"start_index_map {dn.start_index_map} must have one entry "
                         f"per index vector component (indices.shape[-1] = "
                         f"{indices.shape[-1]})", *avals)
    if set(dn.collapsed_slice_dims) & set(dn.operand_batching_dims):
        raise type_error("gather", "collapsed_slice_dims and operand_batching_dims must be "
                         "disjoint", *avals)
    if len(dn.operand_batching_dims) != len(dn.start_indices_batching_dims):
        raise type_error("gather", "operand_batching_dims and start_indices_batching_dims must "
                         "have the same length", *avals)
    if any(operand.shape[o] != indices.shape[i]
           for o, i in zip(dn.operand_batching_dims, dn.start_indices_batching_dims)):
        raise type_error("gather", "operand and indices batching dimensions must have the same "
                         "sizes", *avals)
    if len(slice_sizes) != operand.ndim:
        raise type_error("gather", f"must have one slice size per operand dimension; got "
                         f"slice_sizes={slice_sizes} for operand shape {operand.shape}", *avals)
    if len(slice_sizes) != (len(dn.offset_dims) + len(dn.collapsed_slice_dims)
                            + len(dn.operand_batching_dims)):
        raise type_error("gather", f"every operand dimension must be an offset dimension or "
                         f"collapsed/batching; got slice_sizes={slice_sizes}, offset_dims="
                         f"{dn.offset_dims}, collapsed_slice_dims={dn.collapsed_slice_dims}, "
                         f"operand_batching_dims={dn.operand_batching_dims}", *avals)
    if any(not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)):
        raise type_error("gather", f"slice_sizes {slice_sizes} must be within the operand "
                         f"shape {operand.shape}", *avals)
    if any(slice_sizes[d] != 1 for d in dn.collapsed_slice_dims):
        raise type_error("gather", f"collapsed_slice_dims {dn.collapsed_slice_dims} must have "
                         f"slice size 1, got slice_sizes {slice_sizes}", *avals)
    if any(slice_sizes[d] > 1 for d in dn.operand_batching_dims):
        raise type_error("gather", "operand_batching_dims must have slice size 0 or 1", *avals)
    removed = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window = iter(s for i, s in enumerate(slice_sizes) if i not in removed)
    batch = iter(indices.shape[:-1])
    shape = tuple(next(window) if i in dn.offset_dims else next(batch) for i in range(out_rank))
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _gather_dnums_attr(dn: GatherDimensionNumbers, index_vector_dim: int) -> str:
    parts = [_dims_attr(name, dims) for name, dims in (
        ("offset_dims", dn.offset_dims), ("collapsed_slice_dims", dn.collapsed_slice_dims),
        ("operand_batching_dims", dn.operand_batching_dims),
        ("start_indices_batching_dims", dn.start_indices_batching_dims),
        ("start_index_map", dn.start_index_map)) if dims]
    parts.append(f"index_vector_dim = {index_vector_dim}")
    return f"#stablehlo.gather<{', '.join(parts)}>"


def _compare(ctx, x, y, direction: str):
    kind = "SIGNED" if dtypes.is_signed(x.aval.dtype) else "UNSIGNED"
    return ctx.op("stablehlo.compare", [x, y], ShapedArray(x.aval.shape, dtypes.bool_), {
        "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
        "compare_type": f"#stablehlo<comparison_type {kind}>"})


def _in_bounds_mask(ctx, indices, operand_shape, window_sizes, index_map):
    """bool[batch]: whether each index vector's window lies fully inside the operand."""
    idx_aval = indices.aval
    batch = idx_aval.shape[:-1]
    mask = None
    for j, d in enumerate(index_map):
        starts = [0] * idx_aval.ndim
        limits = list(idx_aval.shape)
        starts[-1], limits[-1] = j, j + 1
        piece = ShapedArray(batch + (1,), idx_aval.dtype)
        if any(type(b) is DimExpr for b in batch):  # shape polymorphism
            comp = ctx.op("stablehlo.real_dynamic_slice", [
                indices, ctx.shape_tensor(starts), ctx.shape_tensor(limits),
                ctx.shape_tensor([1] * idx_aval.ndim)], piece)
        else:
            comp = ctx.op("stablehlo.slice", [indices], piece, {
                "limit_indices": i64_array(limits), "start_indices": i64_array(starts),
                "strides": i64_array([1] * idx_aval.ndim)})
        comp = ctx.op("stablehlo.reshape", [comp], ShapedArray(batch, idx_aval.dtype))
        bound = operand_shape[d] - window_sizes[d]
        if type(bound) is DimExpr:
            hi = ctx.dim_value(bound)
            if idx_aval.dtype != hi.aval.dtype:
                hi = ctx.op("stablehlo.convert", [hi], ShapedArray((), idx_aval.dtype))
            hi = ctx.broadcast_in_dim(hi, ShapedArray(batch, idx_aval.dtype), ())
        else:
            hi = ctx.constant(bound, idx_aval.dtype, batch)
        ok = _compare(ctx, comp, hi, "LE")
        if dtypes.is_signed(idx_aval.dtype):
            lo = _compare(ctx, comp, ctx.constant(0, idx_aval.dtype, batch), "GE")
            ok = ctx.op("stablehlo.and", [ok, lo], ok.aval)
        mask = ok if mask is None else ctx.op("stablehlo.and", [mask, ok], ok.aval)
    return mask


def _gather_lower(ctx, operand, indices, *, dimension_numbers, fill_value, indices_are_sorted,
                  mode, slice_sizes, unique_indices):
    out = ctx.avals_out[0]
    if out.size == 0:
        return ctx.constant(0, out.dtype, out.shape)
    dn = dimension_numbers
    if any(type(d) is DimExpr for d in slice_sizes):  # shape polymorphism, as jax
        res = ctx.op("stablehlo.dynamic_gather",
                      [operand, indices, ctx.shape_tensor(slice_sizes)], out, {
                          "dimension_numbers": _gather_dnums_attr(dn, indices.aval.ndim - 1),
                          "indices_are_sorted": _bool_attr(indices_are_sorted)})
    else:
        res = ctx.op("stablehlo.gather", [operand, indices], out, {
            "dimension_numbers": _gather_dnums_attr(dn, indices.aval.ndim - 1),
            "indices_are_sorted": _bool_attr(indices_are_sorted),
            "slice_sizes": i64_array(slice_sizes),
        })
    if mode != GatherScatterMode.FILL_OR_DROP or not dn.start_index_map:
        return res
    mask = _in_bounds_mask(ctx, indices, operand.aval.shape, slice_sizes, dn.start_index_map)
    batch_dims = [i for i in range(out.ndim) if i not in dn.offset_dims]
    mask = ctx.op("stablehlo.broadcast_in_dim", [mask], ShapedArray(out.shape, dtypes.bool_),
                  {"broadcast_dimensions": i64_array(batch_dims)})
    fill = ctx.constant(fill_value, out.dtype, out.shape)
    return ctx.op("stablehlo.select", [mask, res, fill], out)


def _default_fill_value(dtype: np.dtype):
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtypes.is_signed(dtype):
        return int(np.iinfo(dtype).min)
    if dtypes.is_unsigned(dtype):
        return int(np.iinfo(dtype).max)
    return True


def _scalar_param(v):
    if isinstance(v, (np.ndarray, np.generic)):
        if np.ndim(v) != 0:
            raise ValueError("fill_value must be a scalar")
        return v.item()
    if isinstance(v, Tracer) or hasattr(v, "aval"):
        raise TypeError("fill_value must be a static Python scalar, not an array")
    return v


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode: str | GatherScatterMode | None = None,
           fill_value=None):
    """XLA's Gather: windows of ``slice_sizes`` of ``operand`` at ``start_indices``.

    ``mode=None`` means ``promise_in_bounds``; with ``"fill"`` windows not fully
    in bounds read ``fill_value`` (default NaN, or the dtype's min/max for ints).
    """
    parsed = (GatherScatterMode.PROMISE_IN_BOUNDS if mode is None
              else GatherScatterMode.from_any(mode))
    if parsed == GatherScatterMode.FILL_OR_DROP:
        dt = get_aval(operand).dtype
        fill_value = _default_fill_value(dt) if fill_value is None else _scalar_param(fill_value)
    else:
        fill_value = None
    return gather_p.bind(operand, start_indices,
                         dimension_numbers=_tuples(GatherDimensionNumbers(*dimension_numbers)),
                         fill_value=fill_value, indices_are_sorted=bool(indices_are_sorted),
                         mode=parsed,
                         slice_sizes=canonicalize_shape(slice_sizes, "slice_sizes of gather"),
                         unique_indices=bool(unique_indices))


def _gather_jvp(primals, tangents, **params):
    x, indices = primals
    out = gather_p.bind(x, indices, **params)
    t = tangents[0]
    if type(t) is Zero or not dtypes.is_inexact(get_aval(out).dtype):
        return out, _zero_tangent(out)
    if params["mode"] == GatherScatterMode.FILL_OR_DROP:
        params = dict(params, fill_value=0)  # out-of-bounds windows have a zero tangent
    return out, gather_p.bind(t, indices, **params)


def _gather_transpose(ct, x, indices, *, dimension_numbers, fill_value, indices_are_sorted,
                      mode, slice_sizes, unique_indices):
    dn = dimension_numbers
    sdn = ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)
    zeros = _full(x.aval.shape, 0, get_aval(ct).dtype)
    return [scatter_add(zeros, indices, ct, sdn, indices_are_sorted=indices_are_sorted,
                        unique_indices=unique_indices, mode=mode), None]


def _index_vector_not_batched(indices, bi):
    """Indices whose batch dimension is not the last one (which holds the index vectors)."""
    if bi is not None and bi == get_aval(indices).ndim - 1:
        return moveaxis(indices, bi, 0), 0
    return indices, bi


def _gather_batch(trace, vals, dims, *, dimension_numbers, fill_value, indices_are_sorted,
                  mode, slice_sizes, unique_indices):
    (x, indices), (bx, bi) = vals, dims
    dn = dimension_numbers
    n = trace.axis_size
    indices, bi = _index_vector_not_batched(indices, bi)
    params = dict(fill_value=fill_value, mode=mode)
    if bi is None:
        # Only the operand is batched: its batch dimension is one more window dimension,
        # placed in the output right after the offset dim of the window dim before it.
        x_rank = get_aval(x).ndim - 1
        removed = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
        window = [d for d in range(x_rank) if d not in removed]
        w = sum(d < bx for d in window)
        q = dn.offset_dims[w - 1] + 1 if w > 0 else 0
        offset = list(_shift(dn.offset_dims, q))
        offset.insert(w, q)
        sizes = list(slice_sizes)
        sizes.insert(bx, n)
        new = GatherDimensionNumbers(
            offset_dims=tuple(offset), collapsed_slice_dims=_shift(dn.collapsed_slice_dims, bx),
            start_index_map=_shift(dn.start_index_map, bx),
            operand_batching_dims=_shift(dn.operand_batching_dims, bx),
            start_indices_batching_dims=dn.start_indices_batching_dims)
        return gather_p.bind(x, indices, dimension_numbers=new, slice_sizes=tuple(sizes),
                             indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices, **params), q
    # Batched indices: the batch is one more output batch dimension (the output's non-offset
    # dims follow the index batch dims in order).
    out_rank = len(dn.offset_dims) + get_aval(indices).ndim - 2
    batch_pos = [d for d in range(out_rank) if d not in dn.offset_dims]
    q = _insert_range(batch_pos, bi, out_rank)[0]
    offset = _shift(dn.offset_dims, q)
    if bx is None:
        new = dn._replace(offset_dims=offset,
                          start_indices_batching_dims=_shift(dn.start_indices_batching_dims, bi))
        # Different batch elements may read the same windows.
        return gather_p.bind(x, indices, dimension_numbers=new, slice_sizes=slice_sizes,
                             indices_are_sorted=False, unique_indices=False, **params), q
    # Both batched: a pair of batching dimensions (operand dims kept sorted).
    pairs = sorted([*zip(_shift(dn.operand_batching_dims, bx),
                         _shift(dn.start_indices_batching_dims, bi)), (bx, bi)])
    sizes = list(slice_sizes)
    sizes.insert(bx, 1 if n else 0)
    new = GatherDimensionNumbers(
        offset_dims=offset, collapsed_slice_dims=_shift(dn.collapsed_slice_dims, bx),
        start_index_map=_shift(dn.start_index_map, bx),
        operand_batching_dims=tuple(p[0] for p in pairs),
        start_indices_batching_dims=tuple(p[1] for p in pairs))
    return gather_p.bind(x, indices, dimension_numbers=new, slice_sizes=tuple(sizes),
                         indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                         **params), q


# ---- scatter --------------------------------------------------------------------------------


_ARITHMETIC_SCATTERS = ("scatter-add", "scatter-mul", "scatter-sub")


def _scatter_abstract(name: str):
    def abstract(operand, indices, updates, *, dimension_numbers, indices_are_sorted, mode,
                 unique_indices, update_consts, update_jaxpr):
        avals = (operand, indices, updates)
        dn = dimension_numbers
        if not dtypes.is_int(indices.dtype):
            raise type_error(name, f"indices must have an integer type, got "
                             f"{indices.dtype.name}", *avals)
        if updates.dtype != operand.dtype:
            raise type_error(name, "updates must have the operand's dtype", *avals)
        if name in _ARITHMETIC_SCATTERS and operand.dtype == np.bool_:
            raise type_error(name, "does not accept dtype bool; the operand must be an "
                             "integer, floating or complex array", *avals)
        if indices.ndim < 1:
            raise type_error(name, "indices must have at least one dimension (the last one "
                             "holds the index vectors)", *avals)
        batch_rank = indices.ndim - 1
        if updates.ndim != batch_rank + len(dn.update_window_dims):
            raise type_error(name, f"updates must have rank {batch_rank} (index batch) + "
                             f"{len(dn.update_window_dims)} (update_window_dims)", *avals)
        _check_dims(name, "update_window_dims", dn.update_window_dims, updates.ndim, avals)
        _check_dims(name, "inserted_window_dims", dn.inserted_window_dims, operand.ndim, avals)
        _check_dims(name, "operand_batching_dims", dn.operand_batching_dims, operand.ndim,
                    avals)
        _check_dims(name, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims,
                    operand.ndim, avals, sorted_=False)
        _check_dims(name, "scatter_indices_batching_dims", dn.scatter_indices_batching_dims,
                    batch_rank, avals, sorted_=False)
        if len(dn.scatter_dims_to_operand_dims) != indices.shape[-1]:
            raise type_error(name, f"scatter_dims_to_operand_dims "
                             f"{dn.scatter_dims_to_operand_dims} must have one entry per index "
                             f"vector component (indices.shape[-1] = {indices.shape[-1]})",
                             *avals)
        if (len(dn.update_window_dims) + len(dn.inserted_window_dims)
                + len(dn.operand_batching_dims)) != operand.ndim:
            raise type_error(name, "update_window_dims, inserted_window_dims and "
                             "operand_batching_dims must account for every operand dimension",
                             *avals)
        if len(dn.operand_batching_dims) != len(dn.scatter_indices_batching_dims):
            raise type_error(name, "operand_batching_dims and scatter_indices_batching_dims "
                             "must have the same length", *avals)
        removed = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
        window_bounds = [d for i, d in enumerate(operand.shape) if i not in removed]
        for bound, ud in zip(window_bounds, dn.update_window_dims):
            if updates.shape[ud] > bound:
                raise type_error(name, f"update window dimension {ud} has size "
                                 f"{updates.shape[ud]}, larger than the operand's {bound}",
                                 *avals)
        scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
        if tuple(updates.shape[d] for d in scatter_dims) != indices.shape[:-1]:
            raise type_error(name, f"the scatter dimensions of updates must match the index "
                             f"batch shape {indices.shape[:-1]}", *avals)
        return ShapedArray(operand.shape, operand.dtype, operand.weak_type)
    return abstract


def _scatter_dnums_attr(dn: ScatterDimensionNumbers, index_vector_dim: int) -> str:
    parts = [_dims_attr(name, dims) for name, dims in (
        ("update_window_dims", dn.update_window_dims),
        ("inserted_window_dims", dn.inserted_window_dims),
        ("input_batching_dims", dn.operand_batching_dims),
        ("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
        ("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims)) if dims]
    parts.append(f"index_vector_dim = {index_vector_dim}")
    return f"#stablehlo.scatter<{', '.join(parts)}>"


def _clamp_scatter_indices(ctx, operand, indices, updates, dn: ScatterDimensionNumbers):
    window = []
    pos = 0
    for i in range(operand.aval.ndim):
        if i in dn.inserted_window_dims or i in dn.operand_batching_dims:
            window.append(1)
        else:
            window.append(updates.aval.shape[dn.update_window_dims[pos]])
            pos += 1
    idx = indices.aval
    upper = np.array([operand.aval.shape[d] - window[d] for d in dn.scatter_dims_to_operand_dims])
    upper = np.broadcast_to(upper.astype(idx.dtype), idx.shape)
    hi = ctx.constant(upper, idx.dtype)
    lo = ctx.constant(0, idx.dtype)
    return ctx.op("stablehlo.clamp", [lo, indices, hi], idx)


def _scatter_lower(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                   mode, unique_indices, update_consts, update_jaxpr):
    out = ctx.avals_out[0]
    if updates.aval.size == 0 or out.size == 0:
        return operand
    dn = dimension_numbers
    if mode == GatherScatterMode.CLIP:
        indices = _clamp_scatter_indices(ctx, operand, indices, updates, dn)
    scalar = ShapedArray((), out.dtype)
    region = ctx.new_region([scalar, scalar])
    with ctx.in_region(region):
        if update_jaxpr is None:
            res = region.args[1]
        else:
            (res,) = ctx.lower_jaxpr(update_jaxpr, region.args)
        ctx.ret([res])
    return ctx.op("stablehlo.scatter", [operand, indices, updates], out, {
        "indices_are_sorted": _bool_attr(indices_are_sorted),
        "scatter_dimension_numbers": _scatter_dnums_attr(dn, indices.aval.ndim - 1),
        "unique_indices": _bool_attr(unique_indices),
    }, regions=[region])


@functools.cache
def _combiner_jaxpr(op: str, dtype: np.dtype):
    """The jaxpr ``lambda a, b: op(a, b)`` on scalars of ``dtype`` (a scatter's update_jaxpr)."""
    from minijax.lax import binary
    fn = {"add": binary.add, "mul": binary.mul, "min": binary.min, "max": binary.max}[op]
    scalar = ShapedArray((), dtype)
    jaxpr, consts, _ = trace_to_jaxpr(lambda a, b: ([fn(a, b)], None), [scalar, scalar])
    assert not consts
    return jaxpr


def _scatter_bind(prim: Primitive, op: str | None, operand, scatter_indices, updates,
                  dimension_numbers, indices_are_sorted, unique_indices, mode):
    dn = _tuples(ScatterDimensionNumbers(*dimension_numbers))
    jaxpr = None if op is None else _combiner_jaxpr(op, get_aval(operand).dtype)
    return prim.bind(operand, scatter_indices, updates, dimension_numbers=dn,
                     indices_are_sorted=bool(indices_are_sorted),
                     mode=GatherScatterMode.from_any(mode), unique_indices=bool(unique_indices),
                     update_consts=(), update_jaxpr=jaxpr)


def scatter(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
            indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: str | GatherScatterMode | None = None):
    """XLA's Scatter, replacing values; ``mode=None`` drops out-of-bounds windows."""
    return _scatter_bind(scatter_p, None, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def scatter_add(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers,
                *, indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    """XLA's Scatter, adding updates (repeated indices accumulate)."""
    return _scatter_bind(scatter_add_p, "add", operand, scatter_indices, updates,
                         dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_mul(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers,
                *, indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    """XLA's Scatter, multiplying by updates."""
    return _scatter_bind(scatter_mul_p, "mul", operand, scatter_indices, updates,
                         dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_min(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers,
                *, indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    """XLA's Scatter, keeping the minimum."""
    return _scatter_bind(scatter_min_p, "min", operand, scatter_indices, updates,
                         dimension_numbers, indices_are_sorted, unique_indices, mode)


def scatter_max(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers,
                *, indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: str | GatherScatterMode | None = None):
    """XLA's Scatter, keeping the maximum."""
    return _scatter_bind(scatter_max_p, "max", operand, scatter_indices, updates,
                         dimension_numbers, indices_are_sorted, unique_indices, mode)


def _read_windows(x, indices, dn: ScatterDimensionNumbers, updates_shape, mode, *,
                  indices_are_sorted: bool = False, unique_indices: bool = False):
    """The gather reading back, for each update element, the element of ``x`` it targets.

    Out-of-bounds windows read 0 when the scatter drops them.
    """
    sizes, pos = [], 0
    for d, size in enumerate(get_aval(x).shape):
        if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
            sizes.append(min(size, 1))
        else:
            sizes.append(updates_shape[dn.update_window_dims[pos]])
            pos += 1
    gdn = GatherDimensionNumbers(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)
    return gather_p.bind(x, indices, dimension_numbers=gdn,
                         fill_value=0 if mode == GatherScatterMode.FILL_OR_DROP else None,
                         indices_are_sorted=indices_are_sorted, mode=mode,
                         slice_sizes=tuple(sizes), unique_indices=unique_indices)


def _scatter_add_like(params: dict, operand, indices, updates):
    """scatter-add with the index parameters of another scatter."""
    return scatter_add(operand, indices, updates, params["dimension_numbers"],
                       indices_are_sorted=params["indices_are_sorted"],
                       unique_indices=params["unique_indices"], mode=params["mode"])


def _read_like(params: dict, x, indices, updates_shape):
    return _read_windows(x, indices, params["dimension_numbers"], updates_shape, params["mode"],
                         indices_are_sorted=params["indices_are_sorted"],
                         unique_indices=params["unique_indices"])


def _scatter_add_jvp(primals, tangents, **params):
    x, indices, u = primals
    tx, _, tu = tangents
    out = scatter_add_p.bind(x, indices, u, **params)
    if (type(tx) is Zero and type(tu) is Zero) or not dtypes.is_inexact(get_aval(out).dtype):
        return out, _zero_tangent(out)
    return out, scatter_add_p.bind(instantiate(tx), indices, instantiate(tu), **params)


def _scatter_add_transpose(ct, x, indices, updates, **params):
    u_shape = _aval_of(updates).shape
    x_ct = ct if is_undefined(x) else None
    u_ct = _read_like(params, ct, indices, u_shape) if is_undefined(updates) else None
    return [x_ct, None, u_ct]


def _scatter_jvp(primals, tangents, **params):
    x, indices, u = primals
    tx, _, tu = tangents
    if (type(tx) is Zero and type(tu) is Zero) or not dtypes.is_inexact(get_aval(x).dtype):
        out = scatter_p.bind(x, indices, u, **params)
        return out, _zero_tangent(out)
    tx, tu = instantiate(tx), instantiate(tu)
    if params["unique_indices"]:
        return scatter_p.bind(x, indices, u, **params), scatter_p.bind(tx, indices, tu, **params)
    # Repeated indices: which update wins is unspecified, so find out by scattering a distinct
    # id per update (window), read the ids back, and mask operand and updates to the values
    # that were written. Outputs and tangents are then scatter-adds of the masked values.
    u_shape = get_aval(u).shape
    dn = params["dimension_numbers"]
    ids_shape = tuple(1 if d in dn.update_window_dims else s for d, s in enumerate(u_shape))
    num_ids = math.prod(ids_shape)
    id_dt = dtypes.int32 if num_ids < np.iinfo(np.int32).max else dtypes.canonicalize(np.int64)
    ids = add(reshape(iota(id_dt, num_ids), ids_shape), np.ones((), id_dt))
    ids = broadcast_in_dim(ids, u_shape, tuple(range(len(u_shape))))
    x_shape = get_aval(x).shape
    written_ids = scatter_p.bind(_full(x_shape, 0, id_dt), indices, ids, **params)
    kept = eq(written_ids, np.zeros((), id_dt))
    won = eq(ids, _read_like(params, written_ids, indices, u_shape))
    dt = get_aval(x).dtype
    x_zeros, u_zeros = _full(x_shape, 0, dt), _full(u_shape, 0, dt)
    out = _scatter_add_like(params, select(kept, x, x_zeros), indices, select(won, u, u_zeros))
    t_out = _scatter_add_like(params, select(kept, tx, x_zeros), indices,
                              select(won, tu, u_zeros))
    return out, t_out


def _scatter_transpose(ct, x, indices, updates, **params):
    if not params["unique_indices"]:
        raise NotImplementedError(
            "scatter transpose is only implemented where unique_indices=True; with repeated "
            "indices which update wins is unspecified (differentiating scatter with jvp/grad "
            "works without it)")
    u_aval = _aval_of(updates)
    x_ct = u_ct = None
    if is_undefined(x):  # overwritten positions get no cotangent
        zeros = _full(u_aval.shape, 0, get_aval(ct).dtype)
        x_ct = scatter_p.bind(ct, indices, zeros, **params)
    if is_undefined(updates):
        u_ct = _read_like(params, ct, indices, u_aval.shape)
    return [x_ct, None, u_ct]


def _product_of_others(params: dict, x_shape, indices, y):
    """For each update element, the product of the other updates to the same operand element.

    Computed as (product of the nonzero updates) / y_k, with the zeros counted separately so
    nothing is divided by zero. Its value is exact; its own derivatives (so second and higher
    derivatives of scatter-mul) are exact where no update of an element is zero.
    """
    y_aval = get_aval(y)
    dt = y_aval.dtype
    zero, one = _full(y_aval.shape, 0, dt), _full(y_aval.shape, 1, dt)
    is_zero = eq(y, zero)
    y_safe = select(is_zero, one, y)
    nonzero_prod = scatter_mul(_full(x_shape, 1, dt), indices, y_safe,
                               params["dimension_numbers"], mode=params["mode"])
    num_zeros = _scatter_add_like(params, _full(x_shape, 0, dt), indices,
                                  convert_element_type(is_zero, dt))
    prod_k = _read_like(params, nonzero_prod, indices, y_aval.shape)
    zeros_k = _read_like(params, num_zeros, indices, y_aval.shape)
    if_zero = select(eq(zeros_k, one), prod_k, zero)  # y_k is the only zero
    if_nonzero = select(eq(zeros_k, zero), div(prod_k, y_safe), zero)
    return select(is_zero, if_zero, if_nonzero)


def _scatter_mul_jvp(primals, tangents, **params):
    x, indices, y = primals
    tx, _, ty = tangents
    out = scatter_mul_p.bind(x, indices, y, **params)
    if (type(tx) is Zero and type(ty) is Zero) or not dtypes.is_inexact(get_aval(out).dtype):
        return out, _zero_tangent(out)
    t = _zero_tangent(out)
    if type(tx) is not Zero:  # out = x * P with P the product of the updates at each element
        t = scatter_mul_p.bind(tx, indices, y, **params)
    if type(ty) is not Zero:  # product rule: d out = x * sum_k (prod of the others) * d y_k
        x_shape = get_aval(x).shape
        coef = ty if params["unique_indices"] else \
            mul(ty, _product_of_others(params, x_shape, indices, y))
        summed = _scatter_add_like(params, _full(x_shape, 0, get_aval(x).dtype), indices, coef)
        t = add_tangents(t, mul(x, summed))
    return out, t


def _scatter_mul_transpose(ct, x, indices, updates, **params):
    if is_undefined(updates):
        if not params["unique_indices"]:
            raise NotImplementedError("scatter-mul is linear in its updates only where "
                                      "unique_indices=True")
        if is_undefined(x):
            raise NotImplementedError("scatter-mul is not linear in operand and updates at once")
        u_ct = _read_like(params, mul(ct, x), indices, updates.aval.shape)
        return [None, None, u_ct]
    return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


def _scatter_extremal_jvp(prim: Primitive):
    """scatter-min/max: the tangent of the value that won; ties share it evenly (as jax)."""
    def rule(primals, tangents, **params):
        x, indices, y = primals
        tx, _, ty = tangents
        out = prim.bind(x, indices, y, **params)
        if (type(tx) is Zero and type(ty) is Zero) or not dtypes.is_inexact(get_aval(out).dtype):
            return out, _zero_tangent(out)
        tx, ty = instantiate(tx), instantiate(ty)
        x_aval, y_aval = get_aval(x), get_aval(y)
        dt = x_aval.dtype
        zero, one = _full(y_aval.shape, 0, dt), _full(y_aval.shape, 1, dt)
        x_zeros = _full(x_aval.shape, 0, dt)

        def read(v):
            return _read_like(params, v, indices, y_aval.shape)

        target = read(out)
        won = eq(y, target)
        kept = eq(read(x), target)
        num_won = read(_scatter_add_like(params, x_zeros, indices, select(won, one, zero)))
        num_refs = max_(read(_scatter_add_like(params, x_zeros, indices, one)), one)
        # Winners sharing each output element: the updates equal to it, and the operand.
        share = div(one, max_(add(num_won, select(kept, one, zero)), one))
        y_coef = select(won, share, zero)
        # The operand's tangent enters once per element; each of its num_refs updates
        # removes its 1/num_refs part and puts back its share if the operand was kept.
        x_coef = div(sub(select(kept, share, zero), one), num_refs)
        t_updates = add(mul(read(tx), x_coef), mul(ty, y_coef))
        return out, _scatter_add_like(params, tx, indices, t_updates)
    return rule


def _scatter_batch(prim: Primitive):
    def rule(trace, vals, dims, *, dimension_numbers, indices_are_sorted, mode, unique_indices,
             update_consts, update_jaxpr):
        (x, indices, u), (bx, bi, bu) = vals, dims
        dn = dimension_numbers
        n = trace.axis_size
        indices, bi = _index_vector_not_batched(indices, bi)
        x_rank = get_aval(x).ndim - (bx is not None)
        u_rank = get_aval(u).ndim - (bu is not None)
        params = dict(indices_are_sorted=indices_are_sorted, mode=mode,
                      unique_indices=unique_indices, update_consts=update_consts,
                      update_jaxpr=update_jaxpr)
        if bi is None:
            # Unbatched indices: the batch is one more window dimension, at a position of
            # the updates that keeps the window dims of operand and updates in the same order.
            removed = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
            window = [d for d in range(x_rank) if d not in removed]
            if bx is None:
                w = sum(d < bu for d in dn.update_window_dims)
                bx = _insert_range(window, w, x_rank)[0]
                x = broadcast_batch(x, n, bx)
            else:
                w = sum(d < bx for d in window)
            lo, hi = _insert_range(dn.update_window_dims, w, u_rank)
            if bu is None or not lo <= bu <= hi:
                u, bu = bdim_at(u, bu, n, lo), lo
            uwd = list(_shift(dn.update_window_dims, bu))
            uwd.insert(w, bu)
            new = ScatterDimensionNumbers(
                update_window_dims=tuple(uwd),
                inserted_window_dims=_shift(dn.inserted_window_dims, bx),
                scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims, bx),
                operand_batching_dims=_shift(dn.operand_batching_dims, bx),
                scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
            return prim.bind(x, indices, u, dimension_numbers=new, **params), bx
        # Batched indices: a pair of batching dimensions; in the updates the batch is the
        # scatter dimension matching the indices' batch dimension.
        if bx is None:
            x, bx = broadcast_batch(x, n, 0), 0
        scatter_pos = [d for d in range(u_rank) if d not in dn.update_window_dims]
        lo, hi = _insert_range(scatter_pos, bi, u_rank)
        if bu is None or not lo <= bu <= hi:
            u, bu = bdim_at(u, bu, n, lo), lo
        pairs = sorted([*zip(_shift(dn.operand_batching_dims, bx),
                             _shift(dn.scatter_indices_batching_dims, bi)), (bx, bi)])
        new = ScatterDimensionNumbers(
            update_window_dims=_shift(dn.update_window_dims, bu),
            inserted_window_dims=_shift(dn.inserted_window_dims, bx),
            scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims, bx),
            operand_batching_dims=tuple(p[0] for p in pairs),
            scatter_indices_batching_dims=tuple(p[1] for p in pairs))
        return prim.bind(x, indices, u, dimension_numbers=new, **params), bx
    return rule


# ---- registration ---------------------------------------------------------------------------

gather_p = Primitive("gather")
gather_p.def_abstract_eval(_gather_abstract)
gather_p.def_lowering(_gather_lower)
gather_p.def_jvp(_gather_jvp)
gather_p.def_transpose(_gather_transpose)
gather_p.def_batch(_gather_batch)


def _scatter_primitive(name: str) -> Primitive:
    """A scatter primitive with the abstract eval, lowering and batching they share."""
    p = Primitive(name)
    p.def_abstract_eval(_scatter_abstract(name))
    p.def_lowering(_scatter_lower)
    p.def_batch(_scatter_batch(p))
    return p


scatter_p = _scatter_primitive("scatter")
scatter_p.def_jvp(_scatter_jvp)
scatter_p.def_transpose(_scatter_transpose)

scatter_add_p = _scatter_primitive("scatter-add")
scatter_add_p.def_jvp(_scatter_add_jvp)
scatter_add_p.def_transpose(_scatter_add_transpose)

scatter_mul_p = _scatter_primitive("scatter-mul")
scatter_mul_p.def_jvp(_scatter_mul_jvp)
scatter_mul_p.def_transpose(_scatter_mul_transpose)

scatter_min_p = _scatter_primitive("scatter-min")
scatter_min_p.def_jvp(_scatter_extremal_jvp(scatter_min_p))

scatter_max_p = _scatter_primitive("scatter-max")
scatter_max_p.def_jvp(_scatter_extremal_jvp(scatter_max_p))
