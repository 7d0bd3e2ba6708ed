"""shard_map: a function of per-device blocks, run on every device of a mesh.

``shard_map_p`` calls a closed jaxpr (the *body*) written over local blocks. Its
lowering hands the body to XLA's SPMD partitioner as a manually partitioned region.
For Shardy (the module has an ``sdy`` mesh table) that is an ``sdy.manual_computation``
over the manual axes, its in/out shardings the specs' (open in every dimension when
some axes are left to the partitioner). For GSPMD, each input goes through
``@Sharding`` (its ``NamedSharding``) and ``@SPMDFullToShardShape`` (``{manual}``),
each output through ``@Sharding`` (``{manual}``) and ``@SPMDShardToFullShape``;
with ``manual_axes`` (shard_map's ``axis_names``, a subset of the mesh axes) the
blocks are manual over those axes only and replicated over the others, which the
partitioner handles (``manual_text``); collectives over mesh axes inside the body run
across partitions (channel handles, global device ids; ``axis_index`` is
``partition_id``).

Replication checking: every value in the body is *varying* over a set of mesh axes
(an input over the axes its spec names; ``psum`` over an axis removes it; other
operations take the union of their operands'). An output must vary only over axes
its ``out_specs`` names. The same sets make differentiation right: where a value
meets one that varies over more axes, a ``pbroadcast`` is inserted (the identity;
its transpose is a ``psum``), and inside the body ``psum`` becomes
``psum_invariant``, whose transpose is a ``pbroadcast`` (jax's ``psum2`` /
``pbroadcast``). Calls in the body (a nested ``jit``) are rewritten the same way,
their outputs varying as their bodies say.

The sharding objects in the parameters are ``minijax.sharding.NamedSharding``; this
module only uses their ``spec``, ``mesh.shape``, ``shard_shape``, ``hlo_text`` and
``with_spec``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from minijax.core import sharding_rules as _srules
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr, FreshNames, Jaxpr, JaxprEqn, Literal, Var, dce_jaxpr
from minijax.core.trace import Primitive, extend_axis_env
from minijax.lax import parallel as _par
from minijax.lax._util import type_error
from minijax.lowering.types import string_attr
from minijax.transforms.ad import (UndefinedPrimal, Zero, deflinear, instantiate,
                                   is_undefined, jvp_jaxpr, partial_eval_jaxpr, tangent_aval,
                                   transpose_jaxpr)
from minijax.transforms.batching import batch_jaxpr, def_elementwise_batch

__all__ = ["pbroadcast_p", "psum_invariant_p", "rewrite_body", "shard_map_p"]


# ---- pbroadcast and psum_invariant ----------------------------------------------------------

pbroadcast_p = Primitive("pbroadcast")
pbroadcast_p.def_abstract_eval(lambda x, *, axes: x)
pbroadcast_p.def_lowering(lambda ctx, x, *, axes: x)
def_elementwise_batch(pbroadcast_p)


def _pbroadcast_transpose(ct, x, *, axes):
    return [psum_invariant_p.bind(instantiate(ct), axes=axes)[0]]


deflinear(pbroadcast_p, _pbroadcast_transpose)

psum_invariant_p = _par._reducer("psum_invariant", "add")


def _psum_invariant_transpose(cts, *args, axes, axis_index_groups=None):
    return [None if not is_undefined(a) or type(c) is Zero else pbroadcast_p.bind(c, axes=axes)
            for a, c in zip(args, cts)]


deflinear(psum_invariant_p, _psum_invariant_transpose)


# ---- the varying-axes pass --------------------------------------------------------------------

def spec_axes(sharding) -> frozenset:
    """The mesh axes a sharding's spec names."""
    spec = sharding.spec
    return frozenset(a for d in range(len(spec)) for a in spec.axes_of(d))


def rewrite_body(closed: ClosedJaxpr, in_shardings: Sequence, out_shardings: Sequence,
                 check_rep: bool, name: str = "shard_map") -> ClosedJaxpr:
    """The body with ``psum`` made ``psum_invariant`` and ``pbroadcast`` inserted where
    a value meets one that varies over more mesh axes (see the module docstring).

    Raises ``ValueError`` (when ``check_rep``) for an output that varies over a mesh
    axis its out spec does not name.
    """
    body, out_varying = _rewrite(closed, [spec_axes(s) for s in in_shardings])
    jaxpr = body.jaxpr
    varying = {id(v): a for v, a in zip(jaxpr.outvars, out_varying)}
    eqns = list(jaxpr.eqns)
    outs = []
    for i, (a, s) in enumerate(zip(jaxpr.outvars, out_shardings)):
        allowed = spec_axes(s)
        have = frozenset() if type(a) is Literal else varying[id(a)]
        if not have <= allowed:
            if check_rep:
                extra = ", ".join(repr(x) for x in sorted(have - allowed))
                raise ValueError(
                    f"{name}: output {i} varies over mesh axis {extra}, but its out_specs "
                    f"entry {s.spec} says it is the same on every device along it; reduce it "
                    f"(e.g. psum) or name the axis in out_specs (or pass check_rep=False)")
            outs.append(a)
        elif type(a) is Literal or have >= allowed:
            outs.append(a)
        else:
            out = Var(a.aval)
            eqns.append(JaxprEqn(pbroadcast_p, [a], [out],
                                 {"axes": tuple(sorted(allowed - have))}))
            outs.append(out)
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, outs, eqns, jaxpr.debug_info),
                       body.consts)


def _is_call(e: JaxprEqn) -> bool:
    """A call of a closed jaxpr on the equation's operands (``jit`` in the body)."""
    inner = e.params.get("jaxpr")
    return (e.primitive is not shard_map_p and type(inner) is ClosedJaxpr
            and len(inner.jaxpr.invars) == len(e.invars)
            and len(inner.jaxpr.outvars) == len(e.outvars))


def _rewrite(closed: ClosedJaxpr, in_varying: Sequence[frozenset]
             ) -> tuple[ClosedJaxpr, list[frozenset]]:
    """``closed`` rewritten for inputs varying over ``in_varying``, and the mesh axes
    each output varies over. Calls (a ``jit`` in the body) are rewritten in turn."""
    jaxpr = closed.jaxpr
    varying: dict[int, frozenset] = {id(v): a for v, a in zip(jaxpr.invars, in_varying)}
    empty = frozenset()
    eqns: list[JaxprEqn] = []

    def get(a) -> frozenset:
        return empty if type(a) is Literal else varying.get(id(a), empty)

    def widen(a, target: frozenset, eqn=None):
        have = get(a)
        if type(a) is Literal or have >= target:
            return a
        out = Var(a.aval)
        eqns.append(JaxprEqn(pbroadcast_p, [a], [out], {"axes": tuple(sorted(target - have))},
                             *((eqn.ctx, eqn.source) if eqn is not None else ())))
        varying[id(out)] = target
        return out

    reducers = (_par.psum_p, psum_invariant_p, _par.pmax_p, _par.pmin_p)
    for e in jaxpr.eqns:
        p = e.primitive
        if p in reducers or p is _par.all_gather_p:
            axes = frozenset(e.params["axes"] if p in reducers else e.params["axis_name"])
            ins = [widen(a, get(a) | axes, e) for a in e.invars]  # psum of an invariant: N x
            prim = psum_invariant_p if p is _par.psum_p else p
            eqns.append(JaxprEqn(prim, ins, e.outvars, e.params, e.ctx, e.source))
            for v, a in zip(e.outvars, ins):
                varying[id(v)] = get(a) - axes
            continue
        if p is _par.axis_index_p:
            eqns.append(e)
            varying[id(e.outvars[0])] = frozenset(e.params["axis_name"])
            continue
        if p is pbroadcast_p:
            eqns.append(e)
            varying[id(e.outvars[0])] = get(e.invars[0]) | frozenset(e.params["axes"])
            continue
        if _is_call(e):
            inner, inner_out = _rewrite(e.params["jaxpr"], [get(a) for a in e.invars])
            eqns.append(JaxprEqn(p, e.invars, e.outvars, dict(e.params, jaxpr=inner),
                                 e.ctx, e.source))
            for v, a in zip(e.outvars, inner_out):
                varying[id(v)] = a
            continue
        union = frozenset().union(*(get(a) for a in e.invars))
        if p in (_par.ppermute_p, _par.psum_scatter_p, _par.all_to_all_p):
            union = union | frozenset(e.params["axis_name"])
        ins = [widen(a, union, e) for a in e.invars]
        eqns.append(JaxprEqn(p, ins, e.outvars, e.params, e.ctx, e.source))
        for v in e.outvars:
            varying[id(v)] = union
    return (ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns,
                              jaxpr.debug_info), closed.consts),
            [get(a) for a in jaxpr.outvars])


# ---- shapes -------------------------------------------------------------------------------------

def _factor(sharding, dim: int) -> int:
    sizes = sharding.mesh.shape
    return math.prod(sizes[a] for a in sharding.spec.axes_of(dim))


def global_aval(local: ShapedArray, sharding) -> ShapedArray:
    shape = tuple(n * _factor(sharding, d) for d, n in enumerate(local.shape))
    return ShapedArray(shape, local.dtype, local.weak_type)


def local_aval(aval: ShapedArray, sharding, what: str) -> ShapedArray:
    if len(sharding.spec) > len(aval.shape):
        raise ValueError(f"shard_map: {what} has spec {sharding.spec}, with more entries than "
                         f"its {len(aval.shape)} dimensions ({aval.str_short()})")
    out = []
    for d, n in enumerate(aval.shape):
        f = _factor(sharding, d)
        if n % f:
            raise ValueError(f"shard_map: {what} has shape {aval.shape}; its dimension {d} "
                             f"({n}) is not divisible by the {f} devices its spec "
                             f"{sharding.spec} splits it over")
        out.append(n // f)
    return ShapedArray(tuple(out), aval.dtype, aval.weak_type)


# ---- the primitive --------------------------------------------------------------------------

shard_map_p = Primitive("shard_map", multiple_results=True)


def _mesh_env(mesh) -> extend_axis_env:
    return extend_axis_env(tuple(mesh.shape.items()))


@shard_map_p.def_abstract_eval
def _shard_map_abstract(*avals, jaxpr, mesh, in_shardings, out_shardings, check_rep, name,
                      manual_axes=None):
    for i, (a, s, e) in enumerate(zip(avals, in_shardings, jaxpr.in_avals)):
        local = local_aval(a, s, f"argument {i}")
        if local.shape != e.shape or local.dtype != e.dtype:
            raise type_error("shard_map", f"argument {i} does not match the body "
                             f"(expected blocks {e.str_short()})", *avals)
    return [global_aval(a, s) for a, s in zip(jaxpr.out_avals, out_shardings)]


shard_map_p.pp_params = lambda params: {
    "name": params["name"], "mesh": dict(params["mesh"].shape),
    "in_specs": tuple(s.spec for s in params["in_shardings"]),
    "out_specs": tuple(s.spec for s in params["out_shardings"]),
    **({} if params.get("manual_axes") is None else {"axis_names": params["manual_axes"]}),
    "jaxpr": FreshNames(params["jaxpr"])}


def manual_text(mesh, manual_axes, ndim: int) -> str:
    """The HLO sharding of a block inside the body: ``{manual}`` when every mesh axis is
    manual (``manual_axes`` None), else manual over ``manual_axes`` and replicated over
    the others (left to the partitioner), as a subgroup sharding."""
    if manual_axes is None or len(manual_axes) == len(mesh.axis_names):
        return "{manual}"
    names = list(mesh.axis_names)
    sizes = dict(mesh.shape)
    auto = [a for a in names if a not in manual_axes]
    order = [names.index(a) for a in (*manual_axes, *auto)]
    n_manual = math.prod(sizes[a] for a in manual_axes)
    n_auto = math.prod(sizes[a] for a in auto)
    if order == sorted(order):
        iota = f"<=[{mesh.size}]"
    else:
        shape = ",".join(str(sizes[a]) for a in names)
        iota = f"<=[{shape}]T({','.join(map(str, order))})"
    if n_auto == 1:
        tiles = ",".join(["1"] * ndim + [str(n_manual)])
        return f"{{devices=[{tiles}]{iota} last_tile_dims={{manual}}}}"
    tiles = ",".join(["1"] * ndim + [str(n_manual), str(n_auto)])
    return f"{{devices=[{tiles}]{iota} last_tile_dims={{manual, replicated}}}}"


def _custom_call(ctx, x, aval, target: str, sharding_text: str):
    return ctx.op("stablehlo.custom_call", [x], aval,
                  {"call_target_name": f'"{target}"',
                   "mhlo.sharding": string_attr(sharding_text)})


@shard_map_p.def_lowering
def _shard_map_lower(ctx, *args, jaxpr, mesh, in_shardings, out_shardings, check_rep, name,
                      manual_axes=None):
    mod = ctx.module
    parts = mod.attrs.get("mhlo.num_partitions", "1 : i32").split(":")[0].strip()
    if int(parts) != mesh.size:
        raise ValueError(
            f"shard_map over a mesh of {mesh.size} devices inside a computation compiled for "
            f"{parts} device(s); call it on arrays sharded over the mesh, or jit it with "
            "in_shardings")
    if mod.sdy is not None:
        return _shard_map_lower_sdy(ctx, args, jaxpr, mesh, in_shardings, out_shardings,
                                    name, manual_axes)
    blocks = []
    for x, s, local in zip(args, in_shardings, jaxpr.in_avals):
        full = _custom_call(ctx, x, x.aval, "Sharding", s.hlo_text(len(x.aval.shape)))
        blocks.append(_custom_call(ctx, full, local, "SPMDFullToShardShape",
                                   manual_text(mesh, manual_axes, len(local.shape))))
    saved = (getattr(mod, "axis_env", ()), getattr(mod, "spmd_manual", False))
    # True, or for a body manual over some axes only, the sharding of a scalar in it
    partial = manual_axes is not None and len(manual_axes) < len(mesh.axis_names)
    mod.axis_env = tuple(mesh.shape.items())
    mod.spmd_manual = manual_text(mesh, manual_axes, 0) if partial else True
    try:
        outs = ctx.lower_jaxpr(jaxpr, blocks, name=f"shard_map({name})")
    finally:
        mod.axis_env, mod.spmd_manual = saved
    results = []
    for y, s, aval in zip(outs, out_shardings, ctx.avals_out):
        manual = _custom_call(ctx, y, y.aval, "Sharding",
                              manual_text(mesh, manual_axes, len(y.aval.shape)))
        results.append(_custom_call(ctx, manual, aval, "SPMDShardToFullShape",
                                    s.hlo_text(len(aval.shape))))
    return results


def _shard_map_lower_sdy(ctx, args, jaxpr, mesh, in_shardings, out_shardings, name,
                         manual_axes):
    """Shardy: ``sdy.manual_computation`` over the manual axes (every mesh axis, or
    ``manual_axes`` in mesh order), its body the jaxpr over the blocks; with some axes
    left to the partitioner every dimension of the in/out shardings is open."""
    mod = ctx.module
    sdy = mod.sdy
    names = list(mesh.axis_names)
    manual = names if manual_axes is None else [a for a in names if a in manual_axes]
    partial = len(manual) < len(names)

    def per_value(shardings, avals):
        return "#sdy.sharding_per_value<[" + ", ".join(
            sdy.sharding(s, len(a.shape), open_dims=partial)
            for s, a in zip(shardings, avals)) + "]>"
    attrs = {"in_shardings": per_value(in_shardings, [x.aval for x in args]),
             "out_shardings": per_value(out_shardings, ctx.avals_out),
             "manual_axes": "#sdy<manual_axes{" + ", ".join(f'"{a}"' for a in manual) + "}>"}
    region = ctx.new_region(list(jaxpr.in_avals))
    saved = (getattr(mod, "axis_env", ()), getattr(mod, "spmd_manual", False),
             getattr(mod, "sdy_auto", None))
    mod.axis_env = tuple(mesh.shape.items())
    mod.spmd_manual = True
    # partition_id is meaningful in a fully manual region only (parallel.axis_index)
    mod.sdy_auto = (mesh, [a for a in names if a not in manual]) if partial else None
    try:
        with ctx.in_region(region):
            outs = ctx.lower_jaxpr(jaxpr, region.args, name=f"shard_map({name})")
            ctx.ret(outs, "sdy.return")
    finally:
        mod.axis_env, mod.spmd_manual, mod.sdy_auto = saved
    res = ctx.op("sdy.manual_computation", list(args), list(ctx.avals_out), attrs,
                 regions=[region])
    return list(res)


def _bind(args, jaxpr, mesh, ins, outs, check_rep, name, manual_axes):
    body = rewrite_body(jaxpr, ins, outs, check_rep=False, name=name)
    return shard_map_p.bind(*args, jaxpr=body, mesh=mesh, in_shardings=tuple(ins),
                            out_shardings=tuple(outs), check_rep=check_rep, name=name,
                            manual_axes=manual_axes)


def _shard_map_jvp(primals, tangents, *, jaxpr, mesh, in_shardings, out_shardings, check_rep,
                   name, manual_axes=None):
    nonzero = [type(t) is not Zero for t in tangents]
    with _mesh_env(mesh):
        body, out_nz = jvp_jaxpr(jaxpr, nonzero, instantiate_out=False)
    nz = [t for t in tangents if type(t) is not Zero]
    ins = list(in_shardings) + [s for s, z in zip(in_shardings, nonzero) if z]
    outs_sh = list(out_shardings) + [s for s, z in zip(out_shardings, out_nz) if z]
    with _mesh_env(mesh):
        outs = _bind([*primals, *nz], body, mesh, ins, outs_sh, check_rep, name,
                     manual_axes)
    n = len(out_shardings)
    it = iter(outs[n:])
    avals = [global_aval(a, s) for a, s in zip(jaxpr.out_avals, out_shardings)]
    return outs[:n], [next(it) if z else Zero(tangent_aval(a)) for a, z in zip(avals, out_nz)]


def _shard_map_partial_eval(eqn, unknowns):
    """Known part: the body's known outputs from the known inputs; unknown part: the
    whole call (it recomputes what it needs), with the known inputs as residuals, so
    no per-device intermediate has to leave the body."""
    p = eqn.params
    closed = p["jaxpr"]
    pe = partial_eval_jaxpr(closed.jaxpr, unknowns)
    known_idx = [i for i, u in enumerate(pe.out_unknown) if not u]
    unknown_idx = [i for i, u in enumerate(pe.out_unknown) if u]
    known_in = [a for a, u in zip(eqn.invars, unknowns) if not u]
    n_known = len(pe.known.outvars) - pe.num_res
    known_body = dce_jaxpr(Jaxpr(pe.known.constvars, pe.known.invars,
                                 pe.known.outvars[:n_known], pe.known.eqns))
    kins = [s for s, u in zip(p["in_shardings"], unknowns) if not u]
    kouts = [p["out_shardings"][i] for i in known_idx]
    known = JaxprEqn(shard_map_p, known_in, [eqn.outvars[i] for i in known_idx],
                     dict(p, jaxpr=ClosedJaxpr(known_body, closed.consts),
                          in_shardings=tuple(kins), out_shardings=tuple(kouts)),
                     eqn.ctx, eqn.source)
    j = closed.jaxpr
    unknown_body = dce_jaxpr(Jaxpr(j.constvars, j.invars, [j.outvars[i] for i in unknown_idx],
                                   j.eqns, j.debug_info))
    unknown = JaxprEqn(shard_map_p, list(eqn.invars), [eqn.outvars[i] for i in unknown_idx],
                       dict(p, jaxpr=ClosedJaxpr(unknown_body, closed.consts),
                            out_shardings=tuple(p["out_shardings"][i] for i in unknown_idx)),
                       eqn.ctx, eqn.source)
    res = [a for a in known_in if type(a) is not Literal]
    return [known], [unknown], res


def _shard_map_transpose(cts, *args, jaxpr, mesh, in_shardings, out_shardings, check_rep,
                         name, manual_axes=None):
    nonlin = [a for a in args if not is_undefined(a)]
    nonlin_sh = [s for a, s in zip(args, in_shardings) if not is_undefined(a)]
    lin_sh = [s for a, s in zip(args, in_shardings) if is_undefined(a)]
    # The transposed body is traced on block types.
    local_args = [UndefinedPrimal(b) if is_undefined(a) else _Abstract(b)
                  for a, b in zip(args, jaxpr.in_avals)]
    local_cts = [_Abstract(b) for b in jaxpr.out_avals]
    with _mesh_env(mesh):
        body = transpose_jaxpr(jaxpr, local_args, local_cts, name)
        outs = _bind([*nonlin, *[instantiate(c) for c in cts]], body, mesh,
                     [*nonlin_sh, *out_shardings], lin_sh, check_rep, f"transpose({name})",
                     manual_axes)
    it = iter(outs)
    return [next(it) if is_undefined(a) else None for a in args]


class _Abstract:
    """A stand-in with only an aval, for tracing the transposed body on block types."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval


def _shard_map_batch(trace, vals, dims, *, jaxpr, mesh, in_shardings, out_shardings, check_rep,
                     name, manual_axes=None):
    with _mesh_env(mesh):
        batched, out_dims = batch_jaxpr(jaxpr, dims, trace.axis_size, trace.axis_name)
    ins = [s if d is None else _insert_none(s, d) for s, d in zip(in_shardings, dims)]
    outs = [s if d is None else _insert_none(s, d) for s, d in zip(out_shardings, out_dims)]
    with _mesh_env(mesh):
        res = _bind(vals, batched, mesh, ins, outs, check_rep, name, manual_axes)
    return res, out_dims


def _insert_none(sharding, d: int):
    spec = sharding.spec
    parts = list(spec) + [None] * max(0, d - len(spec))
    parts.insert(d, None)
    return sharding.with_spec(type(spec)(*parts))


def _shard_map_sharding(*avals, jaxpr, mesh, in_shardings, out_shardings, check_rep, name,
                        manual_axes=None):
    """Sharding in types: each result carries its out_spec over the mesh's explicit axes
    (the others are left out of types), not its operands' layout."""
    explicit = set(mesh.explicit_axes)
    template = next(_srules.sharding_of(a) for a in avals
                    if _srules.sharding_of(a) is not None)
    outs = []
    for a, s in zip(jaxpr.out_avals, out_shardings):
        entries = []
        for d in range(len(a.shape)):
            axes = tuple(x for x in s.spec.axes_of(d) if x in explicit) \
                if d < len(s.spec) else ()
            entries.append(None if not axes else axes[0] if len(axes) == 1 else axes)
        outs.append(_srules.with_entries(template, entries))
    return outs


shard_map_p.def_jvp(_shard_map_jvp)
_srules.def_sharding_rule(shard_map_p, _shard_map_sharding)
shard_map_p.def_transpose(_shard_map_transpose)
shard_map_p.def_rule("partial_eval")(_shard_map_partial_eval)
shard_map_p.def_batch(_shard_map_batch)
