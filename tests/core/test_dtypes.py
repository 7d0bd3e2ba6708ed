"""Dtype promotion and canonicalization against jax's rules."""

import itertools

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.core import dtypes

ALL = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
       np.uint64, dtypes.bfloat16, np.float16, np.float32, np.float64, np.complex64,
       np.complex128]
WEAK = [1, 1.0, 1j, True]


def _ours(a, b):
    out = minijax.eval_shape(jnp.add, a, b)
    return np.dtype(out.dtype), out.weak_type


def _theirs(a, b):
    out = jax.eval_shape(jjnp.add, a, b)
    return np.dtype(out.dtype), out.weak_type


def _arg(lib, dt):
    if isinstance(dt, (int, float, complex, bool)):
        return dt
    return lib.ShapeDtypeStruct((), np.dtype(dt))


@pytest.mark.parametrize("x64_on", [False, True])
def test_binary_promotion_matches_jax(x64_on, request):
    if x64_on:
        request.getfixturevalue("x64")
    kinds = ALL + WEAK
    mismatches = []
    for a, b in itertools.product(kinds, kinds):
        ours = _ours(_arg(minijax, a), _arg(minijax, b))
        theirs = _theirs(_arg(jax, a), _arg(jax, b))
        if ours != theirs:
            mismatches.append((a, b, ours, theirs))
    assert not mismatches, mismatches[:10]


def test_canonicalize_x64_off():
    assert dtypes.canonicalize(np.float64) == np.float32
    assert dtypes.canonicalize(np.int64) == np.int32
    assert dtypes.canonicalize(np.uint64) == np.uint32
    assert dtypes.canonicalize(np.complex128) == np.complex64
    assert dtypes.canonicalize(np.float16) == np.float16


def test_canonicalize_x64_on(x64):
    assert dtypes.canonicalize(np.float64) == np.float64
    assert dtypes.canonicalize(np.int64) == np.int64


def test_float64_input_becomes_float32():
    x = jnp.asarray(np.ones(3, np.float64))
    assert x.dtype == np.float32
    y = jnp.asarray(np.arange(3, dtype=np.int64))
    assert y.dtype == np.int32


def test_float64_kept_with_x64(x64):
    x = jnp.asarray(np.ones(3, np.float64))
    assert x.dtype == np.float64
    assert (x + 1).dtype == np.float64
    f = minijax.jit(lambda a: a * 2)
    assert f(x).dtype == np.float64


def test_weak_scalar_keeps_array_dtype():
    x = jnp.ones(3, dtype=jnp.float16)
    assert (x * 2.0).dtype == np.float16
    assert (x + 1).dtype == np.float16
    i = jnp.ones(3, dtype=jnp.int8)
    assert (i + 3).dtype == np.int8
    assert (i + 3.0).dtype == np.float32


def test_unsupported_dtype_error():
    with pytest.raises(TypeError, match="does not support dtype"):
        dtypes.canonicalize(np.dtype("U3"))
