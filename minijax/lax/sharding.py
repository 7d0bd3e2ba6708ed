"""sharding_constraint: the identity, with a layout asked of XLA's partitioner.

``with_sharding_constraint(x, sharding)`` inside a jitted function lowers to
``sdy.sharding_constraint %x <@mesh, [...]>`` in a module partitioned by Shardy, else
to ``stablehlo.custom_call @Sharding(%x) {mhlo.sharding = "..."}``, which GSPMD reads
as "lay the value out this way here". The sharding object (a
``minijax.sharding.NamedSharding``) is the primitive's parameter; this module only
relies on its ``hlo_text(ndim)`` and, for vmap, its ``spec``/``with_spec``. Called
eagerly it moves the array there (``minijax.stages.sharded`` sets that rule).
"""

from __future__ import annotations

from minijax.core import dtypes
from minijax.core.sharding_rules import (concrete_in_context, def_sharding_rule,
                                         is_partition_spec, resolve)
from minijax.core.trace import Primitive, get_aval
from minijax.lowering.types import string_attr
from minijax.transforms import ad

sharding_constraint_p = Primitive("sharding_constraint")


@sharding_constraint_p.def_abstract_eval
def _sharding_constraint_abstract(x, *, sharding):
    # Over explicit mesh axes the layout is part of the type (``reshard``).
    new = x.update(sharding=sharding)
    return new if new._sharding is not None else x


def _sharding_constraint_sharding(x, *, sharding):
    new = x.update(sharding=sharding)
    return new._sharding if new._sharding is not None else x._sharding


def_sharding_rule(sharding_constraint_p, _sharding_constraint_sharding)


@sharding_constraint_p.def_lowering
def _sharding_constraint_lower(ctx, x, *, sharding):
    aval = ctx.avals_out[0]
    sdy = ctx.module.sdy
    if sdy is not None and hasattr(sharding, "spec"):  # Shardy
        return ctx.op("sdy.sharding_constraint", [x], aval,
                      {"sharding": "#sdy.sharding" + sdy.sharding(sharding, len(aval.shape))})
    if not hasattr(getattr(sharding, "mesh", None), "_flat_devices") and \
            hasattr(sharding, "mesh"):
        return x  # over an abstract mesh in a module not partitioned over it: no devices
    attrs = {"call_target_name": '"Sharding"',
             "mhlo.sharding": string_attr(sharding.hlo_text(len(aval.shape)))}
    return ctx.op("stablehlo.custom_call", [x], aval, attrs)


def constrain(ctx, value, sharding):
    """In a lowering rule: ``value`` laid out as ``sharding`` (``sdy.sharding_constraint``
    in a Shardy module, GSPMD's ``Sharding`` custom call otherwise); ``sharding`` may be
    over an abstract mesh (an aval's sharding in types)."""
    aval = value.aval
    sdy = ctx.module.sdy
    if sdy is not None:
        return ctx.op("sdy.sharding_constraint", [value], aval,
                      {"sharding": "#sdy.sharding" + sdy.sharding(sharding, len(aval.shape))})
    if not hasattr(sharding.mesh, "_flat_devices"):
        return value  # no devices to name: the partitioner chooses
    attrs = {"call_target_name": '"Sharding"',
             "mhlo.sharding": string_attr(sharding.hlo_text(len(aval.shape)))}
    return ctx.op("stablehlo.custom_call", [value], aval, attrs)


def with_sharding_constraint(x, shardings):
    """``x`` (a pytree), with each leaf laid out as ``shardings`` (one sharding for
    every leaf, or a pytree like ``x``) from here on; the values are unchanged."""
    from minijax import _pytree as tree_util
    from minijax.runtime.pytree import registry
    # over the public registry, where typed keys are leaves (as in jax's pytrees); their
    # words take the constraint
    leaves, tree = registry.flatten(x)
    if hasattr(shardings, "hlo_text") or is_partition_spec(shardings):
        per_leaf = [shardings] * len(leaves)
    else:
        per_leaf = tree.flatten_up_to(shardings) if hasattr(tree, "flatten_up_to") else \
            tree_util.tree_flatten(shardings, is_leaf=lambda s: hasattr(s, "hlo_text") or
                                   is_partition_spec(s))[0]
    if len(per_leaf) != len(leaves):
        raise ValueError(f"with_sharding_constraint: {len(per_leaf)} shardings for "
                         f"{len(leaves)} arrays")
    outs = []
    for leaf, s in zip(leaves, per_leaf):
        if is_partition_spec(s):  # over the mesh in context, as jax
            try:
                s = resolve("with_sharding_constraint", s)
            except ValueError:
                raise RuntimeError(
                    "with_sharding_constraint requires a non-empty mesh in context if you "
                    "are passing `PartitionSpec`s to shardings. You can define a context "
                    "mesh via `minijax.set_mesh(mesh)`. Alternatively, provide `Sharding`s "
                    "to shardings and then the mesh context manager is not required.") from None
        s = concrete_in_context(s)
        if not hasattr(s, "hlo_text"):
            raise TypeError(f"with_sharding_constraint expects shardings "
                            f"(minijax.sharding.NamedSharding), got {s!r}")
        spec = getattr(s, "spec", None)
        ndim = len(leaf.shape) if _is_extended(leaf) else len(get_aval(leaf).shape)
        if spec is not None and len(spec) > ndim:
            raise ValueError(f"with_sharding_constraint: {spec} has more entries than the "
                             f"{ndim} dimensions of the value")
        if _is_extended(leaf):  # the key dimensions trail, unconstrained by the spec
            dt = leaf.dtype
            outs.append(dt.from_physical(
                sharding_constraint_p.bind(dt.to_physical(leaf), sharding=s)))
            continue
        outs.append(sharding_constraint_p.bind(leaf, sharding=s))
    return tree.unflatten(outs)


def _is_extended(x) -> bool:
    return isinstance(getattr(x, "dtype", None), dtypes.ExtendedDType)


# ---- transformation rules ----------------------------------------------------------------


def _sharding_constraint_transpose(ct, x, *, sharding):
    return [sharding_constraint_p.bind(ct, sharding=sharding)]


def _sharding_constraint_batch(trace, vals, dims, *, sharding):
    (x,), (b,) = vals, dims
    spec = getattr(sharding, "spec", None)
    if spec is None:
        raise NotImplementedError(f"vmap of with_sharding_constraint with {sharding}")
    ndim = len(get_aval(x).shape) - 1
    parts = list(spec) + [None] * (ndim - len(spec))
    parts.insert(b, None)  # the batch dimension is not split
    return sharding_constraint_p.bind(x, sharding=sharding.with_spec(type(spec)(*parts))), b


ad.deflinear(sharding_constraint_p, _sharding_constraint_transpose)
sharding_constraint_p.def_batch(_sharding_constraint_batch)
