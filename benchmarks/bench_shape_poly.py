"""Calling a shape-polymorphic Exported (``symbolic_shape("b, 64")``) for several batch
sizes: the first call (shape refinement + compile) and a cached call, minijax vs jax.

    PYTHONPATH=. python benchmarks/bench_shape_poly.py
"""

import time

import jax
import jax.numpy as jjnp
import numpy as np
from jax import export as jexport

import minijax
import minijax.numpy as mjnp
from minijax import export as mexport


def _fn(jnp):
    return lambda x: jnp.tanh(x @ jnp.ones((64, 64), x.dtype)).sum(axis=1)


def main() -> None:
    m = mexport.export(minijax.jit(_fn(mjnp)))(
        minijax.ShapeDtypeStruct(mexport.symbolic_shape("b, 64"), np.float32))
    j = jexport.export(jax.jit(_fn(jjnp)))(
        jax.ShapeDtypeStruct(jexport.symbolic_shape("b, 64"), np.float32))
    for name, exp in (("minijax", m), ("jax", j)):
        for n in (8, 16, 32):
            x = np.ones((n, 64), np.float32)
            t = time.perf_counter()
            np.asarray(exp.call(x))
            first = time.perf_counter() - t
            t = time.perf_counter()
            for _ in range(100):
                r = exp.call(x)
            np.asarray(r)
            cached = (time.perf_counter() - t) / 100
            print(f"{name:8s} b={n:3d} first call {first * 1e3:7.1f} ms   "
                  f"cached call {cached * 1e6:7.0f} us")


if __name__ == "__main__":
    main()
