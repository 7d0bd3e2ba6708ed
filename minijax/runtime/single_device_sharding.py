"""jaxlib's ``SingleDeviceSharding`` (what a one-device array reports), given the queries
minijax's own shardings answer (``devices_indices_map``, ``shard_shape``, ``hlo_text``,
``memory_kind``...) and value equality, where jaxlib lacks them."""

from __future__ import annotations

from jaxlib import _jax

__all__ = ["SingleDeviceSharding"]

SingleDeviceSharding = _jax.SingleDeviceSharding


def _sds_indices_map(self, global_shape):
    return {self._device: tuple(slice(None) for _ in global_shape)}


def _sds_shard_shape(self, global_shape):
    return tuple(global_shape)


def _sds_hlo_text(self, ndim):
    return "{replicated}"


def _sds_with_memory_kind(self, kind):
    return SingleDeviceSharding(self._device, memory_kind=kind)


def _sds_eq(self, other):
    return self is other or (type(other) is SingleDeviceSharding and
                             self._device == other._device and
                             self._memory_kind == other._memory_kind)


def _sds_hash(self):
    return hash((self._device, self._memory_kind))


for _name, _member in {
        "devices_indices_map": _sds_indices_map,
        "addressable_devices_indices_map": _sds_indices_map,
        "shard_shape": _sds_shard_shape,
        "hlo_text": _sds_hlo_text,
        "memory_kind": property(lambda self: self._memory_kind),
        "with_memory_kind": _sds_with_memory_kind,
}.items():
    if not hasattr(SingleDeviceSharding, _name):
        setattr(SingleDeviceSharding, _name, _member)
if "__eq__" not in SingleDeviceSharding.__dict__:  # identity otherwise (jax adds its own)
    SingleDeviceSharding.__eq__ = _sds_eq
    SingleDeviceSharding.__hash__ = _sds_hash
