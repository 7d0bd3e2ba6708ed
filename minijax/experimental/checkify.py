"""minijax.experimental.checkify: run-time checks as functional error values, as
``jax.experimental.checkify``.

``checkify(f, errors=...)`` returns a function giving ``(error, out)``; ``error.get()``
is the first failure's message (or None), ``error.throw()`` raises it as
``JaxRuntimeError``. The checks are the user's ``check``/``debug_check`` calls
(``user_checks``) and, when enabled, automatic ones: NaN outputs (``nan_checks``),
division by zero (``div_checks``), out-of-bounds indices (``index_checks``). A checkified
function can be jitted, vmapped (the error then holds one failure per mapped element),
differentiated and used in control flow::

    >>> def f(x):
    ...     checkify.check(x > 0, "{x} needs to be positive!", x=x)
    ...     return 1 / x
    >>> err, out = minijax.jit(checkify.checkify(f))(-3.)
    >>> err.get()
    '-3.0 needs to be positive! (`check` failed)'

The machinery (the ``check`` primitive, the error value and the interpreter) is
``minijax/lax/checkify.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

from minijax.core.trace import DebugInfo, trace_to_jaxpr
from minijax.core.traceback_util import api_boundary
from minijax.lax.checkify import (Error, FailedCheckError, JaxException, JaxRuntimeError,
                                  all_checks, assert_func, automatic_checks, bind_error,
                                  check_error_value, checkify_jaxpr_flat, div_checks,
                                  float_checks, get_traceback, index_checks, init_error,
                                  nan_checks, user_checks)
from minijax.lax.unary import bitwise_not
from minijax.runtime.basearray import Array
from minijax._pytree import tree_flatten, tree_leaves, tree_unflatten

__all__ = ["Error", "ErrorCategory", "JaxRuntimeError", "all_checks", "automatic_checks",
           "check", "check_error", "checkify", "debug_check", "div_checks", "float_checks",
           "index_checks", "init_error", "nan_checks", "user_checks"]

ErrorCategory = type[JaxException]
Out = TypeVar("Out")

def checkify(f: Callable[..., Out], errors: frozenset = user_checks
             ) -> Callable[..., tuple[Error, Out]]:
    """Functionalize ``check`` calls in ``f`` and add the automatic checks in ``errors``.

    The returned function takes ``f``'s arguments and returns ``(error, out)``: ``error``
    represents the first failed check (``error.get()`` is its message or None,
    ``error.throw()`` raises it), ``out`` is ``f``'s output.

    Args:
      f: the function, which may call ``check``.
      errors: the enabled checks, a set of error categories: ``user_checks`` (the
        default), ``nan_checks``, ``div_checks``, ``index_checks``, or unions of them
        (``float_checks``, ``automatic_checks``, ``all_checks``).
    """
    @api_boundary
    def checked_fun(*args, **kwargs):
        box = []

        def closed():  # the arguments are closed over, as in jax (Python values stay so)
            out = f(*args, **kwargs)
            flat, tree = tree_flatten(out)
            box.append(tree)
            return flat, None

        name = getattr(f, "__name__", "fun")
        jaxpr, consts, _ = trace_to_jaxpr(lambda: closed(), [],
                                          DebugInfo("checkify", name, []))
        err_vals, err_tree = tree_flatten(init_error)
        error, out_flat = checkify_jaxpr_flat(jaxpr, consts, errors, err_tree, *err_vals)
        return error, tree_unflatten(box[0], out_flat)
    return checked_fun


def _is_scalar_pred(pred) -> bool:
    return isinstance(pred, bool) or (
        isinstance(pred, Array) and pred.shape == () and pred.dtype == np.dtype("bool"))


def _check(pred, msg, debug, *fmt_args, **fmt_kwargs):
    if not _is_scalar_pred(pred):
        prim_name = "debug_check" if debug else "check"
        raise TypeError(f"{prim_name} takes a scalar pred as argument, got {pred}")
    for arg in tree_leaves((fmt_args, fmt_kwargs)):
        if not isinstance(arg, (Array, np.ndarray)):
            raise TypeError("Formatting arguments to checkify.check need to be PyTrees of "
                            f"arrays, but got {arg!r} of type {type(arg)}.")
    new_error = FailedCheckError(get_traceback(), msg, *fmt_args, **fmt_kwargs)
    error = assert_func(init_error, bitwise_not(np.bool_(pred) if isinstance(pred, bool)
                                                else pred), new_error)
    bind_error(error, debug=debug)


def check(pred, msg: str, *fmt_args, debug: bool = False, **fmt_kwargs) -> None:
    """Check a predicate; add an error with ``msg`` if it is False.

    Eagerly a failed check raises ``JaxRuntimeError``; staged (``jit``, ``scan``...) the
    function must be ``checkify``-ed. ``msg`` is a format string; ``fmt_args`` and
    ``fmt_kwargs`` (arrays, possibly traced) fill it:
    ``check(x > 0, "{x} needs to be positive!", x=x)``. With ``debug=True`` the check is
    dropped unless checkified (see ``debug_check``).
    """
    _check(pred, msg, debug, *fmt_args, **fmt_kwargs)


def debug_check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
    """Check a predicate under ``checkify``; without it the check is a no-op."""
    _check(pred, msg, True, *fmt_args, **fmt_kwargs)


def check_error(error: Error) -> None:
    """Raise ``error`` if it represents a failure; ``checkify`` functionalizes it again
    (the inverse of ``checkify``)."""
    check_error_value(error)

