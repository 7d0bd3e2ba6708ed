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

from minijax.core.aval import ShapeDtypeStruct
from minijax.lax.shard_map import shard_map_p
from minijax.lax.sharding import sharding_constraint_p
from minijax.runtime import sharding as _sharding
from minijax.runtime.array import Array, _sharding_of_aval, intern_aval
from minijax.runtime.backend import default_device
from minijax.runtime.sharding import Placement
from minijax.runtime.transfer import device_put
from minijax.stages.common import call_device, sharding_mismatch
from minijax.config import config
from minijax.lowering import sdy as _sdy
from minijax.lowering.types import string_attr

__all__ = ["Placement", "aot_device", "check_compiled_args", "interned_ids", "placement_of",
           "put_args", "sharding_attrs", "to_buffers", "use_shardy"]


def _is_single(s: Any) -> bool:
    return not isinstance(s, _sharding.Sharding)


def placement_of(args: Sequence[Any], in_shardings: Sequence[Any] | None = None,
                 out_shardings: Sequence[Any] | None = None) -> Placement | None:
    """The placement of a call on ``args``, or None when no argument is sharded and no
    sharding was asked for (then the call runs on one device as before).

    ``in_shardings``: per argument, a requested sharding or None (then a sharded
    Array argument keeps its own layout and other values are replicated).
    Raises ``ValueError`` for arguments on different sets of devices.
    """
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
    if any(type(x) is ShapeDtypeStruct and isinstance(x.sharding, _sharding.Sharding)
           for x in args):
        return placement_of(args)
    return call_device(args)


def check_compiled_args(args: Sequence[Any], placement: Placement, names) -> None:
    """Raise ``ValueError``, as jax does, when a sharded Array argument of a
    ``Compiled`` program is laid out otherwise than the program was compiled for
    (``names(i)``: argument ``i``'s name). Other values are laid out as needed."""
    bad = []
    for i, (x, want) in enumerate(zip(args, placement.in_shardings)):
        if type(x) is Array:
            have = _sharding_of_aval.get(id(x.aval))
            if have is not None and have != want:
                bad.append(f"Argument {names(i)} with shape {x.aval.str_short()}:\n"
                           f"  Passed sharding: {have}\n  Required sharding: {want}")
    sharding_mismatch(bad)


def _single_err(s):
    raise NotImplementedError(f"in_shardings: a SingleDeviceSharding on {s._device} (not the "
                              "default device) is not supported; use device_put")


def interned_ids(avals: Sequence[Any], device: Any) -> tuple[int, ...]:
    """The aval ids that Array arguments of ``avals`` have when a call runs on
    ``device`` (a device, a Placement or None): the fast paths' keys."""
    if isinstance(device, Placement):
        return tuple(id(intern_aval(a, s)) for a, s in zip(avals, device.in_shardings))
    return tuple(id(intern_aval(a, device)) for a in avals)


def put_args(args: Sequence[Any], placement: Placement) -> list:
    """The jaxlib arrays of ``args`` laid out as the placement's input shardings
    (sharded Arrays already so are used as they are)."""
    out = []
    for x, s in zip(args, placement.in_shardings):
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
    sdy = _sdy.Meshes(placement.devices) if use_shardy(placement) else None

    def attr(s, ndim):
        if sdy is not None:
            return f"sdy.sharding = {sdy.attr(s, ndim)}"
        return f"mhlo.sharding = {string_attr(s.hlo_text(ndim))}"
    args = []
    for i, (a, s) in enumerate(zip(in_avals, placement.in_shardings)):
        _sharding.check_sharding_shape(s, a.shape, f"argument {i}")
        text = attr(s, len(a.shape))
        base = arg_attrs[i] if arg_attrs else ""
        args.append(f"{base}, {text}" if base else text)
    results = None
    if placement.out_shardings is not None:
        results = []
        for i, (a, s) in enumerate(zip(out_avals, placement.out_shardings)):
            if s is None:
                results.append("")
                continue
            _sharding.check_sharding_shape(s, a.shape, f"output {i}")
            results.append(attr(s, len(a.shape)))
    return {"arg_attrs": args, "result_attrs": results,
            "num_partitions": len(placement.devices), "sdy": sdy}


def _sharding_constraint_impl(x, *, sharding):
    return device_put(x, sharding)  # eagerly: move the array there


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
    """The concrete mesh a top-level equation runs over: a ``shard_map``'s, or that of a
    sharding constraint over several devices (as in jax, either makes the call run over
    the mesh's devices)."""
    if eqn.primitive is shard_map_p:
        return eqn.params["mesh"]
    if eqn.primitive is sharding_constraint_p:
        sharding = eqn.params["sharding"]
        mesh = getattr(sharding, "mesh", None)
        if isinstance(sharding, _sharding.NamedSharding) and isinstance(mesh, _sharding.Mesh) \
                and len(tuple(sharding._device_assignment)) > 1:
            return mesh
    return None


def mesh_placement(closed, args: Sequence[Any], device: Any) -> Any:
    """``device`` (a device or None), or, when ``closed`` calls ``shard_map`` or constrains
    a value's sharding over several devices at top level and no argument is sharded, the
    placement replicating every argument over that mesh."""
    jaxpr = closed.jaxpr
    mesh = _meshes.get(jaxpr, False)
    if mesh is False:
        mesh = next((m for m in map(_eqn_mesh, jaxpr.eqns) if m is not None), None)
        _meshes[jaxpr] = mesh
    if mesh is None:
        return device
    rep = _sharding.NamedSharding(mesh, _sharding.PartitionSpec())
    return placement_of(args, [rep] * len(args))


# ---- sharding in types: results laid out as their types say ---------------------------

def explicit_placement(device: Any, in_avals: Sequence[Any], out_avals: Sequence[Any]) -> Any:
    """``device`` (a device, a Placement or None), with every result whose aval carries
    an explicit sharding (sharding in types) laid out so: the Placement's
    ``out_shardings`` filled in over the concrete mesh (the arguments' or the one in
    context); a Placement replicating the arguments over that mesh when no argument
    is sharded."""
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
