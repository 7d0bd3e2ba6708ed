"""reduce: XLA's Reduce with any (associative) computation, over one or more operands.

``lax.reduce(operands, init_values, computation, dimensions)`` uses the monoid
reductions (``reduce_sum``, ``reduce_max``, ...) when ``computation`` is ``lax.add``,
``lax.max``, ... and the init value is that operation's identity, as jax does;
otherwise it binds ``reduce_p``, which carries ``computation`` as a closed jaxpr on
scalars (``(*accumulators, *values) -> accumulators``) and lowers to
``stablehlo.reduce`` with it as the region.

jvp (as jax's): the reduction redone as a tree of pairwise ``computation`` calls
(vectorized over each level), differentiated; the init values must have zero tangents.
Batching maps the operands at axis 0 (init values must be unbatched, as in jax). Not
linear: no transpose.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minijax.core.aval import ShapedArray
from minijax.core.trace import (DebugInfo, Primitive, Tracer, eval_jaxpr, get_aval,
                                trace_to_jaxpr)
from minijax.core.jaxpr import ClosedJaxpr
from minijax.lax import binary, reduce as reductions
from minijax.lax._util import check_out_sharding, static_ints, type_error
from minijax.lax.convert import convert_element_type
from minijax.lax.reduce_xor import reduce_xor
from minijax.lax.shape import broadcast_in_dim, concatenate, reshape, transpose
from minijax.lax.slicing import slice_in_dim
from minijax.lowering.types import i64_array
from minijax.transforms.ad import Zero, instantiate, jvp_flat, tangent_aval
from minijax.transforms.batching import batch_jaxpr, bdim_at
from minijax._pytree import tree_flatten, tree_unflatten

reduce_p = Primitive("reduce", multiple_results=True)


def _reduce_abstract(*args, jaxpr, dimensions):
    n = len(args) // 2
    ops, inits = args[:n], args[n:]
    if any(o.shape != ops[0].shape for o in ops):
        raise type_error("reduce", "operands must have the same shape", *ops)
    if any(i.shape != () for i in inits):
        raise type_error("reduce", "init values must be scalars", *inits)
    if [o.dtype for o in ops] != [i.dtype for i in inits]:
        raise type_error("reduce", "operand and init value dtypes must match", *args)
    shape = ops[0].shape
    if any(not 0 <= d < len(shape) for d in dimensions) or len(set(dimensions)) != len(
            dimensions):
        raise ValueError(f"reduce: dimensions {dimensions} are not distinct dimensions of an "
                         f"operand of shape {shape}")
    out_shape = tuple(s for i, s in enumerate(shape) if i not in dimensions)
    outs = jaxpr.out_avals
    if [a.dtype for a in outs] != [i.dtype for i in inits] or any(a.shape for a in outs):
        raise TypeError(f"reduce: the computation must return scalars of the init values' "
                        f"dtypes, got {[a.str_short() for a in outs]}")
    return [ShapedArray(out_shape, o.dtype, o.weak_type and i.weak_type)
            for o, i in zip(ops, inits)]


def _reduce_lower(ctx, *args, jaxpr, dimensions):
    n = len(args) // 2
    scalars = [ShapedArray((), a.aval.dtype) for a in args[n:]]
    region = ctx.new_region(scalars + scalars)
    with ctx.in_region(region):
        ctx.ret(ctx.lower_jaxpr(jaxpr, list(region.args), name="reduce"))
    return ctx.op("stablehlo.reduce", list(args), list(ctx.avals_out),
                  {"dimensions": i64_array(dimensions)}, regions=[region])


def _tree_reduce(jaxpr: ClosedJaxpr, xs: list, inits: list) -> list:
    """Reduce the leading axis of ``xs`` by pairing neighbours level by level (the
    computation is associative), then fold in the init values."""
    n = len(xs)
    while get_aval(xs[0]).shape[0] > 1:
        size = get_aval(xs[0]).shape[0]
        if size % 2:
            xs = [concatenate([x, broadcast_in_dim(i, (1, *get_aval(x).shape[1:]), ())], 0)
                  for x, i in zip(xs, inits)]
            size += 1
        evens = [slice_in_dim(x, 0, size, 2, 0) for x in xs]
        odds = [slice_in_dim(x, 1, size, 2, 0) for x in xs]
        step, _ = batch_jaxpr(jaxpr, [0] * (2 * n), size // 2, instantiate=True)
        xs = eval_jaxpr(step.jaxpr, step.consts, *evens, *odds)
    last = [reshape(x, get_aval(x).shape[1:]) for x in xs]
    rest = get_aval(last[0]).shape
    if not rest:
        return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *inits, *last)
    size = int(np.prod(rest, dtype=np.int64))
    fold, _ = batch_jaxpr(jaxpr, [None] * n + [0] * n, size, instantiate=True)
    outs = eval_jaxpr(fold.jaxpr, fold.consts, *inits, *[reshape(x, (size,)) for x in last])
    return [reshape(o, rest) for o in outs]


def _reduce_jvp(primals, tangents, *, jaxpr, dimensions):
    n = len(primals) // 2
    ops, inits = list(primals[:n]), list(primals[n:])
    t_ops, t_inits = tangents[:n], tangents[n:]
    outs = reduce_p.bind(*primals, jaxpr=jaxpr, dimensions=dimensions)
    if any(type(t) is not Zero for t in t_inits):
        raise NotImplementedError("Gradient of general lax.reduce with non-zero tangents for "
                                  "initial values to reduction not implemented")
    if all(type(t) is Zero for t in t_ops):
        return outs, [Zero(tangent_aval(get_aval(o))) for o in outs]
    shape = get_aval(ops[0]).shape
    kept = [d for d in range(len(shape)) if d not in dimensions]
    perm = (*dimensions, *kept)
    front = (int(np.prod([shape[d] for d in dimensions], dtype=np.int64)),
             *(shape[d] for d in kept))

    def flat(x):
        return reshape(transpose(x, perm), front)

    def tree(*xs):
        return _tree_reduce(jaxpr, list(xs), inits)

    _, t_outs = jvp_flat(tree, [flat(x) for x in ops],
                         [Zero(tangent_aval(get_aval(flat(x)))) if type(t) is Zero
                          else flat(instantiate(t)) for x, t in zip(ops, t_ops)])
    return outs, t_outs


def _reduce_batch(trace, vals, dims, *, jaxpr, dimensions):
    n = len(vals) // 2
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError("reduce with batched init values is not implemented "
                                  "(as in jax)")
    ops = [bdim_at(v, d, trace.axis_size, 0) for v, d in zip(vals[:n], dims[:n])]
    outs = reduce_p.bind(*ops, *vals[n:], jaxpr=jaxpr,
                         dimensions=tuple(d + 1 for d in dimensions))
    return outs, [0] * n


# Registration (not linear: no transpose).
reduce_p.def_abstract_eval(_reduce_abstract)
reduce_p.def_lowering(_reduce_lower)
reduce_p.def_jvp(_reduce_jvp)
reduce_p.def_batch(_reduce_batch)


def _monoid(computation, init):
    """The monoid reduction ``computation`` with identity ``init`` amounts to, if any."""
    if isinstance(init, Tracer):
        return None
    value = np.asarray(init)
    kinds = {binary.add: ("add", reductions.reduce_sum),
             binary.mul: ("mul", reductions.reduce_prod),
             binary.max: ("max", reductions.reduce_max),
             binary.min: ("min", reductions.reduce_min),
             binary.bitwise_and: ("and", reductions.reduce_and),
             binary.bitwise_or: ("or", reductions.reduce_or),
             binary.bitwise_xor: ("or", reduce_xor)}
    kind = kinds.get(computation)
    if kind is None:
        return None
    name, fn = kind
    identity = reductions.identity_value(name, value.dtype)
    if name in ("max", "min") and value.dtype.kind == "f":
        identity = np.array(-np.inf if name == "max" else np.inf, value.dtype)
    return fn if np.array_equal(value, identity) else None


def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int],
           out_sharding=None):
    """Reduce ``operands`` (an array or a pytree of equally shaped arrays) over
    ``dimensions`` with ``computation(accumulators, values)``, starting from the scalar
    ``init_values`` (mirrors ``jax.lax.reduce``). ``computation`` must be associative
    and commutative; its two arguments and result have ``init_values``' structure."""
    check_out_sharding("reduce", out_sharding)
    dimensions = static_ints(dimensions, "reduce dimensions")
    flat_ops, _ = tree_flatten(operands)
    flat_inits, init_tree = tree_flatten(init_values)
    if len(flat_ops) != len(flat_inits):
        raise ValueError(f"reduce: {len(flat_ops)} operands but {len(flat_inits)} init values")
    if len(flat_ops) == 1:
        fn = _monoid(computation, flat_inits[0])
        if fn is not None:
            x, i = flat_ops[0], flat_inits[0]
            out = fn(x, dimensions)
            weak = getattr(get_aval(x), "weak_type", False) and get_aval(i).weak_type
            return convert_element_type(out, get_aval(out).dtype, weak)
    init_avals = [ShapedArray((), get_aval(i).dtype, get_aval(i).weak_type)
                  for i in flat_inits]

    def flat_computation(*args):
        k = len(init_avals)
        acc = tree_unflatten(init_tree, list(args[:k]))
        val = tree_unflatten(init_tree, list(args[k:]))
        out, out_tree = tree_flatten(computation(acc, val))
        if out_tree != init_tree:
            raise TypeError(f"reduce: the computation must return a value of the init values' "
                            f"structure {init_tree}, got {out_tree}")
        return out, None

    jaxpr, consts, _ = trace_to_jaxpr(flat_computation, init_avals + init_avals,
                                      DebugInfo("reduce", getattr(computation, "__name__",
                                                                  "computation"), None))
    if any(isinstance(c, Tracer) for c in consts):
        raise TypeError("reduce: the computation may not close over traced values")
    outs = reduce_p.bind(*flat_ops, *flat_inits, jaxpr=ClosedJaxpr(jaxpr, consts),
                         dimensions=dimensions)
    return tree_unflatten(init_tree, list(outs))
