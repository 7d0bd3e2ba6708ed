"""The autodiff interpreter: forward mode (jvp), partial evaluation and transposition,
from which ``minijax.api.ad`` builds the public ``jvp``, ``vjp``, ``grad`` and ``linearize``.

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
from minijax.core.primitives import add_any_p, broadcast_in_dim_p
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, dce_jaxpr
from minijax.core.trace import (DebugInfo, JaxprTrace, JaxprTracer, Primitive, Trace, Tracer,
                                leaked_tracer_error, trace_state, eval_jaxpr, get_aval, merge_ctx,
                                trace_to_jaxpr, use_trace, user_source)
from minijax.core.lru import weak_memo
from minijax.core.traceback_util import add_equation_source
from minijax.config import config

# ---- symbolic zeros and tangent types ------------------------------------------------------


class Zero:
    """A tangent or cotangent known to be zero (nothing is computed for it)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"

    @staticmethod
    def from_primal_value(val) -> Zero:
        """The zero tangent of primal ``val`` (as jax's ``Zero.from_primal_value``)."""
        return Zero(tangent_aval(get_aval(val)))

    def instantiate(self):
        return zeros_like_aval(self.aval)


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Tangents of integer and boolean values have dtype float0."""
    return aval.to_tangent_aval()


def zeros_like_aval(aval: ShapedArray):
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    zero = dtypes.scalar_const(0, aval.dtype, aval.weak_type)
    if not aval.shape:  # a scalar zero is a literal, as in jax's jaxprs
        return zero
    return broadcast_in_dim_p.bind(zero, broadcast_dimensions=(),
                                   shape=aval.shape, sharding=None)


def instantiate(t):
    return zeros_like_aval(t.aval) if type(t) is Zero else t


def add_tangents(a, b):
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    return add_any_p.bind(a, b)


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
        acc = None
        for fn, t in zip(partials, tangents):
            if fn is not None and type(t) is not Zero:
                ct = fn(t, *primals, **params)
                acc = ct if acc is None else add_tangents(acc, ct)
        return out, Zero(tangent_aval(get_aval(out))) if acc is None else acc
    prim.def_jvp(rule)


def defjvp2(prim: Primitive, *partials: Callable | None) -> None:
    """Like ``defjvp``, but each partial also gets the primal output:
    ``partial_i(t_i, ans, *primals, **params)`` (e.g. tanh' = 1 - ans**2)."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        acc = None
        for fn, t in zip(partials, tangents):
            if fn is not None and type(t) is not Zero:
                ct = fn(t, out, *primals, **params)
                acc = ct if acc is None else add_tangents(acc, ct)
        return out, Zero(tangent_aval(get_aval(out))) if acc is None else acc
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


def deflinear(prim: Primitive, transpose: Callable) -> None:
    """Register both rules of a primitive linear in its array operands: the jvp applies the
    primitive to the tangents, and ``transpose`` is its transpose rule."""
    defjvp_linear(prim)
    prim.def_transpose(transpose)


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
        aval = getattr(primal, "aval", None)  # get_aval's answer for arrays and tracers
        self.aval = get_aval(primal) if aval is None else aval
        self.primal = primal
        self.tangent = tangent

    def _short_repr(self) -> str:
        primal = _short(self.primal)
        t = self.tangent
        if isinstance(self._trace.parent, PartialEvalTrace):  # under grad/vjp/linearize
            return f"GradTracer(primal={primal}, typeof(tangent)={get_aval(t).str_short()})"
        return f"JVPTracer(primal={primal}, tangent={_short(t)})"


def _short(x) -> str:
    return x._short_repr() if isinstance(x, Tracer) else str(x)


class JVPTrace(Trace):
    description = "jvp"

    def __init__(self, parent: Trace):
        self.parent = parent
        self.alive = True

    def split(self, x):
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer) and not x._trace.alive:
            raise leaked_tracer_error(x)
        return x, Zero(tangent_aval(get_aval(x)))

    def process_primitive(self, prim, args, params):
        primals, tangents = [], []
        nonzero = False
        for x in args:
            if type(x) is JVPTracer and x._trace is self:
                primals.append(x.primal)
                t = x.tangent
                nonzero = nonzero or type(t) is not Zero
            else:
                p, t = self.split(x)
                primals.append(p)
            tangents.append(t)
        parent = self.parent
        prev = trace_state.trace
        trace_state.trace = parent
        try:
            if not nonzero:
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
            trace_state.trace = prev
        if prim.multiple_results:
            return [maybe_jvp_tracer(self, o, t) for o, t in zip(out, t_out)]
        return maybe_jvp_tracer(self, out, t_out)

    def concrete_value(self, tracer, what):
        p = tracer.primal
        return p.to_concrete(what) if isinstance(p, Tracer) else p


def maybe_jvp_tracer(trace: JVPTrace, primal, tangent):
    """An output of ``trace``: the primal itself where its tangent is a symbolic zero (or
    float0), as jax's, so it is no tracer of the jvp; a ``JVPTracer`` otherwise."""
    if type(tangent) is Zero or getattr(tangent, "dtype", None) == dtypes.float0:
        return primal
    return JVPTracer(trace, primal, tangent)


def _zero_if_float0(t):
    if type(t) is not Zero and getattr(t, "dtype", None) == dtypes.float0:
        return Zero(get_aval(t))
    return t


def jvp_flat(fun: Callable, primals: Sequence, tangents: Sequence):
    """Run ``fun(*primals)`` (flat list out) forward with tangents; returns (outs, out_tangents)
    with symbolic zeros left as ``Zero``."""
    trace = JVPTrace(trace_state.trace)
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


# ---- jvp of a jaxpr (for higher-order primitives) --------------------------------------------

def _trace_state() -> tuple:
    """What a jaxpr traced from another depends on besides that jaxpr (the key of the
    memos of jaxpr transforms)."""
    return config.trace_key, trace_state.ctx, trace_state.axis_env


def jvp_jaxpr(closed: ClosedJaxpr, nonzero: Sequence[bool],
              instantiate_out: bool | Sequence[bool] = True) -> tuple[ClosedJaxpr, list[bool]]:
    """A jaxpr ``(*primals, *nonzero_tangents) -> (*outs, *out_tangents)``.

    Returns the jaxpr and which output tangents are nonzero (all if instantiated).
    Memoized on ``closed`` (as jax's): the jvp of one jaxpr is traced once, so rules run
    while tracing it (custom_jvp/vjp rules) run once.
    """
    inst = tuple(instantiate_out) if isinstance(instantiate_out, (list, tuple)) \
        else bool(instantiate_out)
    jaxpr, out_nz = _jvp_jaxpr(closed, tuple(bool(n) for n in nonzero), inst)
    return jaxpr, list(out_nz)


@weak_memo(_trace_state)
def _jvp_jaxpr(closed: ClosedJaxpr, nonzero: tuple, instantiate_out) -> tuple:
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
    return _closed(jaxpr, consts), tuple(out_nz)


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
    # Keyed by the Var objects (hashed by identity, as id() would, without the calls).
    env: dict[Var, Any] = {}
    linear: set[Var] = set()
    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c
    for v, a in zip(jaxpr.invars, args):
        if type(a) is UndefinedPrimal:
            linear.add(v)
        else:
            env[v] = a

    outer, outer_source = trace_state.ctx, trace_state.source
    # The context each equation is re-emitted under: its own, on top of ours.
    plain = not outer.metadata and not outer.name_stack
    lin_eqns = []
    eqn = None
    try:
        for eqn in jaxpr.eqns:
            for a in eqn.invars:
                if type(a) is not Literal and a in linear:
                    lin_eqns.append(eqn)
                    for v in eqn.outvars:
                        linear.add(v)
                    break
            else:
                trace_state.ctx = eqn.ctx if plain else merge_ctx(outer, eqn.ctx)
                trace_state.source = eqn.source or outer_source
                out = eqn.primitive.bind(*[a.val if type(a) is Literal else env[a]
                                           for a in eqn.invars], **eqn.params)
                if eqn.primitive.multiple_results:
                    for v, o in zip(eqn.outvars, out):
                        env[v] = o
                else:
                    env[eqn.outvars[0]] = out
        eqn = None

        # Cotangents accumulated so far, by variable (a Zero is never stored).
        ct_env: dict[Var, Any] = {}

        def write_ct(v, ct):
            if ct is None or type(ct) is Zero or type(v) is Literal or v not in linear:
                return
            prev = ct_env.get(v)
            ct_env[v] = ct if prev is None else add_tangents(prev, ct)

        for v, ct in zip(jaxpr.outvars, cts_out):
            write_ct(v, ct)

        for eqn in reversed(lin_eqns):
            prim = eqn.primitive
            if prim.multiple_results:
                cts = [ct_env.pop(v, None) for v in eqn.outvars]
                if all(c is None for c in cts):
                    continue
                cts = [Zero(tangent_aval(v.aval)) if c is None else c
                       for c, v in zip(cts, eqn.outvars)]
            else:
                cts = ct_env.pop(eqn.outvars[0], None)
                if cts is None:
                    continue
            invals = [a.val if type(a) is Literal else
                      UndefinedPrimal(a.aval) if a in linear else env[a]
                      for a in eqn.invars]
            rule = prim.transpose
            if rule is None:
                raise NotImplementedError(
                    f"Transpose rule (for reverse-mode differentiation) for '{prim.name}' "
                    f"is not implemented")
            trace_state.ctx = eqn.ctx if plain else merge_ctx(outer, eqn.ctx)
            trace_state.source = eqn.source or outer_source
            ct_in = rule(cts, *invals, **eqn.params)
            for a, ct in zip(eqn.invars, ct_in):
                if ct is not None and type(ct) is not Zero and type(a) is not Literal \
                        and a in linear:
                    prev = ct_env.get(a)
                    ct_env[a] = ct if prev is None else add_tangents(prev, ct)
    except Exception as e:
        if eqn is not None:  # the user's line that made the equation that failed
            add_equation_source(e, eqn)
        raise
    finally:
        trace_state.ctx, trace_state.source = outer, outer_source
    out = []
    for v, a in zip(jaxpr.invars, args):
        if type(a) is UndefinedPrimal:
            ct = ct_env.get(v)
            out.append(Zero(a.aval) if ct is None else ct)
        else:
            out.append(None)
    return out


def transpose_jaxpr(closed: ClosedJaxpr, args: Sequence[Any], cts: Sequence[Any],
                    name: str) -> ClosedJaxpr:
    """A jaxpr ``(non-linear args..., cts...) -> cts of the linear args`` for a call of
    ``closed`` applied to ``args`` (``UndefinedPrimal`` for the linear ones); what the
    transpose rules of call-like primitives (jit, checkpoint) bind."""
    # memoized on ``closed``, the linear pattern and the avals (as jax's): a custom_vjp's
    # bwd inside is traced once however often the call is transposed
    in_avals = tuple(a.aval if is_undefined(a) else get_aval(a) for a in args)
    linear = tuple(is_undefined(a) for a in args)
    return _transpose_jaxpr(closed, linear, in_avals, tuple(get_aval(c) for c in cts), name)


@weak_memo(_trace_state)
def _transpose_jaxpr(closed: ClosedJaxpr, linear: tuple, in_avals: tuple, ct_avals: tuple,
                     name: str) -> ClosedJaxpr:
    n = len(linear) - sum(linear)

    def fun(*xs):
        it = iter(xs[:n])
        full = [UndefinedPrimal(a) if lin else next(it) for a, lin in zip(in_avals, linear)]
        out = backward_pass(closed.jaxpr, closed.consts, full, list(xs[n:]))
        return [instantiate(c) for c, lin in zip(out, linear) if lin], None

    avals = [a for a, lin in zip(in_avals, linear) if not lin] + list(ct_avals)
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
        n = len(args)  # one and two operands unrolled: a comprehension costs a frame
        if n == 1:
            x = args[0]
            unknown = [type(x) is JaxprTracer and x._trace is self]
        elif n == 2:
            x, y = args
            unknown = [type(x) is JaxprTracer and x._trace is self,
                       type(y) is JaxprTracer and y._trace is self]
        else:
            unknown = [type(x) is JaxprTracer and x._trace is self for x in args]
        if True not in unknown:
            parent = self.parent
            if type(parent) is JaxprTrace:  # grad under jit: recorded there, as bind would
                return JaxprTrace.process_primitive(parent, prim, args, params)
            prev = trace_state.trace
            trace_state.trace = self.parent
            try:
                return prim.bind(*args, **params)
            finally:
                trace_state.trace = prev
        rule = prim.rules.get("partial_eval")
        if rule is not None and not all(unknown):
            return self._split(prim, args, params, unknown, rule)
        return JaxprTrace.process_primitive(self, prim, args, params)

    def _split(self, prim, args, params, unknown, rule):
        """Use the primitive's partial-eval rule: run its known part now, record the rest."""
        avals = [get_aval(x) for x in args]
        invars = [Var(a) for a in avals]
        outvars = [Var(a) for a in prim.out_avals(avals, params)]
        eqn = JaxprEqn(prim, invars, outvars, params, trace_state.ctx, user_source(3))
        known_eqns, unknown_eqns, _ = rule(eqn, unknown)
        env: dict[int, Any] = {}
        own: dict[int, Any] = {}
        for v, x, u in zip(invars, args, unknown):
            (own if u else env)[id(v)] = x._var if u else x
        prev = trace_state.trace
        trace_state.trace = self.parent
        try:
            for e in known_eqns:
                ins = [a.val if type(a) is Literal else env[id(a)] for a in e.invars]
                out = e.primitive.bind(*ins, **e.params)
                for v, o in zip(e.outvars, out if e.primitive.multiple_results else [out]):
                    env[id(v)] = o
        finally:
            trace_state.trace = prev
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
    pe = PartialEvalTrace(trace_state.trace, DebugInfo("linearize", name, None))
    t_in = [pe.new_arg(tangent_aval(get_aval(p))) for p in primals]
    jt = JVPTrace(pe)
    # as jax: an integer or boolean input (float0 tangent) is not perturbed, its tangent a
    # symbolic zero (the linear jaxpr still takes it)
    tracers = [JVPTracer(jt, p, Zero(t.aval) if t.aval.dtype == dtypes.float0 else t)
               for p, t in zip(primals, t_in)]
    prev = trace_state.trace
    trace_state.trace = jt
    try:
        outs = flat_fun(*tracers)
        jt.alive = False
        pairs = [jt.split(o) for o in outs]
        trace_state.trace = pe
        touts = [instantiate(t) for _, t in pairs]
        lin, residuals = pe.finish(touts)
    finally:
        trace_state.trace = prev
        jt.alive = pe.alive = False
    primal_outs = [p for p, _ in pairs]
    for p in primal_outs:
        if isinstance(p, JaxprTracer) and p._trace is pe:
            raise AssertionError("internal: a primal output depends on tangents")
    return primal_outs, lin, residuals
