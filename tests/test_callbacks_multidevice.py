"""Host callbacks (``debug.print``, ``debug.callback``, ``pure_callback``, ``io_callback``)
under ``pmap``, sharded ``jit`` and ``shard_map`` on 8 CPU devices, against jax.

One subprocess with 8 host devices runs every case with minijax and with jax (same
code, the library passed in) and sends back what each printed, the values its callbacks
saw (sorted: jax does not fix the order across devices), the result, or the error. As in
jax: under pmap and in shard_map bodies a callback runs once per device with that
device's values; under a sharded jit once, on the whole (gathered) value; ordered debug
callbacks on several devices are a ValueError, ordered IO callbacks run.
"""

import contextlib
import io
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

N = 8


def _cases(jx, io_callback, shard_map):
    P = jx.sharding.PartitionSpec
    NS = jx.sharding.NamedSharding
    mesh = jx.sharding.Mesh(np.array(jx.devices()), ("x",))
    mesh2 = jx.sharding.Mesh(np.array(jx.devices()).reshape(4, 2), ("x", "y"))
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    xs = jx.device_put(x, NS(mesh, P("x")))
    x2 = jx.device_put(np.arange(32, dtype=np.float32).reshape(8, 4), NS(mesh2, P("x", "y")))

    def sds(a):
        return jx.ShapeDtypeStruct(a.shape, a.dtype)

    def cb_print(a):
        jx.debug.print("a={a} sum={s}", a=a, s=a.sum())
        return a * 2

    def cb_callback(seen):
        def f(a):
            jx.debug.callback(lambda t, k: seen.append((np.asarray(t).tolist(), k)), a, k=3)
            return a * 2
        return f

    def cb_pure(seen, **kw):
        def f(a):
            def host(t):
                seen.append(np.asarray(t).tolist())
                return np.asarray(t) + 1, np.asarray(t).sum().reshape(1)
            y, s = jx.pure_callback(host, (sds(a), jx.ShapeDtypeStruct((1,), a.dtype)), a,
                                    **kw)
            return y * s
        return f

    def cb_io(seen, ordered=False):
        def f(a):
            def host(t):
                seen.append(np.asarray(t).tolist())
                return np.asarray(t) - 1
            return io_callback(host, sds(a), a, ordered=ordered) * 3
        return f

    def cb_print_ordered(a):
        jx.debug.print("a={}", a, ordered=True)
        return a + 1

    def smap(f, m=mesh, spec=None):
        spec = P("x") if spec is None else spec
        return jx.jit(shard_map(f, mesh=m, in_specs=spec, out_specs=spec))

    bodies = {  # name -> f(seen) -> function of the array
        "print": lambda seen: cb_print, "callback": cb_callback, "pure": cb_pure,
        "io": cb_io, "io_ordered": lambda seen: cb_io(seen, True),
        "print_ordered": lambda seen: cb_print_ordered,
    }
    cases = {}
    for name, body in bodies.items():
        cases[f"pmap_{name}"] = lambda seen, body=body: jx.pmap(body(seen))(x)
        cases[f"jit_{name}"] = lambda seen, body=body: jx.jit(body(seen))(xs)
        cases[f"shard_map_{name}"] = lambda seen, body=body: smap(body(seen))(xs)
    cases["shard_map_2d_print"] = lambda seen: smap(cb_print, mesh2, P("x", "y"))(x2)
    cases["jit_2d_pure"] = lambda seen: jx.jit(cb_pure(seen))(x2)
    cases["jit_pure_single_device"] = lambda seen: jx.jit(cb_pure(
        seen, sharding=jx.sharding.SingleDeviceSharding(jx.devices()[3])))(xs)
    cases["jit_pure_named_sharding"] = lambda seen: jx.jit(cb_pure(
        seen, sharding=NS(mesh, P())))(xs)
    cases["shard_map_pure_sharding"] = lambda seen: smap(cb_pure(
        seen, sharding=jx.sharding.SingleDeviceSharding(jx.devices()[0])))(xs)
    cases["shard_map_partial_auto"] = lambda seen: jx.jit(shard_map(
        cb_print, mesh=mesh2, in_specs=P("x"), out_specs=P("x"), axis_names={"x"}))(x2)
    cases["jit_callback_then_psum"] = lambda seen: jx.jit(  # callback next to a collective
        lambda a: cb_callback(seen)(a).sum(0))(xs)
    return cases


def _run_all(jx, io_callback, shard_map) -> dict:
    out = {}
    for name, fn in _cases(jx, io_callback, shard_map).items():
        buf, seen = io.StringIO(), []
        try:
            with contextlib.redirect_stdout(buf):
                res = np.asarray(fn(seen))
                jx.effects_barrier()
            out[name] = ("ok", sorted(buf.getvalue().splitlines()), sorted(map(repr, seen)),
                         res.tolist())
        except Exception as e:  # noqa: BLE001 - compared with jax's
            out[name] = ("error", type(e).__name__, str(e).split("\n")[0])
    return out


def _worker(path, shardy):
    import jax
    import jax.experimental
    import minijax
    import minijax.experimental
    jax.config.update("jax_use_shardy_partitioner", shardy)
    minijax.config.update("minijax_use_shardy_partitioner", shardy)
    res = {"minijax": _run_all(minijax, minijax.experimental.io_callback, minijax.shard_map),
           "jax": _run_all(jax, jax.experimental.io_callback, jax.shard_map),
           "failing": _failing(minijax, minijax.experimental.io_callback, minijax.shard_map)}
    with open(path, "wb") as f:
        pickle.dump(res, f)


@pytest.fixture(scope="module", params=[True, False], ids=["shardy", "gspmd"])
def results(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("callbacks") / "results.pkl"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES=str(N), MINIJAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_force_host_platform_device_count={N}", JAX_PLATFORMS="cpu",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-c", "import tests.test_callbacks_multidevice as t; "
         f"t._worker({str(path)!r}, {request.param})"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(path, "rb") as f:
        return pickle.load(f)


NAMES = sorted(_cases.__code__.co_consts and [  # the case names, known without devices
    f"{w}_{b}" for w in ("pmap", "jit", "shard_map")
    for b in ("print", "callback", "pure", "io", "io_ordered", "print_ordered")] + [
    "shard_map_2d_print", "jit_2d_pure", "jit_pure_single_device", "jit_pure_named_sharding",
    "shard_map_pure_sharding", "shard_map_partial_auto", "jit_callback_then_psum"])

# The error messages name the library's own classes (jax.sharding.NamedSharding, jax's
# effect objects): compared up to those names.
_NAMES = [("<class 'minijax.runtime.sharding.NamedSharding'>",
           "<class 'jax.sharding.NamedSharding'>"), ("jax._src.", "")]


def _normalize(msg: str) -> str:
    for a, b in _NAMES:
        msg = msg.replace(a, b)
    if "ordered effects are not supported" in msg:
        msg = msg.split(":")[0]
    return msg


# jax runs a debug callback in a shard_map manual over some mesh axes once per manual
# block (in a nested manual computation, on the first device of the other axes);
# minijax raises NotImplementedError there (pure and io callbacks: jax's error too).
_NOT_YET = {"shard_map_partial_auto"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(
    strict=True, reason="debug callbacks in partially manual shard_map")) if n in _NOT_YET
    else n for n in NAMES])
def test_matches_jax(results, name):
    mine, theirs = results["minijax"][name], results["jax"][name]
    if theirs[0] == "error":
        assert mine[0] == "error", (mine, theirs)
        assert mine[1] == theirs[1], (mine, theirs)
        assert _normalize(mine[2]) == _normalize(theirs[2]), (mine, theirs)
    else:
        assert mine == theirs


def test_per_device_semantics(results):
    """What jax does, spelled out (so a change in both would still be noticed)."""
    r = results["minijax"]
    assert len(r["pmap_print"][1]) == N and r["pmap_print"][1][0] == "a=[0. 1.] sum=1.0"
    assert len(r["shard_map_callback"][2]) == N  # once per device, its (1, 2) block
    assert r["shard_map_callback"][2][0].startswith("([[0.0, 1.0]], ")
    assert len(r["jit_pure"][2]) == 1  # once, on the whole value
    assert r["jit_pure"][2][0] == repr(np.arange(16.0).reshape(8, 2).tolist())
    assert r["jit_io_ordered"][0] == "ok"
    assert r["jit_print_ordered"][:2] == ("error", "ValueError")


def _failing(jx, io_callback, shard_map):
    """A callback that raises, on several devices: an error, then the devices work on
    (XLA:CPU leaves the other devices waiting in the next collective and aborts the
    process in jax 0.10.2, so this runs for minijax only)."""
    P = jx.sharding.PartitionSpec
    mesh = jx.sharding.Mesh(np.array(jx.devices()), ("x",))
    xs = jx.device_put(np.ones((8, 2), np.float32), jx.sharding.NamedSharding(mesh, P("x")))

    def boom(t):
        raise ValueError("boom")

    def f(a):
        return jx.pure_callback(boom, jx.ShapeDtypeStruct(a.shape, a.dtype), a).sum() + a.sum()
    out = []
    for run in (lambda: jx.jit(f)(xs),
                lambda: jx.pmap(lambda a: jx.lax.psum(f(a), "i"), axis_name="i")(xs),
                lambda: jx.jit(shard_map(lambda a: jx.lax.psum(f(a), "x"), mesh=mesh,
                                         in_specs=P("x"), out_specs=P()))(xs)):
        try:
            np.asarray(run())
            out.append("no error")
        except Exception as e:  # noqa: BLE001
            out.append(f"{type(e).__name__}: {'boom' in str(e)}")
    out.append(float(jx.jit(lambda a: a.sum())(xs)))  # the devices still work
    return out


def test_failing_callback_raises_and_devices_go_on(results):
    assert results["failing"] == ["JaxRuntimeError: True"] * 3 + [16.0]
