"""Tests of minijax.runtime: backends, Array, transfers, executables."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import textwrap
import threading

import ml_dtypes
import numpy as np
import pytest

from minijax.config import config
from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.runtime import (
    Array,
    Executable,
    MemoryAnalysis,
    backend,
    block_until_ready,
    compile,
    default_backend,
    deserialize,
    device_count,
    device_put,
    devices,
    get_backend,
    local_devices,
    sharding_for,
    to_numpy,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ADD_F32 = """
module @jit_f {
  func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> tensor<3xf32> {
    %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%0) : (tensor<3xf32>) -> ()
  }
}
"""

# Two outputs of different types: (a + b, a * b) on i32[2,2] and the f32 sum of a.
TWO_OUTPUTS = """
module @jit_g {
  func.func public @main(%a: tensor<2x2xi32>, %b: tensor<2x2xi32>)
      -> (tensor<2x2xi32>, tensor<2x2xi32>) {
    %0 = "stablehlo.add"(%a, %b) : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
    %1 = "stablehlo.multiply"(%a, %b) : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
    "func.return"(%0, %1) : (tensor<2x2xi32>, tensor<2x2xi32>) -> ()
  }
}
"""

DONATING_ADD = ADD_F32.replace("%arg0: tensor<3xf32>,",
                               "%arg0: tensor<3xf32> {tf.aliasing_output = 0 : i32},")

ALL_DTYPES = [np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, ml_dtypes.bfloat16, np.float16, np.float32, np.float64, np.complex64,
    np.complex128)]


@pytest.fixture(params=[False, True], ids=["x32", "x64"])
def x64_mode(request):
    """Run with minijax_enable_x64 off and on; restores the previous value."""
    prev = config.minijax_enable_x64
    config.update("minijax_enable_x64", request.param)
    try:
        yield request.param
    finally:
        config.update("minijax_enable_x64", prev)


@pytest.fixture
def enable_x64():
    prev = config.minijax_enable_x64
    config.update("minijax_enable_x64", True)
    try:
        yield
    finally:
        config.update("minijax_enable_x64", prev)


def _sample(dt: np.dtype, shape=(2, 3)) -> np.ndarray:
    n = int(np.prod(shape))
    if dt == np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    vals = np.arange(n) * 3 % 7 + 1
    if dt.kind == "c":
        return (vals + 1j * vals[::-1]).astype(dt).reshape(shape)
    if dt.kind in "fcV" or dt == ml_dtypes.bfloat16:
        return (vals / 4).astype(dt).reshape(shape)
    return vals.astype(dt).reshape(shape)


def _run_python(code: str, env: dict | None = None) -> str:
    code = textwrap.dedent(code).replace("@ADD_F32@", ADD_F32)
    full_env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True,
                          text=True, env=full_env, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


# ---- backends -----------------------------------------------------------------------------------

def test_cpu_backend_and_devices():
    b = get_backend("cpu")
    assert b.platform == "cpu"
    assert b.devices and b.default_device is b.devices[0]
    assert get_backend("cpu") is b  # created once
    assert default_backend() in ("cpu", "gpu")
    assert device_count() == len(devices()) >= 1
    assert local_devices() == devices()
    assert all(d.platform == default_backend() or default_backend() == "gpu" for d in devices())


def test_sharding_for_is_cached_and_usable_by_jaxlib():
    d = devices()[0]
    s = sharding_for(d)
    assert sharding_for(d) is s
    assert s._device_assignment == (d,)
    assert s.is_fully_replicated and s.is_fully_addressable
    assert str(s._to_xla_hlo_sharding(2)) == "{replicated}"


def test_unknown_platform():
    # jax: RuntimeError "Unknown backend ..." (what chex's tests catch probing for a TPU)
    with pytest.raises(RuntimeError, match="Unknown backend tpu-of-the-future"):
        get_backend("tpu-of-the-future")
    with pytest.raises(RuntimeError, match="Unknown backend"):
        devices("tpu")


def test_num_cpu_devices_change_after_creation_raises():
    b = get_backend("cpu")
    prev = config.minijax_num_cpu_devices
    with pytest.raises(RuntimeError, match="before the CPU backend is first used"):
        config.update("minijax_num_cpu_devices", len(b.devices) + 3)
    config.update("minijax_num_cpu_devices", prev)  # setting it back is fine
    assert len(get_backend("cpu").devices) == len(b.devices)


def test_x64_state_follows_config():
    prev = config.minijax_enable_x64
    try:
        config.update("minijax_enable_x64", True)
        assert backend._x64_state.get_global() is True
        config.update("minijax_enable_x64", False)
        assert backend._x64_state.get_global() is False
    finally:
        config.update("minijax_enable_x64", prev)


@pytest.mark.slow
def test_several_cpu_devices_in_subprocess():
    out = _run_python("""
        import numpy as np
        import minijax.runtime as rt
        ds = rt.devices("cpu")
        assert len(ds) == 3, ds
        x = rt.device_put(np.arange(3, dtype=np.float32))
        assert x.device == ds[0]
        y = rt.device_put(x, ds[2])
        assert y.device == ds[2] and y is not x
        assert rt.device_put(y, ds[2]) is y
        np.testing.assert_array_equal(np.asarray(y), [0, 1, 2])
        e = rt.compile('''@ADD_F32@''', "cpu", device=ds[2])
        (z,) = e.execute([y._buf, y._buf])
        assert z.device == ds[2]
        np.testing.assert_array_equal(np.asarray(z), [0, 2, 4])
        print("ok")
    """, env={"MINIJAX_NUM_CPU_DEVICES": "3", "MINIJAX_PLATFORMS": "cpu"})
    assert out.strip().endswith("ok")


# ---- device_put ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (0,), (2, 3)], ids=["0d", "empty", "2x3"])
def test_device_put_round_trip(x64_mode, dt, shape):
    value = _sample(dt, shape) if shape != (0,) else np.zeros((0,), dt)
    x = device_put(value)
    expected_dtype = dtypes.canonicalize(dt)
    if not x64_mode:
        assert expected_dtype.itemsize <= 8 and expected_dtype not in (
            np.dtype(np.int64), np.dtype(np.uint64), np.dtype(np.float64),
            np.dtype(np.complex128))
    assert isinstance(x, Array)
    assert x.dtype == expected_dtype
    assert x.shape == shape and x.ndim == len(shape) and x.size == value.size
    assert x.weak_type is False
    assert x.aval == ShapedArray(shape, expected_dtype, False)
    assert x.nbytes == value.size * expected_dtype.itemsize
    host = np.asarray(x)
    assert host.dtype == expected_dtype and host.shape == shape
    np.testing.assert_array_equal(host, value.astype(expected_dtype))
    assert not host.flags.writeable
    np.testing.assert_array_equal(to_numpy(x), host)


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=lambda d: d.name)
def test_device_put_numpy_scalar(x64_mode, dt):
    value = _sample(dt, ())[()]
    assert isinstance(value, np.generic)
    x = device_put(value)
    assert x.shape == () and x.dtype == dtypes.canonicalize(dt) and not x.weak_type
    assert np.asarray(x) == value.astype(x.dtype)


def test_device_put_copies_mutable_numpy_input():
    for n in (3, 1000, 100_000):  # small and large (aligned) buffers alike
        a = np.zeros(n, np.float32)
        x = device_put(a)
        a[0] = 5.0
        assert float(np.asarray(x)[0]) == 0.0


def test_device_put_big_endian_and_unsupported():
    a = np.arange(3, dtype=">f4")
    x = device_put(a)
    assert x.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(x), a)
    with pytest.raises(TypeError, match="does not support dtype"):
        device_put(np.array(["a"]))


def test_device_put_non_contiguous():
    a = np.arange(12.0, dtype=np.float32).reshape(3, 4)[:, ::2].T
    np.testing.assert_array_equal(np.asarray(device_put(a)), a)


@pytest.mark.parametrize("value, x32, x64", [
    (True, "bool", "bool"),
    (3, "int32", "int64"),
    (2.5, "float32", "float64"),
    (1 + 2j, "complex64", "complex128"),
])
def test_python_scalars_are_weakly_typed(x64_mode, value, x32, x64):
    x = device_put(value)
    assert x.dtype == np.dtype(x64 if x64_mode else x32)
    assert x.shape == ()
    assert x.weak_type is (not isinstance(value, bool))
    assert x.item() == value


def test_python_int_overflow(x64_mode):
    if x64_mode:
        assert int(device_put(2**40)) == 2**40
        with pytest.raises(OverflowError, match="int64"):
            device_put(2**63)
    else:
        with pytest.raises(OverflowError, match="too large to convert to int32"):
            device_put(2**31)
        assert int(device_put(-(2**31))) == -(2**31)


def test_lists_and_tuples(x64_mode):
    x = device_put([1, 2, 3])
    assert x.dtype == (np.int64 if x64_mode else np.int32) and not x.weak_type
    y = device_put(((1.0, 2.0), (3.0, 4.0)))
    assert y.shape == (2, 2) and y.dtype == (np.float64 if x64_mode else np.float32)
    np.testing.assert_array_equal(np.asarray(y), [[1, 2], [3, 4]])
    with pytest.raises(TypeError):
        device_put([1, "a", None])
    with pytest.raises(TypeError):
        device_put(object())


def test_device_put_array_is_identity_on_same_device():
    x = device_put(np.ones(3, np.float32))
    assert device_put(x) is x
    assert device_put(x, x.device) is x


def test_float64_narrowing_when_x64_off():
    prev = config.minijax_enable_x64
    config.update("minijax_enable_x64", False)
    try:
        x = device_put(np.array([1.5, 2.5]))
        assert x.dtype == np.float32
    finally:
        config.update("minijax_enable_x64", prev)


# ---- Array --------------------------------------------------------------------------------------

def test_array_not_constructible_directly():
    with pytest.raises(TypeError, match="cannot be constructed directly"):
        Array()


def test_array_scalar_conversions():
    f = device_put(2.5)
    i = device_put(7)
    c = device_put(1 + 2j)
    b = device_put(np.array([1, 2, 3], np.int32))
    assert float(f) == 2.5 and int(f) == 2 and complex(c) == 1 + 2j
    assert int(i) == 7 and [10, 20, 30, 40, 50, 60, 70, 80][i] == 80  # __index__
    assert bool(device_put(1.0)) and not bool(device_put(0))
    assert f.item() == 2.5 and b.item(1) == 2 and b.tolist() == [1, 2, 3]
    with pytest.raises(TypeError, match="Only scalar arrays"):
        float(b)
    with pytest.raises(TypeError, match="Only integer scalar arrays"):
        [1, 2][f]
    with pytest.raises(TypeError, match="Only integer scalar arrays"):
        [1, 2][b]
    with pytest.raises(ValueError, match="ambiguous"):
        bool(b)
    with pytest.raises(ValueError, match="empty array"):
        bool(device_put(np.zeros(0)))


def test_array_len_iter_hash():
    x = device_put(np.arange(6, dtype=np.int32).reshape(3, 2))
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3 and all(isinstance(r, Array) for r in rows)
    assert rows[1].shape == (2,) and rows[1].tolist() == [2, 3]
    assert [int(v) for v in device_put(np.arange(3))] == [0, 1, 2]
    assert device_put(1.0).weak_type and next(iter(device_put([1.0, 2.0]))).weak_type is False
    s = device_put(1.0)
    with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
        len(s)
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        iter(s)
    with pytest.raises(TypeError, match="unhashable type"):
        hash(x)
    assert Array.__array_priority__ == 100


def test_array_numpy_protocol():
    x = device_put(np.array([1.0, 2.0], np.float32))
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    y = np.array(x)  # copy: writeable
    y[0] = 9
    assert float(np.asarray(x)[0]) == 1.0
    assert np.asarray(x, copy=True).flags.writeable
    np.testing.assert_array_equal(np.add(x, 1), [2.0, 3.0])
    np.testing.assert_array_equal(np.from_dlpack(x), [1.0, 2.0])
    assert x.__dlpack_device__() == (1, 0) or default_backend() != "cpu"


def test_array_devices_and_sync():
    x = device_put(np.ones((2, 2), np.float32))
    assert x.device in devices()
    assert x.devices() == {x.device}
    assert x.block_until_ready() is x
    assert x.is_ready()
    x.copy_to_host_async()
    assert block_until_ready({"a": [x, (x,)], "b": 3}) == {"a": [x, (x,)], "b": 3}
    assert block_until_ready(x) is x
    assert isinstance(x.unsafe_buffer_pointer(), int)


def test_block_until_ready_waits_for_a_whole_tree_at_once(monkeypatch):
    from jaxlib import _jax

    import minijax
    waited = []
    real = _jax.batched_block_until_ready
    monkeypatch.setattr(_jax, "batched_block_until_ready", lambda bufs: (waited.append(
        len(bufs)), real(bufs))[1])
    xs = [device_put(np.full(3, i, np.float32)) for i in range(5)]
    tree = {"xs": xs, "again": xs[0], "n": 3, "host": np.ones(2)}
    out = minijax.jit(lambda t: {"ys": [x * 2 for x in t["xs"]], "n": t["n"]})(tree)
    assert block_until_ready(out) is out and block_until_ready(tree) is tree
    assert waited == [6, 6]  # one wait per tree (out["n"] is an array; xs[0] is in twice)
    assert all(y.is_ready() for y in out["ys"])
    xs[3].delete()
    with pytest.raises(RuntimeError, match="deleted"):
        block_until_ready(tree)
    assert block_until_ready([xs[0], xs[1]])[0] is xs[0]
    done = threading.Thread(target=xs[0].delete)  # takes the lock: all were released
    done.start()
    done.join(timeout=10)
    assert not done.is_alive() and xs[0].is_deleted()


def test_pickle_and_copy():
    x = device_put(np.arange(4, dtype=np.int32))
    for y in (pickle.loads(pickle.dumps(x)), copy.deepcopy(x)):
        assert isinstance(y, Array) and y.dtype == x.dtype and not y.weak_type
        np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    w = pickle.loads(pickle.dumps(device_put(2.0)))
    assert w.weak_type and float(w) == 2.0


def test_str_and_format():
    x = device_put(np.array([1.0, 2.0], np.float32))
    assert str(x) == "[1. 2.]"
    assert f"{device_put(2.5):.2f}" == "2.50"
    assert str(device_put(3)) == "3"


@pytest.mark.parametrize("value", [
    1.0, 1, True, 2 + 3j, -0.0, 1e20, [1.0, 2.0], [1, 2], [[True, False]], (1.5, 2.5, 3.5),
    np.float32(1.5), np.int8(-3), np.uint32(7), np.arange(6).reshape(2, 3),
    np.arange(12.0).reshape(2, 3, 2), np.zeros((0, 3)), np.zeros((2, 0), np.int32),
    np.ones((3, 40)), np.arange(2000.0), np.array([1e10, 1e-5]), np.array([np.nan, np.inf]),
    np.array([1.25, -2.5], ml_dtypes.bfloat16), np.array([0.5, 3], np.float16),
    np.array([1, 200], np.uint8), np.array([1 + 1j, 2], np.complex64),
    np.array([[1, 2], [3, 4]], np.int16),
], ids=repr)
def test_repr_matches_jax(value):
    jnp = pytest.importorskip("jax.numpy")
    x = device_put(value)
    ref = jnp.asarray(value)
    assert repr(x) == repr(ref)
    assert str(x) == str(ref)
    assert x.weak_type == ref.weak_type


@pytest.mark.parametrize("value", [1.0, 3, [1.5, 2.5], np.arange(4.0), np.arange(3), 1j])
def test_repr_matches_jax_x64(enable_x64, value):
    jax = pytest.importorskip("jax")
    prev = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        ref = jax.numpy.asarray(value)
        x = device_put(value)
        assert repr(x) == repr(ref)
        assert x.dtype == ref.dtype
    finally:
        jax.config.update("jax_enable_x64", prev)


# ---- deletion and donation ----------------------------------------------------------------------

def test_deleted_array_raises():
    x = device_put(np.arange(3, dtype=np.float32))
    x.delete()
    assert x.is_deleted()
    s = device_put(2.0)
    s.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        float(s)
    for use in (np.asarray, lambda a: a.block_until_ready(), lambda a: a.tolist(),
                lambda a: a.device, lambda a: list(a), to_numpy, lambda a: a.item(0),
                lambda a: device_put(a), lambda a: a.copy_to_host_async()):
        with pytest.raises(RuntimeError, match="deleted"):
            use(x)
    assert "deleted" in repr(x)
    assert x.shape == (3,)  # metadata stays readable
    e = compile(ADD_F32)
    with pytest.raises(RuntimeError, match="deleted"):
        e(x, x)


@pytest.mark.slow
def test_delete_while_host_views_are_alive_is_safe():
    # jaxlib aborts the process if an exported array is deleted while a DLPack
    # capsule lives; run in a subprocess so a regression cannot kill pytest.
    out = _run_python("""
        import ml_dtypes, numpy as np
        import minijax.runtime as rt
        x = rt.device_put(np.arange(3.0))
        v = np.asarray(x)          # buffer-protocol view
        d = np.from_dlpack(x)      # DLPack export
        x.delete()
        assert v.tolist() == [0, 1, 2] and d.tolist() == [0, 1, 2]
        b = rt.device_put(np.arange(3).astype(ml_dtypes.bfloat16))
        bv = np.asarray(b)
        b.delete()
        assert bv.tolist() == [0, 1, 2]
        del v, d, bv
        print("ok")
    """)
    assert out.strip().endswith("ok")


def test_donated_array_raises():
    e = compile(DONATING_ADD, donated=(0,))
    assert e.memory_analysis().alias_size_in_bytes == 12
    x = device_put(np.arange(3, dtype=np.float32))
    y = device_put(np.ones(3, np.float32))
    (z,) = e(x, y)
    np.testing.assert_array_equal(np.asarray(z), [1, 2, 3])
    if x.is_deleted():  # XLA:CPU reuses the buffer
        with pytest.raises(RuntimeError, match="donated"):
            np.asarray(x)
    assert not y.is_deleted()


# ---- compile and execute ------------------------------------------------------------------------

def test_compile_and_execute_add():
    e = compile(ADD_F32)
    assert isinstance(e, Executable)
    assert e.out_avals == [ShapedArray((3,), np.float32)]
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = np.array([10.0, -20.0, 0.5], np.float32)
    x, y = device_put(a), device_put(b)
    outs = e.execute([x._buf, y._buf])
    assert len(outs) == 1 and isinstance(outs[0], Array)
    np.testing.assert_array_equal(np.asarray(outs[0]), a + b)
    assert outs[0].dtype == np.float32 and not outs[0].weak_type
    for _ in range(3):  # repeated calls reuse the handlers
        (z,) = e(x, y)
        np.testing.assert_array_equal(np.asarray(z), a + b)


def test_compile_bytes_and_out_avals_with_weak_types():
    aval = ShapedArray((3,), np.float32, weak_type=True)
    e = compile(ADD_F32.encode(), get_backend(), out_avals=[aval])
    x = device_put(np.ones(3, np.float32))
    (z,) = e.execute([x._buf, x._buf])
    from minijax.runtime.array import intern_aval
    assert z.weak_type and z.aval == aval and z.aval is intern_aval(aval)
    assert repr(z) == "Array([2., 2., 2.], dtype=float32, weak_type=True)"


def test_compile_two_outputs():
    e = compile(TWO_OUTPUTS)
    assert e.out_avals == [ShapedArray((2, 2), np.int32)] * 2
    a = np.array([[1, 2], [3, 4]], np.int32)
    b = np.array([[5, 6], [7, -8]], np.int32)
    s, p = e.execute([device_put(a)._buf, device_put(b)._buf])
    np.testing.assert_array_equal(np.asarray(s), a + b)
    np.testing.assert_array_equal(np.asarray(p), a * b)


def test_executable_analyses():
    e = compile(ADD_F32)
    text = e.hlo_text()
    assert text.startswith("HloModule jit_f") and "add(" in text
    cost = e.cost_analysis()
    assert isinstance(cost, dict) and cost["flops"] == 3.0 and "bytes accessed" in cost
    mem = e.memory_analysis()
    assert isinstance(mem, MemoryAnalysis)
    for field in ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
                  "temp_size_in_bytes", "generated_code_size_in_bytes"):
        assert isinstance(getattr(mem, field), int)
    assert mem.argument_size_in_bytes == 24 and mem.output_size_in_bytes == 12
    assert mem.alias_size_in_bytes == 0
    assert "LoadedExecutable" in type(e.loaded).__name__


def test_serialize_round_trip():
    e = compile(ADD_F32)
    data = e.serialize()
    assert isinstance(data, bytes) and len(data) > 0
    e2 = deserialize(data, e.out_avals)
    x = device_put(np.array([1.0, 2.0, 3.0], np.float32))
    (z,) = e2.execute([x._buf, x._buf])
    np.testing.assert_array_equal(np.asarray(z), [2.0, 4.0, 6.0])


def test_optimized_hlo_matches_jax():
    jax = pytest.importorskip("jax")
    lowered = jax.jit(lambda a, b: (a + b, a * b)).lower(np.ones(3, np.float32),
                                                        np.ones(3, np.float32))
    e = compile(lowered.as_text(debug_info=True), num_args=2,
                out_avals=[ShapedArray((3,), np.float32)] * 2)
    assert e.hlo_text() == lowered.compile().as_text()


def test_compile_error_is_reported():
    with pytest.raises(Exception, match="(?i)parse|expected|error"):
        compile("module { this is not mlir }")


@pytest.mark.slow
def test_coexists_with_jax_imported_first():
    out = _run_python("""
        import jax, jax.numpy as jnp
        import numpy as np
        import minijax.runtime as rt
        x = rt.device_put(np.arange(3, dtype=np.float32))
        (z,) = rt.compile('''@ADD_F32@''').execute([x._buf, x._buf])
        assert repr(z) == "Array([0., 2., 4.], dtype=float32)", repr(z)
        assert type(z) is rt.Array
        j = jax.jit(lambda a: a * 2)(jnp.arange(3.0))
        assert repr(j) == "Array([0., 2., 4.], dtype=float32)"
        print("ok")
    """)
    assert out.strip().endswith("ok")


def test_executions_do_not_accumulate_python_objects():
    # jaxlib queues Python objects released on its worker threads until
    # _jax.collect_garbage(). jax runs it after each garbage collection, and so does
    # minijax, but a steady loop never triggers one: minijax also drains the queue every
    # backend.COLLECT_EVERY arrays it builds. Without that, every call below left one
    # object behind. Garbage collection stays off here, so only that drain can help.
    import gc

    import minijax
    from minijax.runtime.backend import COLLECT_EVERY, _collect_jaxlib_garbage
    assert _collect_jaxlib_garbage in gc.callbacks
    f = minijax.jit(lambda a, b: a * b + 1.0)
    x = device_put(np.ones(8, np.float32))
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(1000):
            f(x, x)
        f(x, x).block_until_ready()
        before = sys.getallocatedblocks()
        for _ in range(20000):
            out = f(x, x)
        out.block_until_ready()
        grew = sys.getallocatedblocks() - before
    finally:
        if was_enabled:
            gc.enable()
    assert grew < 2 * COLLECT_EVERY + 500, grew  # 20000 without the drain


@pytest.mark.slow
def test_xla_flags_host_device_count_gives_that_many_cpu_devices():
    # jax's shard_map guide sets XLA_FLAGS before importing, then builds a (4, 2) mesh
    code = ("import minijax, numpy as np\n"
            "from minijax.sharding import NamedSharding, PartitionSpec as P\n"
            "mesh = minijax.make_mesh((4, 2), ('x', 'y'))\n"
            "s = NamedSharding(mesh, P('x', 'y'))\n"
            "a = minijax.device_put(np.arange(16.).reshape(8, 2), s)\n"
            "print(minijax.device_count(), len(a.addressable_shards), float(a.sum()))\n")
    env = {k: v for k, v in os.environ.items() if k != "MINIJAX_NUM_CPU_DEVICES"}
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["8", "8", "120.0"]
    env["MINIJAX_NUM_CPU_DEVICES"] = "2"  # minijax's own setting wins, as jax_num_cpu_devices
    out = subprocess.run([sys.executable, "-c", "import minijax; print(minijax.device_count())"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["2"], out.stderr
