"""A transformation rebuilds its pytree arguments from their leaves under its own trace,
as jax does: a pytree node that records the trace current when it is unflattened (flax's
Variable keeps ``get_opaque_trace_state()`` to refuse mutation from another trace level)
sees the same trace as the function's body. Compared with jax side by side."""

from __future__ import annotations

import jax
import jax.extend as jex
import pytest

import minijax
import minijax.extend as mex


def _node_class(mod, ex):
    class Node:
        def __init__(self, x):
            self.x = x
            self.state = ex.core.get_opaque_trace_state()

    mod.tree_util.register_pytree_node(Node, lambda n: ((n.x,), None),
                                       lambda _, ch: Node(ch[0]))
    return Node


def _seen(mod, ex, which):
    Node = _node_class(mod, ex)
    seen = []

    def body(n, y):
        seen.append(n.state == ex.core.get_opaque_trace_state())
        return n.x * y

    x, y = mod.numpy.ones((2,)), mod.numpy.ones((2,))
    if which == "vmap":
        mod.vmap(body)(Node(x), y)
    elif which == "vmap_in_axes_none":
        mod.vmap(body, in_axes=(None, 0))(Node(x), y)
    elif which == "jit":
        mod.jit(body)(Node(x), y)
    elif which == "grad":
        mod.grad(lambda n, y: body(n, y).sum())(Node(x), y)
    elif which == "jvp":
        mod.jvp(lambda n: body(n, y), (Node(x),), (Node(y),))
    elif which == "vjp":
        mod.vjp(lambda n: body(n, y), Node(x))
    return seen


@pytest.mark.parametrize("which", ["vmap", "vmap_in_axes_none", "jit", "grad", "jvp",
                                   "vjp"])
def test_node_made_under_the_body_trace(which):
    assert _seen(minijax, mex, which) == _seen(jax, jex, which)
