"""``sparsify``: run a function written for dense arrays on BCOO arguments (mirrors
``jax.experimental.sparse.sparsify`` for the common operations).

The function is traced to a jaxpr with dense stand-ins of the sparse arguments'
shapes, and the jaxpr is then evaluated with each value either dense or a BCOO: an
equation with no sparse input runs as it is; one with a sparse input uses that
primitive's sparse rule below, and a primitive without one is a
``NotImplementedError`` (as in jax: densifying silently would defeat the purpose).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from minijax import numpy as jnp
from minijax.core.jaxpr import Literal
from minijax.experimental.sparse.bcoo import (BCOO, _add, _multiply, bcoo_dot_general,
                                              bcoo_reduce_sum, bcoo_transpose)
from minijax._pytree import tree_flatten, tree_unflatten

__all__ = ["sparsify"]

# elementwise functions with f(0) == 0: applied to the stored values only
_ZERO_PRESERVING = {"neg", "sin", "tan", "tanh", "sinh", "asin", "atan", "asinh", "atanh",
                    "abs", "sign", "expm1", "log1p", "sqrt", "real", "imag", "floor", "ceil",
                    "round"}
# elementwise functions that would turn the implicit zeros into nonzeros
_DENSIFYING = {"exp", "cos", "cosh", "log", "acos", "logistic", "exp2", "rsqrt", "erfc"}


def _is_sparse(x) -> bool:
    return isinstance(x, BCOO)


def _rule_dot_general(lhs, rhs, *, dimension_numbers, preferred_element_type=None, **_):
    return bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                            preferred_element_type=preferred_element_type)


def _rule_mul(a, b):
    if _is_sparse(a):
        return _multiply(a, b)
    return _multiply(b, a)


def _rule_add(a, b):
    return _add(a, b)


def _rule_sub(a, b):
    return _add(a, -b)


def _rule_transpose(x, *, permutation):
    return bcoo_transpose(x, permutation=permutation)


def _rule_reduce_sum(x, *, axes, **_):
    if len(set(axes)) == x.ndim:
        return jnp.sum(x.data)
    return bcoo_reduce_sum(x, axes=axes)


def _rule_convert_element_type(x, *, new_dtype, **_):
    return x.astype(new_dtype)


_RULES: dict[str, Callable] = {
    "dot_general": _rule_dot_general, "mul": _rule_mul, "add": _rule_add,
    "sub": _rule_sub, "transpose": _rule_transpose, "reduce_sum": _rule_reduce_sum,
    "convert_element_type": _rule_convert_element_type,
}


_CALLS = {"jit", "pjit", "closed_call", "core_call"}  # evaluated inline, sparse inside


def _apply(eqn, ins):
    name = eqn.primitive.name
    if name in _CALLS:
        inner = eqn.params.get("jaxpr", eqn.params.get("call_jaxpr"))
        if hasattr(inner, "consts"):
            return _eval(inner.jaxpr, inner.consts, ins)
        return _eval(inner, [], ins)
    rule = _RULES.get(name)
    if rule is not None:
        return rule(*ins, **eqn.params)
    if name in _ZERO_PRESERVING and len(ins) == 1:
        x = ins[0]
        return x._with_data(eqn.primitive.bind(x.data, **eqn.params))
    if name in _DENSIFYING:
        raise NotImplementedError(
            f"sparse rule for {name} is not implemented because it would result in dense "
            f"output. If this is your intent, use sparse.todense() to convert your "
            f"arguments to dense matrices.")
    raise NotImplementedError(f"sparse rule for {name} is not implemented.")


def _eval(jaxpr, consts, args):
    env = {}

    def read(v):
        return v.val if type(v) is Literal else env[v]

    for v, x in zip(jaxpr.constvars, consts, strict=True):
        env[v] = x
    for v, x in zip(jaxpr.invars, args, strict=True):
        env[v] = x
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        if any(_is_sparse(x) for x in ins):
            outs = _apply(eqn, ins)
            if not (eqn.primitive.multiple_results or eqn.primitive.name in _CALLS):
                outs = [outs]
        else:
            outs = eqn.primitive.bind(*ins, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        for v, x in zip(eqn.outvars, outs, strict=True):
            env[v] = x
    return [read(v) for v in jaxpr.outvars]


def sparsify(f: Callable, use_tracer: bool = False) -> Callable:
    """``f`` made to accept BCOO arrays wherever it takes arrays (in any pytree of its
    arguments); results computed from sparse values stay sparse where the operation
    keeps them sparse (``a * 2``, ``a.T``, summing some axes), and are dense otherwise
    (``a @ x``, a full sum)."""
    del use_tracer  # one implementation

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        from minijax.stages.api import make_jaxpr
        from minijax.core.aval import ShapeDtypeStruct
        leaves, tree = tree_flatten((args, kwargs), is_leaf=_is_sparse)
        specs = [ShapeDtypeStruct(x.shape, x.dtype) if _is_sparse(x) else x for x in leaves]

        def flat_fun(*flat):
            a, k = tree_unflatten(tree, flat)
            return f(*a, **k)
        closed, out_shape = make_jaxpr(flat_fun, return_shape=True)(*specs)
        outs = _eval(closed.jaxpr, closed.consts, leaves)
        return tree_unflatten(tree_flatten(out_shape)[1], outs)

    return wrapped
