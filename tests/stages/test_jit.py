"""jit: caching, static arguments, pytrees, weak types, nesting."""

import logging

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp


def test_jit_values_match_numpy_and_jax():
    def f(np_, x, y):
        return np_.sin(x) * y + np_.exp(-x) / 2.0

    x = np.linspace(-1, 1, 7).astype(np.float32)
    ours = minijax.jit(lambda x, y: f(jnp, x, y))(x, 3.0)
    theirs = jax.jit(lambda x, y: f(jjnp, x, y))(x, 3.0)
    np.testing.assert_allclose(np.asarray(ours), np.sin(x) * 3 + np.exp(-x) / 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
    assert ours.dtype == theirs.dtype


def test_cache_hits_and_misses():
    f = minijax.jit(lambda x: x * 2)
    f(jnp.ones(3))
    f(jnp.ones(3))
    f(np.ones(3, np.float32))  # same aval as a device array
    assert f._cache_size() == 1
    f(jnp.ones(4))
    f(jnp.ones(3, dtype=jnp.int32))
    f(1.0)  # weak f32[] differs from strong f32[]
    f(jnp.float32(1.0))
    assert f._cache_size() == 5


def test_weak_type_output():
    out = minijax.jit(lambda x: x * 2)(1.0)
    assert out.dtype == np.float32 and out.weak_type
    jout = jax.jit(lambda x: x * 2)(1.0)
    assert repr(out) == repr(jout)


def test_static_argnums_and_argnames():
    calls = []

    def f(x, n, *, mode="a"):
        calls.append((n, mode))
        return x * n if mode == "a" else x + n

    jf = minijax.jit(f, static_argnums=1, static_argnames="mode")
    assert float(jf(2.0, 3)) == 6.0
    assert float(jf(2.0, 3)) == 6.0
    assert float(jf(2.0, 4)) == 8.0
    assert float(jf(2.0, 4, mode="b")) == 6.0
    assert len(calls) == 3
    jg = minijax.jit(f, static_argnames="n")
    assert float(jg(2.0, n=5)) == 10.0
    assert float(jg(2.0, 5)) == 10.0  # positional use of a static name is static too


def test_pytree_args_and_outputs():
    @minijax.jit
    def f(params, x):
        w, b = params["w"], params["b"]
        return {"out": x * w + b, "aux": [w, (b,)]}

    params = {"w": jnp.ones(3) * 2, "b": jnp.ones(3)}
    out = f(params, 3.0)
    np.testing.assert_allclose(np.asarray(out["out"]), 7.0)
    assert isinstance(out["aux"], list) and isinstance(out["aux"][1], tuple)


def test_kwargs_are_dynamic():
    f = minijax.jit(lambda x, y=1.0: x + y)
    assert float(f(1.0, y=2.0)) == 3.0
    assert float(f(1.0, y=5.0)) == 6.0
    assert f._cache_size() == 1


def test_nested_jit_lowers_to_call():
    inner = minijax.jit(lambda x: jnp.sin(x) * 2)

    @minijax.jit
    def outer(x):
        return inner(x) + inner(x + 1)

    np.testing.assert_allclose(float(outer(0.5)), np.sin(0.5) * 2 + np.sin(1.5) * 2, rtol=1e-6)
    text = outer.lower(0.5).as_text()
    assert "call @" in text and "func.func private" in text
    assert text.count("func.func private") == 1  # the callee is emitted once
    assert " call(" in outer.lower(0.5).as_text("hlo")


def test_closure_over_outer_tracer():
    @minijax.jit
    def f(x):
        g = minijax.jit(lambda y: y * x)
        return g(2.0)

    assert float(f(3.0)) == 6.0


def test_closure_over_concrete_array_becomes_constant():
    c = jnp.arange(3.0) if hasattr(jnp, "arange") else jnp.asarray([0.0, 1.0, 2.0])
    f = minijax.jit(lambda x: x + c)
    np.testing.assert_allclose(np.asarray(f(jnp.ones(3))), [1, 2, 3])
    assert "stablehlo.constant" in f.lower(jnp.ones(3)).as_text()


def test_x64_flag_is_part_of_cache_key(request):
    f = minijax.jit(lambda x: x + 1)
    a = np.ones(2, np.float64)
    assert f(a).dtype == np.float32
    request.getfixturevalue("x64")
    assert f(a).dtype == np.float64


def test_explain_cache_misses(caplog):
    f = minijax.jit(lambda x, n: x * n, static_argnums=1)
    minijax.config.update("minijax_explain_cache_misses", True)
    try:
        with caplog.at_level(logging.WARNING, logger="minijax"):
            f(jnp.ones(3), 2)
            f(jnp.ones(4), 2)
            f(jnp.ones(4), 3)
            f(jnp.ones(4, dtype=jnp.int32), 3)
            f(1.0, 3)
    finally:
        minijax.config.update("minijax_explain_cache_misses", False)
    # (the persistent cache, on by default, logs its own misses too; not counted here)
    msgs = [r.getMessage() for r in caplog.records
            if not r.getMessage().startswith("PERSISTENT COMPILATION CACHE")]
    assert len(msgs) == 5
    assert "first time" in msgs[0]
    assert "shape (3,) -> (4,)" in msgs[1]
    assert "static argument 'n' (position 1) changed from 2 to 3" in msgs[2]
    assert "dtype float32 -> int32" in msgs[3]
    assert "weak_type False -> True" in msgs[4] and "shape (4,) -> ()" in msgs[4]


def test_method_on_class():
    class Model:
        def __init__(self, k):
            self.k = k

        @minijax.jit
        def bad(self, x):
            return x * self.k

        def apply(self, x):
            return minijax.jit(type(self)._apply, static_argnums=0)(self, x)

        def _apply(self, x):
            return x * self.k

    assert float(Model(2).apply(3.0)) == 6.0
    with pytest.raises(TypeError, match="Model is not a valid minijax type"):
        Model(2).bad(3.0)


def test_jit_of_jnp_function_directly():
    np.testing.assert_allclose(np.asarray(minijax.jit(jnp.sin)(jnp.ones(2))), np.sin(1.0),
                               rtol=1e-6)


def test_eval_shape():
    out = minijax.eval_shape(lambda x, y: (x * y, jnp.sin(x)),
                             minijax.ShapeDtypeStruct((2, 3), np.float32), 2.0)
    assert out[0].shape == (2, 3) and out[1].dtype == np.float32


_ON_DEVICE = """
import numpy as np, minijax, minijax.numpy as jnp
from minijax.runtime.executable import compile_count
d0, d1, d2 = minijax.devices()[:3]
f = minijax.jit(lambda a, b: a * b + 1.0)
z = jnp.arange(4.0)
assert f(z, z).device == d0                   # the default device first: same avals
x = minijax.device_put(np.arange(4.0, dtype=np.float32), d1)
y = minijax.device_put(np.full(4, 2.0, np.float32), d1)
before = compile_count()
for _ in range(3):
    out = f(x, y)                             # runs on the arguments' device
    assert out.device == d1 and np.asarray(out).tolist() == [1, 3, 5, 7]
assert compile_count() == before + 1 and f.trace_count == 1   # one more executable
assert f(x, 2.0).device == d1 and f(x, 2.0).tolist() == [1, 3, 5, 7]
assert f(x, z).device == d1                   # default-device arrays follow
for out in (x * 2.0, jnp.sin(x), x.sum(), x + y, x[1:3], x @ y, list(x)[0],
            minijax.grad(lambda a: (a * a).sum())(x), minijax.vmap(lambda a: a * 2)(x)):
    assert out.device == d1, out
np.testing.assert_allclose(minijax.grad(lambda a: (a * a).sum())(x), 2 * np.arange(4.0))
h = minijax.jit(lambda a: (jnp.sin(a) * a).sum())
for out in (minijax.grad(h)(x), minijax.jvp(h, (x,), (x,))[1]):  # jit evaluated eagerly
    assert out.device == d1, out
w = minijax.device_put(x, d2)
try:
    f(x, w)
except ValueError as e:
    print("ValueError:", e)
c = f.lower(x, y).compile()                   # compiled for the arguments' device
before = compile_count()
for _ in range(3):
    out = c(x, y)
    assert out.device == d1 and np.asarray(out).tolist() == [1, 3, 5, 7]
assert compile_count() == before
assert c(z, z).device == d1 and c(z, y).tolist() == [1, 3, 5, 7]   # default ones follow
assert [s.device_set for s in (*c.input_shardings[0], c.output_shardings)] == [{d1}] * 3
for bad, args in ((f.lower(z, z).compile(), (x, y)), (c, (w, y))):
    try:
        bad(*args)
    except ValueError as e:
        print("Compiled:", str(e).replace("\\n", "|"))
g = minijax.jit(lambda a: a + 1.0, device=d2)   # jit(device=): run there
assert g(z).device == d2 and g(z).tolist() == [1, 2, 3, 4]   # default-device arrays move
assert g(w).device == d2 and g(2.0).device == d2
assert g.lower(z).compile()(z).device == d2 and g.lower(w).compile()(w).tolist() == [1, 2, 3, 4]
for bad in (lambda: g(x), lambda: g.lower(x)):
    try:
        bad()
    except (ValueError, NotImplementedError) as e:
        print("Placed:", type(e).__name__, e)
import jax
e0, e1, e2 = jax.devices()[:3]
n4 = np.arange(4.0, dtype=np.float32)
ja, jw = jax.device_put(n4, e1), jax.device_put(n4, e2)
jf = jax.jit(lambda a, b: a * b + 1.0)
for args_lowered, args in (((jax.device_put(n4, e0),) * 2, (ja, ja)), ((ja, ja), (jw, ja))):
    try:
        jf.lower(*args_lowered).compile()(*args)
    except ValueError as e:
        print("Jax:", str(e).replace("\\n", "|"))
"""


@pytest.mark.slow
def test_computations_run_on_their_arguments_device():
    import subprocess
    import sys
    env = {**__import__("os").environ, "MINIJAX_NUM_CPU_DEVICES": "3", "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=3"}
    out = subprocess.run([sys.executable, "-c", _ON_DEVICE], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("ValueError")]
    assert len(lines) == 1, out.stdout + out.stderr
    assert "different devices (cpu:1 and cpu:2" in lines[0] and "device_put" in lines[0]
    # A Compiled called with arguments on another device: jax's error, word for word
    # (the first was compiled for the default device, the second for cpu:1).
    mine = [ln[len("Compiled: "):] for ln in out.stdout.splitlines() if ln.startswith("Compiled")]
    theirs = [ln[len("Jax: "):] for ln in out.stdout.splitlines() if ln.startswith("Jax")]
    assert len(mine) == 2 and mine == theirs, out.stdout + out.stderr
    assert "Required sharding: SingleDeviceSharding(device=CpuDevice(id=0)" in mine[0]
    placed = [ln for ln in out.stdout.splitlines() if ln.startswith("Placed")]
    assert len(placed) == 2, out.stdout + out.stderr
    assert all(p.startswith("Placed: ValueError") and "cpu:1" in p for p in placed)
