"""minijax.experimental.ode.odeint against jax.experimental.ode.odeint: the same
algorithm, so the same steps and (near-)equal values and adjoint gradients."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.experimental.ode import odeint as jodeint

import minijax
import minijax.numpy as jnp
from minijax.experimental.ode import odeint

TS = np.linspace(0., 2., 5).astype(np.float32)
Y0 = np.array([1., 0.5], np.float32)
A = np.float32(0.7)


def decay(np_):
    return lambda y, t, a: -a * y + np_.sin(t)


def pendulum(np_):
    def f(state, t, params):
        theta, omega = state["theta"], state["omega"]
        return {"theta": omega, "omega": -params[0] * omega - params[1] * np_.sin(theta)}
    return f


# one function object each, so that repeated integrations hit the compilation caches
DECAY, JDECAY = decay(jnp), decay(jjnp)
PEND_Y0 = {"theta": np.float32(2.5), "omega": np.float32(0.0)}
PEND_P = np.array([0.25, 5.0], np.float32)


def _close(a, b, rtol=2e-5, atol=2e-6):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def test_values_match_jax():
    _close(odeint(DECAY, Y0, TS, A), jodeint(JDECAY, Y0, TS, A), rtol=1e-6)
    ts = np.linspace(0., 3., 7).astype(np.float32)
    m = odeint(pendulum(jnp), PEND_Y0, ts, PEND_P, rtol=1e-6, atol=1e-6)
    j = jodeint(pendulum(jjnp), PEND_Y0, ts, PEND_P, rtol=1e-6, atol=1e-6)
    assert m["theta"].shape == (7,)
    _close(m, j, rtol=1e-5)


def test_exact_solution():
    ts = np.linspace(0., 1., 4).astype(np.float32)
    ys = odeint(lambda y, t: -2. * y, np.float32(1.5), ts)
    np.testing.assert_allclose(ys, 1.5 * np.exp(-2 * ts), rtol=1e-5)


@pytest.mark.slow
def test_grads_match_jax():
    def loss(np_, ode):
        return lambda y0, ts, a: (ode(decay(np_), y0, ts, a) ** 2).sum()
    gm = minijax.grad(loss(jnp, odeint), argnums=(0, 1, 2))(Y0, TS, A)
    gj = jax.grad(loss(jjnp, jodeint), argnums=(0, 1, 2))(Y0, TS, A)
    _close(gm, gj, rtol=1e-4, atol=1e-5)
    h = 1e-2  # and against finite differences
    fd = (loss(jnp, odeint)(Y0, TS, A + h) - loss(jnp, odeint)(Y0, TS, A - h)) / (2 * h)
    np.testing.assert_allclose(gm[2], fd, rtol=1e-3)


@pytest.mark.slow
def test_grad_through_closure_and_pytree():
    ts = np.linspace(0., 1., 3).astype(np.float32)

    def loss(np_, ode):
        def f(p, y0):
            rhs = lambda s, t: pendulum(np_)(s, t, p)  # noqa: E731 - closes over p
            out = ode(rhs, y0, ts)
            return out["theta"][-1] + 0.5 * out["omega"].sum()
        return f
    gm = minijax.grad(loss(jnp, odeint), argnums=(0, 1))(PEND_P, PEND_Y0)
    gj = jax.grad(loss(jjnp, jodeint), argnums=(0, 1))(PEND_P, PEND_Y0)
    _close(gm, gj, rtol=1e-4, atol=1e-5)


def test_jit_and_vmap():
    # (the unbatched, unjitted values are checked against jax above)
    f = minijax.jit(lambda y0, a: odeint(DECAY, y0, TS, a))
    _close(f(Y0, A), odeint(DECAY, Y0, TS, A), rtol=1e-6)
    y0s = np.stack([Y0, Y0 * 2, -Y0]).astype(np.float32)
    avals = np.array([0.2, 0.7, 1.5], np.float32)
    vm = minijax.vmap(lambda y0, a: odeint(DECAY, y0, TS, a))(y0s, avals)
    assert vm.shape == (3, 5, 2)
    for i in range(3):  # a batch takes the steps of its slowest member: near-equal values
        _close(vm[i], odeint(DECAY, y0s[i], TS, avals[i]), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_mxstep_and_hmax_like_jax():
    # with mxstep=3 the last step falls short and its interpolant is extrapolated, which
    # magnifies rounding differences
    for kw, rtol in (({"mxstep": 3}, 2e-4), ({"hmax": 0.05}, 1e-6)):
        _close(odeint(DECAY, Y0, TS, A, **kw), jodeint(JDECAY, Y0, TS, A, **kw),
               rtol=rtol)


def test_errors_like_jax():
    with pytest.raises(TypeError, match="must be arrays or scalars"):
        odeint(lambda y, t, s: y, Y0, TS, "text")
    with pytest.raises(TypeError, match="t must be an array of floats"):
        odeint(lambda y, t: y, Y0, np.arange(3))


def test_float64(x64):
    ts = np.linspace(0., 1., 4)
    m = odeint(DECAY, Y0.astype(np.float64), ts, 0.7)
    j = jodeint(JDECAY, Y0.astype(np.float64), ts, 0.7)
    assert m.dtype == j.dtype == np.float64
    _close(m, j, rtol=1e-12, atol=1e-14)
