"""Windowed reductions: ``reduce_window`` and the max-pool gradient primitives.

- ``reduce_window_sum_p``, ``reduce_window_max_p``, ``reduce_window_min_p``: a
  monoid reduced over every window, lowered to ``stablehlo.reduce_window`` with a
  one-op region. ``lax.reduce_window`` picks them for ``lax.add``/``max``/``min``
  with the monoid's identity as the init value, as jax does.
- ``reduce_window_p``: any reducer (traced to a jaxpr, param ``jaxpr``) over one or
  more operands, each with its init value (operands ``*operands, *init_values``).
- ``select_and_gather_add_p``: for each window of ``operand``, the element of
  ``tangents`` where ``operand`` is largest (``select_prim=ge``) or smallest
  (``le``): the jvp of max/min pooling, lowered as a two-operand reduce_window.
- ``select_and_scatter_add_p``: its transpose, adding each window's ``source`` value
  at that window's selected position; lowered to ``stablehlo.select_and_scatter``.

The window params are jax's: ``window_dimensions``, ``window_strides``, ``padding``
(``(low, high)`` pairs), ``base_dilation`` and ``window_dilation``, all tuples with
one entry per operand dimension.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr
from minijax.core.trace import DebugInfo, Primitive, Tracer, get_aval, trace_to_jaxpr
from minijax.lax import binary
from minijax.lax._util import check_dtype, type_error
from minijax.lax.convolution import (_dilate_shape, _stride_dim, _vjp_lhs_padding,
                                     padtype_to_pads)
from minijax.lax.reduce import identity_value, scalar_region
from minijax.lax.shape import pad
from minijax.lax.slicing import slice as slice_
from minijax.lowering.types import dense_i64, i64_array
from minijax.transforms.ad import (Zero, defjvp, deflinear, instantiate, jvp_jaxpr,
                                   tangent_aval)
from minijax.transforms.batching import bdim_at
from minijax._pytree import tree_flatten, tree_unflatten

# ---- shapes ---------------------------------------------------------------------------------

def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None) -> tuple[int, ...]:
    """The shape of ``reduce_window``'s result.

    >>> reduce_window_shape_tuple((8, 8), (2, 2), (2, 2), ((0, 0), (0, 0)))
    (4, 4)
    """
    if base_dilation is not None:
        operand_shape = _dilate_shape(operand_shape, base_dilation)
    if window_dilation is not None:
        window_dimensions = _dilate_shape(window_dimensions, window_dilation)
    return tuple(_stride_dim(int(d) + lo + hi, int(w), int(s)) for d, (lo, hi), w, s
                 in zip(operand_shape, padding, window_dimensions, window_strides))


def _check_window(prim: str, aval: ShapedArray, window_dimensions, window_strides, padding,
                  base_dilation, window_dilation) -> None:
    """TypeErrors (as jax's) for window params that do not fit ``aval``."""
    n = aval.ndim
    for what, values, low in (("window_dimensions", window_dimensions, 1),
                              ("window_strides", window_strides, 1),
                              ("base_dilation", base_dilation, 1),
                              ("window_dilation", window_dilation, 1)):
        if len(values) != n:
            raise TypeError(f"{prim} got the wrong number of {what} for an operand of rank "
                            f"{n}: got operand shape {aval.shape} with {what} {values}.")
        if any(v < low for v in values):
            raise TypeError(f"{prim} {what} must have every element be strictly positive, "
                            f"got {values}.")
    if len(padding) != n or any(len(p) != 2 for p in padding):
        raise TypeError(f"{prim} padding must be one (low, high) pair per dimension of the "
                        f"operand: got operand shape {aval.shape} with padding {padding}.")
    dilated = _dilate_shape(aval.shape, base_dilation)
    if any(d + lo + hi < 0 for d, (lo, hi) in zip(dilated, padding)):
        raise ValueError(f"{prim}: negative padding {padding} removes more than the "
                         f"(dilated) operand shape {dilated}.")


def _window_shape(prim: str, aval: ShapedArray, *, window_dimensions, window_strides, padding,
                  base_dilation, window_dilation) -> tuple[int, ...]:
    _check_window(prim, aval, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation)
    return reduce_window_shape_tuple(aval.shape, window_dimensions, window_strides, padding,
                                     base_dilation, window_dilation)


def _window_attrs(*, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation) -> dict:
    n = len(window_dimensions)
    return {
        "base_dilations": i64_array(base_dilation),
        "padding": dense_i64(padding, (n, 2)) if n else "dense<> : tensor<0x2xi64>",
        "window_dilations": i64_array(window_dilation),
        "window_dimensions": i64_array(window_dimensions),
        "window_strides": i64_array(window_strides),
    }


def _with_unit_window(axis: int, params: dict) -> dict:
    """Window params for an operand with a new axis at ``axis`` (a window of 1 there)."""
    unit = {"window_dimensions": 1, "window_strides": 1, "padding": (0, 0),
            "base_dilation": 1, "window_dilation": 1}
    out = dict(params)
    for k, v in unit.items():
        if k in params:
            out[k] = params[k][:axis] + (v,) + params[k][axis:]
    return out


def _sorted_params(params: dict) -> dict:
    """Params in jaxprs in alphabetical order, as jax prints them."""
    return dict(sorted(params.items()))


# ---- transformation rules (registered with each primitive below) --------------------------

def _reduce_window_sum_transpose(ct, x, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
    # Each input element was added into every window that covers it: spread the
    # cotangent back (interior padding undoes the strides) and sum it over windows
    # (the base dilation becomes the stride).
    shape = x.aval.shape
    pads = _vjp_lhs_padding(shape, window_dimensions, window_strides, get_aval(ct).shape,
                            padding, base_dilation, window_dilation)
    config = [(lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides)]
    spread = pad(ct, np.zeros((), get_aval(ct).dtype), config)
    ones = (1,) * len(shape)
    return [reduce_window_sum_p.bind(spread, window_dimensions=window_dimensions,
                                     window_strides=base_dilation,
                                     padding=((0, 0),) * len(shape), base_dilation=ones,
                                     window_dilation=window_dilation)]


def _chooser_jvp(select_prim: Primitive):
    """jvp of reduce_window_max/min: each window's tangent at its selected element."""
    def partial(t, x, **window):
        return _select_and_gather_add(t, x, select_prim, window)
    return partial


def _reduce_window_jvp(primals, tangents, *, jaxpr, **window):
    # Reduce (primal, tangent) pairs with the jvp of the reducer. Every inexact operand
    # carries a tangent (zeros where it has none), so the reducer's tangents close.
    n = len(primals) // 2
    operands, inits = list(primals[:n]), list(primals[n:])
    op_ts, init_ts = tangents[:n], tangents[n:]
    outs_avals = [get_aval(x) for x in operands]
    if any(type(t) is not Zero for t in init_ts):
        raise TypeError("reduce_window jvp does not support non-zero init_value tangents.")
    if all(type(t) is Zero for t in op_ts):
        outs = reduce_window_p.bind(*primals, jaxpr=jaxpr, **window)
        return outs, [Zero(tangent_aval(get_aval(o))) for o in outs]
    carried = [dtypes.is_inexact(a.dtype) for a in outs_avals]
    jvp, out_nz = jvp_jaxpr(jaxpr, carried + carried, carried)
    if out_nz != carried:
        raise NotImplementedError("reduce_window jvp: the reducer's tangents do not line up "
                                  "with its operands")
    k = sum(carried)
    # jvp's inputs are (xs, ys, txs, tys); the pair reduction's are (xs, txs, ys, tys).
    j = jvp.jaxpr
    order = [*range(n), *range(2 * n, 2 * n + k), *range(n, 2 * n), *range(2 * n + k,
                                                                           2 * n + 2 * k)]
    reducer = ClosedJaxpr(Jaxpr(j.constvars, [j.invars[i] for i in order], j.outvars, j.eqns,
                                j.debug_info), jvp.consts)
    ts = [instantiate(t) for t, c in zip(op_ts, carried) if c]
    t_inits = [np.zeros((), a.dtype) for a, c in zip(outs_avals, carried) if c]
    res = reduce_window_p.bind(*operands, *ts, *inits, *t_inits, jaxpr=reducer, **window)
    # The primal outputs come from their own reduction, so that reverse mode sees them
    # known and reports the missing transpose (the paired reduction is not transposable).
    outs, touts = reduce_window_p.bind(*primals, jaxpr=jaxpr, **window), iter(res[n:])
    return outs, [next(touts) if c else Zero(tangent_aval(get_aval(o)))
                  for o, c in zip(outs, carried)]


def _monoid_batch(prim: Primitive):
    def rule(trace, vals, dims, **window):
        (x,), (bdim,) = vals, dims
        return prim.bind(x, **_with_unit_window(bdim, window)), bdim
    return rule


def _reduce_window_batch(trace, vals, dims, *, jaxpr, **window):
    n = len(vals) // 2
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError("reduce_window batching is not implemented for initial "
                                  "values")
    operands = [bdim_at(x, d, trace.axis_size) for x, d in zip(vals[:n], dims[:n])]
    outs = reduce_window_p.bind(*operands, *vals[n:], jaxpr=jaxpr,
                                **_with_unit_window(0, window))
    return outs, [0] * n


def _sga_transpose(ct, tangents, operand, *, select_prim, window_dimensions, window_strides,
                   padding, base_dilation, window_dilation):
    if any(d != 1 for d in window_dilation):
        raise NotImplementedError(f"VJP not implemented for select_and_gather (MaxPool) with "
                                  f"window dilation, got window_dilation={window_dilation}.")
    if any(d != 1 for d in base_dilation):  # holes of the dilated operand are never selected
        kind = "max" if select_prim is binary.ge_p else "min"
        aval = get_aval(operand)
        operand = pad(operand, identity_value(kind, aval.dtype),
                      [(0, 0, d - 1) for d in base_dilation])
    out = _select_and_scatter_add(ct, operand, select_prim, window_dimensions, window_strides,
                                  padding)
    if any(d != 1 for d in base_dilation):
        out = slice_(out, (0,) * get_aval(out).ndim, get_aval(out).shape, base_dilation)
    return [out, None]


def _ssa_transpose(ct, source, operand, *, select_prim, window_dimensions, window_strides,
                   padding):
    ones = (1,) * len(window_dimensions)
    return [_select_and_gather_add(ct, operand, select_prim, {
        "window_dimensions": window_dimensions, "window_strides": window_strides,
        "padding": padding, "base_dilation": ones, "window_dilation": ones}), None]


def _pair_batch(prim: Primitive):
    """Batching for the two-operand select primitives: both batch dims to the front."""
    def rule(trace, vals, dims, **params):
        a, b = (bdim_at(v, d, trace.axis_size) for v, d in zip(vals, dims))
        return prim.bind(a, b, **_with_unit_window(0, params)), 0
    return rule


def _linear_in_first(prim: Primitive):
    """jvp of a primitive linear in its first operand (the second only selects)."""
    def tangent(t, first, second, **params):
        return prim.bind(t, second, **params)
    defjvp(prim, tangent, None)



# ---- monoid reductions: sum, max, min ---------------------------------------------------------

def _monoid_primitive(name: str, kind: str, kinds: str) -> Primitive:
    p = Primitive(name)

    def abstract_eval(x, **window):
        check_dtype(name, x, kinds)
        return ShapedArray(_window_shape(name, x, **window), x.dtype, x.weak_type)

    def lowering(ctx, x, **window):
        out = ctx.avals_out[0]
        init = ctx.constant(identity_value(kind, out.dtype), out.dtype)
        return ctx.op("stablehlo.reduce_window", [x, init], out, _window_attrs(**window),
                      regions=[scalar_region(ctx, kind, out.dtype)])

    p.def_abstract_eval(abstract_eval)
    p.def_lowering(lowering)
    p.pp_params = _sorted_params
    return p


reduce_window_sum_p = _monoid_primitive("reduce_window_sum", "add", "fciu")
deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)
reduce_window_sum_p.def_batch(_monoid_batch(reduce_window_sum_p))

reduce_window_max_p = _monoid_primitive("reduce_window_max", "max", "fciub")
defjvp(reduce_window_max_p, _chooser_jvp(binary.ge_p))
reduce_window_max_p.def_batch(_monoid_batch(reduce_window_max_p))

reduce_window_min_p = _monoid_primitive("reduce_window_min", "min", "fciub")
defjvp(reduce_window_min_p, _chooser_jvp(binary.le_p))
reduce_window_min_p.def_batch(_monoid_batch(reduce_window_min_p))


def _window_params(window_dimensions, window_strides, padding, base_dilation,
                   window_dilation) -> dict:
    n = len(window_dimensions)
    return {
        "window_dimensions": _ints(window_dimensions, "window_dimensions"),
        "window_strides": _ints(window_strides, "window_strides"),
        "padding": tuple(_ints(p, "padding") for p in padding),
        "base_dilation": (1,) * n if base_dilation is None else _ints(base_dilation,
                                                                      "base_dilation"),
        "window_dilation": (1,) * n if window_dilation is None else _ints(window_dilation,
                                                                          "window_dilation"),
    }


def _ints(values, what: str) -> tuple[int, ...]:
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"reduce_window {what} must be a sequence of integers, got "
                        f"{values!r}") from None


# ---- the generic reduce_window ----------------------------------------------------------------

reduce_window_p = Primitive("reduce_window", multiple_results=True)
reduce_window_p.pp_params = _sorted_params


@reduce_window_p.def_abstract_eval
def _reduce_window_abstract(*avals, jaxpr, **window):
    n = len(avals) // 2
    operands, inits = avals[:n], avals[n:]
    if any(o.dtype != i.dtype for o, i in zip(operands, inits)):
        raise TypeError(f"reduce_window got inconsistent dtypes for operands and init_values: "
                        f"got operand dtypes {[o.dtype.name for o in operands]} and "
                        f"init_value dtypes {[i.dtype.name for i in inits]}.")
    if any(i.shape != () for i in inits):
        raise TypeError(f"reduce_window expected init_values to be scalars but init_values "
                        f"have shapes {[i.shape for i in inits]}.")
    if any(o.shape != operands[0].shape for o in operands):
        raise type_error("reduce_window", "operands must all have the same shape", *operands)
    shape = _window_shape("reduce_window", operands[0], **window)
    return [ShapedArray(shape, o.dtype, o.weak_type) for o in operands]


@reduce_window_p.def_lowering
def _reduce_window_lower(ctx, *args, jaxpr, **window):
    n = len(args) // 2
    scalars = [ShapedArray((), a.dtype) for a in ctx.avals_out]
    region = ctx.new_region(scalars + scalars)
    with ctx.in_region(region):
        ctx.ret(ctx.lower_jaxpr(jaxpr, region.args))
    return ctx.op("stablehlo.reduce_window", list(args), list(ctx.avals_out),
                  _window_attrs(**window), regions=[region])[:n]


reduce_window_p.def_jvp(_reduce_window_jvp)
reduce_window_p.def_batch(_reduce_window_batch)


def _reducer_jaxpr(computation: Callable, init_tree, init_avals) -> tuple[ClosedJaxpr, object]:
    """``computation(x_tree, y_tree)`` traced on scalars: ``(*xs, *ys) -> outs``."""
    n = len(init_avals)

    def flat(*args):
        out = computation(tree_unflatten(init_tree, args[:n]),
                          tree_unflatten(init_tree, args[n:]))
        leaves, tree = tree_flatten(out)
        return leaves, tree

    name = getattr(computation, "__name__", "computation")
    scalars = [ShapedArray((), a.dtype, a.weak_type) for a in init_avals]
    jaxpr, consts, out_tree = trace_to_jaxpr(flat, scalars + scalars,
                                             DebugInfo("reduce_window", name, None))
    if any(isinstance(c, Tracer) for c in consts):
        raise TypeError("reduce_window: the computation must not close over traced values; "
                        "pass them as operands instead")
    return ClosedJaxpr(jaxpr, consts), out_tree


def _monoid_reducer(computation, inits) -> Primitive | None:
    """The monoid primitive for ``computation`` with its identity as the only init value."""
    if len(inits) != 1 or isinstance(inits[0], Tracer):
        return None
    prim = {binary.add: reduce_window_sum_p, binary.max: reduce_window_max_p,
            binary.min: reduce_window_min_p}.get(computation)
    if prim is None:
        return None
    value = np.asarray(inits[0])
    if value.shape != ():
        return None
    kind = {reduce_window_sum_p: "add", reduce_window_max_p: "max",
            reduce_window_min_p: "min"}[prim]
    dtype = get_aval(inits[0]).dtype
    return prim if value == identity_value(kind, dtype) else None


def reduce_window(operand, init_value, computation: Callable,
                  window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
                  padding="VALID", base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None):
    """Reduce every window of ``operand`` with ``computation``.

    Parameters
    ----------
    operand : an array, or a pytree of arrays of one shape
    init_value : a scalar (pytree of scalars, as ``operand``): the reduction's start
    computation : ``(x, y) -> z`` on pytrees like ``operand``, associative
    window_dimensions : the window's size in each dimension
    window_strides : the step between windows (default 1)
    padding : ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'`` or ``(low, high)`` pairs
    base_dilation, window_dilation : dilations of the operand and of the window

    Returns
    -------
    A pytree like ``operand``.

    Examples
    --------
    >>> x = jnp.arange(10.0)
    >>> reduce_window(x, 1.0, lax.mul, (2,))
    Array([ 0.,  2.,  6., 12., 20., 30., 42., 56., 72.], dtype=float32)
    """
    flat_operands, tree = tree_flatten(operand)
    flat_inits, init_tree = tree_flatten(init_value)
    if tree != init_tree:
        raise ValueError(f"Operands must have the same tree structure as init_values: {tree} "
                         f"vs. {init_tree}")
    if not flat_operands:
        raise ValueError("reduce_window must have at least one operand.")
    window_dimensions = _ints(window_dimensions, "window_dimensions")
    n = len(window_dimensions)
    strides = (1,) * n if window_strides is None else _ints(window_strides, "window_strides")
    if isinstance(padding, str):
        window = (window_dimensions if window_dilation is None
                  else _dilate_shape(window_dimensions, _ints(window_dilation,
                                                              "window_dilation")))
        padding = padtype_to_pads(get_aval(flat_operands[0]).shape, window, strides, padding)
    params = _window_params(window_dimensions, strides, padding, base_dilation,
                            window_dilation)
    monoid = _monoid_reducer(computation, flat_inits)
    if monoid is not None:
        return tree_unflatten(tree, [monoid.bind(flat_operands[0], **params)])
    jaxpr, out_tree = _reducer_jaxpr(computation, init_tree, [get_aval(x) for x in flat_inits])
    if out_tree != tree:
        raise ValueError(f"reduce_window output must have the same tree structure as the "
                         f"operands {tree} vs. {out_tree}")
    outs = reduce_window_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr, **params)
    return tree_unflatten(tree, outs)


# ---- select_and_gather_add: the jvp of max/min pooling -----------------------------------------

select_and_gather_add_p = Primitive("select_and_gather_add")
select_and_gather_add_p.pp_params = _sorted_params


@select_and_gather_add_p.def_abstract_eval
def _sga_abstract(tangents, operand, *, select_prim, **window):
    if tangents.shape != operand.shape or tangents.dtype != operand.dtype:
        raise type_error("select_and_gather_add", "tangents and operand must have the same "
                         "shape and dtype", tangents, operand)
    check_dtype("select_and_gather_add", operand, "f")
    shape = _window_shape("select_and_gather_add", operand, **window)
    return ShapedArray(shape, operand.dtype, tangents.weak_type)


def _select_region(ctx, select_prim: Primitive, dtype, pairs: bool):
    """The region ``(a, b) -> a if select(a, b) else b``; with ``pairs``, on (key, value)
    pairs ``(ka, va, kb, vb)`` selected by their keys."""
    s = ShapedArray((), dtype)
    region = ctx.new_region([s, s, s, s] if pairs else [s, s])
    with ctx.in_region(region):
        args = region.args
        ka, kb = (args[0], args[2]) if pairs else args
        which = ctx.op("stablehlo.compare", [ka, kb], ShapedArray((), dtypes.bool_), {
            "comparison_direction":
                f"#stablehlo<comparison_direction {select_prim.name.upper()}>",
            "compare_type": f"#stablehlo<comparison_type {binary._compare_type(dtype)}>"})
        if pairs:
            ctx.ret([ctx.op("stablehlo.select", [which, ka, kb], s),
                     ctx.op("stablehlo.select", [which, args[1], args[3]], s)])
        else:
            ctx.ret([which])
    return region


@select_and_gather_add_p.def_lowering
def _sga_lower(ctx, tangents, operand, *, select_prim, **window):
    # A reduce_window over (operand, tangents) pairs that keeps the selected pair.
    out = ctx.avals_out[0]
    dt = out.dtype
    start = -np.inf if select_prim is binary.ge_p else np.inf
    inits = [ctx.constant(start, dt), ctx.constant(0, dt)]
    region = _select_region(ctx, select_prim, dt, pairs=True)
    results = ctx.op("stablehlo.reduce_window", [operand, tangents, *inits], [out, out],
                     _window_attrs(**window), regions=[region])
    return results[1]


_linear_in_first(select_and_gather_add_p)
select_and_gather_add_p.def_transpose(_sga_transpose)
select_and_gather_add_p.def_batch(_pair_batch(select_and_gather_add_p))


def _select_and_gather_add(tangents, operand, select_prim, window):
    return select_and_gather_add_p.bind(tangents, operand, select_prim=select_prim, **window)


# ---- select_and_scatter_add: the transpose of select_and_gather_add ----------------------------

select_and_scatter_add_p = Primitive("select_and_scatter_add")
select_and_scatter_add_p.pp_params = _sorted_params


@select_and_scatter_add_p.def_abstract_eval
def _ssa_abstract(source, operand, *, select_prim, window_dimensions, window_strides,
                  padding):
    name = "select_and_scatter_add"
    if source.dtype != operand.dtype:
        raise type_error(name, "source and operand must have the same dtype", source, operand)
    ones = (1,) * operand.ndim
    shape = _window_shape(name, operand, window_dimensions=window_dimensions,
                          window_strides=window_strides, padding=padding, base_dilation=ones,
                          window_dilation=ones)
    if source.shape != shape:
        raise type_error(name, f"source must have the shape of the windowed operand {shape}",
                         source, operand)
    return ShapedArray(operand.shape, operand.dtype, source.weak_type)


@select_and_scatter_add_p.def_lowering
def _ssa_lower(ctx, source, operand, *, select_prim, window_dimensions, window_strides,
               padding):
    # As jax on CPU: pad the operand with the selection's identity instead of using
    # select_and_scatter's own padding (XLA:CPU mishandles it), then cut the pad off.
    out = ctx.avals_out[0]
    dt = out.dtype
    padded = operand
    if any(lo or hi for lo, hi in padding):
        kind = "max" if select_prim is binary.ge_p else "min"
        shape = tuple(d + lo + hi for d, (lo, hi) in zip(out.shape, padding))
        lo, hi = zip(*padding)
        padded = ctx.op("stablehlo.pad", [operand, ctx.constant(identity_value(kind, dt), dt)],
                        ShapedArray(shape, dt), {"edge_padding_high": i64_array(hi),
                                                 "edge_padding_low": i64_array(lo),
                                                 "interior_padding": i64_array([0] * out.ndim)})
    n = out.ndim
    result = ctx.op("stablehlo.select_and_scatter", [padded, source, ctx.constant(0, dt)],
                    padded.aval, {
                        "padding": dense_i64([[0, 0]] * n, (n, 2)) if n
                        else "dense<> : tensor<0x2xi64>",
                        "window_dimensions": i64_array(window_dimensions),
                        "window_strides": i64_array(window_strides)},
                    regions=[_select_region(ctx, select_prim, dt, pairs=False),
                             scalar_region(ctx, "or" if dt == dtypes.bool_ else "add", dt)])
    if padded is operand:
        return result
    if any(lo < 0 or hi < 0 for lo, hi in padding):  # elements cut off get zeros back
        return ctx.op("stablehlo.pad", [result, ctx.constant(0, dt)], out, {
            "edge_padding_high": i64_array([-hi for _, hi in padding]),
            "edge_padding_low": i64_array([-lo for lo, _ in padding]),
            "interior_padding": i64_array([0] * n)})
    start = [lo for lo, _ in padding]
    return ctx.op("stablehlo.slice", [result], out, {
        "limit_indices": i64_array([s + d for s, d in zip(start, out.shape)]),
        "start_indices": i64_array(start), "strides": i64_array([1] * n)})


_linear_in_first(select_and_scatter_add_p)
select_and_scatter_add_p.def_transpose(_ssa_transpose)
select_and_scatter_add_p.def_batch(_pair_batch(select_and_scatter_add_p))


def _select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides,
                            padding):
    return select_and_scatter_add_p.bind(source, operand, select_prim=select_prim,
                                         window_dimensions=window_dimensions,
                                         window_strides=window_strides, padding=padding)
