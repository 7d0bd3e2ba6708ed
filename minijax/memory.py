"""``minijax.memory``: the memory spaces an array's type can name, as ``jax.memory``.

``Space.Device`` is a device's own memory, ``Space.Host`` host memory the device can
address (the ``pinned_host`` / ``unpinned_host`` memory kinds of ``Sharding.memory_kind``),
``Space.Any`` either.

>>> minijax.memory.Space.Host
MemorySpace.Host
"""

from __future__ import annotations

from minijax.core.aval import MemorySpace

__all__ = ["Space"]

Space = MemorySpace
