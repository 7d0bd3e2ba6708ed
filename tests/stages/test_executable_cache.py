"""One executable cache (stages/cache.py) for jit calls, Lowered.compile, jit equations run
eagerly and fused numpy functions; the module is converted to HLO once."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.core.trace import eval_jaxpr
from minijax.experimental.xla_metadata import set_xla_metadata
from minijax.lowering import mlir
from minijax.runtime.executable import compile_count


@pytest.fixture(autouse=True)
def _no_persistent_cache():
    """These tests count compilations of the in-memory cache: the persistent cache (on by
    default) would turn some of them into loads."""
    prev = minijax.config.minijax_compilation_cache_max_size
    minijax.config.update("minijax_compilation_cache_max_size", 0)
    yield
    minijax.config.update("minijax_compilation_cache_max_size", prev)


def _x(*shape):
    return jnp.asarray(np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape))


def test_jit_call_aot_and_eager_equation_share_one_executable():
    x = _x(5, 3)
    f = minijax.jit(lambda x: jnp.cos(x) * 3.0 - x)
    expected = np.cos(np.asarray(x)) * 3.0 - np.asarray(x)
    before = compile_count()
    np.testing.assert_allclose(f(x), expected, rtol=1e-6)
    assert compile_count() == before + 1
    compiled = f.lower(x).compile()  # the executable jit(f)(x) compiled
    np.testing.assert_allclose(compiled(x), expected, rtol=1e-6)
    assert f.trace(x).lower().compile() is compiled  # one Compiled per entry and key
    closed = minijax.make_jaxpr(lambda x: f(x))(x)  # { a -> jit[f] a }: run eagerly
    assert [e.primitive.name for e in closed.eqns] == ["jit"]
    np.testing.assert_allclose(eval_jaxpr(closed.jaxpr, closed.consts, x)[0], expected,
                               rtol=1e-6)
    assert compile_count() == before + 1
    # and the other way round: compiled ahead of time first, then called
    g = minijax.jit(lambda x: jnp.tanh(x) + 2.0)
    c = g.lower(x).compile()
    assert compile_count() == before + 2
    np.testing.assert_allclose(g(x), np.tanh(np.asarray(x)) + 2.0, rtol=1e-6)
    np.testing.assert_allclose(c(x), g(x))
    assert compile_count() == before + 2


def test_fused_numpy_call_shares_with_jit_of_it():
    x = _x(3, 7)
    before = compile_count()
    jnp.arctan(x)  # a fused numpy function: one program (perhaps compiled before)
    after_fused = compile_count()
    assert after_fused <= before + 1
    np.testing.assert_allclose(minijax.jit(jnp.arctan)(x), np.arctan(np.asarray(x)),
                               rtol=1e-6)
    np.testing.assert_allclose(minijax.jit(jnp.arctan).lower(x).compile()(x),
                               np.arctan(np.asarray(x)), rtol=1e-6)
    assert compile_count() == after_fused  # the same module: the same executable


def test_eager_equation_of_an_entry_with_unused_arguments():
    x, y = _x(4), _x(2)
    f = minijax.jit(lambda x, y: x * 4.0)  # y unused: dropped from the executable
    np.testing.assert_allclose(f(x, y), np.asarray(x) * 4.0)
    before = compile_count()
    closed = minijax.make_jaxpr(lambda x, y: f(x, y))(x, y)
    np.testing.assert_allclose(eval_jaxpr(closed.jaxpr, closed.consts, x, y)[0],
                               np.asarray(x) * 4.0)
    assert compile_count() == before


def test_key_holds_metadata_and_compiler_options():
    x = _x(6)
    f = minijax.jit(lambda x: jnp.exp(x) * 0.5)
    f(x)
    before = compile_count()
    with set_xla_metadata(tag="a"):
        f(x)  # another metadata context: another module
    assert compile_count() == before + 1
    with set_xla_metadata(tag="a"):
        f(x)
        lowered = f.lower(x)
    lowered.compile()
    assert compile_count() == before + 1
    fast = lowered.compile({"xla_cpu_enable_fast_math": True})  # options: another key
    assert compile_count() == before + 2
    assert lowered.compile({"xla_cpu_enable_fast_math": True}) is fast
    np.testing.assert_allclose(fast(x), np.exp(np.asarray(x)) * 0.5, rtol=1e-5)
    minijax.clear_caches()
    f(x)
    assert compile_count() == before + 3


@pytest.mark.parametrize("path", ["call", "aot"])
def test_module_with_metadata_converted_to_hlo_once(monkeypatch, path):
    calls, parsed = [], []
    real, real_parse = mlir.to_xla_computation, mlir.parse
    monkeypatch.setattr(mlir, "to_xla_computation",
                        lambda text, **kw: calls.append(1) or real(text, **kw))
    monkeypatch.setattr(mlir, "parse", lambda text: parsed.append(1) or real_parse(text))
    x = _x(3, 2)

    def f(x):
        with set_xla_metadata(stage="x"):
            return jnp.sin(x) + 1.0
    f = minijax.jit(f)
    if path == "call":
        np.testing.assert_allclose(f(x), np.sin(np.asarray(x)) + 1.0, rtol=1e-6)
        assert len(calls) == 1  # the check that the attributes survived
    else:
        lowered = f.lower(x)
        lowered.compile()
        hlo = lowered.as_text("hlo")
        assert 'stage="x"' in hlo and len(calls) == 1  # the checked conversion, reused
    assert not parsed  # converted from the lowered text as it is: not parsed, not re-printed
    g = minijax.jit(lambda x: jnp.sin(x) + 2.0)  # no metadata: no conversion
    g(x)
    g.lower(x).compile()
    assert len(calls) == 1


def test_grad_of_jit_run_eagerly_compiles_once():
    x = _x(4, 2)
    f = minijax.jit(lambda x: jnp.sin(x) * 2.0)
    g = minijax.grad(lambda x: f(x).sum())  # its jvp and transpose jaxprs are new each call
    np.testing.assert_allclose(g(x), 2.0 * np.cos(np.asarray(x)), rtol=1e-6)
    before = compile_count()
    for _ in range(3):
        np.testing.assert_allclose(g(x), 2.0 * np.cos(np.asarray(x)), rtol=1e-6)
    assert compile_count() == before
