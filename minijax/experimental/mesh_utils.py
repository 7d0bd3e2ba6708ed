"""Device meshes for ``minijax.sharding.Mesh`` (mirrors ``jax.experimental.mesh_utils``).

minijax runs on CPU and GPU, where jax has no topology to exploit: a mesh is the
devices in order (on GPU, ordered by id), reshaped to the requested shape. jax's
TPU-specific layouts (``device_kind_handler_dict``) have no counterpart here; a
handler registered in ``device_kind_handler_dict`` for a device kind is used as jax
uses it.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "device_kind_handler_dict"]

# device_kind -> handler(mesh_shape, devices, *, contiguous_submeshes) -> ndarray | None
device_kind_handler_dict: dict[str, Callable[..., np.ndarray | None]] = {}


def _axis_sizes(mesh_shape: Sequence[int]) -> tuple[int, ...] | None:
    sizes = []
    for size in mesh_shape:  # a non-iterable is a TypeError, as in jax
        try:
            sizes.append(int(size))
        except (TypeError, ValueError):
            return None
    return tuple(sizes)


def _all_devices() -> list:
    from minijax.runtime.backend import devices
    return list(devices())


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
    """An object array of devices of shape ``mesh_shape``, for ``Mesh``.

    Args:
      mesh_shape: the logical mesh's axis sizes (most communication-heavy last).
      devices: the devices to arrange; default ``minijax.devices()``.
      contiguous_submeshes, allow_split_physical_axes: accepted for jax's
        signature; on CPU and GPU meshes every arrangement is contiguous.

    Raises:
      ValueError: ``mesh_shape`` is not a sequence of ints, or its product is not
        the number of devices.
    """
    del allow_split_physical_axes  # no physical topology on CPU/GPU
    if devices is None:
        devices = _all_devices()
    shape = _axis_sizes(mesh_shape)
    if shape is None:
        raise ValueError(f"`mesh_shape` passed to `create_device_mesh` should be a sequence "
                         f"of ints. Got {mesh_shape}")
    if math.prod(shape) != len(devices):
        raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                         f"mesh_shape {shape}")
    last = devices[-1]
    handler = device_kind_handler_dict.get(getattr(last, "device_kind", None))
    if handler is not None:
        mesh = handler(shape, devices, contiguous_submeshes=contiguous_submeshes)
        if mesh is not None:
            return mesh
    ordered = list(devices)
    if getattr(last, "platform", None) == "gpu":
        # XLA numbers GPUs by topology; the process order of devices() need not follow it
        ordered.sort(key=lambda d: d.id)
    mesh = np.empty(len(ordered), dtype=object)
    mesh[:] = ordered
    return mesh.reshape(shape)


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
    """A mesh for two networks: one ``create_device_mesh(mesh_shape)`` per granule (a
    slice, or a process with ``process_is_granule=True``), laid out as a grid of shape
    ``dcn_mesh_shape``; the result's shape is the two shapes multiplied axis by axis.

    Raises:
      ValueError: the devices lack the granule attribute (CPU and GPU devices have no
        ``slice_index``: pass ``process_is_granule=True``), the number of granules is
        not the product of ``dcn_mesh_shape``, or a granule's device count is not the
        product of ``mesh_shape``.
    """
    if devices is None:
        devices = _all_devices()
    attr = "process_index" if process_is_granule else "slice_index"
    if not hasattr(devices[0], attr):
        raise ValueError(f"Device {devices[0]} does not have attribute {attr}. See "
                         f"`process_is_granule` option.")
    groups: dict[Any, list] = collections.defaultdict(list)
    for d in devices:
        groups[getattr(d, attr)].append(d)
    keys = sorted(groups) if should_sort_granules_by_key else list(groups)
    granules = [groups[k] for k in keys]
    if math.prod(dcn_mesh_shape) != len(granules):
        raise ValueError(f"Number of slices {len(granules)} must equal the product of "
                         f"dcn_mesh_shape {dcn_mesh_shape}")
    meshes = [create_device_mesh(mesh_shape, g,
                                 allow_split_physical_axes=allow_split_physical_axes)
              for g in granules]
    grid = np.empty(len(meshes), dtype=object)
    for i, m in enumerate(meshes):  # one block per cell (not broadcast into the grid)
        grid[i] = m
    grid = grid.reshape(tuple(dcn_mesh_shape))
    return np.block(grid.tolist())
