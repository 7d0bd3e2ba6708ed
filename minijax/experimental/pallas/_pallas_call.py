"""``pallas_call``: a kernel over a grid of blocks, as one primitive.

``pallas_call(kernel, out_shape, grid=..., in_specs=..., out_specs=...)(*args)``
traces ``kernel`` once to a jaxpr over refs (one per input block, output block
and scratch buffer), checks what a TPU compile would reject (``_checks.py``),
and binds::

    pallas_call[jaxpr, grid_mapping, compiler_params, interpret, name,
                input_output_aliases] *args -> *outs

Lowering. For a TPU target the kernel becomes a Mosaic custom call
(``_mosaic.py``). Anywhere else (or with ``interpret=True``) it is *interpreted*
in StableHLO: inputs are padded to whole blocks, outputs start uninitialized
(NaN / the integer minimum, or the aliased input), and one loop over the
flattened grid (row-major, as a TPU runs it) computes each grid point's block
starts from the ``index_map`` jaxprs, ``dynamic_slice``s the blocks, runs the
kernel with its refs as values (``_discharge.run_state``), and writes the output
blocks back with ``dynamic_update_slice``; scratch buffers persist across grid
points as loop-carried values.

vmap adds a leading grid dimension (the batch), with a squeezed block dimension
for every batched operand, so the batched kernel is still one loop.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax.config import config
from minijax.core import dtypes
from minijax.core.traceback_util import user_stacklevel
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.trace import (DebugInfo, Primitive, Tracer, current_ctx, eval_jaxpr, get_aval,
                                trace_to_jaxpr)
from minijax.experimental.pallas import _checks
from minijax.experimental.pallas._core import (BlockMapping, BlockSpec, GridMapping, MemoryRef,
                                               MemorySpace)
from minijax.experimental.pallas._discharge import KernelContext, run_state
from minijax.experimental.pallas._primitives import Ref, tracing_kernel
from minijax.lax._util import type_error
from minijax._pytree import tree_flatten

pallas_call_p = Primitive("pallas_call", multiple_results=True)

_INT32 = np.dtype(np.int32)
_I32 = ShapedArray((), _INT32)


# ---- the user API ----------------------------------------------------------------------------

class GridSpec:
    """``grid``, ``in_specs``, ``out_specs`` and ``scratch_shapes`` together."""

    def __init__(self, grid=(), in_specs=None, out_specs=None, scratch_shapes=()):
        self.grid = grid
        self.in_specs = in_specs
        self.out_specs = out_specs
        self.scratch_shapes = scratch_shapes


def _grid_tuple(grid) -> tuple:
    if grid is None:
        return ()
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    try:
        out = tuple(grid)
    except TypeError:
        raise TypeError(f"pallas_call: grid must be a tuple of ints, got {grid!r}") from None
    for g in out:
        if isinstance(g, Tracer) or not isinstance(g, (int, np.integer)) or g < 0:
            raise TypeError(f"pallas_call: grid must be a tuple of static non-negative ints, "
                            f"got {grid!r}")
    return tuple(int(g) for g in out)


def _is_spec(x) -> bool:
    return x is None or isinstance(x, BlockSpec)


def _specs_for(what: str, specs, tree, n: int, name: str) -> list:
    """One BlockSpec (or None) per leaf of ``tree``: ``specs`` is None, one BlockSpec for all,
    or a pytree of BlockSpecs matching the structure."""
    if specs is None or isinstance(specs, BlockSpec):
        return [specs] * n
    leaves, spec_tree = tree_flatten(specs, is_leaf=_is_spec)
    if spec_tree != tree:
        # a tuple of specs, one per positional argument / output, each for a whole subtree
        kids = tree.children() if hasattr(tree, "children") else None
        if isinstance(specs, (tuple, list)) and kids is not None and len(kids) == len(specs):
            out = []
            for spec, kid in zip(specs, kids):
                out.extend(_specs_for(what, spec, kid, kid.num_leaves, name))
            return out
        raise ValueError(f"pallas_call {name}: {what} must match the structure of the "
                         f"{'arguments' if what == 'in_specs' else 'out_shape'}: got {what} with "
                         f"structure {spec_tree} for {tree}")
    return leaves


def _trace_index_map(origin: str, index_map: Callable | None, grid: tuple, block_shape: tuple,
                     name: str) -> ClosedJaxpr:
    rank = len(block_shape)
    if index_map is not None:
        try:
            inspect.signature(index_map).bind(*range(len(grid)))
        except TypeError:
            raise TypeError(f"pallas_call {name}: the {origin} index_map cannot be called with "
                            f"{len(grid)} program id(s): it receives one per dimension of the "
                            f"grid {grid}") from None
        except ValueError:  # no signature (a builtin): let the call below decide
            pass

    def f(*ids):
        if index_map is None:
            return [np.zeros((), _INT32)] * rank, None
        out = index_map(*ids)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != rank:
            raise ValueError(f"pallas_call {name}: the {origin} index_map returned {len(out)} "
                             f"block indices but the block shape {block_shape} has rank {rank}; "
                             "return one block index per array dimension")
        res = []
        for i, o in enumerate(out):
            a = get_aval(o)
            if a.shape != () or not dtypes.is_int(a.dtype):
                raise TypeError(f"pallas_call {name}: the {origin} index_map must return integer "
                                f"scalars, got {a.str_short()} at position {i}")
            res.append(_to_int32(o))
        return res, None

    jaxpr, consts, _ = trace_to_jaxpr(f, [_I32] * len(grid),
                                      DebugInfo("pallas_call index_map", origin, None))
    if any(isinstance(c, Tracer) for c in consts):
        raise TypeError(f"pallas_call {name}: the {origin} index_map closes over a traced value; "
                        "index maps may only compute with the program ids and constants")
    return ClosedJaxpr(jaxpr, consts)


def _to_int32(x):
    from minijax.lax.convert import convert_element_type
    if isinstance(x, Tracer):
        return x if x.aval.dtype == _INT32 and not x.aval.weak_type else \
            convert_element_type(x, _INT32)
    return np.asarray(x, _INT32)


def _block_mapping(origin: str, spec: BlockSpec | None, aval: ShapedArray, grid: tuple,
                   name: str) -> tuple[BlockMapping, Callable | None]:
    if spec is None:
        spec = BlockSpec()
    if not isinstance(spec, BlockSpec):
        raise TypeError(f"pallas_call {name}: {origin} must be a pl.BlockSpec or None, got "
                        f"{spec!r}")
    block_shape = spec.block_shape if spec.block_shape is not None else aval.shape
    if len(block_shape) != aval.ndim:
        raise ValueError(f"pallas_call {name}: {origin} has block shape {block_shape} of rank "
                         f"{len(block_shape)} for an array of type {aval.str_short()}; give one "
                         "block dimension per array dimension (None to squeeze one)")
    space = spec.memory_space
    if space is not None and not isinstance(space, MemorySpace):
        raise TypeError(f"pallas_call {name}: {origin} memory_space must be a pltpu memory "
                        f"space (pltpu.VMEM, pltpu.SMEM, pltpu.ANY), got {space!r}")
    jaxpr = _trace_index_map(origin, spec.index_map, grid, tuple(block_shape), name)
    bm = BlockMapping(origin, tuple(block_shape), aval.strip_weak_type(), jaxpr, space)
    return bm, spec.index_map


def _shape_dtype(x, path: str, name: str) -> ShapedArray:
    try:
        return ShapedArray(tuple(int(d) for d in x.shape), dtypes.canonicalize(x.dtype))
    except (AttributeError, TypeError):
        raise TypeError(f"pallas_call {name}: out_shape{path} must have .shape and .dtype "
                        f"(e.g. a ShapeDtypeStruct), got {x!r}") from None


def _is_out_leaf(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


_warned_backends: set = set()


def _warn_interpret(name: str) -> None:
    from minijax.experimental.pallas._mosaic import _target
    from minijax.runtime.backend import default_backend
    backend = default_backend()
    if backend == "tpu" or _target.platform == "tpu" or backend in _warned_backends:
        return
    _warned_backends.add(backend)
    warnings.warn(f"pallas_call: the {backend} backend has no Pallas lowering (Mosaic needs a "
                  f"TPU), so kernels (here {name!r}) run in interpret mode: the kernel is "
                  "lowered to a StableHLO loop over the grid, with the TPU's checks. Pass "
                  "interpret=True to say so explicitly and silence this warning.",
                  stacklevel=user_stacklevel())


def pallas_call(kernel: Callable[..., None], out_shape: Any, *, grid_spec: GridSpec | None = None,
                grid=(), in_specs=None, out_specs=None, scratch_shapes=(),
                input_output_aliases: dict[int, int] | None = None, debug: bool = False,
                interpret: bool = False, name: str | None = None,
                compiler_params=None, cost_estimate=None) -> Callable[..., Any]:
    """Make a function that runs ``kernel`` over ``grid``, block by block.

    Parameters
    ----------
    kernel : ``kernel(*in_refs, *out_refs, *scratch_refs)``; reads its input blocks and
        writes its output blocks through the refs (returns None).
    out_shape : a pytree of ``ShapeDtypeStruct`` (anything with shape and dtype): the
        outputs' types.
    grid : the static grid (a tuple of ints); the kernel runs once per grid point.
    in_specs, out_specs : ``BlockSpec`` per input / output (None: the whole array).
    scratch_shapes : ``pltpu.VMEM(shape, dtype)`` / ``pltpu.SMEM(...)`` buffers that
        persist across grid points.
    input_output_aliases : ``{input index: output index}``: the output starts as that
        input's value (and may reuse its buffer).
    compiler_params : ``pltpu.CompilerParams``.
    interpret : run the kernel as a StableHLO loop (automatic without a TPU).
    name : the kernel's name (default: the function's name).
    grid_spec : a ``GridSpec`` giving grid, specs and scratch together.
    debug, cost_estimate : accepted for jax compatibility; unused.
    """
    if grid_spec is not None:
        grid, in_specs, out_specs = grid_spec.grid, grid_spec.in_specs, grid_spec.out_specs
        scratch_shapes = grid_spec.scratch_shapes
    grid = _grid_tuple(grid)
    name = name or getattr(kernel, "__name__", None) or "kernel"
    if compiler_params is not None:
        from minijax.experimental.pallas.tpu import CompilerParams
        if isinstance(compiler_params, dict):  # jax's older {"mosaic": {...}} form
            compiler_params = CompilerParams(**compiler_params.get("mosaic", compiler_params))
        if not isinstance(compiler_params, CompilerParams):
            raise TypeError(f"pallas_call {name}: compiler_params must be a "
                            f"pltpu.CompilerParams, got {compiler_params!r}")
    out_leaves, out_tree = tree_flatten(out_shape, is_leaf=_is_out_leaf)
    out_avals = [_shape_dtype(x, f"[{i}]" if out_tree.num_leaves > 1 else "", name)
                 for i, x in enumerate(out_leaves)]
    scratch_leaves, scratch_tree = tree_flatten(scratch_shapes,
                                                is_leaf=lambda x: isinstance(x, MemoryRef))
    for s in scratch_leaves:
        if not isinstance(s, MemoryRef):
            raise TypeError(f"pallas_call {name}: scratch_shapes entries must be "
                            f"pltpu.VMEM(shape, dtype) or pltpu.SMEM(shape, dtype), got {s!r}")
    scratch_avals = tuple(s.get_aval() for s in scratch_leaves)
    aliases = tuple(sorted((int(i), int(o)) for i, o in (input_output_aliases or {}).items()))
    cache: OrderedDict = OrderedDict()

    def build(leaves: list, in_tree, in_avals: tuple) -> dict:
        in_spec_list = _specs_for("in_specs", in_specs, in_tree, len(leaves), name)
        out_spec_list = _specs_for("out_specs", out_specs, out_tree, len(out_avals), name)
        ins, outs, maps = [], [], []
        for i, (spec, aval) in enumerate(zip(in_spec_list, in_avals)):
            bm, im = _block_mapping(f"in_specs[{i}]", spec, aval, grid, name)
            ins.append(bm)
            maps.append(im)
        for i, (spec, aval) in enumerate(zip(out_spec_list, out_avals)):
            bm, im = _block_mapping(f"out_specs[{i}]", spec, aval, grid, name)
            outs.append(bm)
            maps.append(im)
        for i, o in aliases:
            if not (0 <= i < len(ins) and 0 <= o < len(outs)):
                raise ValueError(f"pallas_call {name}: input_output_aliases {{{i}: {o}}} refers "
                                 f"to a missing input or output ({len(ins)} inputs, "
                                 f"{len(outs)} outputs)")
            a, b = ins[i].array_aval, outs[o].array_aval
            if a.shape != b.shape or a.dtype != b.dtype:
                raise ValueError(f"pallas_call {name}: input_output_aliases {{{i}: {o}}}: input "
                                 f"{i} of type {a.str_short()} cannot alias output {o} of type "
                                 f"{b.str_short()}; aliased arrays must have the same type")
        gm = GridMapping(grid, tuple(ins), tuple(outs), scratch_avals)
        _checks.check_all(name, grid, ins, outs, maps, scratch_avals, compiler_params)
        jaxpr = _trace_kernel(kernel, name, gm, in_tree, out_tree, scratch_tree)
        return dict(jaxpr=jaxpr, grid_mapping=gm, compiler_params=compiler_params,
                    interpret=bool(interpret), name=name, input_output_aliases=aliases)

    def wrapped(*args):
        leaves, in_tree = tree_flatten(args)
        in_avals = tuple(get_aval(x) for x in leaves)
        key = (in_tree, in_avals, current_ctx(), config.trace_key)
        params = cache.get(key)
        if params is None:
            params = build(leaves, in_tree, in_avals)
            cache[key] = params
            if len(cache) > 32:
                cache.popitem(last=False)
        if not interpret:
            _warn_interpret(name)
        outs = pallas_call_p.bind(*leaves, **params)
        return out_tree.unflatten(outs)

    wrapped.__name__ = name
    return wrapped


def _trace_kernel(kernel: Callable, name: str, gm: GridMapping, in_tree, out_tree,
                  scratch_tree) -> ClosedJaxpr:
    nin, nout = len(gm.in_blocks), len(gm.out_blocks)
    avals = [bm.ref_aval for bm in (*gm.in_blocks, *gm.out_blocks)] + list(gm.scratch_avals)

    def splat(tree, refs) -> list:
        x = tree.unflatten(refs)
        return list(x) if isinstance(x, (tuple, list)) else [x]

    def flat_kernel(*tracers):
        refs = [Ref(t) for t in tracers]
        ins = in_tree.unflatten(refs[:nin])   # the args tuple
        outs = splat(out_tree, refs[nin:nin + nout])
        scratch = splat(scratch_tree, refs[nin + nout:])
        result = kernel(*ins, *outs, *scratch)
        if result is not None:
            raise TypeError(f"pallas_call {name}: the kernel returned a value of type "
                            f"{type(result).__name__}; a kernel returns None and writes its "
                            "results into its output refs (o_ref[...] = value)")
        return [], None

    try:
        arg_names = [p for p in inspect.signature(kernel).parameters]
    except (TypeError, ValueError):
        arg_names = None
    with tracing_kernel(gm.grid):
        jaxpr, consts, _ = trace_to_jaxpr(flat_kernel, avals,
                                          DebugInfo("pallas_call", name, arg_names))
    if any(isinstance(c, Ref) for c in consts):
        raise TypeError(f"pallas_call {name}: a kernel ref was passed where an array was "
                        "expected (e.g. jnp.exp(x_ref)); read it first: x_ref[...]")
    traced = [c for c in consts if isinstance(c, Tracer)]
    if traced:
        raise TypeError(f"pallas_call {name}: the kernel closes over traced value(s) of type "
                        f"{', '.join(c.aval.str_short() for c in traced)} (from an enclosing "
                        "jit/vmap/grad); pass them to pallas_call as inputs with a BlockSpec")
    return ClosedJaxpr(jaxpr, consts)


# ---- the primitive ---------------------------------------------------------------------------

@pallas_call_p.def_abstract_eval
def _pallas_call_abstract(*avals, jaxpr, grid_mapping, compiler_params, interpret, name,
                          input_output_aliases):
    gm = grid_mapping
    expected = [bm.array_aval for bm in gm.in_blocks]
    if len(avals) != len(expected) or any(
            a.shape != e.shape or a.dtype != e.dtype for a, e in zip(avals, expected)):
        raise type_error("pallas_call", f"operands do not match the kernel {name}'s inputs "
                         f"({', '.join(e.str_short() for e in expected)})", *avals)
    return [bm.array_aval for bm in gm.out_blocks]


pallas_call_p.pp_params = lambda p: {
    "name": p["name"], "grid_mapping": p["grid_mapping"],
    "compiler_params": p["compiler_params"], "input_output_aliases": p["input_output_aliases"],
    "interpret": p["interpret"], "jaxpr": p["jaxpr"]}


@pallas_call_p.def_lowering
def _pallas_call_lower(ctx, *args, jaxpr, grid_mapping, compiler_params, interpret, name,
                       input_output_aliases):
    from minijax.experimental.pallas import _mosaic
    if not interpret and _mosaic.target_platform(ctx) == "tpu":
        return _mosaic.lower_tpu_custom_call(
            ctx, args, jaxpr=jaxpr, grid_mapping=grid_mapping, compiler_params=compiler_params,
            name=name, input_output_aliases=input_output_aliases)
    closed = interpret_jaxpr(jaxpr, grid_mapping, input_output_aliases,
                             tuple(a.aval for a in args))
    return ctx.lower_jaxpr(closed, args, name=f"pallas_call({name})")


# ---- interpret mode ----------------------------------------------------------------------------

_INTERPRET_CACHE: OrderedDict = OrderedDict()


def interpret_jaxpr(jaxpr: ClosedJaxpr, gm: GridMapping, aliases: tuple,
                    in_avals: tuple) -> ClosedJaxpr:
    """The kernel over its grid as an ordinary jaxpr (the StableHLO interpreter)."""
    key = (id(jaxpr), id(gm), aliases, in_avals, config.trace_key)
    hit = _INTERPRET_CACHE.get(key)
    if hit is not None and hit[1] is jaxpr and hit[2] is gm:
        return hit[0]

    def fun(*args):
        return _interpret(list(args), jaxpr, gm, aliases), None

    j, consts, _ = trace_to_jaxpr(fun, list(in_avals), DebugInfo("pallas_call", "interpret", None))
    closed = ClosedJaxpr(j, consts)
    _INTERPRET_CACHE[key] = (closed, jaxpr, gm)
    if len(_INTERPRET_CACHE) > 64:
        _INTERPRET_CACHE.popitem(last=False)
    return closed


def uninitialized_value(dtype: np.dtype):
    """What an uninitialized buffer holds in interpret mode: NaN for floats, the minimum for
    integers, False for booleans (so reading it by mistake shows)."""
    dtype = np.dtype(dtype)
    if dtypes.is_float(dtype) or dtypes.is_complex(dtype):
        return np.asarray(np.nan, dtype)
    if dtypes.is_bool(dtype):
        return np.asarray(False)
    return np.asarray(np.iinfo(dtype).min, dtype)


def _full(shape: tuple, dtype: np.dtype):
    from minijax.lax.shape import broadcast_in_dim
    return broadcast_in_dim(uninitialized_value(dtype), tuple(shape), ())


def _pad(x, bm: BlockMapping):
    from minijax.lax.shape import pad
    padded = bm.padded_shape
    shape = bm.array_aval.shape
    if padded == shape:
        return x
    return pad(x, uninitialized_value(bm.array_aval.dtype),
               [(0, p - s, 0) for p, s in zip(padded, shape)])


def _unpad(x, bm: BlockMapping):
    from minijax.lax.slicing import slice as lax_slice
    shape = bm.array_aval.shape
    if bm.padded_shape == shape:
        return x
    return lax_slice(x, [0] * len(shape), shape)


def _program_ids(t, grid: tuple) -> list:
    """The grid point of flat step ``t`` (row-major: the last dimension fastest), as int32."""
    from minijax.lax.binary import div, rem
    strides, stride = [], 1
    for g in reversed(grid):
        strides.append(stride)
        stride *= g
    strides.reverse()
    ids = []
    for d, (g, s) in enumerate(zip(grid, strides)):
        if g == 1:
            ids.append(np.zeros((), _INT32))
            continue
        v = t if s == 1 else div(t, np.asarray(s, _INT32))
        if any(x > 1 for x in grid[:d]):
            v = rem(v, np.asarray(g, _INT32))
        ids.append(v)
    return ids


def _block_starts(bm: BlockMapping, ids: Sequence) -> list:
    from minijax.lax.binary import mul
    idx = eval_jaxpr(bm.index_map_jaxpr.jaxpr, bm.index_map_jaxpr.consts, *ids)
    return [i if b == 1 else (np.asarray(int(i) * b, _INT32) if not isinstance(i, Tracer)
                              else mul(i, np.asarray(b, _INT32)))
            for i, b in zip(idx, bm.block_sizes)]


def _load_block(x, bm: BlockMapping, starts: list):
    from minijax.lax.shape import reshape
    from minijax.lax.slicing import dynamic_slice
    if bm.is_whole_array:
        return x
    blk = dynamic_slice(x, starts, bm.block_sizes, allow_negative_indices=False)
    if bm.ref_shape != bm.block_sizes:
        blk = reshape(blk, bm.ref_shape)
    return blk


def _store_block(x, blk, bm: BlockMapping, starts: list):
    from minijax.lax.shape import reshape
    from minijax.lax.slicing import dynamic_update_slice
    if bm.is_whole_array:
        return blk
    if bm.ref_shape != bm.block_sizes:
        blk = reshape(blk, bm.block_sizes)
    return dynamic_update_slice(x, blk, starts, allow_negative_indices=False)


def _interpret(args: list, jaxpr: ClosedJaxpr, gm: GridMapping, aliases: tuple) -> list:
    from minijax.lax.control_flow import fori_loop
    from minijax.lax.convert import convert_element_type
    nin = len(gm.in_blocks)
    ins = [_pad(x, bm) for x, bm in zip(args, gm.in_blocks)]
    alias_of = {o: i for i, o in aliases}
    outs = [ins[alias_of[k]] if k in alias_of else _full(bm.padded_shape, bm.array_aval.dtype)
            for k, bm in enumerate(gm.out_blocks)]
    scratch = [_full(a.shape, a.dtype) for a in gm.scratch_avals]
    steps = math.prod(gm.grid)

    def step(ids, outs, scratch):
        in_blocks = [_load_block(x, bm, _block_starts(bm, ids))
                     for x, bm in zip(ins, gm.in_blocks)]
        out_starts = [_block_starts(bm, ids) for bm in gm.out_blocks]
        out_blocks = [_load_block(o, bm, s) for o, bm, s in zip(outs, gm.out_blocks, out_starts)]
        kctx = KernelContext(tuple(ids), gm.num_vmapped)
        _, refs = run_state(jaxpr.jaxpr, jaxpr.consts, [*in_blocks, *out_blocks, *scratch], kctx)
        new_blocks, new_scratch = refs[nin:nin + len(outs)], refs[nin + len(outs):]
        outs = [_store_block(o, b, bm, s)
                for o, b, bm, s in zip(outs, new_blocks, gm.out_blocks, out_starts)]
        return outs, new_scratch

    if steps == 1:
        outs, _ = step([np.zeros((), _INT32)] * len(gm.grid), outs, scratch)
    elif steps > 1:
        def body(t, carry):
            t = convert_element_type(t, _INT32) if get_aval(t).dtype != _INT32 else t
            return step(_program_ids(t, gm.grid), *carry)
        outs, _ = fori_loop(0, steps, body, (outs, scratch))
    return [_unpad(o, bm) for o, bm in zip(outs, gm.out_blocks)]


# ---- vmap: a leading grid dimension ----------------------------------------------------------

def _batched_index_map(bm: BlockMapping, batched: bool, grid: tuple) -> ClosedJaxpr:
    old = bm.index_map_jaxpr

    def f(b, *ids):
        idx = eval_jaxpr(old.jaxpr, old.consts, *ids)
        return ([b] if batched else []) + list(idx), None

    jaxpr, consts, _ = trace_to_jaxpr(f, [_I32] * (len(grid) + 1),
                                      DebugInfo("pallas_call index_map", bm.origin, None))
    return ClosedJaxpr(jaxpr, consts)


def _batch_block(bm: BlockMapping, size: int, batched: bool, grid: tuple) -> BlockMapping:
    jaxpr = _batched_index_map(bm, batched, grid)
    if not batched:
        return BlockMapping(bm.origin, bm.block_shape, bm.array_aval, jaxpr, bm.memory_space)
    aval = ShapedArray((size, *bm.array_aval.shape), bm.array_aval.dtype)
    return BlockMapping(bm.origin, (None, *bm.block_shape), aval, jaxpr, bm.memory_space)


def _pallas_call_batch(trace, vals, dims, *, jaxpr, grid_mapping, compiler_params, interpret,
                       name, input_output_aliases):
    from minijax.transforms.batching import bdim_at
    size = trace.axis_size
    gm = grid_mapping
    aliased = {i for i, _ in input_output_aliases}
    vals = list(vals)
    batched = []
    for i, (x, d) in enumerate(zip(vals, dims)):
        if d is not None or i in aliased:
            vals[i] = bdim_at(x, d, size, 0)
            batched.append(True)
        else:
            batched.append(False)
    new = GridMapping(
        (size, *gm.grid),
        tuple(_batch_block(bm, size, b, gm.grid) for bm, b in zip(gm.in_blocks, batched)),
        tuple(_batch_block(bm, size, True, gm.grid) for bm in gm.out_blocks),
        gm.scratch_avals, gm.num_vmapped + 1)
    params = compiler_params
    if params is not None and params.dimension_semantics is not None:
        params = params.replace(dimension_semantics=("parallel", *params.dimension_semantics))
    outs = pallas_call_p.bind(*vals, jaxpr=jaxpr, grid_mapping=new, compiler_params=params,
                              interpret=interpret, name=name,
                              input_output_aliases=input_output_aliases)
    return outs, [0] * len(outs)


pallas_call_p.def_batch(_pallas_call_batch)


def _pallas_call_jvp(primals, tangents, *, name, **params):
    raise NotImplementedError(
        f"pallas_call {name}: differentiating through a Pallas kernel is not supported (a "
        "kernel's reads and writes of refs have no automatic derivative); define the "
        "derivative with minijax.custom_vjp / custom_jvp around the pallas_call")


pallas_call_p.def_jvp(_pallas_call_jvp)
