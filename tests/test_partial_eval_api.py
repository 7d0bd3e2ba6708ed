"""The jax internals flax's scan and lazy_init use, side by side with jax:
``pe.trace_to_jaxpr_nounits`` over ``api_util.flatten_fun_nokwargs(lu.wrap_init(f),
in_tree)`` (the wrapped function runs through its flattening; outputs that depend on no
unknown input come back known, with their values), ``tree_util.treedef_tuple`` and
``NamedSharding.update``."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import minijax


def _pe(mod, known_first: bool):
    from importlib import import_module
    pe = import_module(f"{mod.__name__}.interpreters.partial_eval")
    lu = import_module(f"{mod.__name__}.extend.linear_util")
    api_util = import_module(f"{mod.__name__}.api_util")
    jnp = mod.numpy

    def f(c, xs, scale=3.0):
        # a broadcast value (known: no unknown input), a carry-dependent one (unknown)
        return {"const": jnp.arange(3.0) * scale, "dep": c * 2.0 + xs.sum()}

    c, xs = jnp.ones((2,)), jnp.ones((4,))
    c_flat, c_tree = mod.tree_util.tree_flatten(c)
    x_flat, x_tree = mod.tree_util.tree_flatten(xs)
    in_tree = mod.tree_util.treedef_tuple((c_tree, x_tree))
    f_flat, out_tree = api_util.flatten_fun_nokwargs(lu.wrap_init(f), in_tree)
    avals = [mod.core.ShapedArray(x.shape, x.dtype) for x in (*c_flat, *x_flat)]
    pvals = [pe.PartialVal.unknown(a) for a in avals]
    if known_first:
        pvals[0] = pe.PartialVal.known(c)
    _, out_pvals, _ = pe.trace_to_jaxpr_nounits(f_flat, pvals)
    out = []
    for pv, const in out_pvals:
        out.append(("unknown", tuple(pv.shape)) if pv is not None else
                   ("known", np.asarray(const).tolist()))
    return out, str(out_tree())


@pytest.mark.parametrize("known_first", [False, True])
def test_trace_to_jaxpr_nounits_like_jax(known_first):
    assert _pe(minijax, known_first) == _pe(jax, known_first)


def test_treedef_tuple_like_jax():
    for mod in (minijax, jax):
        a, b = mod.tree_util.tree_structure((1, 2)), mod.tree_util.tree_structure({"a": 1})
        assert mod.tree_util.treedef_tuple([a, b]) == mod.tree_util.tree_structure(
            ((1, 2), {"a": 1}))
        assert mod.tree_util.treedef_tuple(iter([a])).num_leaves == 2
    assert str(minijax.tree_util.treedef_tuple((a, b))) == str(jax.tree_util.treedef_tuple(
        (jax.tree_util.tree_structure((1, 2)), jax.tree_util.tree_structure({"a": 1}))))


def test_named_sharding_update_like_jax():
    def body(mod):
        mesh = mod.sharding.Mesh(np.array(mod.devices()[:1]), ("x",))
        s = mod.sharding.NamedSharding(mesh, mod.sharding.PartitionSpec("x", None))
        u = s.update(spec=("x",))
        v = s.update(spec=mod.sharding.PartitionSpec(None, "x"))
        return (tuple(u.spec), isinstance(u.spec, mod.sharding.PartitionSpec), tuple(v.spec),
                u.mesh == s.mesh,
                u.memory_kind == s.memory_kind)
    assert body(minijax) == body(jax)
