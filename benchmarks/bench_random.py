"""Benchmarks of minijax.random: jitted samplers, minijax vs jax.

Both generate the same bits (Threefry-2x32) and the same samples; the rows measure
the whole call (dispatch, the program, block_until_ready). jax's CPU lowering of
threefry2x32 runs its five groups of rounds as a loop; minijax's writes all 20 rounds
out for XLA to fuse.
"""

from __future__ import annotations

from harness import Lib, PerCall, benchmark


@benchmark("random_normal_1M_jit", "us")
def random_normal(lib: Lib) -> PerCall:
    """jit(random.normal) of float32[2**20] from one key + block_until_ready."""
    random = lib.mod.random
    key = random.PRNGKey(0)
    f = lib.mod.jit(lambda k: random.normal(k, (1 << 20,)))
    lib.block(f(key))
    return PerCall(lambda: lib.block(f(key)))


@benchmark("random_split_fold_in_jit", "us")
def random_split_fold_in(lib: Lib) -> PerCall:
    """jit of a key split into 2 and a fold_in (the per-step key work of a training loop)."""
    random = lib.mod.random
    key = random.PRNGKey(0)
    f = lib.mod.jit(lambda k: random.fold_in(random.split(k)[0], 3))
    lib.block(f(key))
    return PerCall(lambda: lib.block(f(key)))
