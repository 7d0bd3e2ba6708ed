"""The demo behind ``python -m minijax``.

It walks one small program through every stage of minijax: tracing to a jaxpr,
lowering to StableHLO, conversion to HLO, XLA compilation (optimized HLO, cost
and memory analysis) and execution, and checks the result against numpy.
"""

from __future__ import annotations

import itertools

import numpy as np

import minijax
import minijax.numpy as jnp

LAYER_SIZES = (4, 8, 8, 1)
BATCH = 16


def init_params(sizes=LAYER_SIZES, seed=0):
    """A list of ``(W, b)`` pairs (a pytree), float32, as plain numpy arrays."""
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in itertools.pairwise(sizes):
        w = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        b = np.zeros((n_out,), np.float32)
        params.append((w, b))
    return params


def mlp(params, x):
    """tanh hidden layers, linear output layer."""
    *hidden, (w_out, b_out) = params
    for w, b in hidden:
        x = jnp.tanh(jnp.dot(x, w) + b)
    return jnp.dot(x, w_out) + b_out


def loss(params, x, y):
    """Mean-squared error of the MLP on ``(x, y)``."""
    return jnp.mean((mlp(params, x) - y) ** 2)


def loss_numpy(params, x, y):
    """The same loss in plain numpy, for comparison."""
    *hidden, (w_out, b_out) = params
    for w, b in hidden:
        x = np.tanh(x @ w + b)
    return np.mean((x @ w_out + b_out - y) ** 2)


def _section(title):
    print()
    print(f"=== {title} " + "=" * max(0, 72 - len(title)))


def main(argv=None):
    params = init_params()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, LAYER_SIZES[0])).astype(np.float32)
    y = rng.standard_normal((BATCH, LAYER_SIZES[-1])).astype(np.float32)

    print(f"minijax demo: MLP {list(LAYER_SIZES)}, tanh, MSE loss, batch {BATCH}")

    _section("jaxpr: minijax.make_jaxpr(loss)(params, x, y)")
    print(minijax.make_jaxpr(loss)(params, x, y))

    jitted = minijax.jit(loss)
    lowered = jitted.lower(params, x, y)

    _section("StableHLO: jit(loss).lower(params, x, y).as_text()")
    print(lowered.as_text())

    _section('HLO: lowered.as_text("hlo")')
    print(lowered.as_text("hlo"))

    compiled = lowered.compile()

    _section("optimized HLO: lowered.compile().as_text()")
    print(compiled.as_text())

    _section("compiled.cost_analysis()")
    print(compiled.cost_analysis())

    _section("compiled.memory_analysis()")
    print(compiled.memory_analysis())

    _section("run")
    out = compiled(params, x, y)
    value = np.asarray(out)
    again = np.asarray(jitted(params, x, y))
    expected = loss_numpy(params, x, y)
    print(f"compiled(params, x, y) = {value!r}")
    print(f"jit(loss)(params, x, y) = {again!r}")
    print(f"numpy loss             = {np.float32(expected)!r}")
    ok = np.allclose(value, expected, rtol=1e-5, atol=1e-6) and np.allclose(
        again, expected, rtol=1e-5, atol=1e-6
    )
    print("match:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
