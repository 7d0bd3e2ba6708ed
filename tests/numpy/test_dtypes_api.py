"""minijax.numpy's scalar types and dtype queries against jax.numpy's."""

import itertools
import warnings


import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from tests.numpy._util import x64_mode

_TYPES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "bfloat16", "float16", "float32", "float64", "complex64", "complex128"]
_PY = [int, float, complex]


def _both(name):
    return getattr(jnp, name), getattr(jjnp, name)


@pytest.mark.parametrize("x64", [False, True])
def test_promote_types_table(x64):
    # every pair of types (and Python's weak types), with 64-bit mode off and on
    with x64_mode(x64):
        args = [(getattr(jnp, n), getattr(jjnp, n)) for n in _TYPES] + [(t, t) for t in _PY]
        for (ma, ja), (mb, jb) in itertools.combinations_with_replacement(args, 2):
            assert jnp.promote_types(ma, mb) == jjnp.promote_types(ja, jb), (ja, jb)


@pytest.mark.parametrize("x64", [False, True])
def test_result_type(x64):
    with x64_mode(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [(np.float64,), (3,), (3, np.int8), (2.0, np.float16), (int,), (None,),
                 (np.uint32, np.int32), (1j, np.float32), (True, np.uint8), ("float16", 1)]
        for args in cases:
            assert jnp.result_type(*args) == jjnp.result_type(*args), args
        x, y = np.ones(2, np.float16), np.ones(2, np.int64)
        assert jnp.result_type(jnp.asarray(x), 2.0) == jjnp.result_type(jjnp.asarray(x), 2.0)
        assert jnp.result_type(jnp.asarray(y), 1) == jjnp.result_type(jjnp.asarray(y), 1)
    with pytest.raises(ValueError):
        jnp.result_type()


@pytest.mark.parametrize("name", _TYPES + ["single", "double", "csingle", "cdouble", "int_",
                                           "uint", "float_", "complex_", "bool"])
def test_scalar_types(name):
    m, j = _both(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = m(1), j(1)
        assert jnp.zeros(2, m).dtype == jjnp.zeros(2, j).dtype
    assert got.dtype == want.dtype and got.shape == () and np.asarray(got) == np.asarray(want)
    assert isinstance(got, jnp.ndarray)
    assert np.dtype(m) == np.dtype(j) and m == j.dtype.type and hash(m) == hash(j)
    assert isinstance(j.dtype.type(1), m)


def test_scalar_type_casts_under_jit():
    f = minijax.jit(lambda x: jnp.int32(x) + jnp.float32(0.5))
    np.testing.assert_array_equal(f(jnp.asarray([1.7, -2.2])), np.array([1.5, -1.5], np.float32))
    with pytest.raises(TypeError):
        jnp.asarray(1, jnp.float8_e4m3fn)  # exists, but minijax arrays do not support it


@pytest.mark.parametrize("name", ["generic", "number", "inexact", "floating", "complexfloating",
                                  "integer", "signedinteger", "unsignedinteger", "character",
                                  "flexible", "object_", "ComplexWarning", "euler_gamma",
                                  "finfo", "iinfo", "can_cast", "iterable", "dtype", "pi", "e",
                                  "inf", "newaxis"])
def test_aliases_of_numpy(name):
    m, j = _both(name)
    assert m is j or m == j or (np.isnan(m) and np.isnan(j))


def test_printoptions():
    with jnp.printoptions(precision=2):
        assert jnp.get_printoptions()["precision"] == 2
    assert jnp.get_printoptions() == jjnp.get_printoptions()


def test_issubdtype_and_isdtype():
    kinds = [jnp.generic, jnp.number, jnp.inexact, jnp.floating, jnp.complexfloating,
             jnp.integer, jnp.signedinteger, jnp.unsignedinteger, jnp.bool_, jnp.float32]
    for name in _TYPES:
        for k in kinds:
            assert jnp.issubdtype(getattr(jnp, name), k) == \
                jjnp.issubdtype(getattr(jjnp, name), k), (name, k)
            assert jnp.issubdtype(np.dtype(getattr(jnp, name)), k) == \
                jjnp.issubdtype(np.dtype(getattr(jjnp, name)), k)
        for kind in ["bool", "signed integer", "unsigned integer", "integral", "real floating",
                     "complex floating", "numeric", ("bool", "integral"), np.float32]:
            assert jnp.isdtype(getattr(jnp, name), kind) == \
                jjnp.isdtype(getattr(jjnp, name), kind), (name, kind)
    assert jnp.issubdtype(float, jnp.floating) and not jnp.issubdtype(np.float32, "float")
    with pytest.raises(ValueError):
        jnp.isdtype(jnp.float32, "reals")


@pytest.mark.parametrize("x", [3, 2.5, np.float32(1), np.zeros(()), np.ones((2, 3)), [1, 2],
                               "a", None, 1j])
def test_introspection(x):
    for name in ["isscalar", "iscomplexobj", "isrealobj", "iterable"]:
        assert getattr(jnp, name)(x) == getattr(jjnp, name)(x), name
    if not isinstance(x, (str, type(None), list)):
        for name in ["shape", "ndim", "size"]:
            assert getattr(jnp, name)(x) == getattr(jjnp, name)(x), name
        assert jnp.isscalar(jnp.asarray(x)) == jjnp.isscalar(jjnp.asarray(x))
    assert jnp.size(np.ones((2, 3, 4)), (0, 2)) == 8


def test_ndarray_is_the_array_type():
    assert isinstance(jnp.ones(3), jnp.ndarray) and jnp.ndarray is minijax.Array
    assert not isinstance(np.ones(3), jnp.ndarray)
    with pytest.raises(TypeError):  # a traced size, as in jax
        minijax.jit(lambda n: jnp.ones(n))(3)
