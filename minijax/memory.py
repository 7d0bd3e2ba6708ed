"""``minijax.memory``: the memory spaces an array's type can name, as ``jax.memory``.

``Space.Device`` is a device's own memory, ``Space.Host`` host memory the device can
address (the ``pinned_host`` / ``unpinned_host`` memory kinds of ``Sharding.memory_kind``),
``Space.Any`` either.

>>> minijax.memory.Space.Host
MemorySpace.Host
"""

from __future__ import annotations

import enum

__all__ = ["Space"]


class MemorySpace(enum.Enum):
    """Where an array lives: ``Device``, ``Host`` or ``Any``."""

    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self) -> str:
        return f"MemorySpace.{self.name}"

    __hash__ = object.__hash__  # by identity, as jax's


Space = MemorySpace
