"""The ``jit`` primitive: a call of a closed jaxpr, as nested ``jit`` appears in a trace.

Lowered to ``func.call`` of a private function (or inlined with ``inline=True``);
run eagerly through the same pipeline and executable cache as ``jit`` calls
(``stages.stages.run_jit_equation``).
"""

from __future__ import annotations

from minijax.core.jaxpr import ClosedJaxpr, JaxprEqn, SameNames, Var
from minijax.core.lru import weak_memo
from minijax.core.primitives import jit_p
from minijax.lax._util import type_error
from minijax.lowering import tokens
from minijax.transforms.ad import (Zero, _trace_state, instantiate, is_undefined, jvp_jaxpr,
                                   partial_eval_jaxpr, tangent_aval, transpose_jaxpr)
from minijax.transforms.batching import batch_jaxpr


@jit_p.def_abstract_eval
def _jit_abstract(*avals, jaxpr: ClosedJaxpr, name: str, donated_invars=(), inline=False,
        call_metadata=()):
    expected = jaxpr.in_avals
    if len(avals) != len(expected) or any(
            a.shape != e.shape or a.dtype != e.dtype for a, e in zip(avals, expected)):
        raise type_error("jit", f"arguments do not match the jaxpr of {name} "
                         f"(expected {', '.join(e.str_short() for e in expected)})", *avals)
    return jaxpr.out_avals


# Printed like jax: jit[name=f jaxpr={...}] (the other params are internal).
jit_p.pp_params = lambda params: {"name": params["name"], "jaxpr": SameNames(params["jaxpr"])}


def _symbol(name: str) -> str:
    # The function's own name, as jax names it (printed quoted unless an identifier); an
    # empty one, which jax prints as an invalid symbol, gets a placeholder.
    return name or "fn"


@jit_p.def_lowering
def _jit_lower(ctx, *args, jaxpr: ClosedJaxpr, name: str, donated_invars=(), inline=False,
        call_metadata=()):
    if inline or tokens.threads_token(jaxpr):  # ordered effects: in the caller's token order
        return ctx.lower_jaxpr(jaxpr, args)
    fn = ctx.lower_function(jaxpr, _symbol(name), _loc_name(name, call_metadata))
    if call_metadata:
        # Attributes of the call op itself (e.g. MUST_FUSE), not of the ops inside.
        return ctx.call(fn, args, frontend=dict(call_metadata))
    return ctx.call(fn, args)


def _loc_name(name: str, call_metadata) -> str:
    return name if call_metadata else f"jit({name})"


jit_p.loc_name = lambda params: _loc_name(params["name"], params.get("call_metadata"))


@jit_p.def_impl
def _jit_impl(*args, jaxpr: ClosedJaxpr, name: str, donated_invars=(), inline=False,
        call_metadata=()):
    # Traced -> Lowered -> Compiled, through the executable cache (stages/cache.py)
    from minijax.stages.stages import run_jit_equation
    return run_jit_equation(args, jaxpr, name)


# ---- differentiation rules ---------------------------------------------------------------
# jvp: a jit of the jvp jaxpr; partial eval: split the inner jaxpr into a known call and an
# unknown call joined by residuals; transpose: a jit of the transposed inner jaxpr.


def _jit_jvp(primals, tangents, *, jaxpr, name, donated_invars=(), inline=False,
        call_metadata=()):
    nonzero = [type(t) is not Zero for t in tangents]
    jvp_closed, out_nz = jvp_jaxpr(jaxpr, nonzero, instantiate_out=False)
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    outs = jit_p.bind(*primals, *nz_tangents, jaxpr=jvp_closed, name=name,
                      donated_invars=(False,) * (len(primals) + len(nz_tangents)), inline=inline,
                      call_metadata=call_metadata)
    n = len(jaxpr.out_avals)
    t_iter = iter(outs[n:])
    touts = [next(t_iter) if nz else Zero(tangent_aval(a))
             for a, nz in zip(jaxpr.out_avals, out_nz)]
    return outs[:n], touts


@weak_memo(_trace_state)
def _split_jaxpr(closed: ClosedJaxpr, unknowns: tuple) -> tuple:
    """``(known jaxpr, unknown jaxpr, residual avals, out_unknown)``, memoized on
    ``closed`` so that a call split twice gives the same jaxprs (and their transposes,
    memoized in turn, are traced once)."""
    pe = partial_eval_jaxpr(closed.jaxpr, list(unknowns))
    n_known_out = len(pe.known.outvars) - pe.num_res
    res_avals = tuple(v.aval for v in pe.known.outvars[n_known_out:])
    return (ClosedJaxpr(pe.known, closed.consts), ClosedJaxpr(pe.unknown, []), res_avals,
            tuple(pe.out_unknown))


def _jit_partial_eval(eqn, unknowns):
    p = eqn.params
    known_jaxpr, unknown_jaxpr, res_avals, out_unknown = _split_jaxpr(
        p["jaxpr"], tuple(bool(u) for u in unknowns))
    res_vars = [Var(a) for a in res_avals]
    known_outvars = [v for v, u in zip(eqn.outvars, out_unknown) if not u]
    unknown_outvars = [v for v, u in zip(eqn.outvars, out_unknown) if u]
    known_in = [a for a, u in zip(eqn.invars, unknowns) if not u]
    unknown_in = [a for a, u in zip(eqn.invars, unknowns) if u]
    known = JaxprEqn(jit_p, known_in, known_outvars + res_vars,
                     dict(p, jaxpr=known_jaxpr,
                          donated_invars=(False,) * len(known_in)), eqn.ctx, eqn.source)
    unknown = JaxprEqn(jit_p, res_vars + unknown_in, unknown_outvars,
                       dict(p, jaxpr=unknown_jaxpr,
                            donated_invars=(False,) * (len(res_vars) + len(unknown_in))),
                       eqn.ctx, eqn.source)
    return [known], [unknown], res_vars


def _jit_transpose(cts, *args, jaxpr, name, donated_invars=(), inline=False,
                   call_metadata=()):
    nonlin = [a for a in args if not is_undefined(a)]
    cts = [instantiate(c) for c in cts]
    transposed = transpose_jaxpr(jaxpr, args, cts, name)
    outs = jit_p.bind(*nonlin, *cts, jaxpr=transposed,
                      name=f"transpose({name})" if not call_metadata else name,
                      donated_invars=(False,) * (len(nonlin) + len(cts)), inline=inline,
                      call_metadata=call_metadata)
    it = iter(outs)
    return [next(it) if is_undefined(a) else None for a in args]


jit_p.def_jvp(_jit_jvp)
jit_p.def_transpose(_jit_transpose)
jit_p.def_rule("partial_eval")(_jit_partial_eval)


# ---- batching: a jit of the batched jaxpr --------------------------------------------------


def _jit_batch(trace, vals, dims, *, jaxpr, name, donated_invars=(), inline=False,
        call_metadata=()):
    batched, out_dims = batch_jaxpr(jaxpr, dims, trace.axis_size, trace.axis_name)
    outs = jit_p.bind(*vals, jaxpr=batched, name=name, donated_invars=donated_invars,
                      inline=inline, call_metadata=call_metadata)
    return outs, out_dims


jit_p.def_batch(_jit_batch)


# ---- checkify: a jit of the checkified jaxpr, the error's leaves in front ------------------


def _jit_checkify(error, enabled, *args, jaxpr, name, donated_invars=(), inline=False,
                  call_metadata=()):
    from minijax.core.trace import get_aval
    from minijax.lax.checkify import checkify_closed
    from minijax._pytree import tree_flatten, tree_unflatten
    err_vals, err_tree = tree_flatten(error)
    in_avals = [get_aval(x) for x in (*err_vals, *args)]
    checked, out_tree, _ = checkify_closed(jaxpr, enabled, err_tree, in_avals)
    donated = (False,) * len(err_vals) + tuple(donated_invars or (False,) * len(args))
    outs = jit_p.bind(*err_vals, *args, jaxpr=checked, name=name, donated_invars=donated,
                      inline=inline, call_metadata=call_metadata)
    return tree_unflatten(out_tree, outs)


jit_p.def_rule("checkify")(_jit_checkify)
