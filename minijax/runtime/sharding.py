"""Shardings: how an array's elements are laid out over devices.

``Mesh`` names the axes of an n-d grid of devices; ``PartitionSpec`` says, per array
dimension, which mesh axes split it; ``NamedSharding(mesh, spec)`` is the pair.
``SingleDeviceSharding`` is jaxlib's own class (every unsharded array has one), with
the same query methods added. ``HloShardingOnDevices`` covers layouts that XLA's
partitioner chose and that no ``PartitionSpec`` over the mesh describes.

Every sharding here can say, for a global shape, which slice each device holds
(``devices_indices_map``), and gives the two things jaxlib and XLA need: an
``HloSharding`` (``_to_xla_hlo_sharding(ndim)``, written into modules as
``mhlo.sharding``) and a device list in the order the HLO sharding numbers devices
(``_device_assignment``). jaxlib's buffers of a sharded array carry a jaxlib
``GSPMDSharding`` made from the two (``jaxlib_sharding``).

Example::

    >>> mesh = Mesh(np.array(devices()[:8]).reshape(4, 2), ("data", "model"))
    >>> s = NamedSharding(mesh, PartitionSpec("data", None))
    >>> s.shard_shape((16, 6))
    (4, 6)
    >>> s._to_xla_hlo_sharding(2)
    {devices=[4,1,2]<=[8] last_tile_dim_replicate}
"""

from __future__ import annotations

import enum
import functools
import itertools
import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib import _jax, xla_client

from minijax.core import aval as _aval
from minijax.core import sharding_rules as _srules
from minijax.runtime.memory_kinds import canonical_memory_kind  # noqa: F401
from minijax.runtime import backend as _backend
from minijax.runtime.single_device_sharding import SingleDeviceSharding


class IndivisibleError(ValueError):
    """A sharding splits a dimension over a number of devices that does not divide it
    (jax's ``jax._src.sharding.IndivisibleError``, a ValueError)."""


class DuplicateSpecError(Exception):
    """A ``PartitionSpec`` given to ``NamedSharding`` names a mesh axis twice (jax's
    ``jax._src.named_sharding.DuplicateSpecError``; as there, not a ValueError)."""

    def __init__(self, message: str, mesh: Any = None, pspec: Any = None):
        super().__init__(message)
        self.message, self.mesh, self.pspec = message, mesh, pspec


__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "HloShardingOnDevices", "Mesh",
           "NamedSharding", "PartitionSpec", "Sharding", "SingleDeviceSharding", "UNCONSTRAINED",
           "hlo_sharding_from_text", "jaxlib_sharding", "spec_of_hlo",
           "get_abstract_mesh", "get_mesh", "make_mesh", "named_from_spec", "set_mesh",
           "sharding_from_hlo"]

Index = tuple[slice, ...]


class AxisType(enum.Enum):
    """How a mesh axis is used. ``Auto``: XLA's partitioner decides the layout of
    intermediates; ``Explicit``: the layout is part of each value's type
    (``minijax.typeof(x).sharding``), propagated by each operation's sharding rule
    (sharding in types, ``core/sharding_rules.py``); ``Manual``: inside ``shard_map``."""

    Auto = "auto"
    Explicit = "explicit"
    Manual = "manual"

    def __repr__(self) -> str:
        return self.name


class _Unconstrained:
    """``PartitionSpec.UNCONSTRAINED``: let the partitioner choose this dimension."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCONSTRAINED"

    def __reduce__(self):
        return (_Unconstrained, ())


UNCONSTRAINED = _Unconstrained()


class PartitionSpec(tuple):
    """Per array dimension: ``None`` (not split), a mesh axis name, or a tuple of
    names (split over their product, major to minor). Trailing dimensions that the
    spec does not mention are not split.

    >>> PartitionSpec("x", None)
    PartitionSpec('x', None)
    """

    UNCONSTRAINED = UNCONSTRAINED

    def __new__(cls, *parts):
        norm = []
        for p in parts:
            if isinstance(p, list):
                p = tuple(p)
            if isinstance(p, tuple):
                if not all(isinstance(a, str) for a in p):
                    raise TypeError(f"PartitionSpec entries must be None, a mesh axis name "
                                    f"or a tuple of names; got {p!r}")
                p = p[0] if len(p) == 1 else (p or None)
            elif p is not None and p is not UNCONSTRAINED and not isinstance(p, str):
                raise TypeError(f"PartitionSpec entries must be None, a mesh axis name or "
                                f"a tuple of names; got {p!r}")
            norm.append(p)
        return super().__new__(cls, norm)

    def __repr__(self) -> str:
        return f"PartitionSpec{tuple.__repr__(self)}" if len(self) != 1 else \
            f"PartitionSpec({self[0]!r})"

    def __reduce__(self):
        return (PartitionSpec, tuple(self))

    def axes_of(self, dim: int) -> tuple[str, ...]:
        """The mesh axes that split dimension ``dim`` (major first)."""
        if dim >= len(self):
            return ()
        p = self[dim]
        if p is None or p is UNCONSTRAINED:
            return ()
        return (p,) if isinstance(p, str) else tuple(p)

    def _normalized(self, ndim: int) -> tuple:
        """The entries padded with None to ``ndim`` (trailing Nones dropped for equality)."""
        parts = list(self) + [None] * (ndim - len(self))
        return tuple(parts)


class Sharding:
    """Base class of minijax's shardings (``NamedSharding``, ``HloShardingOnDevices``)."""

    # -- what subclasses define
    @property
    def _device_assignment(self) -> tuple:
        raise NotImplementedError

    def _to_xla_hlo_sharding(self, num_dimensions: int) -> xla_client.HloSharding:
        raise NotImplementedError

    # -- derived queries
    @property
    def device_set(self) -> set:
        """The devices holding a part of an array with this sharding."""
        return set(self._device_assignment)

    @property
    def num_devices(self) -> int:
        return len(self._device_assignment)

    @property
    def is_fully_addressable(self) -> bool:
        """Whether every device belongs to this process."""
        return all(_is_local(d) for d in self._device_assignment)

    @property
    def addressable_devices(self) -> set:
        return {d for d in self._device_assignment if _is_local(d)}

    @property
    def memory_kind(self) -> str:
        return "device"

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict[Any, Index]:
        """For each device, the slice of an array of ``global_shape`` it holds."""
        shape = tuple(global_shape)
        return dict(zip(self._device_assignment, _hlo_indices(
            self._to_xla_hlo_sharding(len(shape)), shape, len(self._device_assignment))))

    def addressable_devices_indices_map(self, global_shape: Sequence[int]) -> dict:
        return {d: i for d, i in self.devices_indices_map(global_shape).items()
                if _is_local(d)}

    def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of each device's slice (``ValueError`` if a dimension does not
        divide evenly)."""
        shape = tuple(global_shape)
        hlo = self._to_xla_hlo_sharding(len(shape))
        if hlo.is_replicated() or hlo.is_maximal():
            return shape
        tiles = hlo.tile_assignment_dimensions()
        out = []
        for dim, (n, t) in enumerate(zip(shape, tiles)):
            if n % t:
                raise IndivisibleError(f"{self}: dimension {dim} of shape {shape} ({n}) is "
                                       f"not divisible by the {t} devices that split it")
            out.append(n // t)
        return tuple(out)

    def is_equivalent_to(self, other: Any, ndim: int) -> bool:
        """Whether both put the same slices of an ``ndim``-d array on the same devices."""
        try:
            return (tuple(self._device_assignment) == tuple(other._device_assignment)
                    and getattr(self, "memory_kind", None) == getattr(other, "memory_kind", None)
                    and self._to_xla_hlo_sharding(ndim) == other._to_xla_hlo_sharding(ndim))
        except (AttributeError, ValueError):
            return False

    def _is_replicated_for(self, ndim: int) -> bool:
        return self._to_xla_hlo_sharding(ndim).is_replicated()


if not hasattr(SingleDeviceSharding, "is_equivalent_to"):
    SingleDeviceSharding.is_equivalent_to = Sharding.is_equivalent_to


def _is_local(device) -> bool:
    return device.process_index == device.client.process_index()


class Mesh:
    """An n-d grid of devices with a name per axis.

    Args:
      devices: an array (or nested sequence) of devices; its shape is the mesh shape.
      axis_names: one name per mesh axis.
      axis_types: one ``AxisType`` per axis (only ``Auto`` is supported).

    >>> mesh = Mesh(np.array(minijax.devices()[:8]).reshape(4, 2), ("x", "y"))
    >>> mesh.shape
    {'x': 4, 'y': 2}
    """

    def __init__(self, devices: Any, axis_names: str | Sequence[str],
                 axis_types: AxisType | Sequence[AxisType] | None = None):
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        devs = np.array(devices, dtype=object)
        if devs.ndim != len(axis_names):
            raise ValueError(f"Mesh: the devices array has {devs.ndim} dimensions "
                             f"{devs.shape} but {len(axis_names)} axis names {axis_names} "
                             "were given")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh: axis names must be distinct, got {axis_names}")
        for a in axis_names:
            if not isinstance(a, str):
                raise TypeError(f"Mesh: axis names must be str, got {a!r}")
        flat = list(devs.flat)
        if not flat:
            raise ValueError("Mesh: no devices")
        for d in flat:
            if not isinstance(d, _backend.Device):
                raise TypeError(f"Mesh: expected devices, got {d!r}")
        if len(set(flat)) != len(flat):
            raise ValueError(f"Mesh: a device appears twice in {flat}")
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(axis_names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(axis_names)
        axis_types = tuple(axis_types)
        if len(axis_types) != len(axis_names):
            raise ValueError(f"Mesh: {len(axis_types)} axis types for {len(axis_names)} axes")
        for t in axis_types:
            if not isinstance(t, AxisType):
                raise TypeError(f"Mesh: axis_types must be AxisType values, got {t!r}")
        devs.flags.writeable = False
        self.devices = devs
        self.axis_names = axis_names
        self.axis_types = axis_types
        self._key = (tuple(d.id for d in flat), devs.shape, axis_names, axis_types)
        self._hash = hash(self._key)

    @property
    def shape(self) -> dict[str, int]:
        """Axis name -> size, in axis order."""
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return self.devices.size

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def _flat_devices(self) -> tuple:
        return tuple(self.devices.flat)

    @property
    def empty(self) -> bool:
        return not self.axis_names

    @classmethod
    def _empty(cls) -> Mesh:
        """The mesh without axes or devices (``get_mesh()`` when none is set)."""
        m = cls.__new__(cls)
        m.devices = np.empty((0,), dtype=object)
        m.axis_names, m.axis_types = (), ()
        m._key = ((), (0,), (), ())
        m._hash = hash(m._key)
        return m

    @property
    def abstract_mesh(self) -> AbstractMesh:
        am = self.__dict__.get("_abstract")
        if am is None:
            am = self.__dict__["_abstract"] = AbstractMesh(
                self.axis_sizes, self.axis_names, axis_types=self.axis_types,
                abstract_device=AbstractDevice.of(self._flat_devices[0]))
        return am

    @property
    def explicit_axes(self) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types)
                     if t == AxisType.Explicit)

    @property
    def auto_axes(self) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == AxisType.Auto)

    @property
    def manual_axes(self) -> tuple:
        return tuple(n for n, t in zip(self.axis_names, self.axis_types)
                     if t == AxisType.Manual)

    @property
    def are_all_axes_explicit(self) -> bool:
        return bool(self.axis_types) and all(t == AxisType.Explicit for t in self.axis_types)

    @property
    def are_all_axes_auto(self) -> bool:
        return bool(self.axis_types) and all(t == AxisType.Auto for t in self.axis_types)

    @property
    def local_devices(self) -> list:
        return [d for d in self.devices.flat if _is_local(d)]

    @property
    def is_multi_process(self) -> bool:
        return len({d.process_index for d in self.devices.flat}) > 1

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Mesh) and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        types = ""
        if any(t != AxisType.Auto for t in self.axis_types):
            types = f", axis_types=({', '.join(repr(t) for t in self.axis_types)},)"
            types = types.replace(",)", ")") if len(self.axis_types) > 1 else types
        return f"Mesh(axis_sizes={{{axes}}}, devices={self.device_ids.tolist()}{types})"

    def __enter__(self) -> Mesh:
        _mesh_stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _mesh_stack.pop()


_mesh_stack: list[Mesh] = []


class _SetMesh(threading.local):
    mesh: Mesh | None = None  # what set_mesh set in this thread


_set = _SetMesh()


def current_mesh() -> Mesh | None:
    """The innermost ``with mesh:`` mesh, else the one ``set_mesh`` set, or None."""
    return _mesh_stack[-1] if _mesh_stack else _set.mesh


class set_mesh:
    """Set the mesh of this thread that PartitionSpecs refer to, as ``jax.set_mesh``:
    a global setter (``set_mesh(mesh)``) or a context manager (``with set_mesh(mesh):``,
    which restores the previous one on exit). ``None`` unsets it."""

    __slots__ = ("prev",)

    def __init__(self, mesh: Mesh | None):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
        self.prev = _set.mesh
        _set.mesh = mesh

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        _set.mesh = self.prev


def get_mesh() -> Mesh:
    """The mesh ``set_mesh`` (or ``with mesh:``) set; an empty mesh when none is."""
    m = current_mesh()
    return Mesh._empty() if m is None else m


def get_abstract_mesh() -> AbstractMesh:
    """The current mesh's ``AbstractMesh`` (empty when none is set)."""
    m = current_mesh()
    return AbstractMesh((), ()) if m is None else m.abstract_mesh


def named_from_spec(spec: Any, what: str, error: type = ValueError) -> Any:
    """``spec`` if it is not a PartitionSpec, else its NamedSharding over the current
    mesh; with no mesh set, ``error`` saying so (``what`` names the caller)."""
    if not isinstance(spec, PartitionSpec):
        return spec
    m = current_mesh()
    if m is None:
        raise error(f"{what}: a PartitionSpec ({spec}) needs a mesh in context; set one "
                    "with minijax.set_mesh(mesh) (or pass a NamedSharding)")
    return NamedSharding(m, spec)


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str],
              axis_types: Sequence[AxisType] | None = None, *, devices: Sequence | None = None
              ) -> Mesh:
    """A mesh of ``axis_shapes`` over the first ``prod(axis_shapes)`` of ``devices`` (all
    devices if None), in device order; ValueError if there are fewer (as jax).

    >>> minijax.make_mesh((4, 2), ("data", "model"))
    """
    try:
        axis_shapes = tuple(int(s) for s in axis_shapes)  # as jax: int() of each
    except (TypeError, ValueError):
        raise ValueError(f"`axis_shapes` passed to `make_mesh` should be a sequence of "
                         f"ints. Got {axis_shapes}") from None
    if devices is None:
        devices = _backend.get_backend().client.devices()
    devices = list(devices)
    if axis_types is None:  # as jax 0.10: explicit axes (sharding in types) by default
        axis_types = (AxisType.Explicit,) * len(axis_shapes)
    n = math.prod(axis_shapes)
    if n > len(devices):
        raise ValueError(f"make_mesh: a mesh of shape {axis_shapes} needs {n} devices, "
                         f"but {len(devices)} are available")
    devices = devices[:n]  # as jax: the first devices when there are more
    return Mesh(np.array(devices, dtype=object).reshape(axis_shapes), tuple(axis_names),
                axis_types)


class AbstractDevice:
    """The kind of device a mesh is made of (jax's ``AbstractDevice``: what an exported
    function records of its mesh's devices)."""

    __slots__ = ("device_kind", "num_cores", "platform")

    def __init__(self, device_kind: str, num_cores: int | None, platform: str):
        self.device_kind, self.num_cores, self.platform = device_kind, num_cores, platform

    @staticmethod
    def of(device: Any) -> AbstractDevice:
        platform = device.platform
        num_cores = getattr(device, "num_cores" if platform == "tpu" else "core_count",
                            None) if platform in ("tpu", "gpu") else None
        return AbstractDevice(device.device_kind, num_cores, platform)

    def _tuple(self) -> tuple:
        return (self.device_kind, self.num_cores, self.platform)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AbstractDevice) and self._tuple() == other._tuple()

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __repr__(self) -> str:
        return (f"AbstractDevice(device_kind={self.device_kind}, num_cores={self.num_cores}, "
                f"platform={self.platform})")


class AbstractMesh:
    """A mesh's axis names, sizes and types without its devices.

    ``abstract_device`` (the kind of its devices, as an exported function records it) is
    kept but, unlike jax's, is not part of the mesh's identity: minijax compares
    abstract meshes by their axes only.

    A value laid out over a mesh with explicit axes carries the mesh's abstract mesh in
    its type (``minijax.typeof(x).sharding``); a value outside any such mesh carries the
    empty one, ``NamedSharding(AbstractMesh((), ()), P(None, ...))``, as in jax.

    >>> AbstractMesh((), ()).empty
    True
    """

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str], *,
                 axis_types: AxisType | Sequence[AxisType] | None = None,
                 abstract_device: AbstractDevice | None = None):
        axis_sizes, axis_names = tuple(int(a) for a in axis_sizes), tuple(axis_names)
        self.abstract_device = abstract_device
        if len(axis_sizes) != len(axis_names):
            raise ValueError(f"AbstractMesh: {len(axis_sizes)} axis sizes for "
                             f"{len(axis_names)} axis names")
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(axis_names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(axis_names)
        self.axis_sizes, self.axis_names = axis_sizes, axis_names
        self.axis_types = tuple(axis_types)
        self._key = (axis_sizes, axis_names, self.axis_types)

    @property
    def empty(self) -> bool:
        return not self.axis_names

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes) if self.axis_sizes else 0

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    def _all(self, t: AxisType) -> bool:
        return not self.empty and all(a == t for a in self.axis_types)

    @property
    def are_all_axes_auto(self) -> bool:
        return self._all(AxisType.Auto)

    @property
    def are_all_axes_explicit(self) -> bool:
        return self._all(AxisType.Explicit)

    @property
    def are_all_axes_manual(self) -> bool:
        return self._all(AxisType.Manual)

    def _axes_of(self, t: AxisType) -> tuple:
        return tuple(n for n, a in zip(self.axis_names, self.axis_types) if a == t)

    @property
    def auto_axes(self) -> tuple:
        return self._axes_of(AxisType.Auto)

    @property
    def explicit_axes(self) -> tuple:
        return self._axes_of(AxisType.Explicit)

    @property
    def manual_axes(self) -> tuple:
        return self._axes_of(AxisType.Manual)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AbstractMesh) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        if self.empty:
            return "AbstractMesh((), axis_types=())"
        axes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.axis_sizes))
        types = ", ".join(repr(t) for t in self.axis_types)
        types += "," if len(self.axis_types) == 1 else ""
        return f"AbstractMesh({axes}, axis_types=({types}))"


EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


def unsharded(ndim: int) -> NamedSharding:
    """The sharding of a value outside any mesh, as ``minijax.typeof(x).sharding``."""
    return _unsharded(ndim)


@functools.lru_cache(maxsize=64)
def _unsharded(ndim: int) -> NamedSharding:
    return NamedSharding(EMPTY_ABSTRACT_MESH, PartitionSpec(*([None] * ndim)))


def is_unconstrained(sharding: Any) -> bool:
    """Whether ``sharding`` says nothing about placement: None, or a NamedSharding over
    the empty abstract mesh (what ``typeof(x).sharding`` gives)."""
    return sharding is None or (isinstance(sharding, NamedSharding)
                                and isinstance(sharding.mesh, AbstractMesh)
                                and sharding.mesh.empty)


def aval_sharding(sharding: Any, ndim: int) -> NamedSharding | None:
    """The sharding an ``ndim``-d aval carries for a value laid out as ``sharding``
    (sharding in types): over the mesh's ``AbstractMesh``, the spec padded to ``ndim``
    with the non-explicit axes dropped; None unless the mesh has explicit axes."""
    mesh = getattr(sharding, "mesh", None)
    spec = getattr(sharding, "spec", None)
    if mesh is None or spec is None or not isinstance(sharding, NamedSharding):
        return None
    return _aval_sharding(mesh, tuple(spec), ndim)


@functools.lru_cache(maxsize=4096)
def _aval_sharding(mesh, parts: tuple, ndim: int) -> NamedSharding | None:
    if mesh.empty or AxisType.Explicit not in mesh.axis_types:
        return None
    explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types) if t == AxisType.Explicit}
    out = []
    for d in range(ndim):
        p = parts[d] if d < len(parts) else None
        if p is None or p is UNCONSTRAINED:
            out.append(None)
            continue
        axes = tuple(a for a in ((p,) if isinstance(p, str) else p) if a in explicit)
        out.append(None if not axes else axes[0] if len(axes) == 1 else axes)
    return NamedSharding(mesh.abstract_mesh, PartitionSpec(*out))


def concrete_sharding(aval_sharding_: NamedSharding, mesh: Mesh | None = None) -> NamedSharding:
    """The ``NamedSharding`` over a concrete mesh for an aval's sharding: over ``mesh``
    (or the mesh in context) when its abstract mesh is the aval's."""
    m = mesh if mesh is not None else current_mesh()
    if m is None or m.abstract_mesh != aval_sharding_.mesh:
        raise ValueError(
            f"a value of sharding {aval_sharding_} needs its mesh: no mesh with abstract mesh "
            f"{aval_sharding_.mesh} is in context; set one with minijax.set_mesh(mesh)")
    return NamedSharding(m, aval_sharding_.spec)


_aval.set_unsharded_factory(unsharded, aval_sharding)


def _resolve_out_sharding(what: str, out_sharding: Any) -> NamedSharding:
    if isinstance(out_sharding, PartitionSpec):
        m = current_mesh()
        if m is None:
            raise ValueError(
                f"{what}: using PartitionSpec ({out_sharding}) as out_sharding when you are "
                "not under a mesh context is not allowed; pass a NamedSharding or set a mesh "
                "with minijax.set_mesh(mesh)")
        return NamedSharding(m, out_sharding)
    if isinstance(out_sharding, NamedSharding):
        return out_sharding  # over an abstract mesh: a type's sharding
    raise TypeError(f"{what}: out_sharding must be a NamedSharding or a PartitionSpec, got "
                    f"{out_sharding!r}")


_srules._resolver[0] = _resolve_out_sharding
_srules._spec_type[0] = PartitionSpec


def _concrete_in_context(s: Any) -> Any:
    if isinstance(s, NamedSharding) and isinstance(s.mesh, AbstractMesh):
        m = current_mesh()
        if m is not None and m.abstract_mesh.shape_tuple == s.mesh.shape_tuple:
            return NamedSharding(m, s.spec, memory_kind=s.memory_kind)
    return s


_srules._concretizer[0] = _concrete_in_context


class NamedSharding(Sharding):
    """An array laid out over ``mesh`` as ``spec`` says.

    >>> s = NamedSharding(mesh, PartitionSpec("x"))
    >>> minijax.device_put(np.arange(8.0), s).addressable_shards[1].data
    """

    def __init__(self, mesh: Mesh, spec: PartitionSpec | None = None, *,
                 memory_kind: str | None = None):
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding: mesh must be a minijax Mesh or AbstractMesh, "
                            f"got {mesh!r}")
        if spec is None:
            spec = PartitionSpec()
        elif not isinstance(spec, PartitionSpec):
            if isinstance(spec, (tuple, list)):
                spec = PartitionSpec(*spec)
            else:
                raise TypeError(f"NamedSharding: spec must be a PartitionSpec, got {spec!r}")
        used = []
        for dim in range(len(spec)):
            for a in spec.axes_of(dim):
                if a not in mesh.axis_names:
                    raise ValueError(f"NamedSharding: {spec} names axis {a!r}, which is not "
                                     f"an axis of the mesh {mesh.axis_names}")
                if a in used:
                    raise DuplicateSpecError(
                        f"NamedSharding: {spec} uses mesh axis {a!r} twice; a mesh axis "
                        "can split at most one dimension", mesh, spec)
                used.append(a)
        self.mesh = mesh
        self.spec = spec
        self._memory_kind = canonical_memory_kind(
            memory_kind, None if isinstance(mesh, AbstractMesh) else mesh._flat_devices[0])
        # Equality ignores trailing Nones: P('x') and P('x', None) lay out alike.
        parts = list(spec)
        while parts and parts[-1] is None:
            parts.pop()
        self._key = (mesh, tuple(parts), self._memory_kind)
        self._hash = hash(self._key)

    @property
    def _device_assignment(self) -> tuple:
        if isinstance(self.mesh, AbstractMesh):
            raise ValueError(f"{self} is over an abstract mesh: it has no devices")
        return self.mesh._flat_devices

    def __eq__(self, other: Any) -> bool:
        if self is other:
            return True
        return isinstance(other, NamedSharding) and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        mk = "" if self._memory_kind is None else f", memory_kind={self._memory_kind}"
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r}{mk})"

    @property
    def memory_kind(self) -> str | None:
        """The memory the array lives in (``device``, ``pinned_host``,
        ``unpinned_host``: ``device.addressable_memories()``)."""
        return self._memory_kind

    def with_memory_kind(self, kind: str) -> NamedSharding:
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)

    def update(self, **kwargs) -> NamedSharding:
        """A copy with ``mesh``, ``spec`` (a PartitionSpec or a sequence of entries) or
        ``memory_kind`` replaced, as jax's ``NamedSharding.update``."""
        spec = kwargs.pop("spec", self.spec)
        if not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec)
        return NamedSharding(kwargs.pop("mesh", self.mesh), spec,
                             memory_kind=kwargs.pop("memory_kind", self.memory_kind))

    @property
    def is_fully_replicated(self) -> bool:
        return all(not self.spec.axes_of(d) or
                   all(self.mesh.shape[a] == 1 for a in self.spec.axes_of(d))
                   for d in range(len(self.spec)))

    def with_spec(self, spec: PartitionSpec) -> NamedSharding:
        return NamedSharding(self.mesh, spec, memory_kind=self._memory_kind)

    def _to_xla_hlo_sharding(self, num_dimensions: int) -> xla_client.HloSharding:
        if isinstance(self.mesh, AbstractMesh) and self.mesh.empty:
            return xla_client.HloSharding.replicate()
        return _named_hlo(self.mesh, self._key[1], num_dimensions)

    def _check_rank(self, ndim: int, what: str = "an array") -> None:
        if len(self.spec) > ndim:
            raise ValueError(f"{self.spec} has {len(self.spec)} entries, more than the "
                             f"{ndim} dimensions of {what}")

    def hlo_text(self, ndim: int) -> str:
        """The ``mhlo.sharding`` text of an ``ndim``-d array with this sharding."""
        return _named_hlo_text(self.mesh, self._key[1], ndim)


@functools.lru_cache(maxsize=4096)
def _named_hlo_text(mesh: Mesh, parts: tuple, ndim: int) -> str:
    names = mesh.axis_names
    mesh_shape = tuple(mesh.axis_sizes)
    sizes = dict(zip(names, mesh_shape))
    spec = PartitionSpec(*parts)
    if len(parts) > ndim:
        raise ValueError(f"{spec} has {len(parts)} entries, more than the {ndim} "
                         "dimensions of the array")
    tiles, perm = [], []
    for dim in range(ndim):
        axes = spec.axes_of(dim)
        tiles.append(math.prod(sizes[a] for a in axes))
        perm.extend(names.index(a) for a in axes)
    rest = [i for i in range(len(names)) if i not in perm]
    replicated = math.prod(mesh_shape[i] for i in rest)
    if math.prod(tiles) == 1:
        return "{replicated}"
    perm.extend(rest)
    dims = tiles + ([replicated] if replicated > 1 else [])
    shape = list(mesh_shape)
    if perm == sorted(perm):
        iota = f"<=[{math.prod(mesh_shape)}]"
    else:
        iota = f"<=[{','.join(map(str, shape))}]T({','.join(map(str, perm))})"
    suffix = " last_tile_dim_replicate" if replicated > 1 else ""
    return f"{{devices=[{','.join(map(str, dims))}]{iota}{suffix}}}"


@functools.lru_cache(maxsize=4096)
def _named_hlo(mesh: Mesh, parts: tuple, ndim: int) -> xla_client.HloSharding:
    return xla_client.HloSharding.from_string(_named_hlo_text(mesh, parts, ndim))


def hlo_sharding_from_text(text: str) -> xla_client.HloSharding:
    """XLA's ``HloSharding`` of its text form (``{devices=[2,1]<=[2]}``)."""
    return xla_client.HloSharding.from_string(text)


def spec_of_hlo(mesh: Any, hlo: xla_client.HloSharding, ndim: int) -> PartitionSpec | None:
    """A ``PartitionSpec`` over ``mesh`` (concrete or abstract) whose HLO sharding for an
    ``ndim``-d array is ``hlo``, or None if none (of at most two axes a dimension) is."""
    if hlo.is_replicated():
        return PartitionSpec()
    found = _search_spec(mesh, hlo, ndim)
    return None if found is None else found.spec


class HloShardingOnDevices(Sharding):
    """A layout given by an XLA ``HloSharding`` over a list of devices (what XLA's
    partitioner chose for an output that no ``PartitionSpec`` over the mesh names)."""

    def __init__(self, devices: Sequence, hlo: xla_client.HloSharding):
        self._devices = tuple(devices)
        self._hlo = hlo
        self._hash = hash((self._devices, str(hlo)))

    @property
    def _device_assignment(self) -> tuple:
        return self._devices

    def _to_xla_hlo_sharding(self, num_dimensions: int) -> xla_client.HloSharding:
        return self._hlo

    @property
    def is_fully_replicated(self) -> bool:
        return self._hlo.is_replicated()

    def hlo_text(self, ndim: int) -> str:
        return str(self._hlo)

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, HloShardingOnDevices) and self._devices == other._devices
                and self._hlo == other._hlo)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"HloShardingOnDevices({self._hlo}, devices={[d.id for d in self._devices]})"


# ---- slices per device from an HloSharding ---------------------------------------------

def _hlo_indices(hlo: xla_client.HloSharding, shape: tuple, n: int) -> list[Index]:
    """Per device position ``0..n-1`` of the device assignment, its slice of ``shape``."""
    full = tuple(slice(None) for _ in shape)
    if hlo.is_replicated() or hlo.is_maximal() or hlo.is_manual():
        return [full] * n
    dims = hlo.tile_assignment_dimensions()
    devs = hlo.tile_assignment_devices()
    grid = np.array(devs, dtype=np.int64).reshape(dims)
    out: list[Index | None] = [None] * n
    for pos in itertools.product(*(range(d) for d in dims)):
        idx = []
        for dim, size in enumerate(shape):
            t = dims[dim]
            if t == 1:
                idx.append(slice(None))
            else:
                step = -(-size // t)
                idx.append(slice(pos[dim] * step, min(size, (pos[dim] + 1) * step)))
        out[int(grid[pos])] = tuple(idx)
    return [full if i is None else i for i in out]


# ---- the jaxlib sharding attached to a sharded array's buffers ----------------------------

_jaxlib_shardings: dict[tuple, Any] = {}


def jaxlib_sharding(sharding: Sharding, ndim: int) -> Any:
    """jaxlib's ``GSPMDSharding`` for ``ndim``-d arrays laid out as ``sharding`` (cached)."""
    key = (sharding, ndim)
    s = _jaxlib_shardings.get(key)
    if s is None:
        kind = getattr(sharding, "_memory_kind", None)
        extra = {} if kind is None or kind == "device" else {"memory_kind": kind}
        s = _jaxlib_shardings.setdefault(key, _jax.GSPMDSharding(
            _jax.DeviceList(tuple(sharding._device_assignment)),
            sharding._to_xla_hlo_sharding(ndim), **extra))
    return s


def sharding_from_hlo(hlo: xla_client.HloSharding, devices: Sequence, ndim: int,
                      candidates: Sequence[Any] = ()) -> Any:
    """A minijax sharding for ``hlo`` over ``devices``: one of ``candidates`` (or a
    ``NamedSharding`` over their mesh) when one lays out an ``ndim``-d array alike,
    else an ``HloShardingOnDevices``."""
    devices = tuple(devices)
    if len(devices) == 1:  # every layout is the same: a candidate's, as jax keeps it
        for c in candidates:
            if isinstance(c, NamedSharding) and c._device_assignment == devices and \
                    len(c.spec) <= ndim:
                return c
        return _backend.sharding_for(devices[0])
    meshes = []
    for c in candidates:
        if isinstance(c, NamedSharding):
            if c._device_assignment == devices and len(c.spec) <= ndim and \
                    c._to_xla_hlo_sharding(ndim) == hlo:
                return c
            if c.mesh not in meshes and c.mesh._flat_devices == devices:
                meshes.append(c.mesh)
    ctx = current_mesh()  # the mesh in context, when the call ran over its devices
    if ctx is not None and ctx not in meshes and ctx._flat_devices == devices:
        meshes.append(ctx)
    for mesh in meshes:
        if hlo.is_replicated():
            return NamedSharding(mesh, PartitionSpec())
        found = _search_spec(mesh, hlo, ndim)
        if found is not None:
            return found
    return HloShardingOnDevices(devices, hlo)


def _search_spec(mesh: Mesh, hlo, ndim: int) -> NamedSharding | None:
    """A spec over ``mesh`` (each dimension split by at most one axis, or by two in
    order) whose HLO sharding is ``hlo``; small meshes only."""
    names = mesh.axis_names
    if len(names) > 3 or ndim > 4:
        return None
    choices = [None] + list(names) + [p for p in itertools.permutations(names, 2)]
    for parts in itertools.product(choices, repeat=ndim):
        flat = [a for p in parts if p is not None for a in ((p,) if isinstance(p, str) else p)]
        if len(flat) != len(set(flat)):
            continue
        if _named_hlo(mesh, tuple(parts), ndim) == hlo:
            parts = list(parts)
            while parts and parts[-1] is None:  # P('x'), not P('x', None)
                parts.pop()
            return NamedSharding(mesh, PartitionSpec(*parts))
    return None


def check_sharding_shape(sharding: Any, shape: tuple, what: str) -> None:
    """``ValueError`` (``IndivisibleError`` for a dimension its devices do not divide)
    unless ``sharding`` can lay out an array of ``shape``."""
    if isinstance(sharding, NamedSharding):
        sharding._check_rank(len(shape), what)
    if isinstance(sharding, Sharding):
        try:
            sharding.shard_shape(shape)
        except ValueError as e:
            raise type(e)(f"{what} of shape {shape}: {e}") from None  # IndivisibleError stays


def is_sharding(x: Any) -> bool:
    return isinstance(x, (Sharding, _jax.SingleDeviceSharding))


def replicated_like(sharding: Any) -> Any:
    """A sharding that puts a whole copy on each device of ``sharding``."""
    if isinstance(sharding, NamedSharding):
        return NamedSharding(sharding.mesh, PartitionSpec())
    return HloShardingOnDevices(sharding._device_assignment, xla_client.HloSharding.replicate())
