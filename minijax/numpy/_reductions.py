"""Reductions of minijax.numpy: sum, prod, max, min, mean, var, std, all, any, argmax...

Dtype rules are jax.numpy's: ``sum``/``prod`` promote bool and narrow integers
to the default integer (``promote_integers=True``) and accumulate float16 and
bfloat16 in float32; ``mean``/``var``/``std`` of integers give the default
float; ``max``/``min`` keep the input dtype; ``cumsum``/``cumprod`` keep it
too except that bool becomes the default integer.

This module defines ``sum``, ``max``, ``min``, ``all`` and ``any``: inside it
those names are the array functions, not Python's builtins.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.shape_poly import DimExpr
from minijax.core.trace import Tracer, get_aval
from minijax.numpy._promote import check_arraylike, promote_dtypes_numeric
from minijax.stages.eager import fused  # one jitted program when called eagerly

Axis = int | Sequence[int] | None


# ---- helpers ------------------------------------------------------------------------------


def arraylike(name: str, x):
    """``x``, after ``check_arraylike`` and a TypeError for anything that is not an array or
    a scalar (what get_aval refuses); an object with ``__jax_array__`` (flax's Variable)
    becomes its array, as in jax."""
    check_arraylike(name, x)
    if hasattr(type(x), "__jax_array__") and not isinstance(x, (Tracer, DimExpr)):
        x = x.__jax_array__()
    get_aval(x)
    return x


def canonicalize_axis(axis, ndim: int) -> int:
    """``axis`` as a non-negative int; NumPy's ``AxisError`` (a ValueError and an
    IndexError, which jax raises for some functions) if out of range."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"axis must be an integer, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _reduction_axes(ndim: int, axis: Axis) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(canonicalize_axis(a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in 'axis': {axis}")
    return out


def _dtype_arg(dtype, name: str):
    if dtype is None:
        return None
    try:
        return dtypes.canonicalize(dtype)
    except TypeError as e:
        raise TypeError(f"{name}: invalid dtype {dtype!r}: {e}") from None


def _convert(x, dtype):
    """``x`` as a non-weak array of ``dtype`` (jax's convert_element_type); a value that
    already is one stays as it is (also a jvp tracer, whose result would otherwise lose a
    rank-0 value's host memory space)."""
    aval = get_aval(x)
    if aval.dtype == dtype and not aval.weak_type:
        return x
    return lax.convert_element_type(x, dtype)


def _promote_integer_dtype(dt: np.dtype) -> np.dtype:
    """jax's promotion of sums/products: bool and narrow ints widen to the default int."""
    if dt == dtypes.bool_:
        return dtypes.default_int()
    if dtypes.is_unsigned(dt) and dt.itemsize < dtypes.default_uint().itemsize:
        return dtypes.default_uint()
    if dtypes.is_signed(dt) and dt.itemsize < dtypes.default_int().itemsize:
        return dtypes.default_int()
    return dt


def _upcast_f16(dt: np.dtype) -> np.dtype:
    return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


def _to_inexact(dt: np.dtype) -> np.dtype:
    """jax's ``to_inexact_dtype``: 64-bit integers become float64, other ints/bool float32."""
    if dtypes.is_inexact(dt):
        return dt
    return dtypes.canonicalize(dtypes.float64 if dt.itemsize == 8 else dtypes.float32)


def _where(cond, x, y):
    from minijax.numpy._ufuncs import where_
    return where_(cond, x, y)


def _check_where(name: str, where):
    if where is None:
        return None
    arraylike(name, where)
    if get_aval(where).dtype != dtypes.bool_:
        raise ValueError(f"jnp.{name}: where must be None or a boolean array; got "
                         f"dtype={get_aval(where).dtype}")
    return where


_LAX_REDUCE = {"add": lax.reduce_sum, "mul": lax.reduce_prod, "max": lax.reduce_max,
               "min": lax.reduce_min, "and": lax.reduce_and, "or": lax.reduce_or}
_LAX_BINARY = {"add": lax.add, "mul": lax.mul, "max": lax.max, "min": lax.min,
               "and": lax.bitwise_and, "or": lax.bitwise_or}
_BOOL_KIND = {"add": "or", "mul": "and"}


def _reduce(name: str, a, kind: str, *, axis: Axis, dtype, keepdims: bool, initial=None,
            where=None, has_identity: bool = True, promote_integers: bool = False,
            upcast_f16: bool = False, preproc=None, out=None):
    """The common path of the monoid reductions (jax's ``_reduction``)."""
    from minijax.lax.reduce import identity_value
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    a = arraylike(name, a)
    where = _check_where(name, where)
    if initial is None and not has_identity and where is not None:
        raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                         f"where mask one has to specify 'initial'")
    if preproc is not None:
        a = preproc(a)
    aval = get_aval(a)
    dims = _reduction_axes(aval.ndim, axis)
    if initial is None and not has_identity and 0 in (aval.shape[d] for d in dims):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    dtype = _dtype_arg(dtype, name)
    if dtype is None:
        result_dtype = _promote_integer_dtype(aval.dtype) if promote_integers else aval.dtype
    else:
        result_dtype = dtype
    comp_dtype = _upcast_f16(result_dtype) if upcast_f16 and dtypes.is_inexact(
        result_dtype) else result_dtype
    a = _convert(a, comp_dtype)
    if comp_dtype == dtypes.bool_:
        kind = _BOOL_KIND.get(kind, kind)
    if where is not None:
        a = _where(where, a, identity_value(kind, comp_dtype))
    result = _LAX_REDUCE[kind](a, dims)
    if initial is not None:
        init = _convert(initial, comp_dtype)
        if get_aval(init).shape != ():
            raise ValueError(f"initial value must be a scalar. Got array of shape "
                             f"{get_aval(init).shape}")
        result = _LAX_BINARY[kind](init, result)
    if keepdims:
        result = lax.expand_dims(result, dims)
    return _convert(result, result_dtype)


def _cast_to_numeric(a):
    return promote_dtypes_numeric(a)[0]


def _cast_to_bool(a):
    if dtypes.is_complex(get_aval(a).dtype):
        a = lax.real(a)
    return _convert(a, dtypes.bool_)


# ---- monoid reductions ---------------------------------------------------------------------


@fused(max_args=1)
def sum(a, axis: Axis = None, dtype=None, out=None, keepdims: bool = False,
        initial=None, where=None, promote_integers: bool = True):
    """Sum of the elements over ``axis`` (all axes when None)."""
    return _reduce("sum", a, "add", axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                   where=where, promote_integers=promote_integers, upcast_f16=dtype is None,
                   preproc=_cast_to_numeric, out=out)


@fused(max_args=1)
def prod(a, axis: Axis = None, dtype=None, out=None, keepdims: bool = False,
         initial=None, where=None, promote_integers: bool = True):
    """Product of the elements over ``axis`` (all axes when None)."""
    return _reduce("prod", a, "mul", axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                   where=where, promote_integers=promote_integers, upcast_f16=dtype is None,
                   preproc=_cast_to_numeric, out=out)


@fused(max_args=1)
def max(a, axis: Axis = None, out=None, keepdims: bool = False,
        initial=None, where=None):
    """Maximum over ``axis``; NaN propagates. ``where`` needs ``initial``."""
    return _reduce("max", a, "max", axis=axis, dtype=None, keepdims=keepdims, initial=initial,
                   where=where, has_identity=False, out=out)


@fused(max_args=1)
def min(a, axis: Axis = None, out=None, keepdims: bool = False,
        initial=None, where=None):
    """Minimum over ``axis``; NaN propagates. ``where`` needs ``initial``."""
    return _reduce("min", a, "min", axis=axis, dtype=None, keepdims=keepdims, initial=initial,
                   where=where, has_identity=False, out=out)


amax = max
amin = min


@fused(max_args=1)
def all(a, axis: Axis = None, out=None, keepdims: bool = False, *, where=None):
    """Whether all elements over ``axis`` are true."""
    return _reduce("all", a, "and", axis=axis, dtype=None, keepdims=keepdims, where=where,
                   preproc=_cast_to_bool, out=out)


@fused(max_args=1)
def any(a, axis: Axis = None, out=None, keepdims: bool = False, *, where=None):
    """Whether any element over ``axis`` is true."""
    return _reduce("any", a, "or", axis=axis, dtype=None, keepdims=keepdims, where=where,
                   preproc=_cast_to_bool, out=out)


@fused(max_args=1)
def count_nonzero(a, axis: Axis = None, keepdims: bool = False):
    """Number of non-zero elements over ``axis``, as the default integer dtype."""
    a = arraylike("count_nonzero", a)
    zero = np.zeros((), get_aval(a).dtype)
    return sum(lax.ne(a, zero), axis=axis, dtype=dtypes.default_int(), keepdims=keepdims)


# ---- statistics ----------------------------------------------------------------------------


def _count(a, axis: Axis, keepdims: bool, where, dtype):
    """How many elements each output reduces over (a constant unless ``where`` is given)."""
    aval = get_aval(a)
    if where is None:
        dims = _reduction_axes(aval.ndim, axis)
        size = math.prod([aval.shape[d] for d in dims])
        if type(size) is DimExpr:  # shape polymorphism: a value of the dimension variables
            return lax.convert_element_type(lax.dim_as_value(size), dtype)
        return np.asarray(int(size), dtype=dtype)
    from minijax.numpy._promote import broadcast_to_shape
    return sum(broadcast_to_shape(where, aval.shape), axis, dtype=dtype, keepdims=keepdims)


@fused(max_args=1)
def mean(a, axis: Axis = None, dtype=None, out=None, keepdims: bool = False, *, where=None):
    """Arithmetic mean over ``axis``; integers give the default float dtype."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.mean is not supported.")
    a = arraylike("mean", a)
    where = _check_where("mean", where)
    dtype = _dtype_arg(dtype, "mean")
    result_dtype = _to_inexact(get_aval(a).dtype) if dtype is None else dtype
    comp_dtype = _upcast_f16(result_dtype) if dtypes.is_inexact(result_dtype) else result_dtype
    normalizer = _count(a, axis, keepdims, where, comp_dtype)
    total = sum(a, axis, dtype=comp_dtype, keepdims=keepdims, where=where)
    return _convert(lax.div(total, normalizer), result_dtype)


def _var_dtypes(a_dtype: np.dtype, dtype) -> tuple[np.dtype, np.dtype]:
    """(computation dtype, result dtype) of var/std."""
    if dtype is not None:
        if dtypes.is_complex(a_dtype) and not dtypes.is_complex(dtype):
            raise ValueError("var of complex values with a real dtype is not supported")
        comp, result = dtype, dtype
    elif not dtypes.is_inexact(a_dtype):
        comp = result = _to_inexact(a_dtype)
    else:
        comp = a_dtype
        result = np.finfo(a_dtype).dtype if dtypes.is_complex(a_dtype) else a_dtype
    return _upcast_f16(comp), np.dtype(result)


@fused(max_args=1)
def var(a, axis: Axis = None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *,
        where=None, correction=None):
    """Variance over ``axis``, divided by ``N - ddof`` (NaN when that is not positive)."""
    from minijax.numpy._promote import broadcast_arrays
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.var is not supported.")
    if correction is None:
        correction = ddof
    elif ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    a = arraylike("var", a)
    where = _check_where("var", where)
    comp_dtype, result_dtype = _var_dtypes(get_aval(a).dtype, _dtype_arg(dtype, "var"))
    a = _convert(a, comp_dtype)
    a_mean = mean(a, axis, dtype=comp_dtype, keepdims=True, where=where)
    centered = lax.sub(*broadcast_arrays(a, a_mean))
    if dtypes.is_complex(comp_dtype):
        re, im = lax.real(centered), lax.imag(centered)
        centered = lax.add(lax.mul(re, re), lax.mul(im, im))
        comp_dtype = get_aval(centered).dtype
    else:
        centered = lax.integer_pow(centered, 2)
    normalizer = _count(a, axis, keepdims, where, comp_dtype)
    total = sum(centered, axis, dtype=comp_dtype, keepdims=keepdims, where=where)
    nan = np.asarray(np.nan, result_dtype)
    if isinstance(normalizer, np.ndarray):  # no `where`: N - ddof is known now
        normalizer = np.asarray(normalizer - correction, comp_dtype)
        result = _convert(lax.div(total, normalizer), result_dtype)
        return result if normalizer > 0 else _where(True, nan, result)
    normalizer = lax.sub(normalizer, np.asarray(correction, comp_dtype))
    result = _convert(lax.div(total, normalizer), result_dtype)
    return _where(lax.gt(normalizer, np.zeros((), comp_dtype)), result, nan)


@fused(max_args=1)
def std(a, axis: Axis = None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False, *,
        where=None, correction=None):
    """Standard deviation over ``axis``: ``sqrt(var(...))``."""
    dt = _dtype_arg(dtype, "std")
    if dt is not None and not dtypes.is_inexact(dt):
        raise ValueError(f"dtype argument to jnp.std must be inexact; got {dt}")
    return lax.sqrt(var(a, axis, dtype=dt, out=out, ddof=ddof, keepdims=keepdims, where=where,
                        correction=correction))


# ---- argmax / argmin -----------------------------------------------------------------------


def _arg_reduce(name: str, lax_fn, a, axis, out, keepdims):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    a = arraylike(name, a)
    aval = get_aval(a)
    if axis is None:
        dims = tuple(range(aval.ndim))
        a = lax.reshape(a, (aval.size,))
        axis = 0
    else:
        axis = canonicalize_axis(axis, aval.ndim)
        dims = (axis,)
    if get_aval(a).shape[axis] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    result = lax_fn(a, axis, dtypes.default_int())
    return lax.expand_dims(result, dims) if keepdims else result


@fused(max_args=1)
def argmax(a, axis: int | None = None, out=None, keepdims: bool | None = None):
    """Index of the maximum (first occurrence; a NaN counts as the maximum)."""
    return _arg_reduce("argmax", lax.argmax, a, axis, out, keepdims)


@fused(max_args=1)
def argmin(a, axis: int | None = None, out=None, keepdims: bool | None = None):
    """Index of the minimum (first occurrence; a NaN counts as the minimum)."""
    return _arg_reduce("argmin", lax.argmin, a, axis, out, keepdims)


# ---- cumulative reductions -----------------------------------------------------------------


def _cumulative(name: str, lax_fn, a, axis, dtype, out):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    a = arraylike(name, a)
    aval = get_aval(a)
    if axis is None or aval.ndim == 0:
        a = lax.reshape(a, (aval.size,))
    axis = 0 if axis is None else axis
    axis = canonicalize_axis(axis, get_aval(a).ndim)
    dtype = _dtype_arg(dtype, name)
    a_dtype = get_aval(a).dtype
    if dtype is None:
        result_dtype = _promote_integer_dtype(a_dtype) if a_dtype == dtypes.bool_ else a_dtype
        comp_dtype = result_dtype
    elif dtype == dtypes.bool_:
        # Accumulate "is non-zero" as integers, then convert back to bool.
        result_dtype = dtype
        if a_dtype != dtypes.bool_:
            a = lax.ne(a, np.zeros((), a_dtype))
        comp_dtype = _promote_integer_dtype(dtype)
    else:
        result_dtype = comp_dtype = dtype
    a = _convert(a, comp_dtype)
    return _convert(lax_fn(a, axis), result_dtype)


@fused(max_args=1)
def cumsum(a, axis: int | None = None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (the flattened array when None)."""
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype, out)


@fused(max_args=1)
def cumprod(a, axis: int | None = None, dtype=None, out=None):
    """Cumulative product along ``axis`` (the flattened array when None)."""
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype, out)
