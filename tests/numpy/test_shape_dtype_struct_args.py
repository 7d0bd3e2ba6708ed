"""jax.numpy functions that take a ShapeDtypeStruct (any object with .shape and .dtype)
where an array goes: the *_like constructors and the introspection functions."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

SHAPES_DTYPES = [((2, 3), np.float16), ((), np.int32), ((4,), np.bool_),
                 ((1, 2), np.complex64), ((3,), jjnp.bfloat16)]


def _both(shape, dtype, weak=False):
    return (minijax.ShapeDtypeStruct(shape, dtype, weak_type=weak),
            jax.ShapeDtypeStruct(shape, dtype, weak_type=weak))


def _same(ours, theirs):
    assert isinstance(ours, minijax.Array)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    assert ours.weak_type == theirs.weak_type
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize("shape,dtype", SHAPES_DTYPES)
@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like"])
def test_like_constructors(name, shape, dtype):
    ours, theirs = _both(shape, dtype)
    if name == "empty_like":  # contents unspecified: compare the type only
        o, t = jnp.empty_like(ours), jjnp.empty_like(theirs)
        assert (o.shape, o.dtype, o.weak_type) == (t.shape, t.dtype, t.weak_type)
        return
    _same(getattr(jnp, name)(ours), getattr(jjnp, name)(theirs))
    _same(minijax.jit(lambda: getattr(jnp, name)(ours))(), getattr(jjnp, name)(theirs))


@pytest.mark.parametrize("kw", [{}, {"dtype": np.int32}, {"shape": (4, 1)},
                                {"dtype": np.float32, "shape": ()}])
def test_full_like(kw):
    ours, theirs = _both((2, 3), np.float16)
    _same(jnp.full_like(ours, 2.5, **kw), jjnp.full_like(theirs, 2.5, **kw))
    _same(jnp.zeros_like(ours, **kw), jjnp.zeros_like(theirs, **kw))


def test_weak_struct_gives_a_strong_result():
    ours, theirs = _both((2,), np.float32, weak=True)
    _same(jnp.zeros_like(ours), jjnp.zeros_like(theirs))
    _same(jnp.full_like(ours, 3), jjnp.full_like(theirs, 3))
    assert jnp.result_type(ours, np.float16) == jjnp.result_type(theirs, np.float16)


@pytest.mark.parametrize("shape,dtype", SHAPES_DTYPES)
def test_introspection(shape, dtype):
    ours, theirs = _both(shape, dtype)
    assert jnp.shape(ours) == jjnp.shape(theirs)
    assert jnp.ndim(ours) == jjnp.ndim(theirs)
    assert jnp.result_type(ours) == jjnp.result_type(theirs)
    assert jnp.iscomplexobj(ours) == jjnp.iscomplexobj(theirs)
    assert jnp.isrealobj(ours) == jjnp.isrealobj(theirs)


def test_shape_dtype_struct_like():
    for x in [np.ones((2, 3)), jnp.ones((4,), np.int8), 2.0, np.int16(3)]:
        ours = minijax.ShapeDtypeStruct.like(x)
        theirs = jax.ShapeDtypeStruct.like(x if not isinstance(x, minijax.Array)
                                           else jjnp.asarray(np.asarray(x)))
        assert (ours.shape, ours.dtype, ours.weak_type) == \
            (theirs.shape, theirs.dtype, theirs.weak_type)
    s = minijax.ShapeDtypeStruct((2,), np.float32)
    assert minijax.ShapeDtypeStruct.like(s) == s
    seen = []
    minijax.jit(lambda x: seen.append(minijax.ShapeDtypeStruct.like(x)) or x)(jnp.ones(3))
    assert seen[0] == minijax.ShapeDtypeStruct((3,), np.float32)
