#!/usr/bin/env python3
"""Side-by-side timings of minijax and jax, in one process.

    python benchmarks/run.py [--quick] [--only NAME[,NAME...]] [--json PATH] [--list]

Every benchmark is one setup function ``setup(lib) -> Timing`` registered with
``@benchmark(name, unit)``; it is run once with ``lib`` = minijax and once with
``lib`` = jax, so both libraries are measured by the same code. ``lib.mod`` is the
library module (``minijax`` / ``jax``), ``lib.jnp`` its numpy module and
``lib.block`` its ``block_until_ready``. A setup returns one of

* ``PerCall(fn, fresh=None)``: a hot-path call, timed in timeit-style loops
  (autorange picks the loop count, median over repeats, gc off while timing)
  and reported per call in µs. ``fn()`` is called ``n`` times and the last
  result is blocked on once at the end of each loop (identical for both
  libraries). With ``fresh``, every call gets its own ``fresh()`` state made
  before the clock starts: ``fn(state)`` (loop count capped at ``max_fresh``).
* ``OneShot(prepare, fn)``: an expensive step, reported in s; each repeat runs
  ``state = prepare()`` untimed, then times ``fn(state)``; median over repeats
  after one warm-up.
* ``Measured(fn, repeats=1)``: a quantity other than time (memory growth in
  ``bench_memory.py``): ``fn()`` returns it in the row's unit.

The repeats of the two libraries are interleaved (minijax, jax, minijax, ...) so
background load on the machine hits both alike.

Adding a benchmark is one more decorated function: the core rows are here, each
feature area's rows in its own ``bench_<area>.py`` beside this file (imported
automatically; see ``harness.py``, which holds the machinery). If minijax (or jax)
raises, its row shows ``ERROR: <exception>`` and the run goes on; ``--traceback``
prints the full traceback.

``MINIJAX_BENCH_SELFTEST=1`` substitutes jax for minijax, to check the harness:
every ratio should then be close to 1.
"""

from __future__ import annotations

import glob
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Lib, OneShot, PerCall, benchmark, main  # noqa: E402

# --------------------------------------------------------------------------------------
# Benchmarks

MLP_LAYERS = 200
MLP_WIDTH = 64
MLP_BATCH = 8


def _make_mlp(jnp: Any) -> Callable[..., Any]:
    """A new function object each time, so no library can reuse a cached trace."""

    def mlp(params, x):
        for w, b in params:
            x = jnp.tanh(jnp.dot(x, w) + b)
        return x

    return mlp


def _mlp_inputs(lib: Lib):
    rng = np.random.default_rng(0)
    scale = np.float32(1.0 / np.sqrt(MLP_WIDTH))
    params = [
        (
            lib.put((rng.standard_normal((MLP_WIDTH, MLP_WIDTH)) * scale).astype(np.float32)),
            lib.put(np.zeros((MLP_WIDTH,), np.float32)),
        )
        for _ in range(MLP_LAYERS)
    ]
    x = lib.put(rng.standard_normal((MLP_BATCH, MLP_WIDTH)).astype(np.float32))
    return params, x


@benchmark("jit_call", "us")
def jit_call(lib: Lib) -> PerCall:
    """Cached jit call, two small f32[8] device arrays."""
    f = lib.mod.jit(lambda a, b: a * b + 1.0)
    a = lib.put(np.arange(8, dtype=np.float32))
    b = lib.put(np.ones(8, np.float32))
    lib.block(f(a, b))
    return PerCall(lambda: f(a, b))


@benchmark("compiled_call", "us")
def compiled_call(lib: Lib) -> PerCall:
    """Calling the Compiled object of that jit (jit(f).lower(a, b).compile()) directly."""
    f = lib.mod.jit(lambda a, b: a * b + 1.0)
    a = lib.put(np.arange(8, dtype=np.float32))
    b = lib.put(np.ones(8, np.float32))
    compiled = f.lower(a, b).compile()
    lib.block(compiled(a, b))
    return PerCall(lambda: compiled(a, b))


@benchmark("eager_sin", "us")
def eager_sin(lib: Lib) -> PerCall:
    """Eager jnp.sin on a device f32[8]."""
    sin = lib.jnp.sin
    x = lib.put(np.linspace(0, 1, 8, dtype=np.float32))
    lib.block(sin(x))
    return PerCall(lambda: sin(x))


@benchmark("eager_scalar_mul", "us")
def eager_scalar_mul(lib: Lib) -> PerCall:
    """Eager x * 2.0 (a Python scalar operand) on a device f32[8]."""
    x = lib.put(np.linspace(0, 1, 8, dtype=np.float32))
    lib.block(x * 2.0)
    return PerCall(lambda: x * 2.0)


@benchmark("eager_sum", "us")
def eager_sum(lib: Lib) -> PerCall:
    """Eager x.sum() on a device f32[8, 8]."""
    x = lib.put(np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8))
    lib.block(x.sum())
    return PerCall(lambda: x.sum())


@benchmark("eager_matmul", "us")
def eager_matmul(lib: Lib) -> PerCall:
    """Eager x @ x on a device f32[8, 8]."""
    x = lib.put(np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8))
    lib.block(x @ x)
    return PerCall(lambda: x @ x)


@benchmark("jit_call_scalar", "us")
def jit_call_scalar(lib: Lib) -> PerCall:
    """Cached jit call with a device f32[8] and a Python float."""
    f = lib.mod.jit(lambda a, b: a * b + 1.0)
    a = lib.put(np.arange(8, dtype=np.float32))
    lib.block(f(a, 2.0))
    return PerCall(lambda: f(a, 2.0))


@benchmark("mlp_lower", "s")
def mlp_lower(lib: Lib) -> OneShot:
    """jit(mlp).lower(params, x), 200 layers 64x64 tanh, fresh function + jit per repeat."""
    params, x = _mlp_inputs(lib)
    return OneShot(lambda: lib.mod.jit(_make_mlp(lib.jnp)), lambda f: f.lower(params, x))


@benchmark("mlp_compile", "s")
def mlp_compile(lib: Lib) -> OneShot:
    """.compile() of that lowering (lowering done untimed, fresh each repeat)."""
    params, x = _mlp_inputs(lib)
    return OneShot(
        lambda: lib.mod.jit(_make_mlp(lib.jnp)).lower(params, x), lambda lo: lo.compile()
    )


@benchmark("mlp_run", "us")
def mlp_run(lib: Lib) -> PerCall:
    """Cached call of the jitted 200-layer MLP + block_until_ready."""
    params, x = _mlp_inputs(lib)
    f = lib.mod.jit(_make_mlp(lib.jnp))
    lib.block(f(params, x))
    return PerCall(lambda: lib.block(f(params, x)))


def _make_mlp_loss(jnp: Any) -> Callable[..., Any]:
    mlp = _make_mlp(jnp)

    def loss(params, x):
        return jnp.mean(mlp(params, x) ** 2)

    return loss


@benchmark("grad_mlp_lower", "s")
def grad_mlp_lower(lib: Lib) -> OneShot:
    """jit(grad(loss)).lower(params, x), the same 200-layer MLP, fresh jit per repeat."""
    params, x = _mlp_inputs(lib)
    return OneShot(lambda: lib.mod.jit(lib.mod.grad(_make_mlp_loss(lib.jnp))),
                   lambda f: f.lower(params, x))


@benchmark("grad_mlp_run", "us")
def grad_mlp_run(lib: Lib) -> PerCall:
    """Cached call of jit(grad(loss)) + block_until_ready."""
    params, x = _mlp_inputs(lib)
    f = lib.mod.jit(lib.mod.grad(_make_mlp_loss(lib.jnp)))
    lib.block(f(params, x))
    return PerCall(lambda: lib.block(f(params, x)))


def _per_example(lib: Lib):
    """Per-example gradients jit(vmap(grad(loss), in_axes=(None, 0))) of a small MLP."""
    jnp = lib.jnp
    rng = np.random.default_rng(1)
    params = [(lib.put((rng.standard_normal((16, 16)) / 4).astype(np.float32)),
               lib.put(np.zeros((16,), np.float32))) for _ in range(4)]
    xs = lib.put(rng.standard_normal((32, 16)).astype(np.float32))

    def loss(params, x):
        for w, b in params:
            x = jnp.tanh(jnp.dot(x, w) + b)
        return jnp.sum(x ** 2)

    make = lambda: lib.mod.jit(lib.mod.vmap(lib.mod.grad(loss), in_axes=(None, 0)))  # noqa: E731
    return make, params, xs


@benchmark("per_example_lower", "s")
def per_example_lower(lib: Lib) -> OneShot:
    """Lowering of per-example gradients (vmap of grad) of a 4-layer 16x16 MLP, batch 32."""
    make, params, xs = _per_example(lib)
    return OneShot(make, lambda f: f.lower(params, xs))


@benchmark("per_example_run", "us")
def per_example_run(lib: Lib) -> PerCall:
    """Cached call of the per-example gradients + block_until_ready."""
    make, params, xs = _per_example(lib)
    f = make()
    lib.block(f(params, xs))
    return PerCall(lambda: lib.block(f(params, xs)))


@benchmark("pallas_matmul_interpret", "us")
def pallas_matmul_interpret(lib: Lib) -> PerCall:
    """jit(interpret-mode Pallas tiled matmul) f32 512^3, 128^3 blocks, acc scratch (each
    library's own Pallas interpreter; see also matmul_512 for the plain matmul)."""
    pl = importlib.import_module(lib.module + ".experimental.pallas")
    pltpu = importlib.import_module(lib.module + ".experimental.pallas.tpu")
    jnp, n, b = lib.jnp, 512, 128

    def kernel(x_ref, y_ref, o_ref, acc_ref):
        pl.when(pl.program_id(2) == 0)(lambda: acc_ref.__setitem__(..., jnp.zeros_like(acc_ref)))
        acc_ref[...] += jnp.dot(x_ref[...], y_ref[...])
        pl.when(pl.program_id(2) == n // b - 1)(lambda: o_ref.__setitem__(..., acc_ref[...]))
    spec = lambda f: pl.BlockSpec((b, b), f)  # noqa: E731
    f = lib.mod.jit(pl.pallas_call(
        kernel, out_shape=lib.mod.ShapeDtypeStruct((n, n), jnp.float32), grid=(n // b,) * 3,
        in_specs=[spec(lambda i, j, k: (i, k)), spec(lambda i, j, k: (k, j))],
        out_specs=spec(lambda i, j, k: (i, j)), interpret=True,
        scratch_shapes=[pltpu.VMEM((b, b), jnp.float32)],
        compiler_params=pltpu.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary"))))
    rng = np.random.default_rng(0)
    x, y = (lib.put(rng.standard_normal((n, n)).astype(np.float32)) for _ in range(2))
    lib.block(f(x, y))
    return PerCall(lambda: lib.block(f(x, y)))


@benchmark("matmul_512", "us")
def matmul_512(lib: Lib) -> PerCall:
    """jit(jnp.matmul) f32 512^3: the baseline for pallas_matmul_interpret."""
    rng = np.random.default_rng(0)
    x, y = (lib.put(rng.standard_normal((512, 512)).astype(np.float32)) for _ in range(2))
    f = lib.mod.jit(lib.jnp.matmul)
    lib.block(f(x, y))
    return PerCall(lambda: lib.block(f(x, y)))


@benchmark("host_transfer", "us")
def host_transfer(lib: Lib) -> PerCall:
    """np.asarray of a fresh (never fetched) device f32[1000]."""
    host = np.arange(1000, dtype=np.float32)
    np.asarray(lib.put(host))
    # A distinct host buffer per array: re-putting one buffer lets the CPU client alias it
    # and stay in cache, which measures ~1 µs instead of a real fetch.
    return PerCall(np.asarray, fresh=lambda: lib.mod.device_put(host.copy()), block=False)


# --------------------------------------------------------------------------------------
# Driver


def _load_areas() -> None:
    """Import every ``bench_<area>.py`` beside this file (their rows follow the core rows)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for path in sorted(glob.glob(os.path.join(here, "bench_*.py"))):
        importlib.import_module(os.path.splitext(os.path.basename(path))[0])


if __name__ == "__main__":
    _load_areas()
    sys.exit(main(description=__doc__.split("\n\n")[0]))
