"""``shard_map``: write the per-device program; XLA runs it on every device of a mesh.

>>> mesh = minijax.make_mesh((8,), ("x",))
>>> @partial(shard_map, mesh=mesh, in_specs=P("x"), out_specs=P())
... def total(block):                  # block: this device's f32[2] of an f32[16]
...     return lax.psum(block.sum(), "x")
>>> total(jnp.arange(16.0))
Array(120., dtype=float32)

Inside, collectives (``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
``psum_scatter``, ``ppermute``, ``all_to_all``, ``axis_index``) work over the mesh's
axis names. ``check_rep`` (default on) verifies that an output whose ``out_specs``
leaves out a mesh axis really is the same on every device along it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from minijax.core.aval import ShapedArray
from minijax.core.trace import (DebugInfo, current_axis_env, extend_axis_env, get_aval,
                                split_tracer_consts, trace_to_jaxpr)
from minijax.lax.shard_map import local_aval, rewrite_body, shard_map_p
from minijax.runtime.sharding import Mesh, NamedSharding, PartitionSpec, current_mesh
from minijax._pytree import (PrefixMismatchError, broadcast_prefix, tree_flatten,
                             tree_unflatten)

__all__ = ["shard_map"]


def _specs_to_leaves(specs: Any, tree_value: Any, what: str, name: str) -> list:
    """One PartitionSpec per leaf of ``tree_value``; ``specs`` is a pytree prefix of it
    whose leaves are PartitionSpecs (a PartitionSpec is a tuple, so it is a leaf here)."""
    try:
        out = broadcast_prefix(specs, tree_value,
                               lambda p: isinstance(p, PartitionSpec) or p is None)
    except PrefixMismatchError as e:
        raise ValueError(f"shard_map({name}) {what}{e.where}: {e.prefix!r} is not a pytree "
                         f"prefix of the {'arguments' if what == 'in_specs' else 'outputs'} "
                         "made of PartitionSpecs") from None
    return [PartitionSpec() if p is None else p for p in out]


def _check_spec_axes(specs: list, manual_axes, what: str, name: str) -> None:
    """Specs may name only the manual axes (all of the mesh's unless ``axis_names``)."""
    if manual_axes is None:
        return
    for s in specs:
        for d in range(len(s)):
            bad = [a for a in s.axes_of(d) if a not in manual_axes]
            if bad:
                raise ValueError(f"shard_map({name}) {what} entry {s} names mesh axis "
                                 f"{bad[0]!r}, which is not in axis_names {manual_axes}")


def shard_map(f: Callable | None = None, /, *, mesh: Mesh | None = None, in_specs: Any,
              out_specs: Any,
              check_rep: bool = True, check_vma: bool | None = None,
              axis_names: Any = None) -> Callable:
    """Map ``f`` over the blocks of its arguments on every device of ``mesh``.

    Args:
      f: a function of per-device blocks (collectives over ``mesh``'s axis names work
        inside).
      mesh: the ``minijax.sharding.Mesh`` (default: the one ``set_mesh`` set).
      in_specs: a ``PartitionSpec`` per argument (a pytree prefix of the arguments):
        how each argument is split into blocks.
      out_specs: likewise for the outputs: how the blocks make the global result.
      check_rep: check that outputs left unsplit over an axis do not vary along it.
      axis_names: the mesh axes ``f`` is manual over (default, or empty: all); the others are
        left to XLA's partitioner, and collectives inside may use only these.
    """
    if f is None:
        return functools.partial(shard_map, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                                 check_rep=check_rep, check_vma=check_vma,
                                 axis_names=axis_names)
    if mesh is None:  # the mesh set_mesh set
        mesh = current_mesh()
        if mesh is None:
            raise ValueError("shard_map: no mesh given, and none is set; pass mesh= or set "
                             "one with minijax.set_mesh(mesh)")
    if not isinstance(mesh, Mesh):
        raise TypeError(f"shard_map: mesh must be a minijax.sharding.Mesh, got {mesh!r}")
    if check_vma is not None:
        check_rep = check_vma
    name = getattr(f, "__name__", "fun")
    manual_axes = None  # every mesh axis is manual (also for an empty axis_names, as jax)
    if axis_names and set(axis_names) != set(mesh.axis_names):
        unknown = set(axis_names) - set(mesh.axis_names)
        if unknown:
            raise ValueError(f"shard_map({name}): axis_names {sorted(unknown)} are not axes "
                             f"of the mesh {mesh.axis_names}")
        # manual over these axes only; the others are left to the partitioner
        manual_axes = tuple(a for a in mesh.axis_names if a in set(axis_names))
    env_axes = tuple((a, n) for a, n in mesh.shape.items()
                     if manual_axes is None or a in manual_axes)

    @functools.wraps(f)
    def wrapped(*args):
        bound = {a for a, _ in current_axis_env()} & set(mesh.axis_names)
        if bound:
            # XLA's GSPMD partitioner aborts the process on manual regions inside
            # manual regions; refuse here, with a Python error, instead
            raise ValueError(
                f"shard_map({name}) is called inside a shard_map (or pmap) body that already "
                f"binds mesh axes {sorted(bound)}; nested shard_maps are not supported by "
                "minijax: make the outer shard_map manual over all the axes you need "
                "(axis_names=) and use collectives over them in one body")
        leaves, in_tree = tree_flatten(args)
        specs = _specs_to_leaves(in_specs, args, "in_specs", name)
        _check_spec_axes(specs, manual_axes, "in_specs", name)
        ins = [NamedSharding(mesh, s) for s in specs]
        avals = [get_aval(x) for x in leaves]
        locals_ = [local_aval(ShapedArray(a.shape, a.dtype, a.weak_type), s, f"argument {i}")
                   for i, (a, s) in enumerate(zip(avals, ins))]
        out_info: list = []

        def flat_fun(*blocks):
            out = f(*tree_unflatten(in_tree, list(blocks)))
            out_leaves, out_tree = tree_flatten(out)
            out_info.append((out, out_tree))
            return out_leaves, None

        with extend_axis_env(env_axes):
            jaxpr, consts, _ = trace_to_jaxpr(flat_fun, locals_,
                                              DebugInfo("shard_map", name, None))
            closed, hoisted = split_tracer_consts(jaxpr, consts)
            out_value, out_tree = out_info[0]
            ospecs = _specs_to_leaves(out_specs, out_value, "out_specs", name)
            _check_spec_axes(ospecs, manual_axes, "out_specs", name)
            outs = [NamedSharding(mesh, s) for s in ospecs]
            for i, (a, s) in enumerate(zip(closed.out_avals, outs)):
                if len(s.spec) > len(a.shape):
                    raise ValueError(f"shard_map({name}): output {i} ({a.str_short()}) has "
                                     f"out spec {s.spec} with more entries than dimensions")
            all_ins = [NamedSharding(mesh, PartitionSpec())] * len(hoisted) + ins
            body = rewrite_body(closed, all_ins, outs, check_rep, f"shard_map({name})")
            results = shard_map_p.bind(*hoisted, *leaves, jaxpr=body, mesh=mesh,
                                       in_shardings=tuple(all_ins), out_shardings=tuple(outs),
                                       check_rep=check_rep, name=name,
                                       manual_axes=manual_axes)
        return tree_unflatten(out_tree, results)

    return wrapped
