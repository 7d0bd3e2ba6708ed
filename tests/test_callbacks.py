"""Host callbacks against jax: pure_callback, io_callback, debug.callback, debug.print.

Each program runs under both libraries (``L`` is ``jax`` or ``minijax``) and what the
callbacks saw (values, shapes, order) or printed is compared.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp
from minijax.experimental import io_callback as mj_io_callback

LIBS = pytest.mark.parametrize("L", [jax, minijax], ids=["jax", "minijax"])


def _np(L):
    return jjnp if L is jax else mjnp


def _io(L):
    return jax.experimental.io_callback if L is jax else mj_io_callback


def _both(run):
    """``run(L)`` for jax and minijax; each result converted to NumPy (pytrees of)."""
    out = []
    for L in (jax, minijax):
        r = run(L)
        L.effects_barrier()
        out.append(jax.tree_util.tree_map(np.asarray, r))
    return out


def _printed(capsys, run):
    """What ``run(L)`` printed under jax and under minijax."""
    texts = []
    for L in (jax, minijax):
        capsys.readouterr()
        run(L)
        L.effects_barrier()
        texts.append(capsys.readouterr().out)
    return texts


# ---- pure_callback ------------------------------------------------------------------------

def _sin_cb(L, x, **kw):
    return L.pure_callback(lambda a: np.sin(np.asarray(a)), L.ShapeDtypeStruct(x.shape, x.dtype),
                           x, **kw)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_pure_callback_values_like_jax(mode):
    def run(L):
        f = functools.partial(_sin_cb, L)
        f = L.jit(f) if mode == "jit" else f
        return f(_np(L).arange(4.0))
    a, b = _both(run)
    np.testing.assert_allclose(b, a, rtol=1e-6)
    assert b.dtype == a.dtype


def test_pure_callback_pytrees_and_kwargs():
    seen = {}

    def run(L):
        def cb(xs, *, scale):
            seen[L.__name__] = (type(xs).__name__, sorted(xs), np.asarray(scale).item())
            return {"s": np.asarray(xs["a"]) * scale, "t": np.int32(3)}
        out = {"s": L.ShapeDtypeStruct((3,), np.float32), "t": L.ShapeDtypeStruct((), np.int32)}

        @L.jit
        def f(a, b):
            return L.pure_callback(cb, out, {"a": a, "b": b}, scale=2.0)
        return f(_np(L).arange(3.0), _np(L).ones(2))
    a, b = _both(run)
    np.testing.assert_array_equal(b["s"], a["s"])
    assert b["t"] == a["t"] == 3 and b["t"].dtype == a["t"].dtype
    assert seen["jax"] == seen["minijax"]


def test_pure_callback_receives_host_arrays():
    got = []

    def cb(x):
        got.append(x)
        return x

    f = minijax.jit(lambda x: minijax.pure_callback(cb, minijax.ShapeDtypeStruct((2,), np.float32),
                                                    x))
    f(mjnp.ones(2))
    assert isinstance(got[0], minijax.Array)
    np.testing.assert_array_equal(np.asarray(got[0]), np.ones(2, np.float32))


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
@pytest.mark.parametrize("jit", [False, True])
def test_pure_callback_vmap_methods_like_jax(method, jit):
    shapes = {}

    def run(L):
        jnp = _np(L)
        calls = shapes[L.__name__] = []

        def cb(x, y):
            calls.append((np.shape(x), np.shape(y)))
            return np.asarray(x) + np.asarray(y)

        def f(x, y):
            out = L.ShapeDtypeStruct(jnp.broadcast_shapes(x.shape, y.shape), x.dtype)
            return L.pure_callback(cb, out, x, y, vmap_method=method)
        g = L.vmap(f, in_axes=(0, None))
        g = L.jit(g) if jit else g
        return g(jnp.arange(4.0), jnp.float32(1.5))
    a, b = _both(run)
    np.testing.assert_array_equal(b, a)
    assert shapes["minijax"] == shapes["jax"]


def test_pure_callback_vmap_errors_like_jax():
    for L in (jax, minijax):
        with pytest.raises(NotImplementedError, match="vmap_method"):
            L.vmap(functools.partial(_sin_cb, L))(_np(L).arange(3.0))
        with pytest.raises(ValueError, match="vmap_method must be"):
            _sin_cb(L, _np(L).arange(3.0), vmap_method="bogus")


def test_pure_callback_grad_is_an_error_unless_custom_jvp():
    for L in (jax, minijax):
        with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
            L.grad(lambda x: _sin_cb(L, x))(1.0)

    def run(L):
        @L.custom_jvp
        def f(x):
            return _sin_cb(L, x)

        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return f(x), L.pure_callback(lambda a: np.cos(np.asarray(a)),
                                         L.ShapeDtypeStruct((), np.float32), x) * t
        return L.jit(L.grad(f))(0.5)
    a, b = _both(run)
    np.testing.assert_allclose(b, a, rtol=1e-6)
    np.testing.assert_allclose(b, np.cos(0.5), rtol=1e-6)


def test_pure_callback_in_scan_and_cond_like_jax():
    def run(L):
        jnp = _np(L)

        def body(c, x):
            y = L.pure_callback(lambda a: np.asarray(a) * 10, L.ShapeDtypeStruct((), np.float32), x)
            return c + y, y

        def f(xs, p):
            c, ys = L.lax.scan(body, 0.0, xs)
            z = L.lax.cond(p, lambda v: _sin_cb(L, v), lambda v: -v, c)
            return c, ys, z
        return L.jit(f)(jnp.arange(3.0), True), f(jnp.arange(3.0), False)
    a, b = _both(run)
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(y, x, rtol=1e-6)


def test_pure_callback_bad_results_are_errors():
    f = minijax.jit(lambda x: minijax.pure_callback(
        lambda a: np.zeros(4, np.float32), minijax.ShapeDtypeStruct((3,), np.float32), x))
    with pytest.raises(Exception, match="Incorrect output shape for return value #0"):
        np.asarray(f(mjnp.ones(3)))
    g = minijax.jit(lambda x: minijax.pure_callback(
        lambda a: np.zeros(3, np.int32), minijax.ShapeDtypeStruct((3,), np.float32), x))
    with pytest.raises(Exception, match="Incorrect output dtype for return value #0"):
        np.asarray(g(mjnp.ones(3)))
    with pytest.raises(ValueError, match="64-bit"):
        minijax.pure_callback(lambda a: a, minijax.ShapeDtypeStruct((), np.float64), 1.0)


def test_unused_pure_callback_is_dropped_like_jax():
    counts = {}

    def run(L):
        calls = counts[L.__name__] = []

        def f(x):
            L.pure_callback(lambda a: calls.append(1) or a, L.ShapeDtypeStruct((), np.float32), x)
            return x + 1
        return L.jit(f)(1.0)
    _both(run)
    assert counts["minijax"] == counts["jax"] == []


# ---- io_callback --------------------------------------------------------------------------

@pytest.mark.parametrize("ordered", [False, True])
def test_io_callback_calls_and_order_like_jax(ordered):
    logs = {}

    def run(L):
        log = logs[L.__name__] = []
        io = _io(L)

        def record(tag):
            def cb(x):
                log.append((tag, np.asarray(x).tolist()))
                return None if tag == "unused" else np.asarray(x) * 2
            return cb

        @L.jit
        def f(x):
            a = io(record("a"), L.ShapeDtypeStruct(x.shape, x.dtype), x, ordered=ordered)
            io(record("unused"), None, a + 1, ordered=ordered)  # never dropped
            b = io(record("b"), L.ShapeDtypeStruct(x.shape, x.dtype), a, ordered=ordered)
            return b
        out = [f(_np(L).arange(2.0)) for _ in range(3)]  # cache hits keep their effects
        return out
    a, b = _both(run)
    np.testing.assert_array_equal(b, a)
    if ordered:
        assert logs["minijax"] == logs["jax"]
    else:
        assert sorted(logs["minijax"]) == sorted(logs["jax"])
    assert len(logs["minijax"]) == 9


def test_io_callback_vmap_and_grad_like_jax():
    logs = {}

    def run(L):
        log = logs[L.__name__] = []

        def f(x):
            return _io(L)(lambda a: log.append(float(np.asarray(a))) or np.asarray(a),
                          L.ShapeDtypeStruct((), np.float32), x)
        return L.vmap(f)(_np(L).arange(3.0))
    a, b = _both(run)
    np.testing.assert_array_equal(b, a)
    assert logs["minijax"] == logs["jax"] == [0.0, 1.0, 2.0]
    for L in (jax, minijax):
        def g(x):
            return _io(L)(lambda a: a, L.ShapeDtypeStruct((), np.float32), x, ordered=True)
        with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
            L.vmap(g)(_np(L).arange(3.0))
        with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
            L.grad(g)(1.0)


def test_ordered_io_callback_in_loops_keeps_order():
    logs = {}

    def run(L):
        log = logs[L.__name__] = []
        io = _io(L)

        def step(c, x):
            io(lambda v: log.append(("scan", float(np.asarray(v)))), None, c + x, ordered=True)
            return c + x, x

        def body(c):
            io(lambda v: log.append(("while", int(np.asarray(v)))), None, c, ordered=True)
            return c + 1

        @L.jit
        def f(xs):
            io(lambda: log.append(("start",)), None, ordered=True)
            c, _ = L.lax.scan(step, 0.0, xs)
            n = L.lax.while_loop(lambda i: i < 3, body, 0)
            io(lambda v: log.append(("end", float(np.asarray(v)))), None, c, ordered=True)
            return n
        return f(_np(L).arange(4.0))
    _both(run)
    assert logs["minijax"] == logs["jax"]


def test_effects_are_part_of_the_jaxpr():
    def f(x):
        mj_io_callback(lambda a: None, None, x)
        minijax.debug.print("{}", x)
        return x
    jaxpr = minijax.make_jaxpr(f)(1.0)
    assert [e.primitive.name for e in jaxpr.eqns] == ["io_callback", "debug_print"]
    from minijax.core.effects import jaxpr_effects
    assert {str(e) for e in jaxpr_effects(jaxpr.jaxpr)} == {"IO", "Debug"}


# ---- debug.callback and debug.print -------------------------------------------------------

def test_debug_callback_values_like_jax():
    seen = {}

    def run(L):
        log = seen[L.__name__] = []

        def cb(x, label, *, y):
            log.append((label, np.asarray(x).tolist(), np.asarray(y).tolist()))

        def f(x):
            L.debug.callback(cb, x, "static", y=x * 2)
            L.debug.callback(ordered=True)(cb, x + 1, "two-call", y=3)
            return x
        f(_np(L).arange(2.0))
        L.jit(f)(_np(L).arange(2.0))
        L.vmap(f)(_np(L).arange(2.0))
    _both(run)
    assert seen["minijax"] == seen["jax"]
    for L in (jax, minijax):
        with pytest.raises(TypeError, match="must be callable"):
            L.debug.callback(3, 1.0)


def _print_program(L, jit: bool):
    jnp = _np(L)

    def f(x, n):
        L.debug.print("x = {}", x)
        L.debug.print("named {a} and {b:.3f}", a=n, b=x[0])
        L.debug.print("no placeholders", x[1], n, skip_format_check=True)
        L.debug.print(ordered=True)("ordered {}", x.sum())
        return jnp.sin(x).sum()

    g = L.jit(f) if jit else f
    g(jnp.arange(3.0), 7)
    L.grad(f)(jnp.arange(3.0), 2)
    L.vmap(f, in_axes=(0, None))(jnp.arange(6.0).reshape(2, 3), 1)


@pytest.mark.parametrize("jit", [False, True])
def test_debug_print_output_like_jax(capsys, jit):
    a, b = _printed(capsys, lambda L: _print_program(L, jit))
    assert sorted(b.splitlines()) == sorted(a.splitlines())
    assert "x = [0. 1. 2.]" in b


def test_ordered_debug_print_in_control_flow_like_jax(capsys):
    def run(L):
        def body(c, x):
            L.debug.print("scan c={} x={}", c, x, ordered=True)
            return c + x, x

        def f(xs, p):
            c, _ = L.lax.scan(body, 0.0, xs)
            L.lax.cond(p, lambda: L.debug.print("true {}", c, ordered=True),
                       lambda: L.debug.print("false {}", c, ordered=True))
            L.lax.while_loop(lambda i: i < 2,
                             lambda i: (L.debug.print("while {}", i, ordered=True), i + 1)[1], 0)
            return c
        L.jit(f)(_np(L).arange(3.0), True)
        f(_np(L).arange(3.0), False)
    a, b = _printed(capsys, run)
    assert b == a
    assert "scan c=1.0 x=2.0" in b


def test_ordered_effects_in_a_while_cond_like_jax(capsys):
    def run(L):
        def cond(i):
            L.debug.print("cond {}", i, ordered=True)
            return i < 2

        def body(i):
            L.debug.print("body {}", i, ordered=True)
            return i + 1

        def f(x):
            L.debug.print("start", ordered=True)
            L.debug.print("end {}", L.lax.while_loop(cond, body, x), ordered=True)
        L.jit(f)(0)
    a, b = _printed(capsys, run)
    assert b == a
    assert b == "start\ncond 0\nbody 0\ncond 1\nbody 1\ncond 2\nend 2\n"


def test_debug_print_jaxpr_like_jax():
    texts = []
    for L in (jax, minijax):
        def f(x):
            L.debug.print("x={} {s}", x, s="static")
            L.debug.print("y={}", x * 2, ordered=True)
            return x
        texts.append(str(L.make_jaxpr(f)(np.ones(3, np.float32))))
    assert texts[1] == texts[0]


def test_debug_print_format_errors_like_jax():
    for L in (jax, minijax):
        with pytest.raises(ValueError, match="Unused positional arguments"):
            L.debug.print("{}", 1.0, 2.0)
        with pytest.raises(ValueError, match="Unused keyword arguments"):
            L.debug.print("x", y=1.0)
        with pytest.raises(TypeError, match="two-call form"):
            L.debug.print(1.0, ordered=True) if False else L.debug.print(None, 1.0)


def test_debug_print_uses_printoptions_at_the_call(capsys):
    def run(L):
        with np.printoptions(precision=2):
            f = L.jit(lambda x: L.debug.print("{}", x))
            f(_np(L).asarray([1 / 3, 2 / 3]))
    a, b = _printed(capsys, run)
    assert b == a == "[0.33 0.67]\n"


# ---- nesting, errors, threads -------------------------------------------------------------

def test_ordered_effects_of_a_nested_jit_keep_program_order():
    logs = {}

    def run(L):
        log = logs[L.__name__] = []
        io = _io(L)

        @L.jit
        def inner(x):
            io(lambda a: log.append(("inner", float(np.asarray(a)))), None, x, ordered=True)
            return x + 1

        @L.jit
        def outer(x):
            io(lambda a: log.append(("before", float(np.asarray(a)))), None, x, ordered=True)
            y = inner(x)
            io(lambda a: log.append(("after", float(np.asarray(a)))), None, y, ordered=True)
            return y
        return outer(1.0)
    _both(run)
    assert logs["minijax"] == logs["jax"] == [("before", 1.0), ("inner", 1.0), ("after", 2.0)]


def test_an_exception_in_a_callback_is_a_runtime_error_like_jax():
    def bad(a):
        raise ValueError("boom in callback")

    for L in (jax, minijax):
        f = L.jit(lambda x: L.pure_callback(bad, L.ShapeDtypeStruct((), np.float32), x))
        with pytest.raises(Exception, match="boom in callback") as e:
            np.asarray(f(1.0))
        assert type(e.value).__name__ == "JaxRuntimeError"
        g = L.jit(lambda x: _io(L)(bad, None, x, ordered=True))
        with pytest.raises(Exception, match="boom in callback"):
            g(1.0)
            L.effects_barrier()


def test_callbacks_may_run_minijax_code_and_threads():
    import threading
    h = minijax.jit(lambda x: x * 3)
    f = minijax.jit(lambda x: minijax.pure_callback(lambda a: np.asarray(h(a)) + 1,
                                                    minijax.ShapeDtypeStruct((2,), np.float32), x))
    np.testing.assert_array_equal(f(mjnp.ones(2)), [4.0, 4.0])
    g = minijax.jit(lambda x: minijax.pure_callback(lambda a: np.asarray(a) + 1,
                                                    minijax.ShapeDtypeStruct((), np.float32), x))
    out: list = []

    def worker(k):
        out.extend(float(g(float(k * 100 + i))) for i in range(30))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(out) == sorted(k * 100 + i + 1.0 for k in range(3) for i in range(30))


def test_executables_with_callbacks_are_not_serialized():
    f = minijax.jit(lambda x: _sin_cb(minijax, x))
    compiled = f.lower(mjnp.ones(2)).compile()
    np.testing.assert_allclose(compiled(mjnp.ones(2)), np.sin(np.ones(2)), rtol=1e-6)
    with pytest.raises(ValueError, match="host callbacks"):
        minijax.stages.serialize(compiled)


def test_debug_log_like_jax(caplog):
    import logging
    records = {}
    for L in (jax, minijax):
        caplog.clear()
        with caplog.at_level(logging.INFO):
            L.jit(lambda x: L.debug.log("logged {}", x))(_np(L).arange(2.0))  # the log line
            L.effects_barrier()
        records[L.__name__] = [(r.levelname, r.getMessage(), r.lineno) for r in caplog.records
                               if "logged" in r.getMessage()]
    assert records["minijax"] == records["jax"]
    assert len(records["jax"]) == 1


_SEVERAL_DEVICES = r"""
import numpy as np, minijax, minijax.numpy as jnp
from minijax.sharding import NamedSharding, PartitionSpec as P
def f(x):
    minijax.debug.print("x {}", x)
    return x * 2
import contextlib, io
for run in (lambda: minijax.pmap(f)(jnp.arange(2.0)),
            lambda: minijax.jit(f)(minijax.device_put(
                jnp.arange(4.0), NamedSharding(minijax.make_mesh((2,), ("d",)), P("d"))))):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        run().block_until_ready()
        minijax.effects_barrier()
    print(sorted(buf.getvalue().splitlines()))
x = minijax.device_put(jnp.arange(3.0), minijax.devices()[1])
out = minijax.jit(lambda x: minijax.pure_callback(
    lambda a: np.asarray(a) + 1, minijax.ShapeDtypeStruct((3,), np.float32), x))(x)
print(out.tolist(), out.device.id)
"""


def test_several_devices_run_callbacks():
    """pmap: once per replica, its values; a sharded jit: once, the whole value
    (tests/test_callbacks_multidevice.py compares many more cases with jax)."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES="2")
    r = subprocess.run([sys.executable, "-c", _SEVERAL_DEVICES], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.splitlines() == ["['x 0.0', 'x 1.0']", "['x [0. 1. 2. 3.]']",
                                     "[1.0, 2.0, 3.0] 1"]


def test_lowered_custom_calls_like_jax():
    import re
    texts = []
    for L in (jax, minijax):
        def f(x):
            y = L.pure_callback(lambda a: a, L.ShapeDtypeStruct(x.shape, x.dtype), x)
            L.debug.print("x={}", x)
            return y * 2
        t = L.jit(f).lower(np.ones((2, 3), np.float32)).as_text()
        texts.append([re.sub(r", sdy\.sharding = [^}]*\]>", "", line.strip())
                      for line in t.splitlines() if "custom_call" in line])
    assert texts[1] == texts[0] and len(texts[0]) == 2
