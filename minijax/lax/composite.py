"""composite: a named operation whose meaning is its decomposition.

``composite(decomposition, name, version)`` wraps a function so that each call binds
``composite_p`` with the decomposition traced to a closed jaxpr and the call's
keyword arguments as static attributes. It lowers to ``stablehlo.composite "name"``
calling the decomposition as a private function (a compiler that knows ``name`` may
replace it; XLA:CPU inlines the decomposition).

As in jax there are no derivatives (use ``custom_jvp``/``custom_vjp`` around it):
the jvp raises jax's ValueError. Unlike jax, a composite can be batched: the
decomposition is batched into a new composite of the same name.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from minijax.core.trace import (DebugInfo, Primitive, Tracer, get_aval, split_tracer_consts,
                                trace_to_jaxpr)
from minijax.lowering.types import elem_type, string_attr
from minijax.transforms.batching import batch_jaxpr
from minijax._pytree import tree_flatten, tree_unflatten

composite_p = Primitive("composite", multiple_results=True)


def _composite_abstract(*args, name, attributes, version, jaxpr):
    return list(jaxpr.out_avals)


def _attr_text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return f"{int(value)} : i64"
    if isinstance(value, (float, np.floating)):
        return f"{float(value):e} : f64"
    if isinstance(value, str):
        return string_attr(value)
    if isinstance(value, np.dtype) or (isinstance(value, type) and
                                       issubclass(value, np.generic)):
        return elem_type(np.dtype(value))
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_attr_text(v) or "unit" for v in value) + "]"
    raise TypeError(f"composite: attribute values must be None, bool, int, float, str, a dtype "
                    f"or tuples of them in minijax, got {value!r}")


def _composite_lower(ctx, *args, name, attributes, version, jaxpr):
    fn = ctx.lower_function(jaxpr, name)
    attrs = [f"{k} = {t}" for k, v in attributes if (t := _attr_text(v)) is not None]
    return ctx.op("stablehlo.composite", list(args), list(ctx.avals_out), {
        "name": string_attr(name),
        "composite_attributes": "{" + ", ".join(sorted(attrs)) + "}",
        "decomposition": fn.ref,
        "version": f"{version} : i32",
    })


def _composite_jvp(primals, tangents, **params):
    raise ValueError("JVP rule for composite not implemented. You can use `custom_jvp` to "
                     "add support.")


def _composite_batch(trace, vals, dims, *, jaxpr, **params):
    batched, out_dims = batch_jaxpr(jaxpr, list(dims), trace.axis_size, instantiate=True)
    return composite_p.bind(*vals, jaxpr=batched, **params), out_dims


# Registration (no jvp in jax either: the rule raises jax's error).
composite_p.def_abstract_eval(_composite_abstract)
composite_p.def_lowering(_composite_lower)
composite_p.def_jvp(_composite_jvp)
composite_p.def_batch(_composite_batch)


def composite(decomposition: Callable, name: str, version: int = 0) -> Callable:
    """``decomposition`` as a composite operation called ``name`` (mirrors
    ``jax.lax.composite``): positional arguments are arrays, keyword arguments static
    attributes of the op.

    >>> double = composite(lambda x, *, k=2.0: x * k, name="my.scale")
    >>> double(np.float32(1.5), k=3.0)
    Array(4.5, dtype=float32)
    """
    def call(*args, **kwargs):
        if any(isinstance(v, Tracer) for v in kwargs.values()):
            raise TypeError(f"composite {name!r}: keyword arguments are static attributes and "
                            f"may not be traced values; pass arrays positionally")
        leaves, in_tree = tree_flatten(args)
        avals = [get_aval(x) for x in leaves]
        out_tree = []

        def flat(*xs):
            out, tree = tree_flatten(decomposition(*tree_unflatten(in_tree, list(xs)),
                                                   **kwargs))
            out_tree.append(tree)
            return out, None

        traced, consts, _ = trace_to_jaxpr(flat, avals, DebugInfo("composite", name, None))
        closed, hoisted = split_tracer_consts(traced, consts)
        if hoisted:
            raise TypeError(f"composite {name!r}: the decomposition closes over traced values; "
                            f"pass them as arguments")
        attributes = tuple(sorted((k, v) for k, v in kwargs.items()))
        outs = composite_p.bind(*leaves, name=name, attributes=attributes,
                                version=int(version), jaxpr=closed)
        return tree_unflatten(out_tree[0], list(outs))

    call.__name__ = getattr(decomposition, "__name__", name)
    call.__doc__ = getattr(decomposition, "__doc__", None)
    return call


