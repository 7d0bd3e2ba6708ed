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
    """Trace ``fun`` (a ``linear_util.WrappedFun`` or a callable, flat in and out) at
    ``in_avals``: ``(jaxpr, out_avals, consts)``."""
    f = getattr(fun, "f", fun)
    jaxpr, consts, _ = trace_to_jaxpr(lambda *xs: (list(f(*xs)), None), list(in_avals),
                                      DebugInfo("trace_to_jaxpr", "fun", None))
    return jaxpr, jaxpr.out_avals, consts


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
    """Trace ``fun`` with ``pvals`` (``PartialVal``s, all unknown): ``(jaxpr, out_pvals,
    consts)``."""
    avals = [p.get_aval() for p in pvals]
    jaxpr, out_avals, consts = trace_to_jaxpr_dynamic(fun, avals)
    closed = ClosedJaxpr(jaxpr, consts)
    return closed.jaxpr, [PartialVal.unknown(a) for a in out_avals], closed.consts
