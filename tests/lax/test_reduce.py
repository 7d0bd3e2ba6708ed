"""lax reductions, argmax/argmin, cumulative reductions and stop_gradient vs numpy and jax."""

import jax
import ml_dtypes
import numpy as np
import pytest

import minijax
from minijax import lax

RNG = np.random.default_rng(0)
AXES = [(0,), (1,), (0, 1), ()]


def _data(dtype, shape=(3, 4)):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return RNG.integers(0 if dt.kind == "u" else -5, 6, shape).astype(dt)
    return RNG.uniform(-2, 2, shape).astype(dt)


def _ops_for(dtype):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return ["reduce_max", "reduce_min", "reduce_and", "reduce_or"]
    ops = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"]
    if dt.kind in "iu":
        ops += ["reduce_and", "reduce_or"]
    return ops


_NUMPY = {"reduce_sum": np.sum, "reduce_prod": np.prod, "reduce_max": np.max,
          "reduce_min": np.min, "reduce_and": np.bitwise_and.reduce,
          "reduce_or": np.bitwise_or.reduce}


def _numpy_reduce(name, x, axes):
    if not axes:
        return x
    fn = _NUMPY[name]
    if name in ("reduce_and", "reduce_or"):
        out = x
        for a in sorted(axes, reverse=True):
            out = fn(out, axis=a)
        return out
    return fn(x, axis=axes).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.float16])
def test_reductions_jit_match_numpy_and_jax(dtype):
    x = _data(dtype)
    names = _ops_for(dtype)

    def f(mod):
        return lambda x: [getattr(mod, n)(x, axes) for n in names for axes in AXES]

    got = minijax.jit(f(lax))(x)
    want = jax.jit(f(jax.lax))(x)
    i = 0
    for n in names:
        for axes in AXES:
            g, w = np.asarray(got[i]), np.asarray(want[i])
            assert g.dtype == w.dtype == np.dtype(dtype), (n, axes)
            assert g.shape == w.shape, (n, axes)
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=2e-3)
            np.testing.assert_allclose(g.astype(np.float64),
                                       _numpy_reduce(n, x, axes).astype(np.float64), rtol=2e-3)
            i += 1


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
def test_reductions_eager(name):
    x = _data(np.float32, (2, 3, 4))
    out = getattr(lax, name)(x, (0, 2))
    assert isinstance(out, minijax.Array)
    assert out.shape == (3,) and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), _numpy_reduce(name, x, (0, 2)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out), getattr(jax.lax, name)(x, (0, 2)), rtol=1e-5)


def test_reductions_bfloat16_and_complex():
    xb = _data(ml_dtypes.bfloat16)
    got = minijax.jit(lambda x: (lax.reduce_sum(x, (1,)), lax.reduce_max(x, (0,))))(xb)
    want = jax.jit(lambda x: (jax.lax.reduce_sum(x, (1,)), jax.lax.reduce_max(x, (0,))))(xb)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == ml_dtypes.bfloat16
        np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(w, np.float32),
                                   rtol=2e-2)
    xc = (_data(np.float32) + 1j * _data(np.float32)).astype(np.complex64)
    got = lax.reduce_sum(xc, (0,))
    assert got.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), xc.sum(0), rtol=1e-5)


def test_reductions_of_empty_axes_give_identity():
    x = np.zeros((0, 3), np.float32)
    f = minijax.jit(lambda x: (lax.reduce_sum(x, (0,)), lax.reduce_prod(x, (0,)),
                               lax.reduce_max(x, (0,)), lax.reduce_min(x, (0,))))
    s, p, mx, mn = f(x)
    np.testing.assert_array_equal(s, np.zeros(3))
    np.testing.assert_array_equal(p, np.ones(3))
    np.testing.assert_array_equal(mx, np.full(3, -np.inf))
    np.testing.assert_array_equal(mn, np.full(3, np.inf))
    xi = np.zeros((0, 2), np.int32)
    np.testing.assert_array_equal(lax.reduce_max(xi, (0,)), np.full(2, np.iinfo(np.int32).min))
    np.testing.assert_array_equal(lax.reduce_and(xi, (0,)), np.full(2, -1))


def test_reduce_max_propagates_nan():
    x = np.array([[1.0, np.nan, 3.0], [0.0, 1.0, 2.0]], np.float32)
    np.testing.assert_array_equal(lax.reduce_max(x, (1,)), np.array([np.nan, 2.0], np.float32))
    np.testing.assert_array_equal(lax.reduce_min(x, (1,)), jax.lax.reduce_min(x, (1,)))


def test_reduce_weak_type_preserved():
    closed = minijax.make_jaxpr(lambda x: lax.reduce_sum(x * 2.0, (0,)))(np.ones(3, np.float32))
    assert closed.out_avals[0].weak_type is False
    closed = minijax.make_jaxpr(lambda: lax.reduce_sum(lax.broadcast_in_dim(2.0, (3,), ()),
                                                       (0,)))()
    assert closed.out_avals[0].weak_type is True


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_max", "reduce_and"])
def test_reduce_jaxpr_matches_jax(name):
    x = _data(np.int32, (3, 4))
    got = str(minijax.make_jaxpr(lambda x: getattr(lax, name)(x, (1,)))(x))
    want = str(jax.make_jaxpr(lambda x: getattr(jax.lax, name)(x, (1,)))(x))
    assert got == want


def test_reduce_lowers_to_stablehlo_reduce():
    text = minijax.jit(lambda x: lax.reduce_min(x, (0,))).lower(_data(np.int32)).as_text()
    assert "stablehlo.reduce" in text and "stablehlo.minimum" in text
    assert "2147483647" in text  # the int32 identity of min


def test_reduce_errors():
    with pytest.raises(TypeError, match=r"reduce_sum.*boolean|reduce_sum.*bool"):
        lax.reduce_sum(np.ones(3, bool), (0,))
    # bad axes are a ValueError, as in jax
    with pytest.raises(ValueError, match=r"reduce_max.*axes \(2,\) out of range.*f32\[3,4\]"):
        lax.reduce_max(np.ones((3, 4), np.float32), (2,))
    with pytest.raises(ValueError, match=r"reduce_min.*duplicate"):
        minijax.jit(lambda x: lax.reduce_min(x, (0, 0)))(np.ones((3, 4), np.float32))
    with pytest.raises(TypeError, match=r"reduce_or.*float32"):
        lax.reduce_or(np.ones(3, np.float32), (0,))


# ---- argmax / argmin ----------------------------------------------------------------------

ARG_CASES = [
    np.array([1.0, 3.0, 3.0, 2.0], np.float32),                      # ties: first wins
    np.array([1.0, np.nan, 3.0, np.nan], np.float32),                # NaN wins, first NaN
    np.array([np.nan, np.nan], np.float32),
    np.array([-np.inf, -np.inf, -np.inf], np.float32),
    np.array([np.inf, 2.0, np.inf], np.float32),
    np.array([-0.0, 0.0, -0.0], np.float32),
    np.array([3, 7, 7, -1, -1], np.int32),
    np.array([False, True, True], bool),
    np.array([5, 0, 5, 0], np.uint8),
]


@pytest.mark.parametrize("x", ARG_CASES, ids=lambda x: str(x.tolist()))
def test_argmax_argmin_semantics(x):
    f = minijax.jit(lambda x: (lax.argmax(x, 0, np.int32), lax.argmin(x, 0, np.int32)))
    amax, amin = f(x)
    assert amax.dtype == amin.dtype == np.int32 and amax.shape == ()
    assert int(amax) == np.argmax(x) == int(jax.lax.argmax(x, 0, np.int32))
    assert int(amin) == np.argmin(x) == int(jax.lax.argmin(x, 0, np.int32))
    assert int(lax.argmax(x, 0, np.int32)) == int(amax)  # eager


def test_argmax_along_axes_and_index_dtype():
    x = RNG.integers(0, 3, (4, 5, 6)).astype(np.float32)
    x[1, 2, 3] = np.nan
    for axis in (0, 1, 2, -1):
        got = lax.argmax(x, axis, np.int32)
        np.testing.assert_array_equal(got, np.argmax(x, axis))
        np.testing.assert_array_equal(lax.argmin(x, axis, np.int32), np.argmin(x, axis))
    got = lax.argmin(x, 1, np.uint8)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, jax.lax.argmin(x, 1, np.uint8))


def test_argmax_jaxpr_matches_jax():
    x = np.ones((3, 4), np.float32)
    got = str(minijax.make_jaxpr(lambda x: lax.argmax(x, 1, np.int32))(x))
    want = str(jax.make_jaxpr(lambda x: jax.lax.argmax(x, 1, np.int32))(x))
    assert got == want


def test_argmax_errors():
    with pytest.raises(TypeError, match=r"argmax.*empty"):
        lax.argmax(np.ones((0, 3), np.float32), 0, np.int32)
    with pytest.raises(TypeError, match=r"argmin.*index_dtype"):
        lax.argmin(np.ones(3, np.float32), 0, np.float32)
    with pytest.raises(ValueError, match=r"axis 2 is out of bounds"):
        lax.argmax(np.ones((2, 3), np.float32), 2, np.int32)


# ---- cumulative reductions ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_cumulative_match_jax(dtype):
    x = _data(dtype, (4, 5))
    names = ["cumsum", "cumprod", "cummax", "cummin"]
    params = [(0, False), (1, False), (0, True), (1, True)]

    def f(mod):
        return lambda x: [getattr(mod, n)(x, axis=a, reverse=r) for n in names for a, r in params]

    got = minijax.jit(f(lax))(x)
    want = jax.jit(f(jax.lax))(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.dtype(dtype)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got[1]), np.cumsum(x, 1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(got[2]), np.cumsum(x[::-1], 0)[::-1], rtol=1e-5)


def test_cumulative_eager_and_edge_sizes():
    x = np.arange(1, 6, dtype=np.float32)
    np.testing.assert_allclose(lax.cumprod(x), np.cumprod(x))
    np.testing.assert_allclose(lax.cummax(x[::-1].copy()), np.maximum.accumulate(x[::-1]))
    np.testing.assert_array_equal(lax.cumsum(np.ones((0, 2), np.float32)), np.ones((0, 2)))
    np.testing.assert_array_equal(lax.cumsum(np.ones((1, 2), np.float32)), np.ones((1, 2)))
    text = minijax.jit(lambda x: lax.cumsum(x)).lower(x).as_text()
    assert "stablehlo.reduce_window" in text


def test_cumulative_jaxpr_and_errors():
    x = np.ones((3, 4), np.float32)
    got = str(minijax.make_jaxpr(lambda x: lax.cumsum(x, 1, reverse=True))(x))
    want = str(jax.make_jaxpr(lambda x: jax.lax.cumsum(x, 1, reverse=True))(x))
    assert got == want
    with pytest.raises(TypeError, match=r"cumsum.*bool"):
        lax.cumsum(np.ones(3, bool))
    with pytest.raises(ValueError, match=r"out of bounds"):
        lax.cummax(x, 2)


# ---- stop_gradient --------------------------------------------------------------------------


def test_stop_gradient_is_identity_primitive():
    x = _data(np.float32)
    np.testing.assert_array_equal(lax.stop_gradient(x), x)
    np.testing.assert_array_equal(minijax.jit(lambda x: lax.stop_gradient(x) * 2)(x), x * 2)
    got = str(minijax.make_jaxpr(lax.stop_gradient)(x))
    assert got == str(jax.make_jaxpr(jax.lax.stop_gradient)(x))
    tree = lax.stop_gradient({"a": x, "b": (x, np.int32(3))})
    np.testing.assert_array_equal(tree["b"][0], x)
    assert int(tree["b"][1]) == 3
