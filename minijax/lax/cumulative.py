"""Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin, cumlogsumexp;
and ``associative_scan``, the same for any associative function (built from slices).

Lowered as jax does on CPU: a ``stablehlo.reduce_window`` whose window spans
the whole axis, padded by ``n - 1`` identity elements on the low side (on the
high side when ``reverse``), so output ``i`` reduces elements ``0..i``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.shape_poly import DimExpr
from minijax.core.trace import Primitive, get_aval
from minijax.lax import binary as _b, unary as _u
from minijax.lax._util import check_dtype, static_int, type_error
from minijax.lax.reduce import identity_value, scalar_region
from minijax.lax.select import select
from minijax.lax.shape import (broadcast_in_dim, canonicalize_axis, concatenate, expand_dims,
                               pad, reshape, rev)
from minijax.lax.slicing import slice_in_dim
from minijax.lowering.types import dense_i64, i64_array
from minijax.transforms.ad import Zero, deflinear, tangent_aval
from minijax._pytree import tree_flatten, tree_unflatten


def _logaddexp_region(ctx, kind: str, dtype):
    """The region ``(a, b) -> log(exp(a) + exp(b))``, without overflow: ``max(a, b) +
    log1p(exp(-|a - b|))``, or ``a + b`` where ``a - b`` is NaN (NaNs, infinities of one
    sign)."""
    s = ShapedArray((), dtype)
    region = ctx.new_region([s, s])
    with ctx.in_region(region):
        a, b = region.args
        delta = ctx.op("stablehlo.subtract", [a, b], s)
        is_nan = ctx.op("stablehlo.compare", [delta, delta], ShapedArray((), dtypes.bool_), {
            "comparison_direction": "#stablehlo<comparison_direction NE>",
            "compare_type": "#stablehlo<comparison_type FLOAT>"})
        tail = ctx.op("stablehlo.negate", [ctx.op("stablehlo.abs", [delta], s)], s)
        tail = ctx.op("stablehlo.log_plus_one", [ctx.op("stablehlo.exponential", [tail], s)], s)
        big = ctx.op("stablehlo.add", [ctx.op("stablehlo.maximum", [a, b], s), tail], s)
        ctx.ret([ctx.op("stablehlo.select", [is_nan, ctx.op("stablehlo.add", [a, b], s), big],
                        s)])
    return region


def _identity(kind: str, dtype):
    return np.array(-np.inf, dtype) if kind == "logaddexp" else identity_value(kind, dtype)


def _cumulative_batch(prim: Primitive):
    def rule(trace, vals, dims, *, axis, reverse):
        (x,), (bdim,) = vals, dims
        return prim.bind(x, axis=axis + (axis >= bdim), reverse=reverse), bdim
    return rule


def _cumulative_primitive(name: str, kind: str, kinds: str) -> Primitive:
    p = Primitive(name)
    region = _logaddexp_region if kind == "logaddexp" else scalar_region

    def abstract_eval(x, *, axis, reverse):
        check_dtype(name, x, kinds)
        if not 0 <= axis < x.ndim:
            raise type_error(name, f"axis {axis} out of range for an operand of rank {x.ndim}",
                             x)
        return x

    def lowering(ctx, x, *, axis, reverse):
        out = ctx.avals_out[0]
        n = out.shape[axis]
        if type(n) is DimExpr:  # shape polymorphism
            return _dynamic_reduce_window(ctx, x, out, axis, reverse, kind, region)
        if n <= 1:
            return x
        rank = out.ndim
        window = [1] * rank
        window[axis] = n
        pads = [[0, 0] for _ in range(rank)]
        pads[axis] = [0, n - 1] if reverse else [n - 1, 0]
        init = ctx.constant(_identity(kind, out.dtype), out.dtype)
        ones = i64_array([1] * rank)
        return ctx.op("stablehlo.reduce_window", [x, init], out, {
            "base_dilations": ones,
            "padding": dense_i64(pads, (rank, 2)),
            "window_dilations": ones,
            "window_dimensions": i64_array(window),
            "window_strides": ones,
        }, regions=[region(ctx, kind, out.dtype)])

    p.def_abstract_eval(abstract_eval)
    p.def_lowering(lowering)
    p.def_batch(_cumulative_batch(p))
    return p


def _dynamic_reduce_window(ctx, x, out, axis, reverse, kind, region):
    """The cumulative window over a symbolic dimension, as jax writes it: the custom call
    ``stablehlo.dynamic_reduce_window`` whose window sizes and padding are operands (shape
    refinement makes it a ``reduce_window``) and whose reducer is a function."""
    n, rank = out.shape[axis], out.ndim
    window = [1] * rank
    window[axis] = n
    pads = [0] * (2 * rank)
    pads[2 * axis + (1 if reverse else 0)] = n - 1
    pad = ctx.op("stablehlo.reshape", [ctx.shape_tensor(pads)],
                 ShapedArray((rank, 2), np.int32))
    ones = ctx.shape_tensor([1] * rank)
    init = ctx.constant(_identity(kind, out.dtype), out.dtype)
    body = region(ctx, kind, out.dtype)
    ret = body.ops.pop()  # the region's stablehlo.return: the function's results
    key = ("dynamic_reduce_window", kind, out.dtype)
    fn = ctx.module.cache.get(key)
    if fn is None:
        fn = ctx.module.cache[key] = ctx.module.new_function(
            f"cumulative_{kind}_{np.dtype(out.dtype).name}_reducer")
        fn.args, fn.arg_attrs = list(body.args), [("", None)] * len(body.args)
        fn.body = fn.block = body
        fn.results = list(ret.operands)
    return ctx.op("stablehlo.custom_call", [x, init, ctx.shape_tensor(window), ones, ones,
                                            ones, pad], out, {
        "api_version": "2 : i32",
        "call_target_name": '"stablehlo.dynamic_reduce_window"',
        "called_computations": f"[{fn.ref}]"})


# ---- transformation rules ---------------------------------------------------------------
# cumsum is linear. The jvps of cumprod/cummax/cummin run the cumulative op as a parallel
# prefix scan (log2(n) steps, each combining every element with the one ``2**k`` before
# it in scan order), carrying the tangent along: exact without dividing (so zeros in
# cumprod's input are fine) and differentiable again.


def _cumsum_transpose(ct, x, *, axis, reverse):
    return [cumsum(ct, axis, reverse=not reverse)]


def _shift(x, s: int, axis: int, reverse: bool, fill):
    """``x`` moved ``s`` steps forward in scan order along ``axis``, ``fill`` entering."""
    aval = get_aval(x)
    config = [(0, 0, 0)] * aval.ndim
    config[axis] = (-s, s, 0) if reverse else (s, -s, 0)
    return pad(x, np.asarray(fill, aval.dtype), config)


def _scan_steps(n: int) -> list[int]:
    """The shifts 1, 2, 4, ... of a prefix scan over ``n`` elements."""
    steps, s = [], 1
    while s < n:
        steps.append(s)
        s *= 2
    return steps


def _cumprod_jvp(primals, tangents, *, axis, reverse):
    (x,), (t,) = primals, tangents
    out = cumprod_p.bind(x, axis=axis, reverse=reverse)
    if type(t) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    steps = _scan_steps(get_aval(x).shape[axis])
    p, d = x, t  # partial products and their tangents
    for k, s in enumerate(steps):
        p_prev = _shift(p, s, axis, reverse, 1)
        d = _b.add(_b.mul(d, p_prev), _b.mul(p, _shift(d, s, axis, reverse, 0)))
        if k + 1 < len(steps):
            p = _b.mul(p, p_prev)
    return out, d


def _chooser_jvp(prim: Primitive, kind: str):
    """jvp of cummax/cummin: each output takes the tangent of the element it chose; among
    equal candidates the one latest in scan order wins."""
    better = _b.strictly_greater if kind == "max" else _b.strictly_less

    def rule(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axis=axis, reverse=reverse)
        if type(t) is Zero or not dtypes.is_inexact(get_aval(out).dtype):
            return out, Zero(tangent_aval(get_aval(out)))
        steps = _scan_steps(get_aval(x).shape[axis])
        identity = identity_value(kind, get_aval(x).dtype)
        m, d = x, t  # running extrema and the tangents of the chosen elements
        for k, s in enumerate(steps):
            m_prev = _shift(m, s, axis, reverse, identity)
            d = select(better(m_prev, m), _shift(d, s, axis, reverse, 0), d)
            if k + 1 < len(steps):
                m = _b.max(m, m_prev) if kind == "max" else _b.min(m, m_prev)
        return out, d
    return rule


def _logaddexp(a, b, zeros):
    """``log(exp(a) + exp(b))`` elementwise, as ``_logaddexp_region`` computes it; the
    branch not taken is kept finite, so that derivatives through it are 0, not NaN."""
    delta = _b.sub(a, b)
    nan = _b.ne(delta, delta)
    delta = select(nan, zeros, delta)
    big = _b.add(_b.max(a, b), _u.log1p(_u.exp(_u.neg(_u.abs(delta)))))
    return select(nan, _b.add(a, b), big)


def _cumlogsumexp_jvp(primals, tangents, *, axis, reverse):
    # d out_i = sum_{j <= i} exp(x_j - out_i) t_j, as a prefix scan over (running
    # logsumexp, tangent) pairs: combining two pairs weights each tangent by
    # exp(its logsumexp - the combined one), 0 for an empty (-inf) side.
    (x,), (t,) = primals, tangents
    out = cumlogsumexp_p.bind(x, axis=axis, reverse=reverse)
    if type(t) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    aval = get_aval(x)
    zeros = broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ())

    def weight(part, whole):
        empty = _b.eq(part, -np.inf)
        return select(empty, zeros, _u.exp(select(empty, zeros, _b.sub(part, whole))))

    m, d = x, t
    for s in _scan_steps(get_aval(x).shape[axis]):
        m_prev = _shift(m, s, axis, reverse, -np.inf)
        combined = _logaddexp(m_prev, m, zeros)
        d = _b.add(_b.mul(_shift(d, s, axis, reverse, 0), weight(m_prev, combined)),
                   _b.mul(d, weight(m, combined)))
        m = combined
    return out, d


def _params(operand, axis: int, reverse: bool) -> dict:
    ndim = get_aval(operand).ndim
    axis = static_int(axis, "axis")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)  # a ValueError and an IndexError
    return {"axis": axis % ndim, "reverse": bool(reverse)}


# ---- the primitives: one block each -------------------------------------------------

cumsum_p = _cumulative_primitive("cumsum", "add", "fciu")
deflinear(cumsum_p, _cumsum_transpose)


def cumsum(operand, axis: int = 0, reverse: bool = False):
    """Cumulative sum along ``axis`` (from the end when ``reverse``)."""
    return cumsum_p.bind(operand, **_params(operand, axis, reverse))


cumprod_p = _cumulative_primitive("cumprod", "mul", "fciu")
cumprod_p.def_jvp(_cumprod_jvp)


def cumprod(operand, axis: int = 0, reverse: bool = False):
    """Cumulative product along ``axis`` (from the end when ``reverse``)."""
    return cumprod_p.bind(operand, **_params(operand, axis, reverse))


cummax_p = _cumulative_primitive("cummax", "max", "fciu")
cummax_p.def_jvp(_chooser_jvp(cummax_p, "max"))


def cummax(operand, axis: int = 0, reverse: bool = False):
    """Cumulative maximum along ``axis`` (from the end when ``reverse``)."""
    return cummax_p.bind(operand, **_params(operand, axis, reverse))


cummin_p = _cumulative_primitive("cummin", "min", "fciu")
cummin_p.def_jvp(_chooser_jvp(cummin_p, "min"))


def cummin(operand, axis: int = 0, reverse: bool = False):
    """Cumulative minimum along ``axis`` (from the end when ``reverse``)."""
    return cummin_p.bind(operand, **_params(operand, axis, reverse))


cumlogsumexp_p = _cumulative_primitive("cumlogsumexp", "logaddexp", "f")
cumlogsumexp_p.def_jvp(_cumlogsumexp_jvp)


def cumlogsumexp(operand, axis: int = 0, reverse: bool = False):
    """Cumulative ``log(sum(exp(x)))`` along ``axis`` (from the end when ``reverse``),
    without overflow; floating-point operands."""
    return cumlogsumexp_p.bind(operand, **_params(operand, axis, reverse))


# ---- associative_scan ---------------------------------------------------------------------

def _interleave(evens, odds, axis: int):
    """``evens[0], odds[0], evens[1], odds[1], ...`` along ``axis`` (``evens`` may have one
    element more than ``odds``)."""
    m = get_aval(odds).shape[axis]
    shape = list(get_aval(odds).shape)
    shape[axis] = 2 * m
    pairs = concatenate([expand_dims(slice_in_dim(evens, 0, m, axis=axis), (axis + 1,)),
                         expand_dims(odds, (axis + 1,))], axis + 1)
    out = reshape(pairs, shape)
    if get_aval(evens).shape[axis] > m:
        out = concatenate([out, slice_in_dim(evens, m, m + 1, axis=axis)], axis)
    return out


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """All prefix combinations of ``elems`` along ``axis`` with the associative ``fn``.

    Output ``i`` is ``fn(...fn(fn(x[0], x[1]), x[2])..., x[i])`` (from the end when
    ``reverse``), computed in about ``2 log2(n)`` rounds of elementwise ``fn`` calls on
    slices, so ``fn`` must work on whole slices (it is called on arrays, not scalars).

    Parameters
    ----------
    fn : ``(a, b) -> c`` on pytrees like ``elems``; associative
    elems : an array or a pytree of arrays, all of one length along ``axis``
    reverse : scan from the end
    axis : the scanned axis

    Examples
    --------
    >>> associative_scan(lax.add, jnp.arange(5))
    Array([ 0,  1,  3,  6, 10], dtype=int32)
    """
    leaves, tree = tree_flatten(elems)
    if not leaves:
        raise ValueError("associative_scan needs at least one array in elems")
    axis = canonicalize_axis(axis, get_aval(leaves[0]).ndim)
    lengths = {get_aval(x).shape[axis] for x in leaves}
    if len(lengths) != 1:
        raise ValueError(f"associative_scan: every array of elems must have the same length "
                         f"along axis {axis}, got {sorted(lengths)}")

    def combine(a: list, b: list) -> list:
        out, out_tree = tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        if out_tree != tree:
            raise ValueError(f"associative_scan: fn must return a pytree like elems ({tree}), "
                             f"got {out_tree}")
        return out

    def take(xs: list, start: int, stop: int, stride: int = 1) -> list:
        return [slice_in_dim(x, start, stop, stride, axis) for x in xs]

    def scan(xs: list) -> list:
        n = get_aval(xs[0]).shape[axis]
        if n < 2:
            return xs
        # scanning the combined neighbour pairs gives the prefixes at odd positions; each
        # even position after the first adds its own element to the prefix before it
        odds = scan(combine(take(xs, 0, n - 1, 2), take(xs, 1, n, 2)))
        evens = combine(take(odds, 0, (n - 1) // 2), take(xs, 2, n, 2))
        evens = [concatenate([first, e], axis) for first, e in zip(take(xs, 0, 1), evens)]
        return [_interleave(e, o, axis) for e, o in zip(evens, odds)]

    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]
    out = scan(leaves)
    if reverse:
        out = [rev(x, (axis,)) for x in out]
    return tree_unflatten(tree, out)
