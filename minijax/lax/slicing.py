"""Slicing primitives: ``slice``, ``dynamic_slice`` and ``dynamic_update_slice``, each
with its abstract eval, lowering, jvp, transpose and batching, then one registration block.
(``gather`` and the scatters are in ``gather_scatter.py``.)

Out-of-bounds rules are XLA's: ``dynamic_slice``/``dynamic_update_slice`` clamp their start
indices so the window fits. All three are linear in their array operands (never in their
indices): their jvp applies them to the tangents and their transposes are the adjoint ops
(slice <-> pad, dynamic_slice <-> dynamic_update_slice). Batching folds the batch dimension
into the op's parameters, so the emitted code has no loops.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray, canonicalize_shape
from minijax.core.shape_poly import DimExpr
from minijax.core.trace import Primitive, get_aval
from minijax.lax._util import static_dims, static_int, static_ints, type_error
from minijax.lax.binary import add
from minijax.lax.convert import convert_element_type
# gather and the scatters live in gather_scatter.py; they are re-exported here, where jax's
# lax.slicing has them.
from minijax.lax.gather_scatter import (GatherDimensionNumbers, GatherScatterMode,  # noqa: F401
                                        ScatterDimensionNumbers, _aval_of, _full, _gather_batch,
                                        _scatter_batch, _tuples, _zero_tangent, gather, gather_p,
                                        scatter, scatter_add, scatter_add_p, scatter_max,
                                        scatter_max_p, scatter_min, scatter_min_p, scatter_mul,
                                        scatter_mul_p, scatter_p)
from minijax.lax.select import select
from minijax.lax.shape import broadcast_in_dim, concatenate, pad, reshape, squeeze
from minijax.lowering.types import i64_array
from minijax.transforms.ad import Zero, instantiate, is_undefined
from minijax.transforms.batching import bdim_at

# ---- slice -------------------------------------------------------------------------------

def _slice_abstract(x, *, limit_indices, start_indices, strides):
    if len(start_indices) != x.ndim:
        raise type_error("slice", f"slice start_indices must have length equal to the number "
                         f"of dimensions of the operand, got indices {start_indices} for "
                         f"operand shape {x.shape}.", x)
    if len(limit_indices) != len(start_indices):
        raise type_error("slice", f"slice limit_indices must have the same length as "
                         f"start_indices, got start_indices {start_indices} and limit_indices "
                         f"{limit_indices}.", x)
    if any(lim > d for lim, d in zip(limit_indices, x.shape)):
        raise type_error("slice", f"slice limit_indices must be less than or equal to operand "
                         f"shape, got limit_indices {limit_indices} for operand shape "
                         f"{x.shape}.", x)
    if any(s < 0 for s in start_indices):
        raise type_error("slice", f"slice start_indices must be greater than or equal to zero, "
                         f"got start_indices of {start_indices}.", x)
    if any(lim < s for s, lim in zip(start_indices, limit_indices)):
        raise type_error("slice", f"slice limit_indices must be greater than or equal to "
                         f"start_indices, got start_indices {start_indices} and limit_indices "
                         f"{limit_indices}.", x)
    if strides is None:
        strides = (1,) * x.ndim
    if len(strides) != x.ndim or any(s <= 0 for s in strides):
        raise type_error("slice", f"slice strides must be positive, one per dimension, got "
                         f"{strides} for operand shape {x.shape}.", x)
    shape = tuple((lim - s + st - 1) // st if type(lim - s) is DimExpr else -(-(lim - s) // st)
                  for s, lim, st in zip(start_indices, limit_indices, strides))
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_lower(ctx, x, *, limit_indices, start_indices, strides):
    strides = strides or (1,) * len(start_indices)
    if any(type(d) is DimExpr for d in (*start_indices, *limit_indices)):
        # shape polymorphism: bounds from the dimension variables
        return ctx.op("stablehlo.real_dynamic_slice",
                      [x, ctx.shape_tensor(start_indices), ctx.shape_tensor(limit_indices),
                       ctx.shape_tensor(strides)], ctx.avals_out[0])
    return ctx.op("stablehlo.slice", [x], ctx.avals_out[0], {
        "limit_indices": i64_array(limit_indices),
        "start_indices": i64_array(start_indices),
        "strides": i64_array(strides),
    })


def slice(operand, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Sequence[int] | None = None):
    """``operand[start:limit:stride]`` in every dimension, with static bounds."""
    return slice_p.bind(operand, limit_indices=static_dims(limit_indices, "slice limit_indices"),
                        start_indices=static_dims(start_indices, "slice start_indices"),
                        strides=None if strides is None else static_ints(strides,
                                                                         "slice strides"))


def slice_in_dim(operand, start_index: int | None, limit_index: int | None, stride: int = 1,
                 axis: int = 0):
    """``operand[..., start:limit:stride, ...]`` along ``axis`` (negative indices count back)."""
    aval = get_aval(operand)
    axis = static_int(axis, "slice_in_dim axis")
    size = aval.shape[axis]
    start = 0 if start_index is None else static_int(start_index, "slice_in_dim start_index")
    limit = size if limit_index is None else static_int(limit_index, "slice_in_dim limit_index")
    if start < 0:
        start += size
    if limit < 0:
        limit += size
    starts = [0] * aval.ndim
    limits = list(aval.shape)
    strides = [1] * aval.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, static_int(stride, "stride")
    return slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
    """``operand[..., index, ...]`` along ``axis``; keeps a size-1 dimension if ``keepdims``."""
    aval = get_aval(operand)
    index, axis = static_int(index, "index_in_dim index"), static_int(axis, "index_in_dim axis")
    size = aval.shape[axis]
    wrapped = index + size if index < 0 else index
    if not 0 <= wrapped < size:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {size}")
    out = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def _slice_transpose(ct, x, *, limit_indices, start_indices, strides):
    shape = x.aval.shape
    strides = strides or (1,) * len(shape)
    out_shape = get_aval(ct).shape
    # The last element read along each dimension, plus one.
    real_limits = [s + (n - 1) * st + 1 if n else s
                   for s, n, st in zip(start_indices, out_shape, strides)]
    config = [(s, d - lim, st - 1)
              for s, lim, st, d in zip(start_indices, real_limits, strides, shape)]
    return [pad(ct, np.zeros((), get_aval(ct).dtype), config)]


def _slice_batch(trace, vals, dims, *, limit_indices, start_indices, strides):
    (x,), (b,) = vals, dims
    starts, limits = list(start_indices), list(limit_indices)
    starts.insert(b, 0)
    limits.insert(b, trace.axis_size)
    if strides is not None:
        strides = list(strides)
        strides.insert(b, 1)
        strides = tuple(strides)
    return slice_p.bind(x, limit_indices=tuple(limits), start_indices=tuple(starts),
                        strides=strides), b


def _linear_jvp(prim: Primitive, n_linear: int):
    """jvp of a primitive linear in its first ``n_linear`` operands (the rest are indices)."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        ts = tangents[:n_linear]
        if all(type(t) is Zero for t in ts) or not dtypes.is_inexact(get_aval(out).dtype):
            return out, _zero_tangent(out)
        return out, prim.bind(*[instantiate(t) for t in ts], *primals[n_linear:], **params)
    return rule


# ---- dynamic_slice / dynamic_update_slice ---------------------------------------------

def _check_start_indices(prim: str, x: ShapedArray, idx: Sequence[ShapedArray], *avals):
    if len(idx) != x.ndim:
        raise type_error(prim, f"needs one start index per operand dimension, got {len(idx)} "
                         f"for operand shape {x.shape}", *avals)
    if any(i.ndim != 0 for i in idx):
        raise type_error(prim, "start indices must be scalars", *avals)
    if any(not dtypes.is_int(i.dtype) for i in idx):
        raise type_error(prim, "start indices must be integers", *avals)
    if any(i.dtype != idx[0].dtype for i in idx):
        raise type_error(prim, "start indices must all have the same integer dtype", *avals)


def _dynamic_slice_abstract(x, *start_indices, slice_sizes):
    _check_start_indices("dynamic_slice", x, start_indices, x, *start_indices)
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in zip(slice_sizes, x.shape)):
        raise type_error("dynamic_slice", f"slice slice_sizes must be non-negative and less "
                         f"than or equal to operand shape, got slice_sizes {slice_sizes} for "
                         f"operand shape {x.shape}.", x)
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _dynamic_slice_lower(ctx, x, *start_indices, slice_sizes):
    return ctx.op("stablehlo.dynamic_slice", [x, *start_indices], ctx.avals_out[0],
                  {"slice_sizes": i64_array(slice_sizes)})


def _dynamic_update_slice_abstract(x, update, *start_indices):
    _check_start_indices("dynamic_update_slice", x, start_indices, x, update, *start_indices)
    if update.dtype != x.dtype:
        raise type_error("dynamic_update_slice", "update must have the operand's dtype",
                         x, update)
    if update.ndim != x.ndim or any(u > d for u, d in zip(update.shape, x.shape)):
        raise type_error("dynamic_update_slice", f"update shape must have the operand's rank "
                         f"and be no larger than it, got update shape {update.shape} for "
                         f"operand shape {x.shape}.", x, update)
    return ShapedArray(x.shape, x.dtype, x.weak_type and update.weak_type)


def _dynamic_update_slice_lower(ctx, x, update, *start_indices):
    return ctx.op("stablehlo.dynamic_update_slice", [x, update, *start_indices],
                  ctx.avals_out[0])


def _is_static_int(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _dynamic_slice_indices(aval: ShapedArray, start_indices, allow_negative_indices) -> list:
    """Start indices as scalars of one integer dtype; negative ones wrapped when allowed."""
    from minijax.lax.binary import lt
    if not isinstance(start_indices, (list, tuple)):
        arr = start_indices
        idx_aval = get_aval(arr)
        if idx_aval.ndim != 1:
            raise ValueError(f"Slice indices must be a 1D sequence, got {idx_aval.shape}")
        if isinstance(arr, np.ndarray):
            if arr.dtype.kind not in "iu":
                raise TypeError(f"dynamic_slice start indices must be integers, got {arr!r}")
            start_indices = [int(i) for i in arr]
        else:
            start_indices = [reshape(slice(arr, (k,), (k + 1,)), ())
                             for k in range(idx_aval.shape[0])]
    if len(start_indices) != aval.ndim:
        raise ValueError(f"Length of slice indices must match number of operand dimensions "
                         f"({len(start_indices)} vs {aval.shape})")
    if isinstance(allow_negative_indices, bool):
        allow_negative_indices = [allow_negative_indices] * aval.ndim
    normalized: list = []
    for i, d, allow in zip(start_indices, aval.shape, allow_negative_indices):
        if _is_static_int(i):
            i = int(i)
            if i < 0:
                if not allow:
                    raise ValueError(f"Index {i} is out of bounds for dimension {d} if "
                                     f"allow_negative_indices=False")
                i += d
            normalized.append(i)
            continue
        idx_dt = get_aval(i).dtype
        if not dtypes.is_int(idx_dt):
            raise TypeError(f"dynamic_slice start indices must be integers, got {idx_dt.name}")
        if allow and dtypes.is_signed(idx_dt):
            if d > np.iinfo(idx_dt).max:  # e.g. an int8 index into a long axis
                i, idx_dt = convert_element_type(i, dtypes.int32), dtypes.int32
            i = select(lt(i, np.zeros((), idx_dt)), add(i, np.asarray(d, idx_dt)), i)
        normalized.append(i)
    # One dtype for all: the traced indices' common dtype, wide enough for the static ones.
    traced = [get_aval(i).dtype for i in normalized if not isinstance(i, int)]
    dt = dtypes.canonicalize(np.result_type(*traced)) if traced else dtypes.default_int()
    static = [i for i in normalized if isinstance(i, int)]
    if static and not np.iinfo(dt).min <= min(static) <= max(static) <= np.iinfo(dt).max:
        dt = dtypes.canonicalize(np.result_type(dt, dtypes.int32))
    return [np.asarray(i, dt) if isinstance(i, int) else convert_element_type(i, dt)
            for i in normalized]


def dynamic_slice(operand, start_indices, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True):
    """The ``slice_sizes`` window of ``operand`` at (possibly traced) ``start_indices``.

    Start indices are clamped so the window lies in bounds (XLA's rule);
    negative indices count from the end when ``allow_negative_indices``.
    """
    aval = get_aval(operand)
    idx = _dynamic_slice_indices(aval, start_indices, allow_negative_indices)
    sizes = canonicalize_shape(slice_sizes, "slice_sizes of dynamic_slice")
    return dynamic_slice_p.bind(operand, *idx, slice_sizes=sizes)


def dynamic_update_slice(operand, update, start_indices, *,
                         allow_negative_indices: bool | Sequence[bool] = True):
    """``operand`` with ``update`` written at ``start_indices`` (clamped to fit)."""
    aval = get_aval(operand)
    idx = _dynamic_slice_indices(aval, start_indices, allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *idx)


def _start_for_axis(operand_ndim: int, start_index, axis: int) -> list:
    starts: list = [0] * operand_ndim
    starts[axis] = start_index
    return starts


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True):
    """``operand[..., start:start + slice_size, ...]`` along ``axis``, start traced or not."""
    aval = get_aval(operand)
    axis = static_int(axis, "dynamic_slice_in_dim axis")
    sizes = list(aval.shape)
    sizes[axis] = slice_size
    allow = [False] * aval.ndim
    allow[axis] = allow_negative_indices
    return dynamic_slice(operand, _start_for_axis(aval.ndim, start_index, axis), sizes,
                         allow_negative_indices=allow)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True):
    """``operand[..., index, ...]`` along ``axis`` for a (possibly traced) ``index``."""
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int, *,
                                allow_negative_indices: bool = True):
    """``operand`` with ``update`` written at ``start_index`` along ``axis``."""
    aval = get_aval(operand)
    axis = static_int(axis, "dynamic_update_slice_in_dim axis")
    allow = [False] * aval.ndim
    allow[axis] = allow_negative_indices
    return dynamic_update_slice(operand, update, _start_for_axis(aval.ndim, start_index, axis),
                                allow_negative_indices=allow)


def dynamic_update_index_in_dim(operand, update, index, axis: int, *,
                                allow_negative_indices: bool = True):
    """``operand`` with ``update`` written at ``index`` along ``axis`` (adds a size-1 dim)."""
    from minijax.lax.shape import expand_dims
    if get_aval(update).ndim == get_aval(operand).ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


def _stack_indices(indices: Sequence, dims: Sequence, size: int):
    """Scalar start indices (some batched along axis 0) as one ``(size, len)`` index array."""
    cols = [broadcast_in_dim(i, (size, 1), () if d is None else (0,))
            for i, d in zip(indices, dims)]
    return concatenate(cols, 1)


def _dynamic_slice_transpose(ct, x, *start_indices, slice_sizes):
    zeros = _full(x.aval.shape, 0, get_aval(ct).dtype)
    return [dynamic_update_slice_p.bind(zeros, ct, *start_indices)] + [None] * len(start_indices)


def _dynamic_slice_batch(trace, vals, dims, *, slice_sizes):
    x, *idx = vals
    bx, *bidx = dims
    n = trace.axis_size
    if all(d is None for d in bidx):  # only the operand is batched: slice the whole batch
        idx_dt = get_aval(idx[0]).dtype if idx else dtypes.int32
        idx.insert(bx, np.zeros((), idx_dt))
        sizes = list(slice_sizes)
        sizes.insert(bx, n)
        return dynamic_slice_p.bind(x, *idx, slice_sizes=tuple(sizes)), bx
    # Batched start indices: a gather of one window per batch element (it clamps the same).
    dims_all = tuple(range(len(slice_sizes)))
    dnums = GatherDimensionNumbers(offset_dims=dims_all, collapsed_slice_dims=(),
                                   start_index_map=dims_all)
    return _gather_batch(trace, [x, _stack_indices(idx, bidx, n)], [bx, 0],
                         dimension_numbers=dnums, fill_value=None, indices_are_sorted=True,
                         mode=GatherScatterMode.CLIP, slice_sizes=tuple(slice_sizes),
                         unique_indices=True)


def _dynamic_update_slice_transpose(ct, x, update, *start_indices):
    u_shape = _aval_of(update).shape
    x_ct = u_ct = None
    if is_undefined(x):
        zeros = _full(u_shape, 0, get_aval(ct).dtype)
        x_ct = dynamic_update_slice_p.bind(ct, zeros, *start_indices)
    if is_undefined(update):
        u_ct = dynamic_slice_p.bind(ct, *start_indices, slice_sizes=u_shape)
    return [x_ct, u_ct] + [None] * len(start_indices)


def _dynamic_update_slice_batch(trace, vals, dims):
    x, u, *idx = vals
    bx, bu, *bidx = dims
    n = trace.axis_size
    if all(d is None for d in bidx):  # unbatched start: update the whole batch dimension
        b = bx if bx is not None else bu
        x, u = bdim_at(x, bx, n, b), bdim_at(u, bu, n, b)
        idx.insert(b, np.zeros((), get_aval(idx[0]).dtype if idx else dtypes.int32))
        return dynamic_update_slice_p.bind(x, u, *idx), b
    # Batched start indices: a scatter of one window per batch element (clamped the same).
    dims_all = tuple(range(len(idx)))
    dnums = ScatterDimensionNumbers(update_window_dims=dims_all, inserted_window_dims=(),
                                    scatter_dims_to_operand_dims=dims_all)
    return _scatter_batch(scatter_p)(
        trace, [x, _stack_indices(idx, bidx, n), u], [bx, 0, bu], dimension_numbers=dnums,
        indices_are_sorted=True, mode=GatherScatterMode.CLIP, unique_indices=True,
        update_consts=(), update_jaxpr=None)


# ---- registration ---------------------------------------------------------------------------

slice_p = Primitive("slice")
slice_p.def_abstract_eval(_slice_abstract)
slice_p.def_lowering(_slice_lower)
slice_p.def_jvp(_linear_jvp(slice_p, 1))
slice_p.def_transpose(_slice_transpose)
slice_p.def_batch(_slice_batch)

dynamic_slice_p = Primitive("dynamic_slice")
dynamic_slice_p.def_abstract_eval(_dynamic_slice_abstract)
dynamic_slice_p.def_lowering(_dynamic_slice_lower)
dynamic_slice_p.def_jvp(_linear_jvp(dynamic_slice_p, 1))
dynamic_slice_p.def_transpose(_dynamic_slice_transpose)
dynamic_slice_p.def_batch(_dynamic_slice_batch)

dynamic_update_slice_p = Primitive("dynamic_update_slice")
dynamic_update_slice_p.def_abstract_eval(_dynamic_update_slice_abstract)
dynamic_update_slice_p.def_lowering(_dynamic_update_slice_lower)
dynamic_update_slice_p.def_jvp(_linear_jvp(dynamic_update_slice_p, 2))
dynamic_update_slice_p.def_transpose(_dynamic_update_slice_transpose)
dynamic_update_slice_p.def_batch(_dynamic_update_slice_batch)
