"""Sharding rows: a data-parallel MLP training step on 1, 2, 4 and 8 CPU devices,
dispatch of a jit call on two arguments of 8 shards each, and lowering of the sharded
step, minijax vs jax.

The CPU client of each library is made once per process, with a fixed device count,
so every row runs its library in a fresh subprocess with 8 CPU devices
(``MINIJAX_NUM_CPU_DEVICES=8`` / ``--xla_force_host_platform_device_count=8``) that
times the operation itself and prints the median, in the row's unit.
"""

from __future__ import annotations

import os
import subprocess
import sys

from harness import Lib, Measured, benchmark

_SCRIPT = r"""
import importlib, statistics, sys, time
import numpy as np
mod = importlib.import_module(sys.argv[1])
jnp = importlib.import_module(sys.argv[1] + ".numpy")
sh = importlib.import_module(sys.argv[1] + ".sharding")
kind, n = sys.argv[2], int(sys.argv[3])
P, NS = sh.PartitionSpec, sh.NamedSharding
mesh = sh.Mesh(np.array(mod.devices()[:n]), ("data",))
rng = np.random.default_rng(0)
D, H, B = 128, 256, 1024
params = [(rng.normal(size=(D, H)).astype(np.float32) / 10, np.zeros(H, np.float32)),
          (rng.normal(size=(H, H)).astype(np.float32) / 10, np.zeros(H, np.float32)),
          (rng.normal(size=(H, 1)).astype(np.float32) / 10, np.zeros(1, np.float32))]

def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return jnp.mean((h @ w + b - y) ** 2)

def step(params, x, y):
    g = mod.grad(loss)(params, x, y)
    return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, g)]

rep, data = NS(mesh, P()), NS(mesh, P("data"))
p = mod.device_put(params, rep) if sys.argv[1] == "jax" else \
    [tuple(mod.device_put(a, rep) for a in layer) for layer in params]
x = mod.device_put(rng.normal(size=(B, D)).astype(np.float32), data)
y = mod.device_put(rng.normal(size=(B, 1)).astype(np.float32), data)

def median(fn, inner, reps=7):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            out = fn()
        mod.block_until_ready(out)
        times.append((time.perf_counter() - t) / inner)
    return statistics.median(times)

if kind == "step":
    f = mod.jit(step)
    print(median(lambda: f(p, x, y), 20) * 1e3)
elif kind == "dispatch":
    s8 = NS(sh.Mesh(np.array(mod.devices()[:8]), ("x",)), P("x"))
    a = mod.device_put(np.arange(8, dtype=np.float32), s8)
    b = mod.device_put(np.ones(8, np.float32), s8)
    g = mod.jit(lambda a, b: a * b + 1.0)
    print(median(lambda: g(a, b), 2000, reps=11) * 1e6)
elif kind == "lower":
    # a new function each time: neither library may reuse an earlier trace
    print(median(lambda: mod.jit(lambda p, x, y: step(p, x, y)).lower(p, x, y), 1,
                 reps=5) * 1e3)
"""


def _run(lib: Lib, kind: str, n: int = 8) -> float:
    env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES="8", JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=8", TF_CPP_MIN_LOG_LEVEL="2")
    r = subprocess.run([sys.executable, "-c", _SCRIPT, lib.module, kind, str(n)],
                       capture_output=True, text=True, timeout=600, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"subprocess failed ({r.returncode}): {r.stderr[-800:]}")
    return float(r.stdout.split()[-1])


def _step_row(n: int):
    @benchmark(f"sharded_dp_mlp_step_{n}dev", "ms")
    def row(lib: Lib) -> Measured:
        return Measured(lambda: _run(lib, "step", n))
    row.__doc__ = (f"data-parallel MLP training step (128-256-256-1, batch 1024) on {n} "
                   "CPU device(s): jit(grad) update, batch sharded, params replicated")
    return row


for _n in (1, 2, 4, 8):
    _step_row(_n)


@benchmark("sharded_dispatch_8x8", "us")
def sharded_dispatch(lib: Lib) -> Measured:
    """cached jit call a * b + 1 on two f32[8] arguments of 8 shards each"""
    return Measured(lambda: _run(lib, "dispatch"))


@benchmark("sharded_step_lowering", "ms")
def sharded_lowering(lib: Lib) -> Measured:
    """jit(step).lower() of the data-parallel MLP step on 8 devices (trace + lower)"""
    return Measured(lambda: _run(lib, "lower"))
