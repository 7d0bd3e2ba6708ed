"""``jax.extend.core``: primitives, jaxprs and the trace state, as jax exposes them."""

from __future__ import annotations

from collections.abc import Callable

from minijax.core import (AbstractValue, Atom, ShapedArray, Trace, Tracer,  # noqa: F401
                          concrete_or_error, eval_jaxpr, find_top_trace,
                          get_opaque_trace_state, jaxpr_as_fun, jaxprs_in_params, mapped_aval,
                          new_jaxpr_eqn, no_effects, primal_dtype_to_tangent_dtype,
                          subjaxprs, unmapped_aval, valid_jaxtype)
from minijax.core import trace as _trace
from minijax.core.effects import Effect
from minijax.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var  # noqa: F401
from minijax.core.trace import DebugInfo  # noqa: F401

__all__ = ["ClosedJaxpr", "DebugInfo", "DropVar", "Effect", "Effects", "Jaxpr", "JaxprEqn",
           "Literal", "Primitive", "Var", "concrete_or_error", "find_top_trace",
           "get_opaque_trace_state", "jaxpr_as_fun", "jaxprs_in_params", "mapped_aval",
           "new_jaxpr_eqn", "no_effects", "primal_dtype_to_tangent_dtype", "primitives",
           "subjaxprs", "unmapped_aval", "valid_jaxtype"]

Effects = frozenset


class Primitive(_trace.Primitive):
    """A primitive as a library defines it through jax's extension API::

        foo_p = Primitive("foo")
        foo_p.def_impl(...); foo_p.def_abstract_eval(...)
        ad.primitive_jvps[foo_p] = ...; batching.primitive_batchers[foo_p] = ...
        mlir.register_lowering(foo_p, mlir.lower_fun(...))

    It is minijax's ``Primitive`` (so minijax's traces bind it), not listed among
    minijax's own primitives."""

    _listed = False

    def def_effectful_abstract_eval(self, fn: Callable):
        """``fn(*avals, **params) -> (out aval(s), effects)``."""
        def abstract_eval(*avals, **params):
            return fn(*avals, **params)[0]
        self.abstract_eval = abstract_eval
        return fn

    def bind_with_trace(self, trace, args, params):
        return trace.process_primitive(self, tuple(args), params)

    def get_bind_params(self, params):
        return [], params


def __getattr__(name: str):
    if name == "primitives":  # imported on first use: it names lax's primitives
        from minijax.extend.core import primitives
        return primitives
    raise AttributeError(f"module 'minijax.extend.core' has no attribute {name!r}")
