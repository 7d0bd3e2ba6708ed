"""jacfwd, jacrev and hessian against jax on arrays and pytrees."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

X = np.array([0.5, 1.0, 2.0], np.float32)


def _close(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    for u, v in zip(la, lb):
        assert u.shape == v.shape
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev", "hessian"])
def test_array_function(kind):
    f = lambda np_: (lambda v: np_.sin(v) * v[0] + np_.sum(v ** 3))  # noqa: E731
    _close(getattr(minijax, kind)(f(jnp))(X), getattr(jax, kind)(f(jjnp))(X))


@pytest.mark.parametrize("kind", ["jacfwd", "jacrev"])
def test_pytree_inputs_outputs_and_argnums(kind):
    def g(np_):
        return lambda p, v: {"a": p["w"] * v, "b": (np_.sum(p["w"] ** 2), p["w"][0] * v)}
    params = {"w": X}
    _close(getattr(minijax, kind)(g(jnp), argnums=(0, 1))(params, 3.0),
           getattr(jax, kind)(g(jjnp), argnums=(0, 1))(params, 3.0))
    _close(getattr(minijax, kind)(g(jnp))(params, 3.0), getattr(jax, kind)(g(jjnp))(params, 3.0))


def test_matrix_input_and_jit():
    m = np.arange(6, dtype=np.float32).reshape(2, 3) / 5
    f = lambda np_: (lambda a: np_.tanh(a @ a.T))  # noqa: E731
    _close(minijax.jit(minijax.jacrev(f(jnp)))(m), jax.jacrev(f(jjnp))(m))
    _close(minijax.jacfwd(f(jnp))(m), jax.jacfwd(f(jjnp))(m))


def test_hessian_of_quadratic_is_exact():
    a = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    h = minijax.hessian(lambda v: 0.5 * v @ (a @ v))(np.ones(2, np.float32))
    np.testing.assert_allclose(np.asarray(h), a, rtol=1e-6)


def test_integer_input_error():
    with pytest.raises(TypeError, match="jacrev requires real- or complex-valued inputs"):
        minijax.jacrev(lambda v: v * 2)(np.arange(3))
