"""Running a kernel's jaxpr with its refs as ordinary values ("discharging" state).

``run_state(jaxpr, consts, args, kctx)`` evaluates a jaxpr under the current
trace; each ref input is given its current *value*, ``get`` becomes indexing
of that value, ``swap`` replaces it (``dynamic_update_slice``), and the final
values of the refs are returned with the outputs. Control flow whose bodies
close over refs (``lax.fori_loop``/``scan``, ``while_loop``, ``cond`` and hence
``pl.when``) is re-emitted with those refs' values threaded through as extra
loop-carried values / branch operands and results: the rules below, one per
control-flow primitive, are registered in ``DISCHARGE_RULES``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from minijax.core.jaxpr import Jaxpr, Literal
from minijax.core.trace import trace_state, merge_ctx
from minijax.experimental.pallas._core import is_ref_aval
from minijax.experimental.pallas._primitives import Indexer, get_p, program_id_p, swap_p
from minijax.lax import control_flow as cf
from minijax.lax.shape import reshape
from minijax.lax.slicing import dynamic_slice, dynamic_update_slice, slice as lax_slice


class KernelContext(NamedTuple):
    """The grid point being run: its program ids (all grid dimensions, vmapped first)."""

    program_ids: tuple
    num_vmapped: int


def _is_ref(v) -> bool:
    return is_ref_aval(v.aval)


def read_ref(value, indexer: Indexer, dyn: Sequence):
    """``value[indexer]`` with dynamic starts ``dyn``."""
    if indexer.is_full():
        return value
    starts, sizes, strides, it = [], [], [], iter(dyn)
    for e in indexer.entries:
        start = next(it) if e[1] is None else e[1]
        starts.append(start)
        if e[0] == "index":
            sizes.append(1)
            strides.append(1)
        else:
            sizes.append((e[2] - 1) * e[3] + 1 if e[2] else 0)
            strides.append(e[3])
    x = dynamic_slice(value, starts, sizes, allow_negative_indices=False)
    if any(s != 1 for s in strides):
        x = lax_slice(x, [0] * len(sizes), sizes, strides)
    if x.shape != indexer.result_shape:
        x = reshape(x, indexer.result_shape)
    return x


def write_ref(value, indexer: Indexer, dyn: Sequence, update):
    """``value`` with ``value[indexer] = update``."""
    if indexer.is_full():
        return update
    starts, window, it = [], [], iter(dyn)
    for e in indexer.entries:
        starts.append(next(it) if e[1] is None else e[1])
        window.append(1 if e[0] == "index" else e[2])
    if any(e[0] == "slice" and e[3] != 1 and e[2] > 1 for e in indexer.entries):
        # A strided write: read the spanned window, scatter the update into it.
        span = [1 if e[0] == "index" else ((e[2] - 1) * e[3] + 1 if e[2] else 0)
                for e in indexer.entries]
        win = dynamic_slice(value, starts, span, allow_negative_indices=False)
        pos = tuple(slice(None, None, 1 if e[0] == "index" else e[3]) for e in indexer.entries)
        update = win.at[pos].set(reshape(update, tuple(window)))
    elif tuple(window) != update.shape:
        update = reshape(update, tuple(window))
    return dynamic_update_slice(value, update, starts, allow_negative_indices=False)


def run_state(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any],
              kctx: KernelContext) -> tuple[list, list]:
    """Evaluate ``jaxpr`` with refs as values; returns ``(outputs, final ref values)`` (one
    per ref input, in order)."""
    env: dict[int, Any] = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[id(v)] = x
    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x

    def read(a):
        return a.val if type(a) is Literal else env[id(a)]

    outer = trace_state.ctx
    try:
        for eqn in jaxpr.eqns:
            trace_state.ctx = merge_ctx(outer, eqn.ctx)
            prim = eqn.primitive
            ins = [read(a) for a in eqn.invars]
            if prim is get_p:
                env[id(eqn.outvars[0])] = read_ref(ins[0], eqn.params["indexer"], ins[1:])
            elif prim is swap_p:
                ix = eqn.params["indexer"]
                env[id(eqn.outvars[0])] = read_ref(ins[0], ix, ins[2:])
                env[id(eqn.invars[0])] = write_ref(ins[0], ix, ins[2:], ins[1])
            elif prim is program_id_p:
                env[id(eqn.outvars[0])] = kctx.program_ids[kctx.num_vmapped
                                                           + eqn.params["axis"]]
            elif any(_is_ref(v) for v in eqn.invars if type(v) is not Literal):
                rule = DISCHARGE_RULES.get(prim)
                if rule is None:
                    raise NotImplementedError(
                        f"pallas: {prim.name} cannot use a kernel ref (refs work in "
                        f"lax.fori_loop/scan/while_loop/cond and pl.when bodies); read the ref "
                        f"into a value first and pass the value")
                outs, new_refs = rule(kctx, eqn, ins)
                for v, o in zip(eqn.outvars, outs):
                    env[id(v)] = o
                env.update(new_refs)
            else:
                out = prim.bind(*ins, **eqn.params)
                if prim.multiple_results:
                    for v, o in zip(eqn.outvars, out):
                        env[id(v)] = o
                else:
                    env[id(eqn.outvars[0])] = out
    finally:
        trace_state.ctx = outer
    outs = [read(a) for a in jaxpr.outvars]
    return outs, [env[id(v)] for v in jaxpr.invars if _is_ref(v)]


# ---- control flow whose bodies use refs ------------------------------------------------------

def _ref_slots(invars: Sequence, positions: Sequence[int]) -> tuple[list, dict]:
    """The distinct ref variables among ``invars[positions]`` and each one's slot."""
    refs, slot = [], {}
    for i in positions:
        v = invars[i]
        if type(v) is not Literal and _is_ref(v) and id(v) not in slot:
            slot[id(v)] = len(refs)
            refs.append(v)
    return refs, slot


def _no_carried_refs(api: str, invars: Sequence, positions: Sequence[int]) -> None:
    if any(type(invars[i]) is not Literal and _is_ref(invars[i]) for i in positions):
        raise NotImplementedError(f"pallas: a kernel ref cannot be part of a {api} carry or "
                                  "operand; close over it in the body instead")


def _args_with_refs(invars: Sequence, vals: Sequence, positions: Sequence[int],
                    slot: dict, refs: Sequence) -> list:
    """``vals[positions]`` with each ref replaced by its current value from ``refs``."""
    out = []
    for i in positions:
        v = invars[i]
        out.append(refs[slot[id(v)]] if type(v) is not Literal and id(v) in slot else vals[i])
    return out


def _updated(refs: list, invars: Sequence, positions: Sequence[int], slot: dict,
             new_vals: Sequence) -> list:
    """``refs`` with the body's final ref values (in the body's ref-input order) stored."""
    refs = list(refs)
    it = iter(new_vals)
    for i in positions:
        v = invars[i]
        if type(v) is not Literal and _is_ref(v):
            refs[slot[id(v)]] = next(it)
    return refs


def _scan_discharge(kctx, eqn, vals):
    p = eqn.params
    nc, nk = p["num_consts"], p["num_carry"]
    body = p["jaxpr"]
    invars = eqn.invars
    _no_carried_refs("scan/fori_loop", invars, range(nc, len(invars)))
    ref_vars, slot = _ref_slots(invars, range(nc))
    carry, xs = list(vals[nc:nc + nk]), list(vals[nc + nk:])

    def step(state, x):
        refs, c = state
        args = _args_with_refs(invars, vals, range(nc), slot, refs)
        outs, new = run_state(body.jaxpr, body.consts, [*args, *c, *x], kctx)
        return (_updated(refs, invars, range(nc), slot, new), outs[:nk]), outs[nk:]

    init = [vals[invars.index(v)] for v in ref_vars]
    (refs, carry_out), ys = cf.scan(step, (init, carry), xs, length=p["length"],
                                    reverse=p["reverse"], unroll=p["unroll"])
    return [*carry_out, *ys], {id(v): r for v, r in zip(ref_vars, refs)}


def _while_discharge(kctx, eqn, vals):
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cj, bj = p["cond_jaxpr"], p["body_jaxpr"]
    invars = eqn.invars
    _no_carried_refs("while_loop", invars, range(cn + bn, len(invars)))
    ref_vars, slot = _ref_slots(invars, range(cn + bn))
    cpos, bpos = range(cn), range(cn, cn + bn)

    def cond_fun(state):
        refs, c = state
        args = _args_with_refs(invars, vals, cpos, slot, refs)
        outs, _ = run_state(cj.jaxpr, cj.consts, [*args, *c], kctx)
        return outs[0]

    def body_fun(state):
        refs, c = state
        args = _args_with_refs(invars, vals, bpos, slot, refs)
        outs, new = run_state(bj.jaxpr, bj.consts, [*args, *c], kctx)
        return _updated(refs, invars, bpos, slot, new), outs

    init = [vals[invars.index(v)] for v in ref_vars]
    refs, carry_out = cf.while_loop(cond_fun, body_fun, (init, list(vals[cn + bn:])))
    return carry_out, {id(v): r for v, r in zip(ref_vars, refs)}


def _cond_discharge(kctx, eqn, vals):
    branches = eqn.params["branches"]
    invars = eqn.invars
    pos = range(1, len(invars))
    ref_vars, slot = _ref_slots(invars, pos)

    def make(branch) -> Callable:
        def run(refs, ops):
            full = list(vals)
            for i, o in zip([i for i in pos if id(invars[i]) not in slot], ops):
                full[i] = o
            args = _args_with_refs(invars, full, pos, slot, refs)
            outs, new = run_state(branch.jaxpr, branch.consts, args, kctx)
            return outs, _updated(refs, invars, pos, slot, new)
        return run

    init = [vals[invars.index(v)] for v in ref_vars]
    ops = [vals[i] for i in pos
           if type(invars[i]) is Literal or id(invars[i]) not in slot]
    index = vals[0]
    if isinstance(index, (int, np.integer, np.ndarray)):  # a concrete branch index
        outs, refs = make(branches[int(np.clip(index, 0, len(branches) - 1))])(init, ops)
    else:
        outs, refs = cf.switch(index, [make(b) for b in branches], init, ops)
    return outs, {id(v): r for v, r in zip(ref_vars, refs)}


DISCHARGE_RULES: dict = {
    cf.scan_p: _scan_discharge,
    cf.while_p: _while_discharge,
    cf.cond_p: _cond_discharge,
}
