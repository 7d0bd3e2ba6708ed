"""Shape manipulation and array construction of minijax.numpy (jax.numpy semantics).

reshape, transpose, concatenate, stack, split, tile, repeat, flip, pad, ...;
arange, linspace, eye, tril/triu and the ``*_like`` constructors.
"""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.aval import ShapedArray, canonicalize_shape
from minijax.core.errors import ConcretizationTypeError
from minijax.core.shape_poly import DimExpr, InconclusiveDimensionOperation
from minijax.core.shape_poly import max_dim as core_max_dim
from minijax.core.trace import Tracer, get_aval, is_python_scalar
from minijax.lax.shape import canonicalize_axis
from minijax.numpy._creation import asarray, place
from minijax.numpy._promote import (broadcast_shapes, broadcast_to_shape, check_arraylike,
                                   convert, promote_dtypes)
from minijax.lax._util import check_out_sharding
from minijax.numpy._extended import keys_move
from minijax.runtime.array import Array as _ArrayType
from minijax.runtime.sharding import SingleDeviceSharding as _SingleDeviceSharding


def _result(x):
    """``x`` as a minijax array (Python scalars and NumPy arrays are converted)."""
    return x if hasattr(x, "aval") else asarray(x)


def _ndim(x) -> int:
    return get_aval(x).ndim


def _shape(x) -> tuple:
    return get_aval(x).shape


def _axis_tuple(axis) -> tuple:
    try:
        if isinstance(axis, (list, tuple)):
            return tuple(operator.index(a) for a in axis)
        return (operator.index(axis),)
    except TypeError:
        raise TypeError(f"axis must be an integer or a tuple of integers, got {axis!r}") from None


def _static_int(x, what: str) -> int:
    """A concrete Python int from ``x`` (ConcretizationTypeError for traced values)."""
    if isinstance(x, Tracer):
        try:
            x = x.to_concrete(what)
        except ConcretizationTypeError as e:
            raise type(e)(f"{what} must be a static (concrete) value, not a traced array; pass "
                          f"a Python int (mark it static in jit). {e}") from None
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {x!r}") from None


# ---- reshaping ------------------------------------------------------------------------

def _compute_newshape(shape: tuple, size: int, newshape) -> tuple:
    if not isinstance(newshape, (list, tuple)) and np.ndim(newshape) == 0:
        newshape = (newshape,)
    newshape = canonicalize_shape(newshape, "new shape of reshape")
    if sum(d == -1 for d in newshape) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got "
                        f"{newshape}")
    if any(d < -1 for d in newshape):
        raise TypeError(f"cannot reshape array of shape {shape} (size {size}) into shape "
                        f"{newshape}: negative dimensions are not allowed (except -1)")
    if -1 in newshape:
        known = math.prod(d for d in newshape if d != -1)
        rem = 0 if known == 0 else size % known
        if type(rem) is DimExpr:
            raise InconclusiveDimensionOperation(
                f"Cannot divide evenly the sizes of shapes {tuple(shape)} and {newshape}. "
                f"The remainder {rem} should be 0.")
        if known == 0 or rem:
            raise TypeError(f"cannot reshape array of shape {shape} (size {size}) into shape "
                            f"{newshape} because the product of specified axis sizes ({known}) "
                            f"does not evenly divide {size}")
        newshape = tuple(size // known if d == -1 else d for d in newshape)
    if math.prod(newshape) != size:
        raise TypeError(f"cannot reshape array of shape {shape} (size {size}) into shape "
                        f"{newshape} (size {math.prod(newshape)})")
    return newshape


@keys_move
def reshape(a, shape=None, *args, order: str = "C", copy=None, out_sharding=None):
    """``a`` with a new ``shape`` (one entry may be -1); also ``x.reshape(2, 3)``."""
    check_out_sharding("reshape", out_sharding)
    check_arraylike("reshape", a)
    if args:
        if len(args) == 1 and isinstance(args[0], str):
            order = args[0]
        else:
            shape = (shape, *args)
    if shape is None:
        raise TypeError("reshape() missing required argument 'shape'")
    if order not in ("C", "F"):
        raise NotImplementedError(f"np.reshape order={order} is not implemented.")
    aval = get_aval(a)
    new = _compute_newshape(aval.shape, aval.size, shape)
    if order == "F":  # column-major: reverse the axes before and after a C-order reshape
        rev = lax.transpose(a, tuple(range(aval.ndim))[::-1])
        out = lax.reshape(rev, new[::-1])
        return _result(lax.transpose(out, tuple(range(len(new)))[::-1]))
    return _result(lax.reshape(a, new))


@keys_move
def ravel(a, order: str = "C", *, out_sharding=None):
    """``a`` flattened to one dimension."""
    check_out_sharding("ravel", out_sharding)
    check_arraylike("ravel", a)
    if order not in ("C", "F"):
        raise NotImplementedError(f"Ravel not implemented for order={order!r}.")
    return reshape(a, (get_aval(a).size,), order=order)


def flatten(a, order: str = "C"):
    """``a`` flattened to one dimension (the ``x.flatten()`` method)."""
    return ravel(a, order)


@keys_move
def transpose(a, axes=None, *args):
    """Permute the axes of ``a`` (reversed when ``axes`` is None); also ``x.transpose(1, 0)``."""
    check_arraylike("transpose", a)
    ndim = _ndim(a)
    if args:
        axes = (axes, *args)
    if axes is None:
        perm = tuple(reversed(range(ndim)))
    else:
        perm = tuple(canonicalize_axis(i, ndim) for i in _axis_tuple(axes))
    return _result(lax.transpose(a, perm))


def permute_dims(a, axes):
    """Permute the axes of ``a`` (array API name of transpose)."""
    return transpose(a, axes)


@keys_move
def swapaxes(a, axis1: int, axis2: int):
    """``a`` with ``axis1`` and ``axis2`` exchanged."""
    check_arraylike("swapaxes", a)
    ndim = _ndim(a)
    perm = list(range(ndim))
    for ax in (axis1, axis2):
        if not -ndim <= operator.index(ax) < ndim:
            raise IndexError(f"swapaxes: axis {ax} is out of bounds for array of dimension "
                             f"{ndim}")
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return _result(lax.transpose(a, perm))


@keys_move
def moveaxis(a, source, destination):
    """Move axes ``source`` of ``a`` to positions ``destination``."""
    check_arraylike("moveaxis", a)
    ndim = _ndim(a)
    src = tuple(canonicalize_axis(i, ndim) for i in _axis_tuple(source))
    dst = tuple(canonicalize_axis(i, ndim) for i in _axis_tuple(destination))
    if len(src) != len(dst):
        raise ValueError(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"repeated axis in moveaxis: source={source}, destination="
                         f"{destination}")
    perm = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return _result(lax.transpose(a, perm))


@keys_move
def expand_dims(a, axis):
    """Insert size-1 axes at ``axis`` (int or tuple; positions in the result)."""
    check_arraylike("expand_dims", a)
    return _result(lax.expand_dims(a, _axis_tuple(axis)))


@keys_move
def squeeze(a, axis=None):
    """Remove size-1 axes: all of them, or those in ``axis`` (which must have size 1)."""
    check_arraylike("squeeze", a)
    shape = _shape(a)
    if axis is None:
        dims = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        dims = tuple(canonicalize_axis(i, len(shape)) for i in _axis_tuple(axis))
    return _result(lax.squeeze(a, dims))


def broadcast_to(array, shape, *, out_sharding=None):
    """``array`` broadcast to ``shape`` with NumPy's rules."""
    check_out_sharding("broadcast_to", out_sharding)
    check_arraylike("broadcast_to", array)
    shape = canonicalize_shape(shape, "shape of broadcast_to")
    if isinstance(dt := getattr(array, "dtype", None), dtypes.ExtendedDType):
        # typed keys: broadcast their words (the key dimensions trail)
        words = dt.to_physical(array)
        n = len(dt.element_shape)
        if len(shape) < array.ndim or any(d not in (1, s) for d, s in
                                          zip(array.shape, shape[len(shape) - array.ndim:])):
            raise ValueError(f"Incompatible shapes for broadcasting: array of shape "
                             f"{tuple(array.shape)} cannot be broadcast to requested shape "
                             f"{shape}")
        return dt.from_physical(broadcast_to(words, (*shape, *words.shape[len(words.shape) - n:])))
    aval = get_aval(array)
    if aval.shape == shape:
        return _result(array)
    nlead = len(shape) - aval.ndim
    if nlead < 0 or any(d not in (1, s) for d, s in zip(aval.shape, shape[nlead:])):
        raise ValueError(f"Incompatible shapes for broadcasting: array of shape {aval.shape} "
                         f"cannot be broadcast to requested shape {shape}")
    return _result(broadcast_to_shape(array, shape))


def broadcast_arrays(*args) -> list:
    """The arguments broadcast against each other to one shape."""
    check_arraylike("broadcast_arrays", *args)
    shape = broadcast_shapes(*(tuple(x.shape) if hasattr(x, "shape") else _shape(x)
                               for x in args))
    return [broadcast_to(x, shape) for x in args]


def atleast_1d(*arys):
    """Arrays with at least one dimension (a list when given several)."""
    check_arraylike("atleast_1d", *arys)
    out = [_result(x) if _ndim(x) >= 1 else _result(lax.expand_dims(x, (0,))) for x in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    """Arrays with at least two dimensions; 1-D arrays become rows."""
    check_arraylike("atleast_2d", *arys)
    out = []
    for x in arys:
        n = _ndim(x)
        out.append(_result(x) if n >= 2 else _result(lax.expand_dims(x, tuple(range(2 - n)))))
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    """Arrays with at least three dimensions: ``(N,)`` becomes ``(1, N, 1)``."""
    check_arraylike("atleast_3d", *arys)
    out = []
    for x in arys:
        n = _ndim(x)
        dims = {0: (0, 1, 2), 1: (0, 2), 2: (2,)}.get(n, ())
        out.append(_result(lax.expand_dims(x, dims)) if dims else _result(x))
    return out[0] if len(out) == 1 else out


# ---- joining and splitting ----------------------------------------------------------------

def concatenate(arrays, axis: int | None = 0, dtype=None):
    """Join arrays along an existing ``axis`` (``axis=None`` flattens them first)."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    if (ext := dtypes.extended_operands("concatenate", arrays)) is not None:
        if axis is None:  # typed keys flatten with their own ravel
            return concatenate([x.ravel() for x in arrays], 0)
        return _join_extended(ext, [x.ndim for x in arrays], axis, new_axis=False)
    check_arraylike("concatenate", *arrays)
    if axis is None:
        arrays = [ravel(x) for x in arrays]
        axis = 0
    if any(_ndim(x) == 0 for x in arrays):
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    axis = canonicalize_axis(axis, _ndim(arrays[0]))
    if dtype is not None:
        dt = dtypes.canonicalize(dtype)
        arrays = [convert(x, dt) for x in arrays]
    else:
        arrays = promote_dtypes(*arrays)
    return _result(lax.concatenate(arrays, axis))


def _join_extended(ext, ndims, axis, new_axis: bool):
    """concatenate/stack of typed keys: join their words, whose key dimensions trail."""
    dt, words = ext
    if not new_axis and any(n == 0 for n in ndims):
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    axis = canonicalize_axis(axis, ndims[0] + new_axis)
    if new_axis:
        words = [lax.expand_dims(w, (axis,)) for w in words]
    return dt.from_physical(lax.concatenate(words, axis))


def stack(arrays, axis: int = 0, out=None, dtype=None):
    """Join arrays of one shape along a new ``axis``."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to stack is not supported.")
    arrays = list(arrays)
    if not arrays:
        raise ValueError("Need at least one array to stack.")
    if (ext := dtypes.extended_operands("stack", arrays)) is not None:
        if any(x.shape != arrays[0].shape for x in arrays):
            raise ValueError(f"All input arrays must have the same shape, got "
                             f"{', '.join(str(x.shape) for x in arrays)}.")
        return _join_extended(ext, [x.ndim for x in arrays], axis, new_axis=True)
    check_arraylike("stack", *arrays)
    shapes = [_shape(x) for x in arrays]
    if any(s != shapes[0] for s in shapes):
        raise ValueError(f"All input arrays must have the same shape, got "
                         f"{', '.join(map(str, shapes))}.")
    axis = canonicalize_axis(axis, len(shapes[0]) + 1)
    return concatenate([lax.expand_dims(x, (axis,)) for x in arrays], axis, dtype=dtype)


def hstack(tup, dtype=None):
    """Join arrays column-wise (along axis 1, or axis 0 for 1-D arrays)."""
    arrs = [atleast_1d(x) for x in tup]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """Join arrays row-wise (1-D arrays become rows)."""
    return concatenate([atleast_2d(x) for x in tup], 0, dtype=dtype)


def _split(fname: str, ary, indices_or_sections, axis: int) -> list:
    check_arraylike(fname, ary)
    shape = _shape(ary)
    axis = canonicalize_axis(axis, len(shape))
    size = shape[axis]
    if isinstance(indices_or_sections, (list, tuple)) or np.ndim(indices_or_sections) > 0:
        points = [_static_int(i, f"{fname} indices") for i in indices_or_sections]
        bounds = [0] + [min(max(p + size if p < 0 else p, 0), size) for p in points] + [size]
        pieces = [(lo, max(lo, hi)) for lo, hi in itertools.pairwise(bounds)]
    else:
        n = _static_int(indices_or_sections, f"{fname} sections")
        if n <= 0:
            raise ValueError("number sections must be larger than 0.")
        part, rest = divmod(size, n)
        if rest and fname == "split":
            raise ValueError(f"array split does not result in an equal division: rest is "
                             f"{rest}")
        sizes = [part + 1] * rest + [part] * (n - rest)
        starts = np.cumsum([0] + sizes)
        pieces = list(zip(starts[:-1].tolist(), starts[1:].tolist()))
    return [_result(lax.slice_in_dim(ary, lo, hi, 1, axis)) for lo, hi in pieces]


@keys_move
def split(ary, indices_or_sections, axis: int = 0) -> list:
    """Split into equal sections (an int) or at the given indices; returns a list."""
    return _split("split", ary, indices_or_sections, axis)


@keys_move
def array_split(ary, indices_or_sections, axis: int = 0) -> list:
    """Like ``split`` but an int number of sections need not divide the axis evenly."""
    return _split("array_split", ary, indices_or_sections, axis)


@keys_move
def tile(A, reps):
    """Repeat the whole array ``reps`` times along each axis."""
    check_arraylike("tile", A)
    reps = _axis_tuple(reps) if not isinstance(reps, (list, tuple)) else tuple(
        _static_int(r, "tile reps") for r in reps)
    shape = _shape(A)
    reps = (1,) * (len(shape) - len(reps)) + reps
    shape = (1,) * (len(reps) - len(shape)) + shape
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}")
    A = lax.reshape(A, shape)
    pairs = [d for r, s in zip(reps, shape) for d in (r, s)]
    dims = tuple(range(1, 2 * len(shape), 2))
    out = lax.broadcast_in_dim(A, pairs, dims)
    return _result(lax.reshape(out, tuple(r * s for r, s in zip(reps, shape))))


@keys_move
def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None,
           out_sharding=None):
    """Repeat each element ``repeats`` times along ``axis`` (the flattened array if None).

    ``repeats`` is an int or a concrete array with one count per element.
    """
    check_out_sharding("repeat", out_sharding)
    check_arraylike("repeat", a)
    if isinstance(repeats, Tracer):
        try:
            repeats = repeats.to_concrete("repeat")
        except ConcretizationTypeError as e:
            if total_repeat_length is None:
                raise type(e)(
                    f"jnp.repeat needs static repeats, got a traced array; pass a Python int "
                    f"or a concrete (NumPy) array of counts, or pass a static "
                    f"total_repeat_length. {e}") from None
            return _result(_repeat_traced(a, repeats, axis, total_repeat_length))
    reps = np.asarray(repeats)
    if reps.dtype.kind not in "iu" and reps.dtype != np.bool_:
        raise TypeError(f"repeat: repeats must be integers, got {repeats!r} (dtype "
                        f"{reps.dtype})")
    if np.any(reps < 0):  # a TypeError, as jax's (the result shape would be negative)
        raise TypeError(f"repeat: repeats may not contain negative values, got {repeats}")
    a, shape, axis = _repeat_operand(a, axis)
    if reps.ndim == 0:
        r = int(reps)
        aux = list(shape)
        aux.insert(axis + 1, r)
        out = lax.broadcast_in_dim(a, aux, [i for i in range(len(aux)) if i != axis + 1])
        new = list(shape)
        new[axis] *= r
        result = lax.reshape(out, new)
    else:
        reps = np.broadcast_to(reps, (shape[axis],)) if reps.size == 1 else reps
        if reps.shape != (shape[axis],):
            raise ValueError(f"repeat: repeats has shape {reps.shape}, expected a scalar or "
                             f"({shape[axis]},) for axis {axis} of shape {shape}")
        idx = np.repeat(np.arange(shape[axis], dtype=np.int32), reps)
        from minijax.numpy._indexing import _getitem
        result = _getitem(a, (slice(None),) * axis + (idx,))
    if total_repeat_length is not None:
        n = get_aval(result).shape[axis]
        if n >= total_repeat_length:
            result = lax.slice_in_dim(result, 0, total_repeat_length, 1, axis)
        else:
            last = lax.slice_in_dim(result, n - 1, n, 1, axis)
            fill = repeat(last, total_repeat_length - n, axis=axis)
            result = lax.concatenate([result, fill], axis)
    return _result(result)


def _repeat_operand(a, axis):
    """``(a, its shape, axis)`` for ``repeat``: the flattened array along axis 0 when
    ``axis`` is None, else ``a`` with ``axis`` made non-negative."""
    if axis is None:
        a = ravel(a)
        axis = 0
    shape = _shape(a)
    return a, shape, canonicalize_axis(axis, len(shape))


def _repeat_traced(a, repeats, axis, total: int):
    """``repeat`` with traced counts and a static output length ``total``: the output's
    source index is a running count of where each element's block starts (a result longer
    than ``sum(repeats)`` repeats the last element, a shorter one is cut, as in jax)."""
    from minijax.numpy._indexing import _getitem, _scatter_update
    total = operator.index(total)
    if not dtypes.is_int(repeats.dtype) and repeats.dtype != dtypes.bool_:
        raise TypeError(f"repeat: repeats must be integers, got dtype {repeats.dtype}")
    a, shape, axis = _repeat_operand(a, axis)
    if total == 0 or shape[axis] == 0:
        new = list(shape)
        new[axis] = total if shape[axis] else 0
        return lax.full(new, 0, get_aval(a).dtype) if total == 0 else a
    reps = lax.convert_element_type(ravel(repeats), np.int32)
    reps = broadcast_to_shape(reps, (shape[axis],))
    starts = lax.cumsum(reps) - reps
    marks = _scatter_update(lax.full((total,), 0, np.int32), starts, np.int32(1),
                            lax.scatter_add, True, False)
    idx = lax.cumsum(marks) - np.int32(1)
    return _getitem(a, (slice(None),) * axis + (idx,))


@keys_move
def flip(m, axis=None):
    """Reverse the order of elements along ``axis`` (all axes if None)."""
    check_arraylike("flip", m)
    ndim = _ndim(m)
    if axis is None:
        dims = tuple(range(ndim))
    else:
        dims = tuple(canonicalize_axis(i, ndim) for i in _axis_tuple(axis))
    return _result(lax.rev(m, dims))


@keys_move
def fliplr(m):
    """Reverse the order of columns (axis 1)."""
    return flip(m, 1)


@keys_move
def flipud(m):
    """Reverse the order of rows (axis 0)."""
    return flip(m, 0)


# ---- padding ----------------------------------------------------------------------------------

def _pad_widths(pad_width, ndim: int) -> list[tuple[int, int]]:
    arr = np.asarray(pad_width)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"pad: pad_width must be integers, got {pad_width!r}")
    try:
        widths = np.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: pad_width {pad_width!r} cannot be broadcast to ({ndim}, 2) "
                         f"(one (before, after) pair per axis)") from None
    if np.any(widths < 0):
        raise ValueError(f"index can't contain negative values, got pad_width {pad_width!r}")
    return [(int(lo), int(hi)) for lo, hi in widths]


def _pad_pairs(values, ndim: int, name: str) -> list[tuple]:
    """``values`` as one (before, after) pair per axis; accepts jax's shapes
    (ndim, 2), (1, 2), (2,), (1,) and ()."""
    if isinstance(values, Tracer):
        raise ConcretizationTypeError(f"jnp.pad: {name} must be concrete (static), "
                                      f"not a traced array")
    try:
        arr = np.asarray(values)
    except ValueError:
        raise TypeError(f"`{name}` entries must be the same shape: {values}") from None
    if arr.dtype == object:
        raise TypeError(f"`{name}` entries must be the same shape: {values}")
    if arr.shape == (ndim, 2):
        pairs = arr
    elif arr.shape in ((1, 2), (2,)):
        pairs = np.broadcast_to(arr.reshape(2), (ndim, 2))
    elif arr.shape in ((1,), ()):
        pairs = np.broadcast_to(arr.reshape(()), (ndim, 2))
    else:
        raise ValueError(f"jnp.pad: {name} with nd={ndim} has unsupported shape {arr.shape}. "
                         f"Valid shapes are ({ndim}, 2), (1, 2), (2,), (1,), or ().")
    return [(lo.item(), hi.item()) for lo, hi in pairs]


_PAD_KWARGS = {
    "constant": ("constant_values",), "edge": (), "wrap": (), "empty": (),
    "linear_ramp": ("end_values",), "maximum": ("stat_length",),
    "minimum": ("stat_length",), "mean": ("stat_length",), "median": ("stat_length",),
    "reflect": ("reflect_type",), "symmetric": ("reflect_type",),
}


def _check_pad_axis(size: int, lo: int, hi: int, mode: str):
    if size == 0 and (lo or hi):
        raise ValueError(f"Cannot apply '{mode}' padding to empty axis")


def _pad_reflect_odd(out, ax: int, lo: int, hi: int, mode: str):
    """Odd reflection along ``ax``: each mirrored block is ``2 * edge - block``, applied
    block after block when the padding is longer than the axis."""
    size = out.shape[ax]
    offset = 1 if (mode == "reflect" and size > 1) else 0
    for width, before in ((lo, True), (hi, False)):
        n = out.shape[ax]
        edge = lax.slice_in_dim(out, 0, 1, 1, ax) if before else \
            lax.slice_in_dim(out, n - 1, n, 1, ax)
        while width > 0:
            step = min(width, size - offset)
            width -= step
            n = out.shape[ax]
            if before:
                block = lax.slice_in_dim(out, offset, offset + step, 1, ax)
            else:
                stop = n if (mode == "symmetric" or size == 1) else n - 1
                block = lax.slice_in_dim(out, stop - step, stop, 1, ax)
            block = lax.rev(block, (ax,))
            twice = broadcast_to_shape(lax.add(edge, edge), block.shape)
            block = lax.sub(twice, block)
            if size > 1 and block.shape[ax]:
                m = block.shape[ax]
                edge = lax.slice_in_dim(block, 0, 1, 1, ax) if before else \
                    lax.slice_in_dim(block, m - 1, m, 1, ax)
            out = lax.concatenate([block, out] if before else [out, block], ax)
    return out


def _pad_with_function(array, pad_width, func, kwargs):
    """``pad`` with a callable mode, as jax's: zero-pad, then for each axis in turn replace
    every 1-d slice along it by ``func(vector, (before, after), axis, kwargs)`` (which
    returns the new vector; jax's arrays cannot be filled in place as NumPy's are)."""
    from minijax.numpy._arrays import apply_along_axis
    array = _result(array)
    widths = _pad_widths(pad_width, array.ndim)
    out = _result(lax.pad(array, np.zeros((), array.dtype), [(lo, hi, 0) for lo, hi in widths]))
    for axis in range(out.ndim):
        out = apply_along_axis(func, axis, out, widths[axis], axis, kwargs)
    return out


def pad(array, pad_width, mode: str = "constant", **kwargs):
    """Pad ``array``; ``mode`` is ``'constant'`` (``constant_values``), ``'edge'``,
    ``'wrap'``, ``'reflect'``/``'symmetric'`` (``reflect_type``), ``'linear_ramp'``
    (``end_values``), ``'maximum'``/``'minimum'``/``'mean'``/``'median'``
    (``stat_length``) or ``'empty'``."""
    check_arraylike("pad", array)
    if callable(mode):
        return _pad_with_function(array, pad_width, mode, kwargs)
    if mode not in _PAD_KWARGS:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    unsupported = set(kwargs) - set(_PAD_KWARGS[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    array = _result(array)
    widths = _pad_widths(pad_width, array.ndim)
    if array.ndim == 0:
        return array
    if mode == "constant":
        constant_values = kwargs.get("constant_values", 0)
        dt = array.dtype
        values = np.asarray(constant_values) if not hasattr(constant_values, "aval") else None
        if values is not None and values.ndim == 0:
            return _result(lax.pad(array, np.asarray(values, dt),
                                   [(lo, hi, 0) for lo, hi in widths]))
        if values is None:
            if constant_values.ndim != 0:
                raise NotImplementedError("pad: array-valued constant_values must be concrete")
            return _result(lax.pad(array, lax.convert_element_type(constant_values, dt),
                                   [(lo, hi, 0) for lo, hi in widths]))
        per_axis = np.broadcast_to(values, (array.ndim, 2))
        out = array
        for ax, ((lo, hi), (vlo, vhi)) in enumerate(zip(widths, per_axis)):
            for w, v, before in ((lo, vlo, True), (hi, vhi, False)):
                if w:
                    cfg = [(0, 0, 0)] * array.ndim
                    cfg[ax] = (w, 0, 0) if before else (0, w, 0)
                    out = lax.pad(out, np.asarray(v, dt), cfg)
        return _result(out)
    if mode == "edge":
        out = array
        for ax, (lo, hi) in enumerate(widths):
            size = out.shape[ax]
            _check_pad_axis(size, lo, hi, mode)
            parts = []
            if lo:
                parts.append(repeat(lax.slice_in_dim(out, 0, 1, 1, ax), lo, axis=ax))
            parts.append(out)
            if hi:
                parts.append(repeat(lax.slice_in_dim(out, size - 1, size, 1, ax), hi, axis=ax))
            out = lax.concatenate(parts, ax)
        return _result(out)
    if mode in ("wrap", "reflect", "symmetric"):
        reflect_type = kwargs.get("reflect_type", "even")
        if mode != "wrap" and reflect_type not in ("even", "odd"):
            raise ValueError(f"jnp.pad: reflect_type must be 'even' or 'odd', "
                             f"got {reflect_type!r}")
        from minijax.numpy._indexing import take
        out = array
        for ax, (lo, hi) in enumerate(widths):
            size = out.shape[ax]
            _check_pad_axis(size, lo, hi, mode)
            if not (lo or hi):
                continue
            if mode != "wrap" and reflect_type == "odd":
                out = _pad_reflect_odd(out, ax, lo, hi, mode)
            else:  # the source index of every output position, as numpy pads
                idx = np.pad(np.arange(size, dtype=np.int32), (lo, hi), mode=mode)
                out = take(out, idx, axis=ax)
        return _result(out)
    if mode == "empty":  # unspecified values: zeros
        return pad(array, widths, "constant")
    if mode == "linear_ramp":
        ends = _pad_pairs(kwargs.get("end_values", 0), array.ndim, "end_values")
        out = array
        for ax, ((lo, hi), (vlo, vhi)) in enumerate(zip(widths, ends)):
            n = out.shape[ax]
            _check_pad_axis(n, lo, hi, mode)
            if not (lo or hi):
                continue
            first = lax.squeeze(lax.slice_in_dim(out, 0, 1, 1, ax), (ax,))
            last = lax.squeeze(lax.slice_in_dim(out, n - 1, n, 1, ax), (ax,))
            ramp_lo = _linspace(vlo, first, lo, False, False, out.dtype, ax)
            ramp_hi = lax.rev(_linspace(vhi, last, hi, False, False, out.dtype, ax), (ax,))
            out = lax.concatenate([ramp_lo, out, ramp_hi], ax)
        return _result(out)
    # maximum / minimum / mean / median
    import minijax.numpy as jnp
    stat = getattr(jnp, {"maximum": "max", "minimum": "min"}.get(mode, mode))
    stat_length = kwargs.get("stat_length")
    lengths = None if stat_length is None else _pad_pairs(stat_length, array.ndim,
                                                          "stat_length")
    out = array
    for ax, (lo, hi) in enumerate(widths):
        n = out.shape[ax]
        _check_pad_axis(n, lo, hi, mode)
        if lengths is None:
            v_lo = v_hi = stat(out, axis=ax, keepdims=True)
        else:
            len_lo, len_hi = lengths[ax]
            if len_lo == 0 or len_hi == 0:
                raise ValueError("stat_length of 0 yields no value for padding")
            if len_lo < 0 or len_hi < 0:
                raise ValueError(f"index can't contain negative values, got stat_length "
                                 f"{stat_length!r}")
            len_lo, len_hi = min(int(len_lo), n), min(int(len_hi), n)
            v_lo = stat(lax.slice_in_dim(out, 0, len_lo, 1, ax), axis=ax, keepdims=True)
            v_hi = stat(lax.slice_in_dim(out, n - len_hi, n, 1, ax), axis=ax, keepdims=True)
        if not (lo or hi):
            continue
        vals = []
        for v in (v_lo, v_hi):
            if jnp.issubdtype(out.dtype, jnp.integer) and mode in ("mean", "median"):
                v = jnp.round(v)
            vals.append(lax.convert_element_type(v, out.dtype))
        out = lax.concatenate([repeat(vals[0], lo, axis=ax), out,
                               repeat(vals[1], hi, axis=ax)], ax)
    return _result(out)


# ---- construction ----------------------------------------------------------------------------

def _concrete_scalar(x, name: str):
    if x is None:
        return None
    if isinstance(x, Tracer):
        try:
            x = x.to_concrete("arange")
        except ConcretizationTypeError as e:
            raise type(e)(f"jnp.arange argument '{name}' must be a static (concrete) value, "
                          f"not a traced array: its value sets the size of the result. Pass "
                          f"a Python number (mark it static in jit). {e}") from None
    if np.ndim(x) != 0:
        raise ValueError(f"jax.numpy.arange: arguments must be scalars; got {name}={x}")
    return x


def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
    """Evenly spaced values in ``[start, stop)``; the bounds must be static."""
    return place(_arange(start, stop, step, dtype), device, out_sharding)


def _arange(start, stop, step, dtype):
    if any(type(v) is DimExpr for v in (start, stop, step)):
        return _arange_symbolic(start, stop, step, dtype)
    start_name = "stop" if stop is None and step is None else "start"
    start = _concrete_scalar(start, start_name)
    stop = _concrete_scalar(stop, "stop")
    step = _concrete_scalar(step, "step")
    given = [v for v in (start, stop, step) if v is not None]
    if any(np.iscomplexobj(v) for v in given):
        raise ValueError("arange does not support complex start/stop/step")
    if dtype is None:
        dtype, _ = dtypes.result_type(*((dtypes.dtype_of(v), is_python_scalar(v))
                                        for v in given))
        dtype = dtypes.canonicalize(dtype)
    else:
        dtype = dtypes.check_user_dtype(dtype, "arange")
    if stop is None:
        start, stop = 0, start
    start_v, stop_v = np.asarray(start).item(), np.asarray(stop).item()
    if step is not None:
        step_v = np.asarray(step).item()
        if step_v == 0:
            raise ZeroDivisionError("arange: step must not be zero")  # as jax (and Python)
        size = max(0, int(np.ceil((stop_v - start_v) / step_v)))
        work = dtypes.float32 if dtypes.is_float(dtype) and dtype.itemsize < 4 else dtype
        iota = lax.iota(work, size)
        out = lax.add(np.asarray(start_v, work), lax.mul(np.asarray(step_v, work), iota))
        return lax.convert_element_type(out, dtype)
    if start_v == 0:
        return lax.iota(dtype, max(0, int(np.ceil(stop_v))))
    size = max(0, int(np.ceil(stop_v - start_v)))
    return lax.add(np.asarray(start_v, dtype), lax.iota(dtype, size))


def _arange_symbolic(start, stop, step, dtype):
    """``arange`` whose bounds involve symbolic dimensions (integers only, as jax)."""
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    for v in (start, stop, step):
        if type(v) is not DimExpr and not isinstance(v, (int, np.integer)):
            raise TypeError("arange with symbolic dimensions takes integer start, stop and "
                            f"step, got {v!r}")
    dtype = dtypes.canonicalize(dtypes.int64) if dtype is None else \
        dtypes.check_user_dtype(dtype, "arange")
    if type(step) is DimExpr or step <= 0:
        raise NotImplementedError("arange with symbolic dimensions needs a positive "
                                  "constant step")
    size = core_max_dim(0, (stop - start + step - 1) // step)
    out = lax.iota(dtype, size)
    if step != 1:
        out = lax.mul(out, lax.full((), step, dtype))
    if not (type(start) is not DimExpr and start == 0):
        out = lax.add(out, lax.convert_element_type(lax.dim_as_value(start), dtype))
    return out


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype=None, axis: int = 0, *, device=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (inclusive if ``endpoint``)."""
    return place(_linspace(start, stop, num, endpoint, retstep, dtype, axis), device)


def _linspace(start, stop, num, endpoint, retstep, dtype, axis):
    num = _static_int(num, "linspace num")
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    check_arraylike("linspace", start, stop)
    if dtype is None:
        dt, _ = dtypes.result_type(*((get_aval(v).dtype, get_aval(v).weak_type)
                                     for v in (start, stop)))
        dt = dt if dtypes.is_inexact(dt) else dtypes.default_float()
    else:
        dt = dtypes.canonicalize(dtype)
    work = dt if dtypes.is_inexact(dt) else dtypes.default_float()
    start = convert(start, work) if not hasattr(start, "aval") else lax.convert_element_type(
        start, work)
    stop = convert(stop, work) if not hasattr(stop, "aval") else lax.convert_element_type(
        stop, work)
    bshape = list(broadcast_shapes(get_aval(start).shape, get_aval(stop).shape))
    start_b = broadcast_to_shape(start, tuple(bshape))
    stop_b = broadcast_to_shape(stop, tuple(bshape))
    axis = len(bshape) + axis + 1 if axis < 0 else axis
    bshape.insert(axis, 1)
    div = (num - 1) if endpoint else num
    if num > 1:
        delta = lax.div(lax.sub(stop, start), np.asarray(div, work))
        real = np.finfo(work).dtype
        iota_shape = [1] * len(bshape)
        iota_shape[axis] = div
        step = lax.div(lax.reshape(lax.iota(real, div), iota_shape), np.asarray(div, real))
        step = lax.convert_element_type(step, work)
        shape = list(bshape)
        shape[axis] = div

        def bcast(v):
            return broadcast_to_shape(v, tuple(shape))
        one_minus = lax.sub(np.asarray(1, work), step)
        out = lax.add(lax.mul(bcast(lax.reshape(start_b, bshape)), bcast(one_minus)),
                      lax.mul(bcast(lax.reshape(stop_b, bshape)), bcast(step)))
        if endpoint:
            out = lax.concatenate([out, lax.expand_dims(stop_b, (axis,))], axis)
    elif num == 1:
        delta = np.asarray(np.nan, work) if endpoint else lax.sub(stop, start)
        out = lax.reshape(start_b, bshape)
    else:
        delta = np.asarray(np.nan, work)
        shape = list(bshape)
        shape[axis] = 0
        out = lax.broadcast_in_dim(np.asarray(0, work), shape, ())
    if dtypes.is_int(dt) and not dtypes.is_int(get_aval(out).dtype):
        out = lax.floor(out)
    result = _result(lax.convert_element_type(out, dt))
    return (result, _result(delta)) if retstep else result


def eye(N: int, M: int | None = None, k: int = 0, dtype=None, *, device=None):
    """A 2-D array with ones on the ``k``-th diagonal and zeros elsewhere."""
    return place(_eye(N, M, k, dtype), device)


def _eye(N, M, k, dtype):
    dt = dtypes.canonicalize(dtype) if dtype is not None else dtypes.default_float()
    n = N if type(N) is DimExpr else _static_int(N, "eye N")
    m = n if M is None else M if type(M) is DimExpr else _static_int(M, "eye M")
    if n < 0 or m < 0:
        raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
    i = lax.broadcasted_iota(dtypes.int32, (n, m), 0)
    j = lax.broadcasted_iota(dtypes.int32, (n, m), 1)
    if isinstance(k, Tracer) or hasattr(k, "aval"):
        k = lax.convert_element_type(k, dtypes.int32)
    else:
        try:
            k = np.asarray(operator.index(k), dtypes.int32)
        except TypeError:
            raise ValueError(f"k must be a scalar integer; got {k!r}") from None
    return lax.convert_element_type(lax.eq(lax.add(i, k), j), dt)


def identity(n: int, dtype=None):
    """The ``n`` x ``n`` identity matrix."""
    return eye(n, dtype=dtype)


def _tri_mask(shape: tuple, k: int, lower: bool, fname: str):
    if len(shape) < 2:
        raise ValueError(f"Argument to jax.numpy.{fname} must be at least 2D, got shape "
                         f"{shape}")
    n, m = shape[-2:]
    i = lax.add(lax.broadcasted_iota(dtypes.int32, (n, m), 0), np.asarray(k, dtypes.int32))
    j = lax.broadcasted_iota(dtypes.int32, (n, m), 1)
    mask = lax.ge(i, j) if lower else lax.le(i, j)
    return lax.broadcast_in_dim(mask, shape, (len(shape) - 2, len(shape) - 1))


def tril(m, k: int = 0):
    """``m`` with the elements above the ``k``-th diagonal set to zero."""
    check_arraylike("tril", m)
    m = _result(m)
    mask = _tri_mask(m.shape, operator.index(k), True, "tril")
    return lax.select(mask, m, lax.broadcast_in_dim(np.zeros((), m.dtype), m.shape, ()))


def triu(m, k: int = 0):
    """``m`` with the elements below the ``k``-th diagonal set to zero."""
    check_arraylike("triu", m)
    m = _result(m)
    mask = _tri_mask(m.shape, operator.index(k), False, "triu")
    return lax.select(mask, m, lax.broadcast_in_dim(np.zeros((), m.dtype), m.shape, ()))


def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
    """An array like ``a`` (its shape and dtype unless given) filled with ``fill_value``;
    laid out as ``a`` is when ``a`` is an array sharded over several devices (and no
    ``device``/``out_sharding`` is given), as jax's."""
    return _place_like(_full_like(a, fill_value, dtype, shape), a, dtype, shape, device,
                       out_sharding)


def _place_like(out, a, dtype, shape, device, out_sharding):
    """``out`` placed as asked, else (for an array ``a`` over several devices, of a strong
    type unless ``dtype`` is given, and of ``out``'s shape unless ``a`` is replicated)
    with ``a``'s sharding, as jax's ``full_like`` keeps it."""
    if device is None and out_sharding is None and type(a) is _ArrayType:
        sh = a.sharding
        if (type(sh) is not _SingleDeviceSharding and not (dtype is None and a.weak_type)
                and (shape is None or tuple(out.shape) == tuple(a.shape)
                     or sh.is_fully_replicated)):
            from minijax.runtime.transfer import device_put
            return device_put(out, sh)
    return place(out, device, out_sharding)


def _full_like(a, fill_value, dtype, shape):
    if _is_shape_dtype_like(a):
        # jax takes any object with .shape and .dtype (a ShapeDtypeStruct): a strong type
        check_arraylike("full_like", fill_value)
        aval = ShapedArray(a.shape, dtypes.canonicalize(a.dtype))
    else:
        check_arraylike("full_like", a, fill_value)
        aval = get_aval(a)
    weak = dtype is None and aval.weak_type
    dt = aval.dtype if dtype is None else dtypes.canonicalize(dtype)
    shape = aval.shape if shape is None else canonicalize_shape(shape, "shape of full_like")
    if hasattr(fill_value, "aval"):
        value = lax.convert_element_type(fill_value, dt, weak)
    elif np.ndim(fill_value) == 0 and is_python_scalar(fill_value):
        value = convert(fill_value, dt, weak)
    else:
        value = np.asarray(fill_value, dt)
    return broadcast_to(value, shape)


def _is_shape_dtype_like(a) -> bool:
    return (not hasattr(a, "aval") and not isinstance(a, (np.ndarray, np.generic))
            and hasattr(a, "shape") and isinstance(getattr(a, "dtype", None), np.dtype))


@keys_move
def zeros_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    """Zeros with the shape and dtype of ``a``."""
    return _place_like(_full_like(a, 0, dtype, shape), a, dtype, shape, device, out_sharding)


def ones_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    """Ones with the shape and dtype of ``a``."""
    return _place_like(_full_like(a, 1, dtype, shape), a, dtype, shape, device, out_sharding)


def empty_like(a, dtype=None, shape=None, *, device=None):
    """Like ``zeros_like`` (minijax arrays are always initialized)."""
    return _place_like(_full_like(a, 0, dtype, shape), a, dtype, shape, device, None)


def astype(x, dtype, /, *, copy: bool = False, device=None):
    """``x`` converted to ``dtype`` (complex to bool compares with zero)."""
    check_arraylike("astype", x)
    dt = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype, "astype")
    aval = get_aval(x)
    if dtypes.is_complex(aval.dtype) and dt == dtypes.bool_:
        return lax.ne(x, np.zeros((), aval.dtype))
    return _result(lax.convert_element_type(x, dt))

