"""Shardings: ``Mesh``, ``NamedSharding``, ``PartitionSpec``, ``SingleDeviceSharding``.

>>> import minijax, numpy as np
>>> from minijax.sharding import NamedSharding, PartitionSpec as P
>>> mesh = minijax.make_mesh((4, 2), ("data", "model"))       # 8 devices
>>> x = minijax.device_put(np.zeros((8, 4)), NamedSharding(mesh, P("data", "model")))
>>> x.addressable_shards[0].data.shape
(2, 2)
"""

from minijax.runtime.sharding import (AbstractMesh, AxisType, HloShardingOnDevices, Mesh,
                                      NamedSharding, PartitionSpec, Sharding,
                                      SingleDeviceSharding, get_abstract_mesh, get_mesh,
                                      make_mesh, set_mesh)
from minijax.runtime.array import Shard
from minijax.runtime.transfer import device_put_tree
from minijax.core.trace import Tracer
from minijax.lax.sharding import with_sharding_constraint
from minijax._pytree import tree_flatten, tree_unflatten
from minijax._unsupported import _SHARDING_IN_TYPES, unsupported_function

__all__ = ["AbstractMesh", "AxisType", "HloShardingOnDevices", "Mesh", "NamedSharding",
           "PartitionSpec", "Shard", "Sharding", "SingleDeviceSharding", "get_abstract_mesh",
           "get_mesh", "make_mesh", "make_single_device_sharding", "reshard", "set_mesh"]


def make_single_device_sharding(device, *, memory_kind: str | None = None):
    """The sharding that places a whole array on ``device``."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def reshard(xs, out_shardings):
    """``xs`` (a pytree) laid out as ``out_shardings`` (one sharding or PartitionSpec for
    every leaf, or a pytree like ``xs``): moved eagerly, a sharding constraint under jit.

    As in jax, the shardings may split arrays only over *explicit* mesh axes (sharding
    in types: the result's ``minijax.typeof(...).sharding`` says so); an Auto or Manual
    axis raises ValueError, as jax does. Use ``device_put`` or
    ``lax.with_sharding_constraint`` for Auto axes.

    >>> mesh = minijax.make_mesh((8,), ("x",))          # explicit axes by default
    >>> minijax.typeof(reshard(jnp.zeros(8), NamedSharding(mesh, P("x")))).sharding.spec
    PartitionSpec('x')
    """
    leaves, tree = tree_flatten(xs)
    is_spec = lambda s: isinstance(s, PartitionSpec)
    if isinstance(out_shardings, (Sharding, PartitionSpec)):
        per_leaf = [out_shardings] * len(leaves)
    else:
        per_leaf = tree_flatten(out_shardings, is_leaf=is_spec)[0]
        if len(per_leaf) != len(leaves):
            raise ValueError(f"reshard: {len(per_leaf)} shardings for {len(leaves)} arrays")
    outs = []
    for x, s in zip(leaves, per_leaf):
        if isinstance(s, PartitionSpec):
            if get_abstract_mesh().empty:
                raise ValueError(
                    "Using PartitionSpec when you are not under a mesh context is not "
                    "allowed. Please pass a NamedSharding instance or enter into a mesh "
                    f"context via `minijax.set_mesh`. Got {s}")
            s = NamedSharding(get_mesh(), s)
        spec = getattr(s, "spec", None)
        if spec is not None:
            types = dict(zip(s.mesh.axis_names, s.mesh.axis_types))
            axis = next((a for d in range(len(spec)) for a in spec.axes_of(d)
                         if types[a] != AxisType.Explicit), None)
            if axis is not None:
                raise ValueError(
                    f"PartitionSpec passed to reshard cannot contain axis names that are "
                    f"of type Auto or Manual. Got PartitionSpec: {spec} with axis name: "
                    f"{axis} of type: {types[axis]!r}. (Use device_put or "
                    "lax.with_sharding_constraint for Auto axes.)")
        if isinstance(x, Tracer):
            outs.append(with_sharding_constraint(x, s))
        else:
            outs.append(device_put_tree(x, s))
    return tree_unflatten(tree, outs)


# jax's sharding-in-types API (abstract meshes, explicit/manual axes, a current mesh):
# present, and raising NotImplementedError that says so.
AbstractDevice = unsupported_function("AbstractDevice", _SHARDING_IN_TYPES)
ManualAxisType = unsupported_function("ManualAxisType", _SHARDING_IN_TYPES)
auto_axes = unsupported_function("auto_axes", _SHARDING_IN_TYPES)
explicit_axes = unsupported_function("explicit_axes", _SHARDING_IN_TYPES)
use_abstract_mesh = unsupported_function("use_abstract_mesh", _SHARDING_IN_TYPES)
