"""A flax.nnx model trained with optax, written for jax and run unchanged on minijax:

    python examples/flax_optax_train.py                  # on jax
    python -m minijax run examples/flax_optax_train.py   # on minijax (the jax mode)

Both print the same losses (bit for bit on CPU). Under the jax mode ``import jax``,
``flax`` and ``optax`` see minijax; the real jax package is never loaded."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(4, 32, rngs=rngs)
        self.out = nnx.Linear(32, 3, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.hidden(x)))


rng = np.random.default_rng(0)
x = jnp.asarray(rng.normal(size=(64, 4)).astype(np.float32))
y = jnp.asarray((x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0).astype(np.int32))

model = MLP(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adamw(1e-2), wrt=nnx.Param)


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        logits = model(x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


for step in range(20):
    loss = train_step(model, optimizer, x, y)
    if step % 5 == 4:
        print(f"step {step + 1}: loss {float(loss):.6f}")
print("ran on", type(loss).__module__.split(".")[0])
