"""``jax.experimental.layout``: ``Layout`` (an array's device layout) and ``Format``
(layout + sharding), as values. minijax compiles with XLA's default layouts: a ``Format``
is accepted where code builds or inspects one, not as a jit layout request."""

from __future__ import annotations

from typing import Any

__all__ = ["Format", "Layout"]


class Layout:
    """A device layout: the order of dimensions from major to minor, and tiling."""

    def __init__(self, major_to_minor: tuple[int, ...], tiling: tuple = (),
                 sub_byte_element_size_in_bits: int = 0):
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = tuple(tiling)
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def __eq__(self, other) -> bool:
        return isinstance(other, Layout) and (self.major_to_minor, self.tiling) == \
            (other.major_to_minor, other.tiling)

    def __hash__(self) -> int:
        return hash((self.major_to_minor, self.tiling))

    def __repr__(self) -> str:
        return f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling})"


class Format:
    """A layout together with a sharding."""

    def __init__(self, layout: Layout | None = None, sharding: Any = None):
        self.layout = layout
        self.sharding = sharding

    def __eq__(self, other) -> bool:
        return isinstance(other, Format) and (self.layout, self.sharding) == \
            (other.layout, other.sharding)

    def __hash__(self) -> int:
        return hash((self.layout, id(self.sharding)))

    def __repr__(self) -> str:
        return f"Format({self.layout!r}, {self.sharding!r})"
