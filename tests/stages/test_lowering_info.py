"""What lowering notes for the checks after compiling (``LoweringInfo``): XLA
metadata and must-fuse groups are found while the module is emitted, not by
searching its text."""

import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.experimental.xla_metadata import (MustFuseWarning, must_fuse_call,
                                               set_xla_metadata)
from minijax.lowering.lower import LoweringInfo


def test_plain_function_has_no_metadata():
    lowered = minijax.jit(lambda x: jnp.sin(x) * 2).lower(jnp.ones(3))
    assert lowered._info[:2] == LoweringInfo(False, frozenset())[:2]


def test_names_that_look_like_metadata_are_not_metadata():
    def MUST_FUSE_mhlo_frontend_attributes(x):  # noqa: N802 - the name is the point
        return x + 1

    f = minijax.jit(MUST_FUSE_mhlo_frontend_attributes)
    lowered = f.lower(jnp.ones(3))
    assert "MUST_FUSE" in lowered.as_text()  # in the module's name only
    assert not lowered._info.has_metadata
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(f(jnp.ones(3)), np.full(3, 2.0))


def test_metadata_and_must_fuse_groups():
    def f(x):
        with set_xla_metadata(_xla_log=True):
            y = jnp.sin(x)
        return y, must_fuse_call("g7")(lambda v: jnp.square(v).sum())(x)

    lowered = minijax.jit(f).lower(jnp.ones(64))
    assert lowered._info.has_metadata
    assert lowered._info.must_fuse_groups == {"g7"}
    with pytest.warns(MustFuseWarning, match="'g7'"):
        lowered.compile()

    def g(x):
        with set_xla_metadata(_xla_log=True):
            return jnp.sin(x)

    info = minijax.jit(g).lower(jnp.ones(3))._info
    assert info.has_metadata and not info.must_fuse_groups


def test_lowered_converts_to_hlo_once(monkeypatch):
    from minijax.lowering import mlir
    calls = []
    real = mlir.to_xla_computation
    monkeypatch.setattr(mlir, "to_xla_computation",
                        lambda text, **kw: calls.append(1) or real(text, **kw))

    def f(x):
        with set_xla_metadata(_xla_log=True):
            return jnp.sin(x) + 1

    lowered = minijax.jit(f).lower(jnp.ones(4))
    assert '_xla_log="true"' in lowered.as_text("hlo")
    for _ in range(2):
        c = lowered.compile()
        np.testing.assert_allclose(np.asarray(c(jnp.ones(4))), np.sin(1.0) + 1, rtol=1e-6)
    assert len(calls) == 1  # as_text('hlo') and both metadata checks share one conversion
