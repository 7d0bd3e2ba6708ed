"""lax.cumlogsumexp and lax.associative_scan vs jax: values, derivatives, vmap."""

import jax
import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.test_util import check_grads

RNG = np.random.default_rng(0)


def _close(got, want, tol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                 got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("axis,reverse", [(0, False), (1, True)])
def test_cumlogsumexp_matches_jax(axis, reverse):
    x = (RNG.standard_normal((4, 7)) * 30).astype(np.float32)  # exp would overflow
    fm = minijax.jit(lambda x: lax.cumlogsumexp(x, axis, reverse))
    fj = jax.jit(lambda x: jax.lax.cumlogsumexp(x, axis, reverse))
    _close(fm(x), fj(x))
    t = RNG.standard_normal(x.shape).astype(np.float32)
    _close(minijax.jvp(fm, (x,), (t,))[1], jax.jvp(fj, (x,), (t,))[1])
    _close(minijax.grad(lambda x: (fm(x) ** 2).sum())(x),
           jax.grad(lambda x: (fj(x) ** 2).sum())(x), 1e-4)
    xb = RNG.standard_normal((2, 4, 7)).astype(np.float32)
    _close(minijax.vmap(fm, in_axes=1)(xb.swapaxes(0, 1)),
           jax.vmap(fj, in_axes=1)(xb.swapaxes(0, 1)))


def test_cumlogsumexp_infinities_and_float64(x64):
    y = np.array([-np.inf, -np.inf, 1.0, -np.inf, 2.0])
    _close(lax.cumlogsumexp(y), jax.lax.cumlogsumexp(y))
    # finite gradients where jax's are NaN: -inf elements get 0
    _close(minijax.grad(lambda y: lax.cumlogsumexp(y)[2:].sum())(y),
           np.array([0.0, 0.0, 2 + 1 / (1 + np.e), 0.0, np.e / (1 + np.e)]))
    check_grads(lambda x: lax.cumlogsumexp(x, 1, True), (RNG.standard_normal((3, 6)),),
                order=2, modes=("fwd", "rev"))
    with pytest.raises(TypeError, match="cumlogsumexp"):
        lax.cumlogsumexp(np.arange(3))


@pytest.mark.parametrize("op", ["add", "mul", "max"])
@pytest.mark.parametrize("n,reverse", [(1, False), (2, True), (5, False), (8, True)])
def test_associative_scan_matches_jax(op, n, reverse):
    z = RNG.standard_normal((3, n)).astype(np.float32)
    _close(lax.associative_scan(getattr(lax, op), z, reverse, axis=1),
           jax.lax.associative_scan(getattr(jax.lax, op), z, reverse, axis=1))


def test_associative_scan_pytrees_and_derivatives():
    z = RNG.standard_normal((6, 2)).astype(np.float32)

    def scan(L):
        def fn(a, b):  # an affine recurrence h = a * h + b, composed
            return (a[0] * b[0], b[0] * a[1] + b[1])
        return lambda z: L.associative_scan(fn, (z, z * 2))[1]

    _close(minijax.jit(scan(lax))(z), scan(jax.lax)(z))
    _close(minijax.grad(lambda z: scan(lax)(z).sum())(z),
           jax.grad(lambda z: scan(jax.lax)(z).sum())(z))
    _close(minijax.vmap(scan(lax), in_axes=1)(z), jax.vmap(scan(jax.lax), in_axes=1)(z))
    with pytest.raises(ValueError, match="same length"):
        lax.associative_scan(lax.add, (z, z[:3]))
    with pytest.raises(ValueError, match="pytree like elems"):
        lax.associative_scan(lambda a, b: (a, b), z)
