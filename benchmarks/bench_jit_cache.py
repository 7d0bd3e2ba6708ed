"""The executable cache (minijax/stages/cache.py), minijax vs jax.

``eager_grad_of_jit``: ``grad`` of a jitted function, run eagerly: each call traces the
jvp and transposes it, making new ``jit`` equations whose executables must be found
again rather than compiled. ``eval_jit_equation``: ``eval_jaxpr`` of a jaxpr holding
``jit(f)``, which runs the executable ``jit(f)(x)`` compiled.
"""

from __future__ import annotations

import numpy as np

from harness import Lib, PerCall, benchmark


@benchmark("eager_grad_of_jit", "us")
def eager_grad_of_jit(lib: Lib) -> PerCall:
    """grad(lambda x: jit(f)(x).sum())(x), f = sin(x) * 2, x f32[16], not under jit."""
    f = lib.mod.jit(lambda x: lib.jnp.sin(x) * 2.0)
    g = lib.mod.grad(lambda x: f(x).sum())
    x = lib.put(np.linspace(-1, 1, 16, dtype=np.float32))
    lib.block(g(x))
    return PerCall(lambda: g(x))


@benchmark("eval_jit_equation", "us")
def eval_jit_equation(lib: Lib) -> PerCall:
    """eval_jaxpr of { a -> jit[f] a } (f = sin(x) * 2 + x, x f32[16])."""
    f = lib.mod.jit(lambda x: lib.jnp.sin(x) * 2.0 + x)
    x = lib.put(np.linspace(-1, 1, 16, dtype=np.float32))
    closed = lib.mod.make_jaxpr(lambda x: f(x))(x)
    if lib.mod.__name__ == "jax":
        from jax import core
        run = core.eval_jaxpr
    else:
        from minijax.core.trace import eval_jaxpr as run
    lib.block(run(closed.jaxpr, closed.consts, x))
    return PerCall(lambda: run(closed.jaxpr, closed.consts, x))
