"""Elementwise minijax.numpy functions against numpy and jax.numpy."""

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

RNG = np.random.default_rng(0)
SHAPES = [(), (5,), (2, 3)]


def _data(dtype, shape, positive=False):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return RNG.random(shape) > 0.5
    if dt.kind in "iu":
        lo = 1 if positive else (0 if dt.kind == "u" else -5)
        return RNG.integers(lo, 6, size=shape).astype(dt)
    x = RNG.uniform(0.1 if positive else -2, 2, size=shape)
    return np.asarray(x).astype(dt)


def _check(name, args, rtol=None, jit=False):
    ours_f = getattr(jnp, name)
    theirs_f = getattr(jjnp, name)
    if jit:
        ours_f = minijax.jit(ours_f)
        theirs_f = jax.jit(theirs_f)
    ours = ours_f(*args)
    theirs = theirs_f(*args)
    assert ours.dtype == theirs.dtype, (name, ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape
    assert ours.weak_type == theirs.weak_type
    if rtol is None:
        rtol = 1e-2 if ours.dtype in (np.float16, ml_dtypes.bfloat16) else 2e-6
    np.testing.assert_allclose(np.asarray(ours).astype(np.float64) if ours.dtype != np.bool_
                               else np.asarray(ours),
                               np.asarray(theirs).astype(np.float64)
                               if theirs.dtype != np.bool_ else np.asarray(theirs),
                               rtol=rtol, atol=1e-6)


UNARY_FLOAT = ["sin", "cos", "tan", "tanh", "exp", "exp2", "expm1", "log1p", "sqrt", "log",
               "log2", "log10", "cbrt", "reciprocal", "square", "floor", "ceil", "round",
               "sign", "abs", "negative", "positive", "isnan", "isfinite", "isinf"]


@pytest.mark.parametrize("name", UNARY_FLOAT)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_unary(name, dtype):
    positive = name in ("sqrt", "log", "log2", "log10", "reciprocal")
    x = _data(dtype, (5,), positive)
    _check(name, [x])


@pytest.mark.parametrize("name", ["sin", "exp", "abs", "square", "negative", "isnan"])
@pytest.mark.parametrize("shape", SHAPES)
def test_unary_shapes_jit(name, shape):
    _check(name, [_data(np.float32, shape)], jit=True)


def test_unary_bfloat16():
    x = _data(ml_dtypes.bfloat16, (4,))
    for name in ("sin", "exp", "tanh", "abs", "square"):
        _check(name, [x])


BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
          "mod", "power", "maximum", "minimum", "arctan2", "equal", "not_equal", "less",
          "less_equal", "greater", "greater_equal", "fmod"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_binary(name, dtype):
    if name == "arctan2" and dtype == np.int32:
        pytest.skip("covered by float")
    x = _data(dtype, (2, 3))
    y = _data(dtype, (2, 3), positive=name in ("floor_divide", "remainder", "mod", "divide",
                                               "true_divide", "fmod", "power"))
    _check(name, [x, y])


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "less", "floor_divide",
                                  "remainder", "power"])
def test_binary_broadcasting_and_scalars(name):
    x = _data(np.float32, (2, 3), positive=True)
    _check(name, [x, _data(np.float32, (3,), positive=True)], jit=True)
    _check(name, [x, _data(np.float32, (2, 1), positive=True)])
    _check(name, [x, 2.0])
    _check(name, [2, x])
    _check(name, [np.int32(3), 2.5])


@pytest.mark.parametrize("a,b", [(np.int8, np.int16), (np.uint8, np.int8), (np.float16,
                                                                             np.int32),
                                 (np.bool_, np.float32), (np.int32, np.float16)])
def test_binary_mixed_dtypes(a, b):
    _check("add", [_data(a, (4,)), _data(b, (4,))])
    _check("multiply", [_data(a, (4,)), _data(b, (4,))])


def test_floor_divide_and_mod_signs():
    x = np.array([-7, -3, 3, 7, 0], np.int32)
    y = np.array([2, -2, -2, 2, 3], np.int32)
    np.testing.assert_array_equal(np.asarray(jnp.floor_divide(x, y)), np.floor_divide(x, y))
    np.testing.assert_array_equal(np.asarray(jnp.remainder(x, y)), np.remainder(x, y))
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    np.testing.assert_allclose(np.asarray(jnp.remainder(xf, yf)), np.remainder(xf, yf))
    np.testing.assert_allclose(np.asarray(jnp.floor_divide(xf, yf)), np.floor_divide(xf, yf))


def test_integer_power_array_exponent():
    x = np.array([2, 3, -2, 5], np.int32)
    y = np.array([0, 3, 5, 2], np.int32)
    np.testing.assert_array_equal(np.asarray(jnp.power(x, y)), np.power(x, y))
    np.testing.assert_array_equal(np.asarray(jnp.power(x, 3)), x ** 3)
    np.testing.assert_allclose(np.asarray(jnp.power(np.float32(2), -2)), 0.25)


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
                                  "right_shift"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_bitwise(name, dtype):
    x = _data(dtype, (6,), positive=True)
    y = np.full((6,), 1, dtype)
    _check(name, [x, y])


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical(name):
    x = _data(np.bool_, (6,))
    y = _data(np.int32, (6,))
    _check(name, [x, y])
    _check("logical_not", [y])
    _check("bitwise_not", [x])


def test_where_and_clip():
    x = _data(np.float32, (2, 3))
    _check("where", [x > 0, x, 0.0])
    _check("where", [x > 0, 1, x.astype(np.int32)])
    ours = jnp.clip(x, -0.5, 0.5)
    np.testing.assert_allclose(np.asarray(ours), np.clip(x, -0.5, 0.5))
    np.testing.assert_allclose(np.asarray(jnp.clip(x, max=0.0)), np.minimum(x, 0.0))


def test_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5], np.float32)
    for name in ("isnan", "isfinite", "isinf", "sign", "abs", "floor", "round"):
        _check(name, [x])
    np.testing.assert_array_equal(np.asarray(jnp.round(np.array([0.5, 1.5, 2.5, -0.5],
                                                                np.float32))),
                                  [0.0, 2.0, 2.0, -0.0])


def test_operators_on_arrays_match_jax():
    x = _data(np.float32, (3,), positive=True)
    a, ja = jnp.asarray(x), jjnp.asarray(x)
    cases = [lambda v: v + 1, lambda v: 1 - v, lambda v: v * v, lambda v: v / 2,
             lambda v: 2 / v, lambda v: v // 0.3, lambda v: v % 0.3, lambda v: v ** 2,
             lambda v: 2 ** v, lambda v: -v, lambda v: abs(v), lambda v: v > 0.5,
             lambda v: v <= 0.5, lambda v: v == v, lambda v: v != 1.0]
    for case in cases:
        ours, theirs = case(a), case(ja)
        assert ours.dtype == theirs.dtype
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
    i = jnp.asarray(np.array([1, 2, 3], np.int32))
    np.testing.assert_array_equal(np.asarray(i & 1), [1, 0, 1])
    np.testing.assert_array_equal(np.asarray(i | 4), [5, 6, 7])
    np.testing.assert_array_equal(np.asarray(i ^ 1), [0, 3, 2])
    np.testing.assert_array_equal(np.asarray(~i), ~np.array([1, 2, 3], np.int32))
    np.testing.assert_array_equal(np.asarray(i << 1), [2, 4, 6])
    np.testing.assert_array_equal(np.asarray(i >> 1), [0, 1, 1])


def test_bool_arithmetic_errors_like_jax():
    b = jnp.asarray(np.array([True, False]))
    with pytest.raises(TypeError):
        jnp.subtract(b, b)
    with pytest.raises(TypeError):
        jnp.negative(b)
