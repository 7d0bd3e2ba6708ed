"""``minijax.custom_derivatives``: jax.custom_derivatives' names.

The functions live in ``minijax.api.custom_derivatives``; this module gathers them, with
the small helper types jax exposes here (``SymbolicZero``, ``zero_from_primal``,
``CustomVJPPrimal``). ``linear_call`` and ``custom_vjp_primal_tree_values`` are not
implemented and say so.
"""

from __future__ import annotations

from typing import Any

from minijax.api.custom_derivatives import (CustomVJPPrimal, SymbolicZero, closure_convert,
                                            custom_gradient, custom_jvp, custom_jvp_call_p,
                                            custom_vjp, custom_vjp_call_p)
from minijax.core.trace import get_aval
from minijax.transforms.ad import tangent_aval, zeros_like_aval
from minijax._pytree import tree_map

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient",
           "custom_jvp", "custom_jvp_call_p", "custom_vjp", "custom_vjp_call_p",
           "custom_vjp_primal_tree_values", "linear_call", "zero_from_primal"]


def zero_from_primal(val: Any, symbolic_zeros: bool = False):
    """The zero tangent of each leaf of ``val``: a ``SymbolicZero`` with
    ``symbolic_zeros=True``, else an array of zeros."""
    def zero(x):
        aval = tangent_aval(get_aval(x))
        return SymbolicZero(aval) if symbolic_zeros else zeros_like_aval(aval)
    return tree_map(zero, val)


def linear_call(fun, fun_transpose, residual_args, linear_args):
    raise NotImplementedError("minijax does not implement custom_derivatives.linear_call; "
                              "a custom_vjp function expresses the same transpose")


def custom_vjp_primal_tree_values(tree):
    raise NotImplementedError("minijax does not implement "
                              "custom_derivatives.custom_vjp_primal_tree_values (custom_vjp "
                              "rules with symbolic zeros)")
