"""Memory rows: how much a process grows per million cached calls.

Each measurement runs in a fresh subprocess (so neither library's earlier rows
count): it warms the call up, then reads the resident set size (``/proc/self/statm``)
before and after ``CALLS`` more calls, with the garbage collector left as it is by
default, and reports the growth extrapolated to one million calls, in MB. A steady
process should stay flat (about 0); minijax grew by ~70 MB per million calls before
it drained jaxlib's queue of released objects without waiting for a garbage
collection (see minijax/runtime/backend.py).
"""

from __future__ import annotations

import os
import subprocess
import sys

from harness import Lib, Measured, benchmark

CALLS = 200_000

_SCRIPT = """
import importlib, os, sys
import numpy as np
mod = importlib.import_module(sys.argv[1])
jnp = importlib.import_module(sys.argv[1] + ".numpy")
kind, n = sys.argv[2], int(sys.argv[3])

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

x = mod.device_put(np.arange(8, dtype=np.float32))
if kind == "jit":
    f = mod.jit(lambda a, b: a * b + 1.0)
    call = lambda: f(x, x)
else:
    call = lambda: jnp.sin(x)
for _ in range(20_000):
    call()
mod.block_until_ready(call())
before = rss()
for _ in range(n):
    call()
mod.block_until_ready(call())
print(rss() - before)
"""


def _growth_per_million(module: str, kind: str) -> float:
    """MB of RSS growth per 1M calls of ``kind`` ('jit' or 'eager') in ``module``."""
    if not os.path.exists("/proc/self/statm"):
        raise RuntimeError("needs /proc/self/statm (Linux)")
    r = subprocess.run([sys.executable, "-c", _SCRIPT, module, kind, str(CALLS)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"subprocess failed ({r.returncode}): {r.stderr[-500:]}")
    return int(r.stdout.split()[-1]) / CALLS * 1e6 / 2**20


@benchmark("rss_jit_call", "MB")
def rss_jit_call(lib: Lib) -> Measured:
    """RSS growth per 1M cached jit calls, two f32[8] (from 200k, fresh subprocess)."""
    return Measured(lambda: _growth_per_million(lib.module, "jit"))


@benchmark("rss_eager", "MB")
def rss_eager(lib: Lib) -> Measured:
    """RSS growth per 1M eager jnp.sin calls on a f32[8] (from 200k, fresh subprocess)."""
    return Measured(lambda: _growth_per_million(lib.module, "eager"))
