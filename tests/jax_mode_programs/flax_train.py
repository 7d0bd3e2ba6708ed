"""flax training steps on synthetic data, printed as JSON so that the jax run and the
jax-mode run (``python -m minijax run``) can be compared: a flax.nnx MLP and CNN
(``nnx.Rngs``, ``Linear``, ``Conv``, ``Dropout``, ``BatchNorm``, optax's adamw through
``nnx.Optimizer``, ``nnx.jit``) and a flax.linen MLP (``init``/``apply`` with dropout
rngs and batch statistics)."""

import json

import numpy as np

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import nnx

STEPS = 4
rng = np.random.default_rng(0)
x = jnp.asarray(rng.normal(size=(8, 12)).astype(np.float32))
y = jnp.asarray(rng.integers(0, 5, size=(8,)).astype(np.int32))
img = jnp.asarray(rng.normal(size=(4, 8, 8, 3)).astype(np.float32))
img_y = jnp.asarray(rng.integers(0, 5, size=(4,)).astype(np.int32))


def xent(logits, labels):
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(12, 16, rngs=rngs)
        self.bn = nnx.BatchNorm(16, rngs=rngs)
        self.drop = nnx.Dropout(0.2, rngs=rngs)
        self.l2 = nnx.Linear(16, 5, rngs=rngs)

    def __call__(self, x):
        return self.l2(self.drop(nnx.relu(self.bn(self.l1(x)))))


class CNN(nnx.Module):
    def __init__(self, rngs):
        self.conv = nnx.Conv(3, 4, kernel_size=(3, 3), rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)
        self.out = nnx.Linear(4 * 4 * 4, 5, rngs=rngs)

    def __call__(self, x):
        h = nnx.relu(self.bn(self.conv(x)))
        h = nnx.avg_pool(h, window_shape=(2, 2), strides=(2, 2))
        return self.out(self.drop(h.reshape(h.shape[0], -1)))


def nnx_losses(model, inputs, labels):
    opt = nnx.Optimizer(model, optax.adamw(1e-2), wrt=nnx.Param)

    @nnx.jit
    def step(model, opt, inputs, labels):
        loss, grads = nnx.value_and_grad(lambda m: xent(m(inputs), labels))(model)
        opt.update(model, grads)
        return loss

    model.train()
    out = [float(step(model, opt, inputs, labels)) for _ in range(STEPS)]
    model.eval()
    out.append(float(xent(model(inputs), labels)))  # eval mode: running batch statistics
    return out


class LinenMLP(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool):
        h = nn.Dense(16)(x)
        h = nn.BatchNorm(use_running_average=not train)(h)
        h = nn.Dropout(0.2, deterministic=not train)(nn.relu(h))
        return nn.Dense(5)(h)


def linen_losses():
    model = LinenMLP()
    variables = model.init(jax.random.key(0), x, train=False)
    params, stats = variables["params"], variables["batch_stats"]
    tx = optax.adamw(1e-2)
    opt_state = tx.init(params)

    @jax.jit
    def step(params, stats, opt_state, key):
        def loss_fn(p):
            logits, new = model.apply({"params": p, "batch_stats": stats}, x, train=True,
                                      rngs={"dropout": key}, mutable=["batch_stats"])
            return xent(logits, y), new["batch_stats"]
        (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), stats, opt_state, loss

    out = []
    key = jax.random.key(1)
    for _ in range(STEPS):
        key, sub = jax.random.split(key)
        params, stats, opt_state, loss = step(params, stats, opt_state, sub)
        out.append(float(loss))
    return out


def nnx_transforms():
    """Layers made under nnx.vmap with split rngs, run by nnx.scan; nnx.eval_shape gives
    the abstract state (the rng key a ShapeDtypeStruct of key<fry>)."""
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(4, 4, rngs=rngs)
            self.drop = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, h):
            return self.drop(nnx.relu(self.lin(h))) + h

    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=(0,), out_axes=0)
    def make(rngs):
        return Block(rngs)

    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
    def forward(h, block):
        return block(h)
    stack = make(nnx.Rngs(0, dropout=1))
    abstract = nnx.state(nnx.eval_shape(lambda: Block(nnx.Rngs(0))))
    return {"scan": np.asarray(forward(jnp.ones((2, 4)), stack)).tolist(),
            "abstract": [[list(v.shape), str(v.dtype)]
                         for v in jax.tree_util.tree_leaves(abstract)]}


rngs = nnx.Rngs(0, dropout=1)
print(json.dumps({"nnx_transforms": nnx_transforms(),"nnx_mlp": nnx_losses(MLP(rngs), x, y),
                  "nnx_cnn": nnx_losses(CNN(nnx.Rngs(2, dropout=3)), img, img_y),
                  "linen_mlp": linen_losses(),
                  "key_data": [int(v) for v in np.asarray(jax.random.key_data(rngs.dropout()))],
                  "array_type": type(x).__module__}))
