"""Cache-miss explanations (minijax_explain_cache_misses)."""

import logging

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp


@pytest.fixture
def explain(caplog):
    minijax.config.update("minijax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING, logger="minijax"):
            # tracing-cache messages (the persistent cache, on by default, logs its own
            # misses too: test_persistent_cache_miss_is_explained reads those)
            yield lambda what="TRACING CACHE MISS": [
                r.getMessage() for r in caplog.records if what in r.getMessage()]
    finally:
        minijax.config.update("minijax_explain_cache_misses", False)


def test_each_kind_of_difference(explain, request):
    def f(params, x, n):
        return params["w"].sum() * x * n

    jf = minijax.jit(f, static_argnums=2)
    p = {"w": jnp.ones(3)}
    jf(p, jnp.ones(3), 2)
    jf(p, jnp.ones(4), 2)                          # shape
    jf(p, jnp.ones(4, dtype=jnp.int32), 2)         # dtype
    jf(p, 1.0, 2)                                  # weak type (and shape)
    jf(p, 1.0, 3)                                  # static argument
    jf({"w": jnp.ones(3), "b": 0.0}, 1.0, 3)       # tree structure
    request.getfixturevalue("x64")
    jf({"w": jnp.ones(3), "b": 0.0}, 1.0, 3)       # config
    msgs = explain()
    assert len(msgs) == 7
    assert "tracing f for the first time" in msgs[0]
    assert "argument x changed: shape (3,) -> (4,)" in msgs[1]
    assert "argument x changed: dtype float32 -> int32" in msgs[2]
    assert "weak_type False -> True" in msgs[3] and "shape (4,) -> ()" in msgs[3]
    assert "static argument 'n' (position 2) changed from 2 to 3" in msgs[4]
    assert "tree structure of the arguments changed" in msgs[5] and "'b'" in msgs[5]
    assert "minijax_enable_x64 changed from False to True" in msgs[6]


def test_compiler_options_and_recreated_jit(explain):
    def g(x):
        return x + 1

    x = np.ones(2, np.float32)
    minijax.jit(g)(x)
    minijax.jit(g, compiler_options={"xla_cpu_enable_fast_math": True})(x)
    minijax.jit(g)(x)  # a new jit of g with the same settings: reuses the trace, as jax
    minijax.jit(g, donate_argnums=0)(np.ones(5, np.float32))
    msgs = explain()
    assert len(msgs) == 3
    assert msgs[0].endswith("tracing g for the first time")
    assert "compiler_options changed (xla_cpu_enable_fast_math: '<unset>' -> True)" in msgs[1]
    assert "donate_argnums changed from () to (0,)" in msgs[2]
    assert "argument x changed: shape (2,) -> (5,)" in msgs[2]


def test_no_message_on_hits_and_none_when_off(explain, caplog):
    f = minijax.jit(lambda x: x * 3)
    f(jnp.ones(2))
    f(jnp.ones(2))
    f(np.ones(2, np.float32))
    assert len(explain()) == 1
    minijax.config.update("minijax_explain_cache_misses", False)
    f(jnp.ones(7))
    assert len(explain()) == 1


def test_persistent_cache_miss_is_explained(explain, tmp_path):
    minijax.config.update("minijax_compilation_cache_dir", tmp_path)
    try:
        minijax.jit(lambda x: x * 11)(jnp.ones(2))
    finally:
        minijax.config.update("minijax_compilation_cache_dir", None)
    assert any("PERSISTENT COMPILATION CACHE MISS" in m
               for m in explain("PERSISTENT COMPILATION CACHE MISS"))
