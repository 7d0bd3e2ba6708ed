"""Building sharded Arrays from per-device pieces (``minijax.make_array_from_*``).

Example::

    >>> mesh = minijax.make_mesh((8,), ("x",))
    >>> s = NamedSharding(mesh, P("x"))
    >>> x = np.arange(16.0).reshape(8, 2)
    >>> make_array_from_callback(x.shape, s, lambda index: x[index])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax.config import config
from minijax.core import dtypes
from minijax.core.aval import ShapedArray, canonicalize_shape
from minijax.runtime import sharding as _sharding
from minijax.runtime.array import Array, _sharding_of_aval
from minijax.runtime.transfer import from_shards, put_numpy

__all__ = ["make_array_from_callback", "make_array_from_process_local_data",
           "make_array_from_single_device_arrays"]


def _check_sharding(sharding: Any, what: str) -> None:
    if not _sharding.is_sharding(sharding):
        raise TypeError(f"{what}: sharding must be a minijax sharding (NamedSharding, "
                        f"SingleDeviceSharding), got {sharding!r}")


def make_array_from_callback(shape: Sequence[int], sharding: Any,
                             data_callback: Callable[[tuple], Any], dtype=None) -> Array:
    """The Array of ``shape`` laid out as ``sharding`` whose shard on each of this
    process's devices is ``data_callback(index)`` (``index``: a tuple of slices into
    the global array). Replicas of a slice call it once."""
    if not isinstance(shape, tuple):  # jax hashes it: a list is a TypeError there too
        raise TypeError(f"make_array_from_callback: shape must be a tuple of ints, got "
                        f"{shape!r}")
    shape = canonicalize_shape(shape, "shape of make_array_from_callback")
    _check_sharding(sharding, "make_array_from_callback")
    if isinstance(sharding, _sharding.Sharding):
        _sharding.check_sharding_shape(sharding, shape, "make_array_from_callback: an array")
    index_map = sharding.addressable_devices_indices_map(shape)
    cache: dict[tuple, np.ndarray] = {}
    pieces, devices = [], []
    for d, index in index_map.items():
        key = tuple((i.start, i.stop) for i in index)
        piece = cache.get(key)
        if piece is None:
            value = data_callback(index)
            if isinstance(value, Array):
                value = np.asarray(value)
            piece = cache[key] = np.asarray(value, dtype=dtype)
        pieces.append(piece)
        devices.append(d)
    if not pieces:
        raise ValueError("make_array_from_callback: the sharding has no device in this process")
    dt = dtypes.canonicalize(np.dtype(dtype if dtype is not None else pieces[0].dtype))
    pieces = [np.ascontiguousarray(p, dtype=dt) for p in pieces]
    if not isinstance(sharding, _sharding.Sharding):  # one device
        if pieces[0].shape != shape:
            raise ValueError(f"make_array_from_callback: the callback returned shape "
                             f"{pieces[0].shape} for the whole array of shape {shape}")
        return put_numpy(pieces[0], False, devices[0])
    return from_shards(pieces, devices, ShapedArray(shape, dt), sharding)


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Any,
                                         arrays: Sequence[Array]) -> Array:
    """The Array of ``shape`` laid out as ``sharding`` made of ``arrays``: one
    single-device Array per device of this process, each holding that device's slice
    (no copy: the result uses their buffers)."""
    shape = tuple(int(d) for d in shape)
    _check_sharding(sharding, "make_array_from_single_device_arrays")
    arrays = list(arrays)
    for a in arrays:
        if type(a) is not Array or id(a.aval) in _sharding_of_aval:
            raise TypeError("make_array_from_single_device_arrays: expected single-device "
                            f"minijax Arrays, got {a!r}")
        a._check_alive()
    if not isinstance(sharding, _sharding.Sharding):
        if len(arrays) != 1 or arrays[0].shape != shape:
            raise ValueError("make_array_from_single_device_arrays: a SingleDeviceSharding "
                             f"takes one array of shape {shape}")
        return arrays[0]
    _sharding.check_sharding_shape(sharding, shape,
                                   "make_array_from_single_device_arrays: an array")
    devices = list(sharding.addressable_devices_indices_map(shape))
    by_device = {a.device: a for a in arrays}
    if len(by_device) != len(arrays) or set(by_device) != set(devices):
        raise ValueError(
            "make_array_from_single_device_arrays: expected one array on each of the "
            f"devices {[d.id for d in devices]}, got arrays on "
            f"{[a.device.id for a in arrays]}")
    expected = sharding.shard_shape(shape)
    for a in arrays:
        if a.shape != expected:
            raise ValueError(f"make_array_from_single_device_arrays: the array on {a.device} "
                             f"has shape {a.shape}, but {sharding} lays out {shape} in "
                             f"shards of shape {expected}")
    dts = {(a.dtype, a.weak_type) for a in arrays}
    if len(dts) != 1:
        raise ValueError(f"make_array_from_single_device_arrays: the arrays' dtypes differ: "
                         f"{sorted(str(d) for d, _ in dts)}")
    dt, weak = dts.pop()
    return from_shards([by_device[d]._buf for d in devices], devices,
                       ShapedArray(shape, dt, weak), sharding)


def make_array_from_process_local_data(sharding: Any, local_data: Any,
                                       global_shape: Sequence[int] | None = None) -> Array:
    """The global Array laid out as ``sharding`` whose part on this process's devices
    comes from ``local_data``, this process's contiguous block of it. With one process
    ``local_data`` is the whole array."""
    _check_sharding(sharding, "make_array_from_process_local_data")
    local = np.asarray(local_data)
    local = local.astype(dtypes.canonicalize(local.dtype), copy=False) \
        if not config.enable_x64 else local
    if global_shape is None:
        global_shape = _global_shape(sharding, local.shape)
    shape = tuple(int(d) for d in global_shape)
    if not isinstance(sharding, _sharding.Sharding):
        return put_numpy(local, False, sharding._device)
    index_map = sharding.addressable_devices_indices_map(shape)
    # This process's block: per dimension, the range its devices cover.
    lo = [min(i[k].indices(shape[k])[0] for i in index_map.values()) for k in range(len(shape))]
    hi = [max(i[k].indices(shape[k])[1] for i in index_map.values()) for k in range(len(shape))]
    block = tuple(h - low for low, h in zip(lo, hi))
    if local.shape != block:
        raise ValueError(f"make_array_from_process_local_data: this process holds a block of "
                         f"shape {block} of the global shape {shape}, but local_data has "
                         f"shape {local.shape}")

    def piece(index):
        return local[tuple(slice(s.indices(n)[0] - low, s.indices(n)[1] - low)
                           for s, n, low in zip(index, shape, lo))]
    return make_array_from_callback(shape, sharding, piece)


def _global_shape(sharding: Any, local_shape: tuple) -> tuple:
    if not isinstance(sharding, _sharding.NamedSharding):
        return local_shape
    mesh = sharding.mesh
    procs = {d.process_index for d in mesh.devices.flat}
    if len(procs) == 1:
        return local_shape
    out = list(local_shape)
    for dim in range(len(local_shape)):
        for a in sharding.spec.axes_of(dim):
            axis = mesh.axis_names.index(a)
            # how many processes this axis spans: distinct process ids along it
            along = np.moveaxis(mesh.devices, axis, 0).reshape(mesh.devices.shape[axis], -1)
            n = len({d.process_index for d in along[:, 0]})
            out[dim] *= n
    return tuple(out)
