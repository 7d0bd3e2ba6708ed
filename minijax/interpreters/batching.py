"""``jax.interpreters.batching``: vmap rules of primitives, registered on minijax's.

A rule in ``primitive_batchers`` is ``rule(batched_args, batch_dims, **params) ->
(out, out_dim)`` (``not_mapped``, i.e. None, for an unbatched value); the operands and their batch
dimensions come as tuples, as jax gives them; one in
``axis_primitive_batchers`` also gets the axis first, in jax's older convention:
``rule(axis_size, axis_name, trace_type, batched_args, batch_dims, **params)``; one in
``fancy_primitive_batchers`` is ``rule(axis_data, batched_args, batch_dims, **params)``,
``axis_data`` with ``size`` and ``name``. Rules of these two are called even when no
operand is batched, as jax calls them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from minijax.core.trace import Primitive
from minijax.interpreters._registry import RuleRegistry
from minijax.transforms import batching as _b
from minijax.transforms.batching import BatchTrace, BatchTracer, not_mapped

__all__ = ["AxisData", "BatchTrace", "BatchTracer", "axis_primitive_batchers",
           "bdim_at_front", "broadcast", "defbroadcasting", "defreducer", "defvectorized",
           "fancy_primitive_batchers", "moveaxis", "not_mapped", "primitive_batchers"]


class AxisData(NamedTuple):
    """The vmapped axis a rule of ``axis_primitive_batchers`` is given."""

    name: Any
    size: int
    spmd_name: Any = None
    explicit_mesh_axis: Any = None


def _plain(prim: Primitive, rule: Callable) -> Callable:
    prim.rules.pop("batch_always", None)

    def batch(trace, vals, dims, **params):
        if all(d is not_mapped for d in dims):  # as jax: nothing batched, bind as is
            out = prim.bind(*vals, **params)
            return (out, [not_mapped] * len(out)) if prim.multiple_results else (out, not_mapped)
        return rule(tuple(vals), tuple(dims), **params)
    return batch


def _with_axis(prim: Primitive, rule: Callable) -> Callable:
    # jax's older convention ``rule(axis_size, axis_name, trace_type, vals, dims)``,
    # called (as in jax) even when no operand is batched.
    prim.rules["batch_always"] = True

    def batch(trace, vals, dims, **params):
        return rule(trace.axis_size, trace.axis_name, None, tuple(vals), tuple(dims), **params)
    return batch


def _fancy(prim: Primitive, rule: Callable) -> Callable:
    # ``rule(axis_data, vals, dims)``, called (as in jax) even when no operand is batched.
    prim.rules["batch_always"] = True

    def batch(trace, vals, dims, **params):
        return rule(AxisData(trace.axis_name, trace.axis_size), tuple(vals), tuple(dims),
                    **params)
    return batch


primitive_batchers = RuleRegistry("batch", _plain, key="_jax_batch")
axis_primitive_batchers = RuleRegistry("batch", _with_axis, key="_jax_axis_batch")
fancy_primitive_batchers = RuleRegistry("batch", _fancy, key="_jax_fancy_batch")


def moveaxis(x, src: int, dst: int):
    return _b.moveaxis(x, src, dst)


def bdim_at_front(x, bdim, size: int):
    """``x`` with its batch dimension first (broadcast to ``size`` if unbatched)."""
    return _b.bdim_at(x, bdim, size, 0)


def broadcast(x, size: int, bdim: int):
    """Unbatched ``x`` with a new axis of ``size`` at ``bdim``."""
    return _b.broadcast_batch(x, size, bdim)


def defvectorized(prim: Primitive) -> None:
    """The primitive acts elementwise on one operand: batched, it is applied as is."""
    prim.def_batch(lambda trace, vals, dims, **params:
                   (prim.bind(*vals, **params), dims[0]))


def defbroadcasting(prim: Primitive) -> None:
    """The primitive broadcasts its operands elementwise (as lax's arithmetic)."""
    _b.def_elementwise_batch(prim)


def defreducer(prim: Primitive, ident=None) -> None:
    """The primitive reduces its operand over ``axes`` (a param): the axes move past the
    batch dimension, which stays in front."""
    def rule(trace, vals, dims, *, axes, **params):
        (x,), (d,) = vals, dims
        x = _b.moveaxis(x, d, 0)
        axes = tuple(a + 1 for a in axes)
        return prim.bind(x, axes=axes, **params), 0
    prim.def_batch(rule)
