"""The names and docstrings that the public transformations give the callables they
return: as in jax, ``grad(loss)`` is still called ``loss`` (same ``__name__``,
``__qualname__``, ``__module__``, ``__wrapped__``), with a docstring that says what the
transformation made of it. ``jit(grad(loss))`` therefore lowers to ``module @jit_loss``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

from minijax.stages.common import wraps

__all__ = ["GRAD_DOC", "JACOBIAN_DOC", "VALUE_AND_GRAD_DOC", "index_or_tuple", "vmap_doc", "wraps"]

GRAD_DOC = ("Gradient of {fun} with respect to positional argument(s) {argnums}. Takes the "
            "same arguments as {fun} but returns the gradient, which has the same shape as "
            "the arguments at positions {argnums}.")
VALUE_AND_GRAD_DOC = (
    "Value and gradient of {fun} with respect to positional argument(s) {argnums}. Takes "
    "the same arguments as {fun} but returns a two-element tuple where the first element "
    "is the value of {fun} and the second element is the gradient, which has the same "
    "shape as the arguments at positions {argnums}.")
JACOBIAN_DOC = ("Jacobian of {fun} with respect to positional argument(s) {argnums}. Takes "
                "the same arguments as {fun} but returns the jacobian of the output with "
                "respect to the arguments at positions {argnums}.")


def vmap_doc(fun: Callable) -> str:
    """``vmap``'s docstring template, with ``fun``'s own documentation appended."""
    doc = ("Vectorized version of {fun}. Takes similar arguments as {fun} but with "
           "additional array axes over which {fun} is mapped.")
    own = getattr(fun, "__doc__", None)
    if own:
        doc += "\n\nOriginal documentation:\n\n" + own
    return doc


def index_or_tuple(argnums):
    """``argnums`` as jax shows it in a docstring: an int, or a tuple of ints (a list
    becomes a tuple); anything else is left for the transformation to reject."""
    try:
        return operator.index(argnums)
    except TypeError:
        try:
            return tuple(map(operator.index, argnums))
        except TypeError:
            return argnums
