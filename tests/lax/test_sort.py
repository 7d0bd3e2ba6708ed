"""lax.sort / sort_key_val vs numpy and jax, including NaN and signed-zero order."""

import jax
import ml_dtypes
import numpy as np
import pytest

import minijax
from minijax import lax

RNG = np.random.default_rng(2)


def _rand(shape, dtype):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return RNG.integers(0 if dt.kind == "u" else -50, 50, shape).astype(dt)
    return RNG.standard_normal(shape).astype(dt)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.float16,
                                   ml_dtypes.bfloat16])
def test_sort_matches_numpy_and_jax(dtype):
    x = _rand((4, 6), dtype)
    f = minijax.jit(lambda x: (lax.sort(x, 0), lax.sort(x, 1), lax.sort(x)))
    want = jax.jit(lambda x: (jax.lax.sort(x, 0), jax.lax.sort(x, 1), jax.lax.sort(x)))(x)
    for got, w, axis in zip(f(x), want, (0, 1, -1)):
        assert got.dtype == w.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(w))
        np.testing.assert_array_equal(np.asarray(got), np.sort(x, axis))


def test_sort_eager():
    x = _rand((7,), np.float32)
    got = lax.sort(x)
    assert isinstance(got, minijax.Array)
    np.testing.assert_array_equal(np.asarray(got), np.sort(x))


SPECIAL = np.array([0.0, -0.0, np.nan, 1.0, -np.nan, -np.inf, -0.0, np.inf, 0.0, -1.0],
                   np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_sort_nan_and_signed_zero_order_like_jax(dtype):
    x = SPECIAL.astype(dtype)
    idx = np.arange(x.size, dtype=np.int32)
    got_v, got_i = minijax.jit(lambda x, i: lax.sort((x, i), num_keys=1))(x, idx)
    want_v, want_i = jax.lax.sort((x, idx), num_keys=1)
    # NaNs last, -0.0 and 0.0 equal so the stable sort keeps their input order.
    np.testing.assert_array_equal(np.asarray(got_i), np.asarray(want_i))
    np.testing.assert_array_equal(np.asarray(got_i), [5, 9, 0, 1, 6, 8, 3, 7, 2, 4])
    assert np.array_equal(np.signbit(np.asarray(got_v)), np.signbit(np.asarray(want_v)))
    np.testing.assert_array_equal(np.asarray(got_v), np.asarray(want_v))


def test_sort_complex_lexicographic():
    re = np.array([1, 0, 1, np.nan, 0], np.float32)
    im = np.array([2, 5, -1, 0, 1], np.float32)
    x = (re + 1j * im).astype(np.complex64)
    got = lax.sort(x)
    want = jax.lax.sort(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_array_equal(np.asarray(got)[:4], np.sort(x)[:4])


def test_sort_multiple_operands_and_num_keys():
    k1 = RNG.integers(0, 3, 12).astype(np.int32)
    k2 = RNG.standard_normal(12).astype(np.float32)
    v = np.arange(12, dtype=np.float32)
    got = minijax.jit(lambda a, b, c: lax.sort((a, b, c), num_keys=2))(k1, k2, v)
    assert isinstance(got, tuple) and len(got) == 3
    order = np.lexsort((k2, k1))
    np.testing.assert_array_equal(np.asarray(got[0]), k1[order])
    np.testing.assert_array_equal(np.asarray(got[1]), k2[order])
    np.testing.assert_array_equal(np.asarray(got[2]), v[order])
    # Only the first key: ties in k1 keep the input order (stable).
    _, v1 = lax.sort((k1, v), num_keys=1)
    np.testing.assert_array_equal(np.asarray(v1), v[np.argsort(k1, kind="stable")])


def test_sort_key_val_and_unstable():
    keys = RNG.standard_normal((3, 5)).astype(np.float32)
    vals = RNG.integers(0, 100, (3, 5)).astype(np.int32)
    k, v = lax.sort_key_val(keys, vals, dimension=0)
    order = np.argsort(keys, axis=0)
    np.testing.assert_array_equal(np.asarray(k), np.take_along_axis(keys, order, 0))
    np.testing.assert_array_equal(np.asarray(v), np.take_along_axis(vals, order, 0))
    wk, wv = jax.lax.sort_key_val(keys, vals, dimension=0)
    np.testing.assert_array_equal(np.asarray(k), np.asarray(wk))
    np.testing.assert_array_equal(np.asarray(v), np.asarray(wv))
    unstable = lax.sort(keys, is_stable=False)
    np.testing.assert_array_equal(np.asarray(unstable), np.sort(keys, -1))


def test_sort_jaxpr_matches_jax():
    x, i = np.ones((3, 4), np.float32), np.ones((3, 4), np.int32)
    got = str(minijax.make_jaxpr(lambda x, i: lax.sort((x, i), dimension=0, num_keys=1))(x, i))
    want = str(jax.make_jaxpr(lambda x, i: jax.lax.sort((x, i), dimension=0, num_keys=1))(x, i))
    assert got == want


def test_sort_errors():
    with pytest.raises(TypeError, match=r"sort: all operands must have the same shape.*"
                                        r"f32\[3\], i32\[4\]"):
        lax.sort((np.ones(3, np.float32), np.ones(4, np.int32)))
    with pytest.raises(ValueError, match=r"num_keys=3"):
        lax.sort((np.ones(3), np.ones(3)), num_keys=3)
    with pytest.raises(ValueError, match=r"dimension 2 is out of bounds"):
        lax.sort(np.ones((2, 2)), dimension=2)
    with pytest.raises(ValueError, match=r"rank 0"):
        lax.sort(np.float32(1.0))
