"""Portable programs (issue 27): ``export`` and ``ffi``, minijax vs jax.

``export_serialize``: ``export(jit(mlp))(x).serialize()`` of a 200-layer MLP (trace, lower,
and write jax's flatbuffer format). ``export_deserialize_call``: ``deserialize`` those
bytes and make the first call (compile included; each library with its defaults, so
minijax's persistent compilation cache, on by default, serves the executable after the
first repeat, where jax's, off by default, does not: without it the two are at parity,
about 0.2 s each on 2 cores). ``exported_call``: a cached call of a
deserialized ``Exported``. ``exported_poly_call``: a cached call of a shape-polymorphic
export (``symbolic_shape("b, 64")``) at b = 16. ``ffi_call_jit``: a jitted ``ffi_call`` of
the rms norm among the tests' C++ XLA FFI kernels (``tests/ffi_kernels.cc``), over
f32[32, 64], built here with g++ against ``ffi.include_dir()``; the row shows ERROR where
no compiler exists.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import tempfile

import numpy as np

from harness import Lib, OneShot, PerCall, benchmark

LAYERS, WIDTH = 200, 64


def _mlp(jnp):
    ws = [np.full((WIDTH, WIDTH), 0.01 * (i + 1), np.float32) for i in range(LAYERS)]

    def f(x):
        for w in ws:
            x = jnp.tanh(x @ w)
        return x.sum()
    return f


def _export_mod(lib: Lib):
    return __import__(f"{lib.module}.export", fromlist=["export"])


def _x():
    return np.linspace(-1, 1, 8 * WIDTH, dtype=np.float32).reshape(8, WIDTH)


@benchmark("export_serialize", "s")
def export_serialize(lib: Lib) -> OneShot:
    """export(jit(mlp200))(x).serialize(): trace + lower + serialize, a fresh jit each time."""
    ex = _export_mod(lib)
    return OneShot(lambda: lib.mod.jit(_mlp(lib.jnp)), lambda f: ex.export(f)(_x()).serialize())


@benchmark("export_deserialize_call", "s")
def export_deserialize_call(lib: Lib) -> OneShot:
    """deserialize(bytes) of that MLP and its first call (compile + run)."""
    ex = _export_mod(lib)
    blob = bytes(ex.export(lib.mod.jit(_mlp(lib.jnp)))(_x()).serialize())
    x = lib.put(_x())

    def run(_):
        return lib.block(ex.deserialize(bytearray(blob)).call(x))
    return OneShot(lambda: lib.mod.clear_caches(), run)


@benchmark("exported_call", "us")
def exported_call(lib: Lib) -> PerCall:
    """A cached call of a deserialized Exported (the MLP), device array argument."""
    ex = _export_mod(lib)
    exp = ex.deserialize(ex.export(lib.mod.jit(_mlp(lib.jnp)))(_x()).serialize())
    x = lib.put(_x())
    lib.block(exp.call(x))
    return PerCall(lambda: exp.call(x))


@benchmark("exported_poly_call", "us")
def exported_poly_call(lib: Lib) -> PerCall:
    """A cached call of export(jit(tanh(x @ w).sum(1)))(f32[b, 64] symbolic) at b = 16."""
    ex = _export_mod(lib)
    w = np.full((WIDTH, WIDTH), 0.01, np.float32)
    spec = lib.mod.ShapeDtypeStruct(ex.symbolic_shape(f"b, {WIDTH}"), np.float32)
    exp = ex.export(lib.mod.jit(lambda x: lib.jnp.tanh(x @ w).sum(axis=1)))(spec)
    x = lib.put(np.ones((16, WIDTH), np.float32))
    lib.block(exp.call(x))
    return PerCall(lambda: exp.call(x))


# The FFI kernels the tests build (tests/ffi_kernels.cc): this row calls its rms norm.
_KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests",
                        "ffi_kernels.cc")


@functools.cache
def _kernel_library(include_dir: str) -> ctypes.CDLL:
    compiler = shutil.which("g++")
    if compiler is None:
        raise RuntimeError("no C++ compiler (g++) to build the FFI kernel")
    out = os.path.join(tempfile.mkdtemp(prefix="minijax-bench-ffi-"), "kernels.so")
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-std=c++17", "-w",
                    f"-I{include_dir}", _KERNELS, "-o", out], check=True, timeout=300)
    return ctypes.cdll.LoadLibrary(out)


@benchmark("ffi_call_jit", "us")
def ffi_call_jit(lib: Lib) -> PerCall:
    """jit(ffi_call('rms_norm'))(x), x f32[32, 64]: a C++ kernel through XLA's FFI."""
    ffi = __import__(f"{lib.module}.ffi", fromlist=["ffi"])
    so = _kernel_library(ffi.include_dir())
    name = f"bench_rms_norm_{lib.module}"
    ffi.register_ffi_target(name, ffi.pycapsule(so.RmsNorm), platform="cpu")
    x = lib.put(np.linspace(-1, 1, 32 * 64, dtype=np.float32).reshape(32, 64))
    out = lib.mod.ShapeDtypeStruct(x.shape, x.dtype)
    f = lib.mod.jit(lambda x: ffi.ffi_call(name, out)(x, eps=np.float32(1e-5)))
    lib.block(f(x))
    return PerCall(lambda: f(x))
