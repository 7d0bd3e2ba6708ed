"""vmap against jax.vmap with random in_axes/out_axes (hypothesis)."""

import jax
import jax.numpy as jjnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import minijax
import minijax.numpy as jnp

# Functions of two (3, 4)-shaped arrays, written once for both libraries.
FUNCS = {
    "elementwise": lambda np_: lambda a, b: np_.sin(a) * b + np_.maximum(a, b),
    "matmul": lambda np_: lambda a, b: a @ b.T,
    "reduce": lambda np_: lambda a, b: np_.sum(a * b, axis=0) + np_.max(a, axis=1).sum(),
    "transpose_reshape": lambda np_: lambda a, b: (a.T @ b).reshape(-1)[:5],
    "concat_index": lambda np_: lambda a, b: np_.concatenate([a[1:], b[:1]], axis=0)[::-1],
    "where_clip": lambda np_: lambda a, b: np_.where(a > b, np_.clip(a, -0.5, 0.5), b ** 2),
    "cumsum_sort": lambda np_: lambda a, b: np_.cumsum(np_.sort(a, axis=1), axis=1) - b,
    "mean_var": lambda np_: lambda a, b: np_.var(a, axis=1) + np_.mean(b),
}
SHAPE = (3, 4)
BATCH = 2


def _batched(rng, axis):
    """An argument with a batch dimension of size BATCH inserted at ``axis``."""
    if axis is None:
        return rng.standard_normal(SHAPE).astype(np.float32)
    shape = list(SHAPE)
    shape.insert(axis % (len(SHAPE) + 1), BATCH)
    return rng.standard_normal(shape).astype(np.float32)


axes = st.sampled_from([None, 0, 1, 2, -1, -3])


@settings(max_examples=40, deadline=None, derandomize=True)
@given(name=st.sampled_from(sorted(FUNCS)), ax=axes, bx=axes, out_axis=st.sampled_from([0, -1]),
       seed=st.integers(0, 2 ** 16))
def test_vmap_random_axes_match_jax(name, ax, bx, out_axis, seed):
    if ax is None and bx is None:
        ax = 0
    rng = np.random.default_rng(seed)
    a, b = _batched(rng, ax), _batched(rng, bx)
    ours = minijax.vmap(FUNCS[name](jnp), in_axes=(ax, bx), out_axes=out_axis)(a, b)
    theirs = jax.vmap(FUNCS[name](jjnp), in_axes=(ax, bx), out_axes=out_axis)(a, b)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=2e-5, atol=2e-5)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(name=st.sampled_from(sorted(FUNCS)), ax=st.sampled_from([0, 1, -1]),
       seed=st.integers(0, 2 ** 16))
def test_vmap_of_grad_random_axes_match_jax(name, ax, seed):
    rng = np.random.default_rng(seed)
    a, b = _batched(rng, ax), _batched(rng, None)

    def scalar(np_):
        f = FUNCS[name](np_)
        return lambda a, b: np_.sum(f(a, b))

    ours = minijax.vmap(minijax.grad(scalar(jnp)), in_axes=(ax, None))(a, b)
    theirs = jax.vmap(jax.grad(scalar(jjnp)), in_axes=(ax, None))(a, b)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-4, atol=1e-4)
