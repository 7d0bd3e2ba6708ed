"""Derivatives and vmap of minijax.numpy reductions, products, cumulative ops and sort.

Finite differences (``check_grads`` order 2, forward and reverse), ``jax.grad`` and
``jax.vmap`` as references; per-example gradients of a tiny MLP under jit(vmap(grad)).
"""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.test_util import check_grads

RNG = np.random.default_rng(0)


def _distinct(shape, low=0.5, high=1.5):
    """Values well apart from each other: no ties, no kinks for max/min/sort."""
    n = int(np.prod(shape))
    return RNG.permutation(np.linspace(low, high, n)).reshape(shape).astype(np.float32)


def _close(got, want, rtol=2e-5, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# Each case: a function of the numpy module, and the argument shapes.
UNARY = {
    "sum": (lambda np_: lambda x: np_.sum(x), [(3, 4)]),
    "sum_axis": (lambda np_: lambda x: np_.sum(x, axis=1), [(2, 3, 4)]),
    "sum_axes_keepdims": (lambda np_: lambda x: np_.sum(x * x, axis=(0, 2), keepdims=True),
                          [(2, 3, 4)]),
    "sum_neg_axes": (lambda np_: lambda x: np_.sum(x, axis=(-1, 0)), [(2, 3, 4)]),
    "mean": (lambda np_: lambda x: np_.mean(x, axis=1, keepdims=True), [(3, 4)]),
    "mean_all": (lambda np_: lambda x: np_.mean(np_.sin(x)), [(2, 3, 4)]),
    "prod": (lambda np_: lambda x: np_.prod(x, axis=(0, 1)), [(2, 3, 4)]),
    "prod_all": (lambda np_: lambda x: np_.prod(x), [(2, 3)]),
    "max": (lambda np_: lambda x: np_.max(x, axis=1), [(3, 5)]),
    "max_keepdims": (lambda np_: lambda x: np_.max(x, axis=(0, 2), keepdims=True), [(2, 3, 4)]),
    "min": (lambda np_: lambda x: np_.min(x), [(3, 5)]),
    "var": (lambda np_: lambda x: np_.var(x, axis=0), [(4, 3)]),
    "var_ddof": (lambda np_: lambda x: np_.var(x, axis=(0, 1), ddof=1), [(2, 3, 4)]),
    "std": (lambda np_: lambda x: np_.std(x, axis=-1), [(3, 5)]),
    "cumsum": (lambda np_: lambda x: np_.cumsum(x, axis=1), [(3, 5)]),
    "cumsum_flat": (lambda np_: lambda x: np_.cumsum(x * x), [(2, 3)]),
    "cumprod": (lambda np_: lambda x: np_.cumprod(x, axis=0), [(4, 3)]),
    "sort": (lambda np_: lambda x: np_.sort(x, axis=0), [(4, 3)]),
    "sort_last": (lambda np_: lambda x: np_.sort(x) * np_.arange(5.0), [(3, 5)]),
}
BINARY = {
    "dot_mv": (lambda np_: lambda a, b: np_.dot(a, b), [(3, 4), (4,)]),
    "dot_mm": (lambda np_: lambda a, b: np_.dot(a, b), [(3, 4), (4, 2)]),
    "matmul_batched": (lambda np_: lambda a, b: np_.matmul(a, b), [(2, 3, 4), (4, 5)]),
    "matmul_broadcast": (lambda np_: lambda a, b: a @ b, [(2, 1, 3, 4), (3, 4, 2)]),
    "matmul_vec": (lambda np_: lambda a, b: np_.matmul(a, b), [(4,), (2, 4, 3)]),
    "einsum_mm": (lambda np_: lambda a, b: np_.einsum("ij,jk->ik", a, b), [(3, 4), (4, 2)]),
    "einsum_batched": (lambda np_: lambda a, b: np_.einsum("bij,bkj->bki", a, b),
                       [(2, 3, 4), (2, 5, 4)]),
    "einsum_rowdot": (lambda np_: lambda a, b: np_.einsum("ij,ij->i", a, b), [(3, 4), (3, 4)]),
}
CASES = {**UNARY, **BINARY}


@pytest.mark.parametrize("name", CASES)
def test_check_grads(name):
    fn, shapes = CASES[name]
    args = [_distinct(s) if name not in BINARY else _distinct(s, low=-1.0) for s in shapes]
    check_grads(fn(jnp), args, order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name", CASES)
def test_grad_matches_jax(name):
    fn, shapes = CASES[name]
    args = [_distinct(s, low=-1.0) for s in shapes]
    if name.startswith(("prod", "cumprod", "var", "std")):
        args = [_distinct(s) for s in shapes]
    out = fn(jnp)(*args)
    w = _distinct(np.shape(out))

    def loss(np_):
        return lambda *a: np_.sum(fn(np_)(*a) * w)

    argnums = tuple(range(len(args)))
    got = minijax.jit(minijax.grad(loss(jnp), argnums=argnums))(*args)
    want = jax.grad(loss(jjnp), argnums=argnums)(*args)
    for g, jg in zip(got, want):
        _close(g, jg, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("which", ["max", "min", "amax"])
def test_max_min_grads_with_ties_match_jax(which):
    x = np.array([[1., 4., 4., 2.], [3., 3., 3., 3.], [0., 4., 1., 4.]], np.float32)
    for axis in (None, 0, 1, (0, 1)):
        out_shape = np.shape(getattr(np, which)(x, axis=axis))
        w = np.arange(1.0, 1.0 + np.prod(out_shape), dtype=np.float32).reshape(out_shape)

        def loss(np_):
            return lambda x: np_.sum(getattr(np_, which)(x, axis=axis) * w)

        _close(minijax.grad(loss(jnp))(x), jax.grad(loss(jjnp))(x))


def test_prod_grad_with_zeros_matches_jax():
    x = np.array([[0., 2., 3.], [0., 0., 1.5], [1., 2., 3.]], np.float32)
    for axis in (None, 0, 1):
        loss = lambda np_: lambda x: np_.sum(np_.prod(x, axis=axis) ** 2)
        _close(minijax.jit(minijax.grad(loss(jnp)))(x), jax.jit(jax.grad(loss(jjnp)))(x))
        loss = lambda np_: lambda x: np_.sum(np_.cumprod(x, axis=axis))
        _close(minijax.jit(minijax.grad(loss(jnp)))(x), jax.jit(jax.grad(loss(jjnp)))(x))


def _vmap_both(fn, in_axes, out_axes, *args):
    got = minijax.vmap(fn(jnp), in_axes=in_axes, out_axes=out_axes)(*args)
    want = jax.vmap(fn(jjnp), in_axes=in_axes, out_axes=out_axes)(*args)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        _close(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("in_axes,out_axes", [(0, 0), (1, -1), (-1, 0), (2, -1)])
def test_vmap_of_reductions_matches_jax(in_axes, out_axes):
    x = np.round(_distinct((3, 4, 5)) * 8) / 8  # some ties for argmax
    for fn in [lambda np_: lambda x: np_.sum(x),
               lambda np_: lambda x: np_.sum(x, axis=0, keepdims=True),
               lambda np_: lambda x: np_.mean(x, axis=-1),
               lambda np_: lambda x: np_.max(x, axis=1),
               lambda np_: lambda x: np_.argmax(x, axis=1),
               lambda np_: lambda x: np_.argmin(x),
               lambda np_: lambda x: np_.argmax(x, axis=0, keepdims=True),
               lambda np_: lambda x: np_.cumsum(x, axis=1),
               lambda np_: lambda x: np_.cumsum(x),
               lambda np_: lambda x: np_.cumprod(x, axis=0),
               lambda np_: lambda x: np_.sort(x, axis=0),
               lambda np_: lambda x: np_.sort(x, axis=None),
               lambda np_: lambda x: np_.argsort(x, axis=-1)]:
        _vmap_both(fn, in_axes, out_axes, x)


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 1), (2, -1), (1, 0)])
def test_vmap_of_matmul_and_einsum_matches_jax(in_axes):
    n = 3

    def batched(shape, ax):
        if ax is None:
            return _distinct(shape, low=-1.0)
        shape = list(shape)
        shape.insert(ax % (len(shape) + 1), n)
        return _distinct(tuple(shape), low=-1.0)

    a, b = batched((2, 4), in_axes[0]), batched((4, 5), in_axes[1])
    for fn in [lambda np_: lambda a, b: np_.matmul(a, b),
               lambda np_: lambda a, b: a @ b,
               lambda np_: lambda a, b: np_.dot(a, b),
               lambda np_: lambda a, b: np_.einsum("ij,jk->ki", a, b),
               lambda np_: lambda a, b: np_.einsum("ij,jk->", a, b),
               lambda np_: lambda a, b: np_.tensordot(a, b, axes=1)]:
        _vmap_both(fn, in_axes, 0, a, b)


def test_vmap_of_vmap_of_matmul_matches_jax():
    a, b = _distinct((2, 3, 4, 5), low=-1.0), _distinct((3, 5, 6), low=-1.0)

    def fn(np_, vmap):
        return vmap(vmap(np_.matmul, in_axes=(0, None)), in_axes=(1, 0))

    _close(fn(jnp, minijax.vmap)(a, b), fn(jjnp, jax.vmap)(a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("in_axes,shapes", [
    ((0, 0), [(5, 3, 4), (5, 4, 2)]),
    ((0, None), [(5, 3, 4), (4, 2)]),
    ((1, 2), [(3, 5, 4), (4, 2, 5)]),
    ((None, 0), [(3, 4), (5, 4, 2)]),
])
def test_jit_vmap_matmul_is_a_single_dot_general(in_axes, shapes):
    a, b = (_distinct(s, low=-1.0) for s in shapes)
    f = minijax.jit(minijax.vmap(jnp.matmul, in_axes=in_axes))
    text = f.lower(a, b).as_text()
    assert "stablehlo.while" not in text
    assert text.count("stablehlo.dot_general") == 1
    assert "stablehlo.broadcast_in_dim" not in text
    _close(f(a, b), jax.vmap(jjnp.matmul, in_axes=in_axes)(a, b), rtol=1e-5, atol=1e-5)


def _mlp_params(rng):
    return {"w1": rng.standard_normal((3, 8)).astype(np.float32) * 0.5,
            "b1": rng.standard_normal((8,)).astype(np.float32) * 0.1,
            "w2": rng.standard_normal((8, 2)).astype(np.float32) * 0.5,
            "b2": rng.standard_normal((2,)).astype(np.float32) * 0.1}


def _mlp_loss(np_):
    def loss(params, x, y):
        h = np_.tanh(np_.dot(x, params["w1"]) + params["b1"])
        out = np_.dot(h, params["w2"]) + params["b2"]
        return np_.mean((out - y) ** 2)
    return loss


def test_per_example_gradients_of_tiny_mlp_match_jax():
    rng = np.random.default_rng(1)
    params = _mlp_params(rng)
    x = rng.standard_normal((6, 3)).astype(np.float32)
    y = rng.standard_normal((6, 2)).astype(np.float32)
    ours = minijax.jit(minijax.vmap(minijax.grad(_mlp_loss(jnp)), in_axes=(None, 0, 0)))
    theirs = jax.jit(jax.vmap(jax.grad(_mlp_loss(jjnp)), in_axes=(None, 0, 0)))
    got, want = ours(params, x, y), theirs(params, x, y)
    assert sorted(got) == sorted(want)
    for k in want:
        assert got[k].shape == (6,) + params[k].shape
        _close(got[k], want[k], rtol=1e-5, atol=1e-6)
    # the batch of per-example gradients averages to the full-batch gradient
    full = minijax.grad(lambda p: jnp.mean(minijax.vmap(_mlp_loss(jnp), in_axes=(None, 0, 0))(
        p, x, y)))(params)
    for k in want:
        _close(full[k], np.asarray(want[k]).mean(0), rtol=1e-5, atol=1e-6)
    text = ours.lower(params, x, y).as_text()
    assert "stablehlo.while" not in text
