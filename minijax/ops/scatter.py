"""Segment reductions: ``out[s] = reduce(data[i] for i with segment_ids[i] == s)``.

Each one is a scatter of ``data`` into an array of ``num_segments`` rows filled with
the reduction's identity. ``bucket_size`` splits ``data`` into consecutive buckets,
reduces each bucket into its own row of a ``(num_buckets, num_segments, ...)`` array,
then reduces over the buckets: fewer terms per accumulation, as jax does for accuracy.
"""

from __future__ import annotations

import operator

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.core import dtypes
from minijax.core.errors import ConcretizationTypeError
from minijax.core.trace import Tracer
from minijax.lax.slicing import GatherScatterMode
from minijax.numpy._indexing import _scatter_update
from minijax.numpy._promote import check_arraylike
from minijax.core.aval import no_sharding_constraint


def _identity(kind: str, dtype):
    """The value a segment with no entries holds: the reduction's identity in ``dtype``."""
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    biggest = kind == "min"
    if dtype == np.bool_:
        return biggest
    if dtypes.is_int(dtype):
        info = np.iinfo(dtype)
        return info.max if biggest else info.min
    return np.inf if biggest else -np.inf


_SCATTER = {"sum": lax.scatter_add, "prod": lax.scatter_mul,
            "max": lax.scatter_max, "min": lax.scatter_min}
_REDUCE = {"sum": jnp.sum, "prod": jnp.prod, "max": jnp.max, "min": jnp.min}


def _num_segments(name: str, num_segments, segment_ids) -> int:
    if num_segments is None:
        # Traced ids raise TracerArrayConversionError here and empty ones ValueError,
        # as in jax.
        num_segments = int(np.max(np.asarray(segment_ids))) + 1
    elif isinstance(num_segments, Tracer):
        raise ConcretizationTypeError(
            f"{name}() `num_segments` argument must be a concrete integer: it fixes the "
            f"output's shape. Pass it as a static argument (static_argnums/static_argnames).")
    num_segments = operator.index(num_segments)
    if num_segments < 0:
        raise ValueError("num_segments must be non-negative.")
    return num_segments


def _segment_reduce(kind: str, data, segment_ids, num_segments, indices_are_sorted: bool,
                    unique_indices: bool, bucket_size, mode, out_sharding):
    name = f"segment_{kind}"
    if not no_sharding_constraint(out_sharding):
        raise NotImplementedError(f"{name}: out_sharding is not supported by minijax")
    check_arraylike(name, data, segment_ids)
    mode = GatherScatterMode.FILL_OR_DROP if mode is None else mode
    data = jnp.asarray(data)
    segment_ids = jnp.asarray(segment_ids)
    n = _num_segments(name, num_segments, segment_ids)
    dtype = data.dtype
    if dtype == np.bool_ and kind in ("sum", "prod"):
        op = "add" if kind == "sum" else "mul"
        raise TypeError(f"{name}: {op} does not accept dtype bool; accepted dtypes are "
                        "integer, floating and complex types.")
    fill = _identity(kind, dtype)
    if bucket_size is None:
        out = jnp.full((n,) + data.shape[1:], fill, dtype=dtype)
        return _scatter_update(out, segment_ids, data, _SCATTER[kind], indices_are_sorted,
                               unique_indices, mode=mode, normalize_indices=False)
    bucket_size = operator.index(bucket_size)
    if bucket_size <= 0:
        raise ValueError(f"{name}: bucket_size must be positive, got {bucket_size}.")
    num_buckets = -(-segment_ids.size // bucket_size)
    out = jnp.full((num_buckets, n) + data.shape[1:], fill, dtype=dtype)
    bucket = jnp.arange(segment_ids.shape[0]) // bucket_size
    out = _scatter_update(out, (bucket, segment_ids[None, :]), data, _SCATTER[kind],
                          indices_are_sorted, unique_indices, mode=mode,
                          normalize_indices=False)
    return _REDUCE[kind](out, axis=0).astype(dtype)


_ARGS_DOC = """
    Args:
      data: the values; segments run along its leading axis.
      segment_ids: integer array, one segment id per row of ``data`` (repeats allowed,
        need not be sorted).
      num_segments: the number of segments (the output's leading size). Defaults to
        ``max(segment_ids) + 1``, which needs concrete ids: pass it statically under jit.
      indices_are_sorted: whether ``segment_ids`` is known to be sorted.
      unique_indices: whether ``segment_ids`` is known to have no repeats.
      bucket_size: reduce each run of ``bucket_size`` rows separately, then combine the
        buckets (better accuracy for long sums and products). ``None``: no buckets.
      mode: a ``lax.GatherScatterMode`` for ids outside ``[0, num_segments)``; by
        default they are dropped.

    Returns:
      An array of shape ``(num_segments,) + data.shape[1:]``; an empty segment holds
      the reduction's identity."""


def segment_sum(data, segment_ids, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode=None, out_sharding=None):
    return _segment_reduce("sum", data, segment_ids, num_segments, indices_are_sorted,
                           unique_indices, bucket_size, mode, out_sharding)


def segment_prod(data, segment_ids, num_segments: int | None = None,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 bucket_size: int | None = None, mode=None, out_sharding=None):
    return _segment_reduce("prod", data, segment_ids, num_segments, indices_are_sorted,
                           unique_indices, bucket_size, mode, out_sharding)


def segment_max(data, segment_ids, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode=None, out_sharding=None):
    return _segment_reduce("max", data, segment_ids, num_segments, indices_are_sorted,
                           unique_indices, bucket_size, mode, out_sharding)


def segment_min(data, segment_ids, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode=None, out_sharding=None):
    return _segment_reduce("min", data, segment_ids, num_segments, indices_are_sorted,
                           unique_indices, bucket_size, mode, out_sharding)


for _f, _what in ((segment_sum, "sum"), (segment_prod, "product"),
                  (segment_max, "maximum"), (segment_min, "minimum")):
    _f.__doc__ = f"The {_what} of ``data`` within each segment.\n" + _ARGS_DOC
