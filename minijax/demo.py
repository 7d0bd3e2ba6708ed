"""The demo behind ``python -m minijax``.

It walks one small program through every stage of minijax: tracing to a jaxpr,
lowering to StableHLO, conversion to HLO, XLA compilation (optimized HLO, cost
and memory analysis) and execution, and checks the result against numpy; then it
differentiates the loss with ``grad`` (checked against central finite differences) and
computes per-example losses with ``vmap`` (checked against a loop), and takes a few
``jit(grad)`` training steps.
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

    _section("grad: minijax.grad(loss)(params, x, y)")
    grads = minijax.grad(loss)(params, x, y)
    w0 = np.asarray(grads[0][0])
    print(f"d loss / d W0 (shape {w0.shape}):")
    print(np.array2string(w0, precision=5))
    eps = 1e-3  # central difference in float64 numpy for one weight
    p64 = [(w.astype(np.float64), b.astype(np.float64)) for w, b in params]
    plus = [(w.copy(), b) for w, b in p64]
    minus = [(w.copy(), b) for w, b in p64]
    plus[0][0][0, 0] += eps
    minus[0][0][0, 0] -= eps
    fd = (loss_numpy(plus, x, y) - loss_numpy(minus, x, y)) / (2 * eps)
    grad_ok = np.allclose(w0[0, 0], fd, rtol=1e-3, atol=1e-5)
    print(f"grad[0][0][0, 0] = {w0[0, 0]:.6f}, finite difference = {fd:.6f}:",
          "match" if grad_ok else "NO MATCH")

    _section("vmap: per-example losses, minijax.vmap(loss, in_axes=(None, 0, 0))")
    per_example = minijax.vmap(lambda p, xi, yi: loss(p, xi[None], yi[None]),
                               in_axes=(None, 0, 0))
    print(minijax.make_jaxpr(per_example)(params, x, y))
    losses = np.asarray(per_example(params, x, y))
    loop = np.array([loss_numpy(params, x[i:i + 1], y[i:i + 1]) for i in range(BATCH)])
    vmap_ok = losses.shape == (BATCH,) and np.allclose(losses, loop, rtol=1e-5, atol=1e-6)
    print("losses:", np.array2string(losses, precision=4))
    print("mean of per-example losses == loss:", np.allclose(losses.mean(), expected, rtol=1e-5),
          "| matches a Python loop:", "yes" if vmap_ok else "NO")

    _section("training: 50 steps of jit(value_and_grad) gradient descent")

    @minijax.jit
    def step(params, x, y):
        value, g = minijax.value_and_grad(loss)(params, x, y)
        return minijax.tree.map(lambda p, d: p - 0.1 * d, params, g), value

    trained = params
    first = None
    for _ in range(50):
        trained, value = step(trained, x, y)
        first = float(value) if first is None else first
    last = float(loss(trained, x, y))
    train_ok = last < first
    print(f"loss {first:.5f} -> {last:.5f}:", "decreasing" if train_ok else "NOT DECREASING")
    ok = ok and grad_ok and vmap_ok and train_ok
    print("all checks:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
