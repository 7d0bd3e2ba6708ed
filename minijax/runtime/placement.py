"""``Placement``: where a computation over several devices runs and how its values are
laid out (the key jit's multi-device executables are cached on)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Placement"]


class Placement:
    """Where a computation over several devices runs, and how its values are laid out.

    ``devices``: the devices, in the order the HLO shardings number them (logical
    partition ``i`` runs on ``devices[i]``); ``in_shardings``: one sharding per input;
    ``out_shardings``: one per output, or None where XLA's partitioner chooses;
    ``in_specified``: per input, whether its sharding was asked for (by ``in_shardings``
    or the argument's own layout) rather than made up (replicated), as an exported
    function records it (None: all were). Hashable: jit keys its executables on it.
    """

    __slots__ = ("devices", "in_shardings", "out_shardings", "in_specified", "_hash")

    def __init__(self, devices: Sequence, in_shardings: Sequence, out_shardings: Sequence | None,
                 in_specified: Sequence[bool] | None = None):
        self.devices = tuple(devices)
        self.in_shardings = tuple(in_shardings)
        self.out_shardings = None if out_shardings is None else tuple(out_shardings)
        self.in_specified = None if in_specified is None or all(in_specified) \
            else tuple(bool(b) for b in in_specified)
        self._hash = hash((self.devices, self.in_shardings, self.out_shardings,
                           self.in_specified))

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, Placement) and self.devices == other.devices
                and self.in_shardings == other.in_shardings
                and self.out_shardings == other.out_shardings
                and self.in_specified == other.in_specified)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return (f"Placement(devices={[d.id for d in self.devices]}, "
                f"in_shardings={self.in_shardings}, out_shardings={self.out_shardings})")

    def with_outputs(self, out_shardings: Sequence | None) -> Placement:
        return Placement(self.devices, self.in_shardings, out_shardings, self.in_specified)
