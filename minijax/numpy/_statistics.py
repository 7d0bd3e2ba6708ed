"""Statistics of minijax.numpy: order statistics (``quantile``, ``percentile``, ``median``
and their ``nan*`` forms), the ``nan*`` reductions, ``average``, ``ptp``, ``cov``/
``corrcoef``, histograms (``histogram``, ``histogram2d``, ``histogramdd``,
``histogram_bin_edges``, ``bincount``, ``digitize``), the Array API cumulative functions,
and numerical calculus (``gradient``, ``trapezoid``, ``interp``, ``unwrap``).

Dtype rules are jax.numpy's; a ``nan*`` function ignores NaNs (a slice of only NaNs gives
NaN, or 0 for sums, 1 for products, -1 for ``nanargmax``/``nanargmin``).
"""

from __future__ import annotations

import math
import operator

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.numpy._arrays import diff
from minijax.numpy._index_tricks import ix_, ravel_multi_index
from minijax.numpy._promote import (broadcast_to_shape, ensure_array, promote_dtypes,
                                    promote_dtypes_inexact)
from minijax.numpy._reductions import (_promote_integer_dtype, _reduction_axes, _to_inexact,
                                       _upcast_f16, all as all_, amax, amin, any as any_, argmax,
                                       argmin, canonicalize_axis, cumsum, max as max_, mean,
                                       min as min_, prod, sum as sum_)
from minijax.numpy._setops import concrete, searchsorted
from minijax.numpy._shape import (concatenate, expand_dims, linspace, moveaxis, reshape, transpose)
from minijax.numpy._ufuncs import clip, where_
from minijax.lax._util import check_out_sharding


builtin_range = range  # (the histogram functions take a `range` argument)


def _array(name: str, x):
    if isinstance(x, (list, tuple)):
        raise TypeError(f"{name} requires ndarray or scalar arguments, got "
                        f"{type(x).__name__}. Use minijax.numpy.asarray(...) to convert it.")
    return ensure_array(x)


def _dtype(x) -> np.dtype:
    return get_aval(x).dtype


def _shape(x) -> tuple:
    return get_aval(x).shape


def _isnan(x):
    return lax.ne(x, x)


# ---- nan reductions --------------------------------------------------------------------------

def _nan_reduction(name: str, reduction, fill, nan_if_all_nan: bool, a, axis, keepdims, where,
                   **kwargs):
    a = _array(name, a)
    if not dtypes.is_inexact(_dtype(a)):
        return reduction(a, axis=axis, keepdims=keepdims, where=where, **kwargs)
    out = reduction(where_(_isnan(a), np.asarray(fill, _dtype(a)), a), axis=axis,
                    keepdims=keepdims, where=where, **kwargs)
    if nan_if_all_nan:
        return where_(all_(_isnan(a), axis=axis, keepdims=keepdims),
                      np.asarray(np.nan, _dtype(out)), out)
    return out


def nanmin(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """Minimum over ``axis`` ignoring NaNs (NaN where a slice is all NaN)."""
    return _nan_reduction("nanmin", min_, np.inf, initial is None, a, axis, keepdims, where,
                          out=out, initial=initial)


def nanmax(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """Maximum over ``axis`` ignoring NaNs (NaN where a slice is all NaN)."""
    return _nan_reduction("nanmax", max_, -np.inf, initial is None, a, axis, keepdims, where,
                          out=out, initial=initial)


def nansum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
           where=None):
    """Sum over ``axis`` treating NaNs as zero."""
    if dtype is not None:
        dtype = dtypes.check_user_dtype(dtype, "nansum")
    return _nan_reduction("nansum", sum_, 0, False, a, axis, keepdims, where, dtype=dtype,
                          out=out, initial=initial)


def nanprod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
            where=None):
    """Product over ``axis`` treating NaNs as one."""
    if dtype is not None:
        dtype = dtypes.check_user_dtype(dtype, "nanprod")
    return _nan_reduction("nanprod", prod, 1, False, a, axis, keepdims, where, dtype=dtype,
                          out=out, initial=initial)


def nanmean(a, axis=None, dtype=None, out=None, keepdims: bool = False, where=None):
    """Mean over ``axis`` of the non-NaN elements (NaN where there are none)."""
    a = _array("nanmean", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.nanmean is not supported.")
    if not dtypes.is_inexact(_dtype(a)):
        return mean(a, axis, dtype, out, keepdims, where=where)
    dtype = _to_inexact(_dtype(a)) if dtype is None else dtypes.check_user_dtype(dtype, "mean")
    count = sum_(lax.bitwise_not(_isnan(a)), axis=axis, dtype=dtype, keepdims=keepdims,
                 where=where)
    return lax.div(nansum(a, axis, dtype=dtype, keepdims=keepdims, where=where), count)


def _var_types(a_dtype, dtype):
    if dtype is not None:
        if dtypes.is_complex(a_dtype) and not dtypes.is_complex(dtype):
            raise ValueError("jax.numpy.var does not yet support real dtype parameters when "
                             "computing the variance of an array of complex values.")
        comp = dtype
    elif not dtypes.is_inexact(a_dtype):
        dtype = comp = _to_inexact(a_dtype)
    else:
        dtype, comp = np.finfo(a_dtype).dtype if dtypes.is_complex(a_dtype) else a_dtype, a_dtype
    return _upcast_f16(np.dtype(comp)), np.dtype(dtype)


def nanvar(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False,
           where=None, mean=None):
    """Variance over ``axis`` of the non-NaN elements, divided by ``count - ddof`` (NaN when
    that is not positive)."""
    a = _array("nanvar", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.nanvar is not supported.")
    if dtype is not None:
        dtype = dtypes.check_user_dtype(dtype, "nanvar")
    comp, dtype = _var_types(_dtype(a), dtype)
    a = lax.convert_element_type(a, comp)
    if mean is None:
        a_mean = nanmean(a, axis, dtype=comp, keepdims=True, where=where)
    else:
        a_mean = lax.convert_element_type(ensure_array(mean), comp)
    from minijax.numpy._ufuncs import subtract
    centered = where_(_isnan(a), np.zeros((), comp), subtract(a, a_mean))
    if dtypes.is_complex(comp):
        centered = lax.add(lax.square(lax.real(centered)), lax.square(lax.imag(centered)))
    else:
        centered = lax.square(centered)
    count = sum_(lax.bitwise_not(_isnan(a)), axis=axis, keepdims=keepdims, where=where)
    count = lax.sub(count, np.asarray(ddof, _dtype(count)))
    bad = lax.le(count, np.zeros((), _dtype(count)))
    total = sum_(centered, axis, keepdims=keepdims, where=where)
    total = where_(bad, np.asarray(np.nan, _dtype(total)), total)
    divisor = where_(bad, np.ones((), _dtype(count)), count)
    return lax.convert_element_type(lax.div(total, lax.convert_element_type(divisor,
                                                                            _dtype(total))),
                                    dtype)


def nanstd(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False,
           where=None, mean=None):
    """Standard deviation over ``axis`` of the non-NaN elements."""
    if dtype is not None:
        dtype = dtypes.check_user_dtype(dtype, "nanstd")
    return lax.sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                           where=where, mean=mean))


def _nan_arg(name: str, fn, fill: float, a, axis, out, keepdims):
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    a = _array(name, a)
    axis = None if axis is None else operator.index(axis)
    keepdims = bool(keepdims)
    if not dtypes.is_inexact(_dtype(a)):
        return fn(a, axis=axis, keepdims=keepdims)
    mask = _isnan(a)
    res = fn(where_(mask, np.asarray(fill, _dtype(a)), a), axis=axis, keepdims=keepdims)
    return where_(all_(mask, axis=axis, keepdims=keepdims), np.asarray(-1, _dtype(res)), res)


def nanargmax(a, axis: int | None = None, out=None, keepdims: bool | None = None):
    """Index of the maximum ignoring NaNs (-1 where a slice is all NaN)."""
    return _nan_arg("nanargmax", argmax, -np.inf, a, axis, out, keepdims)


def nanargmin(a, axis: int | None = None, out=None, keepdims: bool | None = None):
    """Index of the minimum ignoring NaNs (-1 where a slice is all NaN)."""
    return _nan_arg("nanargmin", argmin, np.inf, a, axis, out, keepdims)


def _cumulative(name: str, fn, a, axis, dtype, out=None, fill=None,
                promote_integers: bool = False):
    a = _array(name, a)
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported")
    if axis is None or not _shape(a):
        a = reshape(a, (get_aval(a).size,))
    axis = canonicalize_axis(0 if axis is None else axis, len(_shape(a)))
    if fill is not None and dtypes.is_inexact(_dtype(a)):
        a = where_(_isnan(a), np.asarray(fill, _dtype(a)), a)
    if dtype is None:
        result = _promote_integer_dtype(_dtype(a)) if (
            promote_integers or _dtype(a) == dtypes.bool_) else _dtype(a)
        comp = result
    elif np.dtype(dtype) == dtypes.bool_:
        result = dtypes.bool_
        if _dtype(a) != dtypes.bool_:
            a = lax.ne(a, np.zeros((), _dtype(a)))
        comp = _promote_integer_dtype(result)
    else:
        result = comp = dtypes.check_user_dtype(dtype, name)
    return lax.convert_element_type(fn(lax.convert_element_type(a, comp), axis), result)


def nancumsum(a, axis: int | None = None, dtype=None, out=None):
    """Cumulative sum along ``axis`` treating NaNs as zero."""
    return _cumulative("nancumsum", lax.cumsum, a, axis, dtype, out, fill=0)


def nancumprod(a, axis: int | None = None, dtype=None, out=None):
    """Cumulative product along ``axis`` treating NaNs as one."""
    return _cumulative("nancumprod", lax.cumprod, a, axis, dtype, out, fill=1)


def _cumulative_api(name: str, fn, initial: int, x, axis, dtype, include_initial: bool):
    x = _array(name, x)
    ndim = len(_shape(x))
    if ndim == 0:
        raise ValueError(f"The input must be non-scalar to take a {name.replace('_', ' ')}, "
                         f"however a scalar value or scalar array was given.")
    if axis is None:
        if ndim > 1:
            raise ValueError(f"The input array has rank {ndim}, however axis was not set to an "
                             f"explicit value. The axis argument is only optional for "
                             f"one-dimensional arrays.")
        axis = 0
    axis = canonicalize_axis(axis, ndim)
    out = _cumulative(name, fn, x, axis, dtype, promote_integers=fn is lax.cumsum)
    if include_initial:
        shape = list(_shape(x))
        shape[axis] = 1
        first = lax.broadcast_in_dim(np.asarray(initial, _dtype(out)), tuple(shape), ())
        out = concatenate([first, out], axis=axis)
    return out


def cumulative_sum(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False):
    """The Array API's cumulative sum (``include_initial``: start with a 0)."""
    return _cumulative_api("cumulative_sum", lax.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis: int | None = None, dtype=None,
                    include_initial: bool = False):
    """The Array API's cumulative product (``include_initial``: start with a 1)."""
    return _cumulative_api("cumulative_prod", lax.cumprod, 1, x, axis, dtype, include_initial)


# ---- averages and spreads --------------------------------------------------------------------

def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    """The (weighted) mean over ``axis``; with ``returned``, also the sum of the weights."""
    a = _array("average", a)
    axes = _reduction_axes(len(_shape(a)), axis)
    if weights is None:
        (a,) = promote_dtypes_inexact(a)
        avg = mean(a, axis=axis, keepdims=keepdims)
        total = math.prod(_shape(a)[d] for d in axes)
        weights_sum = lax.convert_element_type(np.asarray(total), _dtype(avg))
    else:
        a, w = promote_dtypes_inexact(a, _array("average", weights))
        a, w = ensure_array(a), ensure_array(w)
        if _shape(a) != _shape(w):
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights differ.")
            if _shape(w) != tuple(_shape(a)[ax] for ax in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            w = lax.broadcast_in_dim(w, _shape(a), tuple(sorted(axes)) if list(axes) == sorted(
                axes) else tuple(axes))
        weights_sum = sum_(w, axis=axis, keepdims=keepdims)
        from minijax.numpy._ufuncs import multiply
        avg = lax.div(sum_(multiply(a, w), axis=axis, keepdims=keepdims), weights_sum)
    if returned:
        if _shape(avg) != _shape(weights_sum):
            weights_sum = broadcast_to_shape(weights_sum, _shape(avg))
        return avg, weights_sum
    return avg


def ptp(a, axis=None, out=None, keepdims: bool = False):
    """The range (maximum - minimum) over ``axis``."""
    a = _array("ptp", a)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.ptp is not supported.")
    return lax.sub(amax(a, axis=axis, keepdims=keepdims), amin(a, axis=axis, keepdims=keepdims))


# ---- quantiles -------------------------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _quantile(name: str, a, q, axis, method: str, keepdims: bool, skip_nans: bool, weights):
    if method not in _METHODS:
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' "
                         "or 'inverted_cdf'")
    a, q = _array(name, a), _array(name, q)
    if weights is not None:
        weights = _array(name, weights)
        if dtypes.is_complex(_dtype(weights)):
            raise ValueError("Weights cannot be complex types.")
        if method != "inverted_cdf":
            raise NotImplementedError(f"{method} doesn't support weights. Only method "
                                      f"'inverted_cdf' supports weights.")
        a, weights = (ensure_array(v) for v in promote_dtypes_inexact(a, weights))
    else:
        (a,) = promote_dtypes_inexact(a)
        a = ensure_array(a)
    if dtypes.is_complex(_dtype(a)):
        raise ValueError("quantile does not support complex input, as the operation is poorly "
                         "defined.")
    ndim = len(_shape(a))
    if weights is not None and _shape(weights) != _shape(a):
        if axis is None:
            raise ValueError("Weights shape must match 'a' shape when axis is None.")
        axes_w = _reduction_axes(ndim, axis)
        if _shape(weights) != tuple(_shape(a)[ax] for ax in axes_w):
            raise ValueError(f"Weights shape {_shape(weights)} must match reduction axes "
                             f"{tuple(_shape(a)[ax] for ax in axes_w)}")
        weights = lax.broadcast_in_dim(weights, _shape(a), tuple(axes_w))
    axes = _reduction_axes(ndim, axis)
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    keep_shape = tuple(1 if i in axes else d for i, d in enumerate(_shape(a)))
    batch_axes = [i for i in range(ndim) if i not in axes]
    batch = tuple(_shape(a)[i] for i in batch_axes)
    n = math.prod(_shape(a)[i] for i in axes)

    def to_rows(x):  # (batch..., n)
        return reshape(transpose(x, batch_axes + list(axes)), batch + (n,))
    a = to_rows(a)
    if weights is not None:
        weights = to_rows(weights)
    q_shape = _shape(q)
    if len(q_shape) > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {q_shape}")
    qdt = _dtype(q)
    last = len(batch)
    nan_rows = any_(_isnan(a), axis=-1, keepdims=True)
    if not skip_nans and method != "inverted_cdf":
        a = where_(nan_rows, np.asarray(np.nan, _dtype(a)), a)
    if weights is not None:
        a, weights = lax.sort((a, weights), dimension=last, num_keys=1)
    else:
        a = lax.sort(a, dimension=last)
    qs = reshape(q, (-1,))  # (Q,)
    nq = _shape(qs)[0]

    def gather(idx):  # idx (Q, batch...) int -> values (Q, batch...)
        idx = moveaxis(idx, 0, -1)  # (batch..., Q)
        from minijax.numpy._indexing import take_along_axis
        vals = take_along_axis(a, idx, axis=-1, mode="clip")
        return moveaxis(vals, -1, 0)

    if method == "inverted_cdf":
        w = lax.broadcast_in_dim(np.ones((), _dtype(a)), _shape(a), ()) if weights is None \
            else weights
        zero = np.zeros((), _dtype(w))
        bad = lax.bitwise_or(lax.lt(w, zero), _isnan(w))
        nan_data = _isnan(a)
        clean = where_(lax.bitwise_or(bad, nan_data), zero, w)
        cum = cumsum(clean, axis=-1)
        total = cum[..., -1:]  # (batch..., 1)
        target = lax.mul(lax.broadcast_in_dim(lax.convert_element_type(qs, _dtype(cum)),
                                              (nq,) + batch + (1,), (0,)),
                         lax.broadcast_in_dim(total, (nq,) + batch + (1,),
                                              tuple(range(1, last + 2))))
        cw = lax.broadcast_in_dim(cum, (nq,) + batch + (n,), tuple(range(1, last + 2)))
        from minijax.numpy._ufuncs import less
        idx = sum_(less(cw, target), axis=-1, dtype=dtypes.default_int())  # (Q, batch)
        if skip_nans:
            valid = sum_(lax.bitwise_not(nan_data), axis=-1, dtype=dtypes.default_int())
        else:
            valid = lax.broadcast_in_dim(np.asarray(n, dtypes.default_int()), batch, ())
        top = lax.broadcast_in_dim(lax.sub(valid, np.ones((), dtypes.default_int())),
                                   (nq,) + batch, tuple(range(1, last + 1)))
        idx = lax.max(np.zeros((), dtypes.default_int()), lax.min(idx, top))
        result = gather(idx)
        force = any_(bad, axis=-1)
        if skip_nans:
            force = lax.bitwise_or(force, lax.eq(valid, np.zeros((), dtypes.default_int())))
        else:
            force = lax.bitwise_or(force, any_(nan_data, axis=-1))
        force = lax.broadcast_in_dim(force, (nq,) + batch, tuple(range(1, last + 1)))
        result = where_(force, np.asarray(np.nan, _dtype(result)), result)
    else:
        if skip_nans:
            counts = sum_(lax.bitwise_not(_isnan(a)), axis=-1, dtype=qdt)  # (batch...)
            counts = lax.broadcast_in_dim(counts, (nq,) + batch, tuple(range(1, last + 1)))
        else:
            counts = np.asarray(n, qdt)
        pos = lax.broadcast_in_dim(qs, (nq,) + batch, (0,))
        pos = lax.mul(pos, lax.sub(counts, np.ones((), qdt)))
        low, high = lax.floor(pos), lax.ceil(pos)
        high_w = lax.sub(pos, low)
        low_w = lax.sub(np.ones((), qdt), high_w)
        top = lax.sub(counts, np.ones((), qdt))
        low = lax.max(np.zeros((), qdt), lax.min(low, top))
        high = lax.max(np.zeros((), qdt), lax.min(high, top))
        low_v = gather(lax.convert_element_type(low, dtypes.default_int()))
        high_v = gather(lax.convert_element_type(high, dtypes.default_int()))
        if method == "linear":
            result = lax.add(lax.mul(lax.convert_element_type(low_v, qdt), low_w),
                             lax.mul(lax.convert_element_type(high_v, qdt), high_w))
        elif method == "lower":
            result = low_v
        elif method == "higher":
            result = high_v
        elif method == "nearest":
            result = lax.select(lax.le(high_w, np.asarray(0.5, qdt)), low_v, high_v)
        else:  # midpoint
            result = lax.mul(lax.add(low_v, high_v), np.asarray(0.5, _dtype(low_v)))
    # result: (Q, batch...); put the reduced axes back as size-1 dims if keepdims
    if keepdims:
        result = reshape(result, (nq,) + keep_shape)
    if not q_shape:
        result = reshape(result, _shape(result)[1:])
    return lax.convert_element_type(result, _dtype(a))


def _check_out(name: str, out, overwrite_input: bool) -> None:
    if overwrite_input or out is not None:
        raise ValueError(f"jax.numpy.{name} does not support overwrite_input=True or "
                         f"out != None")


def quantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
             keepdims: bool = False, *, weights=None):
    """The ``q``-th quantiles (``q`` in [0, 1], a scalar or 1-D) over ``axis``; NaN where a
    slice contains NaN. ``method``: ``'linear'`` (default), ``'lower'``, ``'higher'``,
    ``'midpoint'``, ``'nearest'``, or ``'inverted_cdf'`` (the only one taking ``weights``)."""
    _check_out("quantile", out, overwrite_input)
    return _quantile("quantile", a, q, axis, method, keepdims, False, weights)


def nanquantile(a, q, axis=None, out=None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights=None):
    """:func:`quantile` ignoring NaNs."""
    _check_out("nanquantile", out, overwrite_input)
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, weights)


def _percent(name: str, q):
    (q,) = promote_dtypes_inexact(_array(name, q))
    return lax.div(q, np.asarray(100, _dtype(q)))


def percentile(a, q, axis=None, out=None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights=None, out_sharding=None):
    """The ``q``-th percentiles (``q`` in [0, 100]); see :func:`quantile`."""
    check_out_sharding("percentile", out_sharding)
    return quantile(a, _percent("percentile", q), axis=axis, out=out,
                    overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                    weights=weights)


def nanpercentile(a, q, axis=None, out=None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights=None):
    """:func:`percentile` ignoring NaNs."""
    return nanquantile(a, _percent("nanpercentile", q), axis=axis, out=out,
                       overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                       weights=weights)


def median(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """The median over ``axis`` (the mean of the two middle values for even counts)."""
    return quantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                    keepdims=keepdims, method="midpoint")


def nanmedian(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """:func:`median` ignoring NaNs."""
    return nanquantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                       keepdims=keepdims, method="midpoint")


# ---- covariance ------------------------------------------------------------------------------

def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights=None, aweights=None, dtype=None):
    """The covariance matrix of the variables in the rows (``rowvar``) or columns of ``m``
    (and ``y``), with optional frequency and reliability weights."""
    from minijax.numpy._linalg_ops import dot
    from minijax.numpy._math import conj
    from minijax.numpy._shape import atleast_2d
    if y is not None:
        m, y = (ensure_array(v) for v in promote_dtypes_inexact(_array("cov", m),
                                                                   _array("cov", y)))
        if len(_shape(y)) > 2:
            raise ValueError("y has more than 2 dimensions")
    else:
        (m,) = promote_dtypes_inexact(_array("cov", m))
        m = ensure_array(m)
    if len(_shape(m)) > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is not None and not dtypes.is_inexact(np.dtype(dtype)):
        raise ValueError(f"cov: dtype must be a subclass of float or complex; got dtype={dtype}")
    X = atleast_2d(m)
    if not rowvar and len(_shape(m)) != 1:
        X = transpose(X)
    if _shape(X)[0] == 0:
        return lax.broadcast_in_dim(np.zeros((), dtypes.default_float()), (0, 0), ())
    if y is not None:
        Y = atleast_2d(y)
        if not rowvar and _shape(Y)[0] != 1:
            Y = transpose(Y)
        X = concatenate([X, Y], axis=0)
    nvar, nobs = _shape(X)
    if nobs == 0:
        shape = () if nvar == 1 else (nvar, nvar)
        return lax.broadcast_in_dim(np.asarray(np.nan, _dtype(X)), shape, ())
    if ddof is None:
        ddof = 1 if not bias else 0
    w = None
    if fweights is not None:
        fweights = _array("cov", fweights)
        if len(_shape(fweights)) > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if _shape(fweights)[0] != nobs:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if not dtypes.is_int(_dtype(fweights)):
            raise TypeError("fweights must be integer.")
        w = lax.abs(fweights)
    if aweights is not None:
        aweights = _array("cov", aweights)
        if len(_shape(aweights)) > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if _shape(aweights)[0] != nobs:
            raise RuntimeError("incompatible numbers of samples and aweights")
        aweights = lax.abs(aweights)
        from minijax.numpy._ufuncs import multiply
        w = aweights if w is None else multiply(w, aweights)
    if dtype is not None:
        X = lax.convert_element_type(X, dtype)
        w = None if w is None else lax.convert_element_type(w, dtype)
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    from minijax.numpy._ufuncs import multiply, subtract, true_divide
    if w is None:
        f = nobs - ddof
    elif ddof == 0:
        f = w_sum
    elif aweights is None:
        f = subtract(w_sum, ddof)
    else:
        f = subtract(w_sum, true_divide(multiply(ddof, sum_(multiply(w, aweights))), w_sum))
    X = subtract(X, expand_dims(avg, 1))
    XT = transpose(X) if w is None else transpose(multiply(X, expand_dims(w, 0)))
    out = true_divide(dot(X, conj(XT)), f)
    from minijax.numpy._shape import squeeze
    return squeeze(out)


def corrcoef(x, y=None, rowvar: bool = True, dtype=None):
    """Pearson correlation coefficients (the covariance matrix normalized to unit diagonal,
    clipped to [-1, 1])."""
    from minijax.numpy._arrays import diag
    from minijax.numpy._math import imag, real
    if dtype is not None and not dtypes.is_inexact(np.dtype(dtype)):
        raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got "
                         f"dtype={dtype}")
    c = cov(x, y, rowvar, dtype=dtype)
    if not _shape(c):
        return lax.div(c, c)
    d = diag(c)
    std = lax.convert_element_type(lax.sqrt(real(d)), _dtype(c))
    from minijax.numpy._ufuncs import true_divide
    c = true_divide(true_divide(c, expand_dims(std, 1)), expand_dims(std, 0))
    re = clip(real(c), -1, 1)
    if dtypes.is_complex(_dtype(c)):
        return lax.complex(re, clip(imag(c), -1, 1))
    return re


# ---- histograms ------------------------------------------------------------------------------

def bincount(x, weights=None, minlength: int = 0, *, length: int | None = None, out_sharding=None):
    """The number of occurrences of each non-negative integer in ``x`` (or the sum of its
    ``weights``); ``length`` (static) fixes the result's size for use under jit."""
    check_out_sharding("bincount", out_sharding)
    x = _array("bincount", x)
    if _dtype(x) == dtypes.bool_:
        x = lax.convert_element_type(x, dtypes.int32)
    if not dtypes.is_int(_dtype(x)):
        raise TypeError(f"x argument to bincount must have an integer type; got {_dtype(x)}")
    if len(_shape(x)) != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = operator.index(minlength)
    if length is None:
        values = concrete(x, "bincount (pass a static length= argument)")
        length = max(minlength, int(max(0, values.max())) + 1 if values.size else 0)
    else:
        length = operator.index(length)
    if weights is None:
        weights = np.asarray(1, dtypes.default_int())
    else:
        weights = _array("bincount", weights)
        if _shape(weights) != _shape(x):
            raise ValueError(f"type of weights must match type of x. Got shapes {_shape(x)} and "
                             f"{_shape(weights)}")
    dt = _dtype(weights) if hasattr(weights, "aval") else weights.dtype
    zero = lax.broadcast_in_dim(np.zeros((), dt), (length,), ())
    return zero.at[clip(x, 0)].add(weights, mode="drop")


def digitize(x, bins, right: bool = False, *, method: str | None = None):
    """The index of the bin each element of ``x`` falls in (``bins`` increasing or
    decreasing; ``right`` says which edge belongs to a bin)."""
    x, b = _array("digitize", x), _array("digitize", bins)
    if len(_shape(b)) != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
    if _shape(b)[0] == 0:
        return lax.broadcast_in_dim(np.zeros((), dtypes.int32), _shape(x), ())
    side = "left" if right else "right"
    kw = {} if method is None else {"method": method}
    up = searchsorted(b, x, side=side, **kw)
    down = lax.sub(np.asarray(_shape(b)[0], dtypes.int32), searchsorted(b[::-1], x, side=side,
                                                                        **kw))
    return where_(lax.ge(b[-1], b[0]), up, down)


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """The edges of the bins :func:`histogram` uses: ``bins`` equal-width bins over
    ``range`` (the data's range by default), or ``bins`` itself if it is 1-D."""
    del weights
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    arr = _array("histogram_bin_edges", a)
    dt = _to_inexact(_dtype(arr))
    if np.ndim(bins) == 1:
        return lax.convert_element_type(_array("histogram_bin_edges", bins), dt)
    nbins = operator.index(bins)
    if range is None:
        lo, hi = min_(arr), max_(arr)
    else:
        if np.shape(range) != (2,):
            raise ValueError(f"`range` must be either None or a sequence of scalars, got "
                             f"{range}")
        lo, hi = range
    lo = lax.convert_element_type(ensure_array(lo), dt)
    hi = lax.convert_element_type(ensure_array(hi), dt)
    same = lax.eq(lo, hi)
    lo = where_(same, lax.sub(lo, np.asarray(0.5, dt)), lo)
    hi = where_(same, lax.add(hi, np.asarray(0.5, dt)), hi)
    return linspace(lo, hi, nbins + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """``(counts, bin_edges)``: the (weighted) number of values of ``a`` in each bin (the
    last bin includes its right edge); ``density`` normalizes to a probability density."""
    a = _array("histogram", a)
    if weights is None:
        (a,) = promote_dtypes_inexact(a)
        a = ensure_array(a)
        weights = lax.broadcast_in_dim(np.ones((), _dtype(a)), _shape(a), ())
    else:
        weights = _array("histogram", weights)
        if _shape(a) != _shape(weights):
            raise ValueError("weights should have the same shape as a.")
        a, weights = (ensure_array(v) for v in promote_dtypes_inexact(a, weights))
    edges = histogram_bin_edges(a, bins, range, weights)
    nedges = _shape(edges)[0]
    idx = searchsorted(edges, a, side="right")
    idx = where_(lax.eq(a, edges[-1]), np.asarray(nedges - 1, _dtype(idx)), idx)
    counts = lax.broadcast_in_dim(np.zeros((), _dtype(weights)), (nedges,), ()).at[idx].add(
        weights)[1:]
    if density:
        counts = lax.div(lax.div(counts, diff(edges)), sum_(counts))
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The multidimensional histogram of ``sample`` (``N`` points of ``D`` coordinates):
    ``(counts, [edges per dimension])``."""
    sample = _array("histogramdd", sample)
    if weights is None:
        (sample,) = promote_dtypes_inexact(sample)
        sample = ensure_array(sample)
    else:
        weights = _array("histogramdd", weights)
        if _shape(weights) != _shape(sample)[:1]:
            raise ValueError("should have one weight for each sample.")
        sample, weights = (ensure_array(v) for v in promote_dtypes_inexact(sample, weights))
    N, D = _shape(sample)
    if range is not None and (len(range) != D or any(
            r is not None and np.shape(r)[0] != 2 for r in range)):
        raise ValueError(f"For sample.shape={(N, D)}, range must be a sequence of {D} pairs or "
                         f"Nones; got range={range!r}")
    try:
        per_dim = list(bins)
    except TypeError:
        per_dim = D * [bins]
    else:
        if len(per_dim) != D:
            raise ValueError("should be a bin for each dimension.")
    idx_by_dim, edges_by_dim = [], []
    for i in builtin_range(D):
        col = sample[:, i]
        edges = histogram_bin_edges(col, per_dim[i], None if range is None else range[i],
                                    weights)
        idx = searchsorted(edges, col, side="right")
        idx = where_(lax.eq(col, edges[-1]), lax.sub(idx, np.ones((), _dtype(idx))), idx)
        idx_by_dim.append(idx)
        edges_by_dim.append(edges)
    nbins = tuple(_shape(e)[0] + 1 for e in edges_by_dim)
    flat = ravel_multi_index(tuple(idx_by_dim), nbins, mode="clip")
    hist = reshape(bincount(flat, weights, length=math.prod(nbins)), nbins)
    hist = hist[(slice(1, -1),) * D]
    if density:
        hist = lax.convert_element_type(hist, _dtype(sample))
        hist = lax.div(hist, sum_(hist))
        for norm in ix_(*[diff(e) for e in edges_by_dim]):
            from minijax.numpy._ufuncs import true_divide
            hist = true_divide(hist, norm)
    return hist, edges_by_dim


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The 2-D histogram of the points ``(x[i], y[i])``: ``(counts, x_edges, y_edges)``."""
    x, y = _array("histogram2d", x), _array("histogram2d", y)
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in (1, 2):
        edges = ensure_array(bins)
        bins = [edges, edges]
    from minijax.numpy._shape import stack
    sample = stack(list(promote_dtypes(x, y)), axis=1)
    hist, edges = histogramdd(sample, bins, range, weights, density)
    return hist, edges[0], edges[1]


# ---- calculus --------------------------------------------------------------------------------

def gradient(f, *varargs, axis=None, edge_order=None):
    """The gradient of sampled values ``f``: second-order central differences inside, first
    order at the edges; ``varargs`` give the spacing (scalars or coordinate arrays) per axis."""
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    a, *spacing = (ensure_array(v) for v in promote_dtypes_inexact(_array("gradient", f),
                                                                   *varargs))
    ndim = len(_shape(a))
    from minijax.numpy._ufuncs import multiply, subtract, true_divide, add

    def along(a, h, ax):
        def part(x, start, stop):
            size = _shape(x)[ax]
            start = start + size if start < 0 else start
            stop = size if stop is None else (stop + size if stop < 0 else stop)
            return lax.slice_in_dim(x, start, stop, axis=ax)
        upper = subtract(part(a, 1, 2), part(a, 0, 1))
        lower = subtract(part(a, -1, None), part(a, -2, -1))
        if not _shape(h):
            inner = true_divide(multiply(subtract(part(a, 2, None), part(a, 0, -2)), 0.5), h)
            lower, upper = true_divide(lower, h), true_divide(upper, h)
        elif len(_shape(h)) == 1:
            if _shape(h)[0] != _shape(a)[ax]:
                raise ValueError("Spacing arrays must have the same length as the dimension "
                                 "along which the gradient is calculated.")
            hs = [1] * ndim
            hs[ax] = _shape(h)[0]
            h = reshape(h, tuple(hs))
            upper = true_divide(upper, subtract(part(h, 1, 2), part(h, 0, 1)))
            lower = true_divide(lower, subtract(part(h, -1, None), part(h, -2, -1)))
            dx1 = subtract(part(h, 1, -1), part(h, 0, -2))
            dx2 = subtract(part(h, 2, None), part(h, 1, -1))
            c0 = true_divide(lax.neg(dx2), multiply(dx1, add(dx1, dx2)))
            c1 = true_divide(subtract(dx2, dx1), multiply(dx1, dx2))
            c2 = true_divide(dx1, multiply(dx2, add(dx1, dx2)))
            inner = add(add(multiply(c0, part(a, 0, -2)), multiply(c1, part(a, 1, -1))),
                        multiply(c2, part(a, 2, None)))
        else:
            raise ValueError("Spacing arrays must be 1D arrays or scalars.")
        return concatenate([upper, inner, lower], axis=ax)

    if axis is None:
        axes = tuple(builtin_range(ndim))
    else:
        axes = tuple(canonicalize_axis(i, ndim) for i in (
            axis if isinstance(axis, (tuple, list)) else (axis,)))
    if not axes:
        return []
    if min(s for i, s in enumerate(_shape(a)) if i in axes) < 2:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                         "2 elements are required.")
    if not spacing:
        dx = [ensure_array(np.asarray(1.0, _dtype(a)))] * len(axes)
    elif len(spacing) == 1:
        dx = spacing * len(axes)
    elif len(spacing) == len(axes):
        dx = spacing
    else:
        raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis!r}")
    grads = [along(a, h, ax) for ax, h in zip(axes, dx)]
    return grads[0] if len(axes) == 1 else grads


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, with sample points ``x``
    (or constant spacing ``dx``)."""
    from minijax.numpy._ufuncs import add, multiply, subtract
    if x is None:
        (yv,) = promote_dtypes_inexact(_array("trapezoid", y))
        yv = ensure_array(yv)
        dxv = ensure_array(dx)
        if _shape(dxv):
            dxv = expand_dims(dxv, tuple(builtin_range(len(_shape(yv)) - len(_shape(dxv)))))
            dxv = moveaxis(dxv, axis, -1)
    else:
        yv, xv = (ensure_array(v) for v in promote_dtypes_inexact(_array("trapezoid", y),
                                                                  _array("trapezoid", x)))
        dxv = diff(xv) if len(_shape(xv)) == 1 else moveaxis(diff(xv, axis=axis), axis, -1)
    yv = moveaxis(yv, axis, -1)
    if not _shape(dxv) or _shape(dxv)[-1] == 1:
        d = dxv if not _shape(dxv) else dxv[..., 0]
        return multiply(d, subtract(sum_(yv, axis=-1),
                                    multiply(0.5, add(yv[..., 0], yv[..., -1]))))
    return multiply(0.5, sum_(multiply(dxv, add(yv[..., 1:], yv[..., :-1])), axis=-1))


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points ``(xp, fp)`` (``xp`` increasing) at
    ``x``; outside, ``left``/``right`` (the end values by default, or ``'extrapolate'``),
    or periodic with ``period``."""
    from minijax.numpy._ufuncs import add, remainder, subtract, true_divide, multiply
    x, xp, fp = _array("interp", x), _array("interp", xp), _array("interp", fp)
    if _shape(xp) != _shape(fp) or len(_shape(xp)) != 1:
        raise ValueError("xp and fp must be one-dimensional arrays of equal size")
    x, xp = (ensure_array(v) for v in promote_dtypes_inexact(x, xp))
    (fp,) = promote_dtypes_inexact(fp)
    fp = ensure_array(fp)
    for name, v in (("left", left), ("right", right)):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', but "
                             f"got: {v!r}")
    if dtypes.is_complex(_dtype(x)):
        raise ValueError("jnp.interp: complex x values not supported.")
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period}")
        period = lax.abs(ensure_array(period))
        x, xp = remainder(x, period), remainder(xp, period)
        xp, fp = lax.sort((xp, fp), dimension=0, num_keys=1)
        xp = concatenate([subtract(xp[-1:], period), xp, add(xp[:1], period)])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    n = _shape(xp)[0]
    i = clip(searchsorted(xp, x, side="right"), 1, n - 1)
    im1 = lax.sub(i, np.ones((), _dtype(i)))
    df = subtract(fp[i], fp[im1])
    dx = subtract(xp[i], xp[im1])
    delta = subtract(x, xp[im1])
    eps = np.spacing(np.finfo(_dtype(xp)).eps)
    dx0 = lax.le(lax.abs(dx), np.asarray(eps, _dtype(dx)))
    safe = where_(dx0, np.ones((), _dtype(dx)), dx)
    f = where_(dx0, fp[im1], add(fp[im1], multiply(true_divide(delta, safe), df)))
    if not isinstance(left, str) and period is None:
        f = where_(lax.lt(x, xp[0]), fp[0] if left is None else left, f)
    if not isinstance(right, str) and period is None:
        f = where_(lax.gt(x, xp[-1]), fp[-1] if right is None else right, f)
    return f


def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi):
    """``p`` with jumps larger than ``discont`` (half the period by default) along ``axis``
    corrected by multiples of ``period`` (phase unwrapping)."""
    from minijax.numpy._ufuncs import (abs as abs_, floor_divide, greater, less, logical_and,
                                       remainder, subtract, add, true_divide, equal)
    p, period = promote_dtypes(_array("unwrap", p), period)
    p = ensure_array(p)
    if dtypes.is_complex(_dtype(p)):
        raise ValueError("jnp.unwrap does not support complex inputs.")
    if _shape(p)[axis] == 0:
        return p
    if discont is None:
        discont = true_divide(period, 2)
    interval = floor_divide(period, 2) if dtypes.is_int(_dtype(p)) else true_divide(period, 2)
    dd = diff(p, axis=axis)
    ddmod = subtract(remainder(add(dd, interval), period), interval)
    ddmod = where_(logical_and(equal(ddmod, lax.neg(ensure_array(interval))), greater(dd, 0)),
                   interval, ddmod)
    correction = where_(less(abs_(dd), discont), 0, subtract(ddmod, dd))
    ax = canonicalize_axis(axis, len(_shape(p)))
    size = _shape(p)[ax]
    head = lax.slice_in_dim(p, 0, 1, axis=ax)
    tail = add(lax.slice_in_dim(p, 1, size, axis=ax), cumsum(correction, axis=ax))
    return concatenate([head, tail], axis=ax)
