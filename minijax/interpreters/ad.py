"""``jax.interpreters.ad``: jvp and transpose rules of primitives, registered on minijax's.

A jvp rule is ``rule(primals, tangents, **params) -> (primal_out, tangent_out)`` with
symbolic zero tangents as ``Zero``; a transpose rule is ``rule(ct, *args, **params)``
returning one cotangent per argument, with the linear arguments given as
``UndefinedPrimal`` — the conventions of jax and of minijax's ``transforms.ad`` alike.
"""

from __future__ import annotations

from collections.abc import Callable

from minijax.core.primitives import add_any_p
from minijax.core.trace import Primitive
from minijax.interpreters._registry import RuleRegistry
from minijax.transforms.ad import (JVPTrace, JVPTracer, UndefinedPrimal, Zero, add_tangents,
                                   defjvp, defjvp2, deflinear as _deflinear, instantiate,
                                   is_undefined as is_undefined_primal, zeros_like_aval)

__all__ = ["JVPTrace", "JVPTracer", "UndefinedPrimal", "Zero", "add_jaxvals", "add_jaxvals_p",
           "add_tangents", "defbilinear", "defjvp", "defjvp2", "deflinear", "deflinear2",
           "get_primitive_transpose", "instantiate_zeros", "is_undefined_primal",
           "linearize", "primitive_jvps", "primitive_transposes", "zeros_like_aval"]

def _jvp_with_tuples(prim: Primitive, rule: Callable) -> Callable:
    # jax gives a jvp rule its primals and tangents as tuples
    def jvp(primals, tangents, **params):
        return rule(tuple(primals), tuple(tangents), **params)
    return jvp


primitive_jvps = RuleRegistry("jvp", _jvp_with_tuples)
primitive_transposes = RuleRegistry("transpose")
add_jaxvals_p = add_any_p


def add_jaxvals(x, y):
    return add_any_p.bind(x, y)


def instantiate_zeros(tangent):
    """``tangent`` with a symbolic ``Zero`` made an array of zeros."""
    return instantiate(tangent)


def get_primitive_transpose(p: Primitive) -> Callable:
    return primitive_transposes[p]


def deflinear(primitive: Primitive, transpose_rule: Callable) -> None:
    """A primitive linear in all operands; ``transpose_rule(ct, **params)`` returns the
    cotangents of all operands (jax's convention)."""
    def transpose(ct, *args, **params):
        if type(ct) is Zero:
            return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
        return transpose_rule(ct, **params)
    _deflinear(primitive, transpose)


def deflinear2(primitive: Primitive, transpose_rule: Callable) -> None:
    """Like ``deflinear``, with ``transpose_rule(ct, *args, **params)``."""
    def transpose(ct, *args, **params):
        if type(ct) is Zero:
            return [Zero(a.aval) if is_undefined_primal(a) else None for a in args]
        return transpose_rule(ct, *args, **params)
    _deflinear(primitive, transpose)


def defbilinear(prim: Primitive, lhs_rule: Callable, rhs_rule: Callable) -> None:
    """A primitive linear in each of its two operands: the jvp is the sum of the primitive
    applied with each tangent, and ``lhs_rule(ct, x, y, **params)`` /
    ``rhs_rule(ct, x, y, **params)`` transpose it for the undefined operand."""
    defjvp(prim, lambda g, x, y, **p: prim.bind(g, y, **p),
           lambda g, x, y, **p: prim.bind(x, g, **p))

    def transpose(ct, x, y, **params):
        if type(ct) is Zero:
            return [Zero(a.aval) if is_undefined_primal(a) else None for a in (x, y)]
        if is_undefined_primal(x):
            return [lhs_rule(ct, x, y, **params), None]
        return [None, rhs_rule(ct, x, y, **params)]
    prim.def_transpose(transpose)


def linearize(fun, *primals, **kwargs):
    from minijax.api.ad import linearize as _linearize
    return _linearize(fun, *primals, **kwargs)
