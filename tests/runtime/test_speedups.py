"""The optional C extension (runtime/_speedups.c) and its pure-Python fallback."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import sysconfig
import weakref

import ml_dtypes
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.runtime import Array, device_put
from minijax.runtime._native import speedups

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

needs_speedups = pytest.mark.skipif(speedups is None, reason="C extension not built")


def _can_build_extensions() -> bool:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    return shutil.which(cc) is not None and os.path.exists(headers)


def test_extension_is_built_when_a_compiler_exists():
    # `pip install -e .` builds it; it may only be missing where nothing can compile it
    # (no C compiler or no Python headers), or when it is switched off on purpose.
    if os.environ.get("MINIJAX_NO_C_EXTENSION", "") not in ("", "0"):
        assert speedups is None
    elif _can_build_extensions():
        assert speedups is not None, (
            "minijax.runtime._speedups is not built; run `pip install -e .` again "
            "(or `python setup.py build_ext --inplace`)")
        assert issubclass(Array, speedups.ArrayBase)
        assert issubclass(minijax.jit(lambda x: x).__class__, speedups.DispatchBase)


@needs_speedups
def test_buffer_protocol_reads_cpu_arrays_without_array_method(monkeypatch):
    x = device_put(np.arange(6, dtype=np.float32).reshape(2, 3))
    calls = []
    original = Array.__array__
    monkeypatch.setattr(Array, "__array__", lambda *a, **k: calls.append(1) or original(*a, **k))
    y = np.asarray(x)
    assert calls == []  # read through the buffer protocol, not __array__
    np.testing.assert_array_equal(y, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert not y.flags.writeable
    m = memoryview(x)
    assert m.shape == (2, 3) and m.readonly and m.itemsize == 4
    assert bytes(x) == np.arange(6, dtype=np.float32).tobytes()


@pytest.mark.parametrize("dt", ["bool", "int8", "uint32", "int64", "float16", "float32",
                                "complex64", ml_dtypes.bfloat16])
def test_numpy_conversion_every_dtype(dt):
    host = (np.arange(6) % 3).reshape(3, 2).astype(dt)
    x = device_put(host)
    for _ in range(2):  # the second read may come from a cached host copy
        y = np.asarray(x)
        assert y.dtype == x.dtype and y.shape == (3, 2)
        np.testing.assert_array_equal(y, host.astype(x.dtype))


def test_deleted_and_donated_arrays_raise_runtime_error_not_buffer_error():
    x = device_put(np.ones(3, np.float32))
    x.delete()
    with pytest.raises(RuntimeError, match="has been deleted"):
        np.asarray(x)
    if speedups is not None:
        with pytest.raises(BufferError):
            memoryview(x)
    f = minijax.jit(lambda a: a + 1.0, donate_argnums=0)
    y = device_put(np.ones(3, np.float32))
    f(y)
    with pytest.raises(RuntimeError, match="donated to jit"):
        np.asarray(y)


def test_host_view_outlives_the_array():
    x = device_put(np.arange(1000, dtype=np.float32))
    y = np.asarray(x)
    m = memoryview(x) if speedups is not None else memoryview(y)
    del x
    gc.collect()
    np.testing.assert_array_equal(y, np.arange(1000, dtype=np.float32))
    np.testing.assert_array_equal(np.frombuffer(m, np.float32), y)


def test_arrays_are_weakrefable_and_freed():
    x = device_put(np.ones(3, np.float32))
    r = weakref.ref(x)
    assert r() is x
    del x
    assert r() is None  # freed by reference counting, no cycle
    outs = [minijax.jit(lambda a: a * 2)(device_put(np.ones(2))) for _ in range(3)]
    refs = [weakref.ref(o) for o in outs]
    del outs
    assert all(r() is None for r in refs)


def test_array_fields_and_construction():
    x = jnp.arange(3.0)
    assert x.aval.shape == (3,) and x._npy is None and x._donated is False
    with pytest.raises(TypeError, match="cannot be constructed directly"):
        Array()
    assert not hasattr(x, "__dict__")  # fields only: no per-instance dict


@needs_speedups
def test_runner_runs_executables_as_the_python_closure():
    from minijax.runtime.executable import Executable
    from minijax.tree_util import tree_structure
    c = minijax.jit(lambda a, b: (a * b, {"s": a + b})).lower(jnp.ones(3), jnp.ones(3)).compile()
    exe: Executable = c.executable
    x, y = jnp.arange(3.0), jnp.full(3, 2.0)
    tree = tree_structure((0, {"s": 0}))
    run = exe.runner(tree)
    assert type(run) is speedups.Runner
    out = run([x._buf, y._buf])
    np.testing.assert_array_equal(np.asarray(out[0]), [0, 2, 4])
    np.testing.assert_array_equal(np.asarray(out[1]["s"]), [2, 3, 4])
    assert type(out[0]) is Array and out[0].aval is exe.out_avals[0]
    short = speedups.Runner(exe.loaded.execute_sharded, exe._handlers[:1],
                            tuple(exe.out_avals[:1]), None)
    with pytest.raises(ValueError, match="Mismatch"):  # jaxlib's error passes through
        short([x._buf, y._buf])
    with pytest.raises(TypeError, match="exactly one argument"):
        run([x._buf, y._buf], 1)
    for bad in [(None, [], (), None), (len, [], (1,), None), (len, [1], (1,), 5)]:
        with pytest.raises(TypeError, match="Runner"):
            speedups.Runner(*bad)
    with pytest.raises(Exception):  # jaxlib's own error for a wrong argument count
        run([x._buf])


def test_dispatch_fast_path_matches_slow_path():
    f = minijax.jit(lambda a, b: a * b + 1.0)
    a, b = jnp.arange(4.0), jnp.ones(4)
    first = f(a, b)  # traces, compiles, fills the fast cache
    assert f._fast
    np.testing.assert_array_equal(f(a, b), first)
    np.testing.assert_array_equal(f(a, b=b), first)  # keyword: the slow path
    np.testing.assert_array_equal(f(np.arange(4.0, dtype=np.float32), b), first)
    three = minijax.jit(lambda a, b, c: a + b + c)
    three(a, b, a)
    np.testing.assert_array_equal(three(a, b, a), 2 * np.arange(4.0) + 1)
    assert minijax.jit(lambda: 1.0)() == 1.0  # no arguments
    # Under a trace the fast path must not run: grad sees the jit primitive.
    g = minijax.grad(lambda x: f(x, x).sum())(a)
    np.testing.assert_allclose(g, 2 * np.arange(4.0))


def test_dispatch_error_from_run_propagates_unchanged():
    f = minijax.jit(lambda a: a + 1.0)
    a = jnp.arange(3.0)
    f(a)
    key = next(iter(f._fast))

    class Boom(Exception):
        pass

    def run(bufs):
        raise Boom("from run")
    f._fast[key] = run
    with pytest.raises(Boom, match="from run"):
        f(a)


def test_dispatch_deleted_argument_gets_clear_error():
    f = minijax.jit(lambda a: a + 1.0)
    a = jnp.arange(3.0)
    f(a)
    a.delete()
    with pytest.raises(RuntimeError, match="has been deleted"):
        f(a)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("MINIJAX_NO_C_EXTENSION", "") not in ("", "0"),
                    reason="already running without the extension")
def test_pure_python_fallback_passes_the_runtime_and_dispatch_tests():
    # The same tests with the extension switched off (as on a machine without a C
    # compiler): the fallback must behave identically.
    env = dict(os.environ, MINIJAX_NO_C_EXTENSION="1")
    # The files whose tests go through what the extension speeds up (arrays, transfers,
    # dispatch, donation, fused calls, forwarded outputs, user frames); the runtime's
    # reliability and DLPack tests do not touch it.
    files = ["tests/runtime/test_runtime.py", "tests/runtime/test_transfer_pytrees.py",
             "tests/stages/test_dispatch.py", "tests/stages/test_donation.py",
             "tests/stages/test_jit.py", "tests/stages/test_fused.py",
             "tests/stages/test_forwarding.py", "tests/core/test_traceback.py"]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "no:xdist", *files], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert " passed" in r.stdout


@needs_speedups
def test_user_frame_finds_the_users_line_as_the_python_walk():
    from minijax.core import trace
    from minijax.core.jaxpr import SourceInfo
    here = sys._getframe()
    line = here.f_lineno + 1
    got = speedups.user_frame(here, {__file__: False}, SourceInfo)
    assert got == SourceInfo(__file__, line, here.f_code.co_name)
    assert speedups.user_frame(here, {}, SourceInfo) is NotImplemented  # unclassified file
    assert speedups.user_frame(here, dict.fromkeys([__file__], True), SourceInfo) \
        is NotImplemented  # pytest's own files next
    # Equations made through numpy and lax point at this line, with and without the C walk.
    for walker in (speedups.user_frame, None):
        trace.set_frame_walker(walker)
        try:
            line = sys._getframe().f_lineno + 1
            jaxpr = minijax.make_jaxpr(lambda x: jnp.sin(x) * 2)(1.0)
        finally:
            trace.set_frame_walker(speedups.user_frame)
        assert {e.source.line for e in jaxpr.jaxpr.eqns} == {line}
