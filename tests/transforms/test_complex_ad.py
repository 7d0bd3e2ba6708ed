"""Differentiation of complex functions against jax: ``grad``/``vjp`` of real-valued
functions of complex inputs (jax's convention: ``df/dx - 1j * df/dy`` at ``x + 1j * y``),
``holomorphic=True`` for ``grad``, ``jacfwd``, ``jacrev`` and ``hessian``, and jax's
TypeErrors where a dtype does not fit the transformation."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

Z = np.array([1 + 2j, -0.5 + 0.3j, 0.7 - 1.1j], np.complex64)
X = np.array([0.5, -1.0, 2.0], np.float32)


def _close(got, want, tol=1e-5):
    lg, lw = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for g, w in zip(lg, lw):
        assert (g.shape, g.dtype, g.weak_type) == (w.shape, w.dtype, w.weak_type)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


def _lax(np_):
    return jax.lax if np_ is jjnp else minijax.lax


# Real-valued functions of a complex vector (the three first).
REAL_OF_COMPLEX = {
    "abs_squared": lambda np_, z: (np_.abs(z) ** 2).sum(),
    "z_conj_z": lambda np_, z: np_.real(z * np_.conj(z)).sum(),
    "z_squared_real": lambda np_, z: (z * z).real.sum(),
    "imag_and_angle": lambda np_, z: (np_.imag(np_.exp(z) / (z + 3)) * np_.angle(z)).sum(),
    "norm_of_matmul": lambda np_, z: np_.linalg.norm(np_.outer(z, z) @ np_.conj(z)),
    "log_sqrt_abs": lambda np_, z: np_.abs(np_.log(z) + np_.sqrt(z)).sum(),
    "complex_from_parts": lambda np_, z: np_.abs(_lax(np_).complex(np_.real(z) * 2,
                                                                    np_.imag(z)) + 1j).sum(),
    "eigh": lambda np_, z: np_.linalg.eigh(np_.outer(z, z.conj()) + np_.diag(np_.abs(z)))[0]
    .sum(),
}


@pytest.mark.parametrize("name", list(REAL_OF_COMPLEX))
def test_grad_of_real_function_of_complex_input(name):
    f = REAL_OF_COMPLEX[name]
    want_v, want_g = jax.value_and_grad(lambda z: f(jjnp, z))(Z)
    got_v, got_g = minijax.value_and_grad(lambda z: f(jnp, z))(Z)
    _close(got_v, want_v, 1e-4)
    _close(got_g, want_g, 1e-4)


def test_grad_is_conjugate_convention():
    """For ``abs(z)**2`` the gradient is ``2 * conj(z)`` (not ``2 * z``), as in jax."""
    g = minijax.grad(lambda z: (jnp.abs(z) ** 2).sum())(Z)
    np.testing.assert_allclose(np.asarray(g), 2 * np.conj(Z), rtol=1e-6)


def test_grad_mixed_real_and_complex_arguments_and_jit():
    def f(np_):
        return lambda z, x: (np_.abs(z * x) ** 2 + np_.real(z) * x).sum()
    _close(minijax.jit(minijax.grad(f(jnp), argnums=(0, 1)))(Z, X),
           jax.grad(f(jjnp), argnums=(0, 1))(Z, X))


def test_vjp_of_complex_output():
    """Non-holomorphic complex outputs go through vjp with a complex cotangent."""
    def f(np_):
        return lambda z: np_.conj(z) * z * z + np_.abs(z)
    ct = (Z[::-1] * 1j).astype(np.complex64)
    _close(minijax.vjp(f(jnp), Z)[1](ct), jax.vjp(f(jjnp), Z)[1](ct))


HOLOMORPHIC = {
    "poly": lambda np_, z: z ** 3 + 2 * z * z - 1j * z,
    "transcendental": lambda np_, z: np_.exp(z) * np_.sin(z) + np_.log(z) / (z + 3),
    "matvec": lambda np_, z: (np_.outer(z, z) + 1j) @ z,
    "solve": lambda np_, z: np_.linalg.solve(np_.outer(z, z) + 2 * np_.eye(3), z),
    "scan": lambda np_, z: _lax(np_).scan(lambda c, x: (c * x + 1j, c * c), Z[0], z)[1],
}


@pytest.mark.parametrize("name", list(HOLOMORPHIC))
def test_holomorphic_jacobians(name):
    f = HOLOMORPHIC[name]
    for kind in ("jacfwd", "jacrev"):
        _close(getattr(minijax, kind)(lambda z: f(jnp, z), holomorphic=True)(Z),
               getattr(jax, kind)(lambda z: f(jjnp, z), holomorphic=True)(Z), 1e-4)


def test_holomorphic_grad_and_hessian():
    def f(np_):
        return lambda z: (z ** 3 * np_.exp(z)).sum()
    _close(minijax.value_and_grad(f(jnp), holomorphic=True)(Z),
           jax.value_and_grad(f(jjnp), holomorphic=True)(Z), 1e-4)
    _close(minijax.hessian(f(jnp), holomorphic=True)(Z),
           jax.hessian(f(jjnp), holomorphic=True)(Z), 1e-4)


def test_jacobians_with_complex_on_one_side():
    """jacrev takes complex inputs of real outputs, jacfwd real inputs of complex outputs."""
    def to_real(np_):
        return lambda z, x: np_.abs(z) * x
    _close(minijax.jacrev(to_real(jnp), argnums=(0, 1))(Z, X),
           jax.jacrev(to_real(jjnp), argnums=(0, 1))(Z, X))

    def to_complex(np_):
        return lambda x: np_.exp(1j * x) * x
    _close(minijax.jacfwd(to_complex(jnp))(X), jax.jacfwd(to_complex(jjnp))(X))


def test_jacobian_blocks_take_the_dtype_of_their_leaf():
    """The blocks of an integer input (``allow_int``) or output are zeros of its dtype, and
    a weakly typed input or output gives weakly typed blocks."""
    i = np.arange(2, dtype=np.int32)

    def f(np_):
        return lambda n, x: n * x
    _close(minijax.jacrev(f(jnp), argnums=(0, 1), allow_int=True)(i, X[:2]),
           jax.jacrev(f(jjnp), argnums=(0, 1), allow_int=True)(i, X[:2]))

    def g(np_):
        return lambda x: (x * 2).astype(np_.int32)
    _close(minijax.jacfwd(g(jnp))(X), jax.jacfwd(g(jjnp))(X))

    def h(x):
        return x * 2, 2.0
    for kind in ("jacfwd", "jacrev"):
        _close(getattr(minijax, kind)(h)(3.0), getattr(jax, kind)(h)(3.0))


# (transformation, keyword arguments, function, argument, words of jax's message)
ERRORS = [
    ("grad", {}, lambda z: (z * z).sum(), Z, "holomorphic=True"),
    ("grad", {}, lambda x: (x * 1j).sum(), X, "holomorphic=True"),
    ("grad", {"holomorphic": True}, lambda x: (x * 1j).sum(), X,
     "holomorphic=True requires inputs with complex dtype"),
    ("grad", {"holomorphic": True}, lambda z: (z * z).real.sum(), Z,
     "holomorphic=True requires outputs with complex dtype"),
    ("grad", {}, lambda x: (x * 2).astype(np.int32).sum(), X, "integer outputs"),
    ("grad", {"holomorphic": True}, lambda n: n * 1j, np.int32(1),
     "requires inputs with complex dtype"),
    ("jacfwd", {}, lambda z: z * z, Z, "jacfwd requires real-valued inputs"),
    ("jacfwd", {"holomorphic": True}, lambda x: x * 1j, X,
     "requires inputs with complex dtype"),
    ("jacfwd", {"holomorphic": True}, lambda z: z.real, Z,
     "requires outputs with complex dtype"),
    ("jacrev", {}, lambda x: x * 1j, X, "jacrev requires real-valued outputs"),
    ("jacrev", {"holomorphic": True}, lambda z: z.real, Z,
     "requires outputs with complex dtype"),
    ("jacrev", {}, lambda n: n * 2.0, np.arange(3, dtype=np.int32),
     "jacrev requires real- or complex-valued inputs"),
    # the Hessian of a real function of complex inputs: jacfwd rejects the complex input
    ("hessian", {}, lambda z: (z * z).real.sum(), Z, "jacfwd requires real-valued inputs"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_dtype_errors_like_jax(case):
    kind, kwargs, f, arg, words = ERRORS[case]
    with pytest.raises(TypeError, match=words):
        getattr(jax, kind)(f, **kwargs)(arg)
    with pytest.raises(TypeError, match=words):
        getattr(minijax, kind)(f, **kwargs)(arg)


def test_check_grads_on_complex_functions():
    """check_grads draws complex tangents and cotangents: it passes on correct rules and
    catches a derivative that forgets the imaginary direction, as jax's does."""
    from jax.test_util import check_grads as jax_check_grads

    from minijax.test_util import check_grads

    check_grads(lambda z: jnp.sin(z) * jnp.conj(z) + jnp.abs(z), (Z,), order=2)
    check_grads(lambda z, x: jnp.exp(z * x), (Z, X), order=1)

    def wrong(lib):
        f = lib.custom_jvp(lambda z: z * z)
        f.defjvp(lambda p, t: (p[0] * p[0], 2 * p[0] * lib.numpy.real(t[0])))
        return f
    for check, lib in ((check_grads, minijax), (jax_check_grads, jax)):
        with pytest.raises(AssertionError):
            check(wrong(lib), (Z,), order=1, modes=("fwd",))
