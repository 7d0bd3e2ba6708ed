"""Collectives over named axes: psum, pmax, pmin, all_gather, axis_index, ppermute.

A named axis is bound by ``vmap(axis_name=...)`` (the batching rules below turn the
collective into an ordinary reduction over the batch dimension), or by
``pmap``/``xla_computation(axis_env=...)``, where the lowering emits cross-replica
ops (``stablehlo.all_reduce`` with replica groups computed from the axis
environment: devices are numbered row-major over the environment's axes).
An axis name bound by neither raises ``NameError``.
"""

from __future__ import annotations


from collections.abc import Sequence

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, axis_size, get_aval
from minijax.lax._util import type_error
from minijax.lowering.types import dense_i64, string_attr
from minijax.transforms.ad import Zero, deflinear, is_undefined


def _axes_tuple(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _check_axes(axes: tuple) -> int:
    """Check every axis name is bound; returns the product of their sizes."""
    total = 1
    for name in axes:
        total *= axis_size(name)
    return total


# ---- replica groups for the lowering --------------------------------------------------------

def replica_groups(axis_env: Sequence[tuple], axes: tuple) -> list[list[int]]:
    """Device groups reduced together by a collective over ``axes``.

    Devices are numbered row-major over ``axis_env`` (the first axis varies slowest);
    a group holds the devices that agree on every axis not in ``axes``.
    """
    names = [n for n, _ in axis_env]
    for a in axes:
        if a not in names:
            raise NameError(f"unbound axis name: {a!r}; the axis environment has {names}")
    sizes = [s for _, s in axis_env]
    ids = np.arange(int(np.prod(sizes))).reshape(sizes)
    kept = [i for i, n in enumerate(names) if n not in axes]
    reduced = [i for i, n in enumerate(names) if n in axes]
    ids = ids.transpose(kept + reduced).reshape(
        int(np.prod([sizes[i] for i in kept])), int(np.prod([sizes[i] for i in reduced])))
    return ids.tolist()


def _groups_attr(groups: list[list[int]]) -> str:
    return dense_i64(groups, (len(groups), len(groups[0])))


def _lowering_axis_env(ctx) -> tuple:
    env = getattr(ctx.module, "axis_env", None)
    if not env:
        raise NameError("collectives over named axes need a binding for the axis: use them "
                        "inside vmap(axis_name=...), pmap, or xla_computation(axis_env=...)")
    return env


def spmd_attrs(ctx) -> dict[str, str]:
    """Inside a ``shard_map`` body (the module's ``spmd_manual`` is set) collectives run
    across SPMD partitions, not replicas: they need a channel and, for grouped ones,
    global device ids (= partition ids, numbered row-major over the mesh)."""
    if not getattr(ctx.module, "spmd_manual", False):
        return {}
    n = getattr(ctx.module, "channel_count", 0) + 1
    ctx.module.channel_count = n
    return {"channel_handle": f"#stablehlo.channel_handle<handle = {n}, type = 1>"}


def _all_reduce(ctx, x, kind: str, axes: tuple):
    from minijax.lax.reduce import scalar_region
    groups = replica_groups(_lowering_axis_env(ctx), axes)
    region = scalar_region(ctx, kind, x.aval.dtype)
    attrs = {"replica_groups": _groups_attr(groups), **spmd_attrs(ctx)}
    if len(attrs) > 1:
        attrs["use_global_device_ids"] = "unit"
    return ctx.op("stablehlo.all_reduce", [x], x.aval, attrs, regions=[region])


# ---- psum / pmax / pmin ---------------------------------------------------------------------

def _reducer(name: str, kind: str) -> Primitive:
    p = Primitive(name, multiple_results=True)

    def abstract_eval(*avals, axes, axis_index_groups=None):
        _check_axes(axes)
        for a in avals:
            if kind != "add" and dtypes.is_complex(a.dtype):
                raise type_error(name, "complex operands are not supported", a)
        return list(avals)

    def lowering(ctx, *xs, axes, axis_index_groups=None):
        return [_all_reduce(ctx, x, kind, axes) for x in xs]

    def batch(trace, vals, dims, *, axes, axis_index_groups=None):
        from minijax import lax
        if trace.axis_name not in axes:
            return p.bind(*vals, axes=axes, axis_index_groups=axis_index_groups), dims
        rest = tuple(a for a in axes if a != trace.axis_name)
        outs = []
        for v, d in zip(vals, dims):
            if d is None:
                if kind == "add":
                    v = lax.mul(v, np.asarray(trace.axis_size, get_aval(v).dtype))
                outs.append(v)
            else:
                reduce = {"add": lax.reduce_sum, "max": lax.reduce_max,
                          "min": lax.reduce_min}[kind]
                outs.append(reduce(v, (d,)))
        if rest:
            outs = p.bind(*outs, axes=rest, axis_index_groups=axis_index_groups)
        return outs, [None] * len(outs)

    p.def_abstract_eval(abstract_eval)
    p.def_lowering(lowering)
    p.def_batch(batch)
    p.def_rule("batch_always")(True)
    return p


psum_p = _reducer("psum", "add")


# psum is linear. Every member's output is the sum of all members' inputs, so the
# cotangent of one member's input is the sum of all members' output cotangents: psum
# transposes to psum (as in jax).
def _psum_transpose(cts, *args, axes, axis_index_groups=None):
    keep = [is_undefined(a) and type(c) is not Zero for a, c in zip(args, cts)]
    summed = iter(psum_p.bind(*[c for c, k in zip(cts, keep) if k], axes=axes,
                              axis_index_groups=axis_index_groups) if any(keep) else [])
    return [next(summed) if k else None for k in keep]


deflinear(psum_p, _psum_transpose)


def _chooser_jvp(prim: Primitive):
    """jvp of pmax/pmin: the tangent of the member(s) holding the extremum, averaged over
    ties (as reduce_max's jvp does over positions)."""
    def rule(primals, tangents, *, axes, axis_index_groups=None):
        from minijax import lax
        from minijax.transforms.ad import instantiate, tangent_aval
        outs = prim.bind(*primals, axes=axes, axis_index_groups=axis_index_groups)
        touts = []
        for x, t, out in zip(primals, tangents, outs):
            if type(t) is Zero or not dtypes.is_inexact(get_aval(out).dtype):
                touts.append(Zero(tangent_aval(get_aval(out))))
                continue
            chosen = lax.convert_element_type(lax.eq(x, out), get_aval(x).dtype)
            # (two binds: the count is not a tangent, so it must not share an equation)
            count, = psum_p.bind(chosen, axes=axes, axis_index_groups=axis_index_groups)
            num, = psum_p.bind(lax.mul(instantiate(t), chosen), axes=axes,
                               axis_index_groups=axis_index_groups)
            touts.append(lax.div(num, count))
        return outs, touts
    return rule


pmax_p = _reducer("pmax", "max")
pmax_p.def_jvp(_chooser_jvp(pmax_p))
pmin_p = _reducer("pmin", "min")
pmin_p.def_jvp(_chooser_jvp(pmin_p))


def _tree_bind(prim, x, axis_name):
    from minijax._pytree import tree_flatten, tree_unflatten
    leaves, tree = tree_flatten(x)
    axes = _axes_tuple(axis_name)
    _check_axes(axes)  # here every enclosing vmap is visible, for the error message
    outs = prim.bind(*leaves, axes=axes, axis_index_groups=None)
    return tree_unflatten(tree, outs)


def _no_groups(what: str, axis_index_groups) -> None:
    """jax's ``axis_index_groups`` (collectives within subgroups): only None here."""
    if axis_index_groups is not None:
        raise NotImplementedError(f"{what}: axis_index_groups is not supported in minijax")


def psum(x, axis_name, *, axis_index_groups=None):
    """Sum of ``x`` over the named axis (or axes); every member gets the total."""
    _no_groups("psum", axis_index_groups)
    return _tree_bind(psum_p, x, axis_name)


def pmax(x, axis_name, *, axis_index_groups=None):
    _no_groups("pmax", axis_index_groups)
    return _tree_bind(pmax_p, x, axis_name)


def pmin(x, axis_name, *, axis_index_groups=None):
    _no_groups("pmin", axis_index_groups)
    return _tree_bind(pmin_p, x, axis_name)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean of ``x`` over the named axis (or axes)."""
    _no_groups("pmean", axis_index_groups)
    from minijax.lax.binary import div
    from minijax.lax.convert import convert_element_type
    from minijax._pytree import tree_map
    size = _check_axes(_axes_tuple(axis_name))

    def mean(v):  # jnp.true_divide's promotion: integers and booleans give floats
        if not dtypes.is_inexact(get_aval(v).dtype):
            v = convert_element_type(v, dtypes.default_float())
        return div(v, np.array(size, get_aval(v).dtype))

    return tree_map(mean, psum(x, axis_name))


# ---- all_gather -----------------------------------------------------------------------------

all_gather_p = Primitive("all_gather")


@all_gather_p.def_abstract_eval
def _all_gather_abstract(x, *, axis_name, axis, tiled):
    size = _check_axes(axis_name)
    if not 0 <= axis <= x.ndim - (1 if tiled else 0):
        raise type_error("all_gather", f"axis {axis} out of range", x)
    shape = list(x.shape)
    if tiled:
        shape[axis] *= size
    else:
        shape.insert(axis, size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


@all_gather_p.def_lowering
def _all_gather_lower(ctx, x, *, axis_name, axis, tiled):
    groups = replica_groups(_lowering_axis_env(ctx), axis_name)
    out = ctx.avals_out[0]
    if not tiled:  # gather along a new axis: make it size 1 first
        shape = list(x.aval.shape)
        shape.insert(axis, 1)
        x = ctx.op("stablehlo.reshape", [x], ShapedArray(tuple(shape), x.aval.dtype))
    attrs = {"all_gather_dim": f"{axis} : i64", "replica_groups": _groups_attr(groups),
             **spmd_attrs(ctx)}
    if "channel_handle" in attrs:
        attrs["use_global_device_ids"] = "unit"
    return ctx.op("stablehlo.all_gather", [x], out, attrs)


def _all_gather_batch(trace, vals, dims, *, axis_name, axis, tiled):
    from minijax import lax
    from minijax.transforms.batching import bdim_at, moveaxis
    (x,), (d,) = vals, dims
    if trace.axis_name not in axis_name:
        # (`axis` counts the unbatched dimensions; a new axis inserted before the batch
        # dimension moves it)
        shift = 1 if d is not None and d <= axis else 0
        out = all_gather_p.bind(x, axis_name=axis_name, axis=axis + shift, tiled=tiled)
        return out, d if d is None or shift or tiled else d + 1
    if len(axis_name) > 1:
        raise NotImplementedError("all_gather over several axes at once under vmap")
    x = bdim_at(x, d, trace.axis_size, 0)
    out = moveaxis(x, 0, axis)
    if tiled:
        shape = list(out.shape)
        merged = shape[axis] * shape[axis + 1]
        out = lax.reshape(out, tuple(shape[:axis] + [merged] + shape[axis + 2:]))
    return out, None


all_gather_p.def_batch(_all_gather_batch)
all_gather_p.def_rule("batch_always")(True)


def _all_gather_transpose(ct, x, *, axis_name, axis, tiled):
    # Member j's input appears in every member's output at block j: its cotangent is the
    # sum over members of their cotangents' block j (a psum, then this member's block).
    from minijax import lax
    summed = psum_p.bind(ct, axes=axis_name, axis_index_groups=None)[0]
    index = axis_index_p.bind(axis_name=axis_name)
    if tiled:
        size = x.aval.shape[axis]
        return [lax.dynamic_slice_in_dim(summed, lax.mul(index, np.int32(size)), size, axis)]
    return [lax.dynamic_index_in_dim(summed, index, axis, keepdims=False)]


deflinear(all_gather_p, _all_gather_transpose)


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False,
               to: str = "varying"):
    """Every member's ``x``, stacked along ``axis`` (concatenated if ``tiled``). ``to`` is
    jax's type of the result in shard_map (minijax infers replication itself)."""
    _no_groups("all_gather", axis_index_groups)
    from minijax._pytree import tree_map
    names = _axes_tuple(axis_name)
    _check_axes(names)
    return tree_map(lambda v: all_gather_p.bind(v, axis_name=names, axis=int(axis),
                                                tiled=bool(tiled)), x)


# ---- axis_index -----------------------------------------------------------------------------

axis_index_p = Primitive("axis_index")


@axis_index_p.def_abstract_eval
def _axis_index_abstract(*, axis_name):
    _check_axes(axis_name)
    return ShapedArray((), dtypes.int32)


@axis_index_p.def_lowering
def _axis_index_lower(ctx, *, axis_name):
    auto = getattr(ctx.module, "sdy_auto", None)
    if auto is not None:
        # Shardy, in a shard_map manual over some mesh axes only: partition_id is
        # meaningful in a fully manual region, so the index is computed in one nested
        # over the other axes, its scalar result replicated
        mesh, others = auto
        sdy = ctx.module.sdy
        region = ctx.new_region([])
        ctx.module.sdy_auto = None
        try:
            with ctx.in_region(region):
                ctx.ret([_axis_index_lower(ctx, axis_name=axis_name)], "sdy.return")
        finally:
            ctx.module.sdy_auto = auto
        attrs = {"in_shardings": "#sdy.sharding_per_value<[]>",
                 "out_shardings": f"#sdy.sharding_per_value<[{sdy.replicated(mesh, 0)}]>",
                 "manual_axes": "#sdy<manual_axes{" + ", ".join(f'"{a}"' for a in others)
                                + "}>"}
        return ctx.op("sdy.manual_computation", [], [ctx.avals_out[0]], attrs,
                      regions=[region])[0]
    env = _lowering_axis_env(ctx)
    names = [n for n, _ in env]
    sizes = [s for _, s in env]
    u32 = ShapedArray((), dtypes.uint32)
    # shard_map bodies are SPMD partitions; pmap's members are replicas
    rid = ctx.op("stablehlo.partition_id" if getattr(ctx.module, "spmd_manual", False)
                 else "stablehlo.replica_id", [], u32)
    # index over the named axes (row-major among them)
    idx = None
    for name in axis_name:
        i = names.index(name)
        stride = int(np.prod(sizes[i + 1:]))
        v = ctx.op("stablehlo.divide", [rid, ctx.constant(stride, np.uint32)], u32)
        v = ctx.op("stablehlo.remainder", [v, ctx.constant(sizes[i], np.uint32)], u32)
        if idx is None:
            idx = v
        else:
            idx = ctx.op("stablehlo.add", [ctx.op("stablehlo.multiply",
                                                  [idx, ctx.constant(sizes[i], np.uint32)], u32),
                                           v], u32)
    out = ctx.op("stablehlo.convert", [idx], ctx.avals_out[0])
    subgroup = getattr(ctx.module, "spmd_manual", False)
    if isinstance(subgroup, str):
        # a shard_map manual over some mesh axes only: partition_id is meaningful in a
        # fully manual region, whose scalar result is then manual over those axes
        out = ctx.op("stablehlo.custom_call", [out], ctx.avals_out[0],
                     {"call_target_name": '"Sharding"', "mhlo.sharding": '"{manual}"'})
        out = ctx.op("stablehlo.custom_call", [out], ctx.avals_out[0],
                     {"call_target_name": '"SPMDShardToFullShape"',
                      "mhlo.sharding": string_attr(subgroup)})
    return out


def _axis_index_batch(trace, vals, dims, *, axis_name):
    from minijax import lax
    if axis_name != (trace.axis_name,):
        if trace.axis_name in axis_name:
            raise NotImplementedError("axis_index over several axes including a vmapped one")
        return axis_index_p.bind(axis_name=axis_name), None
    return lax.iota(np.int32, trace.axis_size), 0


axis_index_p.def_batch(_axis_index_batch)
axis_index_p.def_rule("batch_always")(True)


def axis_index(axis_name):
    """This member's index along the named axis."""
    names = _axes_tuple(axis_name)
    _check_axes(names)
    return axis_index_p.bind(axis_name=names)


# ---- ppermute -------------------------------------------------------------------------------

ppermute_p = Primitive("ppermute")


@ppermute_p.def_abstract_eval
def _ppermute_abstract(x, *, axis_name, perm):
    size = _check_axes(axis_name)
    srcs = [s for s, _ in perm]
    dsts = [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts) or \
            any(not 0 <= i < size for i in srcs + dsts):
        raise ValueError(f"ppermute perm {perm} must be pairs of distinct sources and "
                         f"distinct destinations in [0, {size})")
    return x


@ppermute_p.def_lowering
def _ppermute_lower(ctx, x, *, axis_name, perm):
    env = _lowering_axis_env(ctx)
    groups = replica_groups(env, axis_name)
    pairs = [(g[s], g[d]) for g in groups for s, d in perm]
    # Cross-replica (pmap-style) permute: no channel handle, as jax emits outside of
    # manual SPMD; with one, XLA:CPU treats the pairs as partition ids and aborts.
    return ctx.op("stablehlo.collective_permute", [x], x.aval,
                  {"source_target_pairs": dense_i64(pairs, (len(pairs), 2)),
                   **spmd_attrs(ctx)})


def _ppermute_batch(trace, vals, dims, *, axis_name, perm):
    from minijax.lax.shape import broadcast_in_dim, concatenate
    from minijax.lax.slicing import slice_in_dim
    from minijax.transforms.batching import bdim_at
    (x,), (d,) = vals, dims
    if trace.axis_name not in axis_name:
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    size = trace.axis_size
    x = bdim_at(x, d, size, 0)
    aval = get_aval(x)
    src_of = {dst: src for src, dst in perm}
    # Row i of the result is row src_of[i] of x; rows nobody sends to are zeros.
    zero_row = broadcast_in_dim(np.zeros((), aval.dtype), (1,) + aval.shape[1:], ())
    rows = [slice_in_dim(x, src_of[i], src_of[i] + 1, axis=0) if i in src_of else zero_row
            for i in range(size)]
    return concatenate(rows, 0), 0


ppermute_p.def_batch(_ppermute_batch)


def _ppermute_transpose(ct, x, *, axis_name, perm):
    # A permutation's transpose is its inverse (members that sent nothing get zeros).
    inverse = tuple((dst, src) for src, dst in perm)
    return [ppermute_p.bind(ct, axis_name=axis_name, perm=inverse)]


deflinear(ppermute_p, _ppermute_transpose)


def ppermute(x, axis_name, perm):
    """Send each member's ``x`` to the member ``perm`` maps it to (others get zeros)."""
    from minijax._pytree import tree_map
    perm = tuple((int(s), int(d)) for s, d in perm)
    names = _axes_tuple(axis_name)
    _check_axes(names)
    return tree_map(lambda v: ppermute_p.bind(v, axis_name=names, perm=perm), x)





# ---- psum_scatter ---------------------------------------------------------------------------
# The primitive is the tiled form (the scattered dimension shrinks by the axis size); the
# untiled form (that dimension equals the axis size and disappears) reshapes around it.

psum_scatter_p = Primitive("psum_scatter")


@psum_scatter_p.def_abstract_eval
def _psum_scatter_abstract(x, *, axis_name, scatter_dimension):
    size = _check_axes(axis_name)
    if not 0 <= scatter_dimension < x.ndim:
        raise type_error("psum_scatter", f"scatter_dimension {scatter_dimension} out of "
                         "range", x)
    if x.shape[scatter_dimension] % size:
        raise type_error("psum_scatter", f"dimension {scatter_dimension} is not divisible "
                         f"by the axis size {size}", x)
    shape = list(x.shape)
    shape[scatter_dimension] //= size
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


@psum_scatter_p.def_lowering
def _psum_scatter_lower(ctx, x, *, axis_name, scatter_dimension):
    from minijax.lax.reduce import scalar_region
    groups = replica_groups(_lowering_axis_env(ctx), axis_name)
    region = scalar_region(ctx, "add", x.aval.dtype)
    attrs = {"scatter_dimension": f"{scatter_dimension} : i64",
             "replica_groups": _groups_attr(groups), **spmd_attrs(ctx)}
    if "channel_handle" in attrs:
        attrs["use_global_device_ids"] = "unit"
    return ctx.op("stablehlo.reduce_scatter", [x], ctx.avals_out[0], attrs, regions=[region])


def _psum_scatter_batch(trace, vals, dims, *, axis_name, scatter_dimension):
    from minijax import lax
    from minijax.transforms.batching import bdim_at
    (x,), (d,) = vals, dims
    if trace.axis_name not in axis_name:
        if d is None:
            return psum_scatter_p.bind(x, axis_name=axis_name,
                                       scatter_dimension=scatter_dimension), None
        dim = scatter_dimension + (1 if d <= scatter_dimension else 0)
        return psum_scatter_p.bind(x, axis_name=axis_name, scatter_dimension=dim), d
    if len(axis_name) > 1:
        raise NotImplementedError("psum_scatter over several axes at once under vmap")
    n = trace.axis_size
    x = bdim_at(x, d, n, 0)
    total = lax.reduce_sum(x, (0,))  # every member's sum; member i keeps block i
    shape = list(total.shape)
    k = scatter_dimension
    blocks = lax.reshape(total, tuple(shape[:k] + [n, shape[k] // n] + shape[k + 1:]))
    return blocks, k


def _psum_scatter_transpose(ct, x, *, axis_name, scatter_dimension):
    return [all_gather_p.bind(ct, axis_name=axis_name, axis=scatter_dimension, tiled=True)]


deflinear(psum_scatter_p, _psum_scatter_transpose)
psum_scatter_p.def_batch(_psum_scatter_batch)
psum_scatter_p.def_rule("batch_always")(True)


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None,
                 tiled: bool = False):
    """Sum ``x`` over the named axis and give member ``i`` block ``i`` of the sum along
    ``scatter_dimension`` (``tiled=False``: that dimension must be the axis size and is
    removed)."""
    _no_groups("psum_scatter", axis_index_groups)
    from minijax import lax
    from minijax._pytree import tree_map
    names = _axes_tuple(axis_name)
    size = _check_axes(names)

    def one(v):
        aval = get_aval(v)
        k = int(scatter_dimension)
        if not tiled and (k >= aval.ndim or aval.shape[k] != size):
            raise ValueError(f"psum_scatter: dimension {k} of {aval.str_short()} must equal "
                             f"the axis size {size} (or pass tiled=True)")
        out = psum_scatter_p.bind(v, axis_name=names, scatter_dimension=k)
        if not tiled:
            out = lax.reshape(out, aval.shape[:k] + aval.shape[k + 1:])
        return out
    return tree_map(one, x)


# ---- all_to_all -----------------------------------------------------------------------------

all_to_all_p = Primitive("all_to_all")


@all_to_all_p.def_abstract_eval
def _all_to_all_abstract(x, *, axis_name, split_axis, concat_axis):
    size = _check_axes(axis_name)
    for what, a in (("split_axis", split_axis), ("concat_axis", concat_axis)):
        if not 0 <= a < x.ndim:
            raise type_error("all_to_all", f"{what} {a} out of range", x)
    if x.shape[split_axis] % size:
        raise type_error("all_to_all", f"split_axis {split_axis} is not divisible by the "
                         f"axis size {size}", x)
    shape = list(x.shape)
    shape[split_axis] //= size
    shape[concat_axis] *= size
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


@all_to_all_p.def_lowering
def _all_to_all_lower(ctx, x, *, axis_name, split_axis, concat_axis):
    groups = replica_groups(_lowering_axis_env(ctx), axis_name)
    attrs = {"split_dimension": f"{split_axis} : i64",
             "concat_dimension": f"{concat_axis} : i64",
             "split_count": f"{len(groups[0])} : i64",
             "replica_groups": _groups_attr(groups), **spmd_attrs(ctx)}
    return ctx.op("stablehlo.all_to_all", [x], ctx.avals_out[0], attrs)


def _all_to_all_transpose(ct, x, *, axis_name, split_axis, concat_axis):
    return [all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                              concat_axis=split_axis)]


def _all_to_all_vmapped(x, d, split_axis: int, concat_axis: int):
    """all_to_all over the vmapped axis itself (member ``m`` is row ``m`` of the batch
    dimension ``d``): member ``j`` gets block ``j`` (of ``split_axis``) of every member,
    concatenated in member order along ``concat_axis``. A reshape and one transpose."""
    from minijax import lax
    if d is None:  # every member holds the same value
        raise NotImplementedError("all_to_all of an unbatched value over the vmapped axis")
    aval = get_aval(x)
    perm = [d] + [i for i in range(aval.ndim) if i != d]
    x = lax.transpose(x, perm)
    n, shape = aval.shape[d], [aval.shape[i] for i in perm[1:]]
    s, c, r = split_axis, concat_axis, len(shape)
    # axes now: 0 = the member m, then the operand's axes with split_axis cut into
    # (j, block): j at 1 + s, the block at 2 + s
    x = lax.reshape(x, (n, *shape[:s], n, shape[s] // n, *shape[s + 1:]))

    def pos(i):  # where operand axis i (the block for i == s) now is
        return 1 + i if i < s else 2 + i

    y = lax.transpose(x, [1 + s] + [pos(i) for i in range(c)] + [0]
                      + [pos(i) for i in range(c, r)])
    out = list(shape)
    out[s] //= n
    out[c] *= n  # (m, block of c) merge, member-major
    return lax.reshape(y, (n, *out))


def _all_to_all_batch(trace, vals, dims, *, axis_name, split_axis, concat_axis):
    (x,), (d,) = vals, dims
    if trace.axis_name in axis_name:
        if axis_name != (trace.axis_name,):
            raise NotImplementedError("all_to_all over a vmapped axis and other axes at once")
        return _all_to_all_vmapped(x, d, split_axis, concat_axis), 0
    if d is None:
        return all_to_all_p.bind(x, axis_name=axis_name, split_axis=split_axis,
                                 concat_axis=concat_axis), None
    s = split_axis + (1 if d <= split_axis else 0)
    c = concat_axis + (1 if d <= concat_axis else 0)
    return all_to_all_p.bind(x, axis_name=axis_name, split_axis=s, concat_axis=c), d


deflinear(all_to_all_p, _all_to_all_transpose)
all_to_all_p.def_batch(_all_to_all_batch)
all_to_all_p.def_rule("batch_always")(True)


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None,
               tiled: bool = False):
    """Split ``x`` into axis-size blocks along ``split_axis``, send block ``j`` to member
    ``j``, and concatenate what arrives along ``concat_axis`` (``tiled=False``:
    ``split_axis`` must be the axis size; it is removed and a new axis of that size is
    inserted at ``concat_axis``)."""
    _no_groups("all_to_all", axis_index_groups)
    from minijax import lax
    from minijax._pytree import tree_map
    names = _axes_tuple(axis_name)
    size = _check_axes(names)

    def one(v):
        aval = get_aval(v)
        s, c = int(split_axis), int(concat_axis)
        if tiled:
            return all_to_all_p.bind(v, axis_name=names, split_axis=s, concat_axis=c)
        if s >= aval.ndim or aval.shape[s] != size:
            raise ValueError(f"all_to_all: split_axis {s} of {aval.str_short()} must equal "
                             f"the axis size {size} (or pass tiled=True)")
        # A new axis of size 1, filled by the exchange, placed so that it is at
        # concat_axis once the split axis (then of size 1) is dropped.
        q = c if c <= s else c + 1
        shape = list(aval.shape)
        shape.insert(q, 1)
        s2 = s + (1 if q <= s else 0)
        y = all_to_all_p.bind(lax.reshape(v, tuple(shape)), axis_name=names, split_axis=s2,
                              concat_axis=q)
        out = list(y.shape)
        del out[s2]  # the split axis is now of size 1
        return lax.reshape(y, tuple(out))
    return tree_map(one, x)
