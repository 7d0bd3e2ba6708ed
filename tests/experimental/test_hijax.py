"""jax.experimental.hijax as libraries use it (flax.nnx's hijax variables), side by side
with jax: a ``HiPrimitive`` subclass's own ``impl`` and ``jvp`` methods are its rules
(bound eagerly, ``impl`` makes the hi value), and ``jax.experimental.cur_qdd`` reads a
hi value's type state (None for a traced array)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.experimental import hijax as mhjx
from jax.experimental import hijax as jhjx


def _define(mod, hjx, np_):
    class Box:
        def __init__(self, x):
            self.x = x

        def cur_qdd(self):
            return ("qdd", tuple(mod.typeof(self.x).shape))

    class BoxTy(hjx.HiType):
        def __init__(self, shape):
            self.shape = shape

        def __hash__(self):
            return hash(self.shape)

        def __eq__(self, other):
            return isinstance(other, BoxTy) and other.shape == self.shape

    hjx.register_hitype(Box, lambda b: BoxTy(tuple(mod.typeof(b.x).shape)))

    class MakeBox(hjx.HiPrimitive):
        def impl(self, x, *, scale):
            return Box(x * scale)

        def abstract_eval(self, x, *, scale):
            return BoxTy(x.shape), set()

        def to_lojax(self, x, *, scale):
            return Box(x * scale)

        def jvp(self, primals, tangents, *, scale):
            return primals[0] * scale, tangents[0] * scale

    return Box, MakeBox("make_box")


def test_impl_method_runs_eagerly_and_cur_qdd():
    got_box, got_p = _define(minijax, mhjx, jnp)
    want_box, want_p = _define(jax, jhjx, jjnp)
    got = got_p.bind(jnp.arange(3.0), scale=2.0)
    want = want_p.bind(jjnp.arange(3.0), scale=2.0)
    assert type(got) is got_box and type(want) is want_box
    np.testing.assert_array_equal(np.asarray(got.x), np.asarray(want.x))
    assert minijax.experimental.cur_qdd(got) == jax.experimental.cur_qdd(want) == ("qdd", (3,))


def test_rules_are_the_subclass_methods():
    _, p = _define(minijax, mhjx, jnp)
    assert p.impl is not None and p.impl.__func__ is type(p).impl
    assert p.jvp is not None and p.jvp.__func__ is type(p).jvp


def test_cur_qdd_of_traced_array_is_none():
    got, want = [], []
    minijax.jit(lambda x: got.append(minijax.experimental.cur_qdd(x)) or x)(jnp.ones(2))
    jax.jit(lambda x: want.append(jax.experimental.cur_qdd(x)) or x)(jjnp.ones(2))
    assert got == want == [None]


def test_cur_qdd_of_plain_array_is_attribute_error():
    with pytest.raises(AttributeError):
        jax.experimental.cur_qdd(jjnp.ones(2))
    with pytest.raises(AttributeError):
        minijax.experimental.cur_qdd(jnp.ones(2))
