"""Automatic differentiation: forward mode (jvp) and reverse mode (vjp, grad).

Forward mode runs the function under a ``JVPTrace``: each tracer carries a
primal and a tangent, and each primitive's ``jvp`` rule computes the output
tangent. Tangents that are known to be zero are the symbolic ``Zero``.

Reverse mode, as in JAX, is jvp + partial evaluation + transposition:

1. trace the jvp of ``f`` into a jaxpr ``(primals, tangents) -> (outs, out_tangents)``;
2. split it (``partial_eval_jaxpr``) into a *known* jaxpr computing the
   outputs and the residuals from the primals, and a *linear* jaxpr computing
   the output tangents from the residuals and the tangents;
3. run the known jaxpr now; the pullback runs the linear jaxpr backwards
   (``backward_pass``), calling each linear primitive's ``transpose`` rule.

Every equation emitted by a transform is emitted under the metadata context
(``eqn.ctx``) of the equation it came from, so XLA metadata follows ops into
their derivatives.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, dce_jaxpr
from minijax.core.trace import (DebugInfo, JaxprTrace, JaxprTracer, Primitive, Trace, Tracer,
                                _leaked, _state, eval_jaxpr, get_aval, merge_ctx,
                                trace_to_jaxpr, use_trace, user_source)
from minijax.core.traceback_util import add_equation_source, api_boundary
from minijax.tree_util import (Partial, keystr, tree_flatten, tree_flatten_with_path,
                                tree_unflatten)

# ---- symbolic zeros and tangent types ------------------------------------------------------


class Zero:
    """A tangent or cotangent known to be zero (nothing is computed for it)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Tangents of integer and boolean values have dtype float0."""
    if dtypes.is_inexact(aval.dtype):
        return aval
    return ShapedArray(aval.shape, dtypes.float0, False)


def zeros_like_aval(aval: ShapedArray):
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    from minijax import lax
    return lax.broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ())


def instantiate(t):
    return zeros_like_aval(t.aval) if type(t) is Zero else t


def add_tangents(a, b):
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    from minijax.lax.ad_util import add_any
    return add_any(a, b)


class UndefinedPrimal:
    """A linear input of a transposed equation (its value is what we solve for)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x) -> bool:
    return type(x) is UndefinedPrimal


# ---- rule helpers used by primitive files -------------------------------------------------

def defjvp(prim: Primitive, *partials: Callable | None) -> None:
    """jvp from one function per operand: ``partial_i(t_i, *primals, **params)`` gives that
    operand's contribution to the output tangent (None: the operand is not differentiable)."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        acc = Zero(tangent_aval(get_aval(out)))
        for fn, t in zip(partials, tangents):
            if fn is not None and type(t) is not Zero:
                acc = add_tangents(acc, fn(t, *primals, **params))
        return out, acc
    prim.def_jvp(rule)


def defjvp2(prim: Primitive, *partials: Callable | None) -> None:
    """Like ``defjvp``, but each partial also gets the primal output:
    ``partial_i(t_i, ans, *primals, **params)`` (e.g. tanh' = 1 - ans**2)."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        acc = Zero(tangent_aval(get_aval(out)))
        for fn, t in zip(partials, tangents):
            if fn is not None and type(t) is not Zero:
                acc = add_tangents(acc, fn(t, out, *primals, **params))
        return out, acc
    prim.def_jvp(rule)


def defjvp_linear(prim: Primitive) -> None:
    """jvp of a primitive linear in all operands: apply it to the tangents."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if all(type(t) is Zero for t in tangents):
            return out, (Zero(tangent_aval(get_aval(out))) if not prim.multiple_results
                         else [Zero(tangent_aval(get_aval(o))) for o in out])
        return out, prim.bind(*[instantiate(t) for t in tangents], **params)
    prim.def_jvp(rule)


def defjvp_zero(prim: Primitive) -> None:
    """The output does not depend differentiably on the inputs (comparisons, iota...)."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if prim.multiple_results:
            return out, [Zero(tangent_aval(get_aval(o))) for o in out]
        return out, Zero(tangent_aval(get_aval(out)))
    prim.def_jvp(rule)


# ---- forward mode --------------------------------------------------------------------------

class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace: JVPTrace, primal, tangent):
        self._trace = trace
        self.aval = get_aval(primal)
        self.primal = primal
        self.tangent = tangent


class JVPTrace(Trace):
    description = "jvp"

    def __init__(self, parent: Trace):
        self.parent = parent
        self.alive = True

    def split(self, x):
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer) and not x._trace.alive:
            raise _leaked(x)
        return x, Zero(tangent_aval(get_aval(x)))

    def process_primitive(self, prim, args, params):
        primals, tangents = [], []
        for x in args:
            p, t = self.split(x)
            primals.append(p)
            tangents.append(t)
        parent = self.parent
        prev = _state.trace
        _state.trace = parent
        try:
            if all(type(t) is Zero for t in tangents):
                return prim.bind(*primals, **params)
            rule = prim.jvp
            if rule is None:
                out_avals = prim.out_avals([get_aval(p) for p in primals], params)
                if all(not dtypes.is_inexact(a.dtype) for a in out_avals):
                    return prim.bind(*primals, **params)
                raise NotImplementedError(
                    f"Differentiation rule for '{prim.name}' is not implemented")
            out, t_out = rule(primals, tangents, **params)
        finally:
            _state.trace = prev
        if prim.multiple_results:
            return [JVPTracer(self, o, t) for o, t in zip(out, t_out)]
        return JVPTracer(self, out, t_out)

    def concrete_value(self, tracer, what):
        p = tracer.primal
        return p.to_concrete(what) if isinstance(p, Tracer) else p


def _check_tangent(p, t, i):
    pa, ta = get_aval(p), get_aval(t)
    want = tangent_aval(pa)
    if pa.shape != ta.shape:
        raise ValueError(f"jvp called with different primal and tangent shapes at position "
                         f"{i}: primal {pa.str_short()}, tangent {ta.str_short()}")
    if ta.dtype != want.dtype:
        raise TypeError(
            f"primal and tangent arguments to jvp do not match at position {i}: dtypes must "
            f"be equal, or for an integer/boolean primal the tangent dtype must be float0; "
            f"got primal dtype {pa.dtype.name} and tangent dtype {ta.dtype.name}")


def _zero_if_float0(t):
    if type(t) is not Zero and getattr(t, "dtype", None) == dtypes.float0:
        return Zero(get_aval(t))
    return t


def jvp_flat(fun: Callable, primals: Sequence, tangents: Sequence):
    """Run ``fun(*primals)`` (flat list out) forward with tangents; returns (outs, out_tangents)
    with symbolic zeros left as ``Zero``."""
    trace = JVPTrace(_state.trace)
    tracers = [JVPTracer(trace, p, _zero_if_float0(t)) for p, t in zip(primals, tangents)]
    with use_trace(trace):
        outs = fun(*tracers)
    trace.alive = False
    res_p, res_t = [], []
    for o in outs:
        p, t = trace.split(o)
        res_p.append(p)
        res_t.append(t)
    return res_p, res_t


@api_boundary
def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """``(fun(*primals), J fun(primals) @ tangents)``; mirrors ``jax.jvp``."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    p_flat, p_tree = tree_flatten(tuple(primals))
    t_flat, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(f"primal and tangent arguments to jvp must have the same tree "
                        f"structure; got {p_tree} and {t_tree}")
    for i, (p, t) in enumerate(zip(p_flat, t_flat)):
        _check_tangent(p, t, i)
    aux_box = []

    def flat_fun(*xs):
        out = fun(*tree_unflatten(p_tree, xs))
        if has_aux:
            out, aux = out
            aux_box.append(aux)
        leaves, tree = tree_flatten(out)
        aux_box.insert(0, tree)
        return leaves

    outs, touts = jvp_flat(flat_fun, p_flat, t_flat)
    out_tree = aux_box[0]
    outs = [_as_array(o) for o in outs]
    touts = [_as_array(instantiate(t)) for t in touts]
    res = (tree_unflatten(out_tree, outs), tree_unflatten(out_tree, touts))
    if has_aux:
        return res + (aux_box[1],)
    return res


# ---- jvp of a jaxpr (for higher-order primitives) --------------------------------------------

def jvp_jaxpr(closed: ClosedJaxpr, nonzero: Sequence[bool],
              instantiate_out: bool | Sequence[bool] = True) -> tuple[ClosedJaxpr, list[bool]]:
    """A jaxpr ``(*primals, *nonzero_tangents) -> (*outs, *out_tangents)``.

    Returns the jaxpr and which output tangents are nonzero (all if instantiated).
    """
    in_avals = closed.in_avals
    t_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzero) if nz]
    n = len(in_avals)
    out_nz: list[bool] = []

    def fun(*args):
        primals, ts = list(args[:n]), iter(args[n:])
        tangents = [next(ts) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzero)]
        outs, touts = jvp_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                               primals, tangents)
        inst = instantiate_out if isinstance(instantiate_out, (list, tuple)) else \
            [instantiate_out] * len(touts)
        touts = [instantiate(t) if i else t for t, i in zip(touts, inst)]
        out_nz.extend(type(t) is not Zero for t in touts)
        return outs + [t for t in touts if type(t) is not Zero], None

    jaxpr, consts, _ = trace_to_jaxpr(fun, list(in_avals) + t_avals,
                                      DebugInfo("jvp", "jaxpr", None))
    return _closed(jaxpr, consts), out_nz


def _closed(jaxpr: Jaxpr, consts: list) -> ClosedJaxpr:
    """Close a jaxpr traced from another; consts that are tracers become inputs upstream."""
    if any(isinstance(c, Tracer) for c in consts):
        raise AssertionError("internal: unexpected tracer constants in a transformed jaxpr")
    return ClosedJaxpr(jaxpr, consts)


# ---- partial evaluation --------------------------------------------------------------------

class PartialEvalResult:
    """``known``: (known inputs) -> (known outputs, residuals);
    ``unknown``: (residuals, unknown inputs) -> (unknown outputs)."""

    __slots__ = ("known", "unknown", "out_unknown", "num_res")

    def __init__(self, known, unknown, out_unknown, num_res):
        self.known = known
        self.unknown = unknown
        self.out_unknown = out_unknown
        self.num_res = num_res


def partial_eval_jaxpr(jaxpr: Jaxpr, in_unknown: Sequence[bool],
                       out_force_unknown: Sequence[bool] | None = None) -> PartialEvalResult:
    """Split ``jaxpr`` by which inputs are unknown. Constvars are known.

    Equations whose inputs are all known go to the known jaxpr; the others go to
    the unknown jaxpr, reading the known values they need as residuals.
    ``out_force_unknown[i]`` makes output i come from the unknown side even when
    it is computable from known inputs (it is then passed through as a residual).
    """
    unknown_ids: set[int] = {id(v) for v, u in zip(jaxpr.invars, in_unknown) if u}
    known_eqns: list[JaxprEqn] = []
    unknown_eqns: list[JaxprEqn] = []
    residuals: dict[int, Var] = {}

    def is_unknown(a) -> bool:
        return type(a) is not Literal and id(a) in unknown_ids

    def need_residual(a) -> None:
        if type(a) is not Literal and id(a) not in unknown_ids and id(a) not in residuals:
            residuals[id(a)] = a

    for eqn in jaxpr.eqns:
        unk = [is_unknown(a) for a in eqn.invars]
        if not any(unk):
            known_eqns.append(eqn)
            continue
        rule = eqn.primitive.rules.get("partial_eval")
        if rule is not None:
            k_eqns, u_eqns, res_vars = rule(eqn, unk)
            known_eqns.extend(k_eqns)
            unknown_eqns.extend(u_eqns)
            for r in res_vars:
                residuals.setdefault(id(r), r)
            for e in u_eqns:
                for v in e.outvars:
                    unknown_ids.add(id(v))
            continue
        unknown_eqns.append(eqn)
        for a, u in zip(eqn.invars, unk):
            if not u:
                need_residual(a)
        for v in eqn.outvars:
            unknown_ids.add(id(v))

    force = out_force_unknown or [False] * len(jaxpr.outvars)
    out_unknown = [is_unknown(a) or f for a, f in zip(jaxpr.outvars, force)]
    known_outs = [a for a, u in zip(jaxpr.outvars, out_unknown) if not u]
    for a, u in zip(jaxpr.outvars, out_unknown):
        if u and not is_unknown(a):
            need_residual(a)
    # Residuals that are inputs of the known side still go through as residuals.
    res_list = [v for v in residuals.values()]
    # Literals among residuals are impossible (Literals are never recorded).
    known = dce_jaxpr(Jaxpr(jaxpr.constvars,
                            [v for v, u in zip(jaxpr.invars, in_unknown) if not u],
                            known_outs + res_list, known_eqns, jaxpr.debug_info))
    # The unknown side gets fresh binders for residuals (same Var objects are fine: the
    # two jaxprs are separate scopes).
    unknown = dce_jaxpr(Jaxpr([], res_list + [v for v, u in zip(jaxpr.invars, in_unknown) if u],
                              [a for a, u in zip(jaxpr.outvars, out_unknown) if u],
                              unknown_eqns, jaxpr.debug_info))
    return PartialEvalResult(known, unknown, out_unknown, len(res_list))


# ---- transposition ----------------------------------------------------------------------------

def backward_pass(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any],
                  cts_out: Sequence[Any]) -> list[Any]:
    """Transpose ``jaxpr`` w.r.t. the inputs given as ``UndefinedPrimal`` in ``args``.

    Equations that do not depend on linear inputs are evaluated forward first.
    Returns cotangents for each input (``Zero`` where none flowed, None for
    non-linear inputs).
    """
    env: dict[int, Any] = {}
    linear: set[int] = set()
    for v, c in zip(jaxpr.constvars, consts):
        env[id(v)] = c
    for v, a in zip(jaxpr.invars, args):
        if is_undefined(a):
            linear.add(id(v))
        else:
            env[id(v)] = a

    def read(a):
        return a.val if type(a) is Literal else env[id(a)]

    outer = _state.ctx
    lin_eqns = []
    eqn = None
    try:
        for eqn in jaxpr.eqns:
            if any(type(a) is not Literal and id(a) in linear for a in eqn.invars):
                lin_eqns.append(eqn)
                for v in eqn.outvars:
                    linear.add(id(v))
                continue
            _state.ctx = merge_ctx(outer, eqn.ctx)
            out = eqn.primitive.bind(*[read(a) for a in eqn.invars], **eqn.params)
            if eqn.primitive.multiple_results:
                for v, o in zip(eqn.outvars, out):
                    env[id(v)] = o
            else:
                env[id(eqn.outvars[0])] = out
        eqn = None

        ct_env: dict[int, Any] = {}

        def write_ct(v, ct):
            if ct is None or type(ct) is Zero or type(v) is Literal or id(v) not in linear:
                return
            prev = ct_env.get(id(v))
            ct_env[id(v)] = ct if prev is None else add_tangents(prev, ct)

        for v, ct in zip(jaxpr.outvars, cts_out):
            write_ct(v, ct)

        for eqn in reversed(lin_eqns):
            prim = eqn.primitive
            cts = [ct_env.pop(id(v), None) for v in eqn.outvars]
            cts = [Zero(tangent_aval(v.aval)) if c is None else c for c, v in
                   zip(cts, eqn.outvars)]
            if all(type(c) is Zero for c in cts):
                continue
            invals = [UndefinedPrimal(a.aval) if (type(a) is not Literal and id(a) in linear)
                      else read(a) for a in eqn.invars]
            rule = prim.transpose
            if rule is None:
                raise NotImplementedError(
                    f"Transpose rule (for reverse-mode differentiation) for '{prim.name}' "
                    f"is not implemented")
            _state.ctx = merge_ctx(outer, eqn.ctx)
            ct_in = rule(cts if prim.multiple_results else cts[0], *invals, **eqn.params)
            for a, ct in zip(eqn.invars, ct_in):
                write_ct(a, ct)
    except Exception as e:
        if eqn is not None:  # the user's line that made the equation that failed
            add_equation_source(e, eqn)
        raise
    finally:
        _state.ctx = outer
    out = []
    for v, a in zip(jaxpr.invars, args):
        if is_undefined(a):
            ct = ct_env.get(id(v))
            out.append(Zero(a.aval) if ct is None else ct)
        else:
            out.append(None)
    return out


def transpose_jaxpr(closed: ClosedJaxpr, args: Sequence[Any], cts: Sequence[Any],
                    name: str) -> ClosedJaxpr:
    """A jaxpr ``(non-linear args..., cts...) -> cts of the linear args`` for a call of
    ``closed`` applied to ``args`` (``UndefinedPrimal`` for the linear ones); what the
    transpose rules of call-like primitives (jit, checkpoint) bind."""
    linear = [is_undefined(a) for a in args]
    nonlin = [a for a in args if not is_undefined(a)]
    n = len(nonlin)

    def fun(*xs):
        it = iter(xs[:n])
        full = [a if lin else next(it) for a, lin in zip(args, linear)]
        out = backward_pass(closed.jaxpr, closed.consts, full, list(xs[n:]))
        return [instantiate(c) for c, lin in zip(out, linear) if lin], None

    avals = [get_aval(a) for a in nonlin] + [get_aval(c) for c in cts]
    jaxpr, consts, _ = trace_to_jaxpr(fun, avals, DebugInfo("transpose", name, None))
    return ClosedJaxpr(jaxpr, consts)


# ---- linearize, vjp, grad -------------------------------------------------------------------

class PartialEvalTrace(JaxprTrace):
    """A jaxpr trace that records only what depends on its own (unknown) tracers.

    A primitive applied to known values only (concrete arrays, or tracers of an
    enclosing trace) runs in the parent trace right away; one with an unknown
    input is recorded, its known inputs becoming constants (the residuals). Under
    linearization the tangents are the unknowns, so primal values stay concrete
    and Python control flow on them works, as in jax.
    """

    def process_primitive(self, prim, args, params):
        unknown = [type(x) is JaxprTracer and x._trace is self for x in args]
        if not any(unknown):
            prev = _state.trace
            _state.trace = self.parent
            try:
                return prim.bind(*args, **params)
            finally:
                _state.trace = prev
        rule = prim.rules.get("partial_eval")
        if rule is not None and not all(unknown):
            return self._split(prim, args, params, unknown, rule)
        return JaxprTrace.process_primitive(self, prim, args, params)

    def _split(self, prim, args, params, unknown, rule):
        """Use the primitive's partial-eval rule: run its known part now, record the rest."""
        avals = [get_aval(x) for x in args]
        invars = [Var(a) for a in avals]
        outvars = [Var(a) for a in prim.out_avals(avals, params)]
        eqn = JaxprEqn(prim, invars, outvars, params, _state.ctx, user_source(3))
        known_eqns, unknown_eqns, _ = rule(eqn, unknown)
        env: dict[int, Any] = {}
        own: dict[int, Any] = {}
        for v, x, u in zip(invars, args, unknown):
            (own if u else env)[id(v)] = x._var if u else x
        prev = _state.trace
        _state.trace = self.parent
        try:
            for e in known_eqns:
                ins = [a.val if type(a) is Literal else env[id(a)] for a in e.invars]
                out = e.primitive.bind(*ins, **e.params)
                for v, o in zip(e.outvars, out if e.primitive.multiple_results else [out]):
                    env[id(v)] = o
        finally:
            _state.trace = prev
        for e in unknown_eqns:
            ins = []
            for a in e.invars:
                if type(a) is Literal or id(a) in own:
                    ins.append(a if type(a) is Literal else own[id(a)])
                elif id(a) in env:
                    ins.append(self.to_atom(env[id(a)]))
                else:
                    ins.append(a)  # produced by an earlier unknown equation
            self.eqns.append(JaxprEqn(e.primitive, ins, e.outvars, e.params, e.ctx, e.source))
        outs = [env[id(v)] if id(v) in env else JaxprTracer(self, v, eqn.source)
                for v in outvars]
        return outs if prim.multiple_results else outs[0]


def linearize_flat(flat_fun: Callable, primals: Sequence, name: str = "fun"):
    """Run ``flat_fun`` at ``primals`` and record its linearization.

    Returns ``(outs, linear_jaxpr, residuals)``: ``linear_jaxpr`` has the residuals
    as constvars and maps input tangents to output tangents.
    """
    pe = PartialEvalTrace(_state.trace, DebugInfo("linearize", name, None))
    t_in = [pe.new_arg(tangent_aval(get_aval(p))) for p in primals]
    jt = JVPTrace(pe)
    tracers = [JVPTracer(jt, p, t) for p, t in zip(primals, t_in)]
    prev = _state.trace
    _state.trace = jt
    try:
        outs = flat_fun(*tracers)
        jt.alive = False
        pairs = [jt.split(o) for o in outs]
        _state.trace = pe
        touts = [instantiate(t) for _, t in pairs]
        lin, residuals = pe.finish(touts)
    finally:
        _state.trace = prev
        jt.alive = pe.alive = False
    primal_outs = [p for p, _ in pairs]
    for p in primal_outs:
        if isinstance(p, JaxprTracer) and p._trace is pe:
            raise AssertionError("internal: a primal output depends on tangents")
    return primal_outs, lin, residuals


@api_boundary
def vjp(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), vjp_fn)`` where ``vjp_fn(ct)`` pulls a cotangent back; mirrors
    ``jax.vjp``."""
    p_flat, p_tree = tree_flatten(primals)
    box = []

    def flat_fun(*xs):
        out = fun(*tree_unflatten(p_tree, xs))
        aux_leaves = []
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("has_aux=True requires the function to return a pair "
                                "(output, aux)")
            out, aux = out
            aux_leaves, aux_tree = tree_flatten(aux)
            box.append(aux_tree)
        leaves, tree = tree_flatten(out)
        box.insert(0, (tree, len(leaves)))
        # aux values are extra (non-differentiated) outputs, so they come out concrete.
        return leaves + aux_leaves

    outs, lin, residuals = linearize_flat(flat_fun, p_flat, getattr(fun, "__name__", "fun"))
    out_tree, n_out = box[0]
    outs, aux_vals = outs[:n_out], outs[n_out:]
    # The pullback is a Partial whose leaves are the residuals, so it is a pytree that can
    # be returned from jit or used as custom_vjp residuals (as in jax).
    spec = _PullbackSpec(lin, p_tree, out_tree, [get_aval(o) for o in outs],
                         [tangent_aval(get_aval(p)) for p in p_flat],
                         [tangent_aval(get_aval(a)) for a in aux_vals])
    vjp_fn = Partial(spec, *residuals)
    primal_out = tree_unflatten(out_tree, [_as_array(o) for o in outs])
    if has_aux:
        return primal_out, vjp_fn, tree_unflatten(box[1], [_as_array(a) for a in aux_vals])
    return primal_out, vjp_fn


class _PullbackSpec:
    """The static part of a vjp pullback: the linear jaxpr and the trees."""

    def __init__(self, lin, p_tree, out_tree, out_avals, in_ct_avals, aux_avals=()):
        self.lin = lin
        self.p_tree = p_tree
        self.out_tree = out_tree
        self.out_avals = out_avals
        self.in_ct_avals = in_ct_avals
        self.aux_avals = list(aux_avals)

    @api_boundary
    def __call__(self, *args):
        n_res = len(self.lin.constvars)
        residuals, cts = args[:n_res], args[n_res:]
        if len(cts) != 1:
            raise TypeError(f"the function returned by vjp takes a single argument, the "
                            f"cotangent of the differentiated function's output (a pytree "
                            f"like {self.out_tree}), but was called with {len(cts)} arguments")
        ct_flat, ct_tree = tree_flatten(cts[0])
        if ct_tree != self.out_tree:
            raise ValueError(f"vjp function expected a cotangent with tree structure "
                             f"{self.out_tree} (the function's output), got {ct_tree}")
        for i, (c, a) in enumerate(zip(ct_flat, self.out_avals)):
            ca, expected = get_aval(c), tangent_aval(a)
            if ca.shape != a.shape or (ca.dtype != expected.dtype
                                       and expected.dtype != dtypes.float0):
                raise ValueError(
                    f"unexpected type for the cotangent {_leaf_name(cts[0], i)} given to the "
                    f"vjp function: got {ca.str_short()}, but expected "
                    f"{expected.str_short()} because the corresponding output of the "
                    f"function has type {a.str_short()}")
        args = [UndefinedPrimal(a) for a in self.in_ct_avals]
        cts_all = list(ct_flat) + [Zero(a) for a in self.aux_avals]
        cts_in = backward_pass(self.lin, residuals, args, cts_all)
        cts_in = [_as_array(instantiate(c)) for c in cts_in]
        return tuple(tree_unflatten(self.p_tree, cts_in))


def _leaf_name(tree, i: int) -> str:
    """How to name leaf ``i`` of ``tree`` to a user: its key path (``ct['v'][0]``)."""
    path = tree_flatten_with_path(tree)[0][i][0]
    return "ct" + keystr(path) if path else "ct (the whole cotangent)"


def _as_array(x):
    """Values handed back to users are minijax arrays, never NumPy or Python values."""
    if type(x) in (int, float, complex, bool):
        from minijax.runtime.transfer import device_put
        return device_put(x)
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype != dtypes.float0:
        from minijax.runtime.transfer import device_put
        return device_put(x)
    return x


@api_boundary
def linearize(fun: Callable, *primals):
    """``(fun(*primals), f_jvp)`` with ``f_jvp(*tangents)`` the linearized function."""
    p_flat, p_tree = tree_flatten(primals)
    box = []

    def flat_fun(*xs):
        leaves, tree = tree_flatten(fun(*tree_unflatten(p_tree, xs)))
        box.append(tree)
        return leaves

    outs, lin, residuals = linearize_flat(flat_fun, p_flat)

    def f_jvp(*tangents):
        t_flat, t_tree = tree_flatten(tangents)
        if t_tree != p_tree:
            raise TypeError(f"linearized function expected tangents with tree {p_tree}, "
                            f"got {t_tree}")
        out = eval_jaxpr(lin, residuals, *t_flat)
        return tree_unflatten(box[0], out)

    return tree_unflatten(box[0], outs), api_boundary(f_jvp)


def _argnums_tuple(argnums, nargs: int, error: type[Exception] = TypeError) -> tuple[int, ...]:
    """``argnums`` as non-negative indices into ``nargs`` positional arguments; ``error``
    when one is out of range (jax: TypeError from grad, ValueError from jacfwd/jacrev)."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        if not isinstance(a, int) or not -nargs <= a < nargs:
            raise error(f"differentiating with respect to argnums={argnums} requires at "
                        f"least {max(nums) + 1} positional arguments, got {nargs}")
    return tuple(a % nargs for a in nums)


def check_input_dtype(name: str, x, holomorphic: bool, allow_int: bool) -> None:
    """Raise jax's TypeError when ``x`` cannot be an input differentiated by reverse mode.

    ``grad``, ``value_and_grad`` and ``jacrev`` take real and complex inputs, integer and
    boolean ones only with ``allow_int``, and with ``holomorphic=True`` complex ones only.
    The gradient of a real-valued ``f`` at a complex ``z = x + 1j * y`` is, as in jax, the
    vjp of the cotangent 1.0: ``df/dx - 1j * df/dy`` (``2 * conj(z)`` for ``abs(z) ** 2``).
    """
    dt = get_aval(x).dtype
    if holomorphic and not dtypes.is_complex(dt):
        raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                        f"but got {dt.name}.")
    if not dtypes.is_inexact(dt) and not allow_int:
        raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that "
                        f"is a sub-dtype of np.inexact), but got {dt.name}. If you want to "
                        f"use Boolean- or integer-valued inputs, use vjp or set allow_int "
                        f"to True.")


def check_output_dtype(name: str, x, holomorphic: bool) -> None:
    """Raise jax's TypeError when ``x`` cannot be an output differentiated by reverse mode:
    real outputs only, complex ones only (and always) with ``holomorphic=True``."""
    dt = get_aval(x).dtype
    if holomorphic:
        if not dtypes.is_complex(dt):
            raise TypeError(f"{name} with holomorphic=True requires outputs with complex "
                            f"dtype, but got {dt.name}.")
    elif dtypes.is_complex(dt):
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {dt.name}. For holomorphic "
                        f"differentiation, pass holomorphic=True. For differentiation of "
                        f"non-holomorphic functions involving complex outputs, use vjp "
                        f"directly.")
    elif not dtypes.is_float(dt):
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {dt.name}. For "
                        f"differentiation of functions with integer outputs, use vjp "
                        f"directly.")


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """``(fun(*args), grad(fun)(*args))`` in one pass; mirrors ``jax.value_and_grad``."""
    def vg(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args))
        dyn = [args[i] for i in nums]
        for leaf in tree_flatten(dyn)[0]:
            check_input_dtype("grad", leaf, holomorphic, allow_int)

        def partial_fun(*dyn_args):
            full = list(args)
            for i, a in zip(nums, dyn_args):
                full[i] = a
            return fun(*full, **kwargs)

        res = vjp(partial_fun, *dyn, has_aux=has_aux)
        out, pullback = res[0], res[1]
        oa = get_aval(out) if not isinstance(out, (tuple, list, dict)) else None
        if oa is None or oa.shape != ():
            shape = oa.shape if oa is not None else type(out).__name__
            raise TypeError(f"Gradient only defined for scalar-output functions. Output had "
                            f"shape: {shape}.")
        check_output_dtype("grad", out, holomorphic)
        g = pullback(np.ones((), oa.dtype))
        g = g[0] if isinstance(argnums, int) else tuple(g)
        if has_aux:
            return (out, res[2]), g
        return out, g

    vg.__name__ = f"value_and_grad({getattr(fun, '__name__', 'fun')})"
    vg.__wrapped__ = fun  # so signature-based argument names follow the user's function
    return api_boundary(vg)


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The gradient of scalar-valued ``fun``; mirrors ``jax.grad``.

    ``fun`` returns a real scalar, or with ``holomorphic=True`` (complex inputs only) a
    complex one, whose gradient is then the complex derivative ``f'(z)``. A real ``fun`` of
    a complex ``z = x + 1j * y`` has, as in jax, the gradient ``df/dx - 1j * df/dy``.
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    def g(*args, **kwargs):
        res = vg(*args, **kwargs)
        if has_aux:
            (_, aux), gr = res
            return gr, aux
        return res[1]

    g.__name__ = f"grad({getattr(fun, '__name__', 'fun')})"
    g.__wrapped__ = fun
    return api_boundary(g)
