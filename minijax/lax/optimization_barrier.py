"""optimization_barrier: the identity, over which XLA moves no computation.

``stablehlo.optimization_barrier`` returns its operands unchanged; XLA may not hoist
work into or out of it, nor merge what is on either side (jax uses it to keep
rematerialized values from being computed early). Its jvp puts primals and tangents
behind barriers of their own, its transpose to the cotangents, its batching to the
batched operands where they are.
"""

from __future__ import annotations

from minijax import _pytree as tree_util
from minijax.core.trace import Primitive
from minijax.transforms.ad import instantiate

optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)


def _barrier_abstract(*xs):
    return list(xs)


def _barrier_lower(ctx, *xs):
    if not xs:
        return []
    return ctx.op("stablehlo.optimization_barrier", list(xs), list(ctx.avals_out))


def _barrier_jvp(primals, tangents):
    # Two barriers, one on the primals and one on the tangents, so that linearizing
    # keeps primal and tangent computations apart.
    tangents = [instantiate(t) for t in tangents]
    return optimization_barrier_p.bind(*primals), optimization_barrier_p.bind(*tangents)


def _barrier_transpose(cts, *xs):
    return optimization_barrier_p.bind(*[instantiate(c) for c in cts])


def _barrier_batch(trace, vals, dims):
    return optimization_barrier_p.bind(*vals), list(dims)


# Registration.
optimization_barrier_p.def_abstract_eval(_barrier_abstract)
optimization_barrier_p.def_lowering(_barrier_lower)
optimization_barrier_p.def_jvp(_barrier_jvp)
optimization_barrier_p.def_transpose(_barrier_transpose)
optimization_barrier_p.def_batch(_barrier_batch)


def optimization_barrier(operand, /):
    """The identity on a pytree of arrays that XLA optimizes around, not across (mirrors
    ``jax.lax.optimization_barrier``)."""
    leaves, treedef = tree_util.tree_flatten(operand)
    return tree_util.tree_unflatten(treedef, optimization_barrier_p.bind(*leaves))

