"""Memory kinds: the memories a device addresses (``device``, ``pinned_host``,
``unpinned_host`` on CPU), as shardings name them (``Sharding.memory_kind``).

minijax keeps arrays in device memory; a sharding may name another memory kind (checked
as jax checks it), but placing data there is refused (``check_device_memory``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["canonical_memory_kind", "check_device_memory"]

_default_kinds: dict = {}  # device -> its default memory kind


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


def check_device_memory(sharding: Any, what: str) -> None:
    """NotImplementedError for a sharding in memory other than the devices' own: minijax
    keeps arrays in device memory (the sharding would report a memory the data is not
    in)."""
    kind = getattr(sharding, "_memory_kind", None)
    if kind is None or kind == "device":
        return
    raise NotImplementedError(
        f"{what}: memory kind {kind!r} is not supported by minijax, which keeps arrays in "
        "device memory (memory_kind='device')")
