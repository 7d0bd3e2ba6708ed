"""vmap: vectorizing a function over a mapped axis.

A ``BatchTracer`` carries a value with one extra dimension (``bdim``) for the
mapped axis, or ``bdim=None`` when the value is the same for every element.
Each primitive's ``batch`` rule maps ``(values, bdims, **params)`` to
``(out, out_bdim)`` using ordinary (batched) primitives, so the emitted code
has no loops.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from minijax.core.aval import ShapedArray, canonicalize_dim
from minijax.core.trace import Primitive, Trace, Tracer, _leaked, _state, get_aval, use_trace
from minijax.core.traceback_util import api_boundary
from minijax.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

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
            raise _leaked(x)
        return x, not_mapped

    def process_primitive(self, prim, args, params):
        vals, dims = [], []
        for x in args:
            v, d = self.split(x)
            vals.append(v)
            dims.append(d)
        prev = _state.trace
        _state.trace = self.parent
        try:
            if all(d is None for d in dims) and not prim.rules.get("batch_always"):
                return prim.bind(*vals, **params)
            rule = prim.batch
            if rule is None:
                raise NotImplementedError(f"Batching rule for '{prim.name}' is not implemented")
            out, out_dims = rule(self, vals, dims, **params)
        finally:
            _state.trace = prev
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
    from minijax.lax.shape import transpose
    return transpose(x, tuple(perm))


def broadcast_batch(x, size: int, axis: int):
    """Insert a new axis of ``size`` at ``axis`` (for an unbatched operand)."""
    aval = get_aval(x)
    shape = list(aval.shape)
    shape.insert(axis, size)
    dims = tuple(i if i < axis else i + 1 for i in range(aval.ndim))
    from minijax.lax.shape import broadcast_in_dim
    return broadcast_in_dim(x, tuple(shape), dims)


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
    from minijax.lax.shape import broadcast_in_dim
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
            new.append(broadcast_in_dim(v, tuple(shape), (bdim,)))
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
        trace = BatchTrace(_state.trace, axis_size, axis_name)
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


# ---- vmap ------------------------------------------------------------------------------------

def _flatten_axes(what: str, tree, axes, paths: list[str]) -> list:
    """Broadcast the pytree prefix ``axes`` to one entry per leaf of ``tree``."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(paths)
    _, treedef = tree_flatten(tree)
    try:
        # A prefix tree: unflatten leaves of `axes`' structure over tree's structure.
        ax_leaves, ax_tree = tree_flatten(axes, is_leaf=lambda x: x is None)
        out = []
        subtrees = ax_tree.flatten_up_to(tree)
        for ax, sub in zip(ax_leaves, subtrees):
            out.extend([ax] * len(tree_flatten(sub)[0]))
        return out
    except (ValueError, TypeError) as e:
        raise ValueError(f"vmap {what} specification must be a tree prefix of the "
                         f"corresponding value, got specification {axes} for value tree "
                         f"{treedef}.") from e


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name=None,
         axis_size: int | None = None, spmd_axis_name=None) -> Callable:
    """Vectorize ``fun`` over an axis; mirrors ``jax.vmap``."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or isinstance(in_axes, (int, tuple, dict))):
        raise TypeError(f"vmap in_axes must be an int, None, or a tuple of entries "
                        f"corresponding to the positional arguments passed to the function, "
                        f"but got {in_axes}.")

    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                             f"corresponding to the positional arguments passed to the "
                             f"function, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        pairs, in_tree = tree_flatten_with_path((args, kwargs))
        leaves = [x for _, x in pairs]
        names = [_arg_path(fun, p) for p, _ in pairs]
        n_pos = len(tree_flatten(args)[0])
        axes = _flatten_axes("in_axes", args, in_axes, names[:n_pos]) + [0] * (len(leaves) - n_pos)
        size = _mapped_size(leaves, axes, names, axis_size)
        trace = BatchTrace(_state.trace, size, axis_name)
        tracers = []
        for x, ax in zip(leaves, axes):
            if ax is None:
                tracers.append(x)
                continue
            nd = get_aval(x).ndim
            tracers.append(BatchTracer(trace, x, ax % nd))
        a, k = in_tree.unflatten(tracers)
        with use_trace(trace):
            out = fun(*a, **k)
        trace.alive = False
        out_pairs, out_tree = tree_flatten_with_path(out)
        outs = [x for _, x in out_pairs]
        oaxes = _flatten_axes("out_axes", out, out_axes, [""] * len(outs))
        results = []
        for (path, o), oax in zip(out_pairs, oaxes):
            v, d = trace.split(o)
            if oax is None:
                if d is not None:
                    raise ValueError(f"vmap has mapped output (at result{keystr(path)}) but "
                                     f"out_axes is None")
                results.append(v)
                continue
            rank = get_aval(v).ndim + (1 if d is None else 0)
            if not -rank <= oax < rank:
                raise ValueError(f"vmap out_axes {oax} is out of bounds for output "
                                 f"result{keystr(path)} of rank {rank}")
            results.append(_as_array(bdim_at(v, d, size, oax % rank)))
        return tree_unflatten(out_tree, results)

    vmapped.__name__ = f"vmap({getattr(fun, '__name__', 'fun')})"
    vmapped.__wrapped__ = fun
    return api_boundary(vmapped)


def _as_array(x):
    if isinstance(x, (np.ndarray, np.generic, int, float, bool, complex)):
        from minijax.numpy._promote import ensure_array
        return ensure_array(x)
    return x


def _arg_path(fun, path) -> str:
    import inspect
    if len(path) >= 2 and getattr(path[0], "idx", None) == 0:
        i = path[1].idx
        try:
            params = [p.name for p in inspect.signature(fun).parameters.values()]
        except (TypeError, ValueError):
            params = []
        base = params[i] if i < len(params) else f"args[{i}]"
        return base + keystr(path[2:])
    if len(path) >= 2:
        return str(path[1].key) + keystr(path[2:])
    return keystr(path)


def _mapped_size(leaves, axes, names, axis_size) -> int:
    if axis_size is not None:
        axis_size = canonicalize_dim(axis_size, "axis_size of vmap")
        if axis_size < 0:  # a TypeError, as jax's
            raise TypeError(f"vmap axis_size must be nonnegative, got {axis_size}")
    sizes = []
    for x, ax, nm in zip(leaves, axes, names):
        if ax is None:
            continue
        aval = get_aval(x)
        if not isinstance(ax, int):
            raise TypeError(f"vmap in_axes leaves must be ints or None, got {ax!r} for {nm}")
        if not -aval.ndim <= ax < aval.ndim or aval.ndim == 0:
            raise ValueError(
                f"vmap was requested to map its argument along axis {ax}, which implies that "
                f"its rank should be at least {ax + 1 if ax >= 0 else -ax}, but is only "
                f"{aval.ndim} (its shape is {aval.shape}) for argument {nm}")
        sizes.append((aval.shape[ax % aval.ndim], nm, ax, aval))
    if not sizes:
        if axis_size is None:
            raise ValueError("vmap must have at least one non-None value in in_axes, or be "
                             "given axis_size")
        return int(axis_size)
    distinct = {s for s, *_ in sizes}
    if axis_size is not None:
        distinct.add(int(axis_size))
    if len(distinct) > 1:
        lines = [f"  * axis {ax} of argument {nm} of type {aval.str_short()} has size {s}"
                 for s, nm, ax, aval in sizes]
        if axis_size is not None:
            lines.append(f"  * axis_size was given as {axis_size}")
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                         + "\n".join(lines))
    return distinct.pop()
