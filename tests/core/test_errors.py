"""Errors users see: they name what was wrong, where, and how to fix it."""

import re

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax


def test_bool_of_tracer_names_argument_and_fix():
    @minijax.jit
    def f(x, scale):
        if x > 0:
            return x * scale
        return x

    with pytest.raises(minijax.ConcretizationTypeError) as info:
        f(1.0, 2.0)
    msg = str(info.value)
    assert "`x`" in msg and "`scale`" not in msg
    assert "static_argnums" in msg and "lax.cond" in msg
    assert isinstance(info.value, minijax.TracerBoolConversionError)


def test_int_of_tracer():
    with pytest.raises(minijax.TracerIntegerConversionError, match="`n`"):
        minijax.jit(lambda x, n: x * int(n))(1.0, 3)


def test_numpy_asarray_of_tracer():
    with pytest.raises(minijax.TracerArrayConversionError, match="numpy.asarray"):
        minijax.jit(lambda x: np.asarray(x))(jnp.ones(3))


def test_static_argnums_fixes_concretization():
    f = minijax.jit(lambda x, n: x * int(n), static_argnums=1)
    assert float(f(2.0, 3)) == 6.0


def test_leaked_tracer_is_reported_with_origin():
    leaked = []

    @minijax.jit
    def f(x):
        y = jnp.sin(x)
        leaked.append(y)
        return y

    f(1.0)
    with pytest.raises(minijax.UnexpectedTracerError) as info:
        jnp.cos(leaked[0])
    msg = str(info.value)
    assert "test_errors.py" in msg and "escaped" in msg


def test_leaked_tracer_used_in_later_trace():
    leaked = []
    minijax.jit(lambda x: leaked.append(x) or x)(1.0)
    with pytest.raises(minijax.UnexpectedTracerError):
        minijax.jit(lambda y: y + leaked[0])(2.0)


def test_lax_shape_mismatch_names_primitive_types_and_line():
    def f(x, y):
        return lax.add(x, y)  # the line to be named

    line = f.__code__.co_firstlineno + 1
    with pytest.raises(TypeError) as info:
        minijax.jit(f)(jnp.ones(3), jnp.ones(4))
    msg = str(info.value)
    assert "add" in msg and "f32[3]" in msg and "f32[4]" in msg
    assert re.search(rf"test_errors.py:{line}\b", msg)


def test_lax_dtype_mismatch_eager():
    with pytest.raises(TypeError, match=r"add.*same dtype.*f32\[3\], i32\[3\]"):
        lax.add(jnp.ones(3), jnp.ones(3, dtype=jnp.int32))


def test_jnp_broadcast_error_is_value_error_like_jax():
    with pytest.raises(ValueError, match="Incompatible shapes"):
        jnp.ones(3) + jnp.ones(4)


def test_bad_function_output():
    with pytest.raises(TypeError, match=r"output path result\[1\]"):
        minijax.jit(lambda x: (x, "hello"))(1.0)


def test_unhashable_static_arg():
    f = minijax.jit(lambda x, opts: x, static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable static argument"):
        f(1.0, [1, 2])


def test_bad_argument_type():
    with pytest.raises(TypeError, match="not a valid minijax type"):
        minijax.jit(lambda x: x)("string")
