"""The cached call paths of jit and Compiled: same results as the checked paths."""

import inspect
import pickle

import jax
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.runtime.executable import compile_count


def test_fast_path_is_taken_for_device_arrays_and_pytrees():
    f = minijax.jit(lambda a, b: a * b + 1.0)
    a, b = jnp.arange(4.0), jnp.ones(4)
    p = {"w": jnp.ones(4) * 2}
    f(a, b)
    assert len(f._fast) == 1 and f.trace_count == 1
    before = compile_count()
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(a, b)), [1, 2, 3, 4])
    g = minijax.jit(lambda p, x: {"y": p["w"] * x, "n": [x.sum()]})
    g(p, x=a)
    out = g(p, x=b)
    assert g.trace_count == 1 and len(g._tree_fast) == 1 and len(g._fast) == 0
    np.testing.assert_array_equal(np.asarray(out["y"]), [2, 2, 2, 2])
    assert float(out["n"][0]) == 4.0
    assert compile_count() == before + 1  # only g's first call compiled


def test_mixed_host_and_device_arguments_share_the_executable():
    f = minijax.jit(lambda a, b: a - b)
    f(np.ones(3, np.float32), 1.0)
    f(jnp.ones(3), jnp.asarray(1.0))  # same avals (weak f32[] for the scalar)
    assert f.trace_count == 1
    f(jnp.ones(3), jnp.float32(1.0))  # strong f32[]: another signature
    assert f.trace_count == 2


def test_fast_path_follows_config_changes(request):
    f = minijax.jit(lambda x: x + jnp.arange(3))
    a = jnp.ones(3, dtype=jnp.int32)
    assert f(a).dtype == np.int32
    assert f(a).dtype == np.int32  # served by the fast path
    request.getfixturevalue("x64")
    assert f(a).dtype == np.int64  # the flag change emptied the fast caches


def test_deleted_argument_errors_on_every_path():
    f = minijax.jit(lambda x: x * 2)
    x = jnp.ones(3)
    f(x)
    compiled = f.lower(x).compile()
    x.delete()
    for call in (lambda: f(x), lambda: f(x=x), lambda: compiled(x), lambda: f([x][0])):
        with pytest.raises(RuntimeError, match=r"Array has been deleted"):
            call()


def test_compiled_fast_and_checked_paths():
    c = minijax.jit(lambda x, y: x * y).lower(jnp.ones(3), 2.0).compile()
    np.testing.assert_array_equal(np.asarray(c(jnp.ones(3), jnp.asarray(2.0))), [2, 2, 2])
    np.testing.assert_array_equal(np.asarray(c(jnp.ones(3), jnp.float32(3.0))), [3, 3, 3])
    np.testing.assert_array_equal(np.asarray(c(np.ones(3, np.float32), 4.0)), [4, 4, 4])
    with pytest.raises(TypeError, match="tree structure"):
        c(jnp.ones(3), y=5.0)  # compiled with y positional
    with pytest.raises(TypeError, match=r"compiled for f32\[3\] but called with f32\[4\]"):
        c(jnp.ones(4), jnp.asarray(2.0))
    with pytest.raises(TypeError, match="traced values"):
        minijax.jit(lambda x: c(x, 2.0))(jnp.ones(3))


def test_compiled_call_does_not_recompile():
    x = jnp.ones(5)
    c = minijax.jit(lambda x: jnp.sin(x)).lower(x).compile()
    before = compile_count()
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(c(x)), np.sin(1.0), rtol=1e-6)
    assert compile_count() == before


def test_wrapped_looks_like_the_function():
    def scale(x, factor=2.0):
        """Doc."""
        return x * factor

    jf = minijax.jit(scale)
    assert jf.__name__ == "scale" and jf.__doc__ == "Doc." and jf.__wrapped__ is scale
    assert inspect.signature(jf) == inspect.signature(scale)
    assert isinstance(jf, minijax.stages.Wrapped) and callable(jf)
    assert repr(jf) == f"<PjitFunction of {scale!r}>"
    assert type(jf).__name__ == type(jax.jit(scale)).__name__ == "PjitFunction"
    assert repr(jf).replace(f"{scale!r}", "f") == repr(jax.jit(scale)).replace(f"{scale!r}", "f")
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(jf)


def test_copies_are_the_jit_object():
    import copy
    jf = minijax.jit(lambda x: x + 1)
    assert copy.copy(jf) is jf and copy.deepcopy({"f": jf})["f"] is jf


def test_python_scalar_arguments_take_the_fast_path(monkeypatch):
    from minijax.stages.jit import Wrapped
    f = minijax.jit(lambda a, b: a / b)
    x = jnp.arange(1.0, 4.0)
    f(x, 2.0)
    slow = []
    original = Wrapped._call
    monkeypatch.setattr(Wrapped, "_call", lambda self, a, k: slow.append(a) or original(self, a, k))
    np.testing.assert_allclose(f(x, 2.0), [0.5, 1.0, 1.5])
    assert slow == []  # served without Wrapped._call
    # A value not seen before (in this process) is put on the device by the fast path.
    np.testing.assert_allclose(f(x, 4.0625), np.arange(1.0, 4.0) / 4.0625, rtol=1e-6)
    np.testing.assert_allclose(f(x, 4.0625), np.arange(1.0, 4.0) / 4.0625, rtol=1e-6)
    assert slow == [] and f.trace_count == 1
    np.testing.assert_array_equal(np.asarray(f(x, -0.0)), [-np.inf] * 3)
    np.testing.assert_array_equal(np.asarray(f(x, -0.0)), [-np.inf] * 3)
    np.testing.assert_array_equal(np.asarray(f(x, 0.0)), [np.inf] * 3)
    assert f(x, 1).dtype == np.float32 and f.trace_count == 2  # weak int: a new signature
    with pytest.raises(OverflowError, match="too large"):
        f(x, 2**40)


def test_scalar_constants_follow_x64(request):
    f = minijax.jit(lambda a, b: a + b)
    i = jnp.arange(3)
    assert f(i, 1).dtype == np.int32 and f(i, 1).dtype == np.int32
    request.getfixturevalue("x64")
    i64 = jnp.arange(3)
    out = f(i64, 2**40)  # fits int64 now
    assert out.dtype == np.int64 and int(out[0]) == 2**40


def test_compiled_call_takes_the_dispatch_fast_path(monkeypatch):
    from minijax.stages.stages import Compiled
    f = minijax.jit(lambda a, b: a - b)
    x = jnp.arange(3.0)
    compiled = f.lower(x, 1.0).compile()
    np.testing.assert_array_equal(compiled(x, 1.0), [-1, 0, 1])  # makes the constant
    full = []
    original = Compiled._call
    monkeypatch.setattr(Compiled, "_call",
                        lambda self, a, k: full.append(a) or original(self, a, k))
    np.testing.assert_array_equal(compiled(x, 1.0), [-1, 0, 1])
    np.testing.assert_array_equal(compiled(x, jnp.asarray(1.0)), [-1, 0, 1])  # same weak aval
    assert full == []
    host = np.arange(3.0, dtype=np.float32)
    np.testing.assert_array_equal(compiled(host, 1.0), [-1, 0, 1])  # NumPy: the full path
    assert len(full) == 1
    with pytest.raises(TypeError, match="compiled for f32\\[3\\] but called with f32\\[4\\]"):
        compiled(jnp.arange(4.0), 1.0)


def test_fast_path_errors_that_are_not_exceptions_pass_through():
    f = minijax.jit(lambda a: a + 1.0)
    x = jnp.arange(3.0)
    f(x)
    key = next(iter(f._fast))

    def interrupted(bufs):
        raise KeyboardInterrupt
    f._fast[key] = interrupted
    x.delete()  # would otherwise turn the failure into "has been deleted"
    with pytest.raises(KeyboardInterrupt):
        f(x)


def test_fast_cache_replaced_by_a_non_dict_is_ignored():
    f = minijax.jit(lambda a: a + 1.0)
    x = jnp.arange(3.0)
    f(x)
    f._fast = None  # the C dispatcher must not read it as a dict
    np.testing.assert_array_equal(f(x), [1, 2, 3])


def _count_full_path(monkeypatch) -> list:
    """The arguments of every call that reaches Wrapped._call (the full path)."""
    from minijax.stages.jit import Wrapped
    slow = []
    original = Wrapped._call
    monkeypatch.setattr(Wrapped, "_call", lambda self, a, k: slow.append(a) or original(self, a, k))
    return slow


def test_every_call_shape_takes_the_dispatch_fast_path(monkeypatch):
    import jax
    import jax.numpy as rjnp

    def update(i, state, x, *, scale=1.0):
        return {k: v * 0.5 + x * i * scale for k, v in state.items()}, i + 1

    host = {f"p{j}": np.full(3, j, np.float32) for j in range(4)}
    hx = np.arange(3, dtype=np.float32)
    calls = [(2, {}), (3, {}), (7, {"scale": 2.0}), (7, {"scale": 0.25}), (True, {})]
    ours = minijax.jit(update)
    state = {k: jnp.asarray(v) for k, v in host.items()}
    x = jnp.asarray(hx)
    for i, kw in calls[:1] + calls[2:3] + calls[4:]:  # one call per signature first
        ours(i, state, x, **kw)
    slow = _count_full_path(monkeypatch)
    for i, kw in calls:  # changing ints, a kwarg, a bool: all served by the fast path
        got = ours(i, state, x, **kw)
        want = jax.jit(update)(i, {k: rjnp.asarray(v) for k, v in host.items()},
                               rjnp.asarray(hx), **kw)
        for k in host:
            np.testing.assert_allclose(np.asarray(got[0][k]), np.asarray(want[0][k]))
            assert got[0][k].dtype == want[0][k].dtype
        assert int(got[1]) == int(want[1]) and got[1].dtype == want[1].dtype
        assert got[1].weak_type == want[1].weak_type
    assert slow == [] and ours.trace_count == 3


def test_static_and_donated_arguments_take_the_dispatch_fast_path(monkeypatch):
    f = minijax.jit(lambda a, n, *, mode="add": a + n if mode == "add" else a * n,
                    static_argnums=1, static_argnames="mode")
    a = jnp.arange(3.0)
    f(a, 2), f(a, 3, mode="mul")
    slow = _count_full_path(monkeypatch)
    np.testing.assert_array_equal(np.asarray(f(a, 2)), [2, 3, 4])
    np.testing.assert_array_equal(np.asarray(f(a, 3, mode="mul")), [0, 3, 6])
    assert slow == []
    np.testing.assert_array_equal(np.asarray(f(a, 3)), [3, 4, 5])  # a new static value
    assert len(slow) == 1 and f.trace_count == 3
    with pytest.raises(ValueError, match="Non-hashable static argument"):
        f(a, [2])
    d = minijax.jit(lambda s, x: {"w": s["w"] * x}, donate_argnums=0)
    d({"w": jnp.ones(3)}, 2.0)
    del slow[:]
    for k in range(3):
        s = {"w": jnp.ones(3)}
        del slow[:]
        out = d(s, 2.0 + k)
        assert slow == []  # (eager arithmetic below goes through jit's full path)
        np.testing.assert_array_equal(np.asarray(out["w"]), [2.0 + k] * 3)
        assert s["w"].is_deleted()
        line = inspect.currentframe().f_lineno - 4
        with pytest.raises(RuntimeError, match=f"donated to jit.*:{line}"):
            s["w"] + 1
    assert d.trace_count == 1
    e = minijax.jit(lambda a, b: a * b, donate_argnums=0)  # flat arguments
    e(jnp.ones(3), 2.0)
    for k in range(3):
        a = jnp.ones(3)
        del slow[:]
        out = e(a, 2.0 + k)  # a donating function never reuses a shared scalar constant
        assert slow == [] and a.is_deleted()
        np.testing.assert_array_equal(np.asarray(out), [2.0 + k] * 3)
        line = inspect.currentframe().f_lineno - 3
        with pytest.raises(RuntimeError, match=f"donated to jit.*:{line}"):
            a + 1


def test_numpy_arguments_take_the_dispatch_fast_path(monkeypatch, request):
    f = minijax.jit(lambda a, b: a * b + 1)
    g = minijax.jit(lambda t, s: {"y": t["x"] @ t["w"] * s})  # pytree path
    rng = np.random.default_rng(0)
    base = rng.standard_normal((6, 8))  # float64: narrowed to float32 with x64 off
    views = [base[::2, ::2], base.T[:3, :4], np.broadcast_to(base[0, :4], (3, 4))]
    f(views[0], np.float32(2.0)), f(views[0], np.int64(3))
    w = rng.standard_normal((4, 2)).astype(np.float32)
    g({"x": views[0], "w": w}, np.float32(0.5))
    slow = _count_full_path(monkeypatch)
    for v in views:  # any strides, converted as device_put converts
        for s, want_dtype in ((np.float32(2.0), np.float32), (np.int64(3), np.float32)):
            out = f(v, s)
            want = f(minijax.device_put(v), minijax.device_put(s))  # converted the same way
            np.testing.assert_array_equal(np.asarray(out), np.asarray(want))
            np.testing.assert_allclose(np.asarray(out), v.astype(np.float32) * s + 1, rtol=1e-6)
            assert out.dtype == want_dtype
        out = g({"x": v, "w": w}, np.float32(0.5))["y"]
        np.testing.assert_allclose(np.asarray(out), v.astype(np.float32) @ w * 0.5, rtol=1e-6)
    assert slow == [] and f.trace_count == 2 and g.trace_count == 1
    a = np.ones((3, 4), np.float32)
    out = f(a, np.float32(2.0))
    a[...] = 7  # the argument was copied during the call
    np.testing.assert_array_equal(np.asarray(out), np.full((3, 4), 3.0))
    np.testing.assert_array_equal(np.asarray(f(a, np.float32(2.0))), np.full((3, 4), 15.0))
    assert len(slow) == 1  # float32 (3, 4): a new NumPy type, recorded by the first call
    del slow[:]
    # A byte order jaxlib would misread is never recorded: the full path refuses it (as
    # jax does) every time.
    big = np.arange(12, dtype=">f4").reshape(3, 4)
    for _ in range(2):
        with pytest.raises(TypeError, match="not a valid minijax type"):
            f(big, np.float32(1.0))
    assert len(slow) == 2 and f.trace_count == 2
    for x in (np.float64(2.0), np.complex128(1j)):  # NumPy scalars are strongly typed
        ours, theirs = minijax.jit(lambda s: s)(x), jax.jit(lambda s: s)(x)
        assert (ours.dtype, ours.weak_type) == (theirs.dtype, theirs.weak_type)
    request.getfixturevalue("x64")  # the table follows the flag
    del slow[:]
    out = f(base[:3, :4], np.float64(2.0))
    out = f(base[:3, :4], np.float64(2.0))
    assert out.dtype == np.float64 and len(slow) == 1
    np.testing.assert_array_equal(np.asarray(out), base[:3, :4] * 2.0 + 1)
