"""One training step of each library, timed: ``python train_steps.py LIBRARY`` (optax,
flax_nnx or equinox) prints JSON ``{"first_s": ..., "step_us": ...}``: the first call of
the jitted step (trace + lower + compile + run) and the median per-step time after it.

Written for jax; ``bench_libraries.py`` runs it once with jax and once through minijax's
jax mode (``python -m minijax run``), each in a fresh process.
"""

import json
import sys
import time

import numpy as np

import jax
import jax.numpy as jnp
import optax

BATCH, IN, HIDDEN, OUT = 32, 64, 128, 10
STEPS = 200


def _data():
    rng = np.random.default_rng(0)
    return (jnp.asarray(rng.normal(size=(BATCH, IN)).astype(np.float32)),
            jnp.asarray(rng.integers(0, OUT, size=(BATCH,)).astype(np.int32)))


def _xent(logits, y):
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def optax_step():
    """adamw over a two-layer MLP's parameter dict (plain jax functions)."""
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    params = {"w1": jax.random.normal(k1, (IN, HIDDEN)) * 0.1, "b1": jnp.zeros(HIDDEN),
              "w2": jax.random.normal(k2, (HIDDEN, OUT)) * 0.1, "b2": jnp.zeros(OUT)}
    tx = optax.adamw(1e-3)
    opt_state = tx.init(params)

    def loss(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        return _xent(h @ p["w2"] + p["b2"], y)

    @jax.jit
    def step(p, s, x, y):
        loss_value, g = jax.value_and_grad(loss)(p, x, y)
        updates, s = tx.update(g, s, p)
        return optax.apply_updates(p, updates), s, loss_value

    state = [params, opt_state]

    def run(x, y):
        state[0], state[1], loss_value = step(state[0], state[1], x, y)
        return loss_value
    return run


def flax_nnx_step():
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(IN, HIDDEN, rngs=rngs)
            self.l2 = nnx.Linear(HIDDEN, OUT, rngs=rngs)

        def __call__(self, x):
            return self.l2(nnx.relu(self.l1(x)))

    model = MLP(nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)

    @nnx.jit
    def step(model, opt, x, y):
        loss_value, g = nnx.value_and_grad(lambda m: _xent(m(x), y))(model)
        opt.update(model, g)
        return loss_value
    return lambda x, y: step(model, opt, x, y)


def equinox_step():
    import equinox as eqx

    model = eqx.nn.MLP(IN, OUT, HIDDEN, depth=1, key=jax.random.PRNGKey(0))
    tx = optax.adamw(1e-3)
    opt_state = tx.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def step(model, s, x, y):
        loss_value, g = eqx.filter_value_and_grad(lambda m: _xent(jax.vmap(m)(x), y))(model)
        updates, s = tx.update(g, s, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), s, loss_value

    state = [model, opt_state]

    def run(x, y):
        state[0], state[1], loss_value = step(state[0], state[1], x, y)
        return loss_value
    return run


def main(which: str) -> None:
    make = {"optax": optax_step, "flax_nnx": flax_nnx_step, "equinox": equinox_step}[which]
    x, y = _data()
    run = make()
    t0 = time.perf_counter()
    jax.block_until_ready(run(x, y))
    first = time.perf_counter() - t0
    times = []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        jax.block_until_ready(run(x, y))
        times.append(time.perf_counter() - t0)
    print(json.dumps({"first_s": first, "step_us": float(np.median(times)) * 1e6}))


if __name__ == "__main__":
    main(sys.argv[1])
