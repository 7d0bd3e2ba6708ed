"""Tracing: the current interpreter, tracers, and ``Primitive.bind``.

minijax uses one *current trace* (interpreter) held in thread-local state
rather than a stack of levels. ``prim.bind(*args)`` hands the primitive to the
current trace. A trace that meets a value it does not own (a concrete array, or
a tracer of an enclosing trace) treats it as a constant; a tracer whose trace
has already finished is a leak and raises ``UnexpectedTracerError``.

Traces here:
- ``EvalTrace``: the top level; runs each primitive eagerly.
- ``JaxprTrace``: records equations into a jaxpr (used by ``jit``, ``make_jaxpr``,
  control flow). Transforms (jvp, batching) add their own traces elsewhere.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from typing import Any
from collections.abc import Callable, Sequence

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import MemorySpace, ShapedArray, long_str
from minijax.core.ref import ClosedOverRef, _RefEscape
from minijax.core.sharding_rules import propagate
from minijax.core.lru import MemoCache
from minijax.core.errors import (ConcretizationTypeError, TracerArrayConversionError,
                                 TracerBoolConversionError, TracerIntegerConversionError,
                                 UnexpectedTracerError)
from minijax.core.jaxpr import (EMPTY_CTX, ClosedJaxpr, EqnContext, Jaxpr, JaxprEqn, Literal,
                                SourceInfo, Var)
from minijax.core.traceback_util import (add_equation_source, process_exception,
                                         register_boundary)

# ---- source locations ----------------------------------------------------------

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_internal_files: dict[str, bool] = {}
_excluded_prefixes: tuple[str, ...] = ()  # register_source_exclusion


_frame_walker: Callable | None = None  # the C walk below, when the extension is built


def set_frame_walker(walker: Callable | None) -> None:
    """Install ``walker(frame, internal_files, SourceInfo)``, the loop of ``user_source``
    in C (``runtime/_speedups.c``; NotImplemented: a file not classified yet)."""
    global _frame_walker
    _frame_walker = walker


def user_source(depth: int = 1) -> SourceInfo | None:
    """The innermost frame outside the minijax package: where the user's code is."""
    f = sys._getframe(depth)
    internal = _internal_files
    if _frame_walker is not None:
        found = _frame_walker(f, internal, SourceInfo)
        if found is not NotImplemented:
            return found
    while f is not None:
        fn = f.f_code.co_filename
        is_int = internal.get(fn)
        if is_int is None:
            is_int = internal[fn] = (fn.startswith(_PKG_DIR) or fn.startswith("<frozen")
                                     or (_excluded_prefixes != ()
                                         and fn.startswith(_excluded_prefixes)))
        if not is_int:
            return SourceInfo(fn, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


# ---- thread-local state ----------------------------------------------------------

class _State(threading.local):
    trace: Trace
    ctx: EqnContext = EMPTY_CTX
    # Named axes bound by xla_computation(axis_env=...) / pmap: ((name, size), ...)
    axis_env: tuple = ()
    # The source of the equation a transform is re-emitting (ad's backward pass): what
    # it emits is attributed there, as in jax, without walking the stack for each.
    source: SourceInfo | None = None


trace_state = _State()


def current_trace() -> Trace:
    return trace_state.trace


def made_in_trace(x, value) -> Any:
    """Note that array ``x``, a scalar, was made from the host value ``value`` during a
    trace: the jaxpr recorded then writes it as a literal (jax makes such constants
    literals, while arrays made before the trace stay constants of the jaxpr). Returns
    ``x``."""
    t = trace_state.trace
    while t is not None and not isinstance(t, JaxprTrace):
        t = t.parent
    if t is not None and not np.ndim(value):
        if isinstance(value, (np.ndarray, np.generic)) and value.dtype != x.aval.dtype:
            value = np.asarray(value, x.aval.dtype)  # as canonicalized (x64 off)
        t._inline[id(x)] = (x, value)
    return x


def current_ctx() -> EqnContext:
    return trace_state.ctx


class set_ctx:
    """Context manager making ``ctx`` the equation context for new equations."""

    __slots__ = ("ctx", "prev")

    def __init__(self, ctx: EqnContext):
        self.ctx = ctx

    def __enter__(self):
        self.prev = trace_state.ctx
        trace_state.ctx = self.ctx

    def __exit__(self, *exc):
        trace_state.ctx = self.prev


def merge_ctx(outer: EqnContext, inner: EqnContext) -> EqnContext:
    """``inner`` applied on top of ``outer``: metadata merged (inner wins), names stacked."""
    if not outer.metadata and not outer.name_stack:
        return inner
    if inner is outer or (not inner.metadata and not inner.name_stack):
        return outer
    md = dict(outer.metadata)
    md.update(inner.metadata)
    return EqnContext(tuple(sorted(md.items())), outer.name_stack + inner.name_stack)


class extend_axis_env:
    """Context manager binding named axes ``((name, size), ...)`` for collectives."""

    __slots__ = ("pairs", "prev")

    def __init__(self, pairs):
        self.pairs = tuple((n, int(s)) for n, s in pairs)

    def __enter__(self):
        self.prev = trace_state.axis_env
        trace_state.axis_env = self.prev + self.pairs

    def __exit__(self, *exc):
        trace_state.axis_env = self.prev


def current_axis_env() -> tuple:
    """The named axes bound where tracing is now: ``((name, size), ...)``, outermost
    first (pmap, shard_map and xla_computation's axis_env bind them)."""
    return trace_state.axis_env


def axis_size(name) -> int:
    """The size of named axis ``name``: bound by an enclosing vmap or an axis environment.

    Raises ``NameError`` naming the axis and the names that exist.
    """
    t = trace_state.trace
    names = []
    while t is not None:
        tname = getattr(t, "axis_name", None)
        if tname is not None:
            if tname == name:
                return t.axis_size
            names.append(tname)
        t = t.parent
    for n, size in reversed(trace_state.axis_env):
        if n == name:
            return size
        names.append(n)
    raise NameError(f"unbound axis name: {name!r}. The axis names available to collective "
                    f"operations here (bound by vmap(axis_name=...), pmap or "
                    f"xla_computation(axis_env=...)) are: {sorted(set(map(str, names)))}")


class gc_paused:
    """Pause Python's cyclic garbage collector (tracing allocates many short-lived
    objects; collections during it cost ~20% of tracing time). Re-entrant."""

    depth = 0

    def __enter__(self):
        if gc_paused.depth == 0:
            self.was_enabled = gc.isenabled()
            gc.disable()
        else:
            self.was_enabled = False
        gc_paused.depth += 1

    def __exit__(self, *exc):
        gc_paused.depth -= 1
        if self.was_enabled:
            gc.enable()


class use_trace:
    """Context manager making ``trace`` the current trace."""

    __slots__ = ("trace", "prev")

    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self):
        self.prev = trace_state.trace
        trace_state.trace = self.trace
        return self.trace

    def __exit__(self, *exc):
        trace_state.trace = self.prev


# ---- primitives --------------------------------------------------------------------

_registry: list[Primitive] = []


def registered_primitives() -> list[Primitive]:
    """Every primitive created so far, in creation order (modules not yet imported add
    theirs when they are). Used by the rule sweep test to check each one's rules."""
    return list(_registry)


class Primitive:
    """An operation minijax knows how to trace, evaluate, lower and transform.

    All of a primitive's rules live with it in one file under ``minijax/lax``:
    ``abstract_eval(*avals, **params)`` returns the output aval(s);
    ``lowering(ctx, *operands, **params)`` emits StableHLO; transform rules
    (``jvp``, ``transpose``, ``batch``) are attached the same way.
    """

    multiple_results = False
    # Listed in ``registered_primitives`` (minijax's own; not those a library defines
    # through jax's extension API, ``minijax.extend.core.Primitive``).
    _listed = True

    def __init__(self, name: str, *, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results
        if self._listed:
            _registry.append(self)
        self.impl: Callable | None = None
        self.abstract_eval: Callable | None = None
        self.lowering: Callable | None = None
        # Lowerings for other targets, by platform: {"mosaic": rule(kernel_lowering, ins,
        # out_avals, **params)} for Pallas kernels compiled for TPU.
        self.platform_lowerings: dict[str, Callable] = {}
        self.jvp: Callable | None = None
        self.transpose: Callable | None = None
        self.batch: Callable | None = None
        self.rules: dict[str, Callable] = {}
        # Optional: params -> the params shown when a jaxpr is printed.
        self.pp_params: Callable[[dict], dict] | None = None
        # Optional: params -> the op name in locations (default: the primitive's name).
        self.loc_name: Callable[[dict], str] | None = None

    def __repr__(self) -> str:
        return self.name

    @register_boundary
    def bind(self, *args, **params):
        try:
            return trace_state.trace.process_primitive(self, args, params)
        except Exception as e:  # a boundary for eager primitives (see core/traceback_util.py)
            process_exception(e)
            raise

    def get_bind_params(self, params: dict) -> dict:
        """The params to re-bind an equation of this primitive with (jax's: an
        interpreter of jaxprs calls ``prim.bind(*ins, **prim.get_bind_params(eqn.params))``);
        minijax's equations bind with their params as they are."""
        return dict(params)

    # decorators to attach rules
    def def_impl(self, fn):
        self.impl = fn
        return fn

    def def_abstract_eval(self, fn):
        self.abstract_eval = _with_sharding_rule(self, fn)
        return fn

    def def_lowering(self, fn, platform: str | None = None):
        """The StableHLO lowering; with ``platform``, the lowering for that target only
        (``"mosaic"``: inside a Pallas TPU kernel)."""
        if platform is None:
            self.lowering = fn
        else:
            self.platform_lowerings[platform] = fn
        return fn

    def def_jvp(self, fn):
        self.jvp = fn
        return fn

    def def_transpose(self, fn):
        self.transpose = fn
        return fn

    def def_batch(self, fn):
        self.batch = fn
        return fn

    def def_rule(self, kind: str):
        def register(fn):
            self.rules[kind] = fn
            return fn
        return register

    def out_avals(self, avals: Sequence[ShapedArray], params: dict) -> list[ShapedArray]:
        """Run abstract eval; always returns a list."""
        out = self.abstract_eval(*avals, **params)
        return list(out) if self.multiple_results else [out]


def _with_sharding_rule(prim: Primitive, fn: Callable) -> Callable:
    """``fn`` (an abstract eval rule), giving its results the shardings the operands'
    explicit shardings imply (sharding in types, ``core/sharding_rules.py``)."""
    def abstract_eval(*avals, **params):
        out = fn(*avals, **params)
        if params.get("out_sharding") is not None or (
                params.get("sharding") is not None and "sharding" in prim.rules):
            return propagate(prim, avals, params, out)
        for a in avals:
            if getattr(a, "_sharding", None) is not None or \
                    getattr(a, "_memory_space", None) is not None:
                return _propagate_types(prim, avals, params, out)
        return out
    abstract_eval.__wrapped__ = fn
    abstract_eval.__name__ = getattr(fn, "__name__", "abstract_eval")
    return abstract_eval


def _propagate_types(prim: Primitive, avals: Sequence[Any], params: dict, out: Any):
    """``out`` with the explicit shardings and the memory spaces its operands imply."""
    if any(getattr(a, "_sharding", None) is not None for a in avals):
        out = propagate(prim, avals, params, out)
    if any(getattr(a, "_memory_space", None) is not None for a in avals):
        out = _propagate_memory_space(prim, avals, params, out)
    return out


def _default_memory_space(prim: Primitive, avals: Sequence[Any]) -> MemorySpace:
    """jax's rule for the memory space of a primitive's results: that of its operands
    of rank 1 or more (which must agree: ValueError), ``Device`` when it has none."""
    if avals and all(getattr(a, "memory_space", None) is MemorySpace.Any for a in avals):
        return MemorySpace.Any
    prev = None
    for a in avals:
        if type(a) is not ShapedArray or not a.shape:
            continue
        if prev is not None and prev.memory_space is not a.memory_space:
            raise ValueError(
                f"memory_space of all inputs passed to `{prim.name}` must be the same. Got "
                f"one operand with type: {long_str(prev)} and another operand with type: "
                f"{long_str(a)}")
        prev = a
    return MemorySpace.Device if prev is None else prev.memory_space


def _propagate_memory_space(prim: Primitive, avals: Sequence[Any], params: dict, out: Any):
    """``out`` with the memory space of its results, when an operand is in host memory:
    the primitive's own rule (``prim.rules["memory_space"]``, one space or a list), else
    jax's default rule. A primitive with a sub-jaxpr (a call, a loop) keeps what its
    jaxpr's results say."""
    rule = prim.rules.get("memory_space")
    if rule is None:
        if any(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in params.values()):
            return out
        space = _default_memory_space(prim, avals)
        spaces = [space] * (len(out) if prim.multiple_results else 1)
    else:
        got = rule(*avals, **params)
        spaces = list(got) if prim.multiple_results else [got]
    outs = list(out) if prim.multiple_results else [out]
    new = [o.update(memory_space=ms) if type(o) is ShapedArray and ms is not o.memory_space
           else o for o, ms in zip(outs, spaces)]
    return new if prim.multiple_results else new[0]


# ---- abstract values of Python values ------------------------------------------------

_scalar_avals: dict = {}
# (dtype, shape, x64) -> the aval of NumPy arrays and scalars like that (one shared object,
# so the abstract-eval memo of an equation with a NumPy constant finds it by identity)
_array_avals = MemoCache("minijax_memo_cache_size")


def get_aval(x) -> ShapedArray:
    """The aval of any value minijax accepts as an array."""
    tx = type(x)
    if tx in _SCALAR_TYPES:
        key = (tx, dtypes.x64_enabled())
        aval = _scalar_avals.get(key)
        if aval is None:
            aval = _scalar_avals[key] = ShapedArray((), dtypes.python_scalar_dtype(x),
                                                    weak_type=tx is not bool)
        return aval
    aval = getattr(x, "aval", None)
    if aval is not None:
        if type(aval) is ShapedArray or _is_minijax_aval(aval):
            return aval
        raise TypeError(
            f"Value of type {tx.__module__}.{tx.__qualname__} (a jax Array or another "
            f"library's array) is not a valid minijax type: convert it first, with "
            f"minijax.numpy.asarray(numpy.asarray(x)) or minijax.dlpack.from_dlpack(x)")
    if isinstance(x, (np.ndarray, np.generic)):  # before float: np.float64 subclasses it
        key = (x.dtype, x.shape, dtypes.x64_enabled())
        aval = _array_avals.get(key)
        if aval is None:
            dt = dtypes.float0 if x.dtype == dtypes.float0 else dtypes.canonicalize(x.dtype)
            aval = _array_avals[key] = ShapedArray(x.shape, dt)
        return aval
    if isinstance(x, (bool, int, float, complex)):  # subclasses, e.g. IntEnum
        return ShapedArray((), dtypes.python_scalar_dtype(x), weak_type=not isinstance(x, bool))
    if isinstance(x, (list, tuple)):
        raise TypeError(f"minijax got a Python {type(x).__name__} where an array was expected; "
                        f"wrap it with minijax.numpy.asarray(...) first")
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid minijax type")


_SCALAR_TYPES = frozenset((int, float, bool, complex))


def _is_minijax_aval(aval) -> bool:
    """Whether ``aval`` is one of minijax's abstract values (refs, keys, hijax types...),
    not the aval of a jax Array (which has an ``aval`` attribute too)."""
    return type(aval).__module__.partition(".")[0] == "minijax"


def is_python_scalar(x) -> bool:
    return type(x) in _SCALAR_TYPES


# ---- tracers ---------------------------------------------------------------------

def aval_str(aval: ShapedArray) -> str:
    """An aval as jax prints one inside tracer reprs: ``~float32[3]`` (``~``: weak type)."""
    name = "float0" if aval.dtype == dtypes.float0 else aval.dtype.name
    return f"{'~' if aval.weak_type else ''}{name}[{','.join(map(str, aval.shape))}]"


class Tracer:
    """A stand-in for an array value while a trace records what is done with it."""

    __slots__ = ("_trace", "aval")
    __array_priority__ = 1000

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.aval.shape)

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__} (a traced array); "
                        "use it as a static argument only if it is a Python value")

    def to_concrete(self, what: str):
        """The concrete value, if this trace knows it; else ConcretizationTypeError."""
        return self._trace.concrete_value(self, what)

    def __bool__(self):
        return bool(self.to_concrete("bool"))

    def __int__(self):
        return int(self.to_concrete("int"))

    def __float__(self):
        return float(self.to_concrete("float"))

    def __complex__(self):
        return complex(self.to_concrete("complex"))

    def __index__(self):
        return int(self.to_concrete("index").__index__())

    def __array__(self, dtype=None, copy=None):
        val = np.asarray(self.to_concrete("numpy.asarray"))
        return val if dtype is None else val.astype(dtype)

    def item(self):
        return np.asarray(self.to_concrete("item")).item()

    def tolist(self):
        return np.asarray(self.to_concrete("tolist")).tolist()

    def __repr__(self):
        return self._short_repr()

    def _short_repr(self) -> str:
        """How the tracer prints (jax's forms: ``JitTracer(~float32[])``...)."""
        return f"{type(self).__name__}<{aval_str(self.aval)}>"

    def __getattr__(self, name):
        raise AttributeError(f"{type(self).__name__} (a traced array) has no attribute {name!r}")


# ---- traces ------------------------------------------------------------------------

class Trace:
    """Base interpreter."""

    alive = True
    parent: Trace | None = None

    def process_primitive(self, prim: Primitive, args: tuple, params: dict):
        raise NotImplementedError

    def concrete_value(self, tracer: Tracer, what: str):
        raise ConcretizationTypeError(f"{what} needs a concrete value")

    @property
    def main(self) -> Trace:
        """An identity for this trace, the same for all its tracers (jax's ``trace.main``,
        kept there for libraries that compare ``x._trace.main is main``)."""
        return self

    def is_ancestor_of_or_self(self, other: Trace) -> bool:
        t = other
        while t is not None:
            if t is self:
                return True
            t = t.parent
        return False


def leaked_tracer_error(tracer: Tracer) -> UnexpectedTracerError:
    t = tracer._trace
    where = getattr(tracer, "_source", None)
    made = f" It was created at {where}." if where else ""
    by = getattr(t, "description", type(t).__name__)
    return UnexpectedTracerError(
        f"Encountered an unexpected tracer {tracer!r}: it belongs to a trace ({by}) that has "
        f"already finished, so it escaped the function being traced (for example by being "
        f"stored in a global, a closure or an attribute) and was used later.{made} "
        f"Return values out of transformed functions instead of leaking them through side "
        f"effects.")


class EvalTrace(Trace):
    """The top-level interpreter: primitives run eagerly."""

    description = "eager evaluation"

    def process_primitive(self, prim, args, params):
        for x in args:
            if isinstance(x, Tracer):
                raise leaked_tracer_error(x)
        impl = prim.impl
        if impl is None:
            return EAGER_IMPL[0](prim, args, params)
        return impl(*args, **params)


EVAL_TRACE = EvalTrace()
_State.trace = EVAL_TRACE

# The runtime's generic eager implementation (set by minijax.stages): compiles a
# one-primitive executable, caches it, and runs it.
EAGER_IMPL: list[Callable] = [None]  # type: ignore[list-item]


class DebugInfo:
    """What was traced, for error messages and argument names."""

    __slots__ = ("traced_for", "fun_name", "arg_names", "result_paths", "fun_source")

    def __init__(self, traced_for: str, fun_name: str, arg_names: Sequence[str] | None,
                 result_paths: Sequence[str] | None = None, fun_source: str | None = None):
        self.traced_for = traced_for
        self.fun_name = fun_name
        self.arg_names = list(arg_names) if arg_names is not None else None
        self.result_paths = result_paths
        self.fun_source = fun_source


# Abstract evaluation is pure: memoized per (primitive, operand avals, params).
_abstract_eval_cache = MemoCache("minijax_memo_cache_size")


class JaxprTracer(Tracer):
    __slots__ = ("_var", "_source")

    def __init__(self, trace: JaxprTrace, var: Var, source):
        self._trace = trace
        self.aval = var.aval
        self._var = var
        self._source = source

    def _short_repr(self) -> str:
        return f"JitTracer({aval_str(self.aval)})"


class JaxprTrace(Trace):
    """Records primitives applied to its tracers as equations of a jaxpr."""

    def __init__(self, parent: Trace, debug: DebugInfo | None = None):
        self.parent = parent
        self.debug = debug
        self.alive = True
        self.eqns: list[JaxprEqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.consts: list[Any] = []
        self._const_ids: dict[int, Var] = {}
        # Scalar arrays made from host values while this trace was recording: written
        # inline as literals, as jax does (id -> (array, its value on the host)).
        self._inline: dict[int, tuple] = {}

    @property
    def description(self) -> str:
        d = self.debug
        return f"{d.traced_for} of {d.fun_name}" if d else "tracing"

    def new_arg(self, aval: ShapedArray, name: str | None = None) -> JaxprTracer:
        v = Var(aval)
        self.invars.append(v)
        return JaxprTracer(self, v, f"argument {name}" if name else "an argument")

    def to_atom(self, x):
        """The Var or Literal standing for ``x`` in this jaxpr."""
        if isinstance(x, Tracer):
            if x._trace is self:
                return x._var
            if not x._trace.alive:
                raise leaked_tracer_error(x)
            return self._const(x, x.aval)
        tx = type(x)
        if tx in (int, float, bool, complex):
            return Literal(x, get_aval(x))
        if tx is np.ndarray or isinstance(x, np.generic):
            arr = np.asarray(x)
            if arr.ndim == 0:
                aval = get_aval(arr)
                # A copy (the caller's array may change later), made already for a scalar.
                fresh = arr is not x and arr.dtype == aval.dtype
                return Literal(arr if fresh else arr.astype(aval.dtype), aval)
            x = arr
        if self._inline:
            made = self._inline.get(id(x))
            if made is not None and made[0] is x:
                return Literal(made[1], x.aval)
        return self._const(x, get_aval(x))

    def _const(self, x, aval) -> Var:
        v = self._const_ids.get(id(x))
        if v is None:
            v = self._const_ids[id(x)] = Var(aval)
            self.constvars.append(v)
            self.consts.append(x)
        return v

    def process_primitive(self, prim, args, params):
        # One and two operands unrolled: a comprehension costs a frame.
        n = len(args)
        if n == 1:
            x = args[0]
            a = x._var if (type(x) is JaxprTracer and x._trace is self) else self.to_atom(x)
            invars = [a]
            key = (prim, a.aval, *params.items()) if params else (prim, a.aval)
        elif n == 2:
            x, y = args
            a = x._var if (type(x) is JaxprTracer and x._trace is self) else self.to_atom(x)
            b = y._var if (type(y) is JaxprTracer and y._trace is self) else self.to_atom(y)
            invars = [a, b]
            key = (prim, a.aval, b.aval, *params.items()) if params else (prim, a.aval, b.aval)
        else:
            invars = [x._var if (type(x) is JaxprTracer and x._trace is self)
                      else self.to_atom(x) for x in args]
            key = (prim, *[v.aval for v in invars], *params.items())
        try:
            out_avals = _abstract_eval_cache.get(key)
        except TypeError:  # unhashable params
            key = out_avals = None
        if out_avals is None:
            try:
                out_avals = prim.abstract_eval(*[v.aval for v in invars], **params)
            except TypeError as e:
                raise _with_source(e, prim) from None
            if key is not None:
                _abstract_eval_cache[key] = out_avals
        src = trace_state.source
        if src is None:  # user_source(2), without its call
            walker = _frame_walker
            src = NotImplemented if walker is None else \
                walker(sys._getframe(1), _internal_files, SourceInfo)
            if src is NotImplemented:
                src = user_source(2)
        if prim.multiple_results:
            outvars = [Var(a) for a in out_avals]
            self.eqns.append(JaxprEqn(prim, invars, outvars, params, trace_state.ctx, src))
            return [JaxprTracer(self, v, src) for v in outvars]
        v = Var(out_avals)
        self.eqns.append(JaxprEqn(prim, invars, [v], params, trace_state.ctx, src))
        return JaxprTracer(self, v, src)

    def concrete_value(self, tracer, what):
        raise concretization_error(tracer, what, self)

    def provenance(self, var: Var) -> list[str]:
        """Names of the traced arguments ``var`` depends on."""
        producers = {id(o): e for e in self.eqns for o in e.outvars}
        names = self.debug.arg_names if self.debug and self.debug.arg_names else None
        index = {id(v): i for i, v in enumerate(self.invars)}
        seen, todo, found = set(), [var], []
        while todo:
            v = todo.pop()
            if id(v) in seen or not isinstance(v, Var):
                continue
            seen.add(id(v))
            if id(v) in index:
                i = index[id(v)]
                found.append(names[i] if names and i < len(names) else f"argument {i}")
            elif id(v) in producers:
                todo.extend(producers[id(v)].invars)
        return sorted(set(found))

    def finish(self, outs: Sequence[Any]) -> tuple[Jaxpr, list[Any]]:
        outvars = [self.to_atom(x) for x in outs]
        self.alive = False
        jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns, self.debug)
        return jaxpr, self.consts


class CompileTimeEvalTrace(Trace):
    """Under ``ensure_compile_time_eval``: operations on concrete values run now (at the
    top level); operations on tracers go to the trace that was current."""

    description = "ensure_compile_time_eval"

    def __init__(self, parent: Trace):
        self.parent = parent
        self.alive = True

    def process_primitive(self, prim, args, params):
        target = self.parent if any(isinstance(x, Tracer) for x in args) else EVAL_TRACE
        with use_trace(target):
            return prim.bind(*args, **params)


class ensure_compile_time_eval:
    """Inside ``jit``, evaluate operations on concrete values eagerly (so their results
    are concrete and Python control flow may depend on them), as jax's.

    >>> @minijax.jit
    ... def f(x):
    ...     with minijax.ensure_compile_time_eval():
    ...         n = int(jnp.sum(jnp.arange(4)))   # a Python int, not a tracer
    ...     return x * n
    """

    __slots__ = ("trace", "prev")

    def __enter__(self):
        self.trace = CompileTimeEvalTrace(trace_state.trace)
        self.prev = trace_state.trace
        trace_state.trace = self.trace

    def __exit__(self, *exc):
        trace_state.trace = self.prev
        self.trace.alive = False


# ---- the trace state as jax's extension API shows it -----------------------------------

class OpaqueTraceState:
    """The current trace, as an opaque value that compares equal only to the state of the
    same trace (``get_opaque_trace_state``: flax checks with it that a value is used at
    the trace it was made in)."""

    __slots__ = ("_trace",)

    def __init__(self, trace: Trace):
        self._trace = trace

    def __eq__(self, other) -> bool:
        return isinstance(other, OpaqueTraceState) and other._trace is self._trace

    def __hash__(self) -> int:
        return id(self._trace)


def get_opaque_trace_state(convention=None) -> OpaqueTraceState:
    """The current trace, opaque (as ``jax.extend.core.get_opaque_trace_state``)."""
    del convention
    return OpaqueTraceState(trace_state.trace)


def find_top_trace(_=None) -> Trace:
    """The current trace (as ``jax.extend.core.find_top_trace``, which ignores its
    argument)."""
    return trace_state.trace


def register_source_exclusion(path: str) -> None:
    """Treat the files under ``path`` as library code: the source recorded for an equation
    is the innermost frame outside them (as ``jax.extend.source_info_util.register_exclusion``)."""
    global _excluded_prefixes
    _excluded_prefixes = (*_excluded_prefixes, str(path))
    _internal_files.clear()


def _with_source(err: TypeError, prim: Primitive) -> TypeError:
    src = user_source(3)
    msg = str(err.args[0]) if err.args else str(err)
    if src is not None and " at " + str(src) not in msg:
        msg = f"{msg}\n  (in {prim.name}, at {src})"
    new = type(err)(msg)
    return new


def concretization_error(tracer: Tracer, what: str, trace: JaxprTrace) -> ConcretizationTypeError:
    kind = {"bool": TracerBoolConversionError, "int": TracerIntegerConversionError,
            "index": TracerIntegerConversionError,
            "numpy.asarray": TracerArrayConversionError}.get(what, ConcretizationTypeError)
    args = trace.provenance(tracer._var) if isinstance(tracer, JaxprTracer) else []
    d = trace.debug
    fun = f" of `{d.fun_name}`" if d else ""
    by = d.traced_for if d else "a transformation"
    if args:
        dep = (f"It depends on the value of argument{'s' if len(args) > 1 else ''} "
               + ", ".join(f"`{a}`" for a in args) + f"{fun}, which {by} traces abstractly.")
    else:
        dep = f"It is computed inside a function traced by {by}."
    fix = ("If that argument is a configuration value, mark it static with "
           "`static_argnums`/`static_argnames` in jit; for a branch that depends on data use "
           "`lax.cond` or `jnp.where`; for a loop use `lax.fori_loop`/`lax.while_loop`.")
    return kind(
        f"Abstract tracer value encountered where a concrete value is expected: `{what}()` was "
        f"called on a traced array {tracer.aval.str_short()}. {dep} {fix}")


# ---- tracing a Python function ---------------------------------------------------------

def trace_to_jaxpr(fun: Callable, in_avals: Sequence[ShapedArray],
                   debug: DebugInfo | None = None) -> tuple[Jaxpr, list[Any], Any]:
    """Trace ``fun(*tracers)`` (flat in, flat list out) into a jaxpr.

    Returns ``(jaxpr, consts, aux)``: consts may include tracers of enclosing
    traces; ``fun`` returns ``(outs, aux)`` where aux is passed through.
    """
    parent = trace_state.trace
    trace = JaxprTrace(parent, debug)
    trace.ref_scope = True  # refs of enclosing traces used here are threaded by the API
    names = debug.arg_names if debug and debug.arg_names else None
    tracers = [trace.new_arg(a, names[i] if names and i < len(names) else None)
               for i, a in enumerate(in_avals)]
    prev = trace_state.trace
    trace_state.trace = trace
    try:
        outs, aux = fun(*tracers)
        jaxpr, consts = trace.finish(outs)
    except _RefEscape as e:  # a ref of an outer trace used here: the caller threads it
        if e.trace is not trace:
            raise
        raise ClosedOverRef(e.ref, debug.traced_for if debug else "this function") from None
    finally:
        trace_state.trace = prev
        trace.alive = False
    return jaxpr, consts, aux


def split_tracer_consts(jaxpr: Jaxpr, consts: list) -> tuple[ClosedJaxpr, list]:
    """Turn consts that are tracers into leading inputs; returns (closed, hoisted)."""
    if not any(isinstance(c, Tracer) for c in consts):
        return ClosedJaxpr(jaxpr, consts), []
    keep_v, keep_c, hoist_v, hoist_c = [], [], [], []
    for v, c in zip(jaxpr.constvars, consts):
        if isinstance(c, Tracer):
            hoist_v.append(v)
            hoist_c.append(c)
        else:
            keep_v.append(v)
            keep_c.append(c)
    new = Jaxpr(keep_v, hoist_v + jaxpr.invars, jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info)
    return ClosedJaxpr(new, keep_c), hoist_c


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args) -> list[Any]:
    """Evaluate a jaxpr by binding its equations under the current trace."""
    env: dict[int, Any] = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[id(v)] = x
    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x

    def read(a):
        return a.val if type(a) is Literal else env[id(a)]

    outer = trace_state.ctx
    eqn = None
    try:
        for eqn in jaxpr.eqns:
            trace_state.ctx = merge_ctx(outer, eqn.ctx)
            ins = [read(a) for a in eqn.invars]
            out = eqn.primitive.bind(*ins, **eqn.params)
            if eqn.primitive.multiple_results:
                for v, x in zip(eqn.outvars, out):
                    env[id(v)] = x
            else:
                env[id(eqn.outvars[0])] = out
    except Exception as e:
        if eqn is not None:  # the user's line that made the equation that failed
            add_equation_source(e, eqn)
        raise
    finally:
        trace_state.ctx = outer
    return [read(a) for a in jaxpr.outvars]


def eval_closed_jaxpr(closed: ClosedJaxpr, *args) -> list[Any]:
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)
