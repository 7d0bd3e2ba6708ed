"""Shardy (``sdy`` dialect) text for sharded modules: meshes and tensor shardings.

A module partitioned by Shardy declares each mesh it uses once, at module level
(``sdy.mesh @mesh = <["x"=2, "y"=4]>``), and names it in every sharding:
``#sdy.sharding<@mesh, [{"x"}, {}]>`` on parameters and results,
``sdy.sharding_constraint`` for ``with_sharding_constraint`` and
``sdy.manual_computation`` for ``shard_map``. ``Meshes`` is the module's table of
them: rules ask it for a mesh's symbol (declaring it on first use) and the module
renders its declarations before the functions.

Meshes and shardings are duck-typed: a mesh has ``axis_names``, ``shape`` (name ->
size) and ``_flat_devices``; a sharding has ``mesh`` and ``spec`` (with
``axes_of(dim)``; an entry that is ``PartitionSpec.UNCONSTRAINED`` is open).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["Meshes", "dims_text"]


def _axes(names: Iterable[str]) -> str:
    return ", ".join(f'"{a}"' for a in names)


class Meshes:
    """The ``sdy.mesh`` declarations of one module, in the order of first use.

    ``devices``: the module's device assignment (logical device ``i`` is
    ``devices[i]``).
    """

    def __init__(self, devices: Sequence[Any]):
        self.devices = tuple(devices)
        self._pos = {d.id: i for i, d in enumerate(self.devices)}
        self._names: dict[tuple, str] = {}
        self._lines: list[str] = []
        self._count = 0

    def ref(self, mesh: Any) -> str:
        """``@name`` of ``mesh`` in this module (declared on first use).

        Mesh positions are the module's partitions in order, as for GSPMD's iota
        tile assignments (collectives and ``axis_index`` in ``shard_map`` bodies
        number them so): a mesh over the module's devices in another order gets no
        ``device_ids`` (jax refuses such a program)."""
        sizes = tuple((a, int(mesh.shape[a])) for a in mesh.axis_names)
        devs = getattr(mesh, "_flat_devices", None)
        if devs is not None and sizes and any(d.id not in self._pos for d in devs):
            raise ValueError(
                f"a sharding over the mesh {dict(mesh.shape)} of devices "
                f"{[d.id for d in devs]} inside a computation on devices "
                f"{[d.id for d in self.devices]}")
        name = self._names.get(sizes)
        if name is None:
            if not sizes:
                name = "empty_mesh"
            elif not any(n.startswith("mesh") for n in self._names.values()):
                name = "mesh"
            else:
                name = f"mesh_{self._count}"
                self._count += 1
            self._names[sizes] = name
            body = ", ".join(f'"{a}"={n}' for a, n in sizes)
            axes = ", ".join(f'{{name = "{a}", size = {n} : i64}}' for a, n in sizes)
            self._lines.append(f"  sdy.mesh @{name} = <[{body}]> "
                               f"{{stablehlo.mesh = {{axes = [{axes}]}}}}")
        return "@" + name

    def maximal(self, index: int) -> str:
        """``@maximal_mesh_<index>``: the mesh of logical device ``index`` alone (a value
        kept whole on that one device, as host callbacks' operands are)."""
        key = ("maximal", index)
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = f"maximal_mesh_{index}"
            self._lines.append(f"  sdy.mesh @{name} = <[], device_ids=[{index}]> "
                               f"{{stablehlo.mesh = {{axes = [], device_ids = dense<{index}> "
                               f": tensor<1xi64>}}}}")
        return "@" + name

    def sharding(self, sharding: Any, ndim: int, open_dims: bool = False) -> str:
        """``<@mesh, [{"x"}, {}]>``: ``sharding`` of an ``ndim``-d value (every
        dimension open to further sharding with ``open_dims``)."""
        return f"<{self.ref(sharding.mesh)}, {dims_text(sharding.spec, ndim, open_dims)}>"

    def attr(self, sharding: Any, ndim: int) -> str:
        """``#sdy.sharding<...>``: the attribute of a parameter or result."""
        return "#sdy.sharding" + self.sharding(sharding, ndim)

    def replicated(self, mesh: Any, ndim: int) -> str:
        """``<@mesh, [{}, ...]>``: replicated over ``mesh``."""
        return f"<{self.ref(mesh)}, [{', '.join(['{}'] * ndim)}]>"

    def lines(self) -> list[str]:
        return list(self._lines)


def dims_text(spec: Any, ndim: int, open_dims: bool = False) -> str:
    """``[{"x"}, {"y", "z"}, {}]`` for ``spec`` over ``ndim`` dimensions (``{?}``: an
    unconstrained entry; with ``open_dims``, ``{"x", ?}``/``{?}`` for every one)."""
    parts = []
    for d in range(ndim):
        entry = spec[d] if d < len(spec) else None
        if entry is not None and not isinstance(entry, (str, tuple)):  # UNCONSTRAINED
            parts.append("{?}")
            continue
        names = spec.axes_of(d) if d < len(spec) else ()
        if open_dims:
            parts.append(f"{{{_axes(names)}, ?}}" if names else "{?}")
        else:
            parts.append(f"{{{_axes(names)}}}")
    return "[" + ", ".join(parts) + "]"
