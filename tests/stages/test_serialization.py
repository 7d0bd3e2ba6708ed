"""minijax.stages.serialize / deserialize: a Compiled round trip without compiling."""

import collections
import json
import struct

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.runtime.executable import compile_count
from minijax.stages import DeserializationError, deserialize, serialize

Pair = collections.namedtuple("Pair", "first second")  # a custom node (not proto-encodable)
X = np.linspace(-1, 1, 6).astype(np.float32)


def loss(params, x, *, scale):
    return {"y": jnp.tanh(x * params["w"]) * scale, "aux": Pair(x + params["b"], params["b"])}


@pytest.fixture(scope="module")
def compiled():
    return minijax.jit(loss).lower({"b": 0.5, "w": 2.0}, X, scale=jnp.float32(3.0)).compile()


def test_round_trip_runs_without_compiling(compiled):
    data = serialize(compiled)
    assert isinstance(data, bytes)
    before = compile_count()
    loaded = deserialize(data)
    assert compile_count() == before
    assert loaded.in_tree == compiled.in_tree and loaded.out_tree == compiled.out_tree
    assert loaded.in_avals == compiled.in_avals and loaded.out_avals == compiled.out_avals
    args = ({"b": 0.5, "w": 2.0}, X)
    ours = loaded(*args, scale=np.float32(3.0))
    ref = compiled(*args, scale=np.float32(3.0))
    np.testing.assert_allclose(np.asarray(ours["y"]), np.tanh(X * 2) * 3, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(ours["y"]), np.asarray(ref["y"]))
    assert isinstance(ours["aux"], Pair)
    assert ours["aux"].second.weak_type == ref["aux"].second.weak_type
    assert compile_count() == before
    assert loaded.as_text() == compiled.as_text()
    assert loaded.memory_analysis() == compiled.memory_analysis()
    with pytest.raises(TypeError, match="compiled for f32\\[6\\] but called with f32\\[2\\]"):
        loaded(*({"b": 0.5, "w": 2.0}, np.ones(2, np.float32)), scale=np.float32(1.0))


def test_round_trip_keeps_donation():
    c = minijax.jit(lambda x: x + 1, donate_argnums=0).lower(jnp.ones(3)).compile()
    loaded = deserialize(serialize(c))
    assert loaded.args_info[0][0].donated
    x = jnp.ones(3)
    np.testing.assert_array_equal(np.asarray(loaded(x)), [2, 2, 2])
    assert x.is_deleted()


def test_other_platform_or_jaxlib_is_refused(compiled):
    data = serialize(compiled)
    magic_len = data.index(b"\n") + 1
    (n,) = struct.unpack_from("<Q", data, magic_len)
    header = json.loads(data[magic_len + 8:magic_len + 8 + n])
    for field, value in (("jaxlib", "0.0.1"), ("platform", "tpu")):
        h = dict(header)
        h["platform"] = h["platform"].replace(
            next(p for p in h["platform"].split(";") if p.startswith(field + "=")),
            f"{field}={value}")
        blob = json.dumps(h).encode()
        forged = data[:magic_len] + struct.pack("<Q", len(blob)) + blob + \
            data[magic_len + 8 + n:]
        with pytest.raises(DeserializationError, match=f"serialized for .*{value}"):
            deserialize(forged)


@pytest.mark.parametrize("data, message", [
    (b"not a compiled function", "bad magic"),
    (b"MINIJAX-COMPILED\n\x05\x00", "damaged"),
])
def test_garbage_is_refused(data, message):
    with pytest.raises(DeserializationError, match=message):
        deserialize(data)


def test_unpicklable_custom_node_is_a_clear_error():
    class Local:  # defined in a function: pickle cannot find it
        def __init__(self, v):
            self.v = v

    minijax.tree_util.register_pytree_node(Local, lambda o: ((o.v,), None),
                                           lambda _, c: Local(*c))
    c = minijax.jit(lambda o: o.v * 2).lower(Local(jnp.ones(2))).compile()
    with pytest.raises(ValueError, match="cannot serialize the argument structure"):
        serialize(c)
