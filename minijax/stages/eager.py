"""Eager execution: a cached one-equation executable per primitive and signature, and
``fused`` numpy functions that run as one cached program when called eagerly."""

from __future__ import annotations

from minijax.config import config
from minijax.core import dtypes
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from minijax.core.jaxpr import EMPTY_CTX
from minijax.core.lru import LRUCache
from minijax.core.trace import EAGER_IMPL, EVAL_TRACE, trace_state, user_source
from minijax.core.traceback_util import process_exception, register_boundary
from minijax.stages.common import abstractify, call_device, module_name, raise_if_deleted
from minijax.stages.dispatch import ids_and_buffers
from minijax.stages.sharded import (Placement, explicit_placement, interned_ids,
                                    sharding_attrs, to_buffers)
from minijax.stages.compiler import compile_module
from minijax.stages.jit import Wrapped
from minijax.lowering.lower import lower_module
from minijax.runtime.array import Array
from minijax.runtime.transfer import PY_SCALAR_TYPES, scalar_constant
from minijax._pytree import tree_flatten

# (primitive, ids of the interned avals of Array arguments, params) -> run; emptied when
# a config flag that changes programs is updated (see minijax.stages.jit), and when an
# executable leaves _cache (it refills from there).
_fast: dict = {}
# (primitive, avals, params, config, device) -> Executable, at most minijax_eager_cache_size
_cache = LRUCache("minijax_eager_cache_size", (_fast,))
_LEAF = tree_flatten(0)[1]


def _drop_fast(_value) -> None:
    _fast.clear()


for _flag in config.trace_key_names():
    config.on_change(_flag, _drop_fast)


def _build(prim, avals, params, device=None):
    invars = [Var(a) for a in avals]
    try:
        out_avals = prim.abstract_eval(*avals, **params)
    except TypeError as e:
        src = user_source(4)
        raise type(e)(f"{e}\n  (in {prim.name}, at {src})" if src else str(e)) from None
    out_list = list(out_avals) if prim.multiple_results else [out_avals]
    device = explicit_placement(device, avals, out_list)
    outvars = [Var(a) for a in out_list]
    eqn = JaxprEqn(prim, invars, outvars, params)
    closed = ClosedJaxpr(Jaxpr([], invars, outvars, [eqn]), [])
    extra = (sharding_attrs(device, avals, out_list) if isinstance(device, Placement)
             else {})  # sharded arguments: partitioned over their devices
    text = lower_module(closed, module_name=module_name(prim.name), name_prefix=f"jit({prim.name})",
                        **extra)
    return compile_module(text, out_list, name=prim.name, device=device)


def apply_primitive(prim, args, params):
    try:  # device arrays with a signature seen before
        run = _fast[(prim, tuple([id(x.aval) for x in args]), *params.items())]
        bufs = [x._buf for x in args]
    except AttributeError:  # Python scalars among the arguments, perhaps
        return _apply_with_scalars(prim, args, params)
    except (KeyError, TypeError):
        return _apply(prim, args, params)
    return _run(run, bufs, args)


def _run(run, bufs: list, args):
    try:
        return run(bufs)
    except Exception:
        raise_if_deleted(args)  # a clearer error for a deleted or donated argument
        raise


def _apply_with_scalars(prim, args, params):
    """The fast path for device arrays mixed with Python scalars (``x * 2.0``): the
    scalars' device copies are cached (see ``transfer.scalar_constant``)."""
    found = ids_and_buffers(args, scalar_constant)
    if found is None:
        return _apply(prim, args, params)
    ids, bufs = found
    try:
        run = _fast.get((prim, ids, *params.items()))
    except TypeError:  # unhashable params
        run = None
    if run is None:
        return _apply(prim, args, params)
    return _run(run, bufs, args)


def _apply(prim, args, params):
    avals = tuple(abstractify(x) for x in args)
    device = call_device(args)  # None: the default device
    try:
        key = (prim, avals, tuple(params.items()), config.trace_key, device)
        exe = _cache.get(key)
    except TypeError:  # unhashable params: compile without caching
        key, exe = None, None
    if exe is None:
        exe = _build(prim, avals, params, device)
        device = getattr(exe, "placement", device)
        if key is not None:
            _cache[key] = exe
            ids = interned_ids(avals, device)
            _fast[(prim, ids, *params.items())] = exe.runner(
                None if prim.multiple_results else _LEAF)
    device = getattr(exe, "placement", device)
    try:
        outs = exe.execute(to_buffers(args, device))
    except Exception:
        raise_if_deleted(args)
        raise
    return outs if prim.multiple_results else outs[0]


EAGER_IMPL[0] = apply_primitive


# ---- numpy functions that are jitted when called eagerly --------------------------------

class Fused(Wrapped):
    """A ``minijax.numpy`` function that, called eagerly on device arrays, is one program.

    jax's numpy functions are jitted, and these are too, for the same reason: at top
    level on ``Array`` arguments (and Python scalars), ``jnp.sin(x)``, ``x * 2.0`` or
    ``x.sum()`` finds its cached executable through jit's dispatch fast path (C when
    built) instead of going through the numpy, lax and primitive layers, and a
    function of several primitives (``jnp.remainder``, ``jnp.var``) is one executable
    rather than one per primitive. ``max_args`` is how many leading positional
    parameters are arrays: a call with more, with keywords, under a trace, in an
    XLA metadata context or with other argument types (NumPy arrays, a Python
    scalar that would convert differently on the device, see ``_exact_with``) is a
    plain call of the function, so jaxprs and lowered modules hold its primitives
    exactly as before, and errors come from the same places.
    """

    _explains_misses = False  # internal: not reported by minijax_explain_cache_misses

    def __init__(self, fun, max_args: int):
        super().__init__(fun)
        self._max_args = max_args

    def __repr__(self) -> str:
        return f"<minijax.numpy function {self._name}>"

    @register_boundary
    def _call(self, args: tuple, kwargs: dict):
        try:
            if (not kwargs and 0 < len(args) <= self._max_args and trace_state.trace is EVAL_TRACE
                    and trace_state.ctx is EMPTY_CTX and _jittable(args)
                    and not (config.minijax_debug_nans or config.minijax_debug_infs)):
                return super()._call(args, kwargs)
            return self._fun(*args, **kwargs)
        except Exception as e:  # a boundary (core/traceback_util.py)
            process_exception(e)
            raise

    def _positional_fast_path_ok(self, in_avals) -> bool:
        # A weakly typed scalar in the signature is what a Python scalar looks like on
        # the fast path: only where that gives what the plain call gives.
        dts = [a.dtype for a in in_avals]
        for i, a in enumerate(in_avals):
            if a.weak_type and not a.shape and a.dtype.kind in "iuf":
                t = float if a.dtype.kind == "f" else int
                if not _exact_with(t, dts[:i] + dts[i + 1:]):
                    return False
        return True


def _jittable(args: tuple) -> bool:
    """Whether a Fused function may be jitted for ``args``: Arrays, and Python scalars
    that have a device constant and convert exactly (see ``_exact_with``)."""
    dts = [x.aval.dtype for x in args if type(x) is Array]
    for x in args:
        if type(x) is not Array and (type(x) not in PY_SCALAR_TYPES
                                     or scalar_constant(x) is None
                                     or not _exact_with(type(x), dts)):
            return False
    return True


def _exact_with(t: type, array_dtypes) -> bool:
    """Whether a Python scalar of type ``t`` that meets arrays of ``array_dtypes`` gives,
    as a weakly typed device constant (int32/int64, float32/float64) converted on the
    device, what the plain call gives, which converts the Python value on the host to
    the dtype it meets: an int must not meet another integer type (the host conversion
    raises OverflowError for 300 into uint8, the device one wraps), and a float must not
    meet a float narrower than 32 bits (the device path would round twice)."""
    if t is bool:
        return True
    for dt in array_dtypes:
        if t is int and dt.kind in "iu" and dt != dtypes.default_int():
            return False
        if t is float and dt.kind == "f" and dt.itemsize < 4:
            return False
    return True


def fused(fun=None, *, max_args: int | None = None):
    """Decorator for numpy functions (see ``Fused``). Without ``max_args`` every
    positional parameter is an array (elementwise functions); reductions say 1."""
    def wrap(f):
        n = max_args
        if n is None:
            n = f.__code__.co_argcount
        return Fused(f, n)
    return wrap if fun is None else wrap(fun)
