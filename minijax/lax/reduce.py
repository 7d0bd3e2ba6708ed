"""Reductions over axes: reduce_sum/prod/max/min/and/or, and argmax/argmin.

Each reduction lowers to ``stablehlo.reduce`` with a one-op region and the
op's identity as the init value. ``argmax``/``argmin`` lower to a variadic
``stablehlo.reduce`` over (value, index) pairs, the indices made by
``stablehlo.iota``: the first occurrence wins ties and a NaN beats any number
(the first NaN wins among NaNs), as in numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minijax.core.sharding_rules import def_sharding_rule, reduction_rule
from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax import binary as _b
from minijax.lax._util import check_dtype, static_int, static_ints, type_error
from minijax.lax.convert import convert_element_type
from minijax.lax.shape import broadcast_in_dim, pad, reshape, transpose
from minijax.lowering.types import i64_array
from minijax.transforms.ad import Zero, deflinear, defjvp_zero, tangent_aval

# ---- helpers shared with cumulative.py ------------------------------------------------


def canonical_axes(prim: str, aval: ShapedArray, axes: Sequence[int]) -> tuple[int, ...]:
    """Check ``axes`` are distinct, in-range, non-negative axes of ``aval``
    (a ValueError otherwise, as jax's)."""
    axes = tuple(axes)
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not 0 <= a < aval.ndim:
            raise ValueError(f"{prim}: axes {axes} out of range for an operand of rank "
                             f"{aval.ndim} (axes must be in [0, {aval.ndim})) (operand types: "
                             f"{aval.str_short()})")
    if len(set(axes)) != len(axes):
        raise ValueError(f"{prim}: duplicate axes in {axes} (operand types: "
                         f"{aval.str_short()})")
    return axes


def identity_value(kind: str, dtype) -> np.ndarray:
    """The identity of reduction ``kind`` ('add', 'mul', 'max', 'min', 'and', 'or') as a scalar."""
    dt = np.dtype(dtype)
    if kind == "add" or kind == "or":
        return np.zeros((), dt)
    if kind == "mul":
        return np.ones((), dt)
    if kind == "and":
        return np.array(True if dt == dtypes.bool_ else -1).astype(dt)
    lowest = kind == "max"
    if dt == dtypes.bool_:
        return np.array(not lowest, dt)
    if dtypes.is_int(dt):
        info = np.iinfo(dt)
        return np.array(info.min if lowest else info.max, dt)
    return np.array(-np.inf if lowest else np.inf, dt)


_scalars: dict = {}  # dtype -> ShapedArray((), dtype), for the regions of reductions
_HLO_OP = {"add": "stablehlo.add", "mul": "stablehlo.multiply", "max": "stablehlo.maximum",
           "min": "stablehlo.minimum", "and": "stablehlo.and", "or": "stablehlo.or"}


def scalar_region(ctx, kind: str, dtype):
    """A region ``(a, b) -> a <kind> b`` on scalars of ``dtype``."""
    scalar = _scalars.get(dtype)
    if scalar is None:
        scalar = _scalars[dtype] = ShapedArray((), dtype)
    region = ctx.new_region([scalar, scalar])
    with ctx.in_region(region):
        if kind in ("max", "min"):
            out = _b.emit_minmax(ctx, kind, *region.args, scalar)
        else:
            out = ctx.op(_HLO_OP[kind], list(region.args), scalar)
        ctx.ret([out])
    return region


# ---- rules shared by the reductions ---------------------------------------------------

def _kept_dims(ndim: int, axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i not in axes)


def _zero_tangent(out):
    return Zero(tangent_aval(get_aval(out)))


def _reduce_batch(prim: Primitive):
    """Batching for reductions: shift the reduced axes past the batch dimension."""
    def rule(trace, vals, dims, *, axes, **params):
        (x,), (bdim,) = vals, dims
        new_axes = tuple(a + (a >= bdim) for a in axes)
        out_bdim = bdim - sum(a < bdim for a in axes)
        return prim.bind(x, axes=new_axes, **params), out_bdim
    return rule


def _chooser_jvp(prim: Primitive):
    """jvp of reduce_max/min: the tangent at the chosen location(s), ties averaged (as jax)."""
    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axes=axes)
        if type(t) is Zero or not dtypes.is_inexact(get_aval(out).dtype):
            return out, _zero_tangent(out)
        aval = get_aval(x)
        full = broadcast_in_dim(out, aval.shape, _kept_dims(aval.ndim, axes))
        chosen = convert_element_type(_b.eq(x, full), aval.dtype)
        count = reduce_sum(chosen, axes)
        return out, _b.div(reduce_sum(_b.mul(t, chosen), axes), count)
    return rule


def _flatten_to_front(x, axes: tuple[int, ...]):
    """``x`` with ``axes`` moved to the front and merged into one leading axis."""
    aval = get_aval(x)
    kept = _kept_dims(aval.ndim, axes)
    perm = axes + kept
    if perm != tuple(range(aval.ndim)):
        x = transpose(x, perm)
    if len(axes) != 1:
        n = int(np.prod([aval.shape[a] for a in axes], dtype=np.int64))
        x = reshape(x, (n,) + tuple(aval.shape[d] for d in kept))
    return x


def _axes_tuple(axes) -> tuple[int, ...]:
    return static_ints(axes, "reduction axes")


# ---- monoid reductions ----------------------------------------------------------------
# Params mirror jax's: ``axes`` (a tuple); reduce_sum also has ``out_sharding=None``.


def _reduction_primitive(name: str, kind: str, kinds: str) -> Primitive:
    p = Primitive(name)
    identities: dict = {}  # dtype -> the init value of the lowered reduce (read only)

    def abstract_eval(x, *, axes, out_sharding=None):
        check_dtype(name, x, kinds)
        axes = canonical_axes(name, x, axes)
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type)

    def lowering(ctx, x, *, axes, out_sharding=None):
        out = ctx.avals_out[0]
        value = identities.get(out.dtype)
        if value is None:
            value = identities[out.dtype] = identity_value(kind, out.dtype)
        init = ctx.constant(value, out.dtype)
        region = scalar_region(ctx, kind, out.dtype)
        return ctx.op("stablehlo.reduce", [x, init], out,
                      {"dimensions": i64_array(axes)}, regions=[region])

    p.def_abstract_eval(abstract_eval)
    p.def_lowering(lowering)
    def_sharding_rule(p, lambda x, *, axes, out_sharding=None:
                      reduction_rule(x, canonical_axes(name, x, axes), out_sharding))
    p.def_batch(_reduce_batch(p))
    return p


reduce_sum_p = _reduction_primitive("reduce_sum", "add", "fciu")


def _reduce_sum_transpose(ct, x, *, axes, out_sharding=None):
    # Every input element contributed once: broadcast the cotangent back over ``axes``.
    shape = x.aval.shape
    return [broadcast_in_dim(ct, shape, _kept_dims(len(shape), axes))]


deflinear(reduce_sum_p, _reduce_sum_transpose)


def reduce_sum(operand, axes: Sequence[int], *, out_sharding=None):
    """Sum of ``operand`` over ``axes``."""
    return reduce_sum_p.bind(operand, axes=_axes_tuple(axes), out_sharding=None)


reduce_prod_p = _reduction_primitive("reduce_prod", "mul", "fciu")


def _reduce_prod_jvp(primals, tangents, *, axes):
    # d prod(x) = sum_i t_i * prod_{j != i} x_j, with prod_{j != i} x_j written as the
    # product of exclusive cumulative products from the left and from the right: exact
    # (no division), so inputs with zeros are handled, as jax's tree reduction does.
    from minijax.lax.cumulative import cumprod
    (x,), (t,) = primals, tangents
    out = reduce_prod(x, axes)
    aval = get_aval(x)
    n = int(np.prod([aval.shape[a] for a in axes], dtype=np.int64))
    if type(t) is Zero or n == 0:
        return out, _zero_tangent(out)
    xs, ts = _flatten_to_front(x, axes), _flatten_to_front(t, axes)
    one = np.ones((), aval.dtype)
    rest = [(0, 0, 0)] * (get_aval(xs).ndim - 1)
    before = cumprod(pad(xs, one, [(1, -1, 0)] + rest), 0)
    after = cumprod(pad(xs, one, [(-1, 1, 0)] + rest), 0, reverse=True)
    return out, reduce_sum(_b.mul(ts, _b.mul(before, after)), (0,))


reduce_prod_p.def_jvp(_reduce_prod_jvp)


def reduce_prod(operand, axes: Sequence[int]):
    """Product of ``operand`` over ``axes``."""
    return reduce_prod_p.bind(operand, axes=_axes_tuple(axes))


reduce_max_p = _reduction_primitive("reduce_max", "max", "fciub")
reduce_max_p.def_jvp(_chooser_jvp(reduce_max_p))


def reduce_max(operand, axes: Sequence[int]):
    """Maximum of ``operand`` over ``axes`` (NaN propagates)."""
    return reduce_max_p.bind(operand, axes=_axes_tuple(axes))


reduce_min_p = _reduction_primitive("reduce_min", "min", "fciub")
reduce_min_p.def_jvp(_chooser_jvp(reduce_min_p))


def reduce_min(operand, axes: Sequence[int]):
    """Minimum of ``operand`` over ``axes`` (NaN propagates)."""
    return reduce_min_p.bind(operand, axes=_axes_tuple(axes))


reduce_and_p = _reduction_primitive("reduce_and", "and", "iub")
defjvp_zero(reduce_and_p)


def reduce_and(operand, axes: Sequence[int]):
    """Logical/bitwise AND of ``operand`` over ``axes``."""
    return reduce_and_p.bind(operand, axes=_axes_tuple(axes))


reduce_or_p = _reduction_primitive("reduce_or", "or", "iub")
defjvp_zero(reduce_or_p)


def reduce_or(operand, axes: Sequence[int]):
    """Logical/bitwise OR of ``operand`` over ``axes``."""
    return reduce_or_p.bind(operand, axes=_axes_tuple(axes))


# ---- argmax / argmin ------------------------------------------------------------------


def _compare(ctx, x, y, direction: str):
    dt = x.aval.dtype
    ctype = "FLOAT" if dtypes.is_inexact(dt) else "SIGNED" if dtypes.is_signed(dt) else "UNSIGNED"
    return ctx.op("stablehlo.compare", [x, y], ShapedArray((), dtypes.bool_), {
        "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
        "compare_type": f"#stablehlo<comparison_type {ctype}>"})


def _arg_primitive(name: str, direction: str) -> Primitive:
    p = Primitive(name)
    is_max = direction == "GT"

    def abstract_eval(x, *, axes, index_dtype):
        check_dtype(name, x, "fiub")
        if len(axes) != 1:
            raise type_error(name, f"expects exactly one axis, got axes={axes}", x)
        (axis,) = canonical_axes(name, x, axes)
        if x.shape[axis] == 0:
            raise type_error(name, f"cannot take the {name} of an empty axis {axis}", x)
        if not dtypes.is_int(index_dtype):
            raise type_error(name, f"index_dtype must be an integer dtype, got {index_dtype}", x)
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
        return ShapedArray(shape, index_dtype)

    def lowering(ctx, x, *, axes, index_dtype):
        (axis,) = axes
        dt, out = x.aval.dtype, ctx.avals_out[0]
        idx = ctx.op("stablehlo.iota", [], ShapedArray(x.aval.shape, index_dtype),
                     {"iota_dimension": f"{axis} : i64"})
        init_v = ctx.constant(identity_value("max" if is_max else "min", dt), dt)
        init_i = ctx.constant(0, index_dtype)
        sv, si = ShapedArray((), dt), ShapedArray((), index_dtype)
        region = ctx.new_region([sv, si, sv, si])
        with ctx.in_region(region):
            av, ai, bv, bi = region.args
            better = _compare(ctx, av, bv, direction)
            tie = _compare(ctx, av, bv, "EQ")
            if dtypes.is_float(dt):
                a_nan = _compare(ctx, av, av, "NE")
                b_nan = _compare(ctx, bv, bv, "NE")
                b_num = ctx.op("stablehlo.not", [b_nan], b_nan.aval)
                nan_wins = ctx.op("stablehlo.and", [a_nan, b_num], a_nan.aval)
                better = ctx.op("stablehlo.or", [better, nan_wins], a_nan.aval)
                both_nan = ctx.op("stablehlo.and", [a_nan, b_nan], a_nan.aval)
                tie = ctx.op("stablehlo.or", [tie, both_nan], a_nan.aval)
            first = _compare(ctx, ai, bi, "LT")
            tie_first = ctx.op("stablehlo.and", [tie, first], tie.aval)
            pick_a = ctx.op("stablehlo.or", [better, tie_first], tie.aval)
            v = ctx.op("stablehlo.select", [pick_a, av, bv], sv)
            i = ctx.op("stablehlo.select", [pick_a, ai, bi], si)
            ctx.ret([v, i])
        _, index = ctx.op("stablehlo.reduce", [x, idx, init_v, init_i],
                          [ShapedArray(out.shape, dt), out],
                          {"dimensions": i64_array(axes)}, regions=[region])
        return index

    p.def_abstract_eval(abstract_eval)
    p.def_lowering(lowering)
    def_sharding_rule(p, lambda x, *, axes, index_dtype:
                      reduction_rule(x, canonical_axes(name, x, axes)))
    p.def_batch(_reduce_batch(p))
    defjvp_zero(p)  # integer indices
    return p


def _arg_params(operand, axis: int, index_dtype) -> dict:
    ndim = get_aval(operand).ndim
    axis = static_int(axis, "axis")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)  # a ValueError and an IndexError
    return {"axes": (axis % ndim,), "index_dtype": dtypes.canonicalize(index_dtype)}


argmax_p = _arg_primitive("argmax", "GT")


def argmax(operand, axis: int, index_dtype):
    """Index of the maximum along ``axis`` (first occurrence; NaN counts as the maximum)."""
    return argmax_p.bind(operand, **_arg_params(operand, axis, index_dtype))


argmin_p = _arg_primitive("argmin", "LT")


def argmin(operand, axis: int, index_dtype):
    """Index of the minimum along ``axis`` (first occurrence; NaN counts as the minimum)."""
    return argmin_p.bind(operand, **_arg_params(operand, axis, index_dtype))
