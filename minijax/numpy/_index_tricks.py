"""Index construction and index-based updates of minijax.numpy: ``meshgrid``, ``indices``,
``ix_``, ``mgrid``/``ogrid``, ``r_``/``c_``/``s_``/``index_exp``, the triangle and diagonal
index helpers, ``ravel_multi_index``/``unravel_index``, and the functional versions of
NumPy's in-place ``put``, ``put_along_axis``, ``place`` and ``fill_diagonal`` (which need
``inplace=False``: minijax arrays are immutable).
"""

from __future__ import annotations

import math
import operator

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.numpy._creation import array
from minijax.numpy._promote import broadcast_to_shape, ensure_array, promote_dtypes
from minijax.numpy._setops import concrete, nonzero
from minijax.numpy._shape import (arange, concatenate, expand_dims, linspace, ravel, reshape,
                                  stack, tile, transpose, tril, triu)
from minijax.numpy._ufuncs import clip, divmod as divmod_, where_


def _shape(x) -> tuple:
    return get_aval(x).shape


def _static_int(x, what: str) -> int:
    try:
        return operator.index(x)
    except TypeError:
        from minijax.core.errors import ConcretizationTypeError
        raise ConcretizationTypeError(f"{what} must be a static integer, got {x!r}") from None


# ---- grids --------------------------------------------------------------------------------------

def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    """Coordinate arrays from 1-D coordinate vectors (``'xy'``: the first two axes swapped,
    as for plotting; ``'ij'``: matrix indexing); ``sparse`` keeps them broadcastable."""
    args = [ensure_array(_arraylike("meshgrid", x)) for x in xi]
    if not copy:
        raise ValueError("jax.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    if any(len(_shape(a)) != 1 for a in args):
        raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                         f"{[_shape(a) for a in args]}")
    if indexing == "xy" and len(args) >= 2:
        args[0], args[1] = args[1], args[0]
    shape = [1 if sparse else _shape(a)[0] for a in args]
    out = []
    for i, a in enumerate(args):
        s = shape[:i] + [_shape(a)[0]] + shape[i + 1:] if sparse else shape
        out.append(lax.broadcast_in_dim(a, tuple(s), (i,)))
    if indexing == "xy" and len(args) >= 2:
        out[0], out[1] = out[1], out[0]
    return out


def indices(dimensions, dtype=None, sparse: bool = False):
    """The index of each position of a grid of shape ``dimensions``: one array per dimension,
    stacked (or a tuple of broadcastable arrays if ``sparse``)."""
    dtype = dtypes.check_user_dtype(int if dtype is None else dtype, "indices")
    dims = tuple(_static_int(d, "dimensions argument of jnp.indices") for d in dimensions)
    n = len(dims)
    out = []
    for i, d in enumerate(dims):
        s = (1,) * i + (d,) + (1,) * (n - i - 1) if sparse else dims
        out.append(lax.broadcast_in_dim(lax.iota(dtype, d), s, (i,)))
    if sparse:
        return tuple(out)
    return stack(out, 0) if out else lax.broadcast_in_dim(np.zeros((), dtype), (0,), ())


def ix_(*args) -> tuple:
    """An open mesh from 1-D index arrays: ``a[ix_(rows, cols)]`` is the cross product."""
    out = []
    n = len(args)
    for i, a in enumerate(args):
        a = ensure_array(_arraylike("ix_", a))
        if len(_shape(a)) != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{_shape(a)}")
        if get_aval(a).dtype == dtypes.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        shape = [1] * n
        shape[i] = _shape(a)[0]
        if _shape(a)[0] == 0:
            out.append(lax.broadcast_in_dim(np.zeros((), dtypes.default_int()), tuple(shape), ()))
        else:
            out.append(lax.broadcast_in_dim(a, tuple(shape), (i,)))
    return tuple(out)


def _grid_1d(s: slice, name: str):
    def value(v, what):
        if hasattr(v, "aval"):
            v = concrete(v, f"slice {what} of jnp.{name}")[()]
        return v
    start = value(s.start, "start") or 0
    stop = value(s.stop, "stop")
    step = value(s.step, "step") or 1
    if np.iscomplex(step):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


class _Mgrid:
    """``mgrid[0:3, 0:4]``: a dense grid of coordinates (a complex step ``5j`` means five
    points, endpoints included)."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "mgrid")
        parts = promote_dtypes(*(_grid_1d(k, "mgrid") for k in key))
        grids = meshgrid(*parts, indexing="ij")
        return stack(grids, 0) if grids else arange(0)


class _Ogrid:
    """``ogrid[0:3, 0:4]``: an open (broadcastable) grid of coordinates."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "ogrid")
        parts = promote_dtypes(*(_grid_1d(k, "ogrid") for k in key))
        return meshgrid(*parts, indexing="ij", sparse=True)


mgrid = _Mgrid()
ogrid = _Ogrid()


class _AxisConcat:
    """Concatenation by index syntax: ``r_[a, b, 0:3]`` (``c_`` stacks as columns). A first
    string ``'axis,ndmin,trans1d'`` (or ``'r'``/``'c'``) sets the details, as in NumPy."""

    axis = 0
    ndmin = 1
    trans1d = -1
    name = "r_"

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive == "r":
                params[-1] = 0
            elif directive == "c":
                params[-1] = 1
            else:
                vec = directive.split(",")
                vec = vec + params[len(vec):] if len(vec) < 4 else vec[:3] + [params[-1]]
                try:
                    params = [int(v) for v in vec]
                except ValueError as e:
                    raise ValueError(f"could not understand directive {directive!r}") from e
        axis, ndmin, trans1d, matrix = params
        out = []
        for item in items:
            if isinstance(item, slice):
                new, item_ndim = _grid_1d(item, self.name), 0
            elif isinstance(item, str):
                raise ValueError("string directive must be placed at the beginning")
            else:
                new = array(item)
                item_ndim = get_aval(new).ndim
            new = array(new, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                order = tuple(range(ndmin))
                shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
                new = transpose(new, order[shift:] + order[:shift])
            out.append(new)
        res = concatenate(tuple(out), axis=axis)
        if matrix != -1 and get_aval(res).ndim == 1:
            res = expand_dims(res, matrix)
        return res

    def __len__(self) -> int:
        return 0


class RClass(_AxisConcat):
    """``r_[...]``: concatenate along the first axis."""


class CClass(_AxisConcat):
    """``c_[...]``: concatenate along the last axis, 1-D items as columns."""

    axis = -1
    ndmin = 2
    trans1d = 0
    name = "c_"


r_ = RClass()
c_ = CClass()
s_ = np.s_
index_exp = np.index_exp


# ---- triangles and diagonals --------------------------------------------------------------------

def _triu_size(n: int, m: int, k: int) -> int:
    """The number of entries of an ``n x m`` array on or above the ``k``-th diagonal."""
    if k < 0:
        return n * m - _triu_size(m, n, 1 - k)
    if k >= m:
        return 0
    mk = min(n, m - k)
    return mk * (mk + 1) // 2 + mk * (m - k - mk)


def _ones(n: int, m: int):
    return lax.broadcast_in_dim(np.ones((), dtypes.float32), (n, m), ())


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """The (row, column) indices of the lower triangle (on and below the ``k``-th
    diagonal) of an ``n x m`` array."""
    n = _static_int(n, "n argument of jnp.tril_indices")
    k = _static_int(k, "k argument of jnp.tril_indices")
    m = n if m is None else _static_int(m, "m argument of jnp.tril_indices")
    return nonzero(tril(_ones(n, m), k=k), size=_triu_size(m, n, -k))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
    """The (row, column) indices of the upper triangle (on and above the ``k``-th
    diagonal) of an ``n x m`` array."""
    n = _static_int(n, "n argument of jnp.triu_indices")
    k = _static_int(k, "k argument of jnp.triu_indices")
    m = n if m is None else _static_int(m, "m argument of jnp.triu_indices")
    return nonzero(triu(_ones(n, m), k=k), size=_triu_size(n, m, k))


def _arraylike(name: str, x):
    if isinstance(x, (list, tuple)):
        raise TypeError(f"{name} requires ndarray or scalar arguments, got "
                        f"{type(x).__name__}. Use minijax.numpy.asarray(...) to convert it.")
    return x


def _matrix_shape(arr, name: str) -> tuple:
    _arraylike(name, arr)
    shape = tuple(arr.shape) if hasattr(arr, "shape") else _shape(ensure_array(arr))
    if len(shape) != 2:
        raise ValueError("Only 2-D inputs are accepted")
    return shape


def tril_indices_from(arr, k: int = 0) -> tuple:
    """:func:`tril_indices` for the shape of the 2-D ``arr``."""
    n, m = _matrix_shape(arr, "tril_indices_from")
    return tril_indices(n, k=k, m=m)


def triu_indices_from(arr, k: int = 0) -> tuple:
    """:func:`triu_indices` for the shape of the 2-D ``arr``."""
    n, m = _matrix_shape(arr, "triu_indices_from")
    return triu_indices(n, k=k, m=m)


def diag_indices(n: int, ndim: int = 2) -> tuple:
    """The indices of the main diagonal of an ``n x ... x n`` array (``ndim`` dimensions)."""
    n = _static_int(n, "'n' argument of jnp.diag_indices()")
    ndim = _static_int(ndim, "'ndim' argument of jnp.diag_indices()")
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    dt = dtypes.default_int() if n < 2**31 else dtypes.int64
    return (lax.iota(dt, n),) * ndim


def diag_indices_from(arr) -> tuple:
    """:func:`diag_indices` for the (square, at least 2-D) ``arr``."""
    shape = _shape(ensure_array(_arraylike("diag_indices_from", arr)))
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], ndim=len(shape))


def mask_indices(n: int, mask_func, k: int = 0, *, size: int | None = None) -> tuple:
    """The indices where ``mask_func(ones((n, n)), k)`` is non-zero (``size`` as for
    :func:`nonzero`)."""
    return nonzero(mask_func(_ones(n, n), k), size=size)


def _tile_to_size(arr, size: int):
    n = _shape(arr)[0]
    if n < size:
        arr = tile(arr, -(-size // n))
    return arr[:size] if _shape(arr)[0] > size else arr


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
    """``a`` with its main diagonal set to ``val`` (repeated as needed). Needs
    ``inplace=False``."""
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    a, val = ensure_array(a), ensure_array(val)
    shape = _shape(a)
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shape) > 2 and not all(d == shape[0] for d in shape[1:]):
        raise ValueError("All dimensions of input must be of equal length")
    n = min(shape)
    idx = diag_indices(n, len(shape))
    return a.at[idx].set(val if not _shape(val) else _tile_to_size(ravel(val), n))


# ---- flat and multi-dimensional indices ---------------------------------------------------------

def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C", *, dtype=None):
    """Flat indices into an array of shape ``dims`` from a tuple of index arrays
    (``mode``: ``'raise'`` needs concrete indices; ``'wrap'``, ``'clip'``, ``'ignore'``)."""
    if len(multi_index) != len(dims):
        raise ValueError(f"len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
    dims = tuple(_static_int(d, "dims argument of ravel_multi_index()") for d in dims)
    idx = [ensure_array(i) for i in multi_index]
    if dtype is None:
        from minijax.numpy._dtypes_api import result_type
        dtype = result_type(int, *idx)
    else:
        dtype = dtypes.check_user_dtype(dtype, "ravel_multi_index")
    if not dtypes.is_int(dtype):
        raise ValueError(f"dtype={dtype} is not an integer type.")
    if math.prod(dims) - 1 > np.iinfo(dtype).max:
        raise ValueError(f"jnp.ravel_multi_index: dtype={dtype} not large enough to hold "
                         f"flattened index for dims={dims}. Use the dtype argument to pass a "
                         f"suitable dtype.")
    for i in idx:
        if not dtypes.is_int(get_aval(i).dtype):
            raise TypeError("only int indices permitted")
    if mode == "raise":
        for i, d in zip(idx, dims):
            v = concrete(i, "ravel_multi_index with mode='raise' (use mode='wrap' or "
                            "mode='clip' under jit)")
            if ((v < 0) | (v >= d)).any():
                raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        idx = [clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    elif mode == "wrap":
        from minijax.numpy._ufuncs import remainder
        idx = [remainder(i, d) for i, d in zip(idx, dims)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or "
                         f"'ignore'.")
    if order == "F":
        strides = np.cumprod((1,) + dims[:-1])
    elif order == "C":
        strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
    else:
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    result = lax.convert_element_type(np.zeros((), dtype), dtype)
    for i, s in zip(idx, strides):
        term = lax.mul(lax.convert_element_type(i, dtype), np.asarray(int(s), dtype))
        from minijax.numpy._ufuncs import add
        result = add(result, term)
    return result


def unravel_index(indices, shape) -> tuple:
    """The multi-dimensional indices of flat ``indices`` into an array of ``shape``
    (out-of-bounds indices are clipped, as in jax)."""
    idx = ensure_array(_arraylike("unravel_index", indices))
    try:
        shape = list(shape)
    except TypeError:
        shape = [shape]
    if any(np.ndim(s) != 0 for s in shape):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    out = [0] * len(shape)
    for i, s in reversed(list(enumerate(shape))):
        idx, out[i] = divmod_(idx, s)
    oob_pos = lax.gt(idx, np.zeros((), get_aval(idx).dtype))
    if dtypes.is_unsigned(get_aval(idx).dtype):
        oob_neg = np.asarray(False)
    else:
        oob_neg = lax.lt(idx, np.asarray(-1, get_aval(idx).dtype))
    return tuple(where_(oob_pos, s - 1, where_(oob_neg, 0, i)) for s, i in zip(shape, out))


# ---- functional versions of NumPy's in-place updates --------------------------------------------

def put(a, ind, v, mode: str | None = None, *, inplace: bool = True):
    """``a`` with the flat positions ``ind`` set to ``v`` (repeated as needed); out-of-bounds
    indices are dropped (``mode=None``), clipped or wrapped. Needs ``inplace=False``."""
    if inplace:
        raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    arr, ind, v = ensure_array(a), ravel(ensure_array(ind)), ravel(ensure_array(v))
    if not get_aval(arr).size or not _shape(ind)[0] or not _shape(v)[0]:
        return arr
    v = _tile_to_size(v, _shape(ind)[0])
    size = get_aval(arr).size
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        ind, scatter_mode = clip(ind, 0, size - 1), "promise_in_bounds"
    elif mode == "wrap":
        from minijax.numpy._ufuncs import remainder
        ind, scatter_mode = remainder(ind, size), "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
    return arr.at[unravel_index(ind, _shape(arr))].set(v, mode=scatter_mode)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True, *,
                   mode: str | None = None):
    """``arr`` with ``values`` put at ``indices`` along ``axis`` (the other axes matched
    elementwise, as in :func:`take_along_axis`). Needs ``inplace=False``."""
    if inplace:
        raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX "
                         "arrays are immutable. Pass inplace=False to instead return an updated "
                         "array.")
    arr, idx, values = ensure_array(arr), ensure_array(indices), ensure_array(values)
    original = _shape(arr)
    if axis is None:
        arr, axis = ravel(arr), 0
    if len(_shape(arr)) != len(_shape(idx)):
        raise ValueError(f"put_along_axis arguments 'arr' and 'indices' must have same ndim. "
                         f"Got arr.ndim={len(_shape(arr))} and indices.ndim={len(_shape(idx))}.")
    try:
        values = broadcast_to_shape(values, _shape(idx))
    except ValueError:
        raise ValueError(f"put_along_axis argument 'values' must be broadcastable to "
                         f"'indices'. Got values.shape={_shape(values)} and "
                         f"indices.shape={_shape(idx)}.") from None
    axis = axis + len(_shape(arr)) if axis < 0 else axis
    where = list(_open_grid(_shape(arr)))
    where[axis] = idx
    result = arr.at[tuple(where)].set(values, mode=mode)
    return reshape(result, original) if len(original) != len(_shape(result)) else result


def _open_grid(shape: tuple) -> tuple:
    """``indices(shape, sparse=True)`` (under a name the ``indices`` parameters of the
    functions above do not hide)."""
    return indices(shape, sparse=True)


def place(arr, mask, vals, *, inplace: bool = True):
    """``arr`` with the positions where ``mask`` is true set to ``vals``, in order (repeated
    as needed). Needs ``inplace=False``."""
    data, mask, vals = ensure_array(arr), ensure_array(mask), ravel(ensure_array(vals))
    if inplace:
        raise ValueError("jax.numpy.place cannot modify arrays in-place, because JAX arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    size = get_aval(data).size
    if size != get_aval(mask).size:
        raise ValueError("place: arr and mask must be the same size")
    if not _shape(vals)[0]:
        raise ValueError("Cannot place values from an empty array")
    if not size:
        return data
    idx = nonzero(ravel(mask), size=size, fill_value=size)[0]
    vals = _tile_to_size(vals, size)
    return reshape(ravel(data).at[idx].set(vals, mode="drop"), _shape(data))
