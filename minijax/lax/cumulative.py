"""Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin.

Lowered as jax does on CPU: a ``stablehlo.reduce_window`` whose window spans
the whole axis, padded by ``n - 1`` identity elements on the low side (on the
high side when ``reverse``), so output ``i`` reduces elements ``0..i``.
"""

from __future__ import annotations

from minijax.core.trace import Primitive, get_aval
from minijax.lax._util import check_dtype, static_int, type_error
from minijax.lax.reduce import identity_value, scalar_region
from minijax.lowering.types import dense_i64, i64_array


def _cumulative_primitive(name: str, kind: str, kinds: str) -> Primitive:
    p = Primitive(name)

    def abstract_eval(x, *, axis, reverse):
        check_dtype(name, x, kinds)
        if not 0 <= axis < x.ndim:
            raise type_error(name, f"axis {axis} out of range for an operand of rank {x.ndim}",
                             x)
        return x

    def lowering(ctx, x, *, axis, reverse):
        out = ctx.avals_out[0]
        n = out.shape[axis]
        if n <= 1:
            return x
        rank = out.ndim
        window = [1] * rank
        window[axis] = n
        pads = [[0, 0] for _ in range(rank)]
        pads[axis] = [0, n - 1] if reverse else [n - 1, 0]
        init = ctx.constant(identity_value(kind, out.dtype), out.dtype)
        ones = i64_array([1] * rank)
        return ctx.op("stablehlo.reduce_window", [x, init], out, {
            "base_dilations": ones,
            "padding": dense_i64(pads, (rank, 2)),
            "window_dilations": ones,
            "window_dimensions": i64_array(window),
            "window_strides": ones,
        }, regions=[scalar_region(ctx, kind, out.dtype)])

    p.def_abstract_eval(abstract_eval)
    p.def_lowering(lowering)
    return p


cumsum_p = _cumulative_primitive("cumsum", "add", "fciu")
cumprod_p = _cumulative_primitive("cumprod", "mul", "fciu")
cummax_p = _cumulative_primitive("cummax", "max", "fiu")
cummin_p = _cumulative_primitive("cummin", "min", "fiu")


def _params(operand, axis: int, reverse: bool) -> dict:
    ndim = get_aval(operand).ndim
    axis = static_int(axis, "axis")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return {"axis": axis % ndim, "reverse": bool(reverse)}


def cumsum(operand, axis: int = 0, reverse: bool = False):
    """Cumulative sum along ``axis`` (from the end when ``reverse``)."""
    return cumsum_p.bind(operand, **_params(operand, axis, reverse))


def cumprod(operand, axis: int = 0, reverse: bool = False):
    """Cumulative product along ``axis`` (from the end when ``reverse``)."""
    return cumprod_p.bind(operand, **_params(operand, axis, reverse))


def cummax(operand, axis: int = 0, reverse: bool = False):
    """Cumulative maximum along ``axis`` (from the end when ``reverse``)."""
    return cummax_p.bind(operand, **_params(operand, axis, reverse))


def cummin(operand, axis: int = 0, reverse: bool = False):
    """Cumulative minimum along ``axis`` (from the end when ``reverse``)."""
    return cummin_p.bind(operand, **_params(operand, axis, reverse))


# ---- transformation rules ---------------------------------------------------------------
# cumsum is linear. The jvps of cumprod/cummax/cummin run the cumulative op as a parallel
# prefix scan (log2(n) steps, each combining every element with the one ``2**k`` before
# it in scan order), carrying the tangent along: exact without dividing (so zeros in
# cumprod's input are fine) and differentiable again.

import numpy as np  # noqa: E402

from minijax.core import dtypes  # noqa: E402
from minijax.lax import binary as _b  # noqa: E402
from minijax.lax.select import select  # noqa: E402
from minijax.lax.shape import pad  # noqa: E402
from minijax.transforms.ad import Zero, defjvp_linear, tangent_aval  # noqa: E402


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
    better = _b.gt if kind == "max" else _b.lt

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


defjvp_linear(cumsum_p)
cumsum_p.def_transpose(_cumsum_transpose)
cumprod_p.def_jvp(_cumprod_jvp)
cummax_p.def_jvp(_chooser_jvp(cummax_p, "max"))
cummin_p.def_jvp(_chooser_jvp(cummin_p, "min"))


def _cumulative_batch(prim: Primitive):
    def rule(trace, vals, dims, *, axis, reverse):
        (x,), (bdim,) = vals, dims
        return prim.bind(x, axis=axis + (axis >= bdim), reverse=reverse), bdim
    return rule


for _p in (cumsum_p, cumprod_p, cummax_p, cummin_p):
    _p.def_batch(_cumulative_batch(_p))
