"""``pure_callback`` and ``io_callback``: Python functions called from staged programs.

The primitives and their rules are in ``minijax/lax/callback.py``; the host side
(the custom call's Python end, effect tokens, ``effects_barrier``) in
``minijax/runtime/callback.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minijax.lax.callback import (VMAP_METHODS, FlatCallback, check_result_shape_dtypes,
                                  io_callback_p, pure_callback_p)
from minijax.runtime.callback import effects_barrier
from minijax._pytree import tree_flatten, tree_unflatten

__all__ = ["effects_barrier", "io_callback", "pure_callback"]


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: str | None = None, **kwargs: Any):
    """Call the pure Python function ``callback(*args, **kwargs)`` from jitted code.

    ``callback`` gets host ``minijax.Array``s and must return a pytree of arrays matching
    ``result_shape_dtypes`` (leaves with ``shape`` and ``dtype``, e.g.
    ``minijax.ShapeDtypeStruct``). It is assumed pure: it may run more than once, or not
    at all when its results are unused. Under ``vmap``, ``vmap_method`` says how:
    ``"sequential"`` (a loop over the mapped axis), ``"sequential_unrolled"``,
    ``"expand_dims"`` (unbatched arguments get a leading axis of size 1),
    ``"broadcast_all"`` (broadcast to the batch size) or ``"legacy_vectorized"``;
    None makes ``vmap`` a NotImplementedError. Not differentiable: wrap it in
    ``custom_jvp`` or ``custom_vjp``.

    >>> def f(x):
    ...     return minijax.pure_callback(np.sin, minijax.ShapeDtypeStruct(x.shape, x.dtype), x)
    >>> minijax.jit(f)(jnp.zeros(2))
    Array([0., 0.], dtype=float32)
    """
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                         f"but got: {vmap_method}")
    flat_args, in_tree = tree_flatten((args, kwargs))
    result_avals, out_tree = check_result_shape_dtypes(result_shape_dtypes)
    out = pure_callback_p.bind(*flat_args, callback=FlatCallback(callback, in_tree),
                               result_avals=tuple(result_avals), sharding=sharding,
                               vmap_method=vmap_method)
    return tree_unflatten(out_tree, out)


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding: Any = None, ordered: bool = False, **kwargs: Any):
    """Call the impure Python function ``callback(*args, **kwargs)`` from jitted code.

    Like ``pure_callback``, but the call is a side effect: it is never dropped, and with
    ``ordered=True`` the calls keep their program order (then it cannot be ``vmap``-ed;
    unordered ones run once per element under ``vmap``). Not differentiable.
    """
    flat_args, in_tree = tree_flatten((args, kwargs))
    result_avals, out_tree = check_result_shape_dtypes(result_shape_dtypes)
    out = io_callback_p.bind(*flat_args, callback=FlatCallback(callback, in_tree),
                             result_avals=tuple(result_avals), sharding=sharding,
                             ordered=bool(ordered))
    return tree_unflatten(out_tree, out)
