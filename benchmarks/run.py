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

The repeats of the two libraries are interleaved (minijax, jax, minijax, ...) so
background load on the machine hits both alike.

Adding a benchmark (grad, vmap, a Compiled call, ...) is one more decorated
function. If minijax (or jax) raises, its row shows ``ERROR: <exception>`` and
the run goes on; ``--traceback`` prints the full traceback.

``MINIJAX_BENCH_SELFTEST=1`` substitutes jax for minijax, to check the harness:
every ratio should then be close to 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import importlib
import json
import os
import platform
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

# Let `python benchmarks/run.py` find the package from a plain checkout too.
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

SELFTEST = os.environ.get("MINIJAX_BENCH_SELFTEST", "") not in ("", "0")


# --------------------------------------------------------------------------------------
# Libraries


class Lib:
    """One library under test. Imported lazily; an import error surfaces per benchmark."""

    def __init__(self, label: str, module: str):
        self.label = label
        self.module = module
        self._mod: Any = None
        self._error: BaseException | None = None

    def load(self) -> None:
        if self._mod is None and self._error is None:
            try:
                self._mod = importlib.import_module(self.module)
                self._jnp = importlib.import_module(self.module + ".numpy")
            except Exception as e:  # noqa: BLE001 - reported in the table
                self._error = e
        if self._error is not None:
            raise self._error

    @property
    def mod(self) -> Any:
        self.load()
        return self._mod

    @property
    def jnp(self) -> Any:
        self.load()
        return self._jnp

    def block(self, x: Any) -> Any:
        return self.mod.block_until_ready(x)

    def put(self, a: np.ndarray) -> Any:
        """A device-resident array of this library, ready."""
        return self.block(self.mod.device_put(a))

    def version(self) -> str:
        try:
            return f"{self.module} {getattr(self.mod, '__version__', '?')}"
        except Exception as e:  # noqa: BLE001
            return f"{self.module} (import failed: {type(e).__name__}: {e})"


# --------------------------------------------------------------------------------------
# Timing kinds


@dataclasses.dataclass
class PerCall:
    fn: Callable[..., Any]
    fresh: Callable[[], Any] | None = None
    block: bool = True  # block_until_ready on the last result of each loop
    unit = "us"


@dataclasses.dataclass
class OneShot:
    prepare: Callable[[], Any]
    fn: Callable[[Any], Any]
    unit = "s"


@dataclasses.dataclass
class Settings:
    min_time: float = 0.1  # seconds per timing loop (timeit.autorange uses 0.2)
    max_fresh: int = 2000  # cap on the loop count when every call needs a fresh state
    per_call_repeats: int = 11
    one_shot_repeats: int = 5


def _loop(t: PerCall, lib: Lib, n: int) -> float:
    """Seconds for n calls (fresh states made beforehand), blocking on the last result."""
    states = [t.fresh() for _ in range(n)] if t.fresh is not None else None
    if states:
        lib.block(states)
    fn = t.fn
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        if states is None:
            t0 = time.perf_counter()
            for _ in range(n):
                r = fn()
            if t.block:
                lib.block(r)
            t1 = time.perf_counter()
        else:
            t0 = time.perf_counter()
            for s in states:
                r = fn(s)
            if t.block:
                lib.block(r)
            t1 = time.perf_counter()
    finally:
        if gc_was_enabled:
            gc.enable()
    return t1 - t0


def _calibrate(t: PerCall, lib: Lib, cfg: Settings) -> int:
    """Loop count, as timeit.Timer.autorange: 1, 2, 5, 10, 20, 50, ... until >= min_time."""
    n = 1
    while True:
        for k in (1, 2, 5):
            if t.fresh is not None and n * k >= cfg.max_fresh:
                return cfg.max_fresh
            if _loop(t, lib, n * k) >= cfg.min_time:
                return n * k
        n *= 10


def sampler(t: PerCall | OneShot, lib: Lib, cfg: Settings) -> Callable[[], float]:
    """Warm up, calibrate, and return ``sample()`` -> one measurement (µs per call, or s)."""
    if isinstance(t, PerCall):
        _loop(t, lib, 1)  # warm-up (the first call may trace/compile)
        n = _calibrate(t, lib, cfg)
        return lambda: _loop(t, lib, n) / n * 1e6

    def one_shot() -> float:
        state = t.prepare()
        gc.collect()
        t0 = time.perf_counter()
        t.fn(state)
        return time.perf_counter() - t0

    one_shot()  # warm-up
    return one_shot


def measure_pair(setups, libs, cfg: Settings, show_tb: bool):
    """Median of each library's samples, the repeats interleaved (mini, jax, mini, jax, ...)
    so that background load hits both alike. Returns [(value | None, error | None)] * 2."""
    samplers: list[Callable[[], float] | None] = []
    errors: list[BaseException | None] = []
    repeats = None
    for setup, lib in zip(setups, libs, strict=True):
        try:
            t = setup(lib)
            repeats = cfg.per_call_repeats if isinstance(t, PerCall) else cfg.one_shot_repeats
            samplers.append(sampler(t, lib, cfg))
            errors.append(None)
        except Exception as e:  # noqa: BLE001 - a missing feature is a row, not a crash
            if show_tb:
                traceback.print_exc()
            samplers.append(None)
            errors.append(e)
    samples: list[list[float]] = [[] for _ in samplers]
    for _ in range(repeats or 0):
        for i, sample in enumerate(samplers):
            if sample is None:
                continue
            try:
                samples[i].append(sample())
            except Exception as e:  # noqa: BLE001
                if show_tb:
                    traceback.print_exc()
                samplers[i], errors[i] = None, e
    return [
        (statistics.median(ts) if ts and err is None else None, err)
        for ts, err in zip(samples, errors, strict=True)
    ]


# --------------------------------------------------------------------------------------
# Registry: name -> (minijax_fn_setup, jax_fn_setup)

REGISTRY: dict[str, tuple[str, Callable[[Lib], Any], Callable[[Lib], Any]]] = {}


def benchmark(name: str, unit: str, jax_setup: Callable[[Lib], Any] | None = None):
    """Register ``setup(lib)`` for both libraries (same code, different ``lib``).

    Pass ``jax_setup`` only where the two libraries genuinely need different code.
    """

    def deco(setup: Callable[[Lib], PerCall | OneShot]):
        REGISTRY[name] = (unit, setup, jax_setup or setup)
        return setup

    return deco


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


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value:.4f}"
    return f"{value:.2f}" if value < 100 else f"{value:.1f}"


def _short(e: BaseException, width: int = 160) -> str:
    msg = " ".join(f"{type(e).__name__}: {e}".split())
    return msg if len(msg) <= width else msg[: width - 3] + "..."


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, shorter loops")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="run only these benchmarks (repeatable or comma-separated)",
    )
    ap.add_argument("--json", metavar="PATH", help="also write results as JSON")
    ap.add_argument("--list", action="store_true", help="list benchmarks and exit")
    ap.add_argument("--traceback", action="store_true", help="print tracebacks of errors")
    args = ap.parse_args(argv)

    if args.list:
        for name, (unit, setup, _) in REGISTRY.items():
            print(f"{name:<16} [{unit}] {(setup.__doc__ or '').strip()}")
        return 0

    names = [n for item in args.only for n in item.split(",") if n] or list(REGISTRY)
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        ap.error(f"unknown benchmark(s) {unknown}; known: {', '.join(REGISTRY)}")

    cfg = (
        Settings(min_time=0.02, per_call_repeats=5, one_shot_repeats=2)
        if args.quick
        else Settings()
    )
    mini = Lib("minijax", "jax" if SELFTEST else "minijax")
    ref = Lib("jax", "jax")

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"{ref.version()}, minijax side: {mini.version()}"
        + ("  [SELFTEST: jax on both sides]" if SELFTEST else "")
    )
    print(f"{'benchmark':<16}{'unit':>5}{'minijax':>12}{'jax':>12}{'ratio':>9}")
    print("-" * 54)

    rows = []
    for name in names:
        unit, mini_setup, jax_setup = REGISTRY[name]
        (m, m_err), (j, j_err) = measure_pair(
            (mini_setup, jax_setup), (mini, ref), cfg, args.traceback
        )
        ratio = m / j if m is not None and j is not None and j > 0 else None
        line = f"{name:<16}{unit:>5}{_fmt(m, unit):>12}{_fmt(j, unit):>12}"
        line += f"{ratio:>9.2f}" if ratio is not None else f"{'-':>9}"
        if m_err is not None:
            line += f"  ERROR: {_short(m_err)}"
        if j_err is not None:
            line += f"  jax ERROR: {_short(j_err)}"
        print(line, flush=True)
        rows.append(
            {
                "name": name,
                "unit": unit,
                "minijax": m,
                "jax": j,
                "ratio": ratio,
                "minijax_error": None if m_err is None else _short(m_err, 2000),
                "jax_error": None if j_err is None else _short(j_err, 2000),
            }
        )

    if args.json:
        meta = {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "jax": ref.version(),
            "minijax_side": mini.version(),
            "selftest": SELFTEST,
            "quick": args.quick,
            "settings": dataclasses.asdict(cfg),
            "machine": platform.platform(),
            "cpus": os.cpu_count(),
        }
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": rows}, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
