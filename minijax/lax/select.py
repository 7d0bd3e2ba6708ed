"""select_n and clamp."""

from __future__ import annotations

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax._util import broadcast_operand, type_error
from minijax.transforms.ad import (Zero, add_tangents, instantiate, is_undefined,
                                   tangent_aval)
from minijax.transforms.batching import (broadcast_batch, bdim_at,
                                         def_elementwise_batch, moveaxis)

# ---- select_n --------------------------------------------------------------------------------
select_n_p = Primitive("select_n")


@select_n_p.def_abstract_eval
def _select_n_abstract(which, *cases):
    if not cases:
        raise type_error("select_n", "needs at least one case", which)
    if which.dtype != dtypes.bool_ and which.dtype != dtypes.int32:
        raise type_error("select_n", f"predicate must be bool or int32, got {which.dtype.name}",
                         which, *cases)
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        raise type_error("select_n", "a boolean predicate selects between at most two cases",
                         which, *cases)
    c0 = cases[0]
    for c in cases[1:]:
        if c.shape != c0.shape or c.dtype != c0.dtype:
            raise type_error("select_n", "cases must have the same shape and dtype",
                             which, *cases)
    if which.shape not in ((), c0.shape):
        raise type_error("select_n", "predicate must be a scalar or have the cases' shape",
                         which, *cases)
    return ShapedArray(c0.shape, c0.dtype, all(c.weak_type for c in cases))


@select_n_p.def_lowering
def _select_n_lower(ctx, which, *cases):
    out = ctx.avals_out[0]
    if len(cases) == 1:
        return cases[0]
    which = broadcast_operand(ctx, which, out.shape)
    if which.aval.dtype == dtypes.bool_:
        return ctx.op("stablehlo.select", [which, cases[1], cases[0]], out)
    # int32 index: a binary tree of selects on `which < mid`.
    def build(lo, hi):
        if hi - lo == 1:
            return cases[lo]
        mid = (lo + hi) // 2
        bound = ctx.constant(mid, dtypes.int32, out.shape)
        pred = ctx.op("stablehlo.compare", [which, bound], ShapedArray(out.shape, dtypes.bool_), {
            "comparison_direction": "#stablehlo<comparison_direction LT>",
            "compare_type": "#stablehlo<comparison_type SIGNED>"})
        return ctx.op("stablehlo.select", [pred, build(lo, mid), build(mid, hi)], out)
    return build(0, len(cases))


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    out = select_n_p.bind(which, *cases)
    ts = tangents[1:]
    if all(type(t) is Zero for t in ts):
        return out, Zero(tangent_aval(get_aval(out)))
    return out, select_n_p.bind(which, *[instantiate(t) for t in ts])


def _select_n_transpose(ct, which, *cases):
    if is_undefined(which):
        raise NotImplementedError("select_n is not linear in its predicate")
    from minijax.lax.shape import broadcast_in_dim
    aval = get_aval(ct)
    zeros = broadcast_in_dim(dtypes.scalar_const(0, aval.dtype, aval.weak_type), aval.shape, ())
    out = [None]
    for i, c in enumerate(cases):
        if not is_undefined(c):
            out.append(None)
            continue
        picks = [zeros] * len(cases)
        picks[i] = ct
        out.append(select_n_p.bind(which, *picks))
    return out


def _select_n_batch(trace, vals, dims):
    # The cases must keep equal shapes, so each gets the batch dimension (an unbatched one,
    # even a rank-0 one, is broadcast); the predicate too, unless it is an unbatched scalar.
    (which, *cases), (wd, *cds) = vals, dims
    size = trace.axis_size
    bdim = next((d for d in cds if d is not None), 0)
    cases = [bdim_at(c, d, size, bdim) for c, d in zip(cases, cds)]
    shape = get_aval(cases[0]).shape
    if wd is None:
        if get_aval(which).ndim:
            which = broadcast_batch(which, size, bdim)
    else:
        which = moveaxis(which, wd, bdim if get_aval(which).ndim > 1 else 0)
        if get_aval(which).ndim == 1 and len(shape) > 1:  # a batched scalar predicate
            from minijax.lax.shape import broadcast_in_dim
            which = broadcast_in_dim(which, shape, (bdim,))
    return select_n_p.bind(which, *cases), bdim


select_n_p.def_jvp(_select_n_jvp)
select_n_p.def_transpose(_select_n_transpose)
select_n_p.def_batch(_select_n_batch)


def select_n(which, *cases):
    """``cases[which]`` elementwise; ``which`` is bool (two cases) or int32."""
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false``."""
    return select_n_p.bind(pred, on_false, on_true)


# ---- clamp -----------------------------------------------------------------------------------
clamp_p = Primitive("clamp")


@clamp_p.def_abstract_eval
def _clamp_abstract(lo, x, hi):
    for b in (lo, hi):
        if b.dtype != x.dtype:
            raise type_error("clamp", "bounds must have the operand's dtype", lo, x, hi)
        if b.shape not in ((), x.shape):
            raise type_error("clamp", "bounds must be scalars or have the operand's shape",
                             lo, x, hi)
    return x


@clamp_p.def_lowering
def _clamp_lower(ctx, lo, x, hi):
    return ctx.op("stablehlo.clamp", [lo, x, hi], ctx.avals_out[0])


def _clamp_jvp(primals, tangents):
    # As jax: the operand's tangent where lo < x < hi, lo's where x < lo (and lo < hi), hi's
    # where x > hi; none at ties. Scalar bounds' tangents are broadcast.
    from minijax.lax.binary import bitwise_and, gt, lt
    from minijax.lax.shape import broadcast_in_dim
    lo, x, hi = primals
    out = clamp_p.bind(lo, x, hi)
    aval = get_aval(out)
    if all(type(t) is Zero for t in tangents):
        return out, Zero(tangent_aval(aval))
    zeros = broadcast_in_dim(dtypes.scalar_const(0, aval.dtype, aval.weak_type), aval.shape, ())
    conds = (bitwise_and(gt(lo, x), lt(lo, hi)), bitwise_and(gt(x, lo), lt(x, hi)), lt(hi, x))
    acc = None
    for t, cond in zip(tangents, conds):
        if type(t) is Zero:
            continue
        if get_aval(t).shape != aval.shape:
            t = broadcast_in_dim(t, aval.shape, ())
        part = select(cond, t, zeros)
        acc = part if acc is None else add_tangents(acc, part)
    return out, acc


clamp_p.def_jvp(_clamp_jvp)
def_elementwise_batch(clamp_p)


def clamp(min, x, max):  # noqa: A002
    return clamp_p.bind(min, x, max)
