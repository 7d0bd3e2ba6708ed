"""Constants in jaxprs as jax 0.10.2 writes them: a scalar made from a host value during
the trace (``jnp.float32(1.0)``, the constant gradient of ``grad``) is an inline literal
``1.0:f32[]``; arrays made before the trace, and non-scalars, stay constants of the jaxpr."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp

_OUTSIDE = {}


def _outside(m, jnp):
    # made once per module, before any trace
    key = m.__name__
    if key not in _OUTSIDE:
        _OUTSIDE[key] = (jnp.int32(7), jnp.bool_(True), jnp.ones(3))
    return _OUTSIDE[key]


def _cases(m, jnp):
    s, b, v = _outside(m, jnp)
    return {
        "grad x**1": (m.grad(lambda x: x ** 1), (3.0,)),
        "grad of a constant multiple": (m.grad(lambda x: 3.0 * x), (3.0,)),
        "float32 made in the trace": (lambda x: x + jnp.float32(1.0), (3.0,)),
        "asarray of a numpy scalar": (lambda x: x * jnp.asarray(np.float32(2.5)), (3.0,)),
        "asarray of a float64 scalar, x64 off": (
            lambda x: x * jnp.asarray(np.float64(2.5)), (3.0,)),
        "int32 and bool made in the trace": (
            lambda x: (x + jnp.int32(2), jnp.bool_(False) | (x > 0)), (1,)),
        "returned as made": (lambda x: (x, jnp.float32(4.0)), (3.0,)),
        "scalars made before the trace": (lambda x: (x + s, (x > 0) & b), (1,)),
        "vector made in the trace": (lambda x: x + jnp.asarray([1.0, 2.0]), (3.0,)),
        "vector made before the trace": (lambda x: x * v, (1.0,)),
        "vmap": (m.vmap(lambda x: x * jnp.float32(2.0)), (np.ones(2, np.float32),)),
    }


@pytest.mark.parametrize("case", list(_cases(minijax, mjnp)))
def test_jaxpr_constants_match_jax(case):
    f, args = _cases(minijax, mjnp)[case]
    g, _ = _cases(jax, jjnp)[case]
    ours = minijax.make_jaxpr(f)(*args)
    assert str(ours) == str(jax.make_jaxpr(g)(*args))
    # and the values
    for a, b in zip(minijax.tree_util.tree_leaves(minijax.jit(f)(*args)),
                    jax.tree_util.tree_leaves(jax.jit(g)(*args))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b))


def test_grad_outside_a_trace_is_still_an_array():
    g = minijax.grad(lambda x: x ** 1)(3.0)
    assert isinstance(g, minijax.Array) and float(g) == 1.0
    c = mjnp.float32(1.0)
    assert isinstance(c, minijax.Array) and c.dtype == np.float32
