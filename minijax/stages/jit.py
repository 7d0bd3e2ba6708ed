"""``jit``: trace once per argument signature, lower, compile, and call fast.

The call path at top level is: flatten ``(args, kwargs)`` with the C++ pytree,
build a key from the tree, the argument avals, the metadata context and the
config flags that change programs, then look the executable up. On a miss the
function is traced to a jaxpr, lowered to StableHLO and compiled.

Called under another trace (inside ``jit``, ``grad``...), ``jit(f)`` binds the
``jit`` primitive with the traced jaxpr instead.
"""

from __future__ import annotations

import functools
import inspect
import logging
from typing import Any
from collections.abc import Callable, Iterable, Sequence

from minijax.config import config
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.jaxpr import EMPTY_CTX
from minijax.core.trace import (EVAL_TRACE, DebugInfo, _state, gc_paused, set_ctx,
                                split_tracer_consts, trace_to_jaxpr, user_source)
from minijax.lowering.lower import lower_module
from minijax.runtime import executable as _rt_exe
from minijax.runtime.array import Array
from minijax.runtime.backend import get_backend
from minijax.runtime.transfer import device_put
from minijax.stages.common import (abstractify, arg_names_from_paths, fun_name, module_name,
                                   result_names)
from minijax.stages.jit_primitive import jit_p
from minijax.tree_util import tree_flatten, tree_flatten_with_path

logger = logging.getLogger("minijax")
_flatten = tree_flatten


# ---- compiling and running ------------------------------------------------------------

def compile_module(text: str, out_avals: Sequence[ShapedArray], compiler_options=None,
                   num_args: int | None = None):
    """Compile StableHLO text on the default backend; returns a runtime Executable."""
    backend = get_backend()
    if compiler_options:
        raise NotImplementedError("compiler_options are not supported yet")
    return _rt_exe.compile(text, backend, out_avals=list(out_avals), num_args=num_args)


def compile_closed_jaxpr(closed: ClosedJaxpr, name: str):
    text = lower_module(closed, module_name=module_name(name), name_prefix=f"jit({name})")
    return compile_module(text, closed.out_avals, num_args=len(closed.in_avals))


def to_buffers(args: Iterable[Any]) -> list:
    return [x._buf if type(x) is Array else device_put(x)._buf for x in args]


def execute(exe, args: Iterable[Any]) -> list[Array]:
    return exe.execute(to_buffers(args))


# ---- tracing ----------------------------------------------------------------------------

class _Call:
    """A compiled executable for one entry under one metadata context."""

    __slots__ = ("exe", "out_tree")

    def __init__(self, exe, out_tree):
        self.exe = exe
        self.out_tree = out_tree


class _Entry:
    """What one argument signature of a jitted function traced to."""

    __slots__ = ("closed", "in_tree", "out_tree", "in_avals", "arg_names", "out_paths",
                 "hoisted", "calls", "name", "donated")

    def __init__(self, closed, in_tree, out_tree, in_avals, arg_names, out_paths, hoisted,
                 name, donated):
        self.closed = closed
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.in_avals = in_avals
        self.arg_names = arg_names
        self.out_paths = out_paths
        self.hoisted = hoisted
        self.calls: dict = {}  # EqnContext -> _Call
        self.name = name
        self.donated = donated


def _hashable(fun_nm: str, where: str, value: Any) -> None:
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"Non-hashable static argument {where} of {fun_nm}: value {value!r} of type "
            f"{type(value).__name__}. Static arguments must be hashable (use a tuple instead "
            f"of a list, or pass arrays as regular, non-static arguments).") from None


class Wrapped:
    """A function ready to be traced, lowered, compiled and called (``jit(f)``)."""

    def __init__(self, fun: Callable, *, static_argnums=(), static_argnames=(),
                 donate_argnums=(), donate_argnames=(), inline: bool = False,
                 compiler_options: dict | None = None, keep_unused: bool = False):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {fun!r}")
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._name = fun_name(fun)
        self._inline = inline
        self._compiler_options = dict(compiler_options) if compiler_options else None
        try:
            self._params = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            self._params = []
        names = [p.name for p in self._params
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        nums = set(_as_tuple(static_argnums))
        snames = set(_as_tuple(static_argnames))
        for n in list(snames):  # a static name also makes its position static
            if n in names:
                nums.add(names.index(n))
        for i in list(nums):
            if 0 <= i < len(names):
                snames.add(names[i])
        self._static_argnums = tuple(sorted(nums))
        self._static_argnames = frozenset(snames)
        dnums = set(_as_tuple(donate_argnums))
        for n in _as_tuple(donate_argnames):
            if n in names:
                dnums.add(names.index(n))
        self._donate_argnums = frozenset(dnums)
        self._simple = not self._static_argnums and not self._static_argnames and not dnums
        self._call_metadata: tuple = ()  # attributes of the call op (must_fuse_call)
        self._traces: dict = {}  # (tree, config, statics, avals) -> _Entry
        self._cache: dict = {}   # the same plus the metadata context -> _Call
        self._keys_seen: list = []
        self._trace_count = 0

    def __repr__(self) -> str:
        return f"<minijax.jit wrapping {self._name}>"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    # -- keys and tracing

    def _split(self, args: tuple, kwargs: dict):
        """Separate static arguments; returns (statics, dyn_args, dyn_kwargs, dyn_argnums)."""
        if not self._static_argnums and not self._static_argnames:
            return (), args, kwargs, range(len(args))
        n = len(args)
        nums = {i + n if i < 0 else i for i in self._static_argnums}
        statics = []
        for i in sorted(nums):
            if i < n:
                _hashable(self._name, f"at position {i}", args[i])
                statics.append((i, args[i]))
        for k in sorted(kwargs):
            if k in self._static_argnames:
                _hashable(self._name, f"{k!r}", kwargs[k])
                statics.append((k, kwargs[k]))
        dyn_nums = [i for i in range(n) if i not in nums]
        dyn_args = tuple(args[i] for i in dyn_nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return tuple(statics), dyn_args, dyn_kwargs, dyn_nums

    def _merge(self, statics: tuple, dyn_args: Sequence, dyn_kwargs: dict):
        if not statics:
            return tuple(dyn_args), dyn_kwargs
        pos = {k: v for k, v in statics if isinstance(k, int)}
        kw = {k: v for k, v in statics if isinstance(k, str)}
        args, it = [], iter(dyn_args)
        for i in range(len(dyn_args) + len(pos)):
            args.append(pos[i] if i in pos else next(it))
        return tuple(args), {**dyn_kwargs, **kw}

    def _entry(self, args: tuple, kwargs: dict, allow_shape_dtype: bool = False):
        """Find or trace the entry for these arguments; returns (entry, dynamic leaves).

        The trace cache does not depend on the XLA metadata context: a callee is
        traced once and the caller's metadata is applied when it is lowered.
        """
        statics, dyn_args, dyn_kwargs, dyn_nums = self._split(args, kwargs)
        leaves, in_tree = _flatten((dyn_args, dyn_kwargs))
        avals = [abstractify(x, allow_shape_dtype) for x in leaves]
        key = (in_tree, config.trace_key, statics, *avals)
        entry = self._traces.get(key)
        if entry is None:
            entry = self._trace(key, statics, in_tree, avals, dyn_args, dyn_kwargs, dyn_nums)
        return entry, leaves

    def _trace(self, key, statics, in_tree, avals, dyn_args, dyn_kwargs, dyn_nums) -> _Entry:
        if config.minijax_explain_cache_misses:
            self._explain_miss(key, in_tree, avals, statics)
        self._trace_count += 1
        paths = [p for p, _ in tree_flatten_with_path((dyn_args, dyn_kwargs))[0]]
        # Paths over the dynamic args: map back to the original positions for names.
        full_paths = [_remap_path(p, dyn_nums) for p in paths]
        arg_names = arg_names_from_paths(self._fun, full_paths)
        debug = DebugInfo("jit", self._name, arg_names)
        out_info: list = []

        def flat_fun(*tracers):
            a, k = in_tree.unflatten(tracers)
            a, k = self._merge(statics, a, k)
            with set_ctx(EMPTY_CTX):  # metadata from outside is applied at lowering
                out = self._fun(*a, **k)
            pairs, out_tree = tree_flatten_with_path(out)
            out_info.append((out_tree, [p for p, _ in pairs]))
            outs = [x for _, x in pairs]
            _check_outputs(self._name, outs, [p for p, _ in pairs])
            return outs, None

        with gc_paused():
            jaxpr, consts, _ = trace_to_jaxpr(flat_fun, avals, debug)
        closed, hoisted = split_tracer_consts(jaxpr, consts)
        out_tree, out_paths = out_info[0]
        donated = tuple(_donated_leaf(p, dyn_nums, self._donate_argnums) for p in paths)
        entry = _Entry(closed, in_tree, out_tree, avals, arg_names, out_paths, hoisted,
                       self._name, donated)
        if not hoisted:
            self._traces[key] = entry
            self._keys_seen.append(key)
        return entry

    def _explain_miss(self, key, in_tree, avals, statics) -> None:
        src = user_source(3)
        where = f" at {src.file}:{src.line}" if src else ""
        if not self._keys_seen:
            logger.warning("TRACING CACHE MISS%s: tracing %s for the first time", where, self._name)
            return
        from minijax.stages.explain import explain_difference
        reasons = explain_difference(self._keys_seen[-1], key, self._params)
        logger.warning("TRACING CACHE MISS%s: retracing %s because %s", where, self._name,
                       "; ".join(reasons))

    # -- calling

    def __call__(self, *args, **kwargs):
        if _state.trace is EVAL_TRACE:
            if self._simple:
                try:
                    leaves, in_tree = _flatten((args, kwargs))
                    key = (in_tree, _state.ctx, config.trace_key, (), *[x.aval for x in leaves])
                    call = self._cache[key]
                    return call.out_tree.unflatten(call.exe.execute([x._buf for x in leaves]))
                except (AttributeError, KeyError, TypeError):
                    pass
            return self._call_slow(args, kwargs)
        return self._call_traced(args, kwargs)

    def _call_slow(self, args, kwargs):
        entry, leaves = self._entry(args, kwargs)
        ctx = _state.ctx
        call = entry.calls.get(ctx)
        if call is None:
            text = self._lower_text(entry, ctx.metadata)
            exe = compile_module(text, entry.closed.out_avals, self._compiler_options,
                                 len(entry.in_avals))
            if "mhlo.frontend_attributes" in text:
                from minijax.stages.stages import check_compiled_metadata
                check_compiled_metadata(text, exe)
            call = entry.calls[ctx] = _Call(exe, entry.out_tree)
        if self._simple:
            # Register the fast-path key (device-array arguments only).
            leaves_all, in_tree = _flatten((args, kwargs))
            try:
                key = (in_tree, ctx, config.trace_key, (), *[x.aval for x in leaves_all])
                self._cache[key] = call
            except AttributeError:  # not all device arrays
                pass
        outs = call.exe.execute(to_buffers(leaves))
        return entry.out_tree.unflatten(outs)

    def _call_traced(self, args, kwargs):
        entry, leaves = self._entry(args, kwargs)
        donated = (False,) * len(entry.hoisted) + entry.donated
        outs = jit_p.bind(*entry.hoisted, *leaves, jaxpr=entry.closed, name=self._name,
                          donated_invars=donated, inline=self._inline,
                          call_metadata=self._call_metadata)
        return entry.out_tree.unflatten(outs)

    def _lower_text(self, entry: _Entry, outer_metadata: tuple = ()) -> str:
        with gc_paused():
            return self._lower_text_unpaused(entry, outer_metadata)

    def _lower_text_unpaused(self, entry: _Entry, outer_metadata: tuple = ()) -> str:
        return lower_module(entry.closed, module_name=module_name(self._name),
                            name_prefix=f"jit({self._name})", arg_names=entry.arg_names,
                            result_names=result_names(entry.out_paths),
                            outer_metadata=outer_metadata)

    # -- AOT API

    def trace(self, *args, **kwargs):
        from minijax.stages.stages import Traced
        entry, _ = self._entry(args, kwargs, allow_shape_dtype=True)
        return Traced(self, entry)

    def lower(self, *args, **kwargs):
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        from minijax.core.aval import ShapeDtypeStruct
        entry, _ = self._entry(args, kwargs, allow_shape_dtype=True)
        return entry.out_tree.unflatten(
            ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
            for a in entry.closed.out_avals)

    def _cache_size(self) -> int:
        """How many argument signatures have been traced and cached."""
        return len(self._traces)

    @property
    def trace_count(self) -> int:
        """How many times the function has been traced (for tests and diagnostics)."""
        return self._trace_count

    def clear_cache(self) -> None:
        self._traces.clear()
        self._cache.clear()
        self._keys_seen.clear()


def _remap_path(path: tuple, dyn_nums: Sequence[int]) -> tuple:
    """A path into (dyn_args, dyn_kwargs) -> the same path into (args, kwargs)."""
    if len(path) >= 2 and getattr(path[0], "idx", None) == 0:
        from minijax.tree_util import SequenceKey
        return (path[0], SequenceKey(dyn_nums[path[1].idx])) + tuple(path[2:])
    return path


def _donated_leaf(path: tuple, dyn_nums, donate_argnums) -> bool:
    if not donate_argnums or len(path) < 2 or getattr(path[0], "idx", None) != 0:
        return False
    return dyn_nums[path[1].idx] in donate_argnums


def _check_outputs(name: str, outs: list, paths: list) -> None:
    from minijax.core.trace import Tracer
    from minijax.tree_util import keystr
    import numpy as np
    for x, p in zip(outs, paths):
        if isinstance(x, (Tracer, Array, np.ndarray, np.generic, bool, int, float, complex)):
            continue
        raise TypeError(
            f"Function {name} returned a value of type {type(x).__name__} at output "
            f"path result{keystr(p)}, which is not a valid minijax array type "
            f"(return arrays, scalars, or pytrees of them).")


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    if isinstance(x, (int, str)):
        return (x,)
    return tuple(x)


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Iterable[str] = (), donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Iterable[str] = (), inline: bool = False,
        compiler_options: dict | None = None, keep_unused: bool = False, device=None,
        backend=None) -> Wrapped:
    """Compile ``fun`` with XLA; mirrors ``jax.jit``.

    >>> f = minijax.jit(lambda x: minijax.numpy.sin(x) * 2)
    >>> f(1.0)
    Array(1.682942, dtype=float32, weak_type=True)
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames, inline=inline,
                                 compiler_options=compiler_options, keep_unused=keep_unused)
    return Wrapped(fun, static_argnums=static_argnums, static_argnames=static_argnames,
                   donate_argnums=donate_argnums, donate_argnames=donate_argnames, inline=inline,
                   compiler_options=compiler_options, keep_unused=keep_unused)
