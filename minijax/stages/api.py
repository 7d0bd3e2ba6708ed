"""make_jaxpr and eval_shape."""

from __future__ import annotations

import functools
from collections.abc import Callable

from minijax.core.aval import ShapeDtypeStruct
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.traceback_util import api_boundary


def make_jaxpr(fun: Callable, static_argnums=(), return_shape: bool = False):
    """A function returning the ``ClosedJaxpr`` of ``fun`` for example arguments.

    >>> print(minijax.make_jaxpr(jnp.sin)(jnp.ones(3)))
    { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }
    """
    from minijax.stages.jit import Wrapped

    @api_boundary
    @functools.wraps(fun)
    def make(*args, **kwargs):
        w = Wrapped(fun, static_argnums=static_argnums)
        entry, _ = w._entry(args, kwargs, allow_shape_dtype=True)
        closed = entry.closed
        if entry.hoisted:
            closed = ClosedJaxpr(closed.jaxpr, closed.consts)
        if return_shape:
            shapes = entry.out_tree.unflatten(
                ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                for a in closed.out_avals)
            return closed, shapes
        return closed

    return make


@api_boundary
def eval_shape(fun: Callable, *args, **kwargs):
    """Output shapes and dtypes of ``fun`` without running it."""
    from minijax.stages.jit import Wrapped
    return Wrapped(fun).eval_shape(*args, **kwargs)
