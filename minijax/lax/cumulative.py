"""Cumulative reductions along one axis: cumsum, cumprod, cummax, cummin.

Lowered as jax does on CPU: a ``stablehlo.reduce_window`` whose window spans
the whole axis, padded by ``n - 1`` identity elements on the low side (on the
high side when ``reverse``), so output ``i`` reduces elements ``0..i``.
"""

from __future__ import annotations

from minijax.core.trace import Primitive, get_aval
from minijax.lax._util import check_dtype, type_error
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
    axis = int(axis)
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
