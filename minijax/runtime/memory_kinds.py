"""Memory kinds: the memories a device addresses (``device``, ``pinned_host``,
``unpinned_host`` on CPU), as shardings name them (``Sharding.memory_kind``).

An array lives in one of them: ``device_put(x, SingleDeviceSharding(d,
memory_kind="pinned_host"))`` puts it in that memory of ``d`` (jaxlib's memory
spaces); its ``.sharding.memory_kind`` says where it is, and its type says
``MemorySpace.Host`` for ``pinned_host`` (``f32<host>[8]``), ``MemorySpace.Device``
otherwise, as in jax. The interned avals of arrays outside device memory are
recorded here (``memory_of_aval``), so the dispatch paths, which look arrays up by the
id of their aval, tell them apart from device arrays at no cost.
"""

from __future__ import annotations

from typing import Any

from jaxlib import _jax

__all__ = ["ALWAYS_COPY", "REUSE_INPUT", "canonical_memory_kind", "is_default_kind",
           "memory_of_aval"]

# device_put's copy semantics (its ``copy_semantics`` parameter), jaxlib's enum as jax's
ALWAYS_COPY = _jax.ArrayCopySemantics.ALWAYS_COPY
REUSE_INPUT = _jax.ArrayCopySemantics.REUSE_INPUT

_default_kinds: dict = {}  # device -> its default memory kind
# id of an interned aval -> the SingleDeviceSharding (with a memory kind other than
# "device") of the single-device arrays that have it
memory_of_aval: dict[int, Any] = {}


def canonical_memory_kind(kind: Any, device: Any) -> str | None:
    """``kind`` checked against the memories ``device`` addresses (jax's ValueError),
    None as the device's default memory kind (None without a device: an abstract
    mesh)."""
    if device is None:
        return kind
    if kind is None:
        default = _default_kinds.get(device)
        if default is None:
            default = _default_kinds[device] = device.default_memory().kind
        return default
    kinds = [m.kind for m in device.addressable_memories()]
    if kind not in kinds:
        raise ValueError(f"Could not find memory addressable by device {device.platform}. "
                         f"Device {device.platform} can address the following memory kinds: "
                         f"{', '.join(kinds)}. Got memory kind: {kind}")
    return kind


def is_default_kind(kind: str | None) -> bool:
    """Whether ``kind`` is the devices' own memory (None: unspecified)."""
    return kind is None or kind == "device"
