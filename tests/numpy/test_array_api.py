"""The Array API standard's namespace hooks, against jax's."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp


def test_array_namespace_is_minijax_numpy_also_under_jit():
    x = jnp.arange(3.0)
    assert x.__array_namespace__() is jnp
    assert x.__array_namespace__(api_version="2023.12") is jnp
    assert x.__array_namespace__(api_version=jjnp.__array_api_version__) is jnp
    with pytest.raises(ValueError, match="2019.12"):
        x.__array_namespace__(api_version="2019.12")
    out = minijax.jit(lambda a: a.__array_namespace__().sin(a))(x)
    np.testing.assert_allclose(out, np.sin(np.arange(3.0)), rtol=1e-6)
    assert jnp.__array_api_version__ == jjnp.__array_api_version__


@pytest.mark.parametrize("wide", [False, True], ids=["x32", "x64"])
def test_namespace_info_matches_jax(wide, request):
    if wide:
        request.getfixturevalue("x64")  # the fixture turns x64 on in both libraries
        assert "float64" in jnp.__array_namespace_info__().dtypes()
    mine, ref = jnp.__array_namespace_info__(), jjnp.__array_namespace_info__()
    assert mine.capabilities() == ref.capabilities()
    assert mine.default_device() is ref.default_device() is None
    assert mine.default_dtypes() == ref.default_dtypes()
    assert len(mine.devices()) == len(ref.devices()) and mine.devices()[0] is None
    for kind in [None, "bool", "signed integer", "unsigned integer", "integral",
                 "real floating", "complex floating", "numeric", ("bool", "real floating")]:
        assert mine.dtypes(kind=kind) == ref.dtypes(kind=kind), kind
    with pytest.raises(KeyError):
        mine.dtypes(kind="strings")
    with pytest.raises(KeyError):
        ref.dtypes(kind="strings")


def test_to_device_copies_to_the_device():
    x = jnp.arange(4)
    y = x.to_device(minijax.devices()[0])
    assert y.device == minijax.devices()[0]
    np.testing.assert_array_equal(y, np.arange(4))
    with pytest.raises(NotImplementedError, match="stream"):
        x.to_device(minijax.devices()[0], stream=1)
    assert hasattr(jax.numpy.ones(1), "to_device")


def _aligned(values, dtype=np.float32):
    """A numpy array of ``values`` whose data starts on a 64-byte boundary."""
    values = np.asarray(values, dtype)
    raw = np.empty(values.nbytes + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    out = raw[off:off + values.nbytes].view(dtype).reshape(values.shape)
    out[...] = values
    return out


def test_from_dlpack_shares_aligned_cpu_memory_and_copies_when_asked():
    host = _aligned(np.arange(6.0).reshape(2, 3))
    x = jnp.from_dlpack(host)
    assert x.unsafe_buffer_pointer() == host.ctypes.data  # zero-copy
    np.testing.assert_array_equal(minijax.jit(lambda a: a * 2)(x), host * 2)
    y = jnp.from_dlpack(host, copy=True)
    assert y.unsafe_buffer_pointer() != host.ctypes.data
    np.testing.assert_array_equal(y, host)
    # a minijax array round-trips without a copy; numpy sees the same memory
    assert jnp.from_dlpack(x) is x and jnp.from_dlpack(x, copy=True) is not x
    assert np.from_dlpack(x).ctypes.data == x.unsafe_buffer_pointer()


def test_from_dlpack_copies_what_it_cannot_share_like_jax():
    odd = np.arange(5, dtype=np.float32)[1:]  # 4 bytes past an allocation: unaligned
    np.testing.assert_array_equal(jnp.from_dlpack(odd), jjnp.from_dlpack(odd))
    strided = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    for v in (strided, strided.T):  # non-compact strides: refused, as jax refuses them
        with pytest.raises(minijax.errors.JaxRuntimeError, match="compact"):
            jnp.from_dlpack(v)
        with pytest.raises(jax.errors.JaxRuntimeError, match="compact"):
            jjnp.from_dlpack(v)
    transposed = np.arange(12, dtype=np.int32).reshape(3, 4).T  # a permutation: shared
    np.testing.assert_array_equal(jnp.from_dlpack(transposed), transposed)
    wide = jnp.from_dlpack(np.arange(3.0))  # float64 narrows with x64 off, as jax
    assert wide.dtype == jjnp.from_dlpack(np.arange(3.0)).dtype == np.float32
    assert jnp.from_dlpack(np.zeros((0, 2), np.bool_)).shape == (0, 2)
    if ((np.arange(5, dtype=np.float32).ctypes.data + 4) % 64) != 0:
        with pytest.raises(ValueError, match="copy"):
            jnp.from_dlpack(odd, copy=False)
    with pytest.raises(TypeError, match="__dlpack__"):
        jnp.from_dlpack([1, 2])


def test_dlpack_export_copy_and_device_arguments():
    x = jnp.arange(4.0)
    assert x.__dlpack_device__() == jjnp.arange(4.0).__dlpack_device__() == (1, 0)

    class Copying:  # asks the producer for a copy, as a consumer may
        def __dlpack__(self, **kw):
            return x.__dlpack__(copy=True, **kw)

        def __dlpack_device__(self):
            return x.__dlpack_device__()
    copied = np.from_dlpack(Copying())
    assert copied.ctypes.data != x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(copied, np.arange(4.0))
    with pytest.raises(BufferError, match="device"):
        x.__dlpack__(dl_device=(2, 0))


_CREATION = {
    "arange": lambda m, **kw: m.arange(3, **kw),
    "asarray": lambda m, **kw: m.asarray([1, 2], **kw),
    "empty": lambda m, **kw: m.empty((2,), **kw) * 0,
    "empty_like": lambda m, **kw: m.empty_like(m.ones(2), **kw) * 0,
    "eye": lambda m, **kw: m.eye(2, **kw),
    "full": lambda m, **kw: m.full((2,), 3.0, **kw),
    "full_like": lambda m, **kw: m.full_like(m.ones(2), 4, **kw),
    "linspace": lambda m, **kw: m.linspace(0, 1, 3, **kw),
    "ones": lambda m, **kw: m.ones(2, **kw),
    "ones_like": lambda m, **kw: m.ones_like(m.ones(2), **kw),
    "zeros": lambda m, **kw: m.zeros(2, **kw),
    "zeros_like": lambda m, **kw: m.zeros_like(m.ones(2), **kw),
}


@pytest.mark.parametrize("name", sorted(_CREATION))
def test_creation_functions_take_device_like_jax(name):
    import inspect
    assert "device" in inspect.signature(getattr(jnp, name)).parameters
    assert (("out_sharding" in inspect.signature(getattr(jnp, name)).parameters)
            == ("out_sharding" in inspect.signature(getattr(jjnp, name)).parameters))
    dev = minijax.devices()[0]
    got = _CREATION[name](jnp, device=dev)
    want = _CREATION[name](jjnp, device=jax.devices()[0])
    assert got.device == dev
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    jitted = minijax.jit(lambda: _CREATION[name](jnp, device=dev))()
    np.testing.assert_array_equal(jitted, want)


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
def test_linalg_of_empty_matrices_like_jax(shape):
    a = np.zeros(shape, np.float32) + np.eye(shape[-1], dtype=np.float32)
    b = np.ones(shape[:-1] + (1,), np.float32)
    for name, args in [("inv", (a,)), ("solve", (a, b)), ("det", (a,)), ("pinv", (a,)),
                       ("slogdet", (a,))]:
        got = getattr(jnp.linalg, name)(*args)
        want = getattr(jjnp.linalg, name)(*args)
        for g, w in zip(jax.tree_util.tree_leaves(tuple(got) if name == "slogdet" else got),
                        jax.tree_util.tree_leaves(tuple(want) if name == "slogdet" else want)):
            assert g.shape == w.shape and g.dtype == w.dtype, name
            np.testing.assert_allclose(g, w, err_msg=name)


_INF, _NAN = np.inf, np.nan
# (function, input, the standard's result); None for "NaN" parts, "±" parts compare |.|
_SPECIAL = [
    ("exp", complex(_INF, _INF), (_INF, None)), ("exp", complex(_INF, _NAN), (_INF, None)),
    ("exp", complex(-_INF, _INF), (0.0, 0.0)), ("exp", complex(-_INF, _NAN), (0.0, 0.0)),
    ("expm1", complex(-_INF, _INF), (-1.0, 0.0)), ("expm1", complex(_INF, _NAN), (_INF, None)),
    ("expm1", complex(_NAN, 1.0), (None, None)),
    ("sinh", complex(0.0, _INF), (0.0, None)), ("sinh", complex(_INF, _NAN), (_INF, None)),
    ("cosh", complex(0.0, _NAN), (None, 0.0)), ("cosh", complex(_INF, _INF), (_INF, None)),
    ("tanh", complex(0.0, _INF), (0.0, None)), ("tanh", complex(1.0, _NAN), (None, None)),
    ("tanh", complex(_INF, _INF), (1.0, 0.0)),
    ("log", complex(-_INF, 2.0), (_INF, np.pi)), ("log", complex(_NAN, _INF), (_INF, None)),
    ("log", complex(_INF, _NAN), (_INF, None)),
    ("log1p", complex(-_INF, 2.0), (_INF, np.pi)), ("log1p", complex(_NAN, _INF), (_INF, None)),
    ("sqrt", complex(_INF, _NAN), (_INF, None)), ("sqrt", complex(-_INF, _NAN), (None, _INF)),
    ("sqrt", complex(_NAN, _INF), (_INF, _INF)),
    ("arctanh", complex(0.0, _NAN), (0.0, None)), ("arctanh", complex(1.0, _NAN), (None, None)),
    ("arctanh", complex(_INF, _NAN), (0.0, None)), ("arctanh", complex(_NAN, 1.0), (None, None)),
    ("arccos", complex(0.0, _NAN), (np.pi / 2, None)),
    ("arccosh", complex(0.0, _NAN), (None, np.pi / 2)),
    ("arcsinh", complex(_NAN, 0.0), (None, 0.0)),
    ("sign", complex(-0.0, 0.0), (0.0, 0.0)), ("sign", complex(0.0, -0.0), (0.0, 0.0)),
]


@pytest.mark.parametrize("name,z,want", _SPECIAL, ids=[f"{n}({z})" for n, z, _ in _SPECIAL])
def test_complex_special_values_follow_the_standard(name, z, want):
    for dt in (np.complex64,):
        got = complex(np.asarray(getattr(jnp, name)(np.asarray(z, dt))))
        jitted = complex(np.asarray(minijax.jit(getattr(jnp, name))(np.asarray(z, dt))))
        for out in (got, jitted):
            for part, w in zip((out.real, out.imag), want):
                if w is None:
                    assert np.isnan(part), (out, want)
                else:
                    assert abs(part) == pytest.approx(abs(w), rel=1e-6), (out, want)


def test_complex_special_values_keep_ordinary_values_and_grads():
    z = np.array([0.3 + 0.4j, -1.2 + 2.0j, 2.0 - 0.5j], np.complex64)
    for name in ["exp", "expm1", "sinh", "cosh", "tanh", "log", "log1p", "sqrt", "arctanh",
                 "arccos", "arccosh", "arcsinh"]:
        np.testing.assert_allclose(getattr(jnp, name)(z), getattr(jjnp, name)(z), rtol=1e-5)
        g = minijax.grad(lambda v, n=name: getattr(jnp, n)(v).real.sum())(z)
        w = jax.grad(lambda v, n=name: getattr(jjnp, n)(v).real.sum())(z)
        np.testing.assert_allclose(g, w, rtol=1e-5, err_msg=name)


def test_sign_of_signed_zero_is_positive_zero():
    x = np.array([-0.0, 0.0, -2.0, 3.0], np.float32)
    got = np.asarray(jnp.sign(x))
    np.testing.assert_array_equal(got, [0.0, 0.0, -1.0, 1.0])
    assert not np.signbit(got[:2]).any()
    np.testing.assert_array_equal(jnp.sign(np.array([-3, 0, 4])), [-1, 0, 1])
