"""Lowering shares text between ops (memo tables of attributes, constants, types, and
each op's line made when it is emitted). An op changed afterwards (XLA metadata set on
one value) must not change its twins, in this module or in the next one lowered."""

import jax
import jax.numpy as jjnp
import numpy as np
from jax.experimental import xla_metadata as jmd

import minijax
import minijax.numpy as jnp
from minijax.experimental.xla_metadata import set_xla_metadata
from tests.experimental.test_xla_metadata import tagged_kinds


def _twin_products(np_, smd):
    def f(x, w):
        a = smd(smd(np_.dot(x, w), which="d") * 2.0, which="m")  # both ops tagged
        b = np_.dot(x, w) * 2.0  # the same ops with the same attributes, untagged
        return a + b
    return f


def test_tagging_one_op_leaves_identical_ops_untagged_like_jax():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    w = np.ones((4, 2), np.float32)
    ours = minijax.jit(_twin_products(jnp, set_xla_metadata)).lower(x, w)
    theirs = jax.jit(_twin_products(jjnp, jmd.set_xla_metadata)).lower(x, w)
    kinds = tagged_kinds(ours.as_text("hlo"))
    assert kinds == tagged_kinds(theirs.as_text("hlo"))
    assert kinds == [("dot", '{which="d"}'), ("multiply", '{which="m"}')]
    # the untagged twin, lowered afterwards from the same memo tables, stays untagged
    plain = minijax.jit(lambda x, w: jnp.dot(x, w) * 2.0).lower(x, w)
    assert tagged_kinds(plain.as_text("hlo")) == []
    np.testing.assert_allclose(ours.compile()(x, w), 4.0 * (x @ w))


def test_twin_constants_and_dots_keep_their_own_values():
    # Scalar constants and dot attributes come from memo tables: different values and
    # dimension numbers must each keep their own text.
    def f(np_, L):
        def g(x, y):
            a = L.dot_general(x, y, (((1,), (0,)), ((), ())))
            b = L.dot_general(x, y, (((0,), (1,)), ((), ())))
            return (a * 2.0 + 3.0).sum() + (b * 3.0 + 2.0).sum() + np_.float32(-0.0)
        return g
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    y = (np.arange(9, dtype=np.float32) - 4).reshape(3, 3)
    ours = minijax.jit(f(jnp, minijax.lax))(x, y)
    theirs = jax.jit(f(jjnp, jax.lax))(x, y)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))
    assert jax.grad(f(jjnp, jax.lax))(x, y).tolist() == \
        np.asarray(minijax.grad(f(jnp, minijax.lax))(x, y)).tolist()
