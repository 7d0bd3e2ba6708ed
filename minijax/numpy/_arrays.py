"""Array manipulation of minijax.numpy: diagonals and triangles (``diag``, ``diagflat``,
``diagonal``, ``trace``, ``tri``), rotations and rolls, ``append``/``insert``/``delete``,
``resize``, stacking and splitting (``block``, ``column_stack``, ``dstack``, ``concat``,
``unstack``, ``hsplit``/``vsplit``/``dsplit``), selection (``choose``, ``select``,
``piecewise``), products (``kron``, ``cross``, ``matvec``, ``vecmat``, ``vecdot``,
``einsum_path``), ``apply_along_axis``/``apply_over_axes``, ``array_equal``/``array_equiv``,
``broadcast_shapes``, ``matrix_transpose``, ``copy`` and ``diff``/``ediff1d``.

Most are compositions of the existing functions, with jax.numpy's semantics (dtypes,
errors, keyword arguments).
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.errors import IncompatibleShapesError
from minijax.core.trace import get_aval
from minijax.numpy._creation import array, asarray
from minijax.numpy._promote import (broadcast_arrays, broadcast_shapes as _broadcast_shapes,
                                    broadcast_to_shape, ensure_array, promote_dtypes)
from minijax.numpy._reductions import all as all_, canonicalize_axis, sum as sum_
from minijax.numpy._setops import concrete, nonzero
from minijax.numpy._shape import (arange, atleast_2d, atleast_3d, concatenate,
                                  expand_dims, eye, flip, moveaxis, ravel, reshape, split, stack,
                                  tile, transpose, zeros_like)
from minijax.numpy._sorting import argsort
from minijax.numpy._ufuncs import clip, equal, isnan, logical_and, logical_or, where_
from minijax.numpy._vectorize import vectorize
from minijax.numpy._extended import keys_move


def _array(name: str, x):
    if isinstance(x, (list, tuple)):
        raise TypeError(f"{name} requires ndarray or scalar arguments, got "
                        f"{type(x).__name__}. Use minijax.numpy.asarray(...) to convert it.")
    return ensure_array(x)


def _static_int(x, what: str) -> int:
    try:
        return operator.index(x)
    except TypeError:
        from minijax.core.errors import ConcretizationTypeError
        raise ConcretizationTypeError(f"{what} must be a static integer, got {x!r}") from None


def _shape(x) -> tuple:
    return get_aval(x).shape


# ---- diagonals and triangles -------------------------------------------------------------------

def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """The ``offset`` diagonal of the 2-D subarrays on ``axis1``/``axis2``, as the last axis."""
    a = _array("diagonal", a)
    shape = _shape(a)
    if len(shape) < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    offset = _static_int(offset, "'offset' argument of jnp.diagonal()")
    ax1, ax2 = canonicalize_axis(axis1, len(shape)), canonicalize_axis(axis2, len(shape))
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 cannot be the same")
    a = moveaxis(a, (ax1, ax2), (-2, -1))
    n = max(0, min(shape[ax1] + min(offset, 0), shape[ax2] - max(offset, 0)))
    i = np.arange(n)
    j = np.arange(abs(offset), abs(offset) + n)
    return a[..., i, j] if offset >= 0 else a[..., j, i]


def diag(v, k: int = 0):
    """The ``k``-th diagonal of a 2-D array, or a 2-D array with 1-D ``v`` on that diagonal."""
    v = _array("diag", v)
    k = operator.index(k)
    shape = _shape(v)
    if len(shape) == 1:
        n = shape[0] + abs(k)
        v = lax.pad(v, np.zeros((), get_aval(v).dtype), ((max(0, k), max(0, -k), 0),))
        return where_(eye(n, k=k, dtype=bool), v, zeros_like(v))
    if len(shape) == 2:
        return diagonal(v, offset=k)
    raise ValueError("diag input must be 1d or 2d")


def diagflat(v, k: int = 0):
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal."""
    v = ravel(_array("diagflat", v))
    k = operator.index(k)
    n = _shape(v)[0] + abs(k)
    out = lax.broadcast_in_dim(np.zeros((), get_aval(v).dtype), (n * n,), ())
    i = np.arange(n - abs(k))
    flat = i + k + i * n if k >= 0 else i + (i - k) * n
    return reshape(out.at[flat].set(v), (n, n))


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
    """The sum along the ``offset`` diagonal of the 2-D subarrays on ``axis1``/``axis2``."""
    a = _array("trace", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
    shape = _shape(a)
    ax1, ax2 = canonicalize_axis(axis1, len(shape)), canonicalize_axis(axis2, len(shape))
    if ax1 == ax2:
        raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
    if dtype is not None:
        dtype = dtypes.check_user_dtype(dtype, "trace")
    a = moveaxis(a, (ax1, ax2), (-2, -1))
    mask = eye(shape[ax1], shape[ax2], k=offset, dtype=bool)
    return sum_(where_(mask, a, zeros_like(a)), axis=(-2, -1), dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype=None):
    """An ``N x M`` array with ones at and below the ``k``-th diagonal, zeros elsewhere."""
    dtype = dtypes.float32 if dtype is None else dtypes.check_user_dtype(dtype, "tri")
    N = _static_int(N, "N argument of jnp.tri")
    M = N if M is None else _static_int(M, "M argument of jnp.tri")
    k = _static_int(k, "k argument of jnp.tri")
    rows = lax.broadcasted_iota(dtypes.int32, (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.int32, (N, M), 1)
    mask = lax.ge(lax.add(rows, np.asarray(k, dtypes.int32)), cols)
    return lax.convert_element_type(mask, dtype)


def matrix_transpose(x, /):
    """``x`` with its last two axes swapped."""
    x = _array("matrix_transpose", x)
    ndim = len(_shape(x))
    if ndim < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got "
                         f"ndim={ndim}")
    return lax.transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


# ---- rotation, rolling, resizing --------------------------------------------------------------

@keys_move
def rot90(m, k: int = 1, axes: tuple[int, int] = (0, 1)):
    """``m`` rotated by 90 degrees ``k`` times, from the first axis toward the second."""
    m = _array("rot90", m)
    ndim = len(_shape(m))
    if ndim < 2:
        raise ValueError(f"rot90 requires its first argument to have ndim at least two, but got "
                         f"first argument of shape {_shape(m)}, which has ndim {ndim}")
    ax1, ax2 = (canonicalize_axis(a, ndim) for a in axes)
    if ax1 == ax2:
        raise ValueError("Axes must be different")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, ax1), ax2)
    perm = list(range(ndim))
    perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
    return transpose(flip(m, ax2), perm) if k == 1 else flip(transpose(m, perm), ax2)


def _axis_tuple(axis) -> tuple:
    if isinstance(axis, (tuple, list)):
        return tuple(operator.index(a) for a in axis)
    return (operator.index(axis),)


@keys_move
def roll(a, shift, axis=None):
    """``a`` with its elements shifted by ``shift`` along ``axis`` (of the flattened array if
    None), wrapping around. ``shift`` and ``axis`` broadcast against each other (each pair
    is one roll); ``shift`` may be traced."""
    arr = _array("roll", a)
    if axis is None:
        return reshape(roll(ravel(arr), shift, 0), _shape(arr))
    ndim = len(_shape(arr))
    axes = tuple(canonicalize_axis(ax, ndim) for ax in _axis_tuple(axis))
    try:
        shifts = _axis_tuple(shift)
    except TypeError:
        shifts = None
    if shifts is not None:  # static shifts: slices and a concatenation per roll
        for ax, s in zip(*np.broadcast_arrays(np.asarray(axes), np.asarray(shifts))):
            ax, size = int(ax), _shape(arr)[int(ax)]
            if size == 0:
                continue
            i = int(-s) % size
            arr = concatenate([lax.slice_in_dim(arr, i, size, axis=ax),
                               lax.slice_in_dim(arr, 0, i, axis=ax)], axis=ax)
        return arr
    # traced shifts: a dynamic slice of the array concatenated with itself, per roll
    shift = ensure_array(shift)
    n = _broadcast_shapes(_shape(shift), (len(axes),))
    if len(n) != 1:
        raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
    shift = broadcast_to_shape(lax.convert_element_type(shift, dtypes.int32), n)
    for k, ax in enumerate(np.broadcast_to(np.asarray(axes), n)):
        ax, size = int(ax), _shape(arr)[int(ax)]
        s = lax.rem(lax.add(lax.rem(shift[k], np.int32(max(size, 1))), np.int32(max(size, 1))),
                    np.int32(max(size, 1)))
        starts = [np.int32(0)] * ndim
        starts[ax] = lax.sub(np.int32(size), s)
        arr = lax.dynamic_slice(concatenate([arr, arr], axis=ax), starts, _shape(arr))
    return arr


@keys_move
def rollaxis(a, axis: int, start: int = 0):
    """``a`` with ``axis`` moved to before ``start`` (NumPy's older :func:`moveaxis`)."""
    a = _array("rollaxis", a)
    ndim = len(_shape(a))
    start = _static_int(start, "'start' argument of jnp.rollaxis()")
    axis = canonicalize_axis(axis, ndim)
    if not -ndim <= start <= ndim:
        raise ValueError(f"start={start} must satisfy {-ndim}<=start<={ndim}")
    if start < 0:
        start += ndim
    if start > axis:
        start -= 1
    return moveaxis(a, axis, start)


def resize(a, new_shape):
    """``a`` flattened, repeated as needed and reshaped to ``new_shape``."""
    arr = ravel(_array("resize", a))
    new_shape = _axis_tuple(new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    size, n = math.prod(new_shape), _shape(arr)[0]
    if n == 0 or size == 0:
        return lax.broadcast_in_dim(np.zeros((), get_aval(arr).dtype), new_shape, ())
    arr = tile(arr, -(-size // n))[:size]
    return reshape(arr, new_shape)


# ---- inserting and deleting ---------------------------------------------------------------------

def append(arr, values, axis: int | None = None):
    """``values`` appended to ``arr`` along ``axis`` (both flattened if None)."""
    if axis is None:
        return concatenate([ravel(_array("append", arr)), ravel(_array("append", values))], 0)
    return concatenate([arr, values], axis=axis)


def insert(arr, obj, values, axis: int | None = None):
    """``arr`` with ``values`` inserted before the index (or indices, or slice) ``obj`` along
    ``axis`` (of the flattened array if None)."""
    a = _array("insert", arr)
    values = _array("insert", values)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(_static_int(axis, "axis argument of jnp.insert()"), len(_shape(a)))
    n_input = _shape(a)[axis]
    if isinstance(obj, slice):
        indices = ensure_array(np.arange(*obj.indices(n_input)).astype(dtypes.default_int()))
    else:
        indices = _array("insert", obj)
    idx_aval = get_aval(indices)
    if idx_aval.ndim > 1:
        raise ValueError(f"jnp.insert(): obj must be a slice, a one-dimensional array, or a "
                         f"scalar; got {obj}")
    if not dtypes.is_int(idx_aval.dtype):
        if idx_aval.size == 0 and not hasattr(obj, "aval"):
            indices = lax.convert_element_type(indices, dtypes.default_int())
        else:
            raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
    values = array(values, ndmin=len(_shape(a)), dtype=get_aval(a).dtype)
    if get_aval(indices).size == 1:
        index = ravel(indices)[0]
        if get_aval(indices).ndim == 0:
            values = moveaxis(values, 0, axis)
        indices = lax.broadcast_in_dim(index, (_shape(values)[axis],), ())
    n_insert = _broadcast_shapes(_shape(indices), (_shape(values)[axis],))[0]
    out_shape = list(_shape(a))
    out_shape[axis] += n_insert
    idt = get_aval(indices).dtype
    indices = where_(lax.lt(indices, np.zeros((), idt)),
                     lax.add(indices, np.asarray(n_input, idt)), indices)
    indices = clip(indices, 0, n_input)
    # where each inserted value goes: its index, plus the number of values inserted before it
    values_ind = indices.at[argsort(indices)].add(arange(n_insert, dtype=idt))
    keep = lax.broadcast_in_dim(np.asarray(True), (n_input + n_insert,), ()).at[
        values_ind].set(False)
    arr_ind = nonzero(keep, size=n_input)[0]
    out = lax.broadcast_in_dim(np.zeros((), get_aval(a).dtype), tuple(out_shape), ())
    lead = (slice(None),) * axis
    values = broadcast_to_shape(values, tuple(out_shape[:axis]) + (n_insert,)
                                + tuple(out_shape[axis + 1:]))
    out = out.at[lead + (values_ind,)].set(values)
    return out.at[lead + (arr_ind,)].set(a)


def delete(arr, obj, axis: int | None = None, *, assume_unique_indices: bool = False):
    """``arr`` without the entries at ``obj`` (an index, indices, a slice or a boolean mask)
    along ``axis`` (of the flattened array if None)."""
    a = _array("delete", arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(axis, len(_shape(a)))
    n = _shape(a)[axis]
    lead = (slice(None),) * axis
    try:
        i = operator.index(obj)
    except TypeError:
        pass
    else:
        i = canonicalize_axis(i, n)
        return concatenate([a[lead + (slice(0, i),)], a[lead + (slice(i + 1, None),)]],
                           axis=axis)
    if isinstance(obj, slice):
        obj = np.arange(n)[obj]
        assume_unique_indices = True
    if isinstance(obj, (list, tuple)):
        raise TypeError("delete requires ndarray or scalar arguments, got a "
                        f"{type(obj).__name__} for obj")
    obj_dt = get_aval(obj).dtype if hasattr(obj, "aval") else np.asarray(obj).dtype
    if dtypes.is_int(obj_dt) and assume_unique_indices:
        idx = ravel(ensure_array(obj))
        idt = get_aval(idx).dtype
        idx = clip(where_(lax.lt(idx, np.zeros((), idt)), lax.add(idx, np.asarray(n, idt)),
                          idx), 0, n)
        from minijax.numpy._sorting import sort
        idx = lax.sub(sort(idx), arange(_shape(idx)[0], dtype=idt))
        m = _shape(idx)[0]
        keep = arange(n - m, dtype=idt)
        shift = sum_(lax.ge(lax.broadcast_in_dim(keep, (m, n - m), (1,)),
                            lax.broadcast_in_dim(idx, (m, n - m), (0,))), axis=0, dtype=idt)
        return a[lead + (lax.add(keep, shift),)]
    values = concrete(obj, "delete")
    if dtypes.is_int(values.dtype):
        mask = np.ones(n, dtype=bool)
        mask[values] = False
    elif values.dtype == bool:
        if values.shape != (n,):
            raise ValueError("np.delete(arr, obj): for boolean indices, obj must be "
                             "one-dimensional with length matching specified axis.")
        mask = ~values
    else:
        raise ValueError(f"np.delete(arr, obj): got obj.dtype={values.dtype}; must be integer "
                         f"or bool.")
    return a[lead + (np.flatnonzero(mask),)]


# ---- stacking and splitting ---------------------------------------------------------------------

def concat(arrays, /, *, axis: int | None = 0):
    """The Array API name of :func:`concatenate`."""
    return concatenate(arrays, axis=axis)


def column_stack(tup):
    """1-D arrays as the columns of a 2-D array (2-D arrays as they are), side by side."""
    if hasattr(tup, "aval") or isinstance(tup, np.ndarray):
        tup = [tup[i] for i in range(_shape(ensure_array(tup))[0])]
    arrs = [ensure_array(x) for x in tup]
    return concatenate([transpose(atleast_2d(x)) if len(_shape(x)) < 2 else x for x in arrs],
                       axis=1)


def dstack(tup, dtype=None):
    """Arrays stacked along the third axis (after making them at least 3-D)."""
    if hasattr(tup, "aval") or isinstance(tup, np.ndarray):
        tup = [tup[i] for i in range(_shape(ensure_array(tup))[0])]
    arrs = [atleast_3d(ensure_array(x)) for x in tup]
    return concatenate(arrs, axis=2, dtype=dtype)


def unstack(x, /, *, axis: int = 0):
    """The slices of ``x`` along ``axis``, as a tuple."""
    x = _array("unstack", x)
    shape = _shape(x)
    if not shape:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                         "passed.")
    axis = canonicalize_axis(axis, len(shape))
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False) for i in range(shape[axis]))


def hsplit(ary, indices_or_sections):
    """Split along the second axis (the first for 1-D arrays)."""
    a = _array("hsplit", ary)
    return split(a, indices_or_sections, axis=0 if len(_shape(a)) == 1 else 1)


def vsplit(ary, indices_or_sections):
    """Split along the first axis."""
    return split(_array("vsplit", ary), indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    """Split along the third axis."""
    return split(_array("dsplit", ary), indices_or_sections, axis=2)


def _block(xs):
    """(the block, one more than its depth of list nesting)."""
    if isinstance(xs, tuple):
        raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
    if isinstance(xs, list):
        if not xs:
            raise ValueError("jax.numpy.block does not allow empty list arguments")
        parts = [_block(x) for x in xs]
        depth = parts[0][1]
        if any(d != depth for _, d in parts[1:]):
            raise ValueError("Mismatched list depths in jax.numpy.block")
        rank = max(depth, max(len(_shape(p)) for p, _ in parts))
        arrs = [reshape(p, (1,) * (rank - len(_shape(p))) + _shape(p)) for p, _ in parts]
        return concatenate(arrs, axis=-depth), depth + 1
    return ensure_array(xs), 1


def block(arrays):
    """An array assembled from nested lists of blocks (the innermost lists are joined along
    the last axis, the next ones along the one before, ...)."""
    out, _ = _block(arrays)
    return out


# ---- selection ----------------------------------------------------------------------------------

def choose(a, choices, out=None, mode: str = "raise"):
    """``choices[a[i]][i]`` elementwise (all broadcast together)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    a = _array("choose", a)
    if hasattr(choices, "aval") or isinstance(choices, np.ndarray):
        choices = [choices[i] for i in range(_shape(ensure_array(choices))[0])]
    choices = [ensure_array(c) for c in choices]
    if not dtypes.is_int(get_aval(a).dtype):
        raise ValueError("`a` array must be integer typed")
    n = len(choices)
    if mode == "raise":
        values = concrete(a, "choose with mode='raise' (use mode='wrap' or mode='clip' under "
                             "jit)")
        if ((values < 0) | (values >= n)).any():
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = lax.rem(lax.add(lax.rem(a, np.asarray(n, get_aval(a).dtype)),
                            np.asarray(n, get_aval(a).dtype)), np.asarray(n, get_aval(a).dtype))
    elif mode == "clip":
        a = clip(a, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    a, *choices = broadcast_arrays(a, *promote_dtypes(*choices))
    shape = _shape(a) if _shape(a) else _shape(choices[0]) if choices else ()
    a = broadcast_to_shape(ensure_array(a), shape)
    choices = [broadcast_to_shape(ensure_array(c), shape) for c in choices]
    return lax.select_n(lax.convert_element_type(a, dtypes.int32), *choices)


def select(condlist, choicelist, default=0):
    """The element of ``choicelist[i]`` for the first ``i`` whose ``condlist[i]`` is true,
    else ``default``."""
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if len(condlist) == 0:
        raise ValueError("condlist must be non-empty")
    conds = [_array("select", c) for c in condlist]
    choices = [_array("select", c) for c in choicelist]
    default = _array("select", default)
    choices = promote_dtypes(default, *choices)
    conds = broadcast_arrays(False, *conds)
    shape = _broadcast_shapes(*[_shape(ensure_array(c)) for c in conds],
                              *[_shape(ensure_array(c)) for c in choices])
    conds = stack([broadcast_to_shape(lax.convert_element_type(ensure_array(c), dtypes.bool_),
                                      shape) for c in conds])
    from minijax.numpy._reductions import argmax
    idx = lax.convert_element_type(argmax(conds, axis=0), dtypes.int32)
    return lax.select_n(idx, *[broadcast_to_shape(ensure_array(c), shape) for c in choices])


def piecewise(x, condlist, funclist, *args, **kw):
    """``funclist[i](x)`` (or the constant ``funclist[i]``) where ``condlist[i]``; with one
    more function than conditions, the last applies where none holds (else 0)."""
    x = _array("piecewise", x)
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funclist = funclist[-1:] + funclist[:-1]
    elif nf == nc:
        funclist = [0] + list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")
    conds = asarray(condlist, dtype=bool)
    if len(_shape(conds)) == len(_shape(x)):
        conds = expand_dims(conds, 0)
    dt = get_aval(x).dtype
    # the last condition that holds wins (NumPy applies them in order); 0 when none does
    numbers = lax.broadcast_in_dim(np.arange(1, nc + 1, dtype=np.int32), _shape(conds), (0,))
    from minijax.numpy._reductions import max as max_
    indices = max_(where_(conds, numbers, np.zeros((), dtypes.int32)), axis=0)
    branches = [(lambda x, f=f: lax.convert_element_type(ensure_array(f(x, *args, **kw)), dt))
                if callable(f) else
                (lambda x, f=f: lax.broadcast_in_dim(np.asarray(f, dt), _shape(x), ()))
                for f in funclist]
    return vectorize(lambda i, x: lax.switch(i, branches, x))(indices, x)


# ---- products -----------------------------------------------------------------------------------

def kron(a, b):
    """The Kronecker product: blocks ``a[i, j] * b``."""
    a, b = promote_dtypes(_array("kron", a), _array("kron", b))
    a, b = ensure_array(a), ensure_array(b)
    na, nb = len(_shape(a)), len(_shape(b))
    if na < nb:
        a = expand_dims(a, tuple(range(nb - na)))
    elif nb < na:
        b = expand_dims(b, tuple(range(na - nb)))
    n = len(_shape(a))
    out_shape = tuple(x * y for x, y in zip(_shape(a), _shape(b)))
    a2 = expand_dims(a, tuple(range(1, 2 * n, 2)))
    b2 = expand_dims(b, tuple(range(0, 2 * n, 2)))
    from minijax.numpy._ufuncs import multiply
    return reshape(multiply(a2, b2), out_shape)


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None):
    """The cross product of 3-element (or 2-element) vectors along the given axes."""
    a, b = _array("cross", a), _array("cross", b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if _shape(a)[-1] not in (2, 3) or _shape(b)[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if _shape(a)[-1] == 2 and _shape(b)[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    a0, a1 = a[..., 0], a[..., 1]
    a2 = a[..., 2] if _shape(a)[-1] == 3 else zeros_like(a0)
    b0, b1 = b[..., 0], b[..., 1]
    b2 = b[..., 2] if _shape(b)[-1] == 3 else zeros_like(b0)
    c = stack(broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0))
    return moveaxis(c, 0, axisc)


def _matmul(x, y):
    from minijax.numpy._linalg_ops import matmul
    return matmul(x, y)


def matvec(x1, x2, /):
    """Matrix-vector products over broadcast batch dimensions: ``(..., n, m) @ (..., m)``."""
    x1, x2 = _array("matvec", x1), _array("matvec", x2)
    return vectorize(_matmul, signature="(n,m),(m)->(n)")(x1, x2)


def vecmat(x1, x2, /):
    """Vector-matrix products ``conj(x1) @ x2`` over broadcast batch dimensions."""
    from minijax.numpy._math import conj
    x1, x2 = _array("vecmat", x1), _array("vecmat", x2)
    return vectorize(_matmul, signature="(n),(n,m)->(m)")(conj(x1), x2)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """Vector dot products ``sum(conj(x1) * x2)`` along ``axis`` over broadcast dimensions."""
    from minijax.numpy._linalg_ops import vdot
    x1, x2 = _array("vecdot", x1), _array("vecdot", x2)
    if _shape(x1)[axis] != _shape(x2)[axis]:
        raise ValueError(f"axes must match; got shapes {_shape(x1)} and {_shape(x2)} with "
                         f"axis={axis}")
    x1, x2 = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    f = functools.partial(vdot, precision=precision,
                          preferred_element_type=preferred_element_type)
    return vectorize(f, signature="(n),(n)->()")(x1, x2)


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """A contraction order for :func:`einsum` and a report of it: ``(path, description)``
    with ``path`` a list of operand-position tuples, as opt_einsum gives (computed here
    with NumPy's ``einsum_path`` on stand-in operands of the same shapes)."""
    if optimize is True:
        optimize = "optimal"
    elif optimize == "auto":  # (opt_einsum's 'auto': an exhaustive search for few operands)
        optimize = "optimal" if len(operands) <= 4 else "greedy"
    stand_ins = [np.broadcast_to(np.zeros((), dtype=np.float32), np.shape(op))
                 if not isinstance(op, str) else op for op in operands]
    if optimize is False:
        n = len(stand_ins)
        return [(0, 1)] + [(0, 1)] * (n - 2) if n > 1 else [(0,)], ""
    path, text = np.einsum_path(subscripts, *stand_ins, optimize=optimize)
    return [tuple(p) for p in path[1:]], text


# ---- applying functions along axes --------------------------------------------------------------

def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """``func1d`` applied to the 1-D slices of ``arr`` along ``axis`` (vectorized with
    ``vmap``); its result's dimensions replace ``axis``."""
    from minijax.api.vmap import vmap
    arr = _array("apply_along_axis", arr)
    ndim = len(_shape(arr))
    axis = canonicalize_axis(axis, ndim)

    def func(x):
        return func1d(x, *args, **kwargs)
    for i in range(1, ndim - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied for each axis in turn, keeping the reduced dimensions."""
    arr = _array("apply_over_axes", a)
    for axis in axes:
        b = func(arr, axis)
        if len(_shape(b)) == len(_shape(arr)):
            arr = b
        elif len(_shape(b)) == len(_shape(arr)) - 1:
            arr = expand_dims(b, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return arr


# ---- comparisons and small utilities ------------------------------------------------------------

def array_equal(a1, a2, equal_nan: bool = False):
    """Whether the arrays have the same shape and elements (NaNs equal if ``equal_nan``)."""
    a1, a2 = asarray(a1), asarray(a2)
    if tuple(a1.shape) != tuple(a2.shape):
        return lax.convert_element_type(np.asarray(False), dtypes.bool_)
    eq = equal(a1, a2)
    if equal_nan and not isinstance(a1.dtype, dtypes.ExtendedDType):
        eq = logical_or(eq, logical_and(isnan(a1), isnan(a2)))
    return all_(eq)


def array_equiv(a1, a2):
    """Whether the arrays broadcast together and are equal elementwise."""
    a1, a2 = asarray(a1), asarray(a2)
    try:
        eq = equal(a1, a2)
    except (ValueError, IncompatibleShapesError):
        return lax.convert_element_type(np.asarray(False), dtypes.bool_)
    return all_(eq)


def broadcast_shapes(*shapes) -> tuple:
    """The shape that arrays of ``shapes`` broadcast to (ValueError if they do not)."""
    if not shapes:
        return ()
    shapes = [(s,) if np.ndim(s) == 0 else tuple(s) for s in shapes]
    return _broadcast_shapes(*[tuple(operator.index(d) for d in s) for s in shapes])


@keys_move
def copy(a, order=None):
    """A copy of ``a`` (as a minijax array)."""
    if isinstance(a, (list, tuple)):
        raise TypeError("copy requires ndarray or scalar arguments, got "
                        f"{type(a).__name__}")
    if order not in (None, "K"):
        raise NotImplementedError("Only implemented for order='K'")
    return array(a, copy=True)


# ---- differences --------------------------------------------------------------------------------

def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis`` (after adding ``prepend``/``append``)."""
    arr = _array("diff", a)
    n = _static_int(n, "'n' argument of jnp.diff")
    ndim = len(_shape(arr))
    if ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if n == 0:
        return arr
    axis = canonicalize_axis(axis, ndim)
    parts = []
    for extra in (prepend,):
        if extra is not None:
            e = ensure_array(extra)
            if not _shape(e):
                shape = list(_shape(arr))
                shape[axis] = 1
                e = lax.broadcast_in_dim(e, tuple(shape), ())
            parts.append(e)
    parts.append(arr)
    if append is not None:
        e = ensure_array(append)
        if not _shape(e):
            shape = list(_shape(arr))
            shape[axis] = 1
            e = lax.broadcast_in_dim(e, tuple(shape), ())
        parts.append(e)
    if len(parts) > 1:
        arr = concatenate(parts, axis=axis)
    from minijax.numpy._ufuncs import not_equal, subtract
    op = not_equal if get_aval(arr).dtype == dtypes.bool_ else subtract
    for _ in range(n):
        size = _shape(arr)[axis]
        arr = op(lax.slice_in_dim(arr, min(1, size), size, axis=axis),
                 lax.slice_in_dim(arr, 0, max(size - 1, 0), axis=axis))
    return arr


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences between consecutive elements of the flattened array, with
    ``to_begin``/``to_end`` prepended/appended."""
    arr = ravel(_array("ediff1d", ary))
    from minijax.numpy._ufuncs import subtract
    result = subtract(arr[1:], arr[:-1])  # (TypeError for booleans, as jax)
    dt = get_aval(result).dtype
    parts = []
    if to_begin is not None:
        parts.append(lax.convert_element_type(ravel(_array("ediff1d", to_begin)), dt))
    parts.append(result)
    if to_end is not None:
        parts.append(lax.convert_element_type(ravel(_array("ediff1d", to_end)), dt))
    return concatenate(parts) if len(parts) > 1 else result
