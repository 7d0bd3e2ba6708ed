"""``minijax.custom_batching``: functions with a user-defined batching rule, as
``jax.custom_batching``.

``custom_vmap_call`` is a primitive carrying the traced function as a jaxpr and the
user's rule. Evaluated, lowered or differentiated it is the function itself (jvp
differentiates the function's operations); under ``vmap`` it calls the rule
``rule(axis_size, in_batched, *args) -> (out, out_batched)`` with the batched
arguments' mapped axis first.

>>> @custom_vmap
... def f(x):
...     return jnp.sin(x)
>>> @f.def_vmap
... def f_vmap(axis_size, in_batched, x):
...     return jnp.cos(x), in_batched[0]
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from minijax.api.custom_derivatives import _lower_inline, _run, _trace_fun
from minijax.core.trace import Primitive, eval_jaxpr, get_aval
from minijax.core.traceback_util import api_boundary
from minijax.transforms.ad import jvp_flat
from minijax.transforms.batching import bdim_at
from minijax._pytree import tree_broadcast, tree_flatten, tree_unflatten

__all__ = ["custom_vmap", "sequential_vmap"]


class custom_vmap:
    """A function whose behaviour under ``vmap`` is the rule given with ``def_vmap``."""

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable | None = None

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        """``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``: ``in_batched``
        has the structure of ``args`` with a bool per leaf (batched leaves carry the mapped
        axis first); ``out_batched`` says the same of ``out`` (or is a prefix of it)."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    @api_boundary
    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"custom_vmap function {_name(self.fun)} takes positional "
                            f"arguments only; got keyword arguments {sorted(kwargs)}")
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function "
                                 f"{_name(self.fun)} using def_vmap.")
        tr = _trace_fun(self.fun, args, ())
        outs = custom_vmap_call_p.bind(*tr.consts, *tr.flat, call_jaxpr=tr.closed,
                                       rule=self.vmap_rule, in_tree=tr.in_tree,
                                       out_tree=tr.out_tree, num_consts=len(tr.consts),
                                       name=_name(self.fun))
        return tree_unflatten(tr.out_tree, outs)


def sequential_vmap(f: Callable) -> custom_vmap:
    """``f`` whose vmap is a loop over the mapped axis (``lax.map``), calling ``f`` once
    per element, instead of ``f`` batched."""
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        from minijax.lax.control_flow import map as lax_map
        from minijax.lax.shape import broadcast_in_dim
        flat, tree = tree_flatten(args)
        b_flat = tree.flatten_up_to(tuple(in_batched))
        xs = [x if b else broadcast_in_dim(x, (axis_size, *get_aval(x).shape),
                                           tuple(range(1, get_aval(x).ndim + 1)))
              for x, b in zip(flat, b_flat)]
        out = lax_map(lambda ys: f(*tree_unflatten(tree, ys)), xs)
        return out, True

    return f


def _name(f) -> str:
    return getattr(f, "__name__", repr(f))


# ---- the primitive ----------------------------------------------------------------------------

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)


def _custom_vmap_abstract_eval(*avals, call_jaxpr, **_):
    return call_jaxpr.out_avals


def _custom_vmap_jvp(primals, tangents, *, call_jaxpr, **_):
    # Forward mode differentiates the function's own operations.
    outs, touts = jvp_flat(lambda *xs: eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *xs),
                           primals, tangents)
    return outs, touts


def _custom_vmap_batch(trace, vals, dims, *, call_jaxpr, rule, in_tree, out_tree, num_consts,
                       name):
    if any(d is not None for d in dims[:num_consts]):
        raise ValueError(f"custom_vmap function {name} closes over a value that is batched by "
                         f"vmap; pass it as an argument instead")
    size = trace.axis_size
    args = [x if d is None else bdim_at(x, d, size, 0)
            for x, d in zip(vals[num_consts:], dims[num_consts:])]
    in_batched = tree_unflatten(in_tree, [d is not None for d in dims[num_consts:]])
    res = rule(size, list(in_batched), *tree_unflatten(in_tree, args))
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"the vmap rule of custom_vmap function {name} must return a pair "
                        f"(output, out_batched), got {type(res).__name__}")
    out, out_batched = res
    out_flat, got_tree = tree_flatten(out)
    if got_tree != out_tree:
        raise ValueError(f"the vmap rule of custom_vmap function {name} must produce an "
                         f"output with the structure of the function's output {out_tree}; "
                         f"got {got_tree}")
    batched_flat = tree_flatten(tree_broadcast(out_batched, out, is_leaf=lambda x: x is None))[0]
    for o, b, a in zip(out_flat, batched_flat, call_jaxpr.out_avals):
        want = (size, *a.shape) if b else a.shape
        if get_aval(o).shape != want:
            raise ValueError(f"the vmap rule of custom_vmap function {name} produced an output "
                             f"of shape {get_aval(o).shape} where {want} was expected "
                             f"(batched={bool(b)})")
    return out_flat, [0 if b else None for b in batched_flat]


custom_vmap_call_p.def_abstract_eval(_custom_vmap_abstract_eval)
custom_vmap_call_p.def_impl(lambda *args, call_jaxpr, **_: _run(call_jaxpr, args))
custom_vmap_call_p.def_lowering(_lower_inline)
custom_vmap_call_p.def_jvp(_custom_vmap_jvp)
custom_vmap_call_p.def_batch(_custom_vmap_batch)
custom_vmap_call_p.pp_params = lambda p: {"name": p["name"], "call_jaxpr": p["call_jaxpr"]}
