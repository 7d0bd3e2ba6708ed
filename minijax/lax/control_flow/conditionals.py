"""``cond`` and ``switch``: the ``cond`` primitive, as jax's::

    cond[branches=(f0, f1, ...)] index *consts *operands

Lowered to a ``stablehlo.case`` with one region per branch. Rules: jvp and transpose are
conds of the jvp'd / transposed branches (the index stays a non-linear operand); partial
evaluation with a known index splits every branch into a known cond (outputs and the union
of all branches' residuals) and an unknown one; batching with a batched index runs every
branch and selects (``select_n``), otherwise it is a cond of the batched branches.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax.lax.state import run_with_refs, threading_refs, write_back
from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from minijax.core.trace import Primitive, eval_jaxpr, get_aval
from minijax.core.traceback_util import api_boundary
from minijax.lax._util import type_error
from minijax.lax.binary import eq, ne
from minijax.lax.control_flow.common import (_batch, _bcast_to, _cached, _check_branch_outputs,
                                             _inexact, _INT32, _is_var, _jvp, _memo, _nonzero,
                                             _partial_eval, _Plan, _short, _split_jaxpr,
                                             _strong_outputs, _trace, _trace_closed, _Traced,
                                             _types_match)
from minijax.lax.convert import convert_element_type
from minijax.lax.misc import stop_gradient
from minijax.lax.select import clamp, select_n
from minijax.lowering import tokens
from minijax.transforms.ad import (UndefinedPrimal, Zero, backward_pass, instantiate, is_undefined,
                                   tangent_aval, zeros_like_aval)
from minijax.transforms.batching import bdim_at, moveaxis
from minijax._pytree import tree_flatten

cond_p = Primitive("cond", multiple_results=True)
_NO_OPERAND = object()


# ---- cond / switch ---------------------------------------------------------------------------

def _operands(operands: tuple, operand: Any, api: str) -> tuple:
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(f"{api}: if 'operand' keyword is passed then no positional operands can "
                        f"be passed, got operand={operand!r} and positional operands {operands}")
    return (operand,)


def _is_concrete_scalar(x: Any) -> bool:
    return type(x) in (bool, int, float, complex) or isinstance(x, (np.ndarray, np.generic))


def _scalar_aval(api: str, what: str, x: Any) -> ShapedArray:
    try:
        aval = None if x is None or isinstance(x, (list, tuple)) else get_aval(x)
    except TypeError:
        aval = None
    if aval is None:
        raise TypeError(f"{api}: {what} must be a scalar, got a value of type "
                        f"{type(x).__name__}: {x!r}")
    if aval.shape != ():
        raise TypeError(f"{api}: {what} must be a scalar, got an array of type "
                        f"{aval.str_short()} (shape {aval.shape}); use jnp.where or lax.select "
                        "to select elementwise")
    return aval


def _pred_index(pred: Any):
    """``pred`` as the int32 branch index of ``cond`` (nonzero -> 1)."""
    aval = _scalar_aval("cond", "pred", pred)
    dt = aval.dtype
    if not (dtypes.is_bool(dt) or dtypes.is_int(dt) or dtypes.is_float(dt)):
        raise TypeError(f"cond: pred must be a boolean or number, got a value of type "
                        f"{aval.str_short()}")
    if _is_concrete_scalar(pred):
        return np.asarray(np.asarray(pred) != 0, _INT32)
    if not dtypes.is_bool(dt):
        pred = ne(pred, np.zeros((), dt))
    return convert_element_type(pred, _INT32)


@api_boundary
def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_NO_OPERAND):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``; both are traced.

    ``pred`` is a scalar boolean or number (nonzero means true). Both functions must
    return the same pytree structure and types (a weak type in one branch gives way to
    the other branch's type).
    """
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _operands(operands, operand, "cond")
    index = _pred_index(pred)
    return _cond_bind("cond", index, (false_fun, true_fun), ("false_fun", "true_fun"),
                      (1, 0), operands)


@api_boundary
def switch(index, branches: Sequence[Callable], *operands, operand=_NO_OPERAND):
    """``branches[clamp(0, index, len(branches) - 1)](*operands)``; all branches are traced."""
    branches = tuple(branches)
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    operands = _operands(operands, operand, "switch")
    aval = _scalar_aval("switch", "the branch index", index)
    if not dtypes.is_int(aval.dtype):
        raise TypeError(f"switch: the branch index must be an integer, got a value of type "
                        f"{aval.str_short()}")
    if not branches:
        raise ValueError("switch: empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    if _is_concrete_scalar(index):
        index = np.asarray(index, _INT32)
    else:
        index = convert_element_type(index, _INT32)
    index = clamp(np.asarray(0, _INT32), index, np.asarray(len(branches) - 1, _INT32))
    labels = tuple(f"branch {i}" for i in range(len(branches)))
    return _cond_bind("switch", index, branches, labels, tuple(range(len(branches))), operands)


def _cond_bind(api: str, index, branches: tuple, labels: tuple, order: tuple, operands: tuple):
    def run(refs):  # closed-over mutable array references: operands and results of each branch
        if not refs:
            return _cond_bind_plain(api, index, branches, labels, order, operands)

        def threaded(fun):
            return lambda values, *ops: run_with_refs(refs, values, lambda: fun(*ops))
        out, values = _cond_bind_plain(api, index, tuple(threaded(b) for b in branches), labels,
                                       order, ([r._get_value() for r in refs], *operands))
        write_back(refs, values)
        return out
    return threading_refs(run)


def _cond_bind_plain(api: str, index, branches: tuple, labels: tuple, order: tuple,
                     operands: tuple):
    leaves, tree = tree_flatten(operands)
    avals = tuple(get_aval(x) for x in leaves)

    def build() -> _Plan:
        def call_branch(fun):
            return lambda xs: [fun(*tree.unflatten(xs))]
        traced = [_trace(api, label, fun, call_branch(fun), avals, operands)
                  for fun, label in zip(branches, labels)]
        first = order[0]
        for i in order[1:]:
            _check_branch_outputs(api, labels[first], labels[i], traced[first], traced[i],
                                  (branches[first], branches[i]))
        # A weak output type gives way to a strong one in another branch.
        weak = [all(ws) for ws in zip(*[[a.weak_type for a in t.out_avals()] for t in traced])]
        jaxprs, consts = _merge_consts(traced, weak, order)
        jaxprs, forward = _forward_operands(jaxprs)
        return _Plan({"branches": tuple(jaxprs)}, consts, traced[first].trees[0],
                     forward=forward)

    plan = _cached(api, branches, (tree, avals), build)
    outs = cond_p.bind(index, *plan.consts, *leaves, **plan.params)
    if plan.forward:
        ins, it = [*plan.consts, *leaves], iter(outs)
        outs = [next(it) if f is None else ins[f] for f in plan.forward]
    return plan.out_tree.unflatten(outs)


def _forward_operands(jaxprs: list) -> tuple[list, tuple]:
    """Outputs that every branch returns as the same operand, unchanged, are that operand
    and not outputs of the cond (as jax forwards them): under vmap with a batched
    predicate an unbatched operand passed through stays unbatched. ``(branches without
    those outputs, per output its operand index or None)``; ``()`` when there are none."""
    n_out = len(jaxprs[0].jaxpr.outvars)
    forward = []
    for k in range(n_out):
        found = set()
        for cj in jaxprs:
            v = cj.jaxpr.outvars[k]
            idx = next((i for i, iv in enumerate(cj.jaxpr.invars) if iv is v), None) \
                if type(v) is Var else None
            found.add(idx)
        forward.append(found.pop() if len(found) == 1 and None not in found else None)
    if all(f is None for f in forward):
        return jaxprs, ()
    kept = []
    for cj in jaxprs:
        j = cj.jaxpr
        kept.append(ClosedJaxpr(Jaxpr(j.constvars, j.invars,
                                      [v for v, f in zip(j.outvars, forward) if f is None],
                                      j.eqns, j.debug_info), cj.consts))
    return kept, tuple(forward)


def _merge_consts(traced: list[_Traced], weak: Sequence[bool],
                  order: Sequence[int]) -> tuple[list, list]:
    """Closure-convert each branch over the union of all branches' consts (taken in ``order``)."""
    consts: list = []
    position: dict[int, int] = {}
    for i in order:
        for c in traced[i].consts:
            if id(c) not in position:
                position[id(c)] = len(consts)
                consts.append(c)
    const_avals = [get_aval(c) for c in consts]
    jaxprs = []
    for t in traced:
        j = t.jaxpr
        constvars = [Var(a) for a in const_avals]
        for v, c in zip(j.constvars, t.consts):
            constvars[position[id(c)]] = v
        outvars, eqns = _strong_outputs(j, weak)
        jaxprs.append(ClosedJaxpr(Jaxpr([], [*constvars, *j.invars], outvars, eqns,
                                        j.debug_info), []))
    return jaxprs, consts


def _cond_abstract(index, *args, branches):
    if index.shape != () or index.dtype != _INT32:
        raise type_error("cond", "the branch index must be an int32 scalar", index)
    out0 = branches[0].out_avals
    for b in branches:
        if not _types_match(b.in_avals, args):
            raise type_error("cond", f"operands do not match the branch inputs "
                             f"({_short(b.in_avals)})", index, *args)
        if not _types_match(b.out_avals, out0):
            raise type_error("cond", f"branches have different output types: "
                             f"({_short(out0)}) and ({_short(b.out_avals)})", index, *args)
    return [a.update(weak_type=all(b.out_avals[i].weak_type for b in branches))
            for i, a in enumerate(out0)]


def _cond_lower(ctx, index, *args, branches):
    # Ordered effects in a branch: the token goes in and comes out as a first result.
    tok = tokens.get_token(ctx) if tokens.threads_token(*branches) else None
    regions = []
    for i, branch in enumerate(branches):
        region = ctx.new_region([])
        with ctx.in_region(region):
            if tok is not None:
                tokens.set_token(ctx, tok)
            outs = ctx.lower_jaxpr(branch, args, name=f"cond/branch_{i}_fun")
            ctx.ret(outs if tok is None else [tokens.get_token(ctx), *outs])
        regions.append(region)
    if tok is None:
        return ctx.op("stablehlo.case", [index], list(ctx.avals_out), regions=regions)
    tok, *outs = ctx.op("stablehlo.case", [index], [tokens.TOKEN, *ctx.avals_out],
                        regions=regions)
    tokens.set_token(ctx, tok)
    return outs




# ---- cond rules ------------------------------------------------------------------------------

def _cond_jvp(primals, tangents, *, branches):
    index, *ops = primals
    nz = tuple(_nonzero(t, a) for t, a in zip(tangents[1:], branches[0].in_avals))
    out_avals = branches[0].out_avals
    out_nz = [any(z) for z in zip(*[_jvp(b, nz, (False,) * len(out_avals))[1]
                                    for b in branches])]
    if not any(out_nz):
        return (cond_p.bind(index, *ops, branches=branches),
                [Zero(tangent_aval(a)) for a in out_avals])
    new = tuple(_jvp(b, nz, out_nz)[0] for b in branches)
    dots = [t for t, z in zip(tangents[1:], nz) if z]
    outs = cond_p.bind(index, *ops, *dots, branches=new)
    n = len(out_avals)
    it = iter(outs[n:])
    return outs[:n], [next(it) if z else Zero(tangent_aval(a)) for a, z in zip(out_avals, out_nz)]


def _merge_residuals(per_branch: list[list[ShapedArray]]) -> tuple[list, list[list[int]]]:
    """Slots for every branch's residuals, shared between branches by type.

    Returns the slot types and, per branch, the slot of each of its residuals.
    """
    slots: list[ShapedArray] = []
    positions: list[list[int]] = []
    for avals in per_branch:
        used: set[int] = set()
        mine = []
        for a in avals:
            a = a.strip_weak_type()
            j = next((j for j, s in enumerate(slots) if j not in used and s == a), None)
            if j is None:
                j = len(slots)
                slots.append(a)
            used.add(j)
            mine.append(j)
        positions.append(mine)
    return slots, positions


def _cond_split(branches: tuple, ops_uk: tuple):
    """Known and unknown branches of a cond whose index is known (memoized)."""
    def build():
        out_uk = [any(u) for u in zip(*[_partial_eval(b, ops_uk).out_unknown
                                        for b in branches])]
        splits = [_split_jaxpr(b, ops_uk, out_uk) for b in branches]
        slots, positions = _merge_residuals([[r.aval for r in s.residuals] for s in splits])
        known_avals = [a for a, u in zip(branches[0].in_avals, ops_uk) if not u]
        unknown_avals = [a for a, u in zip(branches[0].in_avals, ops_uk) if u]
        known, unknown = [], []
        for b, s, pos in zip(branches, splits, positions):
            def known_fun(*xs, b=b, s=s, pos=pos):
                outs = eval_jaxpr(s.known, b.consts, *xs)
                n = len(outs) - len(pos)
                fill = [None] * len(slots)
                for j, r in zip(pos, outs[n:]):
                    fill[j] = r
                fill = [zeros_like_aval(a) if r is None else r for r, a in zip(fill, slots)]
                return outs[:n] + fill

            def unknown_fun(*xs, s=s, pos=pos):
                res, rest = xs[:len(slots)], xs[len(slots):]
                return eval_jaxpr(s.unknown, [], *[res[j] for j in pos], *rest)
            known.append(_trace_closed(known_fun, known_avals, "partial_eval"))
            unknown.append(_trace_closed(unknown_fun, [*slots, *unknown_avals], "partial_eval"))
        return out_uk, tuple(known), tuple(unknown), len(slots)
    key = ("cond_split", ops_uk, tuple(weakref.ref(b) for b in branches[1:]))
    return _memo(branches[0], key, build)


def _cond_partial_eval(eqn: JaxprEqn, unknowns: Sequence[bool]):
    branches = eqn.params["branches"]
    index, *ops = eqn.invars
    index_uk, *ops_uk = unknowns
    if index_uk or all(ops_uk):
        # An unknown index: the whole cond is unknown (as jax).
        return [], [eqn], [a for a, u in zip(eqn.invars, unknowns) if not u and _is_var(a)]
    out_uk, known, unknown, n_res = _cond_split(branches, tuple(ops_uk))
    known_ops = [a for a, u in zip(ops, ops_uk) if not u]
    known_outs = [v for v, u in zip(eqn.outvars, out_uk) if not u]
    res_avals = cond_p.out_avals([index.aval, *[a.aval for a in known_ops]],
                                 {"branches": known})[len(known_outs):]
    res = [Var(a) for a in res_avals]
    known_eqn = JaxprEqn(cond_p, [index, *known_ops], [*known_outs, *res],
                         {"branches": known}, eqn.ctx, eqn.source)
    if not any(out_uk):
        return [known_eqn], [], []
    unknown_eqn = JaxprEqn(cond_p, [index, *res, *[a for a, u in zip(ops, ops_uk) if u]],
                           [v for v, u in zip(eqn.outvars, out_uk) if u],
                           {"branches": unknown}, eqn.ctx, eqn.source)
    return ([known_eqn] if known_eqn.outvars else [], [unknown_eqn],
            res + ([index] if _is_var(index) else []))


def _cond_transpose_branch(branch: ClosedJaxpr, linear: tuple, ct_nz: tuple) -> ClosedJaxpr:
    """(non-linear operands, nonzero cts) -> cts of the inexact linear operands."""
    def build():
        in_avals = branch.in_avals
        out_avals = branch.out_avals
        nonlin_avals = [a for a, lin in zip(in_avals, linear) if not lin]
        ct_avals = [tangent_aval(a) for a, z in zip(out_avals, ct_nz) if z]

        def fun(*xs):
            res, cts = iter(xs[:len(nonlin_avals)]), iter(xs[len(nonlin_avals):])
            args = [UndefinedPrimal(tangent_aval(a)) if lin else next(res)
                    for a, lin in zip(in_avals, linear)]
            ct_out = [next(cts) if z else Zero(tangent_aval(a)) for a, z in zip(out_avals, ct_nz)]
            ct_in = backward_pass(branch.jaxpr, branch.consts, args, ct_out)
            return [instantiate(c) for c, a, lin in zip(ct_in, in_avals, linear)
                    if lin and _inexact(a)]
        return _trace_closed(fun, [*nonlin_avals, *ct_avals], "transpose")
    return _memo(branch, ("cond_transpose", linear, ct_nz), build)


def _cond_transpose(cts, index, *ops, branches):
    if is_undefined(index):
        raise ValueError("cond: cannot transpose with respect to the branch index")
    linear = tuple(is_undefined(x) for x in ops)
    ct_nz = tuple(type(c) is not Zero for c in cts)
    new = tuple(_cond_transpose_branch(b, linear, ct_nz) for b in branches)
    outs = cond_p.bind(index, *[x for x in ops if not is_undefined(x)],
                       *[c for c in cts if type(c) is not Zero], branches=new)
    it = iter(outs)
    in_avals = branches[0].in_avals
    return [None] + [(next(it) if _inexact(a) else Zero(x.aval)) if lin else None
                     for x, a, lin in zip(ops, in_avals, linear)]


def _cond_batch(trace, vals, dims, *, branches):
    size, name = trace.axis_size, trace.axis_name
    index, *ops = vals
    index_dim, *op_dims = dims
    if index_dim is None:
        # The same branch for every element: a cond of the batched branches.
        ops = [x if d is None else moveaxis(x, d, 0) for x, d in zip(ops, op_dims)]
        in_bat = tuple(d is not None for d in op_dims)
        out_bat = [any(b) for b in zip(*[_batch(br, in_bat, size, name)[1] for br in branches])]
        new = tuple(_batch(br, in_bat, size, name, out_bat)[0] for br in branches)
        outs = cond_p.bind(index, *ops, branches=new)
        return outs, [0 if b else None for b in out_bat]
    # A different branch per element: run every branch and select (as jax). Each branch
    # sees its operands through a select with a stop_gradient copy, so reverse mode sends no
    # cotangent into the branches an element did not take (they may be NaN there).
    index = moveaxis(index, index_dim, 0)
    ops = [bdim_at(x, d, size, 0) for x, d in zip(ops, op_dims)]
    all_bat = (True,) * len(ops)
    branch_outs = []
    for i, br in enumerate(branches):
        batched, _ = _batch(br, all_bat, size, name, True)
        taken = eq(index, np.asarray(i, _INT32))
        ops_i = [select_n(_bcast_to(taken, x), stop_gradient(x), x) for x in ops]
        branch_outs.append(eval_jaxpr(batched.jaxpr, batched.consts, *ops_i))
    outs = [select_n(_bcast_to(index, cases[0]), *cases) for cases in zip(*branch_outs)]
    return outs, [0] * len(outs)


# ---- registration ---------------------------------------------------------------------------

cond_p.def_abstract_eval(_cond_abstract)
cond_p.def_lowering(_cond_lower)
cond_p.def_jvp(_cond_jvp)
cond_p.def_rule("partial_eval")(_cond_partial_eval)
cond_p.def_transpose(_cond_transpose)
cond_p.def_batch(_cond_batch)


# ---- checkify: every branch checkified, over an error holding every branch's error kinds ----

def _cond_checkify(error, enabled, index, *ops, branches):
    from minijax.lax.checkify import checkify_closed, hoist_branch_consts, merge_metadata
    err_vals, err_tree = tree_flatten(error)
    in_avals = [get_aval(x) for x in (*err_vals, *ops)]
    effects = set().union(*[checkify_closed(b, enabled, err_tree, in_avals)[2]
                            for b in branches])
    err_vals, err_tree = tree_flatten(error.add_placeholder_effects(effects))
    in_avals = [get_aval(x) for x in (*err_vals, *ops)]
    checked = [checkify_closed(b, enabled, err_tree, in_avals) for b in branches]
    new, consts = hoist_branch_consts([c for c, _, _ in checked])
    outs = cond_p.bind(index, *consts, *err_vals, *ops, branches=tuple(new))
    return merge_metadata([t for _, t, _ in checked], outs)


cond_p.def_rule("checkify")(_cond_checkify)
