"""Host callbacks: ``pure_callback``, ``io_callback`` and ``debug_callback``.

Each lowers to a ``stablehlo.custom_call @xla_ffi_python_cpu_callback`` whose
``index`` attribute picks the Python callable in the module's ``host_callbacks``
(``lowering.lower.ModuleText``; the runtime hands them to XLA, see
``runtime/callback.py``). Callables see host ``minijax.Array``s and return array-likes.

- ``pure_callback``: no side effects (dropped when unused, like jax's); no jvp or
  transpose (wrap it in ``custom_jvp``/``custom_vjp``); batched by ``vmap_method``.
- ``io_callback``: the IO effect, or the ordered IO effect (``ordered=True``: a token
  threads the calls of one function in program order; ``vmap`` of it is an error).
- ``debug_callback`` and ``debug_print``: the debug effect (ordered or not); no
  outputs, not differentiated (the jvp calls them on the primal values), unrolled
  under ``vmap``. ``debug_print`` carries its format and NumPy print options as params
  (as jax's, so jaxprs print the same).

Effects (``core/effects.py``) keep io and debug callbacks from being dropped.
"""

from __future__ import annotations

import copy
import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray, canonicalize_shape, check_nonnegative_shape
from minijax.core.effects import (debug_effect, io_effect, ordered_debug_effect,
                                  ordered_io_effect)
from minijax.core.trace import Primitive
from minijax.lax import control_flow
from minijax.lax.shape import broadcast
from minijax.lax.slicing import index_in_dim
from minijax.lowering.host_callback import emit_python_callback, num_devices
from minijax.transforms.batching import moveaxis
from minijax._pytree import tree_flatten, tree_leaves, tree_unflatten

__all__ = ["FlatCallback", "TO_HOST_ARRAY", "debug_callback_p", "debug_print_p",
           "io_callback_p", "pure_callback_p"]

# How a value reaches a callback run eagerly: the runtime makes it a host minijax.Array
# (runtime/callback.py sets this; lax cannot import the runtime).
TO_HOST_ARRAY: list[Callable[[Any], Any]] = [np.asarray]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)


class FlatCallback:
    """A user callback called with flat arguments: unflattens them to ``(args, kwargs)``
    with ``in_tree`` and returns the leaves of the result. Equal when the function and
    the tree are (so equal calls share eager executables)."""

    __slots__ = ("callback_func", "in_tree", "__weakref__")

    def __init__(self, callback_func: Callable, in_tree):
        self.callback_func = callback_func
        self.in_tree = in_tree

    def __call__(self, *flat_args) -> list:
        args, kwargs = tree_unflatten(self.in_tree, flat_args)
        return tree_leaves(self.callback_func(*args, **kwargs))

    def __eq__(self, other):
        return (type(other) is FlatCallback and self.callback_func == other.callback_func
                and self.in_tree == other.in_tree)

    def __hash__(self):
        return hash((self.callback_func, self.in_tree))

    def __repr__(self):
        return f"FlatCallback(callback_func={self.callback_func!r}, in_tree={self.in_tree})"


# ---- lowering: the custom call (lowering/host_callback.py) -------------------------------

def check_ordered_effects(ctx, effect) -> None:
    """jax's error for an ordered effect that cannot run on several devices (ordered
    debug callbacks; ordered IO callbacks can: they run on the first device)."""
    if effect.ordered and effect is not ordered_io_effect and num_devices(ctx.module) > 1:
        raise ValueError("The following ordered effects are not supported for more than 1 "
                         f"device: [{effect!r}]")



def _result_avals(*avals, result_avals, **params):  # pure_callback's and io_callback's
    return list(result_avals)


# ---- pure_callback -------------------------------------------------------------------------

def _pure_lower(ctx, *args, callback, result_avals, sharding, vmap_method):
    return emit_python_callback(ctx, callback, args, result_avals, has_side_effect=False,
                                ordered=False, what="minijax.pure_callback",
                                sharding=sharding)


def _pure_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _pure_transpose(ct, *args, **params):
    raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` "
                     "to use callbacks while taking gradients.")


def _batched_avals(result_avals, size: int) -> tuple:
    return tuple(ShapedArray((size, *a.shape), a.dtype) for a in result_avals)


def _sequential(prim, trace, vals, dims, unroll: bool, **params):
    """``prim`` once per element of the mapped axis, in a scan (the callback sees
    unbatched values)."""
    batched = [d is not None for d in dims]
    moved = [moveaxis(v, d, 0) for v, d in zip(vals, dims) if d is not None]
    fixed = [v for v, d in zip(vals, dims) if d is None]

    def body(carry, xs):
        it_x, it_f = iter(xs), iter(fixed)
        args = [next(it_x) if b else next(it_f) for b in batched]
        return carry, prim.bind(*args, **params)

    _, outs = control_flow.scan(body, (), moved, length=trace.axis_size, unroll=unroll)
    return list(outs), [0] * len(outs)


def _pure_batch(trace, vals, dims, *, callback, result_avals, sharding, vmap_method):
    size = trace.axis_size
    if vmap_method in ("sequential", "sequential_unrolled"):
        return _sequential(pure_callback_p, trace, vals, dims,
                           vmap_method == "sequential_unrolled", callback=callback,
                           result_avals=result_avals, sharding=sharding,
                           vmap_method=vmap_method)
    params = dict(callback=callback, result_avals=_batched_avals(result_avals, size),
                  sharding=sharding, vmap_method=vmap_method)
    moved = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    if vmap_method == "legacy_vectorized":
        outs = pure_callback_p.bind(*moved, **params)
    elif vmap_method in ("expand_dims", "broadcast_all"):
        n = size if vmap_method == "broadcast_all" else 1
        outs = pure_callback_p.bind(*[broadcast(v, (n,)) if d is None else v
                                      for v, d in zip(moved, dims)], **params)
    else:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one "
            "of 'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    return list(outs), [0] * len(outs)


# ---- io_callback ---------------------------------------------------------------------------

def _io_effects(params) -> frozenset:
    return frozenset((ordered_io_effect if params["ordered"] else io_effect,))


def _io_lower(ctx, *args, callback, result_avals, sharding, ordered):
    check_ordered_effects(ctx, ordered_io_effect if ordered else io_effect)
    return emit_python_callback(ctx, callback, args, result_avals, has_side_effect=True,
                                ordered=ordered, what="minijax.io_callback",
                                sharding=sharding)


def _io_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _io_transpose(ct, *args, **params):
    raise ValueError("IO callbacks do not support transpose.")


def _io_batch(trace, vals, dims, *, callback, result_avals, sharding, ordered):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    return _sequential(io_callback_p, trace, vals, dims, False, callback=callback,
                       result_avals=result_avals, sharding=sharding, ordered=False)


# ---- debug_callback and debug_print -------------------------------------------------------

def with_static_args(fn: Callable, in_tree, static_args) -> Callable:
    """``fn(*args, **kwargs)`` called with the array leaves of ``(args, kwargs)`` only
    (``static_args``: ``(position, value)`` of the other leaves, put back in place)."""
    static = dict(static_args)

    def call(*dynamic):
        it = iter(dynamic)
        leaves = [static[i] if i in static else next(it)
                  for i in range(len(static) + len(dynamic))]
        args, kwargs = tree_unflatten(in_tree, leaves)
        fn(*args, **kwargs)
    return call


def format_and_print(fmt: str, has_placeholders: bool, np_printoptions: dict, logging_record,
                     *args, **kwargs):
    """What ``debug.print`` does on the host: ``fmt.format`` under NumPy's print options
    of the call (or, without placeholders, ``fmt`` and the values joined by spaces),
    written to stdout, or logged as ``logging_record`` (``debug.log``)."""
    if has_placeholders:
        with np.printoptions(**np_printoptions):
            msg = fmt.format(*args, **kwargs)
    else:
        msg = " ".join((fmt, *(str(a) for a in args)))
    if logging_record is not None:
        record = copy.copy(logging_record)
        record.msg = msg
        logging.getLogger(record.name).handle(record)
    else:
        sys.stdout.write(msg + "\n")


def _callback_of(params) -> Callable:  # debug_callback: the flat callable it carries
    return params["callback"]


def _printer_of(params) -> Callable:  # debug_print: formats and prints its operands
    show = functools.partial(format_and_print, params["fmt"], params["has_placeholders"],
                             dict(params["np_printoptions"]), params["logging_record"])
    return with_static_args(show, params["in_tree"], params["static_args"])


def _effect_of(params):
    effect = params.get("effect")
    if effect is None:  # debug_print
        effect = ordered_debug_effect if params["ordered"] else debug_effect
    return effect


def _debug_rules(prim: Primitive, host_fn: Callable, what: str) -> None:
    """Register the rules of a debug primitive (no results; ``host_fn(params)`` is the
    function run on the operands): the debug effect, eager call, the custom call, jvp on
    the primal values only, no transpose contribution, one call per element under vmap
    (unrolled, as jax's)."""
    def impl(*args, **params):
        convert = TO_HOST_ARRAY[0]
        host_fn(params)(*[convert(a) for a in args])
        return []

    def lower(ctx, *args, **params):
        check_ordered_effects(ctx, _effect_of(params))
        fn = host_fn(params)

        def run(*xs):
            fn(*xs)
            return ()
        return emit_python_callback(ctx, run, args, (), has_side_effect=True,
                                    ordered=_effect_of(params).ordered, what=what)

    def jvp(primals, tangents, **params):
        return prim.bind(*primals, **params), []

    def transpose(ct, *args, **params):
        return [None] * len(args)

    def batch(trace, vals, dims, **params):
        for i in range(trace.axis_size):
            prim.bind(*[v if d is None else index_in_dim(v, i, d, keepdims=False)
                        for v, d in zip(vals, dims)], **params)
        return [], []

    prim.def_impl(impl)
    prim.def_abstract_eval(lambda *avals, **params: [])
    prim.def_lowering(lower)
    prim.def_jvp(jvp)
    prim.def_transpose(transpose)
    prim.def_batch(batch)
    prim.def_rule("effects")(lambda params: frozenset((_effect_of(params),)))


def check_result_shape_dtypes(result_shape_dtypes) -> tuple[list[ShapedArray], Any]:
    """The flat result avals of ``result_shape_dtypes`` (leaves with shape and dtype)."""
    leaves, tree = tree_flatten(result_shape_dtypes)
    avals = []
    for x in leaves:
        dt = np.dtype(x.dtype)
        if dtypes.canonicalize(dt) != dt:
            raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                             "`jax_enable_x64` is disabled")
        shape = canonicalize_shape(x.shape, "shape of a callback result (result_shape_dtypes)")
        check_nonnegative_shape(shape, "callback result (result_shape_dtypes)")
        avals.append(ShapedArray(shape, dt))
    return avals, tree


# Registration.
pure_callback_p = Primitive("pure_callback", multiple_results=True)
pure_callback_p.def_abstract_eval(_result_avals)
pure_callback_p.def_lowering(_pure_lower)
pure_callback_p.def_jvp(_pure_jvp)
pure_callback_p.def_transpose(_pure_transpose)
pure_callback_p.def_batch(_pure_batch)

io_callback_p = Primitive("io_callback", multiple_results=True)
io_callback_p.def_abstract_eval(_result_avals)
io_callback_p.def_lowering(_io_lower)
io_callback_p.def_jvp(_io_jvp)
io_callback_p.def_transpose(_io_transpose)
io_callback_p.def_batch(_io_batch)
io_callback_p.def_rule("effects")(_io_effects)

debug_callback_p = Primitive("debug_callback", multiple_results=True)
_debug_rules(debug_callback_p, _callback_of, "minijax.debug.callback")
debug_print_p = Primitive("debug_print", multiple_results=True)
_debug_rules(debug_print_p, _printer_of, "minijax.debug.print")
