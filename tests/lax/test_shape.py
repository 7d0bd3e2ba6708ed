"""Shape primitives (minijax.lax.shape) against jax.lax: values, dtypes, jaxprs and errors."""

import jax
import ml_dtypes
import numpy as np
import pytest
from jax import lax as jlax

import minijax
from minijax import lax

RNG = np.random.default_rng(0)
DTYPES = [np.float32, np.int32, np.bool_, ml_dtypes.bfloat16]


def _data(dtype, shape):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return RNG.random(shape) > 0.5
    if dt.kind in "iu":
        return RNG.integers(0, 9, size=shape).astype(dt)
    return RNG.uniform(-3, 3, size=shape).astype(dt)


def _same(ours, theirs):
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype
    assert ours.weak_type == theirs.weak_type
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


# (name, function taking the lax module and an operand)
CASES = [
    ("reshape", lambda L, x: L.reshape(x, (3, 8))),
    ("reshape_dims", lambda L, x: L.reshape(x, (6, 4), (2, 0, 1))),
    ("transpose", lambda L, x: L.transpose(x, (2, 0, 1))),
    ("rev", lambda L, x: L.rev(x, (0, 2))),
    ("squeeze", lambda L, x: L.squeeze(L.reshape(x, (2, 1, 3, 4, 1)), (1, -1))),
    ("expand_dims", lambda L, x: L.expand_dims(x, (0, 2, -1))),
    ("broadcast", lambda L, x: L.broadcast(x, (2, 1))),
    ("broadcast_in_dim", lambda L, x: L.broadcast_in_dim(x[:, :1], (5, 2, 3, 4), (1, 2, 3))),
    ("concatenate", lambda L, x: L.concatenate([x, x[:, :1], x[:, 1:]], 1)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_shape_ops_match_jax(name, fn, dtype):
    x = _data(dtype, (2, 3, 4))
    theirs = fn(jlax, jax.numpy.asarray(x))
    _same(fn(lax, x), theirs)
    _same(minijax.jit(lambda v: fn(lax, v))(x), theirs)


@pytest.mark.parametrize("config", [
    [(1, 2, 0), (0, 0, 0)],
    [(1, -1, 1), (0, 2, 0)],
    [(-2, -1, 0), (2, -3, 2)],
    [(0, 0, 3), (-1, 0, 1)],
])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_pad_matches_jax(config, dtype):
    x = _data(dtype, (3, 4))
    value = np.asarray(1, dtype)
    theirs = jlax.pad(x, value, config)
    _same(lax.pad(x, value, config), theirs)
    _same(minijax.jit(lambda v, p: lax.pad(v, p, config))(x, value), theirs)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.uint8, np.complex64,
                                   ml_dtypes.bfloat16])
def test_iota_matches_jax(dtype):
    _same(lax.iota(dtype, 5), jlax.iota(dtype, 5))
    _same(lax.broadcasted_iota(dtype, (2, 3, 4), 1), jlax.broadcasted_iota(dtype, (2, 3, 4), 1))
    _same(minijax.jit(lambda: lax.broadcasted_iota(dtype, (3, 2), -1))(),
          jlax.broadcasted_iota(dtype, (3, 2), 1))


def test_weak_scalar_stays_weak():
    s = minijax.numpy.asarray(2.0)
    assert s.weak_type
    for fn in (lambda L, v: L.reshape(v, (1, 1)), lambda L, v: L.expand_dims(v, (0,)),
               lambda L, v: L.broadcast(v, (3,)),
               lambda L, v: L.transpose(L.reshape(v, (1, 1)), (1, 0))):
        _same(fn(lax, s), fn(jlax, jax.numpy.asarray(2.0)))
        _same(minijax.jit(lambda v, fn=fn: fn(lax, v))(2.0),
              jax.jit(lambda v, fn=fn: fn(jlax, v))(2.0))


JAXPR_CASES = [
    ("reshape", lambda L, x: L.reshape(x, (4, 6))),
    ("transpose", lambda L, x: L.transpose(x, (1, 0, 2))),
    ("squeeze", lambda L, x: L.squeeze(L.expand_dims(x, (0,)), (0,))),
    ("expand_dims", lambda L, x: L.expand_dims(x, (1, 3))),
    ("concatenate", lambda L, x: L.concatenate([x, x], 2)),
    ("pad", lambda L, x: L.pad(x[0], 0.0, [(1, -1, 1), (0, 2, 0)])),
    ("rev", lambda L, x: L.rev(x, (0, 1))),
    ("broadcast", lambda L, x: L.broadcast(x, (5,))),
    ("iota", lambda L, x: L.broadcasted_iota(np.int32, (2, 3), 1)),
]


@pytest.mark.parametrize("name,fn", JAXPR_CASES, ids=[c[0] for c in JAXPR_CASES])
def test_jaxpr_text_matches_jax(name, fn):
    x = np.ones((2, 3, 4), np.float32)
    ours = str(minijax.make_jaxpr(lambda v: fn(lax, v))(x))
    theirs = str(jax.make_jaxpr(lambda v: fn(jlax, v))(x))
    # jax prints a trailing space after an equation with no operands (iota).
    assert ours == theirs.replace("] \n", "]\n")


def test_lowering_text():
    x = np.ones((2, 3), np.float32)
    text = minijax.jit(lambda v: (lax.pad(v, 0.0, [(1, -1, 1), (0, 2, 0)]), lax.rev(v, (1,)),
                                  lax.concatenate([v, v], 1), lax.transpose(v, (1, 0)),
                                  lax.broadcasted_iota(np.int32, (2, 3), 1))).lower(x).as_text()
    assert "low = [1, 0], high = [-1, 2], interior = [1, 0]" in text
    assert "stablehlo.reverse %arg0, dims = [1]" in text
    assert "stablehlo.concatenate %arg0, %arg0, dim = 1" in text
    assert "stablehlo.transpose %arg0, dims = [1, 0]" in text
    assert "stablehlo.iota dim = 1 : tensor<2x3xi32>" in text


def test_errors():
    x = np.ones((4, 5), np.float32)
    with pytest.raises(TypeError, match=r"transpose.*permutation \(0, 0\).*\(4, 5\)"):
        lax.transpose(x, (0, 0))
    with pytest.raises(ValueError, match=r"size not equal to one.*shape=\(4, 5\)"):
        lax.squeeze(x, (0,))
    with pytest.raises(ValueError, match="axis 2 is out of bounds for array of dimension 2"):
        lax.squeeze(x, (2,))
    with pytest.raises(TypeError, match=r"concatenate.*dimension 0 for shapes \(4, 5\), \(3, 4\)"):
        lax.concatenate([x, np.ones((3, 4), np.float32)], 0)
    with pytest.raises(TypeError, match="different numbers of dimensions"):
        lax.concatenate([x, np.ones(3, np.float32)], 0)
    with pytest.raises(TypeError, match="concatenate.*same dtype"):
        lax.concatenate([x, np.ones((4, 5), np.int32)], 0)
    with pytest.raises(ValueError, match="padding_config"):
        lax.pad(x, np.float32(0), [(0, 0, 0)])
    with pytest.raises(ValueError, match=r"not at least 0.*\(-2, 5\)"):
        lax.pad(x, np.float32(0), [(-3, -3, 0), (0, 0, 0)])
    with pytest.raises(ValueError, match="interior padding"):
        lax.pad(x, np.float32(0), [(0, 0, -1), (0, 0, 0)])
    with pytest.raises(TypeError, match="pad.*padding_value.*dtype"):
        lax.pad(x, np.int32(0), [(0, 0, 0), (0, 0, 0)])
    with pytest.raises(TypeError, match=r"rev.*dimensions \(2,\).*ndim 2"):
        lax.rev(x, (2,))
    with pytest.raises(TypeError, match=r"reshape.*\(4, 5\).*\(3, 7\)"):
        lax.reshape(x, (3, 7))
    with pytest.raises(TypeError, match="iota.*bool"):
        lax.iota(np.bool_, 3)
    with pytest.raises(TypeError, match="broadcast_in_dim"):
        lax.broadcast_in_dim(x, (3, 5), (0, 1))
    with pytest.raises(ValueError, match="repeated axis"):
        lax.expand_dims(x, (0, 0))


def test_errors_under_jit_name_primitive():
    f = minijax.jit(lambda v: lax.transpose(v, (1, 1)))
    with pytest.raises(TypeError, match=r"transpose.*operand types: f32\[4,5\]"):
        f(np.ones((4, 5), np.float32))
