"""Memory kinds on CPU against jax: the memories a device addresses, ``memory_kind`` of
shardings (checked, compared, printed as jax's), ``with_memory_kind``, ``jax.memory``.

Arrays in host memory (``device_put``, ``jit`` over them, memory-kind propagation,
lowering) are tested in ``tests/sharding/test_memory_kinds.py``.
"""

import jax
import numpy as np
import pytest

import minijax

KINDS = [None, "device", "pinned_host", "unpinned_host"]


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared with jax's
        return type(e).__name__, str(e)
    return None


def test_device_memories_like_jax():
    d, jd = minijax.devices()[0], jax.devices()[0]
    assert [m.kind for m in d.addressable_memories()] == \
        [m.kind for m in jd.addressable_memories()] == ["device", "pinned_host", "unpinned_host"]
    assert repr(d.default_memory()) == repr(jd.default_memory())
    assert d.default_memory().kind == "device"
    for k in KINDS[1:]:
        assert repr(d.memory(k)) == repr(jd.memory(k))
        assert d.memory(k).addressable_by_devices() == [d]
    assert _err(lambda: d.memory("bogus")) == _err(lambda: jd.memory("bogus"))


def test_memory_space_like_jax():
    assert [repr(s) for s in minijax.memory.Space] == [repr(s) for s in jax.memory.Space]
    assert repr(minijax.memory.Space.Host) == "MemorySpace.Host"
    assert minijax.memory.Space.Device is not minijax.memory.Space.Host


@pytest.mark.parametrize("kind", KINDS)
def test_single_device_sharding_like_jax(kind):
    d, jd = minijax.devices()[0], jax.devices()[0]
    s = minijax.sharding.SingleDeviceSharding(d, memory_kind=kind)
    js = jax.sharding.SingleDeviceSharding(jd, memory_kind=kind)
    assert s.memory_kind == js.memory_kind
    assert repr(s) == repr(js)
    plain = minijax.sharding.SingleDeviceSharding(d)
    jplain = jax.sharding.SingleDeviceSharding(jd)
    assert (s == plain) == (js == jplain)
    if s == plain:
        assert hash(s) == hash(plain)
    for k in KINDS[1:]:
        assert s.with_memory_kind(k).memory_kind == js.with_memory_kind(k).memory_kind == k
        assert repr(s.with_memory_kind(k)) == repr(js.with_memory_kind(k))


def test_named_sharding_memory_kind_like_jax():
    m = minijax.sharding.Mesh(np.array(minijax.devices()[:1]), ("x",))
    jm = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
    P, JP = minijax.sharding.PartitionSpec, jax.sharding.PartitionSpec
    for kind in KINDS:
        s = minijax.sharding.NamedSharding(m, P("x"), memory_kind=kind)
        js = jax.sharding.NamedSharding(jm, JP("x"), memory_kind=kind)
        assert s.memory_kind == js.memory_kind
        assert repr(s).endswith(f"memory_kind={js.memory_kind})"), repr(s)
        for k in KINDS[1:]:
            assert s.with_memory_kind(k).memory_kind == js.with_memory_kind(k).memory_kind
            assert (s.with_memory_kind(k) == s) == (js.with_memory_kind(k) == js)
        assert (s == minijax.sharding.NamedSharding(m, P("x"))) == \
            (js == jax.sharding.NamedSharding(jm, JP("x")))
    assert minijax.sharding.NamedSharding(m, P()).with_spec(P("x")).memory_kind == "device"
    mine = _err(lambda: minijax.sharding.NamedSharding(m, P(), memory_kind="bogus"))
    theirs = _err(lambda: jax.sharding.NamedSharding(jm, JP(), memory_kind="bogus"))
    assert mine == theirs and mine[0] == "ValueError"
    d, jd = minijax.devices()[0], jax.devices()[0]
    assert _err(lambda: minijax.sharding.SingleDeviceSharding(d, memory_kind="bogus")) == \
        _err(lambda: jax.sharding.SingleDeviceSharding(jd, memory_kind="bogus"))
    assert _err(lambda: minijax.sharding.SingleDeviceSharding(d).with_memory_kind("x")) == \
        _err(lambda: jax.sharding.SingleDeviceSharding(jd).with_memory_kind("x"))


def test_device_memory_arrays_like_jax():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    d, jd = minijax.devices()[0], jax.devices()[0]
    a = minijax.device_put(x, minijax.sharding.SingleDeviceSharding(d, memory_kind="device"))
    ja = jax.device_put(x, jax.sharding.SingleDeviceSharding(jd, memory_kind="device"))
    assert a.sharding.memory_kind == ja.sharding.memory_kind == "device"
    assert repr(a.sharding) == repr(ja.sharding)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(ja))
    out = minijax.jit(lambda v: v * 2, out_shardings=minijax.sharding.SingleDeviceSharding(
        d, memory_kind="device"))(a)
    assert out.sharding.memory_kind == "device"
    np.testing.assert_array_equal(np.asarray(out), x * 2)
