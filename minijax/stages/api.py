"""make_jaxpr and eval_shape, and jax's small API functions: typeof, named_scope,
named_call, ensure_compile_time_eval, disable_jit, clear_caches, live_arrays,
copy_to_host_async, print_environment_info."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable

from minijax import version as _version
from minijax.config import State
from minijax.core import lru
from minijax.core.aval import ShapedArray, ShapeDtypeStruct
from minijax.core.jaxpr import ClosedJaxpr, EqnContext, Jaxpr
from minijax.core.trace import trace_state, get_aval, merge_ctx
from minijax.core.trace import ensure_compile_time_eval  # noqa: F401  (re-exported)
from minijax.core.traceback_util import api_boundary
from minijax._pytree import tree_leaves


def make_jaxpr(fun: Callable, static_argnums=(), return_shape: bool = False):
    """A function returning the ``ClosedJaxpr`` of ``fun`` for example arguments.

    >>> print(minijax.make_jaxpr(jnp.sin)(jnp.ones(3)))
    { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }
    """
    from minijax.stages.jit import Wrapped, trace_entry

    @api_boundary
    @functools.wraps(fun)
    def make(*args, **kwargs):
        entry = trace_entry(Wrapped(fun, static_argnums=static_argnums), args, kwargs)
        closed = entry.closed
        if entry.hoisted:  # values of enclosing traces it closes over are its consts
            # again (as jax's), not leading inputs: eval_jaxpr(jaxpr, consts, *args) runs it
            j, n = closed.jaxpr, len(entry.hoisted)
            closed = ClosedJaxpr(Jaxpr(j.constvars + j.invars[:n], j.invars[n:], j.outvars,
                                       j.eqns, j.debug_info),
                                 closed.consts + list(entry.hoisted))
        if return_shape:
            shapes = entry.out_tree.unflatten(
                ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                for a in closed.out_avals)
            return closed, shapes
        return closed

    return make


@api_boundary
def eval_shape(fun: Callable, *args, **kwargs):
    """Output shapes and dtypes of ``fun`` without running it."""
    from minijax.stages.jit import Wrapped
    return Wrapped(fun).eval_shape(*args, **kwargs)


# ---- small API functions with jax's names ---------------------------------------------------

def typeof(x) -> ShapedArray:
    """The abstract type (``ShapedArray``) of an array, tracer or Python scalar; the
    ``AbstractRef`` of a mutable array reference."""
    from minijax.lax.state import Ref
    if isinstance(x, Ref):
        return x.aval
    typeof_method = getattr(type(x), "_typeof", None)  # typed key arrays: key<fry>[...]
    if typeof_method is not None:
        return typeof_method(x)
    return get_aval(x)


class named_scope:
    """Context manager: the operations traced inside get ``name`` in their location names
    (``jit(f)/name/sin``), as jax's ``named_scope``.

    >>> with minijax.named_scope("layer1"):
    ...     y = jnp.sin(x)
    """

    __slots__ = ("_name", "_prev")

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError("named_scope name argument must be a string.")
        self._name = name

    def __enter__(self):
        self._prev = trace_state.ctx
        trace_state.ctx = merge_ctx(self._prev, EqnContext((), (self._name,)))
        return self

    def __exit__(self, *exc):
        trace_state.ctx = self._prev

    def __call__(self, fun: Callable) -> Callable:
        """As a decorator: ``fun``'s operations are traced under this name."""
        name = self._name

        @functools.wraps(fun)
        def scoped(*args, **kwargs):
            with named_scope(name):
                return fun(*args, **kwargs)
        return scoped


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """``fun`` whose operations are traced under ``named_scope(name)`` (default: the
    function's name)."""
    scope = name if name is not None else getattr(fun, "__name__", "fun")

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with named_scope(scope):
            return fun(*args, **kwargs)
    return named


def disable_jit(disable: bool = True):
    """Context manager: ``jit``-wrapped functions run their Python code directly,
    operation by operation (for debugging), as jax's ``disable_jit``."""
    return _disable_jit(bool(disable))


_disable_jit = State("minijax_disable_jit")


def clear_caches() -> None:
    """Empty minijax's in-memory caches: traced jaxprs, compiled executables, eager
    kernels, memo tables (not the persistent compilation cache)."""
    lru.clear_all()


def live_arrays(platform: str | None = None) -> list:
    """The minijax Arrays alive now (not deleted), optionally on one platform only."""
    from minijax.runtime.array import Array
    out = []
    for obj in gc.get_objects():
        if type(obj) is Array and not obj.is_deleted():
            if platform is None or obj.devices().pop().platform == platform:
                out.append(obj)
    return out


def copy_to_host_async(x):
    """Start copying every array leaf of ``x`` to the host; returns ``x``."""
    for leaf in tree_leaves(x):
        start = getattr(leaf, "copy_to_host_async", None)
        if start is not None:
            start()
    return x


def print_environment_info(return_string: bool = False) -> str | None:
    """The versions of minijax, jaxlib, NumPy and Python, the devices and platform, and
    the MINIJAX_/JAX_/XLA_ environment variables; printed, or returned as a string."""
    import importlib.metadata
    import os
    import platform as _platform
    import sys

    import numpy as np

    from minijax.runtime import backend
    devs = backend.devices()
    lines = [f"minijax: {_version.__version__}",
             f"jaxlib: {importlib.metadata.version('jaxlib')}",
             f"numpy:  {np.__version__}",
             f"python: {sys.version.replace(chr(10), ' ')}",
             f"device info: {devs[0].device_kind}-{len(devs)}, "
             f"{backend.local_device_count()} local devices",
             f"process_count: {backend.process_count()}",
             f"platform: {_platform.uname()}"]
    lines += [f"{k}={v}" for k, v in os.environ.items()
              if k.startswith(("MINIJAX_", "JAX_", "XLA_"))]
    info = "\n".join(lines)
    if return_string:
        return info
    print(info)
    return None


def host_count(backend=None) -> int:
    """The number of processes (jax's older name for ``process_count``)."""
    from minijax.runtime import backend as _backend
    return _backend.process_count(backend)


def host_id(backend=None) -> int:
    """This process's index (jax's older name for ``process_index``)."""
    from minijax.runtime import backend as _backend
    return _backend.process_index(backend)


def process_indices(backend=None) -> list[int]:
    """The indices of all processes: ``[0, ..., process_count() - 1]``."""
    return list(range(host_count(backend)))


host_ids = process_indices
