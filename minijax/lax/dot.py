"""dot_general: batched tensor contraction, and the ``dot`` helper.

The output dimensions are ordered (batch, lhs free, rhs free), as in jax and
StableHLO. Operands must have the same dtype unless ``preferred_element_type``
is given, in which case both are converted to it in the lowering (as jax does
on CPU/GPU for mixed operands).

Params: ``dimension_numbers`` (tuples of ints), ``precision`` (None or a pair
of StableHLO precision names) and ``preferred_element_type`` (None or a dtype);
jaxprs print them as jax does (lists, None values hidden).
"""

from __future__ import annotations

import enum

import numpy as np

from minijax.core.errors import ShardingTypeError
from minijax.core.sharding_rules import (aval_out_sharding, def_sharding_rule, sharding_of,
                                         spec_entries, with_entries)
from minijax.lax.sharding import constrain
from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.errors import IncompatibleShapesError
from minijax.core.lru import MemoCache
from minijax.core.trace import Primitive, get_aval
from minijax.lax._util import static_ints, type_error
from minijax.lax.convert import convert_element_type
from minijax.lax.dot_algorithm import (algorithm_attr,
                                       algorithm_from_name, check_on_cpu, compute_types,
                                       is_algorithm)
from minijax.lax.shape import transpose
from minijax.transforms.ad import defjvp, is_undefined

dot_general_p = Primitive("dot_general")


def _canonical_dimension_numbers(dimension_numbers) -> tuple:
    """``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` as int tuples."""
    try:
        (lc, rc), (lb, rb) = dimension_numbers
        return tuple(tuple(static_ints(dims, "dimension_numbers") for dims in pair)
                     for pair in ((lc, rc), (lb, rb)))
    except (TypeError, ValueError):
        raise TypeError(f"dot_general: dimension_numbers must be ((lhs_contracting, "
                        f"rhs_contracting), (lhs_batch, rhs_batch)), got "
                        f"{dimension_numbers!r}") from None


def _dot_general_pp(params: dict) -> dict:
    # As jax prints it: dimension numbers as lists, None-valued options hidden.
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    shown = {"dimension_numbers": f"(({list(lc)}, {list(rc)}), ({list(lb)}, {list(rb)}))"}
    shown.update((k, v) for k, v in params.items() if k != "dimension_numbers" and v is not None)
    return shown


dot_general_p.pp_params = _dot_general_pp


class Precision(enum.Enum):
    """Precision of matrix products and convolutions (``precision=`` of ``dot_general``,
    ``conv_general_dilated``): how float32 operands are multiplied on accelerators.

    ``DEFAULT`` (aliases ``'default'``, ``'fastest'``, ``'bfloat16'``), ``HIGH``
    (``'high'``, ``'bfloat16_3x'``, ``'tensorfloat32'``) and ``HIGHEST`` (``'highest'``,
    ``'float32'``). No effect on CPU. ``Precision('highest')`` is ``Precision.HIGHEST``.
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        name = _PRECISION_ALIASES.get(str(value).lower()) if value is not None else "DEFAULT"
        return cls[name] if name else None

    def __repr__(self) -> str:
        return f"Precision.{self.name}"

    def __str__(self) -> str:
        return self.name


_PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")
_PRECISION_ALIASES = {"default": "DEFAULT", "fastest": "DEFAULT", "bfloat16": "DEFAULT",
                      "high": "HIGH", "bfloat16_3x": "HIGH", "tensorfloat32": "HIGH",
                      "highest": "HIGHEST", "float32": "HIGHEST"}


def _canonical_precision(precision):
    """None, a pair of StableHLO precision names, or a ``DotAlgorithm``/``DotAlgorithmPreset``
    (also given by a preset's name)."""
    if precision is None or is_algorithm(precision):
        return precision
    if isinstance(precision, str) and precision.lower() not in _PRECISION_ALIASES \
            and algorithm_from_name(precision) is not None:
        return algorithm_from_name(precision)
    if isinstance(precision, (tuple, list)):
        if len(precision) != 2:
            raise ValueError(f"precision must be None, one value or a pair, got {precision!r}")
        pair = [_canonical_precision(p) for p in precision]
        return (pair[0][0] if pair[0] else "DEFAULT", pair[1][0] if pair[1] else "DEFAULT")
    name = getattr(precision, "name", precision)
    name = _PRECISION_ALIASES.get(str(name).lower(), str(name).upper())
    if name not in _PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; use one of {_PRECISIONS}, a "
                         f"lax.DotAlgorithmPreset (or its name) or a lax.DotAlgorithm")
    return (name, name)


def precision_config(precision) -> str:
    """The ``precision_config`` attribute text (DEFAULT for None and for algorithms)."""
    p0, p1 = ("DEFAULT", "DEFAULT") if precision is None or is_algorithm(precision) \
        else precision
    return f"[#stablehlo<precision {p0}>, #stablehlo<precision {p1}>]"


def _check_dims(side: str, dims: tuple, aval: ShapedArray, what: str, lhs, rhs) -> None:
    if any(not 0 <= d < aval.ndim for d in dims):
        raise type_error("dot_general", f"{side} {what} dimensions {list(dims)} must be in "
                         f"[0, {aval.ndim}) for a {side} of rank {aval.ndim}", lhs, rhs)
    if len(set(dims)) != len(dims):
        raise type_error("dot_general", f"{side} {what} dimensions {list(dims)} must be "
                         f"distinct", lhs, rhs)


def _out_shape(lhs: ShapedArray, rhs: ShapedArray, dimension_numbers) -> tuple:
    (lc, rc), (lb, rb) = dimension_numbers
    batch = tuple(lhs.shape[d] for d in lb)
    lhs_free = tuple(d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb)
    rhs_free = tuple(d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb)
    return batch + lhs_free + rhs_free


@dot_general_p.def_abstract_eval
def _dot_general_abstract(lhs, rhs, *, dimension_numbers, precision=None,
                          preferred_element_type=None, out_sharding=None):
    (lc, rc), (lb, rb) = dimension_numbers
    _check_dims("lhs", lc, lhs, "contracting", lhs, rhs)
    _check_dims("lhs", lb, lhs, "batch", lhs, rhs)
    _check_dims("rhs", rc, rhs, "contracting", lhs, rhs)
    _check_dims("rhs", rb, rhs, "batch", lhs, rhs)
    if set(lc) & set(lb) or set(rc) & set(rb):
        raise type_error("dot_general", f"batch and contracting dimensions must be disjoint, "
                         f"got {dimension_numbers}", lhs, rhs)
    if len(lb) != len(rb) or len(lc) != len(rc):
        raise type_error("dot_general", f"lhs and rhs must have as many batch dimensions and as "
                         f"many contracting dimensions, got {dimension_numbers}", lhs, rhs)
    lb_shape = tuple(lhs.shape[d] for d in lb)
    rb_shape = tuple(rhs.shape[d] for d in rb)
    if lb_shape != rb_shape:
        raise type_error("dot_general", f"batch dimensions must have the same sizes, got "
                         f"{lb_shape} (lhs shape {lhs.shape}) and {rb_shape} (rhs shape "
                         f"{rhs.shape})", lhs, rhs)
    lc_shape = tuple(lhs.shape[d] for d in lc)
    rc_shape = tuple(rhs.shape[d] for d in rc)
    if lc_shape != rc_shape:  # a TypeError as from jax's dot_general, a ValueError as lax.dot's
        raise IncompatibleShapesError(
            f"dot_general: contracting dimensions must have the same sizes, got {lc_shape} "
            f"(lhs shape {lhs.shape}) and {rc_shape} (rhs shape {rhs.shape}) (operand types: "
            f"{lhs.str_short()}, {rhs.str_short()})")
    if preferred_element_type is None:
        if lhs.dtype != rhs.dtype:
            raise type_error("dot_general", "operands must have the same dtype unless "
                             "preferred_element_type is given; convert one of them with "
                             "convert_element_type", lhs, rhs)
        dtype = lhs.dtype
    else:
        dtype = np.dtype(preferred_element_type)
        for a in (lhs, rhs):
            if (dtypes.is_int(a.dtype) and dtypes.is_int(dtype)
                    and dtype.itemsize < a.dtype.itemsize):
                raise type_error("dot_general", f"preferred_element_type {dtype.name} must not "
                                 f"be narrower than the operand type {a.dtype.name}", lhs, rhs)
    return ShapedArray(_out_shape(lhs, rhs, dimension_numbers), dtype,
                       lhs.weak_type and rhs.weak_type)


def _dot_attrs(dimension_numbers, precision) -> dict:
    """The attributes of a ``stablehlo.dot_general`` (no algorithm), made once per
    dimension numbers and precision (ops may share the dict: attributes are never changed
    in place)."""
    key = (dimension_numbers, precision)
    try:
        attrs = _dot_attrs_memo.get(key)
    except TypeError:  # unhashable (lists): made each time
        key, attrs = None, None
    if attrs is None:
        (lc, rc), (lb, rb) = dimension_numbers
        parts = []
        if lb:
            parts.append(f"lhs_batching_dimensions = {list(lb)}")
            parts.append(f"rhs_batching_dimensions = {list(rb)}")
        parts.append(f"lhs_contracting_dimensions = {list(lc)}")
        parts.append(f"rhs_contracting_dimensions = {list(rc)}")
        attrs = {"dot_dimension_numbers": f"#stablehlo.dot<{', '.join(parts)}>",
                 "precision_config": precision_config(precision)}
        if key is not None:
            _dot_attrs_memo[key] = attrs
    return attrs


_dot_attrs_memo = MemoCache("minijax_memo_cache_size")


@dot_general_p.def_lowering
def _dot_general_lower(ctx, lhs, rhs, *, dimension_numbers, precision=None,
                       preferred_element_type=None, out_sharding=None):
    out = ctx.avals_out[0]
    if out_sharding is not None:  # the product, then laid out as asked
        res = _dot_general_lower(ctx, lhs, rhs, dimension_numbers=dimension_numbers,
                                 precision=precision,
                                 preferred_element_type=preferred_element_type)
        return constrain(ctx, res, out_sharding)
    if (precision is None or type(precision) is tuple) and lhs.aval.dtype == rhs.aval.dtype:
        return ctx.op("stablehlo.dot_general", [lhs, rhs], out,
                      _dot_attrs(dimension_numbers, precision))
    acc = out
    attrs = {}
    if is_algorithm(precision):
        # As jax: operands converted to the algorithm's types, the product in its
        # accumulation type, then converted to the output type.
        check_on_cpu(precision)
        lt, rt, at = compute_types(precision, lhs.aval.dtype, rhs.aval.dtype, out.dtype)
        lhs, rhs = (ctx.op("stablehlo.convert", [v], ShapedArray(v.aval.shape, t))
                    if v.aval.dtype != t else v for v, t in ((lhs, lt), (rhs, rt)))
        acc = ShapedArray(out.shape, at)
        algorithm = algorithm_attr(precision, lt, rt)
        if algorithm is not None:
            attrs["algorithm"] = algorithm
    elif lhs.aval.dtype != rhs.aval.dtype:
        lhs, rhs = (ctx.op("stablehlo.convert", [v], ShapedArray(v.aval.shape, out.dtype))
                    if v.aval.dtype != out.dtype else v for v in (lhs, rhs))
    res = ctx.op("stablehlo.dot_general", [lhs, rhs], acc,
                 {**_dot_attrs(dimension_numbers, precision), **attrs})
    if acc.dtype != out.dtype:
        res = ctx.op("stablehlo.convert", [res], out)
    return res


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
    """General dot product: contract and batch the given dimensions.

    Parameters
    ----------
    lhs, rhs : arrays
    dimension_numbers : ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``
    precision : None, ``'DEFAULT'``/``'HIGH'``/``'HIGHEST'``, a pair of them, or a
        ``DotAlgorithm``/``DotAlgorithmPreset`` (or a preset's name)
    preferred_element_type : dtype of the result (and accumulation), optional

    Returns
    -------
    An array with dimensions (batch..., lhs free..., rhs free...).
    """
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize(preferred_element_type)
    dimension_numbers = _canonical_dimension_numbers(dimension_numbers)
    extra = {}
    if out_sharding is not None:
        (lc, rc), (lb, rb) = dimension_numbers
        ndim = get_aval(lhs).ndim + get_aval(rhs).ndim - len(lc) - len(rc) - len(lb)
        s = aval_out_sharding("dot_general", out_sharding, ndim)
        if s is not None:
            extra["out_sharding"] = s
    return dot_general_p.bind(lhs, rhs, dimension_numbers=dimension_numbers,
                              precision=_canonical_precision(precision),
                              preferred_element_type=preferred_element_type, **extra)


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
    """Vector/matrix product: contracts the last axis of ``lhs`` with the first of ``rhs``
    (both 1-D or 2-D), or, given ``dimension_numbers``, a ``dot_general`` (as
    ``jax.lax.dot``).
    """
    if dimension_numbers is None:
        la, ra = get_aval(lhs), get_aval(rhs)
        if not (la.ndim in (1, 2) and ra.ndim in (1, 2) and la.shape[-1] == ra.shape[0]):
            raise ValueError(f"lax.dot: dimension_numbers must be specified when not "
                             f"performing simple un-batched matrix-matrix, matrix-vector, or "
                             f"vector-vector products; got lhs_shape={la.shape} "
                             f"rhs_shape={ra.shape}")
        dimension_numbers = (((la.ndim - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision=precision,
                       preferred_element_type=preferred_element_type, out_sharding=out_sharding)


# ---- transformation rules ---------------------------------------------------------------


def _free_dims(ndim: int, contracting, batch) -> list[int]:
    return [d for d in range(ndim) if d not in contracting and d not in batch]


def _transpose_operand(ct, other, aval: ShapedArray, mine, theirs, ct_their_free: range,
                       params: dict):
    """The cotangent of one dot_general operand (of type ``aval``) given the other one.

    ``mine``/``theirs`` are the (contracting, batch) dims of the two operands and
    ``ct_their_free`` the positions of the other operand's free dims in ``ct``
    (whose dims are (batch, lhs free, rhs free)). Contracting ``ct`` with ``other``
    over those free dims, batched over the batch dims, gives the dims (batch, my
    free, my contracting ordered by the other's contracting dims), which a
    transpose puts back in order.
    """
    other_ndim = get_aval(other).ndim
    key = (other_ndim, aval.ndim, mine, theirs, ct_their_free.start, ct_their_free.stop)
    try:
        plan = _transpose_plans.get(key)
    except TypeError:  # dimension numbers given as lists
        key = plan = None
    if plan is None:
        plan = _transpose_plan(other_ndim, aval.ndim, mine, theirs, ct_their_free)
        if key is not None:
            _transpose_plans[key] = plan
    dims, perm = plan
    params = {k: v for k, v in params.items() if k != "out_sharding"}
    if aval._sharding is not None:  # sharding in types: the cotangent's is the operand's
        entries = spec_entries(aval._sharding, aval.ndim)
        order = list(range(aval.ndim)) if perm is None else \
            sorted(range(aval.ndim), key=perm.__getitem__)
        params["out_sharding"] = with_entries(aval._sharding, [entries[o] for o in order])
    out = dot_general_p.bind(ct, other, dimension_numbers=dims, **params)
    if perm is not None:
        out = transpose(out, perm)
    if get_aval(out).dtype != aval.dtype:
        out = convert_element_type(out, aval.dtype, aval.weak_type)
    return out


# (operand ranks, dimension numbers) -> (dims of the transposed product, permutation or None)
_transpose_plans = MemoCache("minijax_memo_cache_size")


def _transpose_plan(other_ndim: int, my_ndim: int, mine, theirs, ct_their_free: range):
    (my_c, my_b), (their_c, their_b) = mine, theirs
    their_free = _free_dims(other_ndim, their_c, their_b)
    dims = ((tuple(ct_their_free), tuple(their_free)), (tuple(range(len(my_b))), their_b))
    my_c_by_theirs = [my_c[i] for i in sorted(range(len(their_c)), key=their_c.__getitem__)]
    order = list(my_b) + _free_dims(my_ndim, my_c, my_b) + my_c_by_theirs
    perm = tuple(sorted(range(len(order)), key=order.__getitem__))
    return dims, (None if perm == tuple(range(my_ndim)) else perm)


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, **params):
    (lc, rc), (lb, rb) = dimension_numbers
    if is_undefined(lhs) and is_undefined(rhs):
        raise NotImplementedError("dot_general is not linear in both operands at once")
    if is_undefined(lhs):
        rhs_free = get_aval(rhs).ndim - len(rc) - len(rb)
        ct_ndim = get_aval(ct).ndim
        return [_transpose_operand(ct, rhs, lhs.aval, (lc, lb), (rc, rb),
                                   range(ct_ndim - rhs_free, ct_ndim), params), None]
    lhs_free = get_aval(lhs).ndim - len(lc) - len(lb)
    return [None, _transpose_operand(ct, lhs, rhs.aval, (rc, rb), (lc, lb),
                                     range(len(lb), len(lb) + lhs_free), params)]


defjvp(dot_general_p,
       lambda t, x, y, **params: dot_general_p.bind(t, y, **params),
       lambda t, x, y, **params: dot_general_p.bind(x, t, **params))
dot_general_p.def_transpose(_dot_general_transpose)


def _bump(dims, bdim: int) -> tuple[int, ...]:
    """``dims`` of an unbatched operand renumbered for the operand with ``bdim`` inserted."""
    return tuple(d + (d >= bdim) for d in dims)


def _dot_general_batch(trace, vals, dims, *, dimension_numbers, **params):
    # The vmapped dimension is folded into the dot itself: a new leading batch dimension
    # when both operands are mapped, else one more free dimension of the mapped operand.
    # No operand is moved or broadcast.
    lhs, rhs = vals
    lbd, rbd = dims
    (lc, rc), (lb, rb) = dimension_numbers
    if lbd is not None and rbd is not None:
        new = ((_bump(lc, lbd), _bump(rc, rbd)), ((lbd,) + _bump(lb, lbd), (rbd,) + _bump(rb, rbd)))
        out_bdim = 0
    elif lbd is not None:
        lhs_free = _free_dims(get_aval(lhs).ndim - 1, lc, lb)
        new = ((_bump(lc, lbd), rc), (_bump(lb, lbd), rb))
        out_bdim = len(lb) + sum(d < lbd for d in lhs_free)
    else:
        rhs_free = _free_dims(get_aval(rhs).ndim - 1, rc, rb)
        lhs_free = _free_dims(get_aval(lhs).ndim, lc, lb)
        new = ((lc, _bump(rc, rbd)), (lb, _bump(rb, rbd)))
        out_bdim = len(lb) + len(lhs_free) + sum(d < rbd for d in rhs_free)
    params = {k: v for k, v in params.items() if k != "out_sharding"}
    return dot_general_p.bind(lhs, rhs, dimension_numbers=new, **params), out_bdim


dot_general_p.def_batch(_dot_general_batch)


# ---- sharding in types (core/sharding_rules.py) ----------------------------------------

def _check_specs_match(lhs_spec, rhs_spec, msg: str) -> None:
    for a, b in zip(lhs_spec, rhs_spec):
        if a is not None and b is not None and a != b:
            raise ShardingTypeError(msg)


def _dot_general_sharding(lhs, rhs, *, dimension_numbers, precision=None,
                          preferred_element_type=None, out_sharding=None):
    """jax's rule: batch dims keep their (common) entries, free dims theirs; contracting
    dims split on both sides make the result ambiguous (ShardingTypeError) unless
    ``out_sharding`` says it."""
    ls, rs = sharding_of(lhs), sharding_of(rhs)
    if ls is not None and rs is not None and not ls.mesh.empty and not rs.mesh.empty \
            and ls.mesh != rs.mesh:
        raise ShardingTypeError(f"Mesh of both lhs and rhs should match. Got lhs: {ls.mesh} "
                                f"and rhs: {rs.mesh}")
    if out_sharding is not None:
        return out_sharding
    base = ls if ls is not None else rs
    le = spec_entries(ls, lhs.ndim) if ls is not None else [None] * lhs.ndim
    re_ = spec_entries(rs, rhs.ndim) if rs is not None else [None] * rhs.ndim
    (lc, rc), (lb, rb) = dimension_numbers
    lcs, rcs = tuple(le[i] for i in lc), tuple(re_[i] for i in rc)
    lbs, rbs = tuple(le[i] for i in lb), tuple(re_[i] for i in rb)
    _check_specs_match(lbs, rbs, "dot_general requires lhs batch dimensions and rhs batch "
                       f"dimensions to have the consistent sharding, got {lbs} and {rbs}.")
    _check_specs_match(lcs, rcs, "dot_general requires contracting dimensions to have "
                       f"consistent sharding, got {lcs} and {rcs}.")
    for a, b in zip(lcs, rcs):
        if a is not None and b is not None:
            raise ShardingTypeError(
                "Contracting dimensions are sharded and it is ambiguous how the output should "
                "be sharded. Please specify the output sharding via the `out_sharding` "
                f"parameter. Got lhs_contracting_spec={lcs} and rhs_contracting_spec={rcs}")
    lfree = [le[i] for i in range(lhs.ndim) if i not in lc and i not in lb]
    rfree = [re_[i] for i in range(rhs.ndim) if i not in rc and i not in rb]
    batch = [a if a is not None else b for a, b in zip(lbs, rbs)]
    entries = batch + lfree + rfree
    used = [a for e in entries if e is not None for a in ((e,) if isinstance(e, str) else e)]
    if len(used) != len(set(used)):
        raise ShardingTypeError(
            f"dot_general: the result's spec {tuple(entries)} would use a mesh axis twice; "
            "give its sharding with `out_sharding`")
    return with_entries(base, entries)


def_sharding_rule(dot_general_p, _dot_general_sharding)
