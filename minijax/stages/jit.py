"""``jit``: trace once per argument signature, lower, compile, and call fast.

The call path at top level, for a function without static or donated arguments:

1. *Positional device arrays*: the key is the tuple of the ids of the arguments'
   avals (runtime avals are interned, so ids identify them); a hit runs a closure
   that executes and builds the outputs. No pytree flattening. Python scalars
   take this path too, through cached device constants. This step is
   ``stages/dispatch.py`` (C when the extension is built).
2. *Any pytree*: flatten ``(args, kwargs)`` with the C++ pytree, key on the tree
   and the leaves' avals.
3. *Miss* (or static/donated arguments, or an XLA metadata context): the full
   path. The trace cache is keyed by the tree, the config flags that change
   programs, the static arguments and the avals; a traced entry is lowered and
   compiled once per metadata context.

The fast caches (1, 2) belong to the config flags they were filled under and are
emptied when those change.

Called under another trace (inside ``jit``, ``grad``...), ``jit(f)`` binds the
``jit`` primitive with the traced jaxpr instead.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
import weakref
from typing import Any
from collections.abc import Callable, Iterable, Sequence

from minijax.config import TRACE_KEY, config
from minijax.core.jaxpr import EMPTY_CTX
from minijax.core.traceback_util import (api_boundary, process_exception,
                                         register_boundary)
from minijax.core.lru import LRUCache
from minijax.core.ref import ClosedOverRef
from minijax.core.trace import (EVAL_TRACE, DebugInfo, trace_state, set_ctx, split_tracer_consts,
                                trace_to_jaxpr, user_source)
from minijax.runtime.array import Array
from minijax.stages.cache import EXECUTABLES
from minijax.stages.common import (abstractify, arg_names_from_paths, argnames_tuple,
                                   argnums_tuple, call_device, check_argnames, check_argnums,
                                   fun_name, physical_structs, public_structs,
                                   raise_if_deleted, wraps)
from minijax.runtime.transfer import PY_SCALAR_TYPES, record_numpy_specs, scalar_specs
from minijax.stages.dispatch import DispatchBase, flat_key, make_constants, mark_donated
from minijax.stages.entry import TraceEntry, used_inputs
from minijax.stages.compiler import compile_module, log_step, normalize_options
from minijax.stages.jit_primitive import jit_p
from minijax.stages.sharded import (Placement, aot_device, interned_ids, mesh_placement,
                                    placement_of, to_buffers, explicit_placement)
from minijax.stages.stages import Traced
from minijax._pytree import (PrefixMismatchError, broadcast_prefix, tree_flatten,
                             tree_flatten_with_path)

logger = logging.getLogger("minijax")
_flatten = tree_flatten

__all__ = ["Wrapped", "compile_module", "jit", "to_buffers", "trace_entry"]


# ---- the flat call shape --------------------------------------------------------------

_flat_trees: dict[tuple, Any] = {}


def _flat_treedef(n: int, kw_names: tuple = ()):
    """The treedef of ``((x1, ..., xn), {k1: y1, ...})``: n positional leaves and one
    leaf per keyword argument."""
    t = _flat_trees.get((n, kw_names))
    if t is None:
        t = _flat_trees[n, kw_names] = _flatten((tuple(range(n)),
                                                 dict.fromkeys(kw_names, 0)))[1]
    return t


# ---- tracing ----------------------------------------------------------------------------

def _hashable(fun_nm: str, where: str, value: Any) -> None:
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"Non-hashable static argument {where} of {fun_nm}: value {value!r} of type "
            f"{type(value).__name__}. Static arguments must be hashable (use a tuple instead "
            f"of a list, or pass arrays as regular, non-static arguments).") from None


def _resolve(nums, names, positional: list[str], what: str, params, fun_name: str
             ) -> tuple[frozenset[int], frozenset[str]]:
    """Argument numbers and names, checked against the signature as jax does
    (``params`` is None when it is unknown), then each completed with the other."""
    nums = argnums_tuple(nums, f"{what}_argnums")
    names = argnames_tuple(names, f"{what}_argnames")
    if params is not None:
        check_argnums(params, nums, f"{what}_argnums", fun_name)
        check_argnames(params, names, f"{what}_argnames", fun_name)
    nums, names = set(nums), set(names)
    for n in list(names):
        if n in positional:
            nums.add(positional.index(n))
    for i in list(nums):
        if 0 <= i < len(positional):
            names.add(positional[i])
    return frozenset(nums), frozenset(names)


# Function -> [(weakref to the jit object, its settings, trace key)] of the jits of it,
# recorded only while cache misses are explained: the first trace by a new jit object
# of a function seen before then says what differs from the earlier ones.
_history: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# Function -> {(jit object type, settings, trace key) -> TraceEntry}: as in jax, whose
# caches are keyed on the function, ``jit(f)`` objects made again (``jit(f)(x)`` in a
# loop) reuse the traces and executables of earlier jits of ``f`` with the same settings
# instead of tracing ``f`` again (so they also see the globals of that first trace).
_shared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# Jit objects whose fast caches hold executables; emptied when a config flag that
# changes programs (x64) is updated, so the dispatch path need not check the flags.
_with_fast_entries: weakref.WeakSet = weakref.WeakSet()


def _drop_fast_entries(_value) -> None:
    for w in list(_with_fast_entries):
        w._fast.clear()
        w._tree_fast.clear()
    _with_fast_entries.clear()


for _flag in (TRACE_KEY, "minijax_disable_jit"):
    config.on_change(_flag, _drop_fast_entries)


def _reordered(run, perm: list[int]):
    """``run`` called with ``bufs`` permuted: ``run([bufs[i] for i in perm])``."""
    def run_reordered(bufs: list):
        return run([bufs[i] for i in perm])
    return run_reordered


def _on_default_device(leaves) -> bool:
    """Whether a call's arguments all live on the default device: only such calls share
    traces between jit objects of one function (sharded and placed calls keep their own,
    whose executables are keyed by placement in ways a shared entry does not track)."""
    try:
        return call_device(leaves) is None
    except Exception:  # arguments on incompatible devices: the call itself will say so
        return False


class Wrapped(DispatchBase):
    """A function ready to be traced, lowered, compiled and called (``jit(f)``)."""

    _explains_misses = True  # logs cache misses when minijax_explain_cache_misses is on
    _shared_table: Any = False  # see _shared_traces: False until looked up, None: unshared

    def __init__(self, fun: Callable, *, static_argnums=(), static_argnames=(),
                 donate_argnums=(), donate_argnames=(), inline: bool = False,
                 compiler_options: dict | None = None, keep_unused: bool = False,
                 device=None, backend=None, in_shardings=None, out_shardings=None):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {fun!r}")
        wraps(fun)(self)  # named as jax names it: ``jit(C())`` is '<unnamed function>'
        self._fun = fun
        self._name = fun_name(fun)
        self._inline = inline
        self._keep_unused = bool(keep_unused)
        self._compiler_options = normalize_options(compiler_options)
        try:
            params = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):
            params = None  # builtins without a signature: nothing to check against
        self._params = params or []
        names = [p.name for p in self._params
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        snums, snames = _resolve(static_argnums, static_argnames, names, "static", params,
                                 self._name)
        dnums, dnames = _resolve(donate_argnums, donate_argnames, names, "donate", params,
                                 self._name)
        self._device = _placement(device, backend)
        both = (snums & dnums) | (snames & dnames)
        if both:
            raise ValueError(f"jit of {self._name}: arguments {sorted(both, key=str)} are both "
                             "static and donated; only arrays can be donated")
        self._static_argnums = tuple(sorted(snums))
        self._static_argnames = snames
        self._donate_argnums = dnums
        self._donate_argnames = dnames
        self._simple = not snums and not snames and not dnums and not dnames
        # (in_shardings, out_shardings) as given (pytree prefixes), or None for neither
        self._shardings = (None if in_shardings is None and out_shardings is None
                           else (_check_shardings(in_shardings, "in_shardings"),
                                 _check_shardings(out_shardings, "out_shardings")))
        self._call_metadata: tuple = ()  # attributes of the call op (must_fuse_call)
        self._fast: dict = {}  # ids of the (interned) avals of positional Arrays -> run
        # (tree, statics, *ids of interned avals) -> run, or (run, aliased, name) when
        # it donates (see stages/dispatch.py)
        self._tree_fast: dict = {}
        self._dispatch_statics = ((frozenset(self._static_argnums),
                                   tuple(sorted(self._static_argnames)))
                                  if self._static_argnums or self._static_argnames else None)
        self._dispatch_donates = bool(dnums or dnames)
        # (tree, config, statics, avals) -> TraceEntry, at most minijax_jit_cache_size of them;
        # dropping one empties the fast tables above, which refill from here.
        self._traces = LRUCache("minijax_jit_cache_size", (self._fast, self._tree_fast))
        self._keys_seen: list = []
        self._trace_count = 0

    def __repr__(self) -> str:
        # jax's wording: libraries (chex's is_traceable) read "PjitFunction" in it to tell
        # a jitted function from a plain one
        return f"<PjitFunction of {self._fun!r}>"

    @property
    def __signature__(self) -> inspect.Signature:
        """The wrapped function's signature (jax's jitted functions have it: chex reads it
        with ``follow_wrapped=False``)."""
        return inspect.signature(self._fun)

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
            if 0 <= i < n:
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
        if allow_shape_dtype:  # (lower, eval_shape) structs of key dtypes trace as keys
            dyn_args, dyn_kwargs = physical_structs((dyn_args, dyn_kwargs))
        if dyn_kwargs and self._shardings is not None and self._shardings[0] is not None:
            raise ValueError("pjit does not support kwargs when in_shardings is specified.")
        leaves, in_tree = _flatten((dyn_args, dyn_kwargs))
        avals = [abstractify(x, allow_shape_dtype) for x in leaves]
        # The axis environment (pmap/xla_computation) changes what collectives trace to.
        key = (in_tree, config.trace_key + (trace_state.axis_env,), statics, *avals)
        entry = self._traces.get(key)
        shared = self._shared_traces() if _on_default_device(leaves) else None
        if entry is not None:
            if shared is not None:  # a use: keeps the shared table's LRU order as ours
                shared.get((self._share_key, key))
        else:
            entry = None if shared is None else shared.get((self._share_key, key))
            if entry is not None:
                self._traces[key] = entry
            else:
                entry = self._trace(key, statics, in_tree, avals, dyn_args, dyn_kwargs,
                                    dyn_nums)
                if shared is not None and self._traces.get(key) is entry:
                    shared[(self._share_key, key)] = entry
        return entry, leaves

    def _shared_traces(self) -> LRUCache | None:
        """The traces shared by the jit objects of this function (see ``_shared``), or
        None when they cannot be shared (unhashable settings, a function that cannot be
        weakly referenced)."""
        if self._shared_table is not False:
            return self._shared_table
        self._shared_table = None
        if self._shardings is not None or self._device is not None:
            return None
        try:
            self._share_key = (type(self), self._static_argnums,
                               tuple(sorted(self._static_argnames)),
                               tuple(sorted(self._donate_argnums)),
                               tuple(sorted(self._donate_argnames)),
                               self._compiler_options, self._inline,
                               self._keep_unused, self._device, self._shardings,
                               self._call_metadata)
            hash(self._share_key)
            table = _shared.get(self._fun)
            if table is None:
                table = _shared[self._fun] = LRUCache("minijax_jit_cache_size")
        except TypeError:
            return None
        self._shared_table = table
        return table

    def _trace(self, key, statics, in_tree, avals, dyn_args, dyn_kwargs, dyn_nums) -> TraceEntry:
        self._trace_count += 1
        paths = [p for p, _ in tree_flatten_with_path((dyn_args, dyn_kwargs))[0]]
        # Paths over the dynamic args: map back to the original positions for names.
        full_paths = [_remap_path(p, dyn_nums) for p in paths]
        arg_names = arg_names_from_paths(self._fun, full_paths)
        if config.minijax_explain_cache_misses and self._explains_misses:
            self._explain_miss(key, arg_names)
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

        start = time.perf_counter()
        jaxpr, consts, _ = trace_to_jaxpr(flat_fun, avals, debug)
        log_step("Finished tracing %s for jit in %.9f sec", self._name, start)
        closed, hoisted = split_tracer_consts(jaxpr, consts)
        out_tree, out_paths = out_info[0]
        donated = [self._donated_leaf(p, dyn_nums) for p in paths]
        entry = TraceEntry(closed, in_tree, out_tree, avals, arg_names, out_paths, hoisted,
                           self._name, donated, statics=statics,
                           kept=None if self._keep_unused else used_inputs(closed))
        if not hoisted:
            self._traces[key] = entry
            self._keys_seen.append(key)
            del self._keys_seen[:-64]  # the latest are what cache-miss explanations use
            if config.minijax_explain_cache_misses and self._explains_misses:
                self._record_history(key)
        return entry

    def _donated_leaf(self, path: tuple, dyn_nums) -> bool:
        """Whether the leaf at ``path`` (into ``(dyn_args, dyn_kwargs)``) is donated."""
        if self._simple or len(path) < 2:
            return False
        top = getattr(path[0], "idx", None)
        if top == 0:
            return dyn_nums[path[1].idx] in self._donate_argnums
        if top == 1:
            return getattr(path[1], "key", None) in self._donate_argnames
        return False

    def _settings(self) -> dict:
        return {"static_argnums": self._static_argnums,
                "static_argnames": tuple(sorted(self._static_argnames)),
                "donate_argnums": tuple(sorted(self._donate_argnums)),
                "donate_argnames": tuple(sorted(self._donate_argnames)),
                "compiler_options": dict(self._compiler_options),
                "inline": self._inline, "keep_unused": self._keep_unused}

    def _record_history(self, key) -> None:
        try:
            records = _history.setdefault(self._fun, [])
        except TypeError:  # not weak-referenceable or not hashable
            return
        records.append((weakref.ref(self), self._settings(), key))
        del records[:-32]

    def _explain_miss(self, key, arg_names: list[str]) -> None:
        from minijax.stages import explain
        src = user_source(3)
        where = f" at {src.file}:{src.line}" if src else ""
        if self._keys_seen:
            reasons = explain.explain_difference(self._keys_seen[-1], key, self._params,
                                                 arg_names)
            logger.warning("TRACING CACHE MISS%s: retracing %s because %s", where, self._name,
                           "; ".join(reasons))
            return
        try:
            others = [(s, k) for ref, s, k in _history.get(self._fun, ()) if ref() is not self]
        except TypeError:
            others = []
        reasons = explain.explain_new_jit(others, self._settings(), key, self._params,
                                          arg_names)
        logger.warning("TRACING CACHE MISS%s: tracing %s for the first time%s", where,
                       self._name, f": {'; '.join(reasons)}" if reasons else "")

    # -- calling

    @register_boundary
    def _call(self, args: tuple, kwargs: dict):
        if config.minijax_disable_jit:  # minijax.disable_jit(): run the Python function
            return self._fun(*args, **kwargs)
        if self._closed_refs or _has_ref(args, kwargs):
            return self._call_with_refs(args, kwargs)
        outer = trace_state.trace
        try:
            try:
                return self._call_plain(args, kwargs)
            except ClosedOverRef as e:  # the function closes over a ref: thread it through
                if not (e.ref._trace is outer or e.ref._trace.is_ancestor_of_or_self(outer)):
                    raise
                self._closed_refs = [*self._closed_refs, e.ref]
                return self._call_with_refs(args, kwargs)
        except Exception as e:  # this frame too is minijax's (core/traceback_util.py)
            process_exception(e)
            raise

    _closed_refs: list = []  # refs the function closes over (found by tracing it)
    _ref_inner = None

    def _call_with_refs(self, args: tuple, kwargs: dict):
        """A call with refs among the arguments or closed over: their values go in as
        arguments and come out as results of a jit of the function, and are written back."""
        from minijax.lax.state import Ref
        statics, dyn_args, dyn_kwargs, _ = self._split(args, kwargs)
        leaves, tree = tree_flatten((dyn_args, dyn_kwargs))
        refs: list = []
        index: dict = {}
        for r in self._closed_refs:
            if id(r) not in index:
                index[id(r)] = len(refs)
                refs.append(r)
        mask = []
        seen: set = set()
        for x in leaves:
            if isinstance(x, Ref):
                if id(x) in seen:
                    self._duplicate_ref(x, dyn_args, dyn_kwargs, leaves)
                seen.add(id(x))
                if id(x) not in index:
                    index[id(x)] = len(refs)
                    refs.append(x)
                mask.append(index[id(x)])
            else:
                mask.append(-1)
        values = [r._get_value() for r in refs]
        others = [x for x, m in zip(leaves, mask) if m < 0]
        if self._ref_inner is None:
            self._ref_inner = _RefCall(self)
        while True:
            self._ref_inner.refs = refs
            try:
                out, finals = self._ref_inner.jitted(values, others, tree, tuple(mask), statics)
                break
            except ClosedOverRef as e:  # one more closed-over ref found
                outer = trace_state.trace
                if any(e.ref is r for r in refs) or not (
                        e.ref._trace is outer or e.ref._trace.is_ancestor_of_or_self(outer)):
                    raise
                self._closed_refs = [*self._closed_refs, e.ref]
                refs.append(e.ref)
                values.append(e.ref._get_value())
            finally:
                self._ref_inner.refs = None
        for r, v in zip(refs, finals):
            r._set_value(v)
        return out

    def _duplicate_ref(self, ref, dyn_args, dyn_kwargs, leaves):
        paths = [p for p, _ in tree_flatten_with_path((dyn_args, dyn_kwargs))[0]]
        names = [n for n, x in zip(arg_names_from_paths(self._fun, paths), leaves) if x is ref]
        raise ValueError(
            "only one reference to a mutable array may be passed as an argument to a function, "
            f"but when tracing {_describe(self._fun)} for jit the mutable array reference of "
            f"type {ref.aval} appeared at both {names[0]} and {names[1]}.")

    def _call_plain(self, args: tuple, kwargs: dict):
        try:
            if trace_state.trace is not EVAL_TRACE:
                return self._call_traced(args, kwargs)
            ctx = trace_state.ctx
            fast = ctx is EMPTY_CTX  # the dispatch tables are for top-level calls only
            entry, leaves = self._entry(args, kwargs)
            if self._shardings is not None:  # jit(in_shardings=, out_shardings=)
                device = self._placement(entry, leaves)
            else:
                device = call_device(leaves)  # None: the default device; or a Placement
                if not isinstance(device, Placement):  # a shard_map inside needs its mesh
                    device = mesh_placement(entry.closed, leaves, device)
            device = explicit_placement(device, entry.in_avals, entry.out_avals)
            if self._device is not None:
                device = _placed(self._name, self._device, device)
            # The executable cache, else what jit(f).trace(*args).lower().compile() does.
            compiled = EXECUTABLES.get(entry, ctx.metadata, device, self._compiler_options)
            if compiled is None:
                compiled = Traced(entry, device, self._compiler_options).lower().compile()
            run = compiled.run_buffers
            if fast:  # the avals of device arrays will be these (interned) objects
                self._add_fast_entry(entry, run, device, args, kwargs, leaves)
            try:
                out = run(to_buffers(leaves, device))
            except Exception:
                raise_if_deleted(leaves)
                raise
            if entry.has_donation:
                mark_donated(leaves, entry.aliased_inputs, self._name)
            return out
        except Exception as e:  # the boundary of the full path (core/traceback_util.py)
            process_exception(e)
            raise

    def _add_fast_entry(self, entry: TraceEntry, run, device, args: tuple, kwargs: dict,
                        leaves: list) -> None:
        """Let the next calls of this signature take the dispatch fast paths (``run``:
        the ``Compiled``'s ``run_buffers``)."""
        if not self._positional_fast_path_ok(entry.in_avals):
            return
        ids = interned_ids(entry.in_avals, device)
        if entry.has_donation:
            self._tree_fast[(entry.in_tree, entry.statics, *ids)] = (
                run, tuple(entry.aliased_inputs), self._name)
        else:
            self._tree_fast[(entry.in_tree, entry.statics, *ids)] = run
        _with_fast_entries.add(self)
        if device is None and any(type(x) in PY_SCALAR_TYPES for x in leaves):
            scalar_specs()  # Python scalar leaves: fresh buffers need these
            if not entry.has_donation:  # and the next call with the same values, these
                make_constants(leaves)
        if device is None:  # NumPy leaves: how to put one of this dtype and shape
            record_numpy_specs(leaves)
        # The flat table: every argument a leaf (static ones aside), keyword arguments
        # only without static ones, and when it donates, neither (its leaves are then
        # the arguments, which the donation marks index; see stages/dispatch.py).
        n_pos = len(args) - sum(type(k) is int for k, _ in entry.statics)
        kw_names = tuple(kwargs)
        if entry.has_donation and (kw_names or self._dispatch_statics is not None):
            return
        if entry.in_tree == _flat_treedef(n_pos, tuple(sorted(kw_names))) and not (
                kw_names and self._dispatch_statics is not None):
            order = sorted(kw_names)
            kw_ids = [ids[n_pos + order.index(k)] for k in kw_names]
            statics = None if self._dispatch_statics is None else entry.statics
            if list(kw_names) != order:
                # The flat paths pass the keyword buffers in call order; the executable
                # takes them in sorted-name order (the pytree order of a dict).
                run = _reordered(run, [*range(n_pos),
                                       *(n_pos + kw_names.index(k) for k in order)])
            self._fast[flat_key((*ids[:n_pos], *kw_ids), kw_names, statics)] = (
                (run, tuple(entry.aliased_inputs), self._name) if entry.has_donation
                else run)

    def _positional_fast_path_ok(self, in_avals) -> bool:
        """Whether calls with these argument types may take the dispatch fast path
        (where Python scalars meet it as weakly typed constants); subclasses narrow it."""
        return True

    def _call_traced(self, args, kwargs):
        entry, leaves = self._entry(args, kwargs)
        if not entry.hoisted:  # the equation run eagerly runs this entry's executables
            EXECUTABLES.register(entry)
        donated = (False,) * len(entry.hoisted) + entry.donated
        outs = jit_p.bind(*entry.hoisted, *leaves, jaxpr=entry.closed, name=self._name,
                          donated_invars=donated, inline=self._inline,
                          call_metadata=self._call_metadata)
        return entry.out_tree.unflatten(outs)

    def _placement(self, entry: TraceEntry, leaves: Sequence[Any]):
        """The placement of a call of a ``jit`` given ``in_shardings``/``out_shardings``."""
        in_spec, out_spec = self._shardings
        ins = None
        if in_spec is not None:
            ins = _prefix_to_leaves(in_spec, entry.in_tree.unflatten(range(len(leaves)))[0],
                                    "in_shardings", self._name)
        outs = None
        if out_spec is not None:
            n = len(entry.out_avals)
            outs = _prefix_to_leaves(out_spec, entry.out_tree.unflatten(range(n)),
                                     "out_shardings", self._name)
        placement = placement_of(leaves, ins, outs)
        if placement is None:
            return call_device(leaves)
        return placement

    # -- AOT API

    @api_boundary
    def trace(self, *args, **kwargs):
        _no_ref_arguments(self, args, kwargs)
        entry, leaves = self._entry(args, kwargs, allow_shape_dtype=True)
        # Sharded arguments or in/out_shardings: lowered and compiled for their devices.
        placement = (self._placement(entry, leaves) if self._shardings is not None
                     else aot_device(leaves))
        if not isinstance(placement, Placement):
            placement = mesh_placement(entry.closed, leaves, placement)
        placement = explicit_placement(placement, entry.in_avals, entry.out_avals)
        if self._device is not None and not isinstance(placement, Placement):
            placement = _placed(self._name, self._device, placement)
        # or one device other than the default (the arguments' or device=): compiled for it
        return Traced(entry, placement, self._compiler_options)

    @api_boundary
    def lower(self, *args, **kwargs):
        return self.trace(*args, **kwargs).lower()

    @api_boundary
    def eval_shape(self, *args, **kwargs):
        from minijax.core.aval import ShapeDtypeStruct
        entry, _ = self._entry(args, kwargs, allow_shape_dtype=True)
        return public_structs(entry.out_tree.unflatten(
            ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
            for a in entry.out_avals))

    def _cache_size(self) -> int:
        """How many argument signatures have been traced and cached."""
        return len(self._traces)

    @property
    def trace_count(self) -> int:
        """How many times the function has been traced (for tests and diagnostics)."""
        return self._trace_count

    def clear_cache(self) -> None:
        if self._shared_table:
            self._shared_table.clear()
        self._traces.clear()
        self._fast.clear()
        self._tree_fast.clear()
        self._keys_seen.clear()

    # Copies are the object itself, as for functions; its caches hold executables.
    def __reduce__(self):
        raise TypeError(f"cannot pickle {self!r}; pickle the function and jit it again")

    def __copy__(self) -> Wrapped:
        return self

    def __deepcopy__(self, memo) -> Wrapped:
        return self


def _placement(device, backend):
    """The device ``jit(device=, backend=)`` asks for: None for the default one.

    ``backend`` must name the default backend's platform (``"cpu"``; an unknown or
    unavailable one is a RuntimeError as in jax, which raises it at the first call,
    minijax here) and ``device`` be one of ``minijax.devices()``; both at once is a
    ValueError, as in jax.
    """
    from minijax.runtime.backend import default_device, devices, get_backend
    if device is not None and backend is not None:
        raise ValueError(f"can't specify both a device and a backend for jit, got "
                         f"device={device!r} and backend={backend!r}")
    if backend is not None:
        if not isinstance(backend, str):
            raise TypeError(f"jit backend must be a platform name such as 'cpu', got "
                            f"{backend!r}")
        try:
            chosen = get_backend(backend)
        except ValueError as e:
            raise RuntimeError(f"Unknown backend {backend!r} requested for jit: {e}") from None
        if chosen is not get_backend():
            raise NotImplementedError(
                f"jit(backend={backend!r}): minijax compiles for the default backend "
                f"({get_backend().platform!r}) only; choose the platform with the "
                f"minijax_platforms option instead")
        return None
    if device is None:
        return None
    if not any(device is d or device == d for d in devices()):
        raise TypeError(f"jit device must be one of minijax.devices(), got {device!r}")
    return None if device == default_device() else device


def _placed(name: str, wanted, found):
    """The device a ``jit(device=wanted)`` call runs on, given its arguments' device
    ``found`` (None: all on the default device, which then follow to ``wanted``)."""
    if found is not None and found != wanted:
        raise ValueError(f"jit({name}) was asked to run on {wanted} but an argument is on "
                         f"{found}; move it with minijax.device_put(x, device)")
    return wanted


def _check_shardings(spec: Any, what: str) -> Any:
    """``spec`` unless something in it is neither a sharding, None nor a container."""
    from minijax.runtime.sharding import check_device_memory, is_sharding
    leaves = [spec] if is_sharding(spec) or spec is None else tree_flatten(
        spec, is_leaf=lambda x: x is None or is_sharding(x))[0]
    for s in leaves:
        if s is not None and not is_sharding(s):
            raise TypeError(f"jit {what} must be shardings (NamedSharding, "
                            f"SingleDeviceSharding), None, or pytrees of them; got {s!r}")
        check_device_memory(s, f"jit {what}")
    return spec


def _prefix_to_leaves(prefix: Any, structure: Any, what: str, name: str) -> list:
    """One sharding (or None) per leaf of ``structure`` (the arguments' or results' tree,
    with placeholder leaves), of which ``prefix`` is a pytree prefix."""
    from minijax.runtime.sharding import is_sharding
    if what == "in_shardings" and isinstance(prefix, list):
        prefix = tuple(prefix)
    if what == "in_shardings" and isinstance(prefix, tuple) and len(prefix) != len(structure):
        raise ValueError(f"jit({name}) in_shardings has {len(prefix)} entries but the "
                         f"function was called with {len(structure)} positional arguments")
    try:
        out = broadcast_prefix(prefix, structure, lambda p: p is None or is_sharding(p))
    except PrefixMismatchError as e:
        raise ValueError(f"jit({name}) {what}{e.where}: {e.prefix!r} is not a pytree prefix "
                         f"of the {'arguments' if what == 'in_shardings' else 'outputs'} "
                         f"(structure {e.full!r})") from None
    return out


def _remap_path(path: tuple, dyn_nums: Sequence[int]) -> tuple:
    """A path into (dyn_args, dyn_kwargs) -> the same path into (args, kwargs)."""
    if len(path) >= 2 and getattr(path[0], "idx", None) == 0:
        from minijax._pytree import SequenceKey
        return (path[0], SequenceKey(dyn_nums[path[1].idx])) + tuple(path[2:])
    return path


class _RefCall:
    """The jit of ``wrapped``'s function that takes its refs' values and returns their
    final values with its results (one per ``wrapped``; ``refs`` is set for each call)."""

    def __init__(self, wrapped: Wrapped):
        self.wrapped = wrapped
        self.refs = None
        fun = wrapped._fun

        def with_ref_values(values, others, tree, mask, statics):
            from minijax.lax.state import Ref, returned_ref_error, run_with_refs
            refs = self.refs
            it = iter(others)
            leaves = [refs[m] if m >= 0 else next(it) for m in mask]
            dyn_args, dyn_kwargs = tree.unflatten(leaves)
            a, k = wrapped._merge(statics, dyn_args, dyn_kwargs)
            out, finals = run_with_refs(refs, values, lambda: fun(*a, **k))
            pairs, _ = tree_flatten_with_path(out)
            for _, x in pairs:
                if isinstance(x, Ref):
                    names = [n for n, lf in zip(arg_names_from_paths(fun, [
                        p for p, _ in tree_flatten_with_path((dyn_args, dyn_kwargs))[0]]),
                        leaves) if lf is x]
                    where = f"passed in as the argument {names[0]}" if names else ""
                    raise returned_ref_error("jit", _describe(fun), x, where)
            return out, finals

        with_ref_values.__name__ = getattr(fun, "__name__", "fun")
        with_ref_values.__qualname__ = getattr(fun, "__qualname__", "fun")
        self.jitted = Wrapped(with_ref_values, static_argnums=(2, 3, 4))


def _describe(fun) -> str:
    code = getattr(fun, "__code__", None)
    name = getattr(fun, "__name__", "fun")
    if code is None:
        return name
    return f"{name} at {code.co_filename}:{code.co_firstlineno}"


def _has_ref(args: tuple, kwargs: dict) -> bool:
    from minijax.lax.state import Ref
    if not any(isinstance(a, Ref) for a in args) and not any(
            isinstance(v, Ref) for v in kwargs.values()):
        if all(isinstance(a, (Array, int, float)) for a in args) and not kwargs:
            return False
        return any(isinstance(x, Ref) for x in tree_flatten((args, kwargs))[0])
    return True


def _check_outputs(name: str, outs: list, paths: list) -> None:
    from minijax.core.trace import Tracer
    from minijax._pytree import keystr
    import numpy as np
    for x, p in zip(outs, paths):
        if isinstance(x, (Tracer, Array, np.ndarray, np.generic, bool, int, float, complex)):
            continue
        from minijax.lax.state import Ref, returned_ref_error
        if isinstance(x, Ref):
            raise returned_ref_error("jit", name, x, "")
        raise TypeError(
            f"Function {name} returned a value of type {type(x).__name__} at output "
            f"path result{keystr(p)}, which is not a valid minijax array type "
            f"(return arrays, scalars, or pytrees of them).")


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Iterable[str] = (), donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Iterable[str] = (), inline: bool = False,
        compiler_options: dict | None = None, keep_unused: bool = False, device=None,
        backend=None, in_shardings=None, out_shardings=None) -> Wrapped:
    """Compile ``fun`` with XLA; mirrors ``jax.jit``.

    ``donate_argnums``/``donate_argnames``: arguments whose buffers an output may
    reuse; a donated ``Array`` is deleted by the call. ``compiler_options``: XLA
    options for this function (see ``minijax.runtime.compile_options``), checked
    here. ``in_shardings``/``out_shardings``: the layouts of the arguments and results
    (a sharding, or a pytree prefix of shardings and None; see ``minijax.sharding``):
    arguments are moved there, the program is partitioned over the devices by XLA's
    SPMD partitioner, and results stay sharded. Sharded Array arguments imply the same.

    >>> f = minijax.jit(lambda x: minijax.numpy.sin(x) * 2)
    >>> f(1.0)
    Array(1.682942, dtype=float32, weak_type=True)
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, donate_argnums=donate_argnums,
                                 donate_argnames=donate_argnames, inline=inline,
                                 compiler_options=compiler_options, keep_unused=keep_unused,
                                 device=device, backend=backend, in_shardings=in_shardings,
                                 out_shardings=out_shardings)
    return PjitFunction(fun, static_argnums=static_argnums, static_argnames=static_argnames,
                        donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                        inline=inline, compiler_options=compiler_options,
                        keep_unused=keep_unused, device=device, backend=backend,
                        in_shardings=in_shardings, out_shardings=out_shardings)


class PjitFunction(Wrapped):
    """What ``jit(f)`` returns: a ``Wrapped`` under the type name of jax's jitted functions
    (libraries tell a jitted function from a plain one by it, e.g. chex's
    ``assert_max_traces`` refusing an already-jitted function)."""


def trace_entry(wrapped: Wrapped, args: tuple, kwargs: dict) -> TraceEntry:
    """What ``wrapped`` traces to for these arguments (arrays, or anything with a shape
    and dtype): its cached ``TraceEntry``, or a new one (``make_jaxpr`` and
    ``xla_computation`` read jaxprs this way)."""
    _no_ref_arguments(wrapped, args, kwargs)
    return wrapped._entry(args, kwargs, allow_shape_dtype=True)[0]


def _no_ref_arguments(wrapped: Wrapped, args: tuple, kwargs: dict) -> None:
    if _has_ref(args, kwargs):
        raise NotImplementedError(
            f"{wrapped._name}: tracing or lowering a function with mutable array reference "
            "arguments (make_jaxpr, eval_shape, .trace/.lower) is not supported by minijax; "
            "call the jitted function, or pass the refs' values (ref[...])")


def tagged_call(fun: Callable, name: str, call_metadata: tuple) -> Wrapped:
    """A jit of ``fun`` that stays a call (never inlined): the call op is named ``name``
    and carries ``call_metadata`` as frontend attributes (``must_fuse_call`` uses it)."""
    w = Wrapped(fun, inline=False)
    w._name = name
    w._call_metadata = tuple(call_metadata)
    return w
