"""Shardings: ``Mesh``, ``NamedSharding``, ``PartitionSpec``, ``SingleDeviceSharding``.

>>> import minijax, numpy as np
>>> from minijax.sharding import NamedSharding, PartitionSpec as P
>>> mesh = minijax.make_mesh((4, 2), ("data", "model"))       # 8 devices
>>> x = minijax.device_put(np.zeros((8, 4)), NamedSharding(mesh, P("data", "model")))
>>> x.addressable_shards[0].data.shape
(2, 2)
"""

from minijax.runtime.sharding import (AxisType, HloShardingOnDevices, Mesh, NamedSharding,
                                      PartitionSpec, Sharding, SingleDeviceSharding,
                                      make_mesh)
from minijax.runtime.array import Shard

__all__ = ["AxisType", "HloShardingOnDevices", "Mesh", "NamedSharding", "PartitionSpec",
           "Shard", "Sharding", "SingleDeviceSharding", "make_mesh"]
