"""numpy functions that run as one jitted program when called eagerly (stages.eager.Fused)."""

import logging

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.config import config
from minijax.experimental.xla_metadata import set_xla_metadata
from minijax.runtime.executable import compile_count
from minijax.stages.eager import Fused


def test_eager_call_on_arrays_is_one_cached_program():
    x = jnp.arange(1, 7, dtype=jnp.int32) - 3  # negative and positive values
    y = jnp.full(6, 4, dtype=jnp.int32)
    assert isinstance(jnp.remainder, Fused)
    r = jnp.remainder(x, y)  # rem, lt, ne, and, select, add: one executable
    np.testing.assert_array_equal(r, np.remainder(np.asarray(x), 4))
    assert jnp.remainder.trace_count >= 1 and len(jnp.remainder._fast) >= 1
    before = compile_count()
    for _ in range(3):
        np.testing.assert_array_equal(jnp.remainder(x, y), np.remainder(np.asarray(x), 4))
        np.testing.assert_array_equal(x % y, np.remainder(np.asarray(x), 4))  # operator
    assert compile_count() == before


@pytest.mark.parametrize("fn,ref", [
    (jnp.sin, np.sin), (jnp.exp, np.exp), (jnp.negative, np.negative),
    (jnp.floor, np.floor), (jnp.isnan, np.isnan), (jnp.logical_not, np.logical_not),
])
def test_unary_matches_numpy_eagerly_and_under_jit(fn, ref):
    host = np.linspace(-2, 2, 7, dtype=np.float32)
    x = jnp.asarray(host)
    for out in (fn(x), fn(x), minijax.jit(fn)(x), fn(host), fn(1.5)):
        expected = ref(host) if np.shape(out) == host.shape else ref(np.float32(1.5))
        np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)


def test_mixed_arguments_take_the_plain_path():
    x = jnp.arange(4, dtype=jnp.int32)
    # Python scalars, NumPy arrays and integer exponents: a plain call, same results.
    np.testing.assert_array_equal(jnp.power(x, 3), np.arange(4) ** 3)
    np.testing.assert_array_equal(x ** 2, np.arange(4) ** 2)
    np.testing.assert_array_equal(jnp.add(x, np.ones(4, np.int32)), np.arange(4) + 1)
    assert (x * 2.0).dtype == np.float32  # weak scalar promotes as before
    with pytest.raises(TypeError, match="subtract is not defined for boolean"):
        jnp.subtract(jnp.ones(2, bool), jnp.ones(2, bool))


def test_traced_calls_record_primitives_not_a_jit():
    text = str(minijax.make_jaxpr(lambda a, b: jnp.remainder(jnp.sin(a), b))(1.0, 2.0))
    assert "jit[" not in text and "sin" in text and "rem" in text
    g = minijax.grad(lambda a: jnp.sin(a) * jnp.cos(a))(0.3)
    np.testing.assert_allclose(g, np.cos(0.6), rtol=1e-6)
    v = minijax.vmap(jnp.maximum)(jnp.arange(3.0), jnp.ones(3))
    np.testing.assert_array_equal(v, [1, 1, 2])


def test_metadata_context_tags_eager_ops():
    x = jnp.arange(3.0)
    with set_xla_metadata(stage="fwd"):
        y = jnp.sin(x)  # plain path: the eager primitive sees the context
        text = minijax.jit(lambda a: jnp.cos(a)).lower(x).as_text()
    np.testing.assert_allclose(y, np.sin(np.arange(3.0)), rtol=1e-6)
    assert 'stage = "fwd"' in text


def test_follows_x64_changes(request):
    a = jnp.ones(3, dtype=jnp.int32)
    b = jnp.arange(3)  # default int
    assert jnp.add(a, b).dtype == np.int32
    request.getfixturevalue("x64")
    b64 = jnp.arange(3)
    assert jnp.add(a, b64).dtype == np.int64


def test_not_reported_as_cache_misses(caplog):
    config.update("minijax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING, logger="minijax"):
            jnp.sin(jnp.ones((5, 7, 3)))  # a new signature for sin
            minijax.jit(lambda v: v + 1)(jnp.ones(2))
    finally:
        config.update("minijax_explain_cache_misses", False)
    messages = [r.getMessage() for r in caplog.records]
    assert any("<lambda>" in m for m in messages)  # user jits still explained
    assert not any("tracing sin" in m for m in messages), messages


def test_repr():
    assert repr(jnp.sin) == "<minijax.numpy function sin>"
    assert jnp.add.__name__ == "add"


def test_python_scalars_use_cached_device_constants():
    x = jnp.arange(1.0, 5.0)
    before = None
    for value in (2.0, 2.0, 3.0, 2.0, 3.0):
        np.testing.assert_allclose(x * value, np.arange(1.0, 5.0) * value)
        np.testing.assert_allclose(value * x, np.arange(1.0, 5.0) * value)
        if before is None:
            before = compile_count()
    assert compile_count() == before  # one program per signature, not per value
    # Signed zeros and NaN are different constants.
    np.testing.assert_array_equal(np.asarray(x / 0.0), np.full(4, np.inf, np.float32))
    np.testing.assert_array_equal(np.asarray(x / -0.0), np.full(4, -np.inf, np.float32))
    assert np.isnan(np.asarray(x * float("nan"))).all()
    # A Python int too big for int32 still works eagerly (the plain path folds it).
    np.testing.assert_allclose(x * 2**40, np.arange(1.0, 5.0) * 2.0**40, rtol=1e-6)
    i = jnp.arange(3)
    assert (i + 1).dtype == np.int32 and (i + True).dtype == np.int32
    assert (i * 2.5).dtype == np.float32


def test_reductions_called_eagerly():
    x = jnp.arange(12.0).reshape(3, 4)
    host = np.arange(12.0).reshape(3, 4)
    assert isinstance(jnp.sum, Fused)
    for _ in range(2):
        np.testing.assert_allclose(x.sum(), host.sum())
        np.testing.assert_allclose(x.mean(), host.mean())
        np.testing.assert_allclose(jnp.var(x), host.var(), rtol=1e-6)
        assert int(jnp.argmax(x)) == 11
        # Non-array positional parameters and keywords: the plain call.
        np.testing.assert_allclose(x.sum(0), host.sum(0))
        np.testing.assert_allclose(jnp.sum(x, axis=1, keepdims=True), host.sum(1, keepdims=True))
        np.testing.assert_allclose(jnp.std(x, 0), host.std(0), rtol=1e-6)
    before = compile_count()
    x.sum(), x.mean(), x.sum(0)
    assert compile_count() == before


def test_linear_algebra_where_and_clip_called_eagerly():
    host = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    x = jnp.asarray(host)
    for fn in (jnp.matmul, jnp.dot, jnp.outer, jnp.inner, jnp.vdot, jnp.where, jnp.clip):
        assert isinstance(fn, Fused) or fn is jnp.where
    for _ in range(2):
        np.testing.assert_allclose(x @ x.T, host @ host.T, rtol=1e-6)
        np.testing.assert_allclose(jnp.dot(x, x.T), host @ host.T, rtol=1e-6)
        np.testing.assert_allclose(jnp.outer(x[0], x[1]), np.outer(host[0], host[1]), rtol=1e-6)
        np.testing.assert_allclose(jnp.where(x > 0, x, 0.0), np.where(host > 0, host, 0))
        np.testing.assert_allclose(jnp.clip(x, -0.5, 0.5), np.clip(host, -0.5, 0.5))
        np.testing.assert_allclose(jnp.clip(x, None, 0.5), np.clip(host, None, 0.5))
        np.testing.assert_allclose(jnp.matmul(x, x.T, precision="highest"), host @ host.T,
                                   rtol=1e-6)  # keyword: the plain call


def test_python_scalars_convert_as_on_the_plain_path():
    # An int meeting another integer type is range-checked on the host (jit of the same
    # code raises too), never wrapped on the device; a float meeting float16 is rounded
    # once. Fast-path entries must not let those through later either.
    xu8 = jnp.asarray(np.array([1, 2], np.uint8))
    np.testing.assert_array_equal(xu8 + 3, [4, 5])
    for _ in range(2):
        with pytest.raises(OverflowError, match="300"):
            xu8 + 300
        with pytest.raises(OverflowError, match="257"):
            xu8 == 257  # noqa: B015
        with pytest.raises(OverflowError):
            jnp.where(xu8 > 1, xu8, 300)
    assert (xu8 + jnp.asarray(3)).dtype == np.uint8  # a weak int array is fine
    x16 = jnp.asarray(np.ones(2, np.float16))
    v = 1 + 2**-11 + 2**-40  # rounds up to 1 + 2**-10 in float16, down in two steps
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(x16 * v), np.ones(2, np.float16) * v)
        np.testing.assert_array_equal(np.asarray(x16 * v), np.full(2, 1 + 2**-10, np.float16))


def test_nan_scalars_share_one_constant():
    from minijax.runtime import transfer
    x = jnp.arange(3.0)
    x * float("nan")
    n = len(transfer.CONSTANTS)
    for _ in range(20):
        assert np.isnan(np.asarray(x * float("nan"))).all()
    assert len(transfer.CONSTANTS) == n


def test_floor_divide_of_python_ints_keeps_the_weak_type_like_jax():
    import jax.numpy as jjnp
    for a, b in [(7, -2), (-7, 2), (6, 3)]:
        ours, theirs = jnp.floor_divide(a, b), jjnp.floor_divide(a, b)
        assert int(ours) == int(theirs) and ours.weak_type == theirs.weak_type
