"""Benchmarks of minijax.numpy.fft: jitted transforms, minijax vs jax.

Both run XLA:CPU's FFT on the same sizes; the rows measure the whole call
(dispatch, the transform, block_until_ready).
"""

from __future__ import annotations

import numpy as np

from harness import Lib, PerCall, benchmark


@benchmark("fft_c64_65536", "us")
def fft_c64(lib: Lib) -> PerCall:
    """jit(jnp.fft.fft) of a complex64[2**16] + block_until_ready."""
    rng = np.random.default_rng(0)
    n = 2 ** 16
    x = lib.put((rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64))
    f = lib.mod.jit(lib.jnp.fft.fft)
    lib.block(f(x))
    return PerCall(lambda: lib.block(f(x)))


@benchmark("rfft2_f32_512x512", "us")
def rfft2_f32(lib: Lib) -> PerCall:
    """jit(jnp.fft.rfft2) of a float32[512, 512] + block_until_ready."""
    rng = np.random.default_rng(0)
    x = lib.put(rng.standard_normal((512, 512)).astype(np.float32))
    f = lib.mod.jit(lib.jnp.fft.rfft2)
    lib.block(f(x))
    return PerCall(lambda: lib.block(f(x)))
