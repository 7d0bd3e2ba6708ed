"""grad and vmap of NumPy indexing, ``.at[]`` updates and shape functions, end to end.

Each case runs on ``minijax.numpy`` and ``jax.numpy``: gradients are compared with
``jax.grad`` and finite differences (``check_grads`` order 2), batching with ``jax.vmap``
for several ``in_axes`` (including batched index arrays and traced scalar indices).
"""

from typing import NamedTuple

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.test_util import check_grads

RNG = np.random.default_rng(1)
B = 3


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _distinct(*shape, offset=0.0):
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.31 + 0.2 + offset).reshape(shape).astype(np.float32)


class Idx(NamedTuple):
    """An integer argument; its batched copies are drawn in ``[low, high)`` or permuted."""

    value: np.ndarray
    low: int
    high: int
    permute: bool = False

    def variant(self):
        if self.permute:
            return RNG.permutation(self.value)
        return RNG.integers(self.low, self.high, np.shape(self.value)).astype(self.value.dtype)


def _i(v, low, high, permute=False):
    return Idx(np.asarray(v, np.int32), low, high, permute)


X = _rand(4, 5)
IDX = _i([2, 0, 2, -1], -4, 4)
ROWS = _i([3, 1], 0, 4, permute=True)
MASK = np.array([True, False, True, True])


def _split_parts(np_, x):
    parts = np_.split(x, [1, 3], axis=0)
    return np_.concatenate([p * (k + 1.0) for k, p in enumerate(parts)], axis=0)


# name -> (fn(np_, *args), args)
CASES = {
    "int": (lambda np_, x: x[1], (X,)),
    "slice": (lambda np_, x: x[:, 1:3], (X,)),
    "reverse": (lambda np_, x: x[::-1], (X,)),
    "strided": (lambda np_, x: x[1::2, ::-2], (X,)),
    "newaxis_ellipsis": (lambda np_, x: x[None, ..., 2], (X,)),
    "array": (lambda np_, x, i: x[i], (X, IDX)),
    "array_2d": (lambda np_, x, i, j: x[i, j], (X, IDX, _i([4, 0, 1, 4], 0, 5))),
    "array_column": (lambda np_, x, i: x[:, i], (X, IDX)),
    "bool_mask": (lambda np_, x: x[MASK], (X,)),
    "traced_int": (lambda np_, x, i: x[i], (X, _i(2, -4, 4))),
    "traced_int_slice": (lambda np_, x, i: x[1:3, i], (X, _i(-2, -5, 5))),
    "at_set": (lambda np_, x, i, v: x.at[i].set(v), (X, IDX, _rand(4, 5))),
    "at_set_unique": (lambda np_, x, i, v: x.at[i].set(v), (X, ROWS, _rand(2, 5))),
    "at_set_int": (lambda np_, x, v: x.at[1].set(v), (X, _rand(5))),
    "at_add": (lambda np_, x, i, v: x.at[i].add(v), (X, IDX, _rand(4, 5))),
    "at_add_slice": (lambda np_, x, v: x.at[:, 1:3].add(v), (X, _rand(4, 2))),
    "at_mul": (lambda np_, x, i, v: x.at[i].multiply(v, unique_indices=True),
               (X, ROWS, _rand(2, 5))),
    "at_mul_repeated": (lambda np_, x, i, v: x.at[i].multiply(v), (X, IDX, _rand(4, 5))),
    "at_min": (lambda np_, x, i, v: x.at[i].min(v),
               (_distinct(4, 5), IDX, _distinct(4, 5, offset=0.1))),
    "at_max": (lambda np_, x, i, v: x.at[i].max(v),
               (_distinct(4, 5), IDX, _distinct(4, 5, offset=0.1))),
    "take_along_axis": (lambda np_, x, i: np_.take_along_axis(x, i, axis=1),
                        (X, _i([[0, 4], [1, 1], [3, 2], [4, 0]], 0, 5))),
    "take_along_axis_0": (lambda np_, x, i: np_.take_along_axis(x, i, axis=0),
                          (X, _i([[0, 3, 1, 1, 2]], 0, 4))),
    "take": (lambda np_, x, i: np_.take(x, i, axis=1), (X, _i([4, 0, 0], 0, 5))),
    "concatenate": (lambda np_, x, y: np_.concatenate([x, y * 2.0, x], axis=1),
                    (X, _rand(4, 2))),
    "stack": (lambda np_, x, y: np_.stack([x, y], axis=1), (X, _rand(4, 5))),
    "split": (_split_parts, (X,)),
    "pad": (lambda np_, x: np_.pad(x, ((1, 2), (0, 1)), constant_values=0.5), (X,)),
    "pad_edge": (lambda np_, x: np_.pad(x, ((2, 1), (1, 0)), mode="edge"), (X,)),
    "tile": (lambda np_, x: np_.tile(x, (2, 1, 2)), (X,)),
    "repeat": (lambda np_, x: np_.repeat(x, 2, axis=1), (X,)),
    "repeat_flat": (lambda np_, x: np_.repeat(x, 3), (X[:2],)),
    "flip": (lambda np_, x: np_.flip(x, axis=1), (X,)),
    "transpose": (lambda np_, x: np_.transpose(x), (X,)),
    "reshape": (lambda np_, x: np_.reshape(x, (2, 10)), (X,)),
    "expand_dims": (lambda np_, x: np_.expand_dims(x, (0, 2)), (X,)),
    "squeeze": (lambda np_, x: np_.squeeze(x, axis=1), (X[:, :1],)),
    "broadcast_to": (lambda np_, x: np_.broadcast_to(x, (3, 4, 5)), (X,)),
    "broadcast_to_ones": (lambda np_, x: np_.broadcast_to(x, (2, 4, 5)), (X[:1],)),
    "moveaxis": (lambda np_, x: np_.moveaxis(x.reshape(2, 2, 5), 0, -1), (X,)),
}


def _float_positions(args):
    return tuple(k for k, a in enumerate(args) if not isinstance(a, Idx))


def _values(args):
    return [a.value if isinstance(a, Idx) else a for a in args]


def _call(np_, fn, args):
    """``fn`` on ``args`` as arrays of ``np_`` (so NumPy inputs index like arrays)."""
    return fn(np_, *[np_.asarray(a) for a in args])


def _loss(np_, fn):
    """A scalar, nonlinear function of the case's output (for grad)."""
    def loss(*args):
        y = _call(np_, fn, args)
        return np_.sum(np_.sin(y) * y)
    return loss


def _close(got, want, rtol=2e-5, atol=2e-6):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# jax does not differentiate scatter-mul with repeated indices w.r.t. the updates (minijax
# does: the product rule), so that case is checked against finite differences only.
NO_JAX_GRAD = {"at_mul_repeated"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_grad_matches_jax(name):
    fn, args = CASES[name]
    argnums = _float_positions(args)
    vals = _values(args)
    ours = minijax.grad(_loss(jnp, fn), argnums=argnums)(*vals)
    if name in NO_JAX_GRAD:
        with pytest.raises(NotImplementedError):
            jax.grad(_loss(jjnp, fn), argnums=argnums)(*vals)
        theirs = jax.grad(_loss(jjnp, fn))(*vals)  # w.r.t. the operand only
        _close(ours[0], theirs, rtol=1e-4, atol=1e-5)
        return
    theirs = jax.jit(jax.grad(_loss(jjnp, fn), argnums=argnums))(*vals)
    _close(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_grads(name):
    fn, args = CASES[name]
    pos = _float_positions(args)
    vals = _values(args)

    def f(*fargs):
        full = list(vals)
        for k, v in zip(pos, fargs):
            full[k] = v
        return _call(jnp, fn, full)
    check_grads(f, [vals[k] for k in pos], order=2)


def _batched(arg, axis):
    if axis is None:
        return arg.value if isinstance(arg, Idx) else arg
    if isinstance(arg, Idx):
        return np.stack([arg.value] + [arg.variant() for _ in range(B - 1)], axis)
    return np.stack([arg] + [_rand(*np.shape(arg)) for _ in range(B - 1)], axis)


def _in_axes_variants(args):
    """All batched at 0; all at -1; each argument batched alone."""
    n = len(args)
    out = [(0,) * n]
    if n > 1:
        out.append((-1,) * n)
        for k in range(n):
            ax = 1 if np.ndim(_values(args)[k]) >= 1 else 0
            out.append(tuple(ax if j == k else None for j in range(n)))
    else:
        out.append((-1,))
    return out


def _vmap_check(fn, args, in_axes, out_axes=0, loss=False):
    batched = [_batched(a, ax) for a, ax in zip(args, in_axes)]
    f_ours = _loss(jnp, fn) if loss else (lambda *xs: _call(jnp, fn, xs))
    f_theirs = _loss(jjnp, fn) if loss else (lambda *xs: _call(jjnp, fn, xs))
    if loss:  # vmap of grad
        pos = _float_positions(args)
        f_ours, f_theirs = minijax.grad(f_ours, argnums=pos), jax.grad(f_theirs, argnums=pos)
    ours = minijax.vmap(f_ours, in_axes=in_axes, out_axes=out_axes)(*batched)
    # (the reference under jit: much faster than jax's op-by-op dispatch)
    theirs = jax.jit(jax.vmap(f_theirs, in_axes=in_axes, out_axes=out_axes))(*batched)
    _close(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_matches_jax(name):
    fn, args = CASES[name]
    for in_axes in _in_axes_variants(args):
        _vmap_check(fn, args, in_axes)


@pytest.mark.parametrize("name", ["array", "traced_int", "at_set", "at_set_unique", "at_add",
                                  "at_max", "take_along_axis", "concatenate", "pad_edge"])
def test_vmap_of_grad_with_batched_indices(name):
    fn, args = CASES[name]
    _vmap_check(fn, args, (0,) * len(args), loss=True)
    if len(args) > 1:  # only the indices (or only the updates) batched
        _vmap_check(fn, args, (None,) + (0,) * (len(args) - 1), loss=True)


@pytest.mark.parametrize("name", ["array_2d", "traced_int_slice", "at_add_slice",
                                  "take_along_axis", "stack"])
def test_vmap_out_axes_and_nested(name):
    fn, args = CASES[name]
    n = len(args)
    _vmap_check(fn, args, (0,) * n, out_axes=-1)
    _vmap_check(fn, args, (1,) + (None,) * (n - 1), out_axes=1)
    xs = [np.stack([_batched(a, 0) for _ in range(2)], 1) for a in args]

    def run(np_, vm):
        return vm(vm(lambda *ys: _call(np_, fn, ys)), in_axes=(1,) * n)(*xs)
    _close(run(jnp, minijax.vmap), run(jjnp, jax.vmap))


def test_jit_compositions():
    fn, args = CASES["at_set"]
    vals = _values(args)
    ours = minijax.jit(minijax.grad(_loss(jnp, fn), argnums=(0, 2)))(*vals)
    theirs = jax.jit(jax.grad(_loss(jjnp, fn), argnums=(0, 2)))(*vals)
    _close(ours, theirs, rtol=1e-4, atol=1e-5)
    xb = _batched(args[0], 0)
    f = lambda np_: lambda x: np_.sum(np_.sin(x[1:, ::-1][IDX.value]) ** 2)  # noqa: E731
    _close(minijax.jit(minijax.vmap(minijax.grad(f(jnp))))(xb),
           jax.jit(jax.vmap(jax.grad(f(jjnp))))(xb), rtol=1e-4, atol=1e-5)
    _close(minijax.grad(lambda x: jnp.sum(minijax.vmap(f(jnp))(x)))(xb),
           jax.grad(lambda x: jjnp.sum(jax.vmap(f(jjnp))(x)))(xb), rtol=1e-4, atol=1e-5)


def test_traced_index_under_grad_and_jit():
    """``x[i]`` for a traced ``i`` (a dynamic_slice) inside jit, differentiated."""
    def f(np_, jit):
        return jit(lambda x, i: np_.sum(np_.cos(x[i]) * x[i + 1]))
    x = _rand(6, 3)
    for i in [0, 3, -2]:
        ours = minijax.grad(f(jnp, minijax.jit))(x, np.int32(i))
        theirs = jax.grad(f(jjnp, jax.jit))(x, np.int32(i))
        _close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_at_set_repeated_indices_gradient_follows_the_written_value():
    """With repeated indices one update wins; only it gets a gradient, as in jax."""
    x, v = _rand(4, 3), _rand(3, 3)
    i = np.array([1, 1, 2], np.int32)
    ours = minijax.grad(lambda x, v: jnp.sum(x.at[i].set(v) ** 2), argnums=(0, 1))(x, v)
    out = np.asarray(jnp.asarray(x).at[i].set(v))
    g_v = np.asarray(ours[1])
    winner = 0 if np.allclose(out[1], v[0]) else 1
    np.testing.assert_allclose(g_v[winner], 2 * v[winner], rtol=1e-6)
    np.testing.assert_allclose(g_v[1 - winner], 0)
    np.testing.assert_allclose(np.asarray(ours[0])[1:3], 0)
    np.testing.assert_allclose(np.asarray(ours[0])[[0, 3]], 2 * x[[0, 3]], rtol=1e-6)
