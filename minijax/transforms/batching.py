"""vmap: vectorizing a function over a mapped axis.

A ``BatchTracer`` carries a value with one extra dimension (``bdim``) for the
mapped axis, or ``bdim=None`` when the value is the same for every element.
Each primitive's ``batch`` rule maps ``(values, bdims, **params)`` to
``(out, out_bdim)`` using ordinary (batched) primitives, so the emitted code
has no loops.
"""

from __future__ import annotations

from collections.abc import Sequence


from minijax.core.aval import ShapedArray
from minijax.core.primitives import broadcast_in_dim_p, transpose_p
from minijax.core.trace import (Primitive, Trace, Tracer, aval_str, get_aval,
                                leaked_tracer_error, trace_state, use_trace)

not_mapped = None


class BatchTracer(Tracer):
    __slots__ = ("val", "bdim")

    def __init__(self, trace: BatchTrace, val, bdim: int | None):
        self._trace = trace
        self.val = val
        self.bdim = bdim
        aval = get_aval(val)
        if bdim is None:
            self.aval = aval
        else:
            shape = aval.shape[:bdim] + aval.shape[bdim + 1:]
            self.aval = ShapedArray(shape, aval.dtype, aval.weak_type)

    def _short_repr(self) -> str:
        return f"VmapTracer(aval={aval_str(self.aval)}, batched={aval_str(get_aval(self.val))})"


class BatchTrace(Trace):
    """Interpreter for one ``vmap``: axis ``axis_name`` of size ``axis_size``."""

    def __init__(self, parent: Trace, axis_size: int, axis_name=None):
        self.parent = parent
        self.axis_size = axis_size
        self.axis_name = axis_name
        self.alive = True

    @property
    def description(self) -> str:
        return f"vmap over an axis of size {self.axis_size}"

    def split(self, x):
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.bdim
        if isinstance(x, Tracer) and not x._trace.alive:
            raise leaked_tracer_error(x)
        return x, not_mapped

    def process_primitive(self, prim, args, params):
        vals, dims = [], []
        for x in args:
            v, d = self.split(x)
            vals.append(v)
            dims.append(d)
        prev = trace_state.trace
        trace_state.trace = self.parent
        try:
            if all(d is None for d in dims) and not prim.rules.get("batch_always"):
                return prim.bind(*vals, **params)
            rule = prim.batch
            if rule is None:
                raise NotImplementedError(f"Batching rule for '{prim.name}' is not implemented")
            out, out_dims = rule(self, vals, dims, **params)
        finally:
            trace_state.trace = prev
        if prim.multiple_results:
            return [BatchTracer(self, o, d) if d is not None else o
                    for o, d in zip(out, out_dims)]
        return BatchTracer(self, out, out_dims) if out_dims is not None else out

    def concrete_value(self, tracer, what):
        from minijax.core.errors import ConcretizationTypeError
        raise ConcretizationTypeError(
            f"Abstract tracer value encountered where a concrete value is expected: `{what}()` "
            f"was called on a value batched by vmap ({tracer.aval.str_short()} per element). "
            f"Each element may differ, so Python control flow cannot depend on it: use "
            f"`jnp.where`, `lax.cond` or `lax.select` instead.")


def find_axis(trace: Trace, name) -> BatchTrace | None:
    """The enclosing vmap's trace that binds axis ``name`` (for collectives)."""
    t = trace
    while t is not None:
        if isinstance(t, BatchTrace) and t.axis_name == name:
            return t
        t = t.parent
    return None


# ---- helpers for batching rules ------------------------------------------------------------

def moveaxis(x, src: int, dst: int):
    """Move axis ``src`` of ``x`` to position ``dst`` (no-op when equal)."""
    nd = get_aval(x).ndim
    src, dst = src % nd, dst % nd
    if src == dst:
        return x
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return transpose_p.bind(x, permutation=tuple(perm))


def broadcast_batch(x, size: int, axis: int):
    """Insert a new axis of ``size`` at ``axis`` (for an unbatched operand)."""
    aval = get_aval(x)
    shape = list(aval.shape)
    shape.insert(axis, size)
    dims = tuple(i if i < axis else i + 1 for i in range(aval.ndim))
    return _broadcast_in_dim(x, tuple(shape), dims)


def _broadcast_in_dim(x, shape: tuple, dims: tuple):
    if get_aval(x).shape == shape:
        return x
    return broadcast_in_dim_p.bind(x, broadcast_dimensions=dims, shape=shape, sharding=None)


def bdim_at(x, bdim: int | None, size: int, dst: int = 0):
    """``x`` with its batch dimension at ``dst`` (broadcast if unbatched)."""
    if bdim is None:
        return broadcast_batch(x, size, dst)
    return moveaxis(x, bdim, dst)


def batch_elementwise(trace: BatchTrace, vals, dims, prim: Primitive, **params):
    """Batching for elementwise primitives (rank-0 operands may broadcast).

    Batched operands keep their batch dimension where it is when they agree; an
    unbatched array operand gets the batch dimension inserted at that position
    by a broadcast, so no transpose is emitted in the common case.
    """
    ranks = [get_aval(v).ndim - (d is not None) for v, d in zip(vals, dims)]
    out_rank = max(ranks)
    full = [(v, d) for v, d, r in zip(vals, dims, ranks) if r == out_rank]
    bdim = next((d for v, d in full if d is not None), 0)
    ref_v, ref_d = full[0]
    shape = list(get_aval(ref_v).shape)
    if ref_d is not None:
        del shape[ref_d]
    shape.insert(bdim, trace.axis_size)
    new = []
    for v, d, r in zip(vals, dims, ranks):
        if d is None:
            new.append(v if r == 0 else broadcast_batch(v, trace.axis_size, bdim))
        elif r < out_rank:  # a batched scalar among arrays
            new.append(_broadcast_in_dim(v, tuple(shape), (bdim,)))
        else:
            new.append(moveaxis(v, d, bdim))
    return prim.bind(*new, **params), bdim


def def_elementwise_batch(prim: Primitive) -> None:
    prim.def_batch(lambda trace, vals, dims, **params:
                   batch_elementwise(trace, vals, dims, prim, **params))


def batch_jaxpr(closed, dims: Sequence[int | None], axis_size: int, axis_name=None,
                instantiate: bool = False):
    """A jaxpr computing ``closed`` batched along ``dims``; outputs batched at axis 0
    (or unbatched: ``None`` in the returned out_dims, unless ``instantiate``)."""
    from minijax.core.jaxpr import ClosedJaxpr
    from minijax.core.trace import DebugInfo, eval_jaxpr, trace_to_jaxpr
    in_avals = []
    for aval, d in zip(closed.in_avals, dims):
        if d is None:
            in_avals.append(aval)
        else:
            shape = list(aval.shape)
            shape.insert(d, axis_size)
            in_avals.append(ShapedArray(tuple(shape), aval.dtype, aval.weak_type))
    out_dims: list = []

    def fun(*args):
        trace = BatchTrace(trace_state.trace, axis_size, axis_name)
        tracers = [BatchTracer(trace, a, d) if d is not None else a for a, d in zip(args, dims)]
        with use_trace(trace):
            outs = eval_jaxpr(closed.jaxpr, closed.consts, *tracers)
        trace.alive = False
        res = []
        for o in outs:
            v, d = trace.split(o)
            if d is None and instantiate:
                res.append(broadcast_batch(v, axis_size, 0))
                out_dims.append(0)
                continue
            res.append(v if d is None else moveaxis(v, d, 0))
            out_dims.append(None if d is None else 0)
        return res, None

    jaxpr, consts, _ = trace_to_jaxpr(fun, in_avals, DebugInfo("vmap", "jaxpr", None))
    return ClosedJaxpr(jaxpr, consts), out_dims
