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
from minijax.runtime.sharding import (AxisType, Mesh, NamedSharding, PartitionSpec,
                                      current_mesh)
from minijax._pytree import (PrefixMismatchError, broadcast_prefix, tree_flatten,
                             tree_leaves, tree_map, tree_unflatten)

__all__ = ["Infer", "shard_map", "smap"]


class InferFromArgs:
    """The default ``in_specs`` of ``shard_map`` (``in_axes`` of ``smap``): take each
    argument's spec from its type, over a mesh whose manual axes are Explicit."""

    def __repr__(self) -> str:
        return "jax.sharding.Infer"


Infer = InferFromArgs()


def _manual_part(spec: PartitionSpec, manual: frozenset) -> PartitionSpec:
    """``spec`` with the axes that are not manual dropped (an argument's spec read from its
    type, for in_specs=Infer)."""
    out = []
    for p in spec:
        if p is None:
            out.append(None)
        elif isinstance(p, tuple):
            kept = [a if a in manual else None for a in p]
            while kept and kept[-1] is None:
                kept.pop()
            if None in kept:
                raise ValueError(f"Invalid spec: {spec}")
            out.append(tuple(kept) if kept else None)
        else:
            out.append(p if p in manual else None)
    return PartitionSpec(*out)


def _inferred_specs(leaves: list, mesh: Mesh, manual: frozenset, name: str,
                    smap_: bool) -> list:
    types = dict(zip(mesh.axis_names, mesh.axis_types))
    if not all(types[a] == AxisType.Explicit for a in manual):
        kinds = ", ".join(str(types[a]) for a in sorted(manual))
        if smap_:
            raise TypeError(f"in_axes was not specified when axis_name={manual} was "
                            f"of type {kinds}")
        raise TypeError("shard_map in_specs argument must be a pytree of "
                        "`jax.sharding.PartitionSpec` instances, but it was `None` when "
                        f"axis_names={manual} are of type {kinds}")
    specs = []
    for x in leaves:
        s = getattr(get_aval(x), "sharding", None)
        spec = getattr(s, "spec", None)
        specs.append(PartitionSpec() if spec is None else _manual_part(spec, manual))
    return specs


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


def shard_map(f: Callable | None = None, /, *, mesh: Mesh | None = None,
              in_specs: Any = Infer, out_specs: Any,
              check_rep: bool = True, check_vma: bool | None = None,
              axis_names: Any = None) -> Callable:
    """Map ``f`` over the blocks of its arguments on every device of ``mesh``.

    Args:
      f: a function of per-device blocks (collectives over ``mesh``'s axis names work
        inside).
      mesh: the ``minijax.sharding.Mesh`` (default: the one ``set_mesh`` set).
      in_specs: a ``PartitionSpec`` per argument (a pytree prefix of the arguments):
        how each argument is split into blocks. By default (``Infer``) each argument's
        spec comes from its type, when the manual axes are Explicit.
      out_specs: likewise for the outputs: how the blocks make the global result.
      check_rep: check that outputs left unsplit over an axis do not vary along it.
      axis_names: the mesh axes ``f`` is manual over (default: all); the others are
        left to XLA's partitioner, and collectives inside may use only these.
    """
    if f is None:
        return functools.partial(shard_map, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                                 check_rep=check_rep, check_vma=check_vma,
                                 axis_names=axis_names)
    return _shard_map(f, mesh, in_specs, out_specs, check_rep if check_vma is None
                      else check_vma, axis_names, smap_=False)


def _shard_map(f: Callable, mesh: Mesh | None, in_specs: Any, out_specs: Any,
               check_rep: bool, axis_names: Any, smap_: bool) -> Callable:
    if mesh is None:  # the mesh set_mesh set
        mesh = current_mesh()
        if mesh is None:
            raise ValueError("shard_map: no mesh given, and none is set; pass mesh= or set "
                             "one with minijax.set_mesh(mesh)")
    if not isinstance(mesh, Mesh):
        raise TypeError(f"shard_map: mesh must be a minijax.sharding.Mesh, got {mesh!r}")
    name = getattr(f, "__name__", "fun")
    manual_axes = None  # every mesh axis is manual
    if axis_names is not None and set(axis_names) != set(mesh.axis_names):
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
        if in_specs is Infer:
            specs = _inferred_specs(leaves, mesh, frozenset(manual_axes or mesh.axis_names),
                                    name, smap_)
        else:
            specs = _specs_to_leaves(in_specs, args, "in_specs", name)
            _check_spec_axes(specs, manual_axes, "in_specs", name)
            _check_explicit_specs(leaves, specs, mesh, manual_axes)
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


def _check_explicit_specs(leaves: list, specs: list, mesh: Mesh, manual_axes) -> None:
    """Over a mesh all of whose axes are Explicit and manual, an argument's in_spec must be
    the spec its type carries (as jax: reshard first to change it)."""
    if manual_axes is not None or not mesh.axis_types or \
            any(t != AxisType.Explicit for t in mesh.axis_types):
        return
    for x, s in zip(leaves, specs):
        aval = get_aval(x)
        have = getattr(getattr(aval, "sharding", None), "spec", None)
        if have is None:
            continue
        want = PartitionSpec(*s, *[None] * (len(aval.shape) - len(s)))
        if tuple(have) != tuple(want):
            raise ValueError(
                f"in_specs passed to shard_map: {want} does not match the specs of the "
                f"input: {have} for arg: {aval.str_short()}. `in_specs` is an optional "
                "argument so you can omit specifying it and shard_map will infer the "
                "in_specs from the arguments. If you want to reshard your inputs, you can "
                "use `jax.reshard` on the arguments and then pass those args to shard_map.")


def _axis_spec(axis_name, axis):
    return PartitionSpec() if axis is None else PartitionSpec(*[None] * axis, axis_name)


def smap(f: Callable | None = None, /, *, in_axes: Any = Infer, out_axes: Any,
         axis_name: Any) -> Callable:
    """``shard_map`` over the one mesh axis ``axis_name`` of the mesh in context (set with
    ``set_mesh``): ``in_axes``/``out_axes`` give, per argument/output, the dimension
    split over that axis (None: not split), as ``vmap``'s do; by default (``Infer``) the
    arguments' dimensions come from their types (Explicit axes)."""
    if f is None:
        return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(
            f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
    if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
        raise TypeError(
            "smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of entries "
            "corresponding to the positional arguments passed to the function, but got "
            f"{in_axes}.")
    if in_axes is not Infer and not all(isinstance(a, int) for a in tree_leaves(in_axes)):
        raise TypeError(
            "smap in_axes must be an int, None, jax.sharding.Infer, or (nested) container "
            f"with those types as leaves, but got {in_axes}.")
    if not all(isinstance(a, int) for a in tree_leaves(out_axes)):
        raise TypeError("smap out_axes must be an int, None, or (nested) container with "
                        f"those types as leaves, but got {out_axes}.")
    to_spec = functools.partial(_axis_spec, axis_name)
    in_specs = Infer if in_axes is Infer else tree_map(to_spec, in_axes,
                                                       is_leaf=lambda a: a is None)
    out_specs = tree_map(to_spec, out_axes, is_leaf=lambda a: a is None)
    return _shard_map(f, None, in_specs, out_specs, True, {axis_name}, smap_=True)
