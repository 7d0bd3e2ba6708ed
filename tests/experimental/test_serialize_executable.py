"""minijax.experimental.serialize_executable against jax's: the same signature and
round trip; no pickle on the load path."""

import inspect

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.experimental import serialize_executable as jse

import minijax
import minijax.numpy as jnp
from minijax.experimental import serialize_executable as se
from minijax.runtime.executable import compile_count
from minijax.stages import DeserializationError, deserialize


class Box:  # a custom node, never registered for serialization
    def __init__(self, value, label):
        self.value, self.label = value, label


minijax.tree_util.register_pytree_node(Box, lambda b: ((b.value,), b.label),
                                       lambda label, c: Box(c[0], label))

X = np.linspace(-1, 1, 6).astype(np.float32)


def f(x, y, *, s):
    return {"a": x + y["b"] * s, "b": jnp.sin(x)}


def jf(x, y, *, s):
    return {"a": x + y["b"] * s, "b": jjnp.sin(x)}


def test_signatures_like_jax():
    for name in ("serialize", "deserialize_and_load"):
        assert list(inspect.signature(getattr(se, name)).parameters) == \
            list(inspect.signature(getattr(jse, name)).parameters), name


def test_round_trip_matches_jax():
    args = (X, {"b": X * 2})
    c = minijax.jit(f).lower(*args, s=np.float32(3.0)).compile()
    payload, in_tree, out_tree = se.serialize(c)
    jc = jax.jit(jf).lower(*args, s=np.float32(3.0)).compile()
    _, jin, jout = jse.serialize(jc)
    assert isinstance(payload, bytes)
    assert str(in_tree) == str(jin) and str(out_tree) == str(jout)
    before = compile_count()
    g = se.deserialize_and_load(payload, in_tree, out_tree)
    out = g(*args, s=np.float32(3.0))
    assert compile_count() == before
    want = jc(*args, s=np.float32(3.0))
    for k in ("a", "b"):
        np.testing.assert_allclose(out[k], want[k], rtol=1e-6)
    g2 = se.deserialize_and_load(payload, in_tree, out_tree, backend="cpu",
                                 execution_devices=minijax.devices("cpu"))
    np.testing.assert_allclose(g2(*args, s=np.float32(3.0))["a"], want["a"], rtol=1e-6)


def test_custom_nodes_need_no_registration():
    c = minijax.jit(lambda b: Box(b.value * 2, b.label)).lower(Box(X, "tag")).compile()
    payload, in_tree, out_tree = se.serialize(c)
    out = se.deserialize_and_load(payload, in_tree, out_tree)(Box(X, "tag"))
    assert isinstance(out, Box) and out.label == "tag"
    np.testing.assert_allclose(out.value, X * 2)


def test_bad_inputs():
    c = minijax.jit(lambda x: x + 1).lower(X).compile()
    payload, in_tree, out_tree = se.serialize(c)
    with pytest.raises(DeserializationError, match="deserialize_and_load"):
        deserialize(payload)  # the trees are not in the bytes
    with pytest.raises(DeserializationError):
        se.deserialize_and_load(b"garbage", in_tree, out_tree)
    with pytest.raises(DeserializationError):
        se.deserialize_and_load(payload[:-3], in_tree, out_tree)
    _, in2, out2 = se.serialize(minijax.jit(lambda x, y: x + y).lower(X, X).compile())
    with pytest.raises(DeserializationError):
        se.deserialize_and_load(payload, in2, out_tree)
    with pytest.raises(TypeError):
        se.deserialize_and_load(payload, "tree", out_tree)
    with pytest.raises(TypeError):
        se.serialize(lambda x: x)


def test_no_pickle_on_load(monkeypatch):
    import pickle
    c = minijax.jit(lambda x: x * 3).lower(X).compile()
    payload, in_tree, out_tree = se.serialize(c)

    def refuse(*a, **k):
        raise AssertionError("pickle used")
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    np.testing.assert_allclose(se.deserialize_and_load(payload, in_tree, out_tree)(X), X * 3)


_SHARDED = r"""
import numpy as np, minijax
from minijax.experimental import serialize_executable as se
from minijax.sharding import Mesh, NamedSharding, PartitionSpec as P
from minijax.stages import serialize
mesh = Mesh(np.array(minijax.devices()), ("x",))
x = minijax.device_put(np.arange(4.0), NamedSharding(mesh, P("x")))
c = minijax.jit(lambda x: x * 2).lower(x).compile()
for fn in (se.serialize, serialize):
    try:
        fn(c)
    except ValueError as e:
        assert "partitioned over 2 devices" in str(e), e
    else:
        raise AssertionError("serialized a partitioned executable")
d1 = minijax.devices()[1]  # a single-device executable on another device loads there
y1 = minijax.device_put(np.arange(4.0), d1)
payload, it, ot = se.serialize(minijax.jit(lambda x: x * 2).lower(y1).compile())
out = se.deserialize_and_load(payload, it, ot, execution_devices=[d1])(y1)
assert out.devices() == {d1}, out.devices()
np.testing.assert_allclose(out, np.arange(4.0) * 2)
print("OK")
"""


@pytest.mark.slow
def test_partitioned_refused_and_other_device_on_2_devices():
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES="2", MINIJAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=2",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _SHARDED], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr
