"""``while_loop`` and ``fori_loop``: the ``while`` primitive, as jax's::

    while[cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts] *cond_consts *body_consts *carry

Lowered to a ``stablehlo.while`` whose consts travel as loop-carried values. ``fori_loop``
with concrete bounds is a ``scan`` (so it can be reverse-differentiated), otherwise a
``while``. Rules: jvp carries the tangents (a fixed point decides which carries get one);
reverse mode is impossible (a dynamic trip count) and raises a ``ValueError`` from partial
evaluation; batching with a batched predicate loops while any element runs and freezes
finished elements with ``select_n``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax.lax.state import run_with_refs, threading_refs, write_back
from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var, dce_jaxpr
from minijax.core.trace import Primitive, Tracer, eval_jaxpr, get_aval
from minijax.core.traceback_util import api_boundary
from minijax.lax._util import type_error
from minijax.lax.binary import add, lt
from minijax.lax.control_flow.common import (_batch, _bcast_to, _cached, _check_carry,
                                             _closure_convert, _convert, _drop_unused_inputs,
                                             _fun_source, _jvp, _memo, _nonzero, _partial_eval,
                                             _permuted, _Plan, _promote, _short, _split, _trace,
                                             _trace_closed, _tree_str, _types_match,
                                             _weak_promotions, _wrapper)
from minijax.lax.control_flow.scan import scan
from minijax.lax.reduce import reduce_or
from minijax.lax.select import select_n
from minijax.lowering import tokens
from minijax.transforms.ad import Zero, instantiate, tangent_aval
from minijax.transforms.batching import bdim_at, moveaxis
from minijax._pytree import tree_flatten, tree_flatten_with_path

while_p = Primitive("while", multiple_results=True)

_WHILE_REVERSE_MSG = (
    "Reverse-mode differentiation does not work for lax.while_loop with a dynamic trip count. "
    "Use lax.scan, or lax.fori_loop with static (Python int) bounds, instead.")


# ---- while_loop / fori_loop ----------------------------------------------------------------

@api_boundary
def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """``val = init_val; while cond_fun(val): val = body_fun(val)``, as one XLA loop.

    ``cond_fun`` must return a boolean scalar; ``body_fun`` must return a value of the
    same pytree structure and types as ``init_val``.
    """
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be callable.")

    def run(refs):  # closed-over mutable array references are carried through the loop
        if not refs:
            return _while_loop(cond_fun, body_fun, init_val)

        def cond2(state):
            v, values = state
            return run_with_refs(refs, values, lambda: cond_fun(v))[0]

        def body2(state):
            v, values = state
            return run_with_refs(refs, values, lambda: body_fun(v))
        v, values = _while_loop(cond2, body2, (init_val, [r._get_value() for r in refs]))
        write_back(refs, values)
        return v
    return threading_refs(run)


def _while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    leaves, tree = tree_flatten(init_val)
    avals = tuple(get_aval(x) for x in leaves)

    def build() -> _Plan:
        in_paths = [p for p, _ in tree_flatten_with_path(init_val)[0]]

        def trace_both(in_avals):
            ct = _trace("while_loop", "cond_fun", cond_fun,
                        lambda xs: [cond_fun(tree.unflatten(xs))], in_avals, (init_val,))
            pred = ct.out_avals()
            if len(pred) != 1 or ct.trees[0].num_nodes != 1 or \
                    pred[0].shape != () or pred[0].dtype != dtypes.bool_:
                raise TypeError(f"while_loop: cond_fun must return a boolean scalar, but got "
                                f"{_tree_str(ct.trees[0], pred)} (cond_fun is "
                                f"{_fun_source(cond_fun)})")
            bt = _trace("while_loop", "body_fun", body_fun,
                        lambda xs: [body_fun(tree.unflatten(xs))], in_avals, (init_val,))
            return ct, bt

        ct, bt = trace_both(avals)
        promote = _weak_promotions(avals, bt.out_avals())
        in_avals = avals
        if promote:
            in_avals = tuple(a if d is None else ShapedArray(a.shape, d)
                             for a, d in zip(avals, promote))
            ct, bt = trace_both(in_avals)
        _check_carry("while_loop body", body_fun, tree, in_paths, in_avals, bt.trees[0],
                     bt.out_avals())
        # (params in jax's printing order)
        params = {"body_jaxpr": _closure_convert(bt.jaxpr), "body_nconsts": len(bt.consts),
                  "cond_jaxpr": _closure_convert(ct.jaxpr), "cond_nconsts": len(ct.consts)}
        return _Plan(params, [*ct.consts, *bt.consts], tree, promote)

    plan = _cached("while", (cond_fun, body_fun), (tree, avals), build)
    outs = while_p.bind(*plan.consts, *_promote(leaves, plan.promote), **plan.params)
    return tree.unflatten(outs)


def _while_abstract(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts = args[:cond_nconsts], args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = args[cond_nconsts + body_nconsts:]
    if not _types_match(cond_jaxpr.in_avals, [*cconsts, *carry]):
        raise type_error("while", f"operands do not match the cond_jaxpr inputs "
                         f"({_short(cond_jaxpr.in_avals)})", *args)
    if not _types_match(body_jaxpr.in_avals, [*bconsts, *carry]):
        raise type_error("while", f"operands do not match the body_jaxpr inputs "
                         f"({_short(body_jaxpr.in_avals)})", *args)
    if not _types_match(cond_jaxpr.out_avals, [ShapedArray((), dtypes.bool_)]):
        raise type_error("while", f"cond_jaxpr must return a boolean scalar, got "
                         f"({_short(cond_jaxpr.out_avals)})", *args)
    if not _types_match(body_jaxpr.out_avals, carry):
        raise type_error("while", f"body_jaxpr output types ({_short(body_jaxpr.out_avals)}) "
                         f"differ from the carry types", *args)
    return body_jaxpr.out_avals


def _while_lower(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    # The consts travel as loop-carried values (returned unchanged by the body).
    nc = cond_nconsts + body_nconsts
    if tokens.threads_token(cond_jaxpr) and not cond_jaxpr.out_avals[0].shape:
        return _while_lower_cond_effects(ctx, args, cond_jaxpr, body_jaxpr, cond_nconsts, nc)
    # Ordered effects in the body: the token is carried last.
    thread = tokens.threads_token(body_jaxpr)
    args = [*args, tokens.get_token(ctx)] if thread else list(args)
    n = len(args) - thread
    avals = [a.aval for a in args]
    cond_region = ctx.new_region(avals)
    with ctx.in_region(cond_region):
        xs = cond_region.args[:n]
        ctx.ret(ctx.lower_jaxpr(cond_jaxpr, [*xs[:cond_nconsts], *xs[nc:]], name="while/cond"))
    body_region = ctx.new_region(avals)
    with ctx.in_region(body_region):
        xs = body_region.args[:n]
        if thread:
            tokens.set_token(ctx, body_region.args[-1])
        new = ctx.lower_jaxpr(body_jaxpr, xs[cond_nconsts:], name="while/body")
        ctx.ret([*xs[:nc], *new, *([tokens.get_token(ctx)] if thread else [])])
    outs = ctx.op("stablehlo.while", args, avals, regions=[cond_region, body_region])
    if thread:
        tokens.set_token(ctx, outs[-1])
    return outs[nc:n]


def _while_lower_cond_effects(ctx, args, cond_jaxpr, body_jaxpr, cond_nconsts: int, nc: int):
    """A while loop whose cond has ordered effects, as jax lowers it: a cond region cannot
    return the token, so the predicate is carried instead (``pred = cond(x); while pred:
    x = body(x); pred = cond(x)``), with the token carried last."""
    args = list(args)
    cconsts, carry = args[:cond_nconsts], args[nc:]
    (pred,) = ctx.lower_jaxpr(cond_jaxpr, [*cconsts, *carry], name="while/cond")
    operands = [pred, *args, tokens.get_token(ctx)]
    avals = [v.aval for v in operands]
    cond_region = ctx.new_region(avals)
    with ctx.in_region(cond_region):
        ctx.ret([cond_region.args[0]])
    body_region = ctx.new_region(avals)
    with ctx.in_region(body_region):
        xs = body_region.args[1:-1]
        tokens.set_token(ctx, body_region.args[-1])
        new = ctx.lower_jaxpr(body_jaxpr, xs[cond_nconsts:], name="while/body")
        (p,) = ctx.lower_jaxpr(cond_jaxpr, [*xs[:cond_nconsts], *new], name="while/cond")
        ctx.ret([p, *xs[:nc], *new, tokens.get_token(ctx)])
    outs = ctx.op("stablehlo.while", operands, avals, regions=[cond_region, body_region])
    tokens.set_token(ctx, outs[-1])
    return outs[1 + nc:-1]


_fori_scan_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_fori_while_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _make_fori_scan_body(get_fun: Callable) -> Callable:
    def scanned_fun(loop_carry, _):
        i, x = loop_carry
        return (add(i, 1), get_fun()(i, x)), None
    scanned_fun._user_fun = get_fun  # for messages (_fun_source)
    return scanned_fun


def _make_fori_while_body(get_fun: Callable) -> Callable:
    def while_body_fun(loop_carry):
        i, upper, x = loop_carry
        return add(i, np.ones((), i.dtype)), upper, get_fun()(i, x)
    while_body_fun._user_fun = get_fun  # for messages (_fun_source)
    return while_body_fun


def _fori_cond_fun(loop_carry):
    i, upper, _ = loop_carry
    return lt(i, upper)


@api_boundary
def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
    """``val = init_val; for i in range(lower, upper): val = body_fun(i, val)``.

    With concrete bounds (Python/NumPy integers or concrete arrays) this is a ``scan``
    of ``upper - lower`` steps whose index is a weakly typed default integer (as jax);
    otherwise a ``while_loop`` whose index has the bounds' dtype.
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    la, ua = get_aval(lower), get_aval(upper)
    if la.dtype == ua.dtype:
        dtype = la.dtype
    else:
        # A weakly typed bound (a Python int) takes the other bound's signed integer type.
        dtype = None
        if dtypes.is_signed(la.dtype) and dtypes.is_signed(ua.dtype):
            if la.weak_type and not ua.weak_type:
                dtype = ua.dtype
            elif ua.weak_type and not la.weak_type:
                dtype = la.dtype
        if dtype is None:
            raise TypeError("lower and upper arguments to fori_loop must have equal types, "
                            f"got {la.dtype.name} and {ua.dtype.name}")
    use_scan = False
    if not isinstance(lower, Tracer) and not isinstance(upper, Tracer):
        try:
            lower_, upper_ = int(lower), int(upper)
            use_scan = True
        except TypeError:
            pass
    if use_scan:
        body = _wrapper(_fori_scan_bodies, body_fun, _make_fori_scan_body)
        (_, result), _ = scan(body, (lower_, init_val), None, length=max(upper_ - lower_, 0),
                              unroll=1 if unroll is None else unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                         "statically known.")
    if la.dtype != dtype:
        lower = _convert(lower, dtype)
    if ua.dtype != dtype:
        upper = _convert(upper, dtype)
    body = _wrapper(_fori_while_bodies, body_fun, _make_fori_while_body)
    _, _, result = while_loop(_fori_cond_fun, body, (lower, upper, init_val))
    return result




# ---- while rules -----------------------------------------------------------------------------

def _while_jvp_jaxprs(cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, nb: int,
                      bconst_nz: tuple, init_nz: tuple):
    """The jvp'd cond and body, and which carries have nonzero tangents (a fixed point)."""
    def build():
        carry_nz = list(init_nz)
        while True:
            _, out_nz = _jvp(body_jaxpr, bconst_nz + tuple(carry_nz), carry_nz)
            new = [a or b for a, b in zip(carry_nz, out_nz)]
            if new == carry_nz:
                break
            carry_nz = new
        if not any(carry_nz):
            return None, None, carry_nz
        jvp_body, _ = _jvp(body_jaxpr, bconst_nz + tuple(carry_nz), carry_nz)
        # jvp_body takes (bconsts, carry, bconst_dots, carry_dots); the loop wants
        # (bconsts, bconst_dots, carry, carry_dots).
        n, kb, kc = len(carry_nz), sum(bconst_nz), sum(carry_nz)
        order = [*range(nb), *range(nb + n, nb + n + kb), *range(nb, nb + n),
                 *range(nb + n + kb, nb + n + kb + kc)]
        body = _permuted(jvp_body, order)
        j = cond_jaxpr.jaxpr
        dots = [Var(tangent_aval(a)) for a, z in zip(body_jaxpr.out_avals, carry_nz) if z]
        cond = ClosedJaxpr(Jaxpr(j.constvars, [*j.invars, *dots], j.outvars, j.eqns,
                                 j.debug_info), cond_jaxpr.consts)
        return cond, body, carry_nz
    key = ("while_jvp", weakref.ref(cond_jaxpr), nb, bconst_nz, init_nz)
    return _memo(body_jaxpr, key, build)


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cconsts, bconsts, init = _split(primals, nc, nb)
    _, bdots, init_dots = _split(tangents, nc, nb)
    bavals = body_jaxpr.in_avals
    bconst_nz = tuple(_nonzero(t, a) for t, a in zip(bdots, bavals[:nb]))
    init_nz = tuple(_nonzero(t, a) for t, a in zip(init_dots, bavals[nb:]))
    cond, body, carry_nz = _while_jvp_jaxprs(cond_jaxpr, body_jaxpr, nb, bconst_nz, init_nz)
    out_avals = body_jaxpr.out_avals
    if body is None:
        outs = while_p.bind(*primals, body_jaxpr=body_jaxpr, body_nconsts=nb,
                            cond_jaxpr=cond_jaxpr, cond_nconsts=nc)
        return outs, [Zero(tangent_aval(a)) for a in out_avals]
    bd = [t for t, z in zip(bdots, bconst_nz) if z]
    cd = [instantiate(t) for t, z in zip(init_dots, carry_nz) if z]
    outs = while_p.bind(*cconsts, *bconsts, *bd, *init, *cd, body_jaxpr=body,
                        body_nconsts=nb + len(bd), cond_jaxpr=cond, cond_nconsts=nc)
    n = len(out_avals)
    it = iter(outs[n:])
    return outs[:n], [next(it) if z else Zero(tangent_aval(a))
                      for a, z in zip(out_avals, carry_nz)]


def _while_partial_eval(eqn: JaxprEqn, unknowns: Sequence[bool]):
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond_jaxpr, body_jaxpr = p["cond_jaxpr"], p["body_jaxpr"]
    cuk, buk, carry_uk = _split(list(unknowns), nc, nb)
    while True:
        out_uk = _partial_eval(body_jaxpr, buk + carry_uk).out_unknown
        new = [a or b for a, b in zip(carry_uk, out_uk)]
        if new == carry_uk:
            break
        carry_uk = new
    pred_uk = _partial_eval(cond_jaxpr, cuk + carry_uk).out_unknown[0]
    if pred_uk:
        # Not even the trip count is known: nothing of the loop can run on the known side.
        raise ValueError(_WHILE_REVERSE_MSG)
    if any(carry_uk):
        return _while_partial_eval_split(eqn, unknowns, cuk, buk, carry_uk)
    # Only dead consts are unknown: the whole loop is known once they are dropped.
    cond = _drop_unused_inputs(cond_jaxpr, cuk + [False] * len(carry_uk))
    body = _drop_unused_inputs(body_jaxpr, buk + [False] * len(carry_uk))
    invars = [a for a, u in zip(eqn.invars, unknowns) if not u]
    params = dict(p, cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=nc - sum(cuk),
                  body_nconsts=nb - sum(buk))
    return [JaxprEqn(while_p, invars, eqn.outvars, params, eqn.ctx, eqn.source)], [], []


def _while_partial_eval_split(eqn: JaxprEqn, unknowns, cuk, buk, carry_uk):
    """Some carries unknown (tangents, in ``linearize``), the predicate known: as jax, a
    loop over the known carries alone computes the known outputs, and the whole loop runs
    on the unknown side (its known inputs as residuals) for the unknown ones. Transposing
    that loop is what reverse mode cannot do (``_while_transpose``)."""
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    b = p["body_jaxpr"].jaxpr
    body_known = ClosedJaxpr(Jaxpr(b.constvars, b.invars,
                                   [o for o, u in zip(b.outvars, carry_uk) if not u],
                                   b.eqns, b.debug_info), p["body_jaxpr"].consts)
    body = _drop_unused_inputs(body_known, buk + carry_uk)
    cond = _drop_unused_inputs(p["cond_jaxpr"], cuk + carry_uk)
    invars = [a for a, u in zip(eqn.invars, cuk + buk + carry_uk) if not u]
    outvars = [o for o, u in zip(eqn.outvars, carry_uk) if not u]
    params = dict(p, cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=nc - sum(cuk),
                  body_nconsts=nb - sum(buk))
    known = JaxprEqn(while_p, invars, outvars, params, eqn.ctx, eqn.source)
    whole = JaxprEqn(while_p, list(eqn.invars),
                     [o if u else Var(o.aval) for o, u in zip(eqn.outvars, carry_uk)],
                     p, eqn.ctx, eqn.source)
    residuals = [a for a, u in zip(eqn.invars, unknowns) if not u and isinstance(a, Var)]
    return [known], [whole], residuals


def _while_transpose(cts, *args, **params):
    raise ValueError(_WHILE_REVERSE_MSG)


def _while_batched_pred_jaxprs(cond_jaxpr: ClosedJaxpr, body_jaxpr: ClosedJaxpr, size: int,
                               name: Any, cbat: tuple, bbat: tuple):
    """cond/body of a loop running while any element's predicate holds; finished elements
    keep their carry (every carry batched at axis 0; the body also takes the cond consts)."""
    def build():
        n = len(body_jaxpr.out_avals)
        cond_b, _ = _batch(cond_jaxpr, cbat + (True,) * n, size, name, True)
        body_b, _ = _batch(body_jaxpr, bbat + (True,) * n, size, name, True)
        nc, nb = len(cbat), len(bbat)

        def cond_fun(*xs):
            pred, = eval_jaxpr(cond_b.jaxpr, cond_b.consts, *xs)
            return [reduce_or(pred, (0,))]

        def body_fun(*xs):
            cconsts, bconsts, carry = _split(xs, nc, nb)
            pred, = eval_jaxpr(cond_b.jaxpr, cond_b.consts, *cconsts, *carry)
            new = eval_jaxpr(body_b.jaxpr, body_b.consts, *bconsts, *carry)
            return [select_n(_bcast_to(pred, x), x, y) for x, y in zip(carry, new)]
        cond = _trace_closed(cond_fun, cond_b.in_avals, "vmap")
        body = _trace_closed(body_fun, [*cond_b.in_avals[:nc], *body_b.in_avals], "vmap")
        return cond, body
    key = ("while_batched_pred", weakref.ref(cond_jaxpr), size, name, cbat, bbat)
    return _memo(body_jaxpr, key, build)


def _while_batch(trace, vals, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size, name = trace.axis_size, trace.axis_name
    nc, nb = cond_nconsts, body_nconsts
    cbat, bbat, init_bat = _split([d is not None for d in dims], nc, nb)
    cbat, bbat = tuple(cbat), tuple(bbat)
    carry_bat = init_bat
    while True:
        _, body_bat = _batch(body_jaxpr, bbat + tuple(carry_bat), size, name)
        _, (pred_bat,) = _batch(cond_jaxpr, cbat + tuple(carry_bat), size, name)
        # With a batched predicate elements stop at different steps: every carry differs.
        new = [True] * len(carry_bat) if pred_bat else \
            [a or b for a, b in zip(carry_bat, body_bat)]
        if new == carry_bat:
            break
        carry_bat = new
    cconsts, bconsts, init = _split(vals, nc, nb)
    cdims, bdims, init_dims = _split(dims, nc, nb)
    cconsts = [x if d is None else moveaxis(x, d, 0) for x, d in zip(cconsts, cdims)]
    bconsts = [x if d is None else moveaxis(x, d, 0) for x, d in zip(bconsts, bdims)]
    init = [bdim_at(x, d, size, 0) if b else x for x, d, b in zip(init, init_dims, carry_bat)]
    out_dims = [0 if b else None for b in carry_bat]
    if not pred_bat:
        body, _ = _batch(body_jaxpr, bbat + tuple(carry_bat), size, name, carry_bat)
        cond, _ = _batch(cond_jaxpr, cbat + tuple(carry_bat), size, name)
        outs = while_p.bind(*cconsts, *bconsts, *init, body_jaxpr=body, body_nconsts=nb,
                            cond_jaxpr=cond, cond_nconsts=nc)
        return outs, out_dims
    cond, body = _while_batched_pred_jaxprs(cond_jaxpr, body_jaxpr, size, name, cbat, bbat)
    outs = while_p.bind(*cconsts, *cconsts, *bconsts, *init, body_jaxpr=body,
                        body_nconsts=nc + nb, cond_jaxpr=cond, cond_nconsts=nc)
    return outs, out_dims


# ---- registration ---------------------------------------------------------------------------

while_p.def_abstract_eval(_while_abstract)
while_p.def_lowering(_while_lower)
while_p.def_jvp(_while_jvp)
while_p.def_rule("partial_eval")(_while_partial_eval)
while_p.def_transpose(_while_transpose)
while_p.def_batch(_while_batch)


# ---- checkify: the error is carried; the body also runs the cond's checks on its result -----

def _while_checkify(error, enabled, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    from minijax.core.trace import DebugInfo, trace_to_jaxpr
    from minijax.lax.checkify import checkify_closed, checkify_jaxpr, hoist_consts
    from minijax._pytree import tree_unflatten
    nc, nb = cond_nconsts, body_nconsts
    cconsts, bconsts, carry = list(args[:nc]), list(args[nc:nc + nb]), list(args[nc + nb:])
    # The first evaluation of the cond, here; the others at the end of each iteration.
    error, _ = checkify_jaxpr(cond_jaxpr, enabled, error, *cconsts, *carry)

    def body_then_cond(*xs):
        out = eval_jaxpr(body_jaxpr.jaxpr, body_jaxpr.consts, *xs[nc:])
        eval_jaxpr(cond_jaxpr.jaxpr, cond_jaxpr.consts, *xs[:nc], *out)
        return out, None

    avals = [get_aval(x) for x in (*cconsts, *bconsts, *carry)]
    jaxpr, consts, _ = trace_to_jaxpr(body_then_cond, avals,
                                      DebugInfo("checkify", "while body", None))
    full_body = ClosedJaxpr(jaxpr, consts)

    def checked_body(err):
        err_vals, err_tree = tree_flatten(err)
        in_avals = [*avals[:nc + nb], *(get_aval(e) for e in err_vals), *avals[nc + nb:]]
        return err_vals, err_tree, checkify_closed(full_body, enabled, err_tree, in_avals,
                                                   nc + nb)

    _, _, (_, _, effects) = checked_body(error)
    error = error.add_placeholder_effects(effects)
    err_vals, err_tree, (body, out_tree, _) = checked_body(error)
    n = len(err_vals)
    cond_avals = [*avals[:nc], *(get_aval(e) for e in err_vals), *avals[nc + nb:]]
    cond_checked, _, _ = checkify_closed(cond_jaxpr, enabled, err_tree, cond_avals, nc)
    cj = cond_checked.jaxpr  # only the predicate: the body has the checks
    cond = dce_jaxpr(Jaxpr(cj.constvars, cj.invars, cj.outvars[n:], cj.eqns, cj.debug_info))
    cond, hc = hoist_consts(ClosedJaxpr(cond, cond_checked.consts))
    body, hb = hoist_consts(body)
    outs = while_p.bind(*hc, *cconsts, *hb, *cconsts, *bconsts, *err_vals, *carry,
                        cond_jaxpr=cond, cond_nconsts=len(hc) + nc, body_jaxpr=body,
                        body_nconsts=len(hb) + nc + nb)
    return tree_unflatten(out_tree, outs)


while_p.def_rule("checkify")(_while_checkify)
