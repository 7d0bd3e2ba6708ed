"""integer_pow's jvp emits the equations jax's does: ``x ** 2`` differentiates to
``mul 2.0 x`` (no ``integer_pow[y=1]``), ``x ** 1`` to the tangent itself and ``x ** 0``
to a zero; values and higher derivatives match jax and finite differences."""

import jax
import numpy as np
import pytest

import minijax


def _eqns(closed):
    """(primitive, params, literal operands) of each equation, names left out."""
    out = []
    for e in closed.jaxpr.eqns:
        lits = tuple(float(np.asarray(v.val)) for v in e.invars if hasattr(v, "val"))
        params = {k: str(v) for k, v in e.params.items() if v is not None}  # jax: out_dtype
        out.append((e.primitive.name, params, lits))
    return out


@pytest.mark.parametrize("y", [2, 3, -1, -2, 0, 1])
def test_grad_jaxpr_of_integer_pow_matches_jax(y):
    x = np.float32(3.0)
    ours = minijax.make_jaxpr(minijax.grad(lambda x: x ** y))(x)
    theirs = jax.make_jaxpr(jax.grad(lambda x: x ** y))(x)
    assert _eqns(ours) == _eqns(theirs)
    if y == 2:
        assert [e[0] for e in _eqns(ours)] == ["integer_pow", "mul", "mul"]


@pytest.mark.parametrize("y", [2, 3, -1, 0, 1])
def test_jvp_jaxpr_of_integer_pow_matches_jax(y):
    x = np.linspace(0.5, 2.0, 4, dtype=np.float32)
    lax_pow = {minijax: minijax.lax.integer_pow, jax: jax.lax.integer_pow}
    jaxprs = [m.make_jaxpr(lambda a, m=m: m.jvp(lambda b: lax_pow[m](b, y), (a,), (a,)))(x)
              for m in (minijax, jax)]
    assert _eqns(jaxprs[0]) == _eqns(jaxprs[1])


@pytest.mark.parametrize("y", [2, 3, -1, -2, 0, 1])
def test_integer_pow_derivatives_match_jax_and_finite_differences(y):
    x = np.float32(1.7)
    for order in (1, 2):
        f, g = (lambda x: x ** y), (lambda x: x ** y)
        for _ in range(order):
            f, g = minijax.grad(f), jax.grad(g)
        np.testing.assert_allclose(f(x), g(x), rtol=1e-6)
    eps = 1e-3
    fd = ((1.7 + eps) ** y - (1.7 - eps) ** y) / (2 * eps)
    np.testing.assert_allclose(minijax.grad(lambda x: x ** y)(np.float64(1.7)), fd, rtol=1e-3)
    vg = minijax.vmap(minijax.grad(lambda x: x ** y))(np.array([0.5, 1.5, 2.5], np.float32))
    np.testing.assert_allclose(vg, [y * v ** (y - 1) if y else 0.0 for v in (0.5, 1.5, 2.5)],
                               rtol=1e-6)
    assert minijax.jit(minijax.grad(lambda x: x ** y))(x).dtype == np.float32
