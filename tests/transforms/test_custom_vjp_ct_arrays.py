"""A custom_vjp bwd rule gets its cotangents as arrays of the outputs' types, as in
jax, also where minijax's cotangent is a Python number inside (grad's seed 1.0, a scalar
symbolic zero for an unused output): flax's nnx.custom_vjp and user rules read
``g.shape``. Compared with jax under grad and jit(grad)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp


def _run(mod, np_, which):
    seen = []

    @mod.custom_vjp
    def f(x):
        return np_.sin(x) * 2, x

    def fwd(x):
        return f(x), np_.cos(x)

    def bwd(r, g):
        seen.append([(tuple(c.shape), str(c.dtype), bool(getattr(c, "weak_type", False)))
                     for c in g])
        return (g[0] * r * 2 + g[1],)

    f.defvjp(fwd, bwd)
    loss = {"both": lambda x: f(x)[0] + f(x)[1] * 3, "first": lambda x: f(x)[0],
            "strong": lambda x: f(x)[0].astype(np_.float32) * np_.float32(2)}[which]
    g1 = mod.grad(loss)(1.0)
    g2 = mod.jit(mod.grad(loss))(1.0)
    return float(g1), float(g2), seen


@pytest.mark.parametrize("which", ["both", "first", "strong"])
def test_bwd_cotangents_are_arrays_like_jax(which):
    got, want = _run(minijax, jnp, which), _run(jax, jjnp, which)
    np.testing.assert_allclose(got[:2], want[:2], rtol=1e-6)
    assert [[c[:2] for c in call] for call in got[2]] == \
        [[c[:2] for c in call] for call in want[2]]



def _prefix_run(mod, np_, bwd_out):
    @mod.custom_vjp
    def f(d):
        return np_.sin(d["a"][0]) * d["a"][1] * d["b"]

    def fwd(d):
        return f(d), (np_.cos(d["a"][0]), d["b"])

    def bwd(r, g):
        return (bwd_out(r, g),)

    f.defvjp(fwd, bwd)
    try:
        g = mod.grad(f)({"a": (1.0, 3.0), "b": 2.0})
    except TypeError:
        return "TypeError"
    return float(g["a"][0]), float(g["a"][1]), float(g["b"])


def test_bwd_cotangent_may_be_a_prefix_like_jax():
    cases = [lambda r, g: {"a": r[0] * r[1] * g, "b": None},            # one leaf for a node
             lambda r, g: {"a": (r[0] * g, None), "b": g * 0.5},        # the full structure
             lambda r, g: {"a": None, "b": g},                           # None for a node
             lambda r, g: {"a": r[0] * r[1] * g}]                        # a missing key
    for c in cases:
        assert _prefix_run(minijax, jnp, c) == _prefix_run(jax, jjnp, c)
