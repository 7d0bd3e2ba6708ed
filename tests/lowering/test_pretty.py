"""The module text printed from the builder (``lowering/pretty.py``) is MLIR's, byte for byte.

``Lowered.as_text()`` prints the module without parsing it when every op is one the
printer knows; these tests compare that text with what MLIR prints after parsing the
builder's generic text, for programs covering each op it spells, and check that it
declines (falls back to MLIR) where it does not know the spelling.
"""

import numpy as np
import pytest

import minijax as jax
import minijax.numpy as jnp
from minijax import lax
from minijax.lowering import mlir
from minijax.lowering.pretty import _mlir_float

X = np.linspace(-1, 1, 8).astype(np.float32)


def _chain(x):
    for _ in range(3):
        x = jnp.sin(x) * 1.01 + 0.1
    return x


def _scan(x):
    return lax.scan(lambda c, _: (jnp.sin(c) * 1.01 + 0.1, None), x, None, length=10)[0]


def _inner(x):
    return jnp.cos(x) * 2


CASES = {
    "chain": (_chain, (X,)),
    "scan": (_scan, (X,)),
    "grad": (jax.grad(lambda x: jnp.sum(_chain(x))), (X,)),
    "matmul": (lambda a, b: (jnp.tanh(a @ b.T + 1.0), jnp.max(a),
                             a.reshape(2, 12).astype(jnp.int32) > 3),
               (np.ones((3, 8), np.float32), np.ones((4, 8), np.float32))),
    "batched_dot": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
                    (np.ones((2, 3, 4), np.float32), np.ones((2, 4, 5), np.float32))),
    "calls": (lambda x: jax.jit(_inner)(x) + jax.jit(_inner)(x * 3), (X,)),
    "no_outputs": (lambda x: (), (X,)),
    "elementwise": (lambda x: (jnp.where(x > 0, x, 0.0), jnp.abs(x), -x, jnp.exp(x),
                               jnp.log1p(x), x ** 2, jnp.floor(x), jnp.minimum(x, 0.5),
                               x - jnp.inf), (X,)),
    "fori": (lambda x: lax.fori_loop(0, 5, lambda i, c: (c[0] * 2, c[1] + i), (x, 0)), (X,)),
    "ints": (lambda x: (x + 1, x * x, x // 2, x > 2), (np.arange(8, dtype=np.int32),)),
    "bools": (lambda x: (x & True, ~x), (np.ones(8, bool),)),
    "f64": (lambda x: x * 0.25 + 3.0, (np.ones(4, np.float64),)),
    # the same literals at several types and shapes (constants' text is cached by both)
    "repeated_constants": (lambda x, i, s: (x * 2.0 + 2.0, i * 2 + 2, s * 2.0 + 2.0,
                                            x * 2.0, -(i * 2)),
                           (X, np.arange(8, dtype=np.int32), np.float32(3))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pretty_text_is_mlirs(name):
    f, args = CASES[name]
    lowered = jax.jit(f).lower(*args)
    pretty = lowered._info.pretty_text()
    assert pretty is not None, "printed through MLIR: the case no longer tests the printer"
    assert pretty == mlir.to_text(mlir.parse(lowered._text))
    assert lowered.as_text() == pretty


def test_unknown_spelling_falls_back_to_mlir():
    # 1.2345678 has no six-digit spelling that reads back: MLIR's default form is used
    lowered = jax.jit(lambda x: x * 1.2345678).lower(X)
    assert lowered._info.pretty_text() is None
    assert lowered._info.pretty_text() is None  # again (declining is not cached as text)
    text = lowered.as_text()
    assert text == mlir.to_text(mlir.parse(lowered._text))
    assert "1.23456776" in text


@pytest.mark.parametrize("value,elem,want", [
    ("1.0099999904632568", "f32", "1.010000e+00"), ("0.0", "f32", "0.000000e+00"),
    ("-7.25", "f64", "-7.250000e+00"), ("100.0", "f32", "1.000000e+02"),
    ("0x7F800000", "f32", "0x7F800000"), ("1e-30", "f64", "1.000000e-30"),
])
def test_float_spelling(value, elem, want):
    assert _mlir_float(value, elem) == want


def test_lowering_time_per_equation_does_not_grow():
    """Lowering a 8,000-step chain costs about 8 times a 1,000-step one (the builder and
    the printer are linear; measured, best of 5, ratio of per-equation times < 2)."""
    import time

    def per_eq(n):
        def f(x):
            for _ in range(n):
                x = jnp.sin(x) * 1.01 + 0.1
            return x
        traced = jax.jit(f).trace(X)
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            traced.lower().as_text()
            best = min(best, time.perf_counter() - t0)
        return best / n

    small, large = per_eq(1000), per_eq(8000)
    assert large / small < 2.0, (small, large)
