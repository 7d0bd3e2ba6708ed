"""make_jaxpr prints like jax's, and the jaxpr evaluator agrees with execution."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.core.trace import eval_jaxpr


def _pair(f):
    """(minijax version, jax version) of a function written against `np_`."""
    return (lambda *a: f(jnp, *a)), (lambda *a: f(jjnp, *a))


CASES = [
    ("sin", lambda np_, x: np_.sin(x), [np.ones(3, np.float32)]),
    ("mul_literal", lambda np_, x: np_.sin(x) * 2, [np.ones(3, np.float32)]),
    ("long", lambda np_, x: np_.sin(x) * 2 + np_.cos(x), [np.ones(3, np.float32)]),
    ("two_args", lambda np_, x, y: np_.sin(x) * y + 1.0, [np.ones(3, np.float32), 2.0]),
    ("identity", lambda np_, x: x, [1.0]),
    ("int_to_float", lambda np_, x: np_.exp(x), [np.arange(3, dtype=np.int32)]),
    ("compare", lambda np_, x, y: (x > y, x == 1.0),
     [np.ones(3, np.float32), np.zeros(3, np.float32)]),
    ("tuple_out", lambda np_, x: (x * 2, np_.tanh(x)), [np.ones((2, 3), np.float32)]),
    ("abs_int", lambda np_, x: np_.abs(x) - 1, [np.arange(3, dtype=np.int32)]),
]


@pytest.mark.parametrize("name,f,args", CASES, ids=[c[0] for c in CASES])
def test_make_jaxpr_matches_jax(name, f, args):
    ours, theirs = _pair(f)
    assert str(minijax.make_jaxpr(ours)(*args)) == str(jax.make_jaxpr(theirs)(*args))


def test_make_jaxpr_constvar():
    c = np.ones(3, np.float32)
    text = str(minijax.make_jaxpr(lambda x: x + c)(np.ones(3, np.float32)))
    assert text == str(jax.make_jaxpr(lambda x: x + c)(np.ones(3, np.float32)))
    assert text.startswith("{ lambda a:f32[3]; b:f32[3]. let")


def test_make_jaxpr_nested_jit_matches_jax():
    def g(np_, jit):
        return lambda x: jit(np_.sin)(x) + np_.cos(x)
    ours = str(minijax.make_jaxpr(g(jnp, minijax.jit))(1.0))
    theirs = str(jax.make_jaxpr(g(jjnp, jax.jit))(1.0))
    assert ours == theirs


def test_eval_jaxpr_matches_call():
    def f(x, y):
        return jnp.sin(x) * y + jnp.exp(-x)
    x = np.linspace(0, 1, 5).astype(np.float32)
    closed = minijax.make_jaxpr(f)(x, 3.0)
    out = eval_jaxpr(closed.jaxpr, closed.consts, x, 3.0)[0]
    np.testing.assert_allclose(np.asarray(out), np.sin(x) * 3 + np.exp(-x), rtol=1e-6)


def test_jaxpr_structure():
    closed = minijax.make_jaxpr(lambda x: jnp.sin(x) + 1.0)(np.ones(2, np.float32))
    jaxpr = closed.jaxpr
    assert [e.primitive.name for e in jaxpr.eqns] == ["sin", "add"]
    assert jaxpr.in_avals[0].shape == (2,)
    assert jaxpr.out_avals[0].dtype == np.float32
    assert jaxpr.eqns[0].source is not None and jaxpr.eqns[0].source.file == __file__


def test_make_jaxpr_return_shape():
    closed, shape = minijax.make_jaxpr(lambda x: (x, x * 2), return_shape=True)(
        np.ones((2, 3), np.float32))
    assert shape[0].shape == (2, 3) and shape[1].dtype == np.float32
