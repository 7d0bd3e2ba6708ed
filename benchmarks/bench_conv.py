"""Benchmarks of convolutions and max pooling: jitted CNN-layer steps, minijax vs jax.

One ResNet-style layer on CPU: a 3x3 convolution, NHWC, batch 32, 64 -> 64 channels,
56x56, 'SAME' padding; and a 2x2 stride-2 max pool of the same activations. Both
libraries emit the same StableHLO (the tests compare it), so the rows measure XLA:CPU
plus dispatch; each row is the whole call and block_until_ready.
"""

from __future__ import annotations

import numpy as np

from harness import Lib, PerCall, benchmark

_BATCH, _SIZE, _CHANNELS = 32, 56, 64
_NHWC = ("NHWC", "HWIO", "NHWC")


def _activations(lib: Lib, seed: int = 0):
    rng = np.random.default_rng(seed)
    shape = (_BATCH, _SIZE, _SIZE, _CHANNELS)
    return lib.put(rng.standard_normal(shape).astype(np.float32))


def _kernel(lib: Lib):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((3, 3, _CHANNELS, _CHANNELS)) / np.sqrt(9 * _CHANNELS)
    return lib.put(w.astype(np.float32))


def _conv(lib: Lib):
    lax = lib.mod.lax
    return lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=_NHWC)


@benchmark("conv3x3_nhwc_fwd", "us")
def conv_forward(lib: Lib) -> PerCall:
    """jit(conv_general_dilated) 3x3, f32[32,56,56,64] x f32[3,3,64,64], 'SAME'."""
    x, w = _activations(lib), _kernel(lib)
    f = lib.mod.jit(_conv(lib))
    lib.block(f(x, w))
    return PerCall(lambda: lib.block(f(x, w)))


@benchmark("conv3x3_nhwc_fwd_bwd", "us")
def conv_forward_backward(lib: Lib) -> PerCall:
    """jit(value_and_grad) of sum(conv(x, w) * ct) w.r.t. x and w: the forward and both
    transposed convolutions of a training step."""
    x, w, ct = _activations(lib), _kernel(lib), _activations(lib, 2)
    conv = _conv(lib)
    f = lib.mod.jit(lib.mod.value_and_grad(lambda x, w, ct: (conv(x, w) * ct).sum(),
                                           argnums=(0, 1)))
    lib.block(f(x, w, ct))
    return PerCall(lambda: lib.block(f(x, w, ct)))


@benchmark("maxpool2x2_fwd_bwd", "us")
def maxpool_forward_backward(lib: Lib) -> PerCall:
    """jit(value_and_grad) of sum(maxpool(x) * ct), 2x2 windows, stride 2, on the same
    activations (reduce_window max + select_and_scatter)."""
    lax = lib.mod.lax
    x = _activations(lib)
    ct = lib.put(np.random.default_rng(3).standard_normal(
        (_BATCH, _SIZE // 2, _SIZE // 2, _CHANNELS)).astype(np.float32))

    def loss(x, ct):
        pooled = lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return (pooled * ct).sum()

    f = lib.mod.jit(lib.mod.value_and_grad(loss))
    lib.block(f(x, ct))
    return PerCall(lambda: lib.block(f(x, ct)))
