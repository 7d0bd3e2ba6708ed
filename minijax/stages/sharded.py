"""Sharded computations in ``jit``: where they run and how their modules are annotated.

A call whose arguments include sharded Arrays (or a ``jit`` with ``in_shardings`` /
``out_shardings``) runs on a ``Placement``: the devices of the arguments' mesh, one
sharding per input leaf and, where asked for, per output leaf. Its module gets a
sharding attribute on each parameter (and requested result) and
``mhlo.num_partitions``; XLA's SPMD partitioner does the rest. As in jax, that is
Shardy by default (``sdy.mesh`` declarations and ``sdy.sharding`` attributes,
``lowering/sdy.py``), GSPMD (``mhlo.sharding``) with ``jax_use_shardy_partitioner``
off (``use_shardy``). ``jit`` keys
executables on the placement as it keys them on the device of unsharded calls, and
its dispatch fast path, keyed on aval ids, needs nothing new: sharded arrays have
interned avals of their own per sharding.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import weakref

from minijax.core.aval import MemorySpace, ShapeDtypeStruct, long_str, mem_space_to_kind
from minijax.lax.device_put_op import device_put_p
from minijax.lax.shard_map import shard_map_p
from minijax.lax.sharding import sharding_constraint_p
from minijax.runtime import sharding as _sharding
from minijax.runtime.array import Array, _sharding_of_aval, intern_aval
from minijax.runtime.backend import default_device, sharding_for
from minijax.runtime.memory_kinds import memory_of_aval
from minijax.runtime.placement import Placement
from minijax.runtime.sharding import SingleDeviceSharding
from minijax.runtime.transfer import device_put
from minijax.stages.common import call_device, sharding_mismatch
from minijax.config import config
from minijax.lowering import sdy as _sdy
from minijax.lowering.types import string_attr

__all__ = ["Placement", "aot_device", "check_compiled_args", "interned_ids", "placement_of",
           "put_args", "sharding_attrs", "to_buffers", "use_shardy"]


def _is_single(s: Any) -> bool:
    return not isinstance(s, _sharding.Sharding)


# ---- memory kinds: a call on one device with values in host memory -----------------------

def _in_memory(s: Any) -> bool:
    """Whether ``s`` is a ``SingleDeviceSharding`` in memory other than the device's."""
    return type(s) is SingleDeviceSharding and s.memory_kind != "device"


def array_memory(x: Any) -> Any:
    """The ``SingleDeviceSharding`` of a single-device Array (its memory kind
    included), None for other values."""
    if type(x) is Array:
        s = memory_of_aval.get(id(x.aval))
        if s is not None:
            return s
        if _sharding_of_aval.get(id(x.aval)) is None:
            return sharding_for(x.device)
    elif type(x) is ShapeDtypeStruct and type(x.sharding) is SingleDeviceSharding:
        return x.sharding
    return None


def memory_placement(args: Sequence[Any], in_shardings: Sequence[Any] | None = None,
                     out_shardings: Sequence[Any] | None = None) -> Placement | None:
    """The placement of a single-device call whose arguments or results (``in_shardings``,
    ``out_shardings``: per leaf, a requested sharding or None) are in memory other than
    the device's (``pinned_host``, ``unpinned_host``), else None: one device, with a
    ``SingleDeviceSharding`` per argument (its memory kind) and per requested result.

    Raises ``ValueError`` as jax does when an argument is in another memory than its
    ``in_shardings`` entry names."""
    given = [*(in_shardings or ()), *(out_shardings or ())]
    if any(isinstance(s, _sharding.Sharding) for s in given):
        return None  # over a mesh: the sharded path
    found = [array_memory(x) for x in args]
    if not any(_in_memory(s) for s in (*found, *given)):
        return None
    if any(type(x) is Array and _sharding_of_aval.get(id(x.aval)) is not None for x in args):
        return None
    device = next((s._device for s in (*found, *given) if _in_memory(s)), None)
    chosen = []
    for i, x in enumerate(args):
        want = in_shardings[i] if in_shardings is not None else None
        have = found[i]
        if want is not None:
            if have is not None and type(x) is Array and have.memory_kind != want.memory_kind:
                raise ValueError(
                    "Memory kinds passed to jax.jit does not match memory kind on the "
                    f"respective arg. Got jit memory kind: {want.memory_kind}, arg memory "
                    f"kind: {have.memory_kind} for arg type: {long_str(x.aval)}")
            have = want
        elif have is not None and not _in_memory(have):
            # in device memory: unconstrained, as jax leaves its uncommitted arrays (minijax
            # does not track which arrays jax would commit: results of computations on
            # uncommitted ones are not)
            have = None
        if have is not None and have._device != device:
            have = None
        chosen.append(have)
    outs = None
    if out_shardings is not None:
        outs = tuple(s if s is None or s._device == device else
                     _single_err(s) for s in out_shardings)
    return Placement((device,), chosen, outs)


def is_memory_placement(placement: Any) -> bool:
    """Whether ``placement`` is a single-device one of ``memory_placement``."""
    return isinstance(placement, Placement) and all(
        s is None or type(s) is SingleDeviceSharding
        for s in (*placement.in_shardings, *(placement.out_shardings or ())))


def _memory_attrs(placement: Placement, in_avals: Sequence[Any], out_avals: Sequence[Any],
                  arg_attrs: Sequence[str] | None) -> dict:
    """``sharding_attrs`` of a ``memory_placement``, as jax writes them: a parameter in
    host memory gets ``mhlo.memory_kind`` and its (replicated) ``sdy.sharding``; each
    result ``mhlo.memory_kind``, that of its requested sharding (then marked with
    ``annotate_device_placement``, with its ``sdy.sharding``) or the memory of its type
    (``pinned_host`` for ``MemorySpace.Host``)."""
    sdy = _sdy.Meshes(placement.devices)
    empty = _sharding.AbstractMesh((), ())

    def attr(kind, ndim):
        return (f"mhlo.memory_kind = {string_attr(kind)}, "
                f"sdy.sharding = #sdy.sharding{sdy.replicated(empty, ndim)}")
    args = []
    for i, (a, s) in enumerate(zip(in_avals, placement.in_shardings)):
        base = arg_attrs[i] if arg_attrs else ""
        text = "" if s is None else attr(s.memory_kind, len(a.shape))
        args.append(", ".join(t for t in (base, text) if t))
    outs = placement.out_shardings or (None,) * len(out_avals)
    results, placed = [], []
    for a, s in zip(out_avals, outs):
        if s is None:
            results.append(f"mhlo.memory_kind = {string_attr(mem_space_to_kind(a.memory_space))}")
            placed.append(None)
        else:
            results.append(attr(s.memory_kind, len(a.shape)))
            placed.append(s.memory_kind)
    return {"arg_attrs": args, "result_attrs": results, "num_partitions": 1, "sdy": sdy,
            "result_placements": placed}


def placement_of(args: Sequence[Any], in_shardings: Sequence[Any] | None = None,
                 out_shardings: Sequence[Any] | None = None) -> Placement | None:
    """The placement of a call on ``args``, or None when no argument is sharded and no
    sharding was asked for (then the call runs on one device as before).

    ``in_shardings``: per argument, a requested sharding or None (then a sharded
    Array argument keeps its own layout and other values are replicated).
    Raises ``ValueError`` for arguments on different sets of devices.
    """
    placed = memory_placement(args, in_shardings, out_shardings)
    if placed is not None:  # in host memory, on one device
        return placed
    chosen: list[Any] = []
    devices = None
    for i, x in enumerate(args):
        want = in_shardings[i] if in_shardings is not None else None
        if want is not None and _is_single(want):  # SingleDeviceSharding
            want = None if want._device == default_device() else _single_err(want)
        if want is None:
            if type(x) is Array:
                want = _sharding_of_aval.get(id(x.aval))
            elif type(x) is ShapeDtypeStruct and isinstance(x.sharding, _sharding.Sharding):
                want = x.sharding  # lowering ahead of time for sharded arguments
        if want is not None:
            devs = tuple(want._device_assignment)
            if devices is None:
                devices = devs
            elif devs != devices:
                raise ValueError(
                    f"the arguments of a sharded computation must be laid out over the same "
                    f"devices in the same order; argument {i} is over "
                    f"{[d.id for d in devs]}, an earlier one over {[d.id for d in devices]}")
        chosen.append(want)
    if devices is None and out_shardings is not None:
        for s in out_shardings:
            if s is not None and not _is_single(s):
                devices = tuple(s._device_assignment)
                break
    if devices is None:
        return None
    template = next((s for s in (*chosen, *(out_shardings or ())) if s is not None), None)
    home = default_device()
    final = []
    for i, (x, s) in enumerate(zip(args, chosen)):
        if s is None:
            if type(x) is Array and x.device != home and x.device not in devices:
                raise ValueError(f"argument {i} is on {x.device}, which is not one of the "
                                 f"devices {[d.id for d in devices]} of this computation")
            s = _sharding.replicated_like(template)
        final.append(s)
    outs = None
    if out_shardings is not None:
        outs = []
        for s in out_shardings:
            if s is not None and tuple(s._device_assignment) != devices:
                raise ValueError(f"out_shardings: {s} is over devices "
                                 f"{[d.id for d in s._device_assignment]}, the inputs over "
                                 f"{[d.id for d in devices]}")
            outs.append(s)
        outs = tuple(outs)
    return Placement(devices, final, outs, [s is not None for s in chosen])


def aot_device(args: Sequence[Any]) -> Any:
    """``call_device`` for ``jit(...).trace``/``lower``, whose arguments may also be
    ``ShapeDtypeStruct``s carrying a multi-device ``sharding``: then their placement."""
    if any(type(x) is ShapeDtypeStruct and (isinstance(x.sharding, _sharding.Sharding)
                                             or _in_memory(x.sharding)) for x in args):
        return placement_of(args)
    return call_device(args)


def check_compiled_args(args: Sequence[Any], placement: Placement, names) -> None:
    """Raise ``ValueError``, as jax does, when a sharded Array argument of a
    ``Compiled`` program is laid out otherwise than the program was compiled for
    (``names(i)``: argument ``i``'s name). Other values are laid out as needed."""
    bad = []
    memory = is_memory_placement(placement)
    for i, (x, want) in enumerate(zip(args, placement.in_shardings)):
        if type(x) is Array:
            have = _sharding_of_aval.get(id(x.aval))
            if have is not None and have != want:
                bad.append(f"Argument {names(i)} with shape {x.aval.str_short()}:\n"
                           f"  Passed sharding: {have}\n  Required sharding: {want}")
            elif memory:  # one device: in the memory compiled for
                have = array_memory(x)
                if want is None:
                    want = sharding_for(placement.devices[0])
                if _in_memory(have) and have.memory_kind != want.memory_kind:
                    bad.append(_memory_mismatch(names(i), x, have, want))
    sharding_mismatch(bad)


def _memory_mismatch(name: str, x: Any, have: Any, want: Any) -> str:
    return (f"Argument {name} with shape {long_str(x.aval)}:\n"
            f"  Passed sharding: {have}\n  Required sharding: {want}")


def check_device_memory_args(args: Sequence[Any], device: Any, names) -> None:
    """jax's ValueError for an argument in host memory passed to a ``Compiled`` program
    compiled for arguments in device memory."""
    bad = [_memory_mismatch(names(i), x, memory_of_aval[id(x.aval)], sharding_for(device))
           for i, x in enumerate(args)
           if type(x) is Array and id(x.aval) in memory_of_aval]
    sharding_mismatch(bad)


def _single_err(s):
    raise NotImplementedError(f"in_shardings: a SingleDeviceSharding on {s._device} (not the "
                              "default device) is not supported; use device_put")


def interned_ids(avals: Sequence[Any], device: Any) -> tuple[int, ...]:
    """The aval ids that Array arguments of ``avals`` have when a call runs on
    ``device`` (a device, a Placement or None): the fast paths' keys."""
    if isinstance(device, Placement):
        home = device.devices[0]  # where a memory placement's unconstrained ones are
        return tuple(id(intern_aval(a, home if s is None else s))
                     for a, s in zip(avals, device.in_shardings))
    return tuple(id(intern_aval(a, device)) for a in avals)


def put_args(args: Sequence[Any], placement: Placement) -> list:
    """The jaxlib arrays of ``args`` laid out as the placement's input shardings
    (sharded Arrays already so are used as they are)."""
    out = []
    for x, s in zip(args, placement.in_shardings):
        if s is None:  # unconstrained, on the one device of a memory placement
            s = placement.devices[0]
        if type(x) is Array and _sharding_of_aval.get(id(x.aval)) == s:
            out.append(x._buf)
        else:
            out.append(device_put(x, s)._buf)
    return out


def to_buffers(args: Iterable[Any], device=None) -> list:
    """Device buffers for ``args`` on ``device`` (None: the default device, where
    Arrays are used as they are; a ``Placement``: laid out as its input shardings);
    other values, and Arrays elsewhere, are put there."""
    if device is None:
        return [x._buf if type(x) is Array else device_put(x)._buf for x in args]
    if isinstance(device, Placement):  # sharded over several devices
        return put_args(args, device)
    return [x._buf if type(x) is Array and x.device == device else device_put(x, device)._buf
            for x in args]


def use_shardy(placement: Placement) -> bool:
    """Whether a module on ``placement`` is lowered for Shardy (``sdy`` dialect): the
    flag ``jax_use_shardy_partitioner`` is on (the default, as in jax) and every
    layout given is a ``NamedSharding`` over a mesh (a layout XLA chose and no mesh
    names, ``HloShardingOnDevices``, keeps the program on GSPMD)."""
    if not config.minijax_use_shardy_partitioner:
        return False
    given = (*placement.in_shardings, *(placement.out_shardings or ()))
    return all(s is None or (type(s) is _sharding.NamedSharding
                             and isinstance(s.mesh, _sharding.Mesh)) for s in given)


def sharding_attrs(placement: Placement, in_avals: Sequence[Any], out_avals: Sequence[Any],
                   arg_attrs: Sequence[str] | None = None) -> dict:
    """``lower_module`` keywords for a placement: ``arg_attrs`` with a sharding per
    parameter, ``result_attrs`` for requested output layouts, ``num_partitions`` and,
    for Shardy (``use_shardy``), ``sdy``, the module's mesh table: ``sdy.sharding``
    attributes then, ``mhlo.sharding`` ones (GSPMD) otherwise."""
    if is_memory_placement(placement):
        return _memory_attrs(placement, in_avals, out_avals, arg_attrs)
    sdy = _sdy.Meshes(placement.devices) if use_shardy(placement) else None

    def attr(s, ndim):
        if sdy is not None:
            return f"sdy.sharding = {sdy.attr(s, ndim)}"
        return f"mhlo.sharding = {string_attr(s.hlo_text(ndim))}"
    # memory kinds other than the devices' own anywhere: every parameter and result says
    # its memory (mhlo.memory_kind), as jax writes it
    kinds = not all(getattr(s, "memory_kind", None) in (None, "device")
                    for s in (*placement.in_shardings, *(placement.out_shardings or ()))) \
        or any(getattr(a, "_memory_space", None) is not None for a in out_avals)
    args = []
    for i, (a, s) in enumerate(zip(in_avals, placement.in_shardings)):
        _sharding.check_sharding_shape(s, a.shape, f"argument {i}")
        text = attr(s, len(a.shape))
        if kinds:
            text = f"mhlo.memory_kind = {string_attr(s.memory_kind)}, {text}"
        base = arg_attrs[i] if arg_attrs else ""
        args.append(f"{base}, {text}" if base else text)
    results = placed = None
    if placement.out_shardings is not None or kinds:
        results, placed = [], []
        outs = placement.out_shardings or (None,) * len(out_avals)
        for i, (a, s) in enumerate(zip(out_avals, outs)):
            if s is None:
                results.append(f"mhlo.memory_kind = "
                               f"{string_attr(mem_space_to_kind(a.memory_space))}"
                               if kinds else "")
                placed.append(None)
                continue
            _sharding.check_sharding_shape(s, a.shape, f"output {i}")
            text = attr(s, len(a.shape))
            if kinds:
                text = f"mhlo.memory_kind = {string_attr(s.memory_kind)}, {text}"
            results.append(text)
            placed.append(s.memory_kind if kinds else None)
    return {"arg_attrs": args, "result_attrs": results,
            "num_partitions": len(placement.devices), "sdy": sdy,
            "result_placements": placed if kinds else None}


def _sharding_constraint_impl(x, *, sharding):
    """Eagerly: move the array there. A sharding over an abstract mesh (flax makes them
    from ``get_abstract_mesh()``) takes the devices of the input's mesh, as jax, or else
    of the concrete mesh in context with that shape (minijax's eager results under
    ``set_mesh`` are single-device arrays, where jax's would be over that mesh)."""
    if isinstance(sharding, _sharding.NamedSharding) and \
            isinstance(sharding.mesh, _sharding.AbstractMesh):
        sharding = _concrete_named(x, sharding)
    return device_put(x, sharding)


def _concrete_named(x, sharding):
    shape = sharding.mesh.shape_tuple
    have = getattr(x, "sharding", None)
    mesh = None
    if isinstance(have, _sharding.NamedSharding) and \
            not isinstance(have.mesh, _sharding.AbstractMesh):
        if have.mesh.abstract_mesh.shape_tuple != shape:
            raise ValueError(f"Mesh shape of the input {have.mesh.abstract_mesh.shape_tuple} "
                             f"does not match the mesh shape of the target sharding {shape}")
        mesh = have.mesh
    else:
        ctx = _sharding.current_mesh()
        if ctx is not None and ctx.abstract_mesh.shape_tuple == shape:
            mesh = ctx
    if mesh is None:
        raise TypeError(f"The sharding on the input must be a `NamedSharding` since the "
                        f"target sharding has an `AbstractMesh` in it (and no mesh of that "
                        f"shape is in context). Got sharding {have} for shape "
                        f"{tuple(x.shape)}")
    return _sharding.NamedSharding(mesh, sharding.spec, memory_kind=sharding.memory_kind)


sharding_constraint_p.def_impl(_sharding_constraint_impl)


# ---- shard_map: run eagerly, and jit calls whose only multi-device part is a shard_map ---

_eager_shard_maps: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _shard_map_impl(*args, jaxpr, mesh, in_shardings, out_shardings, check_rep, name,
                    manual_axes=None):
    """Eagerly: a jit of the one call, its inputs laid out as the in_specs say."""
    fn = _eager_shard_maps.get(jaxpr)
    if fn is None:
        from minijax.stages.jit import jit
        params = dict(jaxpr=jaxpr, mesh=mesh, in_shardings=in_shardings,
                      out_shardings=out_shardings, check_rep=check_rep, name=name,
                      manual_axes=manual_axes)
        fn = _eager_shard_maps[jaxpr] = jit(lambda *a: shard_map_p.bind(*a, **params),
                                            in_shardings=tuple(in_shardings))
    return fn(*args)


shard_map_p.def_impl(_shard_map_impl)

_meshes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Jaxpr -> mesh or None


def _eqn_mesh(eqn) -> Any:
    """The concrete mesh a top-level equation lays values out over: a ``shard_map``'s,
    or a sharding constraint's over a mesh of devices (as jax partitions the call over
    it); else None."""
    if eqn.primitive is shard_map_p:
        return eqn.params["mesh"]
    if eqn.primitive is sharding_constraint_p:
        mesh = getattr(eqn.params["sharding"], "mesh", None)
        if isinstance(mesh, _sharding.Mesh) and mesh.size > 1:
            return mesh
        return None
    if eqn.primitive.name == "jit":  # a nested jit is inlined: its constraints count
        inner = eqn.params.get("jaxpr")
        inner = getattr(inner, "jaxpr", inner)
        for e in getattr(inner, "eqns", ()):
            if e.primitive is not shard_map_p and (m := _eqn_mesh(e)) is not None:
                return m
    return None


def mesh_placement(closed, args: Sequence[Any], device: Any) -> Any:
    """``device`` (a device or None), or, when ``closed`` calls ``shard_map`` or
    constrains a value's sharding over a mesh at top level and no argument is sharded,
    the placement replicating every argument over that mesh."""
    jaxpr = closed.jaxpr
    mesh = _meshes.get(jaxpr, False)
    if mesh is False:
        mesh = next((m for m in map(_eqn_mesh, jaxpr.eqns) if m is not None), None)
        _meshes[jaxpr] = mesh
    if mesh is None:
        return device
    rep = _sharding.NamedSharding(mesh, _sharding.PartitionSpec())
    if not args:  # nothing to replicate: the call still runs over the mesh's devices
        return Placement(tuple(mesh._flat_devices), (), None)
    return placement_of(args, [rep] * len(args))


# ---- sharding in types: results laid out as their types say ---------------------------

_transfers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Jaxpr -> bool


def transfers_memory(jaxpr: Any) -> bool:
    """Whether ``jaxpr`` (or a jaxpr inside it) moves a value between memories: a
    ``device_put`` naming a memory space or kind other than the devices' own."""
    found = _transfers.get(jaxpr)
    if found is None:
        found = False
        for e in jaxpr.eqns:
            if e.primitive is device_put_p and any(
                    isinstance(d, MemorySpace) or getattr(d, "memory_kind", None)
                    not in (None, "device") for d in e.params["devices"]):
                found = True
                break
            for v in e.params.values():
                for inner in (v if isinstance(v, (tuple, list)) else (v,)):  # cond branches
                    inner = getattr(inner, "jaxpr", inner)
                    if hasattr(inner, "eqns") and transfers_memory(inner):
                        found = True
                        break
                if found:
                    break
            if found:
                break
        _transfers[jaxpr] = found
    return found


def explicit_placement(device: Any, in_avals: Sequence[Any], out_avals: Sequence[Any],
                       closed: Any = None) -> Any:
    """``device`` (a device, a Placement or None), with every result whose aval carries
    an explicit sharding (sharding in types) laid out so: the Placement's
    ``out_shardings`` filled in over the concrete mesh (the arguments' or the one in
    context); a Placement replicating the arguments over that mesh when no argument
    is sharded."""
    if not isinstance(device, Placement) and (
            any(getattr(a, "_memory_space", None) is not None for a in out_avals)
            or (closed is not None and transfers_memory(closed.jaxpr))):
        # results in host memory, or transfers between memories: every result says where
        # it is (mhlo.memory_kind), as jax lowers it
        home = default_device() if device is None else device
        device = Placement((home,), [None] * len(in_avals), None)
    wanted = [getattr(a, "_sharding", None) for a in out_avals]
    if all(s is None for s in wanted):
        return device
    placement = device if isinstance(device, Placement) else None
    meshes = []
    if placement is not None:
        meshes = [s.mesh for s in (*placement.in_shardings, *(placement.out_shardings or ()))
                  if isinstance(s, _sharding.NamedSharding)
                  and isinstance(s.mesh, _sharding.Mesh)]
    ctx_mesh = _sharding.current_mesh()
    if ctx_mesh is not None:
        meshes.append(ctx_mesh)
    outs = list(placement.out_shardings) if placement is not None and \
        placement.out_shardings is not None else [None] * len(out_avals)
    devices = placement.devices if placement is not None else None
    for i, s in enumerate(wanted):
        if s is None or outs[i] is not None:
            continue
        mesh = next((m for m in meshes if m.abstract_mesh == s.mesh
                     and (devices is None or m._flat_devices == devices)), None)
        if mesh is None:
            raise ValueError(
                f"output {i} has the sharding {s} in its type, but no mesh with abstract mesh "
                f"{s.mesh} is in context or among the arguments; set one with "
                "minijax.set_mesh(mesh)")
        outs[i] = _sharding.NamedSharding(mesh, s.spec)
        devices = mesh._flat_devices
    if placement is not None:
        return placement.with_outputs(outs)
    template = next(s for s in outs if s is not None)
    if isinstance(device, _sharding.Sharding) or (device is not None and device
                                                  not in template._device_assignment
                                                  and device != default_device()):
        raise ValueError(f"a computation on {device} with results sharded over "
                         f"{template.mesh}")
    rep = _sharding.replicated_like(template)
    return Placement(template._device_assignment, [rep] * len(in_avals), outs)
