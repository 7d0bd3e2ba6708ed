"""stop_gradient: the identity, which differentiation treats as a constant.

It is a real primitive (as in jax's jaxprs) so that the autodiff rules, added
beside it later, can cut the gradient; its lowering is the identity.
"""

from __future__ import annotations

from minijax.core.trace import Primitive
from minijax.transforms.ad import defjvp_zero
from minijax.transforms.batching import def_elementwise_batch

stop_gradient_p = Primitive("stop_gradient")


@stop_gradient_p.def_abstract_eval
def _stop_gradient_abstract(x):
    return x


@stop_gradient_p.def_lowering
def _stop_gradient_lower(ctx, x):
    return x


def stop_gradient(x):
    """``x`` unchanged, but with zero derivative; applies to every leaf of a pytree."""
    from minijax import _pytree as tree_util
    return tree_util.tree_map(stop_gradient_p.bind, x)


# ---- transformation rules ----------------------------------------------------------------


defjvp_zero(stop_gradient_p)  # no tangent flows through
def_elementwise_batch(stop_gradient_p)
