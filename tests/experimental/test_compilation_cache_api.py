"""minijax.experimental.compilation_cache.compilation_cache: jax's two functions, over
minijax's persistent cache."""

import os

import numpy as np
import pytest
from jax.experimental.compilation_cache import compilation_cache as jcc

import minijax
import minijax.numpy as mnp
from minijax.experimental.compilation_cache import compilation_cache as cc


def test_names_like_jax():
    public = lambda m: sorted(n for n in dir(m) if not n.startswith("_"))  # noqa: E731
    assert public(cc) == public(jcc) == ["reset_cache", "set_cache_dir"]
    import minijax.experimental.compilation_cache as pkg
    assert pkg.compilation_cache is cc


@pytest.fixture
def restore_dir():
    before = minijax.config.minijax_compilation_cache_dir
    yield
    minijax.config.update("minijax_compilation_cache_dir", before)
    cc.reset_cache()


def _entries(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".xla"))


def test_set_cache_dir_stores_and_reuses(tmp_path, restore_dir):
    cc.set_cache_dir(str(tmp_path))
    assert minijax.config.jax_compilation_cache_dir == str(tmp_path)
    assert minijax.config.minijax_compilation_cache_dir == str(tmp_path)
    f = minijax.jit(lambda x: mnp.sin(x) * 3.0 + 0.123456)
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(f(x), np.sin(x) * 3 + 0.123456, rtol=1e-6)
    first = _entries(tmp_path)
    assert first
    cc.reset_cache()  # entries stay; the next compilation finds them
    assert _entries(tmp_path) == first
    g = minijax.jit(lambda x: mnp.sin(x) * 3.0 + 0.123456)
    np.testing.assert_allclose(g(x), f(x))
    assert _entries(tmp_path) == first
    other = tmp_path / "other"
    other.mkdir()
    cc.set_cache_dir(other)  # a path-like works too
    minijax.jit(lambda x: mnp.cos(x) - 0.654321)(x)
    assert _entries(other)


def test_set_cache_dir_none_turns_it_off(tmp_path, restore_dir):
    cc.set_cache_dir(None)
    assert minijax.config.minijax_compilation_cache_dir is None
    from minijax.runtime import compilation_cache
    assert compilation_cache.cache_dir() is None
    minijax.jit(lambda x: x * 7.5 - 0.25)(np.ones(3, np.float32))
    assert not os.listdir(tmp_path)
