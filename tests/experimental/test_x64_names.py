"""jax.experimental.enable_x64/disable_x64: gone from jax 0.10.2, gone here; the
replacement is the ``enable_x64`` context manager."""

import jax
import jax.experimental
import numpy as np
import pytest

import minijax
import minijax.experimental
import minijax.numpy as mnp


@pytest.mark.parametrize("name", ["enable_x64", "disable_x64"])
def test_absent_as_in_jax(name):
    assert not hasattr(jax.experimental, name)
    assert not hasattr(minijax.experimental, name)
    with pytest.raises(AttributeError, match="minijax.enable_x64"):
        getattr(minijax.experimental, name)


def test_enable_x64_context_manager_like_jax():
    before = minijax.config.minijax_enable_x64
    for flag in (True, False):
        with minijax.enable_x64(flag), jax.enable_x64(flag):
            assert mnp.ones(2).dtype == jax.numpy.ones(2).dtype
            assert mnp.arange(3).dtype == jax.numpy.arange(3).dtype
            assert minijax.config.jax_enable_x64 is flag
        assert minijax.config.minijax_enable_x64 is before
    with minijax.enable_x64(), jax.enable_x64():
        assert mnp.ones(2).dtype == jax.numpy.ones(2).dtype == np.float64
