"""Training steps of the jax libraries (optax, flax.nnx, equinox), minijax vs jax.

The same program (``library_programs/train_steps.py``) runs in a fresh process with jax
and through minijax's jax mode (``python -m minijax run``), with a fresh, empty
compilation cache for minijax, so that the first call includes tracing and compiling.
Each ``*_step`` row is the median time of one jitted training step; each ``*_first``
row the first call (trace + lower + compile + run). A row shows ERROR when the library
is not installed.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile

from harness import Lib, Measured, benchmark

_PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "library_programs",
                        "train_steps.py")


@functools.cache
def _run(module: str, which: str) -> dict:
    """One run of the program for ``which`` with ``module``'s library (one per pair)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, MINIJAX_COMPILATION_CACHE_DIR=cache)
        cmd = ([sys.executable, "-m", "minijax", "run", _PROGRAM, which]
               if module == "minijax" else [sys.executable, _PROGRAM, which])
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{which} failed ({r.returncode}): {r.stderr[-400:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _rows(which: str, library: str) -> None:
    def step(lib: Lib) -> Measured:
        return Measured(lambda: _run(lib.module, which)["step_us"])
    step.__doc__ = f"One jitted {library} training step (adamw, MLP 64-128-10, batch 32)."

    def first(lib: Lib) -> Measured:
        return Measured(lambda: _run(lib.module, which)["first_s"])
    first.__doc__ = f"The first call of that {library} step: trace + compile + run."
    benchmark(f"{which}_step", "us")(step)
    benchmark(f"{which}_first_call", "s")(first)


_rows("optax", "optax")
_rows("flax_nnx", "flax.nnx")
_rows("equinox", "equinox")
