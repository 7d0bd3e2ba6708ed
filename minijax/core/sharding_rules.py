"""Sharding in types: how the explicit sharding of a primitive's operands gives its
results' (jax's ``sharding_rule`` of each primitive).

An aval laid out over the *explicit* axes of a mesh carries ``NamedSharding(abstract
mesh, spec)`` (``ShapedArray._sharding``; None for every other value). When some operand
of a primitive carries one, ``propagate`` runs after the primitive's abstract eval and
gives each result its sharding: the primitive's own rule (``prim.rules["sharding"]``,
registered in the primitive's file with :func:`def_sharding_rule`) or, for a primitive
whose results have the operands' rank, jax's broadcasting rule (elementwise
operations). A primitive with neither leaves its results replicated over the mesh.

Shardings are duck-typed here (the classes live in ``minijax.runtime.sharding``, above
this layer): a sharding has ``mesh`` (with ``empty``, ``shape``) and ``spec`` (a tuple,
with ``axes_of(dim)``), and ``with_spec(spec)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from minijax.core.aval import ShapedArray
from minijax.core.errors import ShardingTypeError

__all__ = ["ShardingTypeError", "broadcasting_rule", "def_sharding_rule", "propagate",
           "sharding_of", "spec_entries", "with_entries"]


def sharding_of(aval: Any) -> Any:
    """The explicit sharding an aval carries, or None."""
    return getattr(aval, "_sharding", None)


def spec_entries(sharding: Any, ndim: int) -> list:
    """The spec's entries padded with None to ``ndim``."""
    parts = list(sharding.spec)[:ndim]
    return parts + [None] * (ndim - len(parts))


def with_entries(sharding: Any, entries: Sequence) -> Any:
    """``sharding`` over the same mesh with the spec ``entries``."""
    return sharding.with_spec(type(sharding.spec)(*entries))


def def_sharding_rule(prim: Any, rule: Callable) -> None:
    """Register ``rule(*avals, **params) -> sharding (or a list, one per result)`` as
    ``prim``'s sharding rule; ``avals`` are its operands' (some may carry no sharding:
    then ``sharding_of`` is None). Raise ``ShardingTypeError`` as jax does."""
    prim.rules["sharding"] = rule


def common_mesh_sharding(avals: Sequence[Any], name: str) -> Any:
    """A sharding of one of ``avals`` (for its mesh); ShardingTypeError if two differ."""
    found = None
    for a in avals:
        s = sharding_of(a)
        if s is not None and not s.mesh.empty:
            if found is not None and found.mesh != s.mesh:
                raise ShardingTypeError(
                    f"Mesh for all inputs should be equal. Got one mesh: {found.mesh} and "
                    f"another mesh: {s.mesh}")
            found = found or s
    return found


def broadcasting_rule(name: str, avals: Sequence[Any]) -> Any:
    """jax's rule for elementwise operations: per dimension, the operands' common
    entry; an operand's None (or a size-1 dimension's) gives way to another's axis;
    two different axes are a ``ShardingTypeError``."""
    base = common_mesh_sharding(avals, name)
    shaped = [a for a in avals if a.shape]
    if not shaped:
        return with_entries(base, [])
    ndim = len(shaped[0].shape)
    specs = [spec_entries(sharding_of(a), ndim) if sharding_of(a) is not None
             else [None] * ndim for a in shaped]
    out = []
    for d in range(ndim):
        ss = [s[d] for s in specs]
        if all(s == ss[0] for s in ss):
            out.append(ss[0])
            continue
        nontrivial = [s for s, a in zip(ss, shaped) if not (a.shape[d] == 1 and s is None)]
        if not nontrivial:
            out.append(None)
        elif all(s == nontrivial[0] for s in nontrivial):
            out.append(nontrivial[0])
        else:
            chosen = None
            for s in ss:
                if chosen is None and s is not None:
                    chosen = s
                elif chosen is not None and s is not None and s != chosen:
                    shown = ", ".join(str(tuple(s)) for s in specs)
                    raise ShardingTypeError(
                        f"{name} got incompatible shardings for broadcasting: {shown}.")
            out.append(chosen)
    return with_entries(base, out)


def _replicated(base: Any, ndim: int) -> Any:
    return with_entries(base, [None] * ndim)


def propagate(prim: Any, avals: Sequence[Any], params: dict, out: Any) -> Any:
    """``out`` (the abstract eval's result: an aval or a list of them) with the
    shardings ``prim``'s rule gives, when an operand carries an explicit sharding."""
    base = common_mesh_sharding(avals, prim.name)
    rule = prim.rules.get("sharding")
    if base is None:
        base = params.get("out_sharding")
        if base is None:
            base = params.get("sharding")
        if base is None or rule is None:
            return out
    outs = list(out) if prim.multiple_results else [out]
    if rule is not None:
        got = rule(*avals, **params)
        shardings = list(got) if prim.multiple_results else [got]
    elif all(not hasattr(o, "shape") or len(o.shape) == len(a.shape) or not a.shape
             for o in outs for a in avals if hasattr(a, "shape")):
        s = broadcasting_rule(prim.name, [a for a in avals if hasattr(a, "shape")])
        shardings = [s] * len(outs)
    else:
        shardings = [None] * len(outs)
    new = []
    for o, s in zip(outs, shardings):
        if type(o) is not ShapedArray:
            new.append(o)
            continue
        if s is None:
            s = _replicated(base, len(o.shape))
        new.append(o.update(sharding=s))
    return new if prim.multiple_results else new[0]


# ---- rules shared by several primitives (registered in their own files) -----------------

def reduction_rule(x: Any, axes: Sequence[int], out_sharding: Any = None) -> Any:
    """A reduction's result: the operand's spec without the reduced dimensions."""
    if out_sharding is not None:
        return out_sharding
    s = sharding_of(x)
    entries = spec_entries(s, len(x.shape))
    return with_entries(s, [e for i, e in enumerate(entries) if i not in axes])


def broadcast_in_dim_rule(x: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                          sharding: Any = None) -> Any:
    """``broadcast_in_dim``: each operand dimension's entry moves to its new position
    (a size-1 dimension broadcast to more is not split); new dimensions are not."""
    if sharding is not None:
        return sharding
    s = sharding_of(x)
    entries = spec_entries(s, len(x.shape))
    out = [None] * len(shape)
    for i, od in enumerate(broadcast_dimensions):
        if x.shape[i] == shape[od]:
            out[od] = entries[i]
    return with_entries(s, out)


def _reshape_error(x: Any, new_sizes: Sequence[int]) -> ShardingTypeError:
    return ShardingTypeError(
        "This reshape is not supported. Please specify the sharding of the output via the "
        "`out_sharding` argument of jax.lax.reshape. Got operand type: "
        f"{x.str_short()}, new sizes: {tuple(new_sizes)}")


def _split_axes(mesh: Any, axes: Sequence[str], sizes: Sequence[int], x, new_sizes) -> list:
    """The axes ``axes`` (major first) spread over dimensions of ``sizes``, the first
    ones first, as far as each size is divisible (jax's ``split_partitions``)."""
    it = iter(axes)
    parts = []
    for n in sizes:
        got = []
        while n > 1:
            a = next(it, None)
            if a is None:
                break
            n, rem = divmod(n, mesh.shape[a])
            if rem:
                raise _reshape_error(x, new_sizes)
            got.append(a)
        parts.append(None if not got else got[0] if len(got) == 1 else tuple(got))
    if next(it, None) is not None:
        raise _reshape_error(x, new_sizes)
    return parts


def reshape_rule(x: Any, new_sizes: Sequence[int], dimensions: Any = None,
                 sharding: Any = None) -> Any:
    """jax's reshape rule for the simple cases: size-1 dimensions added or removed, one
    dimension split into several (its axes go to the leading ones) or several merged
    into one (their axes, major first, with no unsplit dimension before a split one);
    anything else is a ``ShardingTypeError`` asking for ``out_sharding``."""
    if sharding is not None:
        return sharding
    s = sharding_of(x)
    entries = spec_entries(s, len(x.shape))
    new_sizes = tuple(new_sizes)
    if all(e is None for e in entries):
        return with_entries(s, [None] * len(new_sizes))
    if [n for n in x.shape if n != 1] == [n for n in new_sizes if n != 1]:
        it = iter(e for n, e in zip(x.shape, entries) if n != 1)
        return with_entries(s, [None if n == 1 else next(it) for n in new_sizes])
    if dimensions is not None:
        raise _reshape_error(x, new_sizes)
    # Walk both shapes, grouping dimensions whose products match.
    out, i, j = [], 0, 0
    shape = tuple(x.shape)
    while i < len(shape) or j < len(new_sizes):
        gi, gj = [i], [j]
        pi = shape[i] if i < len(shape) else 1
        pj = new_sizes[j] if j < len(new_sizes) else 1
        i, j = i + 1, j + 1
        while pi != pj:
            if pi < pj and i < len(shape):
                pi *= shape[i]
                gi.append(i)
                i += 1
            elif pj < pi and j < len(new_sizes):
                pj *= new_sizes[j]
                gj.append(j)
                j += 1
            else:
                raise _reshape_error(x, new_sizes)
        gi = [k for k in gi if k < len(shape)]
        gj = [k for k in gj if k < len(new_sizes)]
        group = [entries[k] for k in gi]
        if len(gi) > 1 and len(gj) > 1 and any(e is not None for e in group):
            raise _reshape_error(x, new_sizes)
        if len(gi) <= 1:  # one dimension (or none) split into gj
            axes = () if not gi or group[0] is None else \
                ((group[0],) if isinstance(group[0], str) else tuple(group[0]))
            out.extend(_split_axes(s.mesh, axes, [new_sizes[k] for k in gj], x, new_sizes))
        else:  # several merged into one
            while group and group[-1] is None:
                group.pop()
            if None in group:
                raise _reshape_error(x, new_sizes)
            axes = [a for e in group for a in ((e,) if isinstance(e, str) else e)]
            out.extend(_split_axes(s.mesh, axes, [new_sizes[gj[0]]], x, new_sizes))
    return with_entries(s, out)


# ---- out_sharding= arguments --------------------------------------------------------------

# (what, out_sharding) -> a concrete NamedSharding (a PartitionSpec over the mesh in
# context); set by minijax.runtime.sharding.
_resolver: list = [None]
# The PartitionSpec class (set by minijax.runtime.sharding).
_spec_type: list = [()]


# sharding -> the same layout over the concrete mesh in context when it is over that
# mesh's abstract mesh, else the sharding itself (set by minijax.runtime.sharding).
_concretizer: list = [lambda s: s]


def concrete_in_context(sharding: Any) -> Any:
    """``sharding``, over the concrete mesh set with ``set_mesh`` if it is over an
    abstract mesh of that mesh's shape (as jax reads such a sharding under a mesh)."""
    return _concretizer[0](sharding)


def is_partition_spec(x: Any) -> bool:
    """Whether ``x`` is a ``PartitionSpec`` (without importing the runtime)."""
    return isinstance(x, _spec_type[0])


def resolve(what: str, out_sharding: Any) -> Any:
    """``out_sharding`` (a NamedSharding, or a PartitionSpec over the mesh set with
    ``set_mesh``) as a concrete NamedSharding; None for no constraint."""
    if out_sharding is None or getattr(getattr(out_sharding, "mesh", None), "empty", False):
        return None
    return _resolver[0](what, out_sharding)


def aval_out_sharding(what: str, out_sharding: Any, ndim: int) -> Any:
    """The sharding a result of ``ndim`` dimensions carries in its type for
    ``out_sharding=``: None when it asks for nothing; ``ShardingTypeError`` unless it
    names explicit mesh axes only (as jax)."""
    s = resolve(what, out_sharding)
    if s is None:
        return None
    spec = s.spec
    if len(spec) > ndim:
        raise ValueError(f"{what}: out_sharding {spec} has more entries than the {ndim} "
                         "dimensions of the result")
    types = dict(zip(s.mesh.axis_names, s.mesh.axis_types))
    for d in range(len(spec)):
        for a in spec.axes_of(d):
            if types[a].name != "Explicit":
                raise ValueError(
                    f"{what}: out_sharding {spec} names the mesh axis {a!r} of type "
                    f"{types[a].name}; only Explicit axes may be given (sharding in types)")
    return ShapedArray((0,) * ndim, "float32", sharding=s)._sharding
