"""minijax.numpy reductions, cumulative reductions, sort and argsort vs numpy and jax.numpy."""

import re

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

RNG = np.random.default_rng(3)

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.float16, ml_dtypes.bfloat16, np.float32]
NAMES = ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "argmax", "argmin",
         "count_nonzero", "cumsum", "cumprod", "sort", "argsort"]


def _rand(shape, dtype):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return RNG.integers(0, 4, shape).astype(dt)
    return RNG.uniform(-2, 2, shape).astype(dt)


def _all_reductions(mod):
    return lambda x: [getattr(mod, n)(x) for n in NAMES] + [
        mod.sum(x, axis=0), mod.mean(x, axis=1), mod.max(x, axis=-1), mod.argmax(x, axis=0),
        mod.cumsum(x, axis=1), mod.var(x, axis=0, ddof=1)]


def test_result_dtypes_and_values_match_jax():
    # One jit over every dtype: a single compile for minijax and one for jax.
    xs = [_rand((3, 4), dt) for dt in DTYPES]
    got = minijax.jit(lambda xs: [_all_reductions(jnp)(x) for x in xs])(xs)
    want = jax.jit(lambda xs: [_all_reductions(jjnp)(x) for x in xs])(xs)
    names = NAMES + ["sum0", "mean1", "max-1", "argmax0", "cumsum1", "var0"]
    for dt, got_dt, want_dt in zip(DTYPES, got, want):
        assert len(got_dt) == len(want_dt) == len(names)
        for name, g, w in zip(names, got_dt, want_dt):
            what = f"{name} of {np.dtype(dt).name}"
            assert g.dtype == w.dtype, what
            assert g.shape == w.shape, what
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                       rtol=2e-2, atol=1e-2, err_msg=what)


def test_axis_and_keepdims_match_numpy():
    x = _rand((3, 4, 5), np.float32)
    combos = [(name, axis, keepdims) for name in ["sum", "prod", "max", "min", "mean", "var", "std"]
              for axis in [None, 0, -1, (0, 2), ()] for keepdims in (False, True)]
    f = minijax.jit(lambda x: [getattr(jnp, n)(x, axis=a, keepdims=k) for n, a, k in combos])
    for got, (name, axis, keepdims) in zip(f(x), combos):
        want = getattr(np, name)(x, axis=axis, keepdims=keepdims)
        assert got.shape == want.shape, (name, axis, keepdims)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-6)
    # A few eagerly (one-op executables for each step).
    np.testing.assert_allclose(np.asarray(jnp.sum(x, axis=(0, 2))), x.sum((0, 2)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jnp.var(x, axis=-1, keepdims=True)),
                               x.var(-1, keepdims=True), rtol=1e-4)


def test_sum_dtype_argument_and_promotion():
    x = np.array([100, 100, 100], np.int8)
    assert jnp.sum(x).dtype == np.int32 and int(jnp.sum(x)) == 300
    assert jnp.sum(x, promote_integers=False).dtype == np.int8
    assert jnp.sum(x, dtype=np.float16).dtype == np.float16
    assert jnp.sum(np.array([True, True])).dtype == np.int32
    assert jnp.sum(np.array([True, True]), dtype=bool).dtype == np.bool_
    assert jnp.prod(np.ones(3, np.uint8)).dtype == np.uint32
    assert jnp.mean(np.arange(4)).dtype == np.float32
    assert jnp.mean(np.arange(4), dtype=np.int32).dtype == np.int32
    assert jnp.sum(2.0).dtype == jjnp.sum(2.0).dtype
    assert float(jnp.mean(3)) == 3.0
    h = np.full(4096, 1.0, np.float16)  # float16 sums accumulate in float32
    assert float(jnp.sum(h)) == 4096.0 and jnp.sum(h).dtype == np.float16


def test_x64_dtypes(x64):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = minijax.jit(lambda x: (jnp.sum(x), jnp.mean(x), jnp.argmax(x), jnp.cumsum(x > 1),
                                 jnp.argsort(x), jnp.var(x.astype(np.float32))))(x)
    want = jax.jit(lambda x: (jjnp.sum(x), jjnp.mean(x), jjnp.argmax(x), jjnp.cumsum(x > 1),
                              jjnp.argsort(x), jjnp.var(x.astype(np.float32))))(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    assert got[0].dtype == np.int64 and got[1].dtype == np.float32  # jax's to_inexact_dtype
    assert jnp.mean(np.arange(3, dtype=np.int64)).dtype == np.float64


def test_where_and_initial():
    x = _rand((3, 4), np.float32)
    mask = x > 0
    names = ["sum", "prod", "mean", "var", "std", "all", "any"]

    def f(mod):
        return lambda x, m: [getattr(mod, n)(x, axis=1, where=m) for n in names]

    for got, want in zip(minijax.jit(f(jnp))(x, mask), jax.jit(f(jjnp))(x, mask)):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
    got = jnp.max(x, axis=0, where=mask, initial=-10.0)
    np.testing.assert_allclose(np.asarray(got), np.max(x, axis=0, where=mask, initial=-10.0))
    assert float(jnp.min(x, initial=-5.0)) == -5.0
    np.testing.assert_allclose(np.asarray(jnp.sum(x, initial=10.0)), x.sum() + 10, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jnp.mean(x, where=mask, keepdims=True)),
                               np.mean(x, where=mask, keepdims=True), rtol=1e-5)


def test_var_std_ddof():
    x = _rand((4, 5), np.float32)
    f = minijax.jit(lambda x: [(jnp.var(x, axis=0, ddof=d), jnp.std(x, ddof=d))
                               for d in (0, 1, 3, 4, 5)])
    for (v, sd), ddof in zip(f(x), (0, 1, 3, 4, 5)):
        if ddof < 4:
            np.testing.assert_allclose(np.asarray(v), np.var(x, axis=0, ddof=ddof), rtol=1e-4)
            np.testing.assert_allclose(np.asarray(sd), np.std(x, ddof=ddof), rtol=1e-4)
        else:  # N - ddof <= 0 gives NaN, as in jax
            assert np.isnan(np.asarray(v)).all()
            assert np.isnan(np.asarray(jjnp.var(x, axis=0, ddof=ddof))).all()
    assert jnp.var(x, correction=1).dtype == np.float32
    xc = (x + 1j * x[::-1]).astype(np.complex64)
    got = jnp.var(xc, axis=1)
    assert got.dtype == jjnp.var(xc, axis=1).dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.var(xc, axis=1), rtol=1e-4)


def test_argmax_argmin_nan_ties_keepdims():
    x = np.array([[1.0, 5.0, 5.0], [np.nan, 2.0, np.nan], [0.0, -1.0, -1.0]], np.float32)
    for fn in ("argmax", "argmin"):
        for axis in (None, 0, 1, -1):
            got = getattr(jnp, fn)(x, axis=axis)
            np.testing.assert_array_equal(np.asarray(got), getattr(np, fn)(x, axis=axis))
            if axis in (None, 1):
                np.testing.assert_array_equal(np.asarray(got),
                                              np.asarray(getattr(jjnp, fn)(x, axis=axis)))
            got = getattr(jnp, fn)(x, axis=axis, keepdims=True)
            assert got.shape == getattr(np, fn)(x, axis=axis, keepdims=True).shape


def test_count_nonzero_and_all_any_axes():
    x = RNG.integers(0, 2, (3, 4, 2)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(jnp.count_nonzero(x, axis=(0, 2))),
                                  np.count_nonzero(x, axis=(0, 2)))
    assert jnp.count_nonzero(x, keepdims=True).shape == (1, 1, 1)
    np.testing.assert_array_equal(np.asarray(jnp.all(x, axis=1)), np.all(x, axis=1))
    np.testing.assert_array_equal(np.asarray(jnp.any(x, axis=(0, 1), keepdims=True)),
                                  np.any(x, axis=(0, 1), keepdims=True))


def test_cumsum_cumprod():
    x = _rand((3, 4), np.int32)
    np.testing.assert_array_equal(np.asarray(jnp.cumsum(x)), np.cumsum(x))
    np.testing.assert_array_equal(np.asarray(jnp.cumsum(x, axis=-1)), np.cumsum(x, axis=-1))
    np.testing.assert_array_equal(np.asarray(jnp.cumprod(x + 1, axis=0)), np.cumprod(x + 1, 0))
    got = jnp.cumsum(x, axis=0, dtype=np.float32)
    assert got.dtype == np.float32
    got = jnp.cumsum(np.array([-1, 1, 0, 2]), dtype=bool)
    np.testing.assert_array_equal(np.asarray(got), jjnp.cumsum(np.array([-1, 1, 0, 2]),
                                                               dtype=bool))
    assert jnp.cumsum(np.array([True, True])).dtype == np.int32
    assert jnp.cumsum(np.int8(3)).shape == (1,)


def test_methods_on_arrays_and_tracers():
    x = _rand((3, 4), np.float32)
    y = np.ascontiguousarray(x.T)

    def methods(a):
        return [a.sum(), a.sum(0), a.mean(axis=1), a.max(), a.min(0), a.prod(1), a.var(),
                a.std(0), a.argmax(), a.argmin(1), a.all(), a.any(0), a.cumsum(1), a.dot(y),
                a.sort(0), a.argsort()]

    want = methods(x.copy())[:-2] + [np.sort(x, 0), np.argsort(x, kind="stable")]
    for got, w in zip(minijax.jit(methods)(x), want):  # methods of tracers
        assert got.shape == np.shape(w)
        np.testing.assert_allclose(np.asarray(got), w, rtol=1e-5, atol=1e-6)
    a = jnp.asarray(x)  # methods of concrete arrays
    for got, w in [(a.sum(0), x.sum(0)), (a.argmax(), x.argmax()), (a.dot(y), x @ y),
                   (a @ y, x @ y), (y @ a, y @ x)]:
        assert isinstance(got, minijax.Array)
        np.testing.assert_allclose(np.asarray(got), w, rtol=1e-5, atol=1e-6)


def test_jaxpr_text_matches_jax():
    x = np.ones((3, 4), np.float32)
    for f, g in [(lambda x: x.sum(0), lambda x: x.sum(0)),
                 (jnp.argmax, jjnp.argmax),
                 (lambda x: jnp.max(x, axis=1), lambda x: jjnp.max(x, axis=1))]:
        assert str(minijax.make_jaxpr(f)(x)) == str(jax.make_jaxpr(g)(x))
    xb = np.ones((2, 3), bool)
    assert (str(minijax.make_jaxpr(jnp.sum)(xb)) == str(jax.make_jaxpr(jjnp.sum)(xb)))


def test_reduction_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match="axis 2 is out of bounds for array of dimension 2"):
        jnp.sum(x, axis=2)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        jnp.mean(x, axis=(0, -2))
    with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
        jnp.max(np.ones((0, 3), np.float32), axis=0)
    with pytest.raises(ValueError, match="to use a where mask one has to specify 'initial'"):
        jnp.min(x, where=x > 0)
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        jnp.argmax(np.ones(0, np.float32))
    with pytest.raises(TypeError, match="sum requires ndarray or scalar arguments, got list"):
        jnp.sum([1, 2, 3])
    with pytest.raises(ValueError, match="where must be None or a boolean array"):
        jnp.sum(x, where=x)
    with pytest.raises(ValueError, match="dtype argument to jnp.std must be inexact"):
        jnp.std(x, dtype=np.int32)
    assert float(jnp.max(np.ones((0, 3), np.float32), initial=1.0)) == 1.0


# ---- sort / argsort --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.float16])
def test_sort_argsort_match_numpy(dtype):
    x = _rand((4, 5), dtype)
    for axis in (-1, 0, None):
        np.testing.assert_array_equal(np.asarray(jnp.sort(x, axis=axis)),
                                      np.sort(x, axis=axis))
        got = jnp.argsort(x, axis=axis)
        assert got.dtype == jjnp.argsort(x, axis=axis).dtype
        np.testing.assert_array_equal(np.asarray(got), np.argsort(x, axis=axis, kind="stable"))


def test_sort_argsort_descending_stable_and_nan():
    x = np.array([3.0, np.nan, 1.0, 3.0, -0.0, 0.0, 1.0], np.float32)
    for kw in ({}, {"descending": True}, {"stable": False}):
        np.testing.assert_array_equal(np.asarray(jnp.sort(x, **kw)),
                                      np.asarray(jjnp.sort(x, **kw)))
    for kw in ({}, {"descending": True}):
        np.testing.assert_array_equal(np.asarray(jnp.argsort(x, **kw)),
                                      np.asarray(jjnp.argsort(x, **kw)))
    assert jnp.argsort(x, dtype=np.int16).dtype == np.int16
    f = minijax.jit(lambda x: jnp.argsort(x, descending=True))
    np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(jjnp.argsort(x, descending=True)))


def test_argsort_jaxpr_and_errors():
    x = np.ones((3, 4), np.float32)
    got = str(minijax.make_jaxpr(lambda x: jnp.argsort(x))(x))
    assert re.search(r"iota\[dimension=1 dtype=int32 shape=\(3, 4\)", got)
    assert "sort[dimension=1 is_stable=True num_keys=1] a b" in got
    with pytest.raises(TypeError, match="'kind' argument to sort is not supported"):
        jnp.sort(x, kind="quicksort")
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        jnp.argsort(x, axis=2)
