"""Statistics over arrays: ``mode``, ``rankdata`` and ``sem`` (as in jax.scipy.stats)."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.core import dtypes
from minijax.lax.shape import canonicalize_axis
from minijax.numpy._promote import check_args, ensure_array, promote_args_inexact
from minijax.stages.jit import jit
from minijax.api.vmap import vmap

_NAN_POLICIES = ("propagate", "omit", "raise")


class ModeResult(NamedTuple):
    mode: object
    count: object


def _check_nan_policy(nan_policy: str, fname: str) -> None:
    if nan_policy not in _NAN_POLICIES:
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{fname}`, we cannot know whether `x` contains "
            f"nans. Please check if nans exist in `x` outside of the `{fname}` function.")


def _mode_1d(x):
    """The most common value of a 1-D ``x`` (the smallest one on ties) and its count."""
    if x.size == 0:
        return (jnp.array(np.nan, dtypes.default_float()),
                jnp.array(0, dtypes.default_float()))
    vals, counts = jnp.unique(x, return_counts=True, size=x.size)
    return vals[jnp.argmax(counts)], counts.max()


@functools.partial(jit, static_argnames=("axis", "keepdims"))
def _mode(x, axis, keepdims):
    x = jnp.atleast_1d(x)
    if axis is None:
        out_shape = (1,) * x.ndim if keepdims else ()
        x = x.ravel()
        axis = 0
    else:
        axis = canonicalize_axis(axis, x.ndim)
        out_shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape)
                          if keepdims or i != axis)
    x = jnp.moveaxis(x, axis, 0)
    x = x.reshape(x.shape[0], math.prod(x.shape[1:]))
    vals, counts = vmap(_mode_1d, in_axes=1)(x)
    return ModeResult(vals.reshape(out_shape), counts.reshape(out_shape))


def mode(a, axis: int | None = 0, nan_policy: str = "propagate", keepdims: bool = False):
    """The most common value along ``axis`` (``None``: of the flattened array) and how
    often it occurs, as a ``ModeResult(mode, count)``; ties go to the smallest value.

    >>> mode(jnp.array([2, 4, 1, 1, 3, 4, 4, 2, 3]))   # ModeResult(mode=4, count=3)
    """
    (a,) = check_args("mode", (a,))
    _check_nan_policy(nan_policy, "mode")
    return _mode(ensure_array(a), axis, keepdims)


_SIGNED_OF_SIZE = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _order_keys(a):
    """Integers ordered as the (NaN-free) real values of ``a``, equal where they are
    equal: a float's bits, with the negatives' flipped (and -0 made +0). A plain integer
    sort of these takes XLA:CPU's fast path; a float sort calls its total-order
    comparator at every comparison, about 5x slower."""
    if dtypes.is_bool(a.dtype):
        return a.astype(np.int32)
    if not dtypes.is_float(a.dtype):
        return a
    bits = _SIGNED_OF_SIZE[a.dtype.itemsize]
    i = lax.bitcast_convert_type(jnp.where(a == 0, jnp.zeros_like(a), a), bits)
    return jnp.where(i < 0, i ^ np.array(np.iinfo(bits).max, bits), i)


def _count_before(sorted_keys, q, strict: bool):
    """How many of ``sorted_keys`` are ``< q`` (``<= q`` unless ``strict``), for each
    element of ``q``: a binary search, one bit of the answer per step."""
    n = sorted_keys.shape[0]
    count = jnp.zeros(q.shape, dtypes.default_int())
    step = 1 << (n.bit_length() - 1)
    while step:
        candidate = count + step
        probe = sorted_keys[jnp.minimum(candidate, n) - 1]
        below = probe < q if strict else probe <= q
        count = jnp.where((candidate <= n) & below, candidate, count)
        step >>= 1
    return count


def _ranks_by_permutation(keys, method: str, out_dtype):
    """Ranks from the stable sorting permutation (any method, any sortable dtype)."""
    n = keys.size
    position = jnp.arange(n)
    arr, order = lax.sort_key_val(keys, position)
    if method == "ordinal":
        inv = jnp.zeros_like(order).at[order].set(position, unique_indices=True)
        return (inv + 1).astype(out_dtype)
    starts = jnp.concatenate([jnp.array([True]), arr[1:] != arr[:-1]])
    if method == "dense":
        ranks = starts.cumsum().astype(out_dtype)
    else:
        # each sorted position's group of ties spans [first, last)
        ends = jnp.concatenate([starts[1:], jnp.array([True])])
        first = lax.cummax(jnp.where(starts, position, 0)).astype(out_dtype)
        last = lax.cummin(jnp.where(ends, position + 1, n), reverse=True).astype(out_dtype)
        ranks = _tie_rank(first, last, method)
    return jnp.zeros(n, out_dtype).at[order].set(ranks, unique_indices=True)


def _tie_rank(first, last, method: str):
    """The rank of an element whose group of ties spans sorted positions [first, last)."""
    if method == "max":
        return last
    if method == "min":
        return first + 1
    return 0.5 * (last + first + 1)


def _rank_1d(a, method: str):
    """Ranks of a 1-D array, from 1, with ties resolved by ``method``."""
    out_dtype = dtypes.default_float()
    keys = _order_keys(a)
    if method == "ordinal" or a.size == 0 or dtypes.is_complex(a.dtype):
        return _ranks_by_permutation(keys, method, out_dtype)
    # Without a permutation to follow back: each element's group of ties spans
    # [first, last) in the sorted keys, found by binary searches.
    arr = lax.sort(keys)
    first = _count_before(arr, keys, strict=True)
    if method == "dense":
        starts = jnp.concatenate([jnp.array([True]), arr[1:] != arr[:-1]])
        return starts.cumsum()[first].astype(out_dtype)
    last = _count_before(arr, keys, strict=False)
    return _tie_rank(first.astype(out_dtype), last.astype(out_dtype), method)


def _rank_or_nan(a, method: str):
    return lax.cond(jnp.any(jnp.isnan(a)),
                    lambda v: jnp.full_like(v, np.nan, dtypes.default_float()),
                    lambda v: _rank_1d(v, method), a)


@functools.partial(jit, static_argnames=("method", "axis"))
def _rankdata(a, method, axis):
    if axis is not None:
        return jnp.apply_along_axis(_rank_or_nan, axis, a, method)
    return _rank_or_nan(jnp.ravel(a), method)


def rankdata(a, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate"):
    """Ranks of the data from 1 (of the flattened array, or of each slice along
    ``axis``); ``method`` (``"average"``, ``"min"``, ``"max"``, ``"dense"`` or
    ``"ordinal"``) says how ties are ranked. A slice holding a NaN ranks as all NaN.

    >>> rankdata(jnp.array([1, 3, 2, 3]))   # [1. , 3.5, 2. , 3.5]
    """
    (a,) = check_args("rankdata", (a,))
    _check_nan_policy(nan_policy, "rankdata")
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    return _rankdata(ensure_array(a), method, axis)


@functools.partial(jit, static_argnames=("ddof", "axis", "nan_policy", "keepdims"))
def _sem(a, ddof, axis, nan_policy, keepdims):
    (b,) = promote_args_inexact("sem", a)
    if nan_policy == "propagate":
        n = b.size if axis is None else b.shape[axis]
        return b.std(axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(n).astype(b.dtype)
    if nan_policy == "omit":
        count = (~jnp.isnan(b)).sum(axis, keepdims=keepdims)
        return (jnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims)
                / jnp.sqrt(count).astype(b.dtype))
    raise ValueError(f"{nan_policy} is not supported")


def sem(a, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False):
    """Standard error of the mean along ``axis`` (``None``: of all elements),
    ``std(a, ddof=ddof) / sqrt(n)``; ``nan_policy="omit"`` leaves NaNs out.

    >>> sem(jnp.array([2, 4, 1, 1, 3, 4, 4, 2, 3]))   # 0.41
    """
    (a,) = check_args("sem", (a,))
    return _sem(ensure_array(a), ddof, axis, nan_policy, keepdims)
