"""Typed PRNG key arrays are pytree leaves, as in jax: tree_util sees one leaf (the key
itself), and jit/vmap/grad/scan/cond/while_loop/device_put take and give keys; the key's
type (typeof, dtype, shape), key_data and wrap_key_data agree with jax side by side."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax import random as mr
from minijax import tree_util as mtu

jr = jax.random
jtu = jax.tree_util


def _same_keys(got, want):
    """Both typed key arrays of the same type and the same bits."""
    assert isinstance(got, mr.PRNGKeyArray), type(got)
    assert got.shape == want.shape and str(got.dtype) == str(want.dtype)
    np.testing.assert_array_equal(np.asarray(mr.key_data(got)), np.asarray(jr.key_data(want)))


KEYS = [lambda r: r.key(0), lambda r: r.split(r.key(3), 4),
        lambda r: r.split(r.key(1), (2, 3)), lambda r: r.fold_in(r.key(7), 5)]


@pytest.mark.parametrize("make", KEYS)
def test_tree_leaves_and_structure(make):
    k, jk = make(mr), make(jr)
    assert mtu.tree_leaves(k) == [k] and jtu.tree_leaves(jk) == [jk]
    tree, jtree = {"a": k, "b": [1.0, k]}, {"a": jk, "b": [1.0, jk]}
    leaves = mtu.tree_leaves(tree)
    assert len(leaves) == len(jtu.tree_leaves(jtree)) == 3
    assert leaves[0] is k and leaves[2] is k
    assert str(mtu.tree_structure(tree)) == str(jtu.tree_structure(jtree))
    # a key's structure is a leaf's, equal to any other leaf's (as in jax)
    assert mtu.tree_structure(k) == mtu.tree_structure(0.0)
    assert jtu.tree_structure(jk) == jtu.tree_structure(0.0)
    assert mtu.treedef_is_leaf(mtu.tree_structure(k))
    mapped = mtu.tree_map(lambda x: x, tree)
    assert mapped["a"] is k
    # tree_map hands the key itself to the function
    assert mtu.tree_map(lambda x: str(x.dtype), k) == jtu.tree_map(lambda x: str(x.dtype), jk)
    paths = [mtu.keystr(p) for p, _ in mtu.tree_flatten_with_path(tree)[0]]
    assert paths == [jtu.keystr(p) for p, _ in jtu.tree_flatten_with_path(jtree)[0]]


@pytest.mark.parametrize("make", KEYS)
def test_type_dtype_shape(make):
    k, jk = make(mr), make(jr)
    t, jt = minijax.typeof(k), jax.typeof(jk)
    assert (repr(t), str(t), t.shape, t.ndim, t.size, t.weak_type) == \
        (repr(jt), str(jt), jt.shape, jt.ndim, jt.size, jt.weak_type)
    assert str(k.dtype) == str(jk.dtype) == "key<fry>"
    assert t.dtype == k.dtype and t == minijax.typeof(k)
    assert (k.shape, k.ndim, k.size, k.itemsize, k.nbytes) == \
        (jk.shape, jk.ndim, jk.size, jk.itemsize, jk.nbytes)
    for dt in (minijax.dtypes.prng_key, minijax.dtypes.extended):
        jdt = getattr(jax.dtypes, dt.__name__)
        assert jnp.issubdtype(k.dtype, dt) is jjnp.issubdtype(jk.dtype, jdt) is True
        assert minijax.dtypes.issubdtype(k.dtype, dt)
    assert not jnp.issubdtype(k.dtype, jnp.integer)
    assert isinstance(k, minijax.Array) and isinstance(k.dtype, minijax.dtypes.ExtendedDType)
    assert k.dtype == mr.key_dtype() and str(mr.key_dtype()) == str(jr.key_dtype())
    # key_data bit-equal to jax's; wrap_key_data round trip
    np.testing.assert_array_equal(np.asarray(mr.key_data(k)), np.asarray(jr.key_data(jk)))
    _same_keys(mr.wrap_key_data(mr.key_data(k)), jr.wrap_key_data(jr.key_data(jk)))
    assert mr.key_data(k).dtype == np.uint32 and mr.key_data(k).shape == (*k.shape, 2)


def test_typeof_under_transforms():
    def f(k):
        return str(minijax.typeof(k)), k.shape

    def jf(k):
        return str(jax.typeof(k)), k.shape
    seen, jseen = [], []
    minijax.jit(lambda k: seen.append(f(k)) or k)(mr.split(mr.key(0), 3))
    jax.jit(lambda k: jseen.append(jf(k)) or k)(jr.split(jr.key(0), 3))
    minijax.vmap(lambda k: seen.append(f(k)) or k)(mr.split(mr.key(0), 3))
    jax.vmap(lambda k: jseen.append(jf(k)) or k)(jr.split(jr.key(0), 3))
    assert seen == jseen == [("key<fry>[3]", (3,)), ("key<fry>[]", ())]


def test_jit_vmap_with_key_args_and_outputs():
    def f(r, k, x):
        k1, k2 = r.split(k)
        return {"keys": r.split(k1, 3), "x": x + r.normal(k2, (2,))}
    got = minijax.jit(lambda k, x: f(mr, k, x))(mr.key(0), jnp.ones(2))
    want = jax.jit(lambda k, x: f(jr, k, x))(jr.key(0), jjnp.ones(2))
    _same_keys(got["keys"], want["keys"])
    np.testing.assert_array_equal(np.asarray(got["x"]), np.asarray(want["x"]))
    # a key pytree leaf as jit's whole output and as a cached call's argument
    fn = minijax.jit(lambda k: mr.split(k)[1])
    for seed in (0, 1):
        _same_keys(fn(mr.key(seed)), jax.jit(lambda k: jr.split(k)[1])(jr.key(seed)))
    # vmap over a batch of keys in and out; in_axes as a tree with a key in it
    ks, jks = mr.split(mr.key(5), 4), jr.split(jr.key(5), 4)
    got = minijax.vmap(lambda k, x: (mr.fold_in(k, 3), mr.uniform(k) + x),
                       in_axes=(0, None))(ks, 1.0)
    want = jax.vmap(lambda k, x: (jr.fold_in(k, 3), jr.uniform(k) + x),
                    in_axes=(0, None))(jks, 1.0)
    _same_keys(got[0], want[0])
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
    got = minijax.vmap(lambda d: mr.split(d["k"]), in_axes=({"k": 0},))({"k": ks})
    _same_keys(got, jax.vmap(lambda d: jr.split(d["k"]), in_axes=({"k": 0},))({"k": jks}))
    # negative in_axes/out_axes count from the end of the key's shape, not of its words
    ks, jks = mr.split(mr.key(5), (2, 3)), jr.split(jr.key(5), (2, 3))
    for ax in (-1, -2, 1):
        got = minijax.vmap(mr.key_data, in_axes=ax)(ks)
        want = jax.vmap(jr.key_data, in_axes=ax)(jks)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        got = minijax.vmap(lambda k: mr.split(k), out_axes=ax)(ks[0])
        _same_keys(got, jax.vmap(lambda k: jr.split(k), out_axes=ax)(jks[0]))
    # keys made inside vmap from a batch of seeds
    _same_keys(minijax.vmap(mr.key)(jnp.arange(3)), jax.vmap(jr.key)(jjnp.arange(3)))


def test_scan_cond_while_with_key_carries():
    def scan_prog(r, lx, k):
        def body(c, x):
            c, s = r.split(c)
            return c, (s, r.normal(s) + x)
        return lx.scan(body, k, np.arange(3.0, dtype=np.float32))
    got = scan_prog(mr, lax, mr.key(0))
    want = scan_prog(jr, jax.lax, jr.key(0))
    _same_keys(got[0], want[0])
    _same_keys(got[1][0], want[1][0])  # keys stacked along the scan
    np.testing.assert_array_equal(np.asarray(got[1][1]), np.asarray(want[1][1]))
    # scanning over a batch of keys as xs
    got = lax.scan(lambda c, k: (c + mr.uniform(k), mr.fold_in(k, 1)), 0.0, mr.split(mr.key(2), 3))
    want = jax.lax.scan(lambda c, k: (c + jr.uniform(k), jr.fold_in(k, 1)), 0.0,
                        jr.split(jr.key(2), 3))
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
    _same_keys(got[1], want[1])
    for pred in (True, False):
        _same_keys(lax.cond(pred, lambda k: mr.split(k)[0], lambda k: k, mr.key(4)),
                   jax.lax.cond(pred, lambda k: jr.split(k)[0], lambda k: k, jr.key(4)))
    got = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, mr.split(c[1])[1]),
                         (0, mr.key(6)))
    want = jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jr.split(c[1])[1]),
                              (0, jr.key(6)))
    _same_keys(got[1], want[1])
    _same_keys(lax.fori_loop(0, 2, lambda i, k: mr.fold_in(k, i), mr.key(8)),
               jax.lax.fori_loop(0, 2, lambda i, k: jr.fold_in(k, i), jr.key(8)))


def test_grad_device_put_eval_shape_with_keys():
    def loss(r, w, k):
        return (w * r.normal(k, (3,))).sum()
    g = minijax.grad(lambda w, k: loss(mr, w, k))(jnp.ones(3), mr.key(0))
    jg = jax.grad(lambda w, k: loss(jr, w, k))(jjnp.ones(3), jr.key(0))
    np.testing.assert_array_equal(np.asarray(g), np.asarray(jg))
    # with allow_int, a key's cotangent is float0 of the key's shape, as in jax
    (v, g) = minijax.value_and_grad(lambda d: loss(mr, d["w"], d["k"]), allow_int=True)(
        {"w": jnp.ones(3), "k": mr.key(1)})
    (jv, jg) = jax.value_and_grad(lambda d: loss(jr, d["w"], d["k"]), allow_int=True)(
        {"w": jjnp.ones(3), "k": jr.key(1)})
    assert float(v) == float(jv)
    np.testing.assert_array_equal(np.asarray(g["w"]), np.asarray(jg["w"]))
    assert (g["k"].shape, g["k"].dtype) == (jg["k"].shape, jg["k"].dtype)
    _same_keys(minijax.device_put(mr.split(mr.key(3))), jax.device_put(jr.split(jr.key(3))))
    put = minijax.device_put({"k": mr.key(3)})
    _same_keys(put["k"], jr.key(3))
    _same_keys(minijax.block_until_ready(mr.key(3)), jr.key(3))
    # eval_shape gives (and lower takes) ShapeDtypeStructs of the key dtype, as jax
    got = minijax.eval_shape(lambda k: (mr.split(k), mr.normal(k)), mr.key(0))
    want = jax.eval_shape(lambda k: (jr.split(k), jr.normal(k)), jr.key(0))
    assert repr(got) == repr(want)
    struct = minijax.ShapeDtypeStruct((2,), mr.key_dtype())
    assert repr(struct) == repr(jax.ShapeDtypeStruct((2,), jr.key_dtype()))
    assert repr(minijax.eval_shape(lambda k: mr.split(k[0], 3), struct)) == \
        repr(jax.eval_shape(lambda k: jr.split(k[0], 3), jax.ShapeDtypeStruct((2,),
                                                                               jr.key_dtype())))
    compiled = minijax.jit(lambda k: mr.bits(k[1])).lower(struct).compile()
    assert int(compiled(mr.split(mr.key(0)))) == int(jr.bits(jr.split(jr.key(0))[1]))


def test_keys_refuse_array_use_like_jax():
    k = mr.key(0)
    with pytest.raises(TypeError):
        np.asarray(k)
    with pytest.raises(TypeError):
        minijax.grad(lambda k: mr.normal(k))(k)
    with pytest.raises(TypeError):
        jax.grad(lambda k: jr.normal(k))(jr.key(0))


def test_stack_concatenate_where_of_keys_match_jax():
    """jnp.stack/concatenate/where move typed keys as jax does (eager and under jit)."""
    import jax as rjax
    import jax.numpy as rjnp

    import minijax as mj
    import minijax.numpy as mjnp

    def programs(lib, np_):
        def f(k):
            ks = lib.random.split(k, 3)
            mask = np_.array([True, False, True])
            return [np_.stack([k, k]), np_.stack([ks, ks], axis=-1),
                    np_.concatenate([ks, ks[:1]]), np_.concatenate([ks[None], ks[None]], axis=None),
                    np_.where(mask, ks, k), np_.where(False, k, ks)]
        return f

    for jit in (False, True):
        f_mj, f_jx = programs(mj, mjnp), programs(rjax, rjnp)
        if jit:
            f_mj, f_jx = mj.jit(f_mj), rjax.jit(f_jx)
        outs_mj, outs_jx = f_mj(mj.random.key(7)), f_jx(rjax.random.key(7))
        for a, b in zip(outs_mj, outs_jx):
            assert a.shape == b.shape and str(a.dtype) == str(b.dtype)
            np.testing.assert_array_equal(np.asarray(mj.random.key_data(a)),
                                          np.asarray(rjax.random.key_data(b)))
    with pytest.raises(TypeError):
        mjnp.stack([mj.random.key(0), mjnp.zeros(())])
