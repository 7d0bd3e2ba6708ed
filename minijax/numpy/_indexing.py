"""NumPy-style indexing: ``x[idx]``, ``x.at[idx].set(...)``, ``take`` and ``take_along_axis``.

An index is parsed once, then lowered by the simplest strategy that fits
(as jax.numpy does):

- only ints, static slices, ``None`` and ``...``: ``slice``, then ``rev`` for
  negative steps, ``squeeze`` for ints and ``broadcast_in_dim`` for ``None``;
  static out-of-bounds ints are clamped;
- a traced scalar index (and unit-step slices): ``dynamic_slice``, whose start
  is clamped so the window fits;
- anything else (integer arrays, boolean masks, strided slices mixed with
  arrays): ``gather``. Out-of-bounds indices clamp by default; ``.at[].get``
  takes ``mode="fill"`` to read ``fill_value`` instead.

Negative indices count from the end. ``.at[idx]`` updates use ``scatter``,
which drops out-of-bounds updates by default (``mode="clip"`` clamps).
"""

from __future__ import annotations

import itertools
import math
import operator
from typing import Any, NamedTuple

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.errors import ConcretizationTypeError
from minijax.core.shape_poly import DimExpr, max_dim, min_dim
from minijax.core.trace import Tracer, get_aval
from minijax.lax.shape import canonicalize_axis
from minijax.lax.slicing import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers
from minijax.numpy._creation import asarray
from minijax.numpy._promote import broadcast_shapes, promote_dtypes
from minijax.numpy._extended import keys_move

_INDEX_DTYPE = dtypes.int32


class NonConcreteBooleanIndexError(IndexError):
    """A boolean mask index whose value is not known while tracing."""


# ---- parsing ----------------------------------------------------------------------------

NONE, ELLIPSIS, SLICE, INT, BOOL, ARRAY = "none", "ellipsis", "slice", "int", "bool", "array"


class _Idx(NamedTuple):
    kind: str
    value: Any
    axes: tuple  # the operand axes this index consumes


def _is_int(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _is_arraylike(i) -> bool:
    return isinstance(i, (np.ndarray, Tracer)) or hasattr(i, "aval")


def _kind(i) -> tuple[str, Any]:
    if i is None:
        return NONE, None
    if i is Ellipsis:
        return ELLIPSIS, None
    if isinstance(i, slice):
        return SLICE, i
    if _is_int(i):
        if isinstance(i, int):
            _check_python_int_index(i)
        return INT, i
    if isinstance(i, (bool, np.bool_)):
        return BOOL, bool(i)
    if isinstance(i, str):
        raise TypeError(f"minijax does not support string indexing; got idx={i!r}")
    if isinstance(i, (list, tuple)):
        i = _sequence_index(i)
    if _is_arraylike(i):
        dt = get_aval(i).dtype if not isinstance(i, np.ndarray) else i.dtype
        if dt == np.bool_:
            return BOOL, i
        if np.dtype(dt).kind in "iu":
            return ARRAY, i
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{np.dtype(dt).name}")
    if isinstance(i, (float, complex, np.generic)):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{np.dtype(type(i)).name}")
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and "
                     f"integer or boolean arrays are valid indices. Got {i!r}")


def _check_python_int_index(i: int) -> None:
    """OverflowError (as jax) for a Python int index outside the default integer type.

    ``x[2**40]`` would otherwise be clamped to the last element without complaint.
    """
    dt = dtypes.default_int()
    info = np.iinfo(dt)
    if not info.min <= i <= info.max:
        raise OverflowError(f"Python int {i} too large to convert to {dt.name} (index out of "
                            f"range of the index type)")


def _sequence_index(seq):
    if len(seq) == 0:
        return np.zeros((0,), _INDEX_DTYPE)
    arr = np.asarray(seq) if not any(_is_arraylike(x) for x in _leaves(seq)) else asarray(seq)
    if isinstance(arr, np.ndarray) and arr.dtype.kind in "iu":
        arr = arr.astype(dtypes.canonicalize(arr.dtype))
    return arr


def _leaves(seq):
    for x in seq:
        if isinstance(x, (list, tuple)):
            yield from _leaves(x)
        else:
            yield x


def _ndim(i) -> int:
    aval = getattr(i, "aval", None)
    return aval.ndim if aval is not None else np.ndim(i)


def _parse(idx, shape: tuple) -> list[_Idx]:
    """Classify each index and find the operand axes it consumes."""
    if not isinstance(idx, tuple):
        if isinstance(idx, list):
            raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                            "allowed; use `arr[tuple(seq)]` to index several axes, or "
                            "`arr[jnp.array(seq)]` for an integer-array index.")
        idx = (idx,)
    kinds = [_kind(i) for i in idx]
    consumed = []
    for kind, value in kinds:
        if kind in (NONE, ELLIPSIS):
            consumed.append(0)
        elif kind == BOOL:
            consumed.append(_ndim(value) if not isinstance(value, bool) else 0)
        else:
            consumed.append(1)
    n_ellipsis = sum(k == ELLIPSIS for k, _ in kinds)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    total = sum(consumed)
    if total > len(shape):
        raise IndexError(f"Too many indices: array is {len(shape)}-dimensional, but {total} "
                         f"were indexed")
    out, axis = [], 0
    for (kind, value), n in zip(kinds, consumed):
        if kind == ELLIPSIS:
            n = len(shape) - total
        out.append(_Idx(kind, value, tuple(range(axis, axis + n))))
        axis += n
    return out


def _expand_ellipsis(parsed: list[_Idx], ndim: int) -> list[_Idx]:
    """Ellipsis and the implicit trailing axes become explicit full slices."""
    out = []
    for p in parsed:
        if p.kind == ELLIPSIS:
            out.extend(_Idx(SLICE, slice(None), (a,)) for a in p.axes)
        else:
            out.append(p)
    used = sum(len(p.axes) for p in parsed)
    out.extend(_Idx(SLICE, slice(None), (a,)) for a in range(used, ndim))
    return out


def _static_entry(v):
    """A slice entry as a Python int (or None); raises if it is traced."""
    if v is None:
        return None
    if isinstance(v, Tracer):
        try:
            v = v.to_concrete("index")
        except ConcretizationTypeError:
            raise IndexError(f"Slice entries must be static integers, got a traced value "
                             f"{v.aval.str_short()}; use lax.dynamic_slice (or "
                             f"lax.dynamic_slice_in_dim) for a slice at a traced start") from None
    return operator.index(v)


def _static_slice_or_none(s: slice) -> slice | None:
    try:
        return slice(_static_entry(s.start), _static_entry(s.stop), _static_entry(s.step))
    except IndexError:
        return None


def _slice_indices(s: slice, size: int) -> tuple[int, int, int]:
    if s.step == 0:
        raise ValueError("slice step cannot be zero")
    if type(size) is DimExpr:
        return _symbolic_slice_indices(s, size)
    return s.indices(size)


def _symbolic_slice_indices(s: slice, size) -> tuple:
    """``slice.indices`` for a symbolic dimension size (positive steps)."""
    step = 1 if s.step is None else s.step
    if step < 0:
        raise NotImplementedError("slicing a symbolic dimension with a negative step")

    def clip(v, default):
        if v is None:
            return default
        if type(v) is not DimExpr and v < 0:
            return max_dim(size + v, 0)
        return min_dim(v, size)
    return clip(s.start, 0), clip(s.stop, size), step


# ---- x[idx] --------------------------------------------------------------------------------

def _getitem(arr, idx):
    """``arr[idx]`` with jax.numpy's semantics (see the module docstring)."""
    return _rewriting_take(arr, idx)


def _rewriting_take(arr, idx, *, indices_are_sorted: bool = False,
                    unique_indices: bool = False, mode=None, fill_value=None):
    if not hasattr(arr, "aval"):
        arr = asarray(arr)
    shape = arr.shape
    parsed = _parse(idx, shape)
    parsed_mode = None if mode is None else GatherScatterMode.from_any(mode)
    if parsed_mode in (None, GatherScatterMode.PROMISE_IN_BOUNDS, GatherScatterMode.CLIP):
        out = _try_static_slice(arr, parsed)
        if out is not None:
            return out
        out = _try_dynamic_slice(arr, parsed)
        if out is not None:
            return out
    return _gather(arr, _expand_bools(parsed, shape), indices_are_sorted, unique_indices,
                   mode, fill_value)


def _newaxis_position(n_kept: int, n_squeezed: int, n_new: int) -> int:
    return n_kept - n_squeezed + n_new


def _try_static_slice(arr, parsed: list[_Idx]):
    """Ints, static slices, None and Ellipsis only: slice + rev + squeeze + expand_dims."""
    if any(p.kind not in (INT, SLICE, NONE, ELLIPSIS) for p in parsed):
        return None
    parsed = [p._replace(value=_static_slice_or_none(p.value)) if p.kind == SLICE else p
              for p in parsed]
    if any(p.kind == SLICE and p.value is None for p in parsed):
        return None
    shape = arr.shape
    starts, limits, strides = [], [], []
    rev_axes, squeeze_axes, newaxis_dims = [], [], []
    for p in _expand_ellipsis(parsed, len(shape)):
        if p.kind == NONE:
            newaxis_dims.append(_newaxis_position(len(starts), len(squeeze_axes),
                                                  len(newaxis_dims)))
        elif p.kind == INT:
            (axis,) = p.axes
            size = shape[axis]
            if size == 0:
                raise IndexError(f"index is out of bounds for axis {axis} with size 0")
            i = int(p.value)
            if i < 0:
                i += size
            i = min(max(i, 0), size - 1)
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
            squeeze_axes.append(axis)
        else:
            (axis,) = p.axes
            size = shape[axis]
            start, stop, step = _slice_indices(p.value, size)
            if step < 0:
                new_start = min(size, stop + 1 + abs(start - stop - 1) % abs(step))
                starts.append(new_start)
                limits.append(max(new_start, start + 1))
                strides.append(-step)
                rev_axes.append(axis)
            else:
                starts.append(start)
                limits.append(max_dim(start, stop))
                strides.append(step)
    out = arr
    trivial = (all(s == 1 for s in strides) and starts == [0] * len(shape)
               and limits == list(shape))
    if not trivial:
        out = lax.slice(out, starts, limits, None if all(s == 1 for s in strides) else strides)
    return _reverse_squeeze_expand(out, rev_axes, squeeze_axes, newaxis_dims)


def _reverse_squeeze_expand(out, rev_axes, squeeze_axes, newaxis_dims):
    """The end of a basic-indexing result: reversed, integer-indexed and None axes."""
    if rev_axes:
        out = lax.rev(out, rev_axes)
    if squeeze_axes:
        out = lax.squeeze(out, squeeze_axes)
    if newaxis_dims:
        out = lax.expand_dims(out, newaxis_dims)
    return out


def _try_dynamic_slice(arr, parsed: list[_Idx]):
    """Also traced scalar indices (and unit-step slices): dynamic_slice."""
    for p in parsed:
        if p.kind in (INT, NONE, ELLIPSIS):
            continue
        if p.kind == SLICE:
            s = _static_slice_or_none(p.value)
            if s is None or s.step not in (None, 1, -1):
                return None
        elif p.kind != ARRAY or _ndim(p.value) != 0:
            return None
    shape = arr.shape
    starts, sizes, rev_axes, squeeze_axes, newaxis_dims = [], [], [], [], []
    for p in _expand_ellipsis(parsed, len(shape)):
        if p.kind == NONE:
            newaxis_dims.append(_newaxis_position(len(starts), len(squeeze_axes),
                                                  len(newaxis_dims)))
        elif p.kind in (INT, ARRAY):
            (axis,) = p.axes
            if shape[axis] == 0:
                raise IndexError(f"index is out of bounds for axis {axis} with size 0")
            value = p.value
            if isinstance(value, np.ndarray):
                value = value[()]
            starts.append(value)
            sizes.append(1)
            squeeze_axes.append(axis)
        else:
            (axis,) = p.axes
            start, stop, step = _slice_indices(_static_slice_or_none(p.value), shape[axis])
            if step < 0:
                new_start = stop + 1 + abs(start - stop - 1) % abs(step)
                starts.append(new_start)
                sizes.append(max(0, start + 1 - new_start))
                rev_axes.append(axis)
            else:
                starts.append(start)
                sizes.append(max(0, stop - start))
    if len(starts) > 1:
        starts = [np.asarray(i, _INDEX_DTYPE)[()] if _is_int(i) else i
                  if get_aval(i).dtype == _INDEX_DTYPE else
                  lax.convert_element_type(i, _INDEX_DTYPE) for i in starts]
    out = lax.dynamic_slice(arr, starts, sizes)
    return _reverse_squeeze_expand(out, rev_axes, squeeze_axes, newaxis_dims)


# ---- the gather / scatter indexer ------------------------------------------------------------

def _concrete_mask(value):
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, Tracer):
        try:
            return np.asarray(value.to_concrete("boolean index"))
        except ConcretizationTypeError:
            raise NonConcreteBooleanIndexError(
                f"Array boolean indices must be concrete; got a traced "
                f"{value.aval.str_short()} mask. Its number of True values would set the "
                f"result's shape, which must be static. Use jnp.where(mask, x, fill) to keep "
                f"the shape instead (or compute the mask outside the traced function)."
            ) from None
    return np.asarray(value)


def _expand_bools(parsed: list[_Idx], shape: tuple) -> list[_Idx]:
    """Boolean arrays become their (concrete) nonzero index arrays; scalar bools stay."""
    out = []
    for pos, p in enumerate(parsed):
        if p.kind != BOOL or isinstance(p.value, bool):
            out.append(p)
            continue
        mask = _concrete_mask(p.value)
        if mask.ndim == 0:
            out.append(_Idx(BOOL, bool(mask), ()))
            continue
        expected = [shape[a] for a in p.axes]
        if any(m not in (0, e) for m, e in zip(mask.shape, expected)):
            raise IndexError(f"boolean index did not match shape of indexed array in index "
                             f"{pos}: got {mask.shape}, expected {expected}")
        for nz, axis in zip(np.nonzero(mask), p.axes):
            out.append(_Idx(ARRAY, nz.astype(_INDEX_DTYPE), (axis,)))
    return out


class _Indexer(NamedTuple):
    slice_shape: tuple            # the shape of x[idx]
    gather_slice_shape: tuple     # the gather's slice_sizes
    gather_indices: Any           # int32 indices, index vector last
    dnums: GatherDimensionNumbers
    unique_indices: bool
    indices_are_sorted: bool
    reversed_y_dims: tuple        # result dims of negative-step slices (reversed after)
    newaxis_dims: tuple           # result dims added by None
    scalar_bool_dims: tuple       # operand dims inserted for scalar boolean indices


def _normalize(value, size: int):
    """Wrap negative indices (an int, a NumPy array or a traced array) into ``[0, size)``."""
    if _is_int(value):
        # Clamped to [-1, size]: out of bounds stays out of bounds (dropped by scatter,
        # clamped or filled by gather) and fits the int32 index type (x64 allows 2**40).
        return min_dim(max_dim(value + size if value < 0 else value, -1), size)
    symbolic = type(size) is DimExpr  # (shape polymorphism: taken to fit the index type)
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "u":
            return value
        if symbolic:
            value = asarray(value)
        else:
            dt = value.dtype if size <= np.iinfo(value.dtype).max else _INDEX_DTYPE
            return np.where(value < 0, value.astype(dt) + size, value).astype(dt)
    dt = get_aval(value).dtype
    if dtypes.is_unsigned(dt):
        return value
    if not symbolic and size > np.iinfo(dt).max:  # e.g. int8 indices into a long axis
        value, dt = lax.convert_element_type(value, _INDEX_DTYPE), _INDEX_DTYPE
    size_v = lax.convert_element_type(lax.dim_as_value(size), dt) if symbolic \
        else np.asarray(size, dt)
    return lax.select(lax.lt(value, np.zeros((), dt)), lax.add(value, size_v), value)


def _to_index_dtype(value):
    if type(value) is DimExpr:
        return lax.convert_element_type(lax.dim_as_value(value), _INDEX_DTYPE)
    if _is_int(value):
        return np.asarray(value, _INDEX_DTYPE)
    if isinstance(value, np.ndarray):
        return value.astype(_INDEX_DTYPE)
    return lax.convert_element_type(value, _INDEX_DTYPE)


def _shape_of(v) -> tuple:
    return v.shape if isinstance(v, np.ndarray) else get_aval(v).shape


def _index_to_gather(shape: tuple, parsed: list[_Idx], normalize: bool = True) -> _Indexer:
    for p in parsed:  # slice bounds must be static (IndexError otherwise)
        if p.kind == SLICE:
            for entry in (p.value.start, p.value.stop, p.value.step):
                _static_entry(entry)
    advanced_pos = [i for i, p in enumerate(parsed) if p.kind in (ARRAY, INT)]
    contiguous = all(b - a == 1 for a, b in itertools.pairwise(advanced_pos))
    indices = _expand_ellipsis(parsed, len(shape))

    # Scalar booleans: insert a size-1 operand axis, indexed by arange(int(b)).
    scalar_bool_dims = []
    new_shape, new_indices, axis = list(shape), [], 0
    for p in indices:
        if p.kind == BOOL:
            new_shape.insert(axis, 1)
            scalar_bool_dims.append(axis)
            new_indices.append(_Idx(ARRAY, np.arange(int(p.value), dtype=_INDEX_DTYPE),
                                    (axis,)))
            axis += 1
        else:
            new_indices.append(p._replace(axes=tuple(range(axis, axis + len(p.axes)))))
            axis += len(p.axes)
    shape, indices = tuple(new_shape), new_indices

    if normalize:
        indices = [p._replace(value=_normalize(p.value, shape[p.axes[0]]))
                   if p.kind in (INT, ARRAY) else p for p in indices]

    is_advanced = any(p.kind == ARRAY and _ndim(p.value) > 0 for p in indices)
    adv_values, adv_idx_pos, adv_x_axes = [], [], []
    if is_advanced:
        for p_pos, p in enumerate(indices):
            if p.kind in (ARRAY, INT):
                adv_values.append(p.value)
                adv_idx_pos.append(p_pos)
                adv_x_axes.append(p.axes[0])

    offset_dims, collapsed_slice_dims, start_index_map = [], [], []
    gather_indices: list[tuple[Any, int]] = []  # (index array, its first dim in the batch)
    gather_indices_shape: list[int] = []
    slice_shape, newaxis_dims, reversed_y_dims, gather_slice_shape = [], [], [], []
    x_axis = y_axis = collapsed_y_axis = 0
    for pos, p in enumerate(indices):
        if adv_values and (pos == adv_idx_pos[0] if contiguous else pos == 0):
            adv_shape = np.broadcast_shapes(*(_shape_of(v) for v in adv_values))
            start_dim = len(gather_indices_shape)
            for v in adv_values:
                v = _to_index_dtype(v)
                if _shape_of(v) != adv_shape:
                    v = (np.broadcast_to(v, adv_shape) if isinstance(v, np.ndarray)
                         else _broadcast(v, adv_shape))
                gather_indices.append((v, start_dim))
            gather_indices_shape.extend(adv_shape)
            start_index_map.extend(adv_x_axes)
            collapsed_slice_dims.extend(adv_x_axes)
            slice_shape.extend(adv_shape)
            y_axis += len(adv_shape)
            collapsed_y_axis += len(adv_shape)
        if pos in adv_idx_pos:
            x_axis += 1
            gather_slice_shape.append(1)
            continue
        if p.kind in (INT, ARRAY):  # a scalar index, with no advanced indexing
            if shape[x_axis] == 0:
                raise IndexError(f"index is out of bounds for axis {x_axis} with size 0")
            gather_indices.append((_to_index_dtype(p.value), len(gather_indices_shape)))
            collapsed_slice_dims.append(x_axis)
            gather_slice_shape.append(1)
            start_index_map.append(x_axis)
            x_axis += 1
        elif p.kind == NONE:
            slice_shape.append(1)
            newaxis_dims.append(y_axis)
            y_axis += 1
        else:
            s = slice(_static_entry(p.value.start), _static_entry(p.value.stop),
                      _static_entry(p.value.step))
            start, stop, step = _slice_indices(s, shape[x_axis])
            if type(start) is DimExpr or type(stop) is DimExpr:  # (a positive step)
                size = max_dim(0, (stop - start + step - 1) // step)
            else:
                size = len(range(start, stop, step))
            slice_shape.append(size)
            if step == 1:
                if size != shape[x_axis]:
                    gather_indices.append((np.asarray(start, _INDEX_DTYPE),
                                           len(gather_indices_shape)))
                    start_index_map.append(x_axis)
                gather_slice_shape.append(size)
                offset_dims.append(collapsed_y_axis)
            else:
                iota = lax.iota(_INDEX_DTYPE, size)
                idx = lax.add(np.asarray(start, _INDEX_DTYPE),
                              lax.mul(np.asarray(step, _INDEX_DTYPE), iota))
                if step < 0:
                    reversed_y_dims.append(collapsed_y_axis)
                    idx = lax.rev(idx, (0,))
                gather_slice_shape.append(1)
                gather_indices.append((idx, len(gather_indices_shape)))
                start_index_map.append(x_axis)
                gather_indices_shape.append(size)
                collapsed_slice_dims.append(x_axis)
            collapsed_y_axis += 1
            y_axis += 1
            x_axis += 1

    if not gather_indices:
        gi: Any = np.zeros((0,), _INDEX_DTYPE)
    elif len(gather_indices) == 1:
        g, _ = gather_indices[0]
        gi = lax.expand_dims(g, (_ndim(g),))
    else:
        last = len(gather_indices_shape)
        full = tuple(gather_indices_shape) + (1,)
        gi = lax.concatenate([lax.broadcast_in_dim(g, full, tuple(range(i, i + _ndim(g))))
                              for g, i in gather_indices], last)
    dnums = GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                   collapsed_slice_dims=tuple(sorted(collapsed_slice_dims)),
                                   start_index_map=tuple(start_index_map))
    return _Indexer(tuple(slice_shape), tuple(gather_slice_shape), gi, dnums,
                    not adv_values, not adv_values, tuple(reversed_y_dims),
                    tuple(newaxis_dims), tuple(scalar_bool_dims))


def _broadcast(v, shape: tuple):
    from minijax.numpy._shape import broadcast_to
    return broadcast_to(v, shape)


def _gather(arr, parsed: list[_Idx], indices_are_sorted: bool, unique_indices: bool, mode,
            fill_value):
    indexer = _index_to_gather(arr.shape, parsed)
    y = arr
    if indexer.scalar_bool_dims:
        y = lax.expand_dims(y, indexer.scalar_bool_dims)
    if math.prod(indexer.slice_shape) == 0:
        from minijax.numpy._shape import zeros_like
        return zeros_like(y, shape=indexer.slice_shape)
    if _shape_of(indexer.gather_indices) != (0,):
        y = lax.gather(y, indexer.gather_indices, indexer.dnums, indexer.gather_slice_shape,
                       unique_indices=unique_indices or indexer.unique_indices,
                       indices_are_sorted=indices_are_sorted or indexer.indices_are_sorted,
                       mode=mode, fill_value=fill_value)
    if indexer.reversed_y_dims:
        y = lax.rev(y, indexer.reversed_y_dims)
    if indexer.newaxis_dims:
        y = lax.expand_dims(y, indexer.newaxis_dims)
    return y


def _scatter_update(x, idx, y, scatter_op, indices_are_sorted: bool, unique_indices: bool,
                    mode=None, normalize_indices: bool = True):
    """``x`` with ``x[idx] (op)= y``, functionally."""
    from minijax.numpy._shape import broadcast_to, squeeze
    if not hasattr(x, "aval"):
        x = asarray(x)
    if isinstance(y, (list, tuple)):
        y = asarray(y)
    if (_is_int(y) and dtypes.is_int(x.dtype)
            and np.iinfo(x.dtype).min <= y <= np.iinfo(x.dtype).max):
        y = np.asarray(y, x.dtype)
    parsed = _expand_bools(_parse(idx, x.shape), x.shape)
    indexer = _index_to_gather(x.shape, parsed, normalize=normalize_indices)
    if math.prod(indexer.slice_shape) == 0:
        return x
    dtype, weak = x.dtype, x.weak_type
    x, y = promote_dtypes(x, y)
    y = broadcast_to(y, indexer.slice_shape)
    y = squeeze(y, indexer.newaxis_dims)
    if indexer.reversed_y_dims:
        y = lax.rev(y, indexer.reversed_y_dims)
    if indexer.scalar_bool_dims:
        x = lax.expand_dims(x, indexer.scalar_bool_dims)
    dn = indexer.dnums
    dnums = ScatterDimensionNumbers(update_window_dims=dn.offset_dims,
                                    inserted_window_dims=dn.collapsed_slice_dims,
                                    scatter_dims_to_operand_dims=dn.start_index_map,
                                    operand_batching_dims=dn.operand_batching_dims,
                                    scatter_indices_batching_dims=dn.start_indices_batching_dims)
    out = scatter_op(x, indexer.gather_indices, y, dnums,
                     indices_are_sorted=indexer.indices_are_sorted or indices_are_sorted,
                     unique_indices=indexer.unique_indices or unique_indices, mode=mode)
    if indexer.scalar_bool_dims:
        out = lax.squeeze(out, indexer.scalar_bool_dims)
    return lax.convert_element_type(out, dtype, weak)


# ---- x.at[idx] -------------------------------------------------------------------------------

class _IndexUpdateHelper:
    """``x.at``: ``x.at[idx].set(v)`` and friends return updated copies of ``x``."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """``x.at[idx]``: the methods below compute ``x`` with ``x[idx]`` updated.

    Out-of-bounds updates are dropped unless ``mode="clip"``; repeated indices
    all apply (``add`` accumulates; for ``set`` one of them wins).
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode=None, fill_value=None):
        """``x[idx]``; ``mode="fill"`` reads ``fill_value`` out of bounds (default NaN/min)."""
        return _rewriting_take(self.array, self.index, indices_are_sorted=indices_are_sorted,
                               unique_indices=unique_indices, mode=mode,
                               fill_value=fill_value)

    def set(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode=None):
        """``x`` with ``x[idx] = values``."""
        return _scatter_update(self.array, self.index, values, lax.scatter, indices_are_sorted,
                               unique_indices, mode)

    def add(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode=None):
        """``x`` with ``x[idx] += values`` (repeated indices accumulate)."""
        return _scatter_update(self.array, self.index, values, lax.scatter_add,
                               indices_are_sorted, unique_indices, mode)

    def multiply(self, values, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode=None):
        """``x`` with ``x[idx] *= values``."""
        return _scatter_update(self.array, self.index, values, lax.scatter_mul,
                               indices_are_sorted, unique_indices, mode)

    mul = multiply

    def min(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode=None):
        """``x`` with ``x[idx] = minimum(x[idx], values)``."""
        return _scatter_update(self.array, self.index, values, lax.scatter_min,
                               indices_are_sorted, unique_indices, mode)

    def max(self, values, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode=None):
        """``x`` with ``x[idx] = maximum(x[idx], values)``."""
        return _scatter_update(self.array, self.index, values, lax.scatter_max,
                               indices_are_sorted, unique_indices, mode)


# ---- take / take_along_axis ----------------------------------------------------------------

def _index_array(fname: str, indices, error: type[Exception] = TypeError):
    """``indices`` as an integer array; ``error`` when they are not integers (jax: a
    ValueError from take, a TypeError from take_along_axis)."""
    if isinstance(indices, (list, tuple)):
        indices = _sequence_index(indices)
    if _is_int(indices):
        indices = np.asarray(indices, dtypes.default_int())
    dt = indices.dtype if isinstance(indices, np.ndarray) else get_aval(indices).dtype
    if np.dtype(dt).kind not in "iu":
        raise error(f"{fname}: indices must be integers, got dtype {np.dtype(dt).name}")
    return indices


@keys_move
def take(a, indices, axis: int | None = None, out=None, mode: str | None = None,
         unique_indices: bool = False, indices_are_sorted: bool = False, fill_value=None):
    """Elements of ``a`` at ``indices`` along ``axis`` (the flattened array if None).

    ``mode``: ``"fill"`` (default; out-of-bounds indices read ``fill_value``,
    NaN for floats), ``"clip"`` or ``"wrap"``.
    Negative indices count from the end.
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to take is not supported.")
    if isinstance(a, (list, tuple)):
        raise TypeError("take requires ndarray or scalar arguments, got a list for `a`")
    if not hasattr(a, "aval"):
        a = asarray(a)
    indices = _index_array("take", indices, ValueError)
    if axis is None:
        a = lax.reshape(a, (a.size,))
        axis = 0
    axis = canonicalize_axis(axis, a.ndim)
    size = a.shape[axis]
    if mode is None or mode == "fill":
        gmode = GatherScatterMode.FILL_OR_DROP
        indices = _normalize(indices, size)
    elif mode == "wrap":
        from minijax.numpy._ufuncs import remainder
        indices = (np.mod(indices, size) if isinstance(indices, np.ndarray)
                   else remainder(indices, np.asarray(size, get_aval(indices).dtype)))
        gmode = GatherScatterMode.PROMISE_IN_BOUNDS
    elif mode == "clip":
        gmode = GatherScatterMode.CLIP
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to take is not supported.")
    else:
        raise ValueError(f"Invalid mode '{mode}' for take")
    idx_shape = _shape_of(indices)
    slice_sizes = list(a.shape)
    if size == 0:
        if math.prod(idx_shape) != 0:
            raise IndexError("Cannot do a non-empty take() from an empty axis.")
        return a
    if math.prod(idx_shape) == 0:
        from minijax.numpy._shape import zeros_like
        return zeros_like(a, shape=a.shape[:axis] + idx_shape + a.shape[axis + 1:])
    slice_sizes[axis] = 1
    nidx = len(idx_shape)
    dnums = GatherDimensionNumbers(
        offset_dims=tuple(range(axis)) + tuple(range(axis + nidx, a.ndim + nidx - 1)),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    return lax.gather(a, lax.expand_dims(indices, (nidx,)), dnums, slice_sizes,
                      unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                      mode=gmode, fill_value=fill_value)


def take_along_axis(arr, indices, axis: int | None, mode: str | None = None, fill_value=None):
    """``arr`` indexed by ``indices`` along ``axis``, matching the other axes elementwise.

    ``indices`` has ``arr``'s rank (axes other than ``axis`` broadcast);
    out-of-bounds indices read ``fill_value`` unless ``mode`` says otherwise.
    """
    if not hasattr(arr, "aval"):
        if isinstance(arr, (list, tuple)):
            raise TypeError("take_along_axis requires ndarray arguments, got a list for `arr`")
        arr = asarray(arr)
    indices = _index_array("take_along_axis", indices)
    idx_shape = _shape_of(indices)
    if axis is None:
        if len(idx_shape) != 1:
            raise ValueError(f"take_along_axis indices must be 1D if axis=None, got shape "
                             f"{idx_shape}")
        arr = lax.reshape(arr, (arr.size,))
        axis = 0
    rank = arr.ndim
    if rank != len(idx_shape):
        raise ValueError(f"indices and arr must have the same number of dimensions; "
                         f"{len(idx_shape)} vs. {rank}")
    axis = canonicalize_axis(axis, rank)
    arr_shape = list(arr.shape)
    arr_shape[axis] = 1
    out_shape = tuple(broadcast_shapes(tuple(idx_shape), tuple(arr_shape)))
    axis_size = arr.shape[axis]
    if axis_size == 0:
        return lax.broadcast_in_dim(np.zeros((), arr.dtype), out_shape, ())
    if mode != "promise_in_bounds":
        indices = _normalize(indices, axis_size)
    index_dims = [i for i, d in enumerate(idx_shape) if i == axis or d != 1]
    gather_indices = lax.reshape(indices, tuple(out_shape[i] for i in index_dims) + (1,))
    slice_sizes, offset_dims, start_index_map, collapsed = [], [], [], []
    operand_batching, indices_batching, squeeze_dims = [], [], []
    new_i = j = 0
    for i in range(rank):
        if i == axis:
            slice_sizes.append(1)
            start_index_map.append(new_i)
            collapsed.append(new_i)
            new_i += 1
            j += 1
        elif idx_shape[i] == 1:
            offset_dims.append(i)
            slice_sizes.append(arr_shape[i])
            new_i += 1
        elif arr_shape[i] == 1:
            squeeze_dims.append(i)
            j += 1
        else:
            slice_sizes.append(0 if arr_shape[i] == 0 else 1)
            operand_batching.append(new_i)
            indices_batching.append(j)
            new_i += 1
            j += 1
    arr = lax.squeeze(arr, squeeze_dims)
    dnums = GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                   collapsed_slice_dims=tuple(collapsed),
                                   start_index_map=tuple(start_index_map),
                                   operand_batching_dims=tuple(operand_batching),
                                   start_indices_batching_dims=tuple(indices_batching))
    return lax.gather(arr, gather_indices, dnums, tuple(slice_sizes),
                      mode="fill" if mode is None else mode, fill_value=fill_value)
