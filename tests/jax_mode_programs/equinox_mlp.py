"""equinox's README example (an MLP trained with optax) on synthetic data; prints the
losses as JSON so the jax and jax-mode runs can be compared."""

import json

import numpy as np

import equinox as eqx
import jax
import jax.numpy as jnp
import optax


class Linear(eqx.Module):
    weight: jax.Array
    bias: jax.Array

    def __init__(self, in_size, out_size, key):
        wkey, bkey = jax.random.split(key)
        self.weight = jax.random.normal(wkey, (out_size, in_size))
        self.bias = jax.random.normal(bkey, (out_size,))

    def __call__(self, x):
        return self.weight @ x + self.bias


key = jax.random.PRNGKey(0)

class MLP(eqx.Module):
    layers: list

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.layers = [Linear(4, 8, k1), Linear(8, 1, k2)]

    def __call__(self, x):
        return self.layers[1](jax.nn.relu(self.layers[0](x)))


model = MLP(key)
rng = np.random.default_rng(0)
x = rng.normal(size=(16, 4)).astype(np.float32)
y = rng.normal(size=(16, 1)).astype(np.float32)


@eqx.filter_jit
def loss_fn(model, x, y):
    pred_y = jax.vmap(model)(x)
    return jnp.mean((y - pred_y) ** 2)


optim = optax.adam(1e-2)
opt_state = optim.init(eqx.filter(model, eqx.is_array))


@eqx.filter_jit
def step(model, opt_state, x, y):
    loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss


losses = []
for _ in range(5):
    model, opt_state, loss = step(model, opt_state, x, y)
    losses.append(float(loss))
print(json.dumps(losses))
