"""Every config flag minijax accepts either works as in jax or warns once (a UserWarning)
that it has no effect here. The lists below name every flag of minijax/config.py: a new
flag fails test_every_flag_is_listed until it is put in one of them."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.config import _CHOICES, _FLAGS, _NO_EFFECT, config

config_module = sys.modules["minijax.config"]  # minijax.config is the Config object

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _x64():
    with minijax.enable_x64():
        assert jnp.arange(3).dtype == np.int64 and jnp.array(1.0).dtype == np.float64
    assert jnp.arange(3).dtype == np.int32


def _rank_promotion():
    with minijax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="rank"):
            jnp.ones(2) + jnp.ones((3, 1))
    assert (jnp.ones(2) + jnp.ones((3, 1))).shape == (3, 2)


def _dtype_promotion():
    with minijax.numpy_dtype_promotion("strict"):
        with pytest.raises(Exception, match="romot"):
            jnp.ones(2, jnp.int32) + jnp.ones(2, jnp.float32)
    assert (jnp.ones(2, jnp.int32) + jnp.ones(2, jnp.float32)).dtype == np.float32


def _default_device():
    d = minijax.devices()[-1]
    with minijax.default_device(d):
        assert jnp.ones(2).devices() == {d}


def _log_compiles(caplog):
    f = minijax.jit(lambda x: x * 3.0 + 1.0)
    with caplog.at_level(logging.WARNING), minijax.log_compiles(True):
        f(np.ones(5, np.float32))
    assert "Finished XLA compilation of jit(<lambda>)" in caplog.text


def _disable_jit():
    seen = []
    f = minijax.jit(lambda x: seen.append(type(x).__name__) or x * 2)
    with minijax.disable_jit():
        assert float(f(3.0)) == 6.0
    assert seen and "Tracer" not in seen[0]


def _debug_nans():
    f = minijax.jit(lambda x: jnp.log(x) * 2.0)
    with minijax.debug_nans(True), pytest.raises(FloatingPointError):
        f(-np.ones(2, np.float32))
    assert np.isnan(np.asarray(f(-np.ones(2, np.float32)))).all()


def _debug_infs():
    f = minijax.jit(lambda x: 1.0 / x)
    with minijax.debug_infs(True), pytest.raises(FloatingPointError):
        f(np.zeros(2, np.float32))
    assert np.isinf(np.asarray(f(np.zeros(2, np.float32)))).all()


def _jit_cache_size():
    f = minijax.jit(lambda x: x + 1.0)
    prev = config.minijax_jit_cache_size
    config.update("minijax_jit_cache_size", 1)
    try:
        for n in (1, 2, 3):
            f(np.ones(n, np.float32))
        assert f._cache_size() == 1
    finally:
        config.update("minijax_jit_cache_size", prev)


def _platforms():
    code = "import minijax; minijax.devices()"
    env = dict(os.environ, MINIJAX_PLATFORMS="no_such_platform")
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0 and "no_such_platform" in r.stderr, r.stderr[-2000:]


# Flags that work as in jax, checked here.
WORKS = {
    "minijax_enable_x64": _x64,
    "minijax_numpy_rank_promotion": _rank_promotion,
    "minijax_numpy_dtype_promotion": _dtype_promotion,
    "minijax_default_device": _default_device,
    "minijax_log_compiles": _log_compiles,
    "minijax_disable_jit": _disable_jit,
    "minijax_debug_nans": _debug_nans,
    "minijax_debug_infs": _debug_infs,
    "minijax_jit_cache_size": _jit_cache_size,
    "minijax_platforms": _platforms,
}

# Flags that work and whose behaviour has its own tests (file: what it checks).
TESTED_ELSEWHERE = {
    "minijax_explain_cache_misses": "tests/stages/test_explain.py",
    "minijax_num_cpu_devices": "tests/runtime/test_runtime.py",
    "minijax_compilation_cache_dir": "tests/stages/test_cache.py",
    "minijax_compilation_cache_max_size": "tests/stages/test_cache.py",
    "minijax_eager_cache_size": "tests/runtime/test_reliability.py",
    "minijax_memo_cache_size": "tests/runtime/test_reliability.py",
    "minijax_traceback_filtering": "tests/core/test_traceback.py",
    "minijax_use_shardy_partitioner": "tests/sharding/test_shardy.py",
}


def _flags() -> set[str]:
    return {n for n in _FLAGS if not n.startswith("minijax_user_context_")}


def test_every_flag_is_listed():
    listed = [set(WORKS), set(TESTED_ELSEWHERE), set(_NO_EFFECT)]
    assert set.union(*listed) == _flags()
    assert sum(map(len, listed)) == len(_flags())  # each in one list only


@pytest.mark.parametrize("name", sorted(WORKS))
def test_working_flag_takes_effect_without_warning(name, request):
    check = WORKS[name]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*has no effect in minijax")
        if check.__code__.co_argcount:
            check(request.getfixturevalue("caplog"))
        else:
            check()


@pytest.mark.parametrize("name", sorted(TESTED_ELSEWHERE))
def test_working_flag_is_tested_elsewhere(name):
    with open(os.path.join(REPO, TESTED_ELSEWHERE[name])) as f:
        text = f.read()
    short = name[len("minijax_"):]
    assert name in text or "jax_" + short in text or name.upper() in text


def _other_value(name):
    """A value the flag accepts that differs from what minijax does anyway."""
    allowed = _NO_EFFECT[name]
    typ = _FLAGS[name][0]
    if typ is bool:
        return not allowed[0]
    if name in _CHOICES:
        return next(v for v in _CHOICES[name] if v not in allowed)
    return "log"


@pytest.mark.parametrize("name", sorted(_NO_EFFECT))
def test_flag_without_effect_warns_once(name, monkeypatch):
    monkeypatch.setattr(config_module, "_warned_no_effect", set())
    monkeypatch.setitem(config._values, name, config._values[name])  # restored after
    jax_name = "jax_" + name[len("minijax_"):]
    value = _other_value(name)
    with pytest.warns(UserWarning, match=f"{jax_name}.*has no effect in minijax") as rec:
        config.update(jax_name, value)
    assert len(rec) == 1 and rec[0].filename == __file__  # points at the caller's line
    assert getattr(config, jax_name) == value  # still readable, as in jax
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config.update(jax_name, value)  # once only
        monkeypatch.setattr(config_module, "_warned_no_effect", set())
        config.update(jax_name, _NO_EFFECT[name][-1])  # what minijax does: no warning


def test_context_managers_of_flags_without_effect_warn():
    config_module._warned_no_effect.discard("minijax_enable_checks")
    with pytest.warns(UserWarning, match="jax_enable_checks"):
        with minijax.enable_checks(True):
            assert config.jax_enable_checks
    assert not config.jax_enable_checks
    config_module._warned_no_effect.discard("minijax_check_tracer_leaks")
    with pytest.warns(UserWarning, match="jax_check_tracer_leaks"):
        with minijax.checking_leaks():
            pass
