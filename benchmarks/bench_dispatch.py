"""Dispatch of cached jit calls by call shape, minijax vs jax.

Each row calls a jitted function whose executable is already compiled, so it
measures what a call costs besides the program itself: flattening the arguments,
finding the executable, and wrapping the results. ``jit_call`` in ``run.py`` is the
flat two-array baseline.
"""

from __future__ import annotations

import numpy as np

from harness import Lib, PerCall, benchmark


def _state(lib: Lib, n: int = 16):
    return {f"p{i:02d}": lib.put(np.full((4,), i, np.float32)) for i in range(n)}


def _update(lib: Lib):
    def update(i, state, x):
        return {k: v * 0.9 + x * i for k, v in state.items()}
    return lib.mod.jit(update)


@benchmark("dispatch_update_step", "us")
def dispatch_update_step(lib: Lib) -> PerCall:
    """Optimizer-style step update(i, state, x): a Python int, a dict of 16 f32[4]
    arrays and an f32[4] array (the int the same every call)."""
    f, state, x = _update(lib), _state(lib), lib.put(np.ones(4, np.float32))
    lib.block(f(3, state, x))
    return PerCall(lambda: f(3, state, x))


@benchmark("dispatch_changing_int", "us")
def dispatch_changing_int(lib: Lib) -> PerCall:
    """f(i, x) with a Python int i that is different at every call and an f32[4].

    Measured (issue 28, interleaved in one process, min of 60 loops): minijax's call with
    the same int (its cached device constant) is ~0.7x jax's, and a changing int adds
    ~2.8 us, all of it jaxlib's ``batched_device_put`` of the fresh scalar (~2.5 us
    alone, whatever the aval, sharding callback, semantics or committed flag); jax's
    own C++ dispatch puts it without making an ArrayImpl, for ~0.1 us."""
    f = lib.mod.jit(lambda i, x: x * i)
    x = lib.put(np.ones(4, np.float32))
    lib.block(f(0, x))
    counter = iter(range(1 << 62))
    return PerCall(lambda: f(next(counter), x))


@benchmark("dispatch_kwargs", "us")
def dispatch_kwargs(lib: Lib) -> PerCall:
    """f(a, b=b) with two f32[8] arrays, the second as a keyword argument."""
    f = lib.mod.jit(lambda a, b: a * b + 1.0)
    a = lib.put(np.arange(8, dtype=np.float32))
    b = lib.put(np.ones(8, np.float32))
    lib.block(f(a, b=b))
    return PerCall(lambda: f(a, b=b))


@benchmark("dispatch_static_arg", "us")
def dispatch_static_arg(lib: Lib) -> PerCall:
    """f(a, b, 2) with two f32[8] arrays and a static (hashable) int argument."""
    f = lib.mod.jit(lambda a, b, n: a * b + n, static_argnums=2)
    a = lib.put(np.arange(8, dtype=np.float32))
    b = lib.put(np.ones(8, np.float32))
    lib.block(f(a, b, 2))
    return PerCall(lambda: f(a, b, 2))


@benchmark("dispatch_donated", "us")
def dispatch_donated(lib: Lib) -> PerCall:
    """f(a, b) donating a (a fresh f32[8] per call, made before the clock starts)."""
    f = lib.mod.jit(lambda a, b: a * b + 1.0, donate_argnums=0)
    host = np.arange(8, dtype=np.float32)
    b = lib.put(np.ones(8, np.float32))
    lib.block(f(lib.put(host), b))
    return PerCall(lambda a: f(a, b), fresh=lambda: lib.put(host))


@benchmark("dispatch_numpy_args", "us")
def dispatch_numpy_args(lib: Lib) -> PerCall:
    """f(a, s) with a NumPy f32[16,16] array and a NumPy float32 scalar (both copied to
    the device at every call)."""
    f = lib.mod.jit(lambda a, s: a * s + 1.0)
    a, s = np.ones((16, 16), np.float32), np.float32(0.5)
    lib.block(f(a, s))
    return PerCall(lambda: f(a, s))


def _three(lib: Lib):
    f = lib.mod.jit(lambda a, b, c: a * b + c)
    a, b, c = (lib.put(np.full((8,), v, np.float32)) for v in (1.0, 2.0, 3.0))
    return f, a, b, c


@benchmark("dispatch_kwargs3_out_of_order", "us")
def dispatch_kwargs3_out_of_order(lib: Lib) -> PerCall:
    """f(c=c, a=a, b=b): three f32[8] arrays, all keyword arguments, not in the order of
    f's parameters (a, b, c). dispatch_positional3 is the same call positionally."""
    f, a, b, c = _three(lib)
    lib.block(f(c=c, a=a, b=b))
    return PerCall(lambda: f(c=c, a=a, b=b))


@benchmark("dispatch_positional3", "us")
def dispatch_positional3(lib: Lib) -> PerCall:
    """The plain cached call f(a, b, c) of dispatch_kwargs3_out_of_order's function (the
    cost of holding the argument buffers during execution included)."""
    f, a, b, c = _three(lib)
    lib.block(f(a, b, c))
    return PerCall(lambda: f(a, b, c))
