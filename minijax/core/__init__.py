"""minijax's core: avals, jaxprs, tracing and ``Primitive.bind``.

The package also carries the public names of ``jax.core`` (and those of jax's that are
still reachable there, or in ``jax.extend.core``), on minijax's own objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from minijax.core import dtypes as _dtypes
from minijax.core.aval import AbstractValue, ShapedArray
from minijax.core.effects import NO_EFFECTS as no_effects, Effect  # noqa: F401
from minijax.core import shape_poly as _shape_poly
from minijax.core.errors import ConcretizationTypeError
from minijax.core.shape_poly import InconclusiveDimensionOperation, max_dim, min_dim  # noqa: F401
from minijax.core.jaxpr import (ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var,
                                 jaxprs_in_params)
from minijax.core.trace import (EVAL_TRACE, Primitive, Trace, Tracer, current_ctx,  # noqa: F401
                                ensure_compile_time_eval, find_top_trace, get_aval,
                                get_opaque_trace_state, use_trace)
from minijax.core.trace import eval_jaxpr as _eval_jaxpr

__all__ = ["AbstractValue", "Atom", "ParamDict", "ShapedArray", "Trace", "Tracer", "Value",
           "ensure_compile_time_eval", "eval_context", "eval_jaxpr", "max_dim", "min_dim"]

Atom = Var | Literal
Value = Any
ParamDict = dict[str, Any]
Effects = frozenset


def eval_jaxpr(jaxpr: Jaxpr, consts, *args, propagate_source_info: bool = True) -> list:
    """Evaluate ``jaxpr`` on ``args`` by binding its equations at the current trace."""
    return _eval_jaxpr(jaxpr, consts, *args)


def jaxpr_as_fun(closed: ClosedJaxpr) -> Callable[..., list]:
    """``closed`` as a function of its inputs returning the list of its outputs."""
    def fun(*args):
        return _eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return fun


def eval_context():
    """A context in which operations run eagerly at the top level (not traced)."""
    return use_trace(EVAL_TRACE)


def dimension_as_value(d):
    """A dimension size (an int or a symbolic dimension) as a value to compute with."""
    if isinstance(d, _shape_poly.DimExpr):
        return d.dimension_as_value()
    return d


def is_symbolic_dim(d) -> bool:
    return isinstance(d, _shape_poly.DimExpr)


def is_constant_dim(d) -> bool:
    return _shape_poly.is_constant_dim(d)


def is_constant_shape(s) -> bool:
    return all(_shape_poly.is_constant_dim(d) for d in s)


def concrete_or_error(force: Callable | None, val, context: str = ""):
    """``force(val)`` for a concrete ``val``; a tracer without a concrete value raises
    ``ConcretizationTypeError`` (mentioning ``context``)."""
    force = force or (lambda x: x)
    if isinstance(val, Tracer):
        try:
            val = val.to_concrete("concrete_or_error")
        except ConcretizationTypeError as e:
            raise ConcretizationTypeError(f"{e}\n{context}" if context else str(e)) from None
    return force(val)


def subjaxprs(jaxpr: Jaxpr) -> Iterator[Jaxpr]:
    for eqn in jaxpr.eqns:
        yield from jaxprs_in_params(eqn.params)


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
    """``aval`` without its mapped ``axis`` (of ``size``)."""
    if axis is None:
        return aval
    shape = list(aval.shape)
    del shape[axis]
    return aval.update(shape=tuple(shape))


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray,
                  explicit_mesh_axis=None) -> ShapedArray:
    """``aval`` with a mapped axis of ``size`` inserted at ``axis``."""
    if axis is None:
        return aval
    shape = list(aval.shape)
    shape.insert(axis, size)
    return aval.update(shape=tuple(shape))


def primal_dtype_to_tangent_dtype(dtype):
    return dtype if _dtypes.is_inexact(dtype) else _dtypes.float0


def valid_jaxtype(x) -> bool:
    try:
        get_aval(x)
    except TypeError:
        return False
    return True


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=None, source_info=None,
                  ctx=None) -> JaxprEqn:
    return JaxprEqn(primitive, list(invars), list(outvars), params,
                    current_ctx() if ctx is None else ctx, source_info)


def is_concrete(x) -> bool:
    if not isinstance(x, Tracer):
        return True
    try:
        x.to_concrete("is_concrete")
    except ConcretizationTypeError:
        return False
    return True
