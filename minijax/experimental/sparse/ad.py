"""Gradients with respect to sparse arrays (mirrors ``jax.experimental.sparse.grad`` /
``value_and_grad``): a sparse argument is differentiated through its stored values
only, and its gradient is a sparse array of the same pattern."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence

from minijax.api.ad import value_and_grad as _value_and_grad
from minijax._pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "value_and_grad"]


def _is_sparse(x) -> bool:
    from minijax.experimental.sparse.bcoo import BCOO
    from minijax.experimental.sparse.bcsr import BCSR
    return isinstance(x, BCOO | BCSR)


def _with_data(x, data):
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [data, *leaves[1:]])  # data is the first child of both


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   **kwargs) -> Callable:
    """``minijax.value_and_grad``, with sparse arguments differentiated by their data."""
    single = isinstance(argnums, int)
    nums = (operator.index(argnums),) if single else tuple(map(operator.index, argnums))

    @functools.wraps(fun)
    def vg(*args, **kw):
        # each differentiated argument: its pytree with sparse leaves replaced by their data
        split = {i: tree_flatten(args[i], is_leaf=_is_sparse) for i in nums}
        templates = {i: [leaf if _is_sparse(leaf) else None for leaf in split[i][0]]
                     for i in nums}
        dense_args = list(args)
        for i in nums:
            leaves, tree = split[i]
            dense_args[i] = tree_unflatten(tree, [x.data if _is_sparse(x) else x
                                                  for x in leaves])

        def rebuild(i, value):
            leaves, tree = split[i]
            flat = tree.flatten_up_to(value)
            return tree_unflatten(tree, [x if t is None else _with_data(t, x)
                                         for t, x in zip(templates[i], flat, strict=True)])

        def inner(*a):
            return fun(*[rebuild(i, x) if i in nums else x for i, x in enumerate(a)], **kw)
        value, grads = _value_and_grad(inner, argnums=argnums, has_aux=has_aux,
                                       **kwargs)(*dense_args)
        if single:
            return value, rebuild(nums[0], grads)
        return value, tuple(rebuild(i, g) for i, g in zip(nums, grads, strict=True))

    return vg


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         **kwargs) -> Callable:
    """``minijax.grad``, with sparse arguments differentiated by their data."""
    vg = value_and_grad(fun, argnums, has_aux=has_aux, **kwargs)

    @functools.wraps(fun)
    def g(*args, **kw):
        value, grads = vg(*args, **kw)
        return (grads, value[1]) if has_aux else grads

    return g
