"""pmap on 8 CPU devices: collectives executed for real, checked against numpy.

The CPU client is created once per process (other tests use one device), so the
multi-device cases run in one subprocess with ``MINIJAX_NUM_CPU_DEVICES=8``: each
``@case`` function below is executed there and its result (or error) is sent back;
the tests compare them with numpy (and jax.vmap with the same axis name) here.
"""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax

N = 8
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _x(*shape, dtype=np.float32):
    return (np.arange(int(np.prod(shape))).reshape(shape) * 1.5 - 7).astype(dtype)


# ---- cases (run in the 8-device subprocess) ------------------------------------------------

@case
def device_count():
    return minijax.device_count()


@case
def psum_pmean():
    f = minijax.pmap(lambda x: (lax.psum(x, 'i'), x - lax.pmean(x, 'i')), axis_name='i')
    return f(_x(N, 3))


@case
def pmax_pmin_ints():
    f = minijax.pmap(lambda x: (lax.pmax(x, 'i'), lax.pmin(x, 'i')), axis_name='i')
    return f(_x(N, 2, dtype=np.int32) % 5)


@case
def all_gather():
    f = minijax.pmap(lambda x: (lax.all_gather(x, 'i'),
                                lax.all_gather(x, 'i', axis=1, tiled=True)), axis_name='i')
    return f(_x(N, 2, 3))


@case
def ppermute_ring():
    perm = [(i, (i + 1) % N) for i in range(N)]
    return minijax.pmap(lambda x: lax.ppermute(x, 'i', perm), axis_name='i')(_x(N, 2))


@case
def ppermute_partial():
    return minijax.pmap(lambda x: lax.ppermute(x, 'i', [(0, 3), (3, 0)]), axis_name='i')(
        _x(4, 2))


@case
def axis_index():
    return minijax.pmap(lambda x: lax.axis_index('i') * 10 + x, axis_name='i')(
        np.ones(N, np.int32))


@case
def fewer_than_all_devices():
    return minijax.pmap(lambda x: lax.psum(x ** 2, 'i'), axis_name='i')(_x(3, 4))


@case
def in_axes_out_axes_static():
    def f(x, y, scale, mode):
        return (x * scale + y if mode == "add" else x * scale - y), jnp.sum(x)

    g = minijax.pmap(f, axis_name='i', in_axes=(1, None, None, None), out_axes=(1, 0),
                     static_broadcasted_argnums=3)
    return g(_x(3, N), np.float32(2.0), 0.5, "sub")


@case
def pytree_args_kwargs():
    def f(p, *, b):
        return {"s": lax.psum(p["w"] @ p["v"], 'i'), "b": b * 2}

    p = {"w": _x(N, 2, 3), "v": _x(N, 3)}
    return minijax.pmap(f, axis_name='i')(p, b=_x(N, 4))


@case
def out_axes_none():
    return minijax.pmap(lambda x: lax.psum(x, 'i'), axis_name='i', out_axes=None)(_x(N, 2))


@case
def cached_second_call():
    f = minijax.pmap(lambda x: x * lax.psum(x, 'i'), axis_name='i')
    a = f(_x(N))
    b = f(minijax.device_put(_x(N) + 1))  # a device array argument
    return a, b, len(f._cache)


@case
def explicit_devices():
    devs = minijax.devices()[2:6]
    f = minijax.pmap(lambda x: lax.psum(x, 'i') + lax.axis_index('i'), axis_name='i',
                     devices=devs)
    out = f(_x(4))
    return out, [d.id for d in next(iter(f._cache.values())).exe.devices]


@case
def pmap_under_jit_and_nested():
    inner = minijax.jit(minijax.pmap(lambda x: x - lax.psum(x, 'i'), axis_name='i'))(_x(4, 2))
    nested = minijax.pmap(minijax.pmap(lambda x: lax.psum(x, ('i', 'j')), axis_name='j'),
                          axis_name='i')(_x(4, 2))
    return inner, nested


def _collective_losses(L):
    """Scalar losses through each linear collective (and pmax), for their gradients."""
    w = np.arange(N, dtype=np.float32)[:, None]
    ring = [(i, (i + 1) % N) for i in range(N)]
    return {
        "psum": lambda x: (L.psum(x, 'i') * x).sum(),
        "all_gather": lambda x: (L.all_gather(x, 'i') ** 2 * w).sum(),
        "all_gather_tiled": lambda x: (L.all_gather(x, 'i', tiled=True) ** 2
                                       * np.arange(2 * N, dtype=np.float32)).sum(),
        "ppermute": lambda x: (L.ppermute(x, 'i', ring) * x ** 2).sum(),
        "pmax": lambda x: (L.pmax(x, 'i') * x).sum(),
    }


@case
def collective_grads():
    # the transposes lowered to cross-replica ops (all_reduce, replica_id, collective_permute)
    return {k: minijax.pmap(minijax.grad(f), axis_name='i')(_x(N, 2))
            for k, f in _collective_losses(lax).items()}


@case
def too_many_for_devices():
    minijax.pmap(lambda x: x, axis_name='i')(np.zeros((N + 1, 2), np.float32))


# ---- running them --------------------------------------------------------------------------

def _to_host(x):
    from minijax.tree_util import tree_map
    return tree_map(lambda v: np.asarray(v) if isinstance(v, minijax.Array) else v, x)


def _worker(path: str) -> None:
    out = {}
    for name, fn in CASES.items():
        try:
            out[name] = ("ok", _to_host(fn()))
        except Exception as e:  # noqa: BLE001 - reported to the parent
            out[name] = ("error", type(e).__name__, str(e))
    with open(path, "wb") as f:
        pickle.dump(out, f)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    path = tmp_path_factory.mktemp("pmap") / "results.pkl"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES=str(N), MINIJAX_PLATFORMS="cpu",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-c", f"import tests.stages.test_pmap as t; t._worker({str(path)!r})"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(path, "rb") as f:
        return pickle.load(f)


def _ok(results, name):
    r = results[name]
    assert r[0] == "ok", r
    return r[1]


def _jax_vmap(fn, *args, **kw):
    import jax
    return jax.vmap(fn, axis_name='i', **kw)(*args)


@pytest.mark.slow
def test_worker_has_8_devices(results):
    assert _ok(results, "device_count") == N


@pytest.mark.slow
def test_psum_pmean(results):
    x = _x(N, 3)
    s, c = _ok(results, "psum_pmean")
    np.testing.assert_allclose(s, np.broadcast_to(x.sum(0), (N, 3)), rtol=1e-6)
    np.testing.assert_allclose(c, x - x.mean(0), rtol=1e-6, atol=1e-5)
    assert s.dtype == np.float32 and s.shape == (N, 3)
    import jax
    ref = _jax_vmap(lambda v: (jax.lax.psum(v, 'i'), v - jax.lax.pmean(v, 'i')), x)
    np.testing.assert_allclose(c, ref[1], rtol=1e-6, atol=1e-5)


@pytest.mark.slow
def test_pmax_pmin_ints(results):
    x = _x(N, 2, dtype=np.int32) % 5
    mx, mn = _ok(results, "pmax_pmin_ints")
    assert mx.dtype == np.int32
    np.testing.assert_array_equal(mx, np.broadcast_to(x.max(0), x.shape))
    np.testing.assert_array_equal(mn, np.broadcast_to(x.min(0), x.shape))


@pytest.mark.slow
def test_all_gather(results):
    x = _x(N, 2, 3)
    stacked, tiled = _ok(results, "all_gather")
    assert stacked.shape == (N, N, 2, 3) and tiled.shape == (N, 2, 3 * N)
    for i in range(N):
        np.testing.assert_array_equal(stacked[i], x)
        np.testing.assert_array_equal(tiled[i], np.concatenate(list(x), axis=1))


@pytest.mark.slow
def test_ppermute(results):
    x = _x(N, 2)
    np.testing.assert_array_equal(_ok(results, "ppermute_ring"), np.roll(x, 1, axis=0))
    x4 = _x(4, 2)
    expect = np.zeros_like(x4)
    expect[3], expect[0] = x4[0], x4[3]
    np.testing.assert_array_equal(_ok(results, "ppermute_partial"), expect)
    import jax
    perm = [(i, (i + 1) % N) for i in range(N)]
    ref = _jax_vmap(lambda v: jax.lax.ppermute(v, 'i', perm), x)
    np.testing.assert_array_equal(_ok(results, "ppermute_ring"), ref)


@pytest.mark.slow
def test_collective_grads(results):
    import jax
    got = _ok(results, "collective_grads")
    x = _x(N, 2)
    for name, f in _collective_losses(jax.lax).items():
        mini = minijax.vmap(minijax.grad(_collective_losses(lax)[name]), axis_name='i')(x)
        np.testing.assert_allclose(got[name], mini, rtol=1e-6, err_msg=name)
        if name != "pmax":  # (jax has no derivative of pmax)
            np.testing.assert_allclose(got[name], _jax_vmap(jax.grad(f), x), rtol=1e-6,
                                       err_msg=name)


@pytest.mark.slow
def test_axis_index(results):
    out = _ok(results, "axis_index")
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, np.arange(N) * 10 + 1)


@pytest.mark.slow
def test_fewer_than_all_devices(results):
    x = _x(3, 4)
    np.testing.assert_allclose(_ok(results, "fewer_than_all_devices"),
                               np.broadcast_to((x ** 2).sum(0), x.shape), rtol=1e-6)


@pytest.mark.slow
def test_in_axes_out_axes_static(results):
    x = _x(3, N)
    y, s = _ok(results, "in_axes_out_axes_static")
    np.testing.assert_allclose(y, x * 0.5 - 2.0, rtol=1e-6)
    np.testing.assert_allclose(s, x.sum(0), rtol=1e-6)
    assert y.shape == (3, N) and s.shape == (N,)


@pytest.mark.slow
def test_pytree_args_kwargs(results):
    w, v, b = _x(N, 2, 3), _x(N, 3), _x(N, 4)
    out = _ok(results, "pytree_args_kwargs")
    per = np.einsum("nij,nj->ni", w, v)
    np.testing.assert_allclose(out["s"], np.broadcast_to(per.sum(0), per.shape), rtol=1e-5)
    np.testing.assert_allclose(out["b"], b * 2)


@pytest.mark.slow
def test_out_axes_none(results):
    np.testing.assert_allclose(_ok(results, "out_axes_none"), _x(N, 2).sum(0))


@pytest.mark.slow
def test_second_call_reuses_executable(results):
    a, b, n_compiled = _ok(results, "cached_second_call")
    x = _x(N)
    np.testing.assert_allclose(a, x * x.sum(), rtol=1e-6)
    np.testing.assert_allclose(b, (x + 1) * (x + 1).sum(), rtol=1e-6)
    assert n_compiled == 1


@pytest.mark.slow
def test_explicit_devices(results):
    out, ids = _ok(results, "explicit_devices")
    np.testing.assert_allclose(out, _x(4).sum() + np.arange(4))
    assert ids == [2, 3, 4, 5]


@pytest.mark.slow
def test_pmap_under_jit_and_nested(results):
    inner, nested = _ok(results, "pmap_under_jit_and_nested")
    x = _x(4, 2)
    np.testing.assert_allclose(inner, x - x.sum(0))
    np.testing.assert_allclose(nested, np.full_like(x, x.sum()))


@pytest.mark.slow
def test_too_many_for_devices_in_worker(results):
    r = results["too_many_for_devices"]
    assert r[0] == "error" and r[1] == "ValueError"
    assert "size 9" in r[2] and "only 8" in r[2]


# ---- in this process (whatever its device count) -------------------------------------------

def test_mapped_axis_larger_than_device_count():
    n = minijax.device_count()
    with pytest.raises(ValueError, match=rf"size {n + 1}.*only {n} XLA devices"):
        minijax.pmap(lambda x: x)(np.zeros((n + 1, 2), np.float32))


def test_single_replica_runs_here():
    x = _x(1, 3)
    out = minijax.pmap(lambda v: v - lax.psum(v, 'i') + lax.axis_index('i'),
                       axis_name='i')(x)
    assert isinstance(out, minijax.Array) and out.shape == (1, 3)
    np.testing.assert_array_equal(np.asarray(out), np.zeros((1, 3), np.float32))


@pytest.mark.parametrize("args, kw, match", [
    ((np.zeros((1, 2)),), {"in_axes": None}, "at least one argument with a mapped axis"),
    ((np.float32(1.0),), {}, "rank should be at least 1"),
    ((np.zeros((1, 2)), np.zeros((2, 2))), {}, "inconsistent sizes"),
    ((np.zeros((1, 2)),), {"in_axes": 2}, "axis 2"),
    ((np.zeros((1, 2)),), {"in_axes": (0, 0)}, "len\\(in_axes\\)=2, len\\(args\\)=1"),
])
def test_argument_errors(args, kw, match):
    with pytest.raises(ValueError, match=match):
        minijax.pmap(lambda *a: a[0], **kw)(*args)


def test_static_argument_errors():
    f = minijax.pmap(lambda x, s: x, static_broadcasted_argnums=1)
    with pytest.raises(ValueError, match="static_broadcasted_argnums"):
        f(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="hashable"):
        f(np.zeros((1, 2)), [1])


def test_unbound_axis_name():
    with pytest.raises(NameError, match="'j'"):
        minijax.pmap(lambda x: lax.psum(x, 'j'), axis_name='i')(np.zeros((1, 2)))
