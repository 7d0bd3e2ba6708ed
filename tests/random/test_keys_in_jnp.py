"""Typed PRNG key arrays in the jnp functions jax lets them through, side by side with
jax: asarray/array give the key array back, ``==``/``!=``/equal/array_equal/isclose/
allclose compare whole keys (broadcasting, under jit and vmap too), the ordered
comparisons and mixes with other dtypes are TypeErrors, and the functions that only
move or select elements (reshape, transpose, take, tile, flip, broadcast_to, ...) work
on the keys' words; and asarray/array of objects with ``__jax_array__``."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import random as mr

jr = jax.random


def _same(got, want):
    if isinstance(want, jax.Array) and jax.dtypes.issubdtype(want.dtype, jax.dtypes.prng_key):
        assert isinstance(got, mr.PRNGKeyArray), type(got)
        assert got.shape == want.shape and str(got.dtype) == str(want.dtype)
        np.testing.assert_array_equal(np.asarray(mr.key_data(got)),
                                      np.asarray(jr.key_data(want)))
    else:
        assert isinstance(got, minijax.Array), type(got)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _keys(r):
    k = r.key(0)
    return k, r.split(k, 3), r.split(r.key(1), (2, 3))


CASES = {
    "array_equal_same": lambda np_, r, k, ks, k23: np_.array_equal(k, r.key(0)),
    "array_equal_diff": lambda np_, r, k, ks, k23: np_.array_equal(k, r.key(1)),
    "array_equal_batch": lambda np_, r, k, ks, k23: np_.array_equal(ks, ks),
    "array_equal_shape": lambda np_, r, k, ks, k23: np_.array_equal(ks, ks[:2]),
    "array_equal_nan": lambda np_, r, k, ks, k23: np_.array_equal(k, k, equal_nan=True),
    "array_equiv": lambda np_, r, k, ks, k23: np_.array_equiv(ks, ks[1]),
    "equal_bcast": lambda np_, r, k, ks, k23: np_.equal(ks, ks[1]),
    "not_equal": lambda np_, r, k, ks, k23: np_.not_equal(ks, ks[0]),
    "op_eq": lambda np_, r, k, ks, k23: ks == ks[2],
    "op_ne": lambda np_, r, k, ks, k23: k23 != k23[0],
    "isclose": lambda np_, r, k, ks, k23: np_.isclose(ks, ks[0]),
    "allclose": lambda np_, r, k, ks, k23: np_.allclose(k, r.key(0)),
    "asarray": lambda np_, r, k, ks, k23: np_.asarray(ks),
    "asarray_list": lambda np_, r, k, ks, k23: np_.asarray([k, ks[1]]),
    "array": lambda np_, r, k, ks, k23: np_.array(ks),
    "array_ndmin": lambda np_, r, k, ks, k23: np_.array(k, ndmin=2),
    "broadcast_to": lambda np_, r, k, ks, k23: np_.broadcast_to(ks, (2, 3)),
    "broadcast_arrays": lambda np_, r, k, ks, k23: np_.broadcast_arrays(ks, k)[1],
    "reshape": lambda np_, r, k, ks, k23: np_.reshape(k23, (3, 2)),
    "ravel": lambda np_, r, k, ks, k23: np_.ravel(k23),
    "transpose": lambda np_, r, k, ks, k23: np_.transpose(k23),
    "swapaxes": lambda np_, r, k, ks, k23: np_.swapaxes(k23, 0, 1),
    "moveaxis": lambda np_, r, k, ks, k23: np_.moveaxis(k23, 0, -1),
    "expand_dims": lambda np_, r, k, ks, k23: np_.expand_dims(ks, 0),
    "squeeze": lambda np_, r, k, ks, k23: np_.squeeze(ks[None]),
    "take": lambda np_, r, k, ks, k23: np_.take(ks, np_.array([2, 0, 0])),
    "tile": lambda np_, r, k, ks, k23: np_.tile(ks, 2),
    "repeat": lambda np_, r, k, ks, k23: np_.repeat(ks, 2),
    "flip": lambda np_, r, k, ks, k23: np_.flip(k23),
    "roll": lambda np_, r, k, ks, k23: np_.roll(ks, 1),
    "split": lambda np_, r, k, ks, k23: np_.split(k23, 3, axis=1)[2],
    "zeros_like": lambda np_, r, k, ks, k23: np_.zeros_like(ks),
    "copy": lambda np_, r, k, ks, k23: np_.copy(ks),
}


@pytest.mark.parametrize("name", CASES)
def test_like_jax(name):
    f = CASES[name]
    _same(f(jnp, mr, *_keys(mr)), f(jjnp, jr, *_keys(jr)))


def test_asarray_is_identity_and_array_copies():
    k, jk = mr.key(0), jr.key(0)
    assert (jnp.asarray(k) is k) == (jjnp.asarray(jk) is jk) == True  # noqa: E712
    assert (jnp.array(k) is k) == (jjnp.array(jk) is jk) == False  # noqa: E712
    assert (jnp.asarray(k, copy=True) is k) == (jjnp.asarray(jk, copy=True) is jk)


def test_asarray_copy_true_of_arrays():
    x, jx = jnp.arange(3.0), jjnp.arange(3.0)
    assert (jnp.asarray(x, copy=True) is x) == (jjnp.asarray(jx, copy=True) is jx) == False  # noqa: E712


@pytest.mark.parametrize("which", ["jit", "vmap"])
def test_compare_under_transforms(which):
    def f(a, b):
        return a == b, a != b
    for mod, r in ((minijax, mr), (jax, jr)):
        ks = r.split(r.key(0), 3)
        other = r.split(r.key(0), 3)[::-1] if mod is jax else r.split(r.key(0), 3)[::-1]
        out = (mod.jit(f) if which == "jit" else mod.vmap(f))(ks, other)
        if mod is minijax:
            got = out
        else:
            want = out
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("expr", [
    lambda np_, r: r.key(0) == 1,
    lambda np_, r: np_.equal(r.key(0), np_.zeros((), np_.uint32)),
    lambda np_, r: r.key(0) < r.key(0),
    lambda np_, r: np_.less_equal(r.key(0), r.key(1)),
    lambda np_, r: np_.asarray(r.key(0), dtype=np_.float32),
])
def test_refused_like_jax(expr):
    with pytest.raises((TypeError, ValueError)) as jerr:
        expr(jjnp, jr)
    with pytest.raises(jerr.type) as err:
        expr(jnp, mr)
    assert str(err.value).split(".")[0] == str(jerr.value).split(".")[0]


@pytest.mark.parametrize("args", [
    lambda r, np_: (r.key(0),),
    lambda r, np_: (r.key(0), r.split(r.key(1), 2)),
])
def test_result_type_of_keys_like_jax(args):
    got = jnp.result_type(*args(mr, jnp))
    want = jjnp.result_type(*args(jr, jjnp))
    assert str(got) == str(want) == "key<fry>"
    assert str(minijax.dtypes.result_type(*args(mr, jnp))) == str(
        jax.dtypes.result_type(*args(jr, jjnp)))


@pytest.mark.parametrize("args", [
    lambda r, np_: (r.key(0), 1.0),
    lambda r, np_: (r.key(0), np_.float32),
    lambda r, np_: (r.key(0).dtype,),
])
def test_result_type_of_keys_refused_like_jax(args):
    with pytest.raises((TypeError, ValueError)) as jerr:
        jjnp.result_type(*args(jr, jjnp))
    with pytest.raises(jerr.type) as err:
        jnp.result_type(*args(mr, jnp))
    assert str(err.value) == str(jerr.value)


# ---- the __jax_array__ protocol in asarray/array (flax's Variables use it) ---------------------

class _Wrapped:
    def __init__(self, v):
        self.v = v

    def __jax_array__(self):
        return self.v


@pytest.mark.parametrize("expr", [
    lambda np_, mod: np_.asarray(_Wrapped(np_.arange(3.0))),
    lambda np_, mod: np_.array(_Wrapped(np_.arange(3.0))),
    lambda np_, mod: np_.asarray(_Wrapped(np_.arange(2)), dtype=np_.float32),
    lambda np_, mod: np_.asarray([_Wrapped(np_.ones(())), 1.0]),
    lambda np_, mod: mod.jit(lambda v: np_.asarray(_Wrapped(v)) * 2)(np_.ones(2)),
])
def test_jax_array_protocol_like_jax(expr):
    _same(expr(jnp, minijax), expr(jjnp, jax))


class _Box:
    """A pytree with ``__jax_array__`` that forwards attributes to its value (as flax's
    Variable does, so ``box.aval`` is its tracer's aval under jit)."""

    def __init__(self, v):
        self.v = v

    def __jax_array__(self):
        return self.v

    def __getattr__(self, name):
        return getattr(self.__dict__["v"], name)


minijax.tree_util.register_pytree_node(_Box, lambda b: ((b.v,), None), lambda _, c: _Box(c[0]))


@pytest.mark.parametrize("fn", [
    lambda np_: lambda x, b: np_.dot(x, b),
    lambda np_: lambda x, b: np_.add(x, b),
    lambda np_: lambda x, b: np_.matmul(x, b),
    lambda np_: lambda x, b: np_.sum(b, axis=0) + x[0],
    lambda np_: lambda x, b: np_.maximum(b, 1.5),
    lambda np_: lambda x, b: np_.sin(b) + x,
    lambda np_: lambda x, b: np_.exp(b),
])
def test_jax_array_protocol_of_pytrees_under_jit_like_jax(fn):
    x, b = np.ones((2, 2), np.float32), np.arange(4.0, dtype=np.float32).reshape(2, 2)
    # jax (whose own jnp functions are jitted) refuses such an object at its inner jit
    # boundaries unless it is one of its own pytrees; flax's Variables are: the values are
    # jax's on the arrays themselves
    got = minijax.jit(fn(jnp))(jnp.asarray(x), _Box(jnp.asarray(b)))
    want = jax.jit(fn(jjnp))(jjnp.asarray(x), jjnp.asarray(b))
    _same(got, want)
