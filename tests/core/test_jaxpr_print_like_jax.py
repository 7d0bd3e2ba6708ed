"""Jaxprs print as jax 0.10.2 prints them: results nothing uses show as ``_``, a ``jit``
sub-jaxpr's binders take the names of the equation's operands and results, short
sub-jaxprs stay on the equation's line, and sub-jaxprs used twice (or longer than 10
equations) print first as ``let <name> = ... in``."""

import jax
import jax.numpy as jjnp
import pytest

import minijax
import minijax.numpy as mjnp


def _cases(m, jnp):
    def inner(u, v):
        return jnp.sin(u) * v + 1.0

    def twice(x, y):
        z = x * 2.0
        return m.jit(inner)(m.jit(inner)(z, y), z) + x

    def big(x):
        for _ in range(6):
            x = jnp.sin(x) * 2.0
        return x

    def loss(x):
        return x * 2.0

    def unused(x):
        jnp.cos(x)
        return jnp.sin(x) * 2.0

    return {
        "jit used twice": (twice, (1.0, 2.0)),
        "short jit": (m.jit(lambda x: x), (1.0,)),
        "jit of grad": (m.jit(m.grad(loss)), (3.0,)),
        "grad": (m.grad(lambda x: x ** 3), (3.0,)),
        "unused result": (unused, (1.0,)),
        "long jit twice": (lambda x: m.jit(big)(x) + m.jit(big)(x * 2.0), (1.0,)),
        "long jit once": (lambda x: m.jit(big)(x), (1.0,)),
        "operand passed twice": (lambda x: m.jit(lambda a, b: a * b)(x, x), (1.0,)),
        "cond": (lambda x: m.lax.cond(x > 0, lambda a: a + 1.0, lambda a: a - 1.0, x), (1.0,)),
        "vjp": (m.vjp(jnp.sin, 1.0)[1], (1.0,)),
    }


@pytest.mark.parametrize("case", list(_cases(minijax, mjnp)))
def test_jaxpr_text_matches_jax(case):
    f, args = _cases(minijax, mjnp)[case]
    g, _ = _cases(jax, jjnp)[case]
    assert str(minijax.make_jaxpr(f)(*args)) == str(jax.make_jaxpr(g)(*args))


def test_shared_jaxpr_example():
    text = str(minijax.make_jaxpr(_cases(minijax, mjnp)["jit used twice"][0])(1.0, 2.0))
    assert text.startswith("let inner = { lambda ; a:f32[] b:f32[]. let\n")
    assert "i:f32[] = jit[name=inner jaxpr=inner] h g" in text
