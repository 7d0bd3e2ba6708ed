"""``scan`` and ``map``: the ``scan`` primitive, as jax's::

    scan[jaxpr, length, reverse, unroll, num_consts, num_carry] *consts *carry *xs

Lowered to a ``stablehlo.while`` over an int32 step counter that reads ``xs`` with
``dynamic_slice`` and writes the stacked ``ys`` (preallocated zeros) with
``dynamic_update_slice``; ``unroll=k`` runs ``k`` steps per loop iteration and the
``length % k`` remaining steps after the loop. Rules: jvp carries the tangents (a fixed
point decides which carries get one); partial evaluation runs a known scan that stacks the
per-step residuals as extra ``ys`` and records an unknown scan reading them; transposition
is a scan in the other direction whose carry holds the carries' cotangents and accumulates
those of the linear consts; batching keeps batched ``xs``/``ys`` at axis 1.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from minijax.lax.state import run_with_refs, threading_refs, write_back
from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var, dce_jaxpr
from minijax.core.shape_poly import DimExpr
from minijax.core.trace import Primitive, get_aval
from minijax.core.traceback_util import api_boundary
from minijax.lax._util import static_int, type_error
from minijax.lax.ad_util import add_any
from minijax.lax.control_flow.common import (_batch, _cached, _check_carry, _closure_convert,
                                             _fun_source, _inexact, _INT32, _is_var, _jvp, _memo,
                                             _nonzero, _partial_eval, _permuted, _Plan, _promote,
                                             _short, _split, _split_jaxpr, _trace, _trace_closed,
                                             _types_match, _weak_promotions, _wrapper)
from minijax.lowering import tokens
from minijax.lowering.types import i64_array
from minijax.transforms.ad import (UndefinedPrimal, Zero, backward_pass, instantiate, is_undefined,
                                   tangent_aval, zeros_like_aval)
from minijax.transforms.batching import bdim_at, moveaxis
from minijax._pytree import keystr, tree_flatten, tree_flatten_with_path

scan_p = Primitive("scan", multiple_results=True)


# ---- scan / map ------------------------------------------------------------------------------

def _scan_length(xs, xs_avals: Sequence[ShapedArray], length) -> int:
    paths = None
    if any(a.ndim == 0 for a in xs_avals):
        paths = [p for p, _ in tree_flatten_with_path(xs)[0]]
        bad = [f"xs{keystr(p)} of type {a.str_short()}"
               for p, a in zip(paths, xs_avals) if a.ndim == 0]
        raise ValueError(f"scan got value with no leading axis to scan over: {', '.join(bad)}")
    lengths = [a.shape[0] for a in xs_avals]

    def sizes() -> str:
        ps = paths or [p for p, _ in tree_flatten_with_path(xs)[0]]
        return ", ".join(f"xs{keystr(p)}: {n}" for p, n in zip(ps, lengths))

    if length is not None:
        length = static_int(length, "scan length")
        if length < 0:
            raise ValueError(f"scan length must be non-negative, got {length}")
        if any(n != length for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"the leading axis sizes of xs ({sizes()})")
        return length
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    if len(set(lengths)) > 1:
        raise ValueError(f"scan got values with different leading axis sizes: {sizes()}")
    return lengths[0]


@api_boundary
def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1, _split_transpose: bool = False):
    """Scan ``f: (carry, x) -> (carry, y)`` over the leading axis of ``xs``.

    Returns ``(final_carry, stacked_ys)``; with ``reverse=True`` the steps run from the
    last index to the first. ``unroll=k`` runs ``k`` steps per iteration of the
    underlying loop (``True``: all of them). Mutable array references ``f`` closes over
    are carried through the loop and hold their final values afterwards.
    """
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")

    def run(refs):
        if not refs:
            return _scan(f, init, xs, length, reverse, unroll, _split_transpose)

        def body(carry, x):
            c, values = carry
            (c, y), values = run_with_refs(refs, values, lambda: f(c, x))
            return (c, values), y
        (c, values), ys = _scan(body, (init, [r._get_value() for r in refs]), xs, length,
                                reverse, unroll, _split_transpose)
        write_back(refs, values)
        return c, ys
    return threading_refs(run)


def _scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
          unroll: int | bool = 1, _split_transpose: bool = False):
    init_leaves, carry_tree = tree_flatten(init)
    xs_leaves, xs_tree = tree_flatten(xs)
    carry_avals = tuple(get_aval(x) for x in init_leaves)
    xs_avals = [get_aval(x) for x in xs_leaves]
    length = _scan_length(xs, xs_avals, length)
    if isinstance(unroll, bool):
        unroll = max(length, 1) if unroll else 1
    if not isinstance(unroll, (int, np.integer)) or unroll < 0:
        raise ValueError(f"scan: `unroll` must be a bool or a non-negative int, got {unroll!r}")
    x_avals = tuple(ShapedArray(a.shape[1:], a.dtype, a.weak_type) for a in xs_avals)
    num_carry = len(init_leaves)

    def build() -> _Plan:
        in_paths = [p for p, _ in tree_flatten_with_path(init)[0]]

        def call(leaves):
            out = f(carry_tree.unflatten(leaves[:num_carry]), xs_tree.unflatten(leaves[num_carry:]))
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"scan: the body function {_fun_source(f)} must return a pair "
                                f"(carry, y), got a value of type {type(out).__name__}")
            return list(out)

        def trace_body(c_avals):
            return _trace("scan", "the body function", f, call, [*c_avals, *x_avals],
                          (init, xs_tree.unflatten(x_avals)))

        t = trace_body(carry_avals)
        promote = _weak_promotions(carry_avals, t.out_avals(0))
        in_avals = carry_avals
        if promote:
            in_avals = tuple(a if d is None else ShapedArray(a.shape, d)
                             for a, d in zip(carry_avals, promote))
            t = trace_body(in_avals)
        _check_carry("scan body", f, carry_tree, in_paths, in_avals, t.trees[0], t.out_avals(0))
        return _Plan({"jaxpr": _closure_convert(t.jaxpr)}, t.consts, t.trees[1], promote)

    plan = _cached("scan", (f,), (carry_tree, xs_tree, carry_avals, x_avals), build)
    outs = scan_p.bind(*plan.consts, *_promote(init_leaves, plan.promote), *xs_leaves,
                       jaxpr=plan.params["jaxpr"], length=length, num_carry=num_carry,
                       num_consts=len(plan.consts), reverse=bool(reverse), unroll=int(unroll))
    return carry_tree.unflatten(outs[:num_carry]), plan.out_tree.unflatten(outs[num_carry:])


_map_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _make_map_body(get_fun: Callable) -> Callable:
    def map_body(_, x):
        return (), get_fun()(x)
    map_body._user_fun = get_fun  # for messages (_fun_source)
    return map_body


@api_boundary
def map(f: Callable, xs, *, batch_size: int | None = None):
    """``stack([f(x) for x in xs])`` over the leading axis of the pytree ``xs``, as a scan."""
    if batch_size is not None:
        raise NotImplementedError("lax.map: batch_size is not supported yet (needs vmap)")
    _, ys = scan(_wrapper(_map_bodies, f, _make_map_body), (), xs)
    return ys


def _scan_abstract(*args, reverse, length, jaxpr, num_consts, num_carry, unroll):
    consts, carry = args[:num_consts], args[num_consts:num_consts + num_carry]
    xs = args[num_consts + num_carry:]
    if any(x.ndim == 0 or x.shape[0] != length for x in xs):
        raise type_error("scan", f"every xs operand must have leading dimension {length}", *xs)
    x_avals = [ShapedArray(x.shape[1:], x.dtype) for x in xs]
    if not _types_match(jaxpr.in_avals, [*consts, *carry, *x_avals]):
        raise type_error("scan", f"operands do not match the jaxpr inputs "
                         f"({_short(jaxpr.in_avals)})", *args)
    out = jaxpr.out_avals
    if not _types_match(out[:num_carry], carry):
        raise type_error("scan", f"the jaxpr's carry outputs ({_short(out[:num_carry])}) "
                         f"differ from the carry types", *carry)
    ys = [ShapedArray((length, *a.shape), a.dtype, a.weak_type) for a in out[num_carry:]]
    return [*out[:num_carry], *ys]


_LT = {"comparison_direction": "#stablehlo<comparison_direction LT>",
       "compare_type": "#stablehlo<comparison_type SIGNED>"}


def _scan_lower(ctx, *args, reverse, length, jaxpr, num_consts, num_carry, unroll):
    consts = list(args[:num_consts])
    carry = list(args[num_consts:num_consts + num_carry])
    xs = list(args[num_consts + num_carry:])
    ys = [ctx.constant(0, a.dtype, a.shape) for a in ctx.avals_out[num_carry:]]
    if type(length) is not DimExpr and length == 0:
        return [*carry, *ys]
    i32 = ShapedArray((), _INT32)

    def step(t, consts, carry, xs, ys):
        """One scan step at step number ``t`` (an int32 scalar Value)."""
        last = ctx.dim_value(length - 1) if symbolic else ctx.constant(length - 1, _INT32)
        idx = ctx.op("stablehlo.subtract", [last, t], i32) if reverse else t
        zero = ctx.constant(0, _INT32) if any(v.aval.ndim > 1 for v in [*xs, *ys]) else None
        x_t = [_index_leading(ctx, x, idx, zero) for x in xs]
        outs = ctx.lower_jaxpr(jaxpr, [*consts, *carry, *x_t], name="scan/body")
        new_ys = [_update_leading(ctx, y, y_t, idx, zero)
                  for y, y_t in zip(ys, outs[num_carry:])]
        return outs[:num_carry], new_ys

    symbolic = type(length) is DimExpr  # shape polymorphism: a loop of `length` trips
    if symbolic:
        per_trip, trips, remainder = 1, length, 0
    else:
        per_trip = length if unroll == 0 else min(unroll, length)
        trips, remainder = divmod(length, per_trip)
        if per_trip > 1 and trips == 1 and remainder == 0:  # fully unrolled: no loop
            trips, remainder = 0, length
    if trips:
        operands = [ctx.constant(0, _INT32), *consts, *carry, *xs, *ys]
        thread = tokens.threads_token(jaxpr)  # ordered effects: the token is carried last
        if thread:
            operands.append(tokens.get_token(ctx))
        avals = [v.aval for v in operands]
        nc, nk, nx = len(consts), len(carry), len(xs)
        cond_region = ctx.new_region(avals)
        with ctx.in_region(cond_region):
            bound = ctx.dim_value(trips) if symbolic else ctx.constant(trips * per_trip, _INT32)
            ctx.ret([ctx.op("stablehlo.compare", [cond_region.args[0], bound],
                            ShapedArray((), dtypes.bool_), _LT)])
        body_region = ctx.new_region(avals)
        with ctx.in_region(body_region):
            t, *rest = body_region.args
            if thread:
                tokens.set_token(ctx, rest.pop())
            c, k, x, y = (rest[:nc], rest[nc:nc + nk], rest[nc + nk:nc + nk + nx],
                          rest[nc + nk + nx:])
            for j in range(per_trip):
                tj = t if j == 0 else ctx.op("stablehlo.add", [t, ctx.constant(j, _INT32)], i32)
                k, y = step(tj, c, k, x, y)
            t_next = ctx.op("stablehlo.add", [t, ctx.constant(per_trip, _INT32)], i32)
            ctx.ret([t_next, *c, *k, *x, *y, *([tokens.get_token(ctx)] if thread else [])])
        outs = ctx.op("stablehlo.while", operands, avals, regions=[cond_region, body_region])
        if thread:
            outs = list(outs)  # (not the op's own list of results)
            tokens.set_token(ctx, outs.pop())
        carry, ys = outs[1 + nc:1 + nc + nk], outs[1 + nc + nk + nx:]
    for j in range(remainder):
        carry, ys = step(ctx.constant(trips * per_trip + j, _INT32), consts, carry, xs, ys)
    return [*carry, *ys]


def _index_leading(ctx, x, idx, zero):
    """``x[idx]`` along the leading axis."""
    a = x.aval
    sizes = (1, *a.shape[1:])
    s = ctx.op("stablehlo.dynamic_slice", [x, idx, *[zero] * (a.ndim - 1)],
               ShapedArray(sizes, a.dtype), {"slice_sizes": i64_array(sizes)})
    return ctx.op("stablehlo.reshape", [s], ShapedArray(a.shape[1:], a.dtype))


def _update_leading(ctx, ys, y, idx, zero):
    """``ys`` with ``ys[idx] = y`` along the leading axis."""
    a = ys.aval
    y1 = ctx.op("stablehlo.reshape", [y], ShapedArray((1, *a.shape[1:]), a.dtype))
    return ctx.op("stablehlo.dynamic_update_slice", [ys, y1, idx, *[zero] * (a.ndim - 1)],
                  ShapedArray(a.shape, a.dtype))




# ---- scan rules ------------------------------------------------------------------------------

def _scan_jvp_jaxpr(jaxpr: ClosedJaxpr, nk: int, nc: int, nz: tuple):
    """The jvp'd body, with a fixed point on which carries have nonzero tangents.

    Its inputs are (consts, const_dots, carry, carry_dots, xs, x_dots), its outputs
    (carry, carry_dots, ys, y_dots). Returns (body, carry_nz, ys_nz); body None if no
    output has a nonzero tangent.
    """
    def build():
        const_nz, carry_nz, xs_nz = _split(list(nz), nk, nc)
        ny = len(jaxpr.out_avals) - nc
        while True:
            _, out_nz = _jvp(jaxpr, tuple(const_nz + carry_nz + xs_nz), carry_nz + [False] * ny)
            new = [a or b for a, b in zip(carry_nz, out_nz[:nc])]
            if new == carry_nz:
                break
            carry_nz = new
        body, out_nz = _jvp(jaxpr, tuple(const_nz + carry_nz + xs_nz), carry_nz + [False] * ny)
        ys_nz = out_nz[nc:]
        if not any(carry_nz) and not any(ys_nz):
            return None, carry_nz, ys_nz
        nx = len(xs_nz)
        kk, kc, kx = sum(const_nz), sum(carry_nz), sum(xs_nz)
        p = nk + nc + nx   # where the tangent inputs start
        in_order = [*range(nk), *range(p, p + kk), *range(nk, nk + nc),
                    *range(p + kk, p + kk + kc), *range(nk + nc, p),
                    *range(p + kk + kc, p + kk + kc + kx)]
        q = nc + ny        # where the tangent outputs start
        out_order = [*range(nc), *range(q, q + kc), *range(nc, q),
                     *range(q + kc, q + kc + sum(ys_nz))]
        return _permuted(body, in_order, out_order), carry_nz, ys_nz
    return _memo(jaxpr, ("scan_jvp", nk, nc, nz), build)


def _scan_jvp(primals, tangents, *, jaxpr, length, reverse, unroll, num_consts, num_carry):
    nk, nc = num_consts, num_carry
    nz = tuple(_nonzero(t, a) for t, a in zip(tangents, jaxpr.in_avals))
    body, carry_nz, ys_nz = _scan_jvp_jaxpr(jaxpr, nk, nc, nz)
    out_avals = scan_p.out_avals([get_aval(x) for x in primals],
                                 dict(jaxpr=jaxpr, length=length, reverse=reverse,
                                      unroll=unroll, num_consts=nk, num_carry=nc))
    if body is None:
        outs = scan_p.bind(*primals, jaxpr=jaxpr, length=length, num_carry=nc, num_consts=nk,
                           reverse=reverse, unroll=unroll)
        return outs, [Zero(tangent_aval(a)) for a in out_avals]
    consts, init, xs = _split(primals, nk, nc)
    const_dots, init_dots, xs_dots = _split(tangents, nk, nc)
    const_nz, _, xs_nz = _split(nz, nk, nc)
    cd = [t for t, z in zip(const_dots, const_nz) if z]
    kd = [instantiate(t) for t, z in zip(init_dots, carry_nz) if z]
    xd = [t for t, z in zip(xs_dots, xs_nz) if z]
    outs = scan_p.bind(*consts, *cd, *init, *kd, *xs, *xd, jaxpr=body, length=length,
                       num_carry=nc + len(kd), num_consts=nk + len(cd), reverse=reverse,
                       unroll=unroll)
    carry, carry_dots, ys, ys_dots = _split(outs, nc, len(kd), len(out_avals) - nc)
    it_c, it_y = iter(carry_dots), iter(ys_dots)
    t_out = [next(it_c) if z else Zero(tangent_aval(a))
             for a, z in zip(out_avals[:nc], carry_nz)]
    t_out += [next(it_y) if z else Zero(tangent_aval(a))
              for a, z in zip(out_avals[nc:], ys_nz)]
    return carry + ys, t_out


class _ScanSplit(NamedTuple):
    carry_uk: list
    ys_uk: list
    known: ClosedJaxpr      # known (consts, carry, xs) -> known (carry, ys), stacked residuals
    unknown: ClosedJaxpr    # (hoisted consts, unknown consts; unknown carry;
                            #  stacked residuals, hoisted xs, unknown xs) -> unknown outs
    hoisted_consts: list    # operand positions (among the consts) of hoisted residuals
    hoisted_xs: list        # operand positions (among the xs) of hoisted residuals
    stacked: list           # avals (per step) of the stacked residuals


def _scan_split(jaxpr: ClosedJaxpr, nk: int, nc: int, unknowns: tuple) -> _ScanSplit:
    """Partial evaluation of a scan body with a fixed point on unknown carries (memoized).

    Residuals that are the body's known const or xs inputs, or constants of the body, are
    passed to the unknown scan directly instead of being stacked per iteration.
    """
    def build():
        const_uk, carry_uk, xs_uk = _split(list(unknowns), nk, nc)
        ny = len(jaxpr.out_avals) - nc
        while True:
            out_uk = _partial_eval(jaxpr, const_uk + carry_uk + xs_uk).out_unknown
            new = [a or b for a, b in zip(carry_uk, out_uk[:nc])]
            if new == carry_uk:
                break
            carry_uk = new
        s = _split_jaxpr(jaxpr, const_uk + carry_uk + xs_uk, carry_uk + [False] * ny)
        ys_uk = s.out_unknown[nc:]
        j = jaxpr.jaxpr
        const_pos = {id(v): i for i, (v, u) in enumerate(zip(j.invars[:nk], const_uk)) if not u}
        xs_pos = {id(v): i for i, (v, u) in enumerate(zip(j.invars[nk + nc:], xs_uk)) if not u}
        closed_pos = {id(v): i for i, v in enumerate(j.constvars)}
        h_consts, h_xs, h_closed, stacked = [], [], [], []
        for r in s.residuals:
            if id(r) in const_pos:
                h_consts.append(r)
            elif id(r) in xs_pos:
                h_xs.append(r)
            elif id(r) in closed_pos:
                h_closed.append(r)
            else:
                stacked.append(r)
        k = s.known
        n_known_out = len(k.outvars) - len(s.residuals)
        known = dce_jaxpr(Jaxpr(k.constvars, k.invars, k.outvars[:n_known_out] + stacked,
                                k.eqns, k.debug_info))
        u = s.unknown
        n_res = len(s.residuals)
        uk_consts, uk_carry, uk_xs = _split(u.invars[n_res:], sum(const_uk), sum(carry_uk))
        unknown = Jaxpr(h_closed, [*h_consts, *uk_consts, *uk_carry, *stacked, *h_xs, *uk_xs],
                        u.outvars, u.eqns, u.debug_info)
        return _ScanSplit(
            carry_uk, ys_uk, ClosedJaxpr(known, jaxpr.consts),
            ClosedJaxpr(unknown, [jaxpr.consts[closed_pos[id(r)]] for r in h_closed]),
            [const_pos[id(r)] for r in h_consts], [xs_pos[id(r)] for r in h_xs],
            [r.aval for r in stacked])
    return _memo(jaxpr, ("scan_split", nk, nc, unknowns), build)


def _scan_partial_eval(eqn: JaxprEqn, unknowns: Sequence[bool]):
    p = eqn.params
    nk, nc, length = p["num_consts"], p["num_carry"], p["length"]
    if all(unknowns):
        return [], [eqn], []
    s = _scan_split(p["jaxpr"], nk, nc, tuple(unknowns))
    consts, init, xs = _split(eqn.invars, nk, nc)
    const_uk, _, xs_uk = _split(list(unknowns), nk, nc)
    carry_out, ys_out = _split(eqn.outvars, nc)
    stacked = [Var(ShapedArray((length, *a.shape), a.dtype, a.weak_type)) for a in s.stacked]
    known_eqn = JaxprEqn(
        scan_p,
        [*[a for a, u in zip(consts, const_uk) if not u],
         *[a for a, u in zip(init, s.carry_uk) if not u],
         *[a for a, u in zip(xs, xs_uk) if not u]],
        [*[v for v, u in zip(carry_out, s.carry_uk) if not u],
         *[v for v, u in zip(ys_out, s.ys_uk) if not u], *stacked],
        dict(p, jaxpr=s.known, num_consts=nk - sum(const_uk),
             num_carry=nc - sum(s.carry_uk)), eqn.ctx, eqn.source)
    if not any(s.carry_uk) and not any(s.ys_uk):
        return [known_eqn], [], []
    h_consts = [consts[i] for i in s.hoisted_consts]
    h_xs = [xs[i] for i in s.hoisted_xs]
    uk_init = [a for a, u in zip(init, s.carry_uk) if u]
    unknown_eqn = JaxprEqn(
        scan_p,
        [*h_consts, *[a for a, u in zip(consts, const_uk) if u], *uk_init, *stacked, *h_xs,
         *[a for a, u in zip(xs, xs_uk) if u]],
        [*[v for v, u in zip(carry_out, s.carry_uk) if u],
         *[v for v, u in zip(ys_out, s.ys_uk) if u]],
        dict(p, jaxpr=s.unknown, num_consts=len(h_consts) + sum(const_uk),
             num_carry=sum(s.carry_uk)), eqn.ctx, eqn.source)
    known_in = {id(a) for a, u in zip(eqn.invars, unknowns) if not u and _is_var(a)}
    used_known = [a for a in [*h_consts, *uk_init, *h_xs] if id(a) in known_in]
    return [known_eqn] if known_eqn.outvars else [], [unknown_eqn], stacked + used_known


def _scan_transpose_jaxpr(jaxpr: ClosedJaxpr, nk: int, nc: int, const_lin: tuple,
                          xs_lin: tuple, ys_ct_nz: tuple) -> ClosedJaxpr:
    """The body of the transposed scan (memoized).

    Inputs: (non-linear consts; const ct accumulators, carry cts; nonzero y cts,
    non-linear xs); outputs: (const ct accumulators, carry cts; cts of the linear xs).
    """
    def build():
        const_avals, carry_avals, x_avals = _split(jaxpr.in_avals, nk, nc)
        y_avals = jaxpr.out_avals[nc:]
        acc = [lin and _inexact(a) for a, lin in zip(const_avals, const_lin)]
        x_out = [lin and _inexact(a) for a, lin in zip(x_avals, xs_lin)]
        res_c = [a for a, lin in zip(const_avals, const_lin) if not lin]
        acc_avals = [tangent_aval(a) for a, k in zip(const_avals, acc) if k]
        ct_y_avals = [tangent_aval(a) for a, z in zip(y_avals, ys_ct_nz) if z]
        res_x = [a for a, lin in zip(x_avals, xs_lin) if not lin]
        sizes = (len(res_c), len(acc_avals), nc, len(ct_y_avals))

        def fun(*args):
            rc, accs, ct_carry, ct_y, rx = _split(args, *sizes)
            rc, rx, ct_y, accs = iter(rc), iter(rx), iter(ct_y), iter(accs)
            full = [UndefinedPrimal(tangent_aval(a)) if lin else next(rc)
                    for a, lin in zip(const_avals, const_lin)]
            full += [UndefinedPrimal(tangent_aval(a)) for a in carry_avals]
            full += [UndefinedPrimal(tangent_aval(a)) if lin else next(rx)
                     for a, lin in zip(x_avals, xs_lin)]
            cts = [*ct_carry, *[next(ct_y) if z else Zero(tangent_aval(a))
                                for a, z in zip(y_avals, ys_ct_nz)]]
            ct_in = backward_pass(jaxpr.jaxpr, jaxpr.consts, full, cts)
            ct_consts, ct_carry_in, ct_xs = _split(ct_in, nk, nc)
            new_acc = []
            for c, k in zip(ct_consts, acc):
                if k:
                    a = next(accs)
                    new_acc.append(a if type(c) is Zero else add_any(a, c))
            return [*new_acc, *[instantiate(c) for c in ct_carry_in],
                    *[instantiate(c) for c, k in zip(ct_xs, x_out) if k]]
        return _trace_closed(fun, [*res_c, *acc_avals, *[tangent_aval(a) for a in carry_avals],
                                   *ct_y_avals, *res_x], "transpose")
    return _memo(jaxpr, ("scan_transpose", nk, nc, const_lin, xs_lin, ys_ct_nz), build)


def _scan_transpose(cts, *args, jaxpr, length, reverse, unroll, num_consts, num_carry):
    nk, nc = num_consts, num_carry
    consts, init, xs = _split(args, nk, nc)
    const_avals, carry_avals, x_avals = _split(jaxpr.in_avals, nk, nc)
    if not all(_inexact(a) for a in carry_avals):
        raise NotImplementedError("scan: transposing a scan with an integer or boolean carry "
                                  "is not supported")
    # Every carry is treated as linear: a scan in a linear jaxpr carries only tangents (a
    # carry whose initial value is a known zero is still linear in the loop).
    const_lin = tuple(is_undefined(c) for c in consts)
    xs_lin = tuple(is_undefined(x) for x in xs)
    ct_carry, ct_ys = _split(cts, nc)
    ys_ct_nz = tuple(type(c) is not Zero for c in ct_ys)
    body = _scan_transpose_jaxpr(jaxpr, nk, nc, const_lin, xs_lin, ys_ct_nz)
    acc = [lin and _inexact(a) for a, lin in zip(const_avals, const_lin)]
    acc0 = [zeros_like_aval(tangent_aval(a)) for a, k in zip(const_avals, acc) if k]
    ct_carry = [instantiate(c) for c in ct_carry]
    res_consts = [c for c, lin in zip(consts, const_lin) if not lin]
    res_xs = [x for x, lin in zip(xs, xs_lin) if not lin]
    outs = scan_p.bind(*res_consts, *acc0, *ct_carry, *[c for c in ct_ys if type(c) is not Zero],
                       *res_xs, jaxpr=body, length=length, num_carry=len(acc0) + nc,
                       num_consts=len(res_consts), reverse=not reverse, unroll=unroll)
    ct_consts, ct_init, ct_xs = _split(outs, len(acc0), nc)
    it_c, it_x = iter(ct_consts), iter(ct_xs)
    out = [(next(it_c) if k else Zero(c.aval)) if lin else None
           for c, lin, k in zip(consts, const_lin, acc)]
    out += [ct if is_undefined(x) else None for x, ct in zip(init, ct_init)]
    out += [(next(it_x) if _inexact(a) else Zero(x.aval)) if lin else None
            for x, a, lin in zip(xs, x_avals, xs_lin)]
    return out


def _scan_batch(trace, vals, dims, *, jaxpr, length, reverse, unroll, num_consts, num_carry):
    size, name = trace.axis_size, trace.axis_name
    nk, nc = num_consts, num_carry
    const_bat, init_bat, xs_bat = _split([d is not None for d in dims], nk, nc)
    ny = len(jaxpr.out_avals) - nc
    carry_bat = init_bat
    while True:
        _, out_bat = _batch(jaxpr, tuple(const_bat + carry_bat + xs_bat), size, name)
        new = [a or b for a, b in zip(carry_bat, out_bat[:nc])]
        if new == carry_bat:
            break
        carry_bat = new
    body, out_bat = _batch(jaxpr, tuple(const_bat + carry_bat + xs_bat), size, name,
                           carry_bat + [False] * ny)
    consts, init, xs = _split(vals, nk, nc)
    const_dims, init_dims, xs_dims = _split(dims, nk, nc)
    consts = [x if d is None else moveaxis(x, d, 0) for x, d in zip(consts, const_dims)]
    init = [bdim_at(x, d, size, 0) if b else x for x, d, b in zip(init, init_dims, carry_bat)]
    # Per step, a batched x is batched at axis 0, so the stacked xs are batched at axis 1.
    xs = [x if d is None else moveaxis(x, d, 1) for x, d in zip(xs, xs_dims)]
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=body, length=length, num_carry=nc,
                       num_consts=nk, reverse=reverse, unroll=unroll)
    return outs, [0 if b else None for b in carry_bat] + [1 if b else None for b in out_bat[nc:]]


# ---- registration ---------------------------------------------------------------------------

scan_p.def_abstract_eval(_scan_abstract)
scan_p.def_lowering(_scan_lower)
scan_p.def_jvp(_scan_jvp)
scan_p.def_rule("partial_eval")(_scan_partial_eval)
scan_p.def_transpose(_scan_transpose)
scan_p.def_batch(_scan_batch)


# ---- checkify: the error is carried, with every error kind of the body from the start -------

def _scan_checkify(error, enabled, *args, reverse, length, jaxpr, num_consts, num_carry,
                   unroll):
    from minijax.lax.checkify import checkify_closed, hoist_consts
    from minijax._pytree import tree_unflatten
    nk = num_consts
    consts, rest = list(args[:nk]), list(args[nk:])
    xs_avals = [a.update(shape=a.shape[1:]) for a in
                (get_aval(x) for x in rest[num_carry:])]
    carry_avals = [get_aval(x) for x in rest[:num_carry]]

    def body_avals(err_vals):
        return [*(get_aval(c) for c in consts), *(get_aval(e) for e in err_vals),
                *carry_avals, *xs_avals]

    err_vals, err_tree = tree_flatten(error)
    _, _, effects = checkify_closed(jaxpr, enabled, err_tree, body_avals(err_vals), nk)
    err_vals, err_tree = tree_flatten(error.add_placeholder_effects(effects))
    checked, out_tree, _ = checkify_closed(jaxpr, enabled, err_tree, body_avals(err_vals), nk)
    body, hoisted = hoist_consts(checked)
    outs = scan_p.bind(*hoisted, *consts, *err_vals, *rest, reverse=reverse, length=length,
                       jaxpr=body, num_consts=len(hoisted) + nk,
                       num_carry=num_carry + len(err_vals), unroll=unroll)
    return tree_unflatten(out_tree, outs)


scan_p.def_rule("checkify")(_scan_checkify)
