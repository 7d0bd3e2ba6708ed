"""Benchmarks of minijax.numpy.linalg: jitted decompositions and solves, minijax vs jax.

Both libraries call the same LAPACK kernels of jaxlib (custom calls on XLA:CPU);
the rows measure the whole call (dispatch, the kernels and the code around them,
block_until_ready), so they compare the programs each library emits.

The kernels run on SciPy's OpenBLAS, whose worker threads (shared by both
libraries) make single calls vary by 10-100x on a loaded machine; there,
``OPENBLAS_NUM_THREADS=1 python benchmarks/run.py --only linalg_...`` gives
stable ratios.
"""

from __future__ import annotations

import numpy as np

from harness import Lib, PerCall, benchmark

N = 256
N_EIGH = 128


def _matrix(lib: Lib, n: int, spd: bool = False):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    if spd:
        a = (a @ a.T + n * np.eye(n)).astype(np.float32)
    return lib.put(a)


def _timed(lib: Lib, fn, *args) -> PerCall:
    f = lib.mod.jit(fn)
    lib.block(f(*args))
    return PerCall(lambda: lib.block(f(*args)))


@benchmark("linalg_solve_256", "us")
def solve(lib: Lib) -> PerCall:
    """jit(jnp.linalg.solve) of float32[256, 256] and a float32[256] right-hand side."""
    a = _matrix(lib, N)
    b = lib.put(np.random.default_rng(1).standard_normal(N).astype(np.float32))
    return _timed(lib, lib.jnp.linalg.solve, a, b)


@benchmark("linalg_cholesky_256", "us")
def cholesky(lib: Lib) -> PerCall:
    """jit(jnp.linalg.cholesky) of a positive-definite float32[256, 256]."""
    return _timed(lib, lib.jnp.linalg.cholesky, _matrix(lib, N, spd=True))


@benchmark("linalg_svd_256", "us")
def svd(lib: Lib) -> PerCall:
    """jit(jnp.linalg.svd) of float32[256, 256] (U, S and Vh)."""
    return _timed(lib, lib.jnp.linalg.svd, _matrix(lib, N))


@benchmark("linalg_eigh_128", "us")
def eigh(lib: Lib) -> PerCall:
    """jit(jnp.linalg.eigh) of a symmetric float32[128, 128]."""
    return _timed(lib, lib.jnp.linalg.eigh, _matrix(lib, N_EIGH, spd=True))
