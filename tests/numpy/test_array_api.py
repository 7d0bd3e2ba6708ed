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
