"""The benchmark harness: libraries under test, timing kinds, the registry, the table.

Benchmarks live in ``run.py`` (the core rows) and in ``bench_<area>.py`` files beside
it, one per feature area; each registers its rows with ``@benchmark(name, unit)``
from this module. ``run.py`` imports every ``bench_*.py`` file, so adding an area
is adding a file.
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
class Measured:
    """A quantity other than time (e.g. memory growth): ``fn()`` returns it in the row's
    unit; measured ``repeats`` times (no warm-up), median reported."""

    fn: Callable[[], float]
    repeats: int = 1


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


def sampler(t: PerCall | OneShot | Measured, lib: Lib, cfg: Settings) -> Callable[[], float]:
    """Warm up, calibrate, and return ``sample()`` -> one measurement (µs per call, or s)."""
    if isinstance(t, Measured):
        return t.fn
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
            repeats = (t.repeats if isinstance(t, Measured) else
                       cfg.per_call_repeats if isinstance(t, PerCall) else cfg.one_shot_repeats)
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


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value:.4f}"
    return f"{value:.2f}" if value < 100 else f"{value:.1f}"


def _short(e: BaseException, width: int = 160) -> str:
    msg = " ".join(f"{type(e).__name__}: {e}".split())
    return msg if len(msg) <= width else msg[: width - 3] + "..."


def main(argv: list[str] | None = None, description: str = "") -> int:
    ap = argparse.ArgumentParser(description=description)
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


