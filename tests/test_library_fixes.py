"""Behaviours the libraries' own test suites (optax, chex) rely on, each against jax."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

jax = pytest.importorskip("jax")


@pytest.mark.parametrize("x", [2.567, 2.5, [1.26, 2.5], np.int32(7), np.float32(-3.5)])
@pytest.mark.parametrize("nd", [(), (None,), (1,)])
def test_round_builtin(x, nd):
    want = round(jax.numpy.asarray(x), *nd)
    got = round(jnp.asarray(x), *nd)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    j = minijax.jit(lambda v: round(v, *nd))(jnp.asarray(x))
    assert j.dtype == want.dtype


def test_jit_signature_without_following_wrapped():
    def foo(x, y=2, *, z=3):
        return x

    want = inspect.signature(jax.jit(foo), follow_wrapped=False)
    assert inspect.signature(minijax.jit(foo), follow_wrapped=False) == want


def test_pmap_axis_size_and_donate_argnums():
    x = np.arange(3.0, dtype=np.float32)[None]
    f = minijax.pmap(lambda v: v * 2, axis_size=1, donate_argnums=0)
    np.testing.assert_array_equal(f(x), jax.pmap(lambda v: v * 2, axis_size=1)(x))
    with pytest.raises(ValueError, match="Specified axis_size 2 doesn't match"):
        minijax.pmap(lambda v: v, axis_size=2)(x)


def test_one_device_named_sharding_survives_computation():
    def run(lib):
        mesh = lib.sharding.Mesh(np.array(lib.devices()[:1]), ("a",))
        s = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("a"))
        x = lib.device_put(np.ones((1, 3), np.float32), s)
        y = x + x
        return y.sharding.spec, np.asarray(lib.numpy.log(y))

    (spec, got), (want_spec, want) = run(minijax), run(jax)
    assert tuple(spec) == tuple(want_spec)
    np.testing.assert_allclose(got, want)


def test_compiler_hook_sees_every_compilation():
    from minijax.runtime import compiler

    seen = []
    inner = compiler.backend_compile_and_load

    def spy(backend, *args, **kwargs):
        seen.append(backend.platform)
        return inner(backend, *args, **kwargs)

    compiler.backend_compile_and_load = spy
    try:
        c = float(np.random.default_rng().uniform(1, 2))  # a module no cache holds
        minijax.jit(lambda v: v * c)(jnp.ones(13))
    finally:
        compiler.backend_compile_and_load = inner
    assert seen and set(seen) == {minijax.default_backend()}
