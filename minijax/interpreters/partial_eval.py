"""``jax.interpreters.partial_eval``: the jaxpr utilities libraries use from it."""

from __future__ import annotations

from collections.abc import Sequence

from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, dce_jaxpr as _dce, used_invars
from minijax.core.trace import DebugInfo, JaxprTracer, trace_to_jaxpr
from minijax.transforms.ad import partial_eval_jaxpr

__all__ = ["DynamicJaxprTracer", "JaxprTracer", "PartialVal", "dce_jaxpr",
           "partial_eval_jaxpr", "trace_to_jaxpr_dynamic", "trace_to_jaxpr_nounits"]

DynamicJaxprTracer = JaxprTracer


class PartialVal(tuple):
    """A value known (``const``) or only by its aval (``unknown``), as jax's."""

    @classmethod
    def known(cls, const):
        return cls((None, const))

    @classmethod
    def unknown(cls, aval):
        return cls((aval, None))

    def is_known(self) -> bool:
        return self[0] is None

    def get_known(self):
        return self[1] if self[0] is None else None

    def get_aval(self):
        from minijax.core.trace import get_aval
        return get_aval(self[1]) if self[0] is None else self[0]


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool], instantiate=False):
    """``(jaxpr keeping only the used outputs and what they need, used inputs)``."""
    kept = Jaxpr(jaxpr.constvars, jaxpr.invars,
                 [v for v, u in zip(jaxpr.outvars, used_outputs) if u], jaxpr.eqns,
                 jaxpr.debug_info)
    kept = _dce(kept)
    used = used_invars(kept)
    if instantiate is True:
        used = [True] * len(used)
    elif instantiate:
        used = [u or i for u, i in zip(used, instantiate)]
    new = Jaxpr(kept.constvars, [v for v, u in zip(kept.invars, used) if u], kept.outvars,
                kept.eqns, kept.debug_info)
    return new, used


def trace_to_jaxpr_dynamic(fun, in_avals, debug_info=None, **kwargs):
    """Trace ``fun`` (a ``linear_util.WrappedFun``, called through its transformations,
    or a callable, flat in and out) at ``in_avals``: ``(jaxpr, out_avals, consts)``."""
    f = fun.call_wrapped if hasattr(fun, "call_wrapped") else fun
    jaxpr, consts, _ = trace_to_jaxpr(lambda *xs: (list(f(*xs)), None), list(in_avals),
                                      DebugInfo("trace_to_jaxpr", "fun", None))
    return jaxpr, jaxpr.out_avals, consts


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
    """Partially evaluate ``fun`` at ``pvals`` (``PartialVal``s, known or unknown), as
    jax's: ``(jaxpr, out_pvals, consts)``. An output that depends on no unknown input
    is known (``PartialVal.known(value)``, evaluated here, as flax's ``lazy_init`` and
    ``scan`` read them); the others are unknown, and ``jaxpr`` (over all the inputs)
    computes them. Unlike jax, the known part is traced abstractly first, so Python code
    in ``fun`` cannot read known values concretely."""
    from minijax.core.jaxpr import Literal
    from minijax.core.trace import eval_jaxpr
    avals = [p.get_aval() for p in pvals]
    jaxpr, out_avals, consts = trace_to_jaxpr_dynamic(fun, avals)
    unknown = {id(v) for v, p in zip(jaxpr.invars, pvals) if not p.is_known()}
    for eqn in jaxpr.eqns:
        if any(type(v) is not Literal and id(v) in unknown for v in eqn.invars):
            unknown.update(id(v) for v in eqn.outvars)
    out_unknown = [type(v) is not Literal and id(v) in unknown for v in jaxpr.outvars]
    if instantiate is True:
        out_unknown = [True] * len(out_unknown)
    elif instantiate:
        out_unknown = [u or bool(i) for u, i in zip(out_unknown, instantiate)]
    known_vals = []
    if not all(out_unknown):
        known = Jaxpr(jaxpr.constvars, jaxpr.invars,
                      [v for v, u in zip(jaxpr.outvars, out_unknown) if not u], jaxpr.eqns,
                      jaxpr.debug_info)
        known, used = dce_jaxpr(known, [True] * len(known.outvars))
        args = [p.get_known() for p, u in zip(pvals, used) if u]
        known_vals = iter(eval_jaxpr(known, consts, *args))
    out_pvals = [PartialVal.unknown(a) if u else PartialVal.known(next(known_vals))
                 for a, u in zip(out_avals, out_unknown)]
    unknown_jaxpr = Jaxpr(jaxpr.constvars, jaxpr.invars,
                          [v for v, u in zip(jaxpr.outvars, out_unknown) if u], jaxpr.eqns,
                          jaxpr.debug_info)
    closed = ClosedJaxpr(_dce(unknown_jaxpr), consts)
    return closed.jaxpr, out_pvals, closed.consts
