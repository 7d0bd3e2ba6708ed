"""Shardings: ``Mesh``, ``NamedSharding``, ``PartitionSpec``, ``SingleDeviceSharding``.

>>> import minijax, numpy as np
>>> from minijax.sharding import NamedSharding, PartitionSpec as P
>>> mesh = minijax.make_mesh((4, 2), ("data", "model"))       # 8 devices
>>> x = minijax.device_put(np.zeros((8, 4)), NamedSharding(mesh, P("data", "model")))
>>> x.addressable_shards[0].data.shape
(2, 2)
"""

from minijax.runtime.sharding import (AbstractMesh, AxisType, HloShardingOnDevices, Mesh,
                                      NamedSharding, PartitionSpec, Sharding, SingleDeviceSharding,
                                      make_mesh)
from minijax.runtime.array import Shard
from minijax._unsupported import _SHARDING_IN_TYPES, reshard, set_mesh, unsupported_function

__all__ = ["AbstractMesh", "AxisType", "HloShardingOnDevices", "Mesh", "NamedSharding",
           "PartitionSpec", "Shard", "Sharding", "SingleDeviceSharding", "make_mesh",
           "make_single_device_sharding", "reshard", "set_mesh"]


def make_single_device_sharding(device, *, memory_kind: str | None = None):
    """The sharding that places a whole array on ``device``."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


# jax's sharding-in-types API (abstract meshes, explicit/manual axes, a current mesh):
# present, and raising NotImplementedError that says so.
AbstractDevice = unsupported_function("AbstractDevice", _SHARDING_IN_TYPES)
ManualAxisType = unsupported_function("ManualAxisType", _SHARDING_IN_TYPES)
auto_axes = unsupported_function("auto_axes", _SHARDING_IN_TYPES)
explicit_axes = unsupported_function("explicit_axes", _SHARDING_IN_TYPES)
get_abstract_mesh = unsupported_function("get_abstract_mesh", _SHARDING_IN_TYPES)
get_mesh = unsupported_function("get_mesh", _SHARDING_IN_TYPES)
use_abstract_mesh = unsupported_function("use_abstract_mesh", _SHARDING_IN_TYPES)
