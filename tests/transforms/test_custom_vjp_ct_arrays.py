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
