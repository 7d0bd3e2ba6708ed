"""``jax.api_util``: the helpers libraries use to flatten functions and arguments."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from minijax.core.trace import DebugInfo, get_aval
from minijax.extend import linear_util as lu
from minijax._pytree import tree_flatten, tree_structure, tree_unflatten

__all__ = ["argnums_partial", "debug_info", "donation_vector", "flatten_axes", "flatten_fun",
           "flatten_fun_nokwargs", "rebase_donate_argnums", "safe_map", "shaped_abstractify"]


def debug_info(traced_for: str, fun: Callable, args: Sequence, kwargs: dict, *,
               static_argnums=(), static_argnames=()) -> DebugInfo:
    """What ``fun`` is, for error messages (as jax's ``api_util.debug_info``)."""
    name = getattr(fun, "__name__", type(fun).__name__)
    return DebugInfo(traced_for, name, None)


def _flatten_fun(f, store, in_tree, *args_flat):
    args, kwargs = tree_unflatten(in_tree, args_flat)
    out = f(*args, **kwargs)
    leaves, tree = tree_flatten(out)
    store.store(tree)
    return leaves


def flatten_fun(fun: lu.WrappedFun, in_tree):
    """``fun`` on flat leaves of ``(args, kwargs)`` with ``in_tree``, returning flat leaves;
    ``(flat fun, thunk of the output tree)``."""
    return lu.transformation_with_aux2(_flatten_fun, fun, in_tree)


def _flatten_fun_nokwargs(f, store, in_tree, *args_flat):
    args = tree_unflatten(in_tree, args_flat)
    out = f(*args)
    leaves, tree = tree_flatten(out)
    store.store(tree)
    return leaves


def flatten_fun_nokwargs(fun: lu.WrappedFun, in_tree):
    return lu.transformation_with_aux2(_flatten_fun_nokwargs, fun, in_tree)


def shaped_abstractify(x):
    return get_aval(x)


def safe_map(f, *args):
    lists = [list(a) for a in args]
    n = len(lists[0]) if lists else 0
    if any(len(a) != n for a in lists):
        raise ValueError(f"length mismatch: {[len(a) for a in lists]}")
    return list(map(f, *lists))


def flatten_axes(name: str, treedef, axis_tree: Any, *, kws: bool = False, tupled_args=False):
    """``axis_tree`` (a prefix of ``treedef``) broadcast to one entry per leaf."""
    from minijax._pytree import broadcast_prefix
    proxy = tree_unflatten(treedef, [object()] * treedef.num_leaves)
    return broadcast_prefix(axis_tree, proxy, is_leaf=lambda x: x is None)


def donation_vector(donate_argnums, donate_argnames, in_tree, kws: bool = True):
    args, _ = tree_unflatten(in_tree, [None] * in_tree.num_leaves) if kws else \
        (tree_unflatten(in_tree, [None] * in_tree.num_leaves), {})
    out: list[bool] = []
    for i, a in enumerate(args):
        out.extend([i in donate_argnums] * tree_structure(a).num_leaves)
    return tuple(out)


def rebase_donate_argnums(donate_argnums, static_argnums):
    static = set(static_argnums)
    return tuple(i - sum(s < i for s in static) for i in sorted(donate_argnums)
                 if i not in static)


def argnums_partial(f: lu.WrappedFun, dyn_argnums, args, require_static_args_hashable=True):
    dyn = (dyn_argnums,) if isinstance(dyn_argnums, int) else tuple(dyn_argnums)
    fixed = list(args)

    def gen(inner, *dyn_args):
        full = list(fixed)
        for i, a in zip(dyn, dyn_args):
            full[i] = a
        return inner(*full)

    return lu.transformation2(gen, f), tuple(args[i] for i in dyn)
