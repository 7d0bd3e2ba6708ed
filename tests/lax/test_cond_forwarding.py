"""lax.cond forwards outputs that every branch returns as the same operand, unchanged,
as jax: they are that operand, not outputs of the cond (the jaxpr shows it), so under
vmap with a batched predicate an unbatched operand passed through stays unbatched
(flax's nnx.cond of a module with broadcast state inside nnx.vmap). Side by side."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np

import minijax
import minijax.numpy as jnp


def _f(mod):
    def f(p, b, v):
        return mod.lax.cond(p, lambda c: (c[0], c[1] + 1), lambda c: c, (b, v))
    return f


def test_jaxpr_forwards_passthrough_outputs_like_jax():
    for f in (_f, lambda mod: lambda p, b, v: mod.lax.cond(p, lambda x: x, lambda x: x, b)):
        got = str(minijax.make_jaxpr(f(minijax))(True, 1.0, 2.0))
        want = str(jax.make_jaxpr(f(jax))(True, 1.0, 2.0))
        assert got == want


def test_vmap_batched_predicate_keeps_passthrough_unbatched_like_jax():
    def g(mod, np_):
        def f(b, v):
            return mod.lax.cond(v % 2 == 0, lambda c: (c[0], c[1] + 1), lambda c: c, (b, v))
        return mod.vmap(f, in_axes=(None, 0), out_axes=(None, 0))(np_.array(1), np_.arange(4))
    (gb, gv), (wb, wv) = g(minijax, jnp), g(jax, jjnp)
    assert gb.shape == wb.shape == () and int(gb) == int(wb)
    np.testing.assert_array_equal(np.asarray(gv), np.asarray(wv))


def test_grad_through_forwarded_cond_like_jax():
    def h(mod):
        return mod.grad(lambda b, v: sum(_f(mod)(True, b, v)) * b, argnums=(0, 1))(2.0, 3.0)
    np.testing.assert_allclose(h(minijax), h(jax))
