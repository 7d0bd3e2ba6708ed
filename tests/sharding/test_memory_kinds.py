"""Arrays in host memory (memory kinds ``pinned_host`` / ``unpinned_host`` on CPU),
against jax on the same inputs: ``device_put`` there and back, ``.sharding.memory_kind``,
the memory space in types (``f32<host>[8]``) and its propagation through operations,
``jit`` over such arrays and with in/out shardings in host memory (values, the memory
of each result, the lowered ``mhlo.memory_kind`` attributes and
``annotate_device_placement`` calls), ``device_put`` to a memory inside ``jit``, and
checkpoint policies that offload residuals (values and gradients).
"""

import re

import jax
import jax.ad_checkpoint  # noqa: F401
import numpy as np
import pytest

import minijax
import minijax.ad_checkpoint  # noqa: F401
from tests.sharding._eight_devices import get, run_cases, worker

HOST = ["pinned_host", "unpinned_host"]


def _pair(kind=None):
    """(minijax, jax) SingleDeviceShardings of device 0 in memory ``kind``."""
    return (minijax.sharding.SingleDeviceSharding(minijax.devices()[0], memory_kind=kind),
            jax.sharding.SingleDeviceSharding(jax.devices()[0], memory_kind=kind))


def _x():
    return np.arange(8.0, dtype=np.float32) * 0.5 - 1


def _err(fn):
    """The type and first line of the error ``fn()`` raises (None if none)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared with jax's
        return type(e).__name__, str(e).splitlines()[0]
    return None


def _kinds(tree, m):
    return [o.sharding.memory_kind for o in m.tree.leaves(tree)]


def _values(tree, m):
    return [np.asarray(o) for o in m.tree.leaves(tree)]


def _signature(text: str) -> list[str]:
    """The lines of a lowered module that say where values live: ``@main``'s signature,
    ``sdy.mesh`` declarations and ``annotate_device_placement`` calls (SSA names
    dropped: minijax numbers constants differently)."""
    keep = [ln.strip() for ln in text.splitlines()
            if "func.func public @main" in ln or "sdy.mesh" in ln
            or "annotate_device_placement" in ln]
    return [re.sub(r"%[\w#]+ = ", "", re.sub(r"\(%[\w#]+\)", "(%)", ln)) for ln in keep]


@pytest.mark.parametrize("kind", HOST)
def test_device_put_to_host_memory_and_back_like_jax(kind):
    s, js = _pair(kind)
    x = _x()
    for src in (x, minijax.numpy.asarray(x)):
        a = minijax.device_put(src, s)
        ja = jax.device_put(x, js)
        assert a.sharding.memory_kind == ja.sharding.memory_kind == kind
        assert repr(a.sharding) == repr(ja.sharding)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(ja))
        assert repr(minijax.typeof(a).memory_space) == repr(jax.typeof(ja).memory_space)
        for other in HOST + ["device"]:
            b = minijax.device_put(a, s.with_memory_kind(other))
            jb = jax.device_put(ja, js.with_memory_kind(other))
            assert b.sharding.memory_kind == jb.sharding.memory_kind == other
            assert repr(minijax.typeof(b).memory_space) == repr(jax.typeof(jb).memory_space)
            np.testing.assert_array_equal(np.asarray(b), np.asarray(jb))
    sc, jsc = minijax.device_put(2.0, s), jax.device_put(2.0, js)
    assert sc.sharding.memory_kind == jsc.sharding.memory_kind
    assert sc.weak_type == jsc.weak_type
    tree = minijax.device_put({"a": x, "b": x}, {"a": s, "b": s.with_memory_kind("device")})
    jtree = jax.device_put({"a": x, "b": x}, {"a": js, "b": js.with_memory_kind("device")})
    assert _kinds(tree, minijax) == _kinds(jtree, jax)


def test_device_put_to_memory_space_like_jax():
    x = _x()
    for space in ("Host", "Device"):
        a = minijax.device_put(x, getattr(minijax.memory.Space, space))
        ja = jax.device_put(x, getattr(jax.memory.Space, space))
        assert a.sharding.memory_kind == ja.sharding.memory_kind
        np.testing.assert_array_equal(np.asarray(a), np.asarray(ja))


def test_memory_space_propagates_through_operations_like_jax():
    s, js = _pair("pinned_host")
    x = _x()
    a, ja = minijax.device_put(x, s), jax.device_put(x, js)
    ops = [lambda m, v: v * 2, lambda m, v: m.numpy.sin(v), lambda m, v: v.sum(),
           lambda m, v: v.sum() + 1, lambda m, v: v @ v, lambda m, v: v.reshape(2, 4).T,
           lambda m, v: m.numpy.zeros(3)]
    for op in ops:
        got, want = op(minijax, a), op(jax, ja)
        assert got.sharding.memory_kind == want.sharding.memory_kind
        assert repr(minijax.typeof(got).memory_space) == repr(jax.typeof(want).memory_space)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    # host and device operands of one operation: jax's ValueError
    mine = _err(lambda: a + minijax.numpy.asarray(x))
    assert mine == _err(lambda: ja + jax.numpy.asarray(x)) and mine[0] == "ValueError"
    f = minijax.jit(lambda u, v: minijax.numpy.where(u > 1, u, v))
    jf = jax.jit(lambda u, v: jax.numpy.where(u > 1, u, v))
    mine = _err(lambda: f(a, minijax.numpy.asarray(x)))
    assert mine == _err(lambda: jf(ja, jax.numpy.asarray(x))) and mine[0] == "ValueError"
    assert str(minijax.make_jaxpr(lambda v: (v * 2).sum())(a)) == \
        str(jax.make_jaxpr(lambda v: (v * 2).sum())(ja))


FUNS = {
    "scale": lambda m: (lambda v: v * 2),
    "several": lambda m: (lambda v: (v, v.sum(), v.sum() + 1, m.numpy.zeros(3))),
    "vmap": lambda m: m.vmap(lambda v: m.numpy.sin(v)),
    "cond": lambda m: (lambda v: m.lax.cond(True, lambda u: u * 2, lambda u: u + 1, v)),
    "inner_jit": lambda m: (lambda v: m.jit(lambda u: u * 3)(v) + 1),
    "with_device_array": lambda m: (lambda v: (v * 2, m.numpy.ones(3) + 1)),
    "scan": lambda m: (lambda v: m.lax.scan(lambda c, y: (c + y, y * 2), m.numpy.zeros(()),
                                             v)),
}


@pytest.mark.parametrize("kind", HOST)
@pytest.mark.parametrize("name", sorted(FUNS))
def test_jit_over_host_memory_like_jax(kind, name):
    """jit of an argument in host memory: each result's memory (jax's propagation: a
    result in pinned_host where its type says Host), values, lowered attributes."""
    s, js = _pair(kind)
    a, ja = minijax.device_put(_x(), s), jax.device_put(_x(), js)
    f, jf = minijax.jit(FUNS[name](minijax)), jax.jit(FUNS[name](jax))
    for _ in range(2):  # the second call takes the dispatch fast path
        got, want = f(a), jf(ja)
        assert _kinds(got, minijax) == _kinds(want, jax)
        for g, w in zip(_values(got, minijax), _values(want, jax)):
            np.testing.assert_allclose(g, w, rtol=1e-6)
    assert _signature(f.lower(a).as_text()) == _signature(jf.lower(ja).as_text())


@pytest.mark.parametrize("out_kind", ["device", "pinned_host", "unpinned_host"])
@pytest.mark.parametrize("in_kind", ["device", "pinned_host"])
def test_jit_out_shardings_in_memory_like_jax(in_kind, out_kind):
    s, js = _pair(in_kind)
    if in_kind == "device":  # not committed to the device (jax's attributes differ then)
        a, ja = minijax.numpy.asarray(_x()), jax.numpy.asarray(_x())
    else:
        a, ja = minijax.device_put(_x(), s), jax.device_put(_x(), js)
    f = minijax.jit(lambda v: v * 2, out_shardings=s.with_memory_kind(out_kind))
    jf = jax.jit(lambda v: v * 2, out_shardings=js.with_memory_kind(out_kind))
    got, want = f(a), jf(ja)
    assert got.sharding.memory_kind == want.sharding.memory_kind == out_kind
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    if in_kind == out_kind == "device":
        return  # all in device memory: minijax's module has no shardings (jax's sdy ones)
    assert _signature(f.lower(a).as_text()) == _signature(jf.lower(ja).as_text())


def test_jit_in_shardings_in_memory_like_jax():
    s, js = _pair("pinned_host")
    x = _x()
    f, jf = minijax.jit(lambda v: v * 2, in_shardings=s), jax.jit(lambda v: v * 2,
                                                                   in_shardings=js)
    a, ja = minijax.device_put(x, s), jax.device_put(x, js)
    assert f(a).sharding.memory_kind == jf(ja).sharding.memory_kind
    np.testing.assert_array_equal(np.asarray(f(a)), np.asarray(jf(ja)))
    assert _signature(f.lower(a).as_text()) == _signature(jf.lower(ja).as_text())
    # an argument in device memory where in_shardings names pinned_host: jax's ValueError
    mine = _err(lambda: f(minijax.numpy.asarray(x)))
    assert mine == _err(lambda: jf(jax.numpy.asarray(x))) and mine[0] == "ValueError"


def test_device_put_to_memory_inside_jit_like_jax():
    s, js = _pair("pinned_host")
    x = _x()
    cases = [
        lambda m, t, sp: (lambda v: m.device_put(v * 2, t)),
        lambda m, t, sp: (lambda v: m.device_put(v * 2, sp.Host)),
        lambda m, t, sp: (lambda v: (m.device_put(v * 2, t) * 3, v)),
    ]
    for case in cases:
        f = minijax.jit(case(minijax, s, minijax.memory.Space))
        jf = jax.jit(case(jax, js, jax.memory.Space))
        got, want = f(minijax.numpy.asarray(x)), jf(jax.numpy.asarray(x))
        assert _kinds(got, minijax) == _kinds(want, jax)
        for g, w in zip(_values(got, minijax), _values(want, jax)):
            np.testing.assert_array_equal(g, w)
        assert _signature(f.lower(x).as_text()) == _signature(jf.lower(x).as_text())
    # a transfer inside a branch: every result then says its memory, as jax
    su, jsu = _pair("unpinned_host")
    f = minijax.jit(lambda p, v: minijax.lax.cond(
        p, lambda u: minijax.device_put(u, su) * 2, lambda u: u + 1, v))
    jf = jax.jit(lambda p, v: jax.lax.cond(
        p, lambda u: jax.device_put(u, jsu) * 2, lambda u: u + 1, v))
    assert _signature(f.lower(True, x).as_text()) == _signature(jf.lower(True, x).as_text())
    assert f(True, x).sharding.memory_kind == jf(True, x).sharding.memory_kind
    np.testing.assert_array_equal(np.asarray(f(True, x)), np.asarray(jf(True, x)))
    pm = minijax.make_jaxpr(lambda v: minijax.device_put(v * 2, s))(x)
    pj = jax.make_jaxpr(lambda v: jax.device_put(v * 2, js))(x)
    assert str(pm) == str(pj)


def test_named_sharding_in_host_memory_like_jax():
    mesh = minijax.sharding.Mesh(np.array(minijax.devices()[:1]), ("x",))
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
    s = minijax.sharding.NamedSharding(mesh, minijax.sharding.PartitionSpec("x"),
                                       memory_kind="pinned_host")
    js = jax.sharding.NamedSharding(jmesh, jax.sharding.PartitionSpec("x"),
                                    memory_kind="pinned_host")
    x = _x()
    a, ja = minijax.device_put(x, s), jax.device_put(x, js)
    assert a.sharding.memory_kind == ja.sharding.memory_kind == "pinned_host"
    assert a.addressable_shards[0].data.sharding.memory_kind == "pinned_host"
    np.testing.assert_array_equal(np.asarray(a), np.asarray(ja))
    for kind in ("device", "unpinned_host"):
        b, jb = minijax.device_put(a, s.with_memory_kind(kind)), jax.device_put(
            ja, js.with_memory_kind(kind))
        assert b.sharding.memory_kind == jb.sharding.memory_kind == kind
        np.testing.assert_array_equal(np.asarray(b), np.asarray(jb))
    d, jd = minijax.device_put(a, s.with_memory_kind("device")), jax.device_put(
        ja, js.with_memory_kind("device"))
    for arg, jarg, out, jout in [(a, ja, None, None),
                                 (a, ja, s.with_memory_kind("device"),
                                  js.with_memory_kind("device")),
                                 (d, jd, s, js)]:
        kw = {} if out is None else {"out_shardings": out}
        jkw = {} if jout is None else {"out_shardings": jout}
        f, jf = minijax.jit(lambda v: v * 2, **kw), jax.jit(lambda v: v * 2, **jkw)
        got, want = f(arg), jf(jarg)
        assert got.sharding.memory_kind == want.sharding.memory_kind
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert _signature(f.lower(arg).as_text()) == _signature(jf.lower(jarg).as_text())


def _offload_policies(m):
    cp = m.checkpoint_policies
    return {
        "names": cp.save_and_offload_only_these_names(
            names_which_can_be_saved=[], names_which_can_be_offloaded=["h"],
            offload_src="device", offload_dst="pinned_host"),
        "dots": cp.offload_dot_with_no_batch_dims("device", "pinned_host"),
    }


@pytest.mark.parametrize("policy", ["names", "dots"])
def test_checkpoint_offloading_like_jax(policy):
    """Residuals offloaded to pinned_host: jax's gradients, the results' memory, the
    lowered result attributes; the saved value's type is in host memory."""
    w = np.arange(16.0, dtype=np.float32).reshape(4, 4) / 10
    x = np.ones((2, 4), np.float32)

    def loss(m):
        def f(w, x):
            h = m.ad_checkpoint.checkpoint_name(m.numpy.sin(x @ w), "h")
            return (h @ w).sum()
        return f

    g = minijax.jit(minijax.grad(minijax.checkpoint(
        loss(minijax), policy=_offload_policies(minijax)[policy])))
    jg = jax.jit(jax.grad(jax.checkpoint(loss(jax), policy=_offload_policies(jax)[policy])))
    got, want = g(w, x), jg(w, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
    assert got.sharding.memory_kind == want.sharding.memory_kind
    assert _signature(g.lower(w, x).as_text()) == _signature(jg.lower(w, x).as_text())
    jaxpr = str(minijax.make_jaxpr(minijax.grad(minijax.checkpoint(
        loss(minijax), policy=_offload_policies(minijax)[policy])))(w, x))
    assert "f32<host>[" in jaxpr and "devices=(MemorySpace.Host,)" in jaxpr
    # without jit too
    np.testing.assert_allclose(
        np.asarray(minijax.grad(minijax.checkpoint(
            loss(minijax), policy=_offload_policies(minijax)[policy]))(w, x)),
        np.asarray(want), rtol=1e-5)


# ---- over 8 devices (one subprocess; tests/sharding/_eight_devices.py) -----------------

CASES = {}


def _case(fn):
    CASES[fn.__name__] = fn
    return fn


@_case
def named_sharding_in_host_memory_on_eight_devices():
    """Per library: where each value lives, its sum, and the lowered signatures."""
    out = {}
    x = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    for name, m in (("minijax", minijax), ("jax", jax)):
        mesh = m.sharding.Mesh(np.array(m.devices()[:8]).reshape(4, 2), ("x", "y"))
        s = m.sharding.NamedSharding(mesh, m.sharding.PartitionSpec("x", "y"),
                                     memory_kind="pinned_host")
        a = m.device_put(x, s)
        d = m.device_put(a, s.with_memory_kind("device"))
        rows = [a.sharding.memory_kind, sorted({sh.data.sharding.memory_kind
                                                 for sh in a.addressable_shards}),
                float(np.asarray(a).sum()), d.sharding.memory_kind, float(np.asarray(d).sum())]
        for f, arg in [(m.jit(lambda v: v * 2), a), (m.jit(lambda v: (v * 2).sum(0)), a),
                       (m.jit(lambda v: v * 2, out_shardings=s.with_memory_kind("device")), a),
                       (m.jit(lambda v: v * 2, out_shardings=s), d)]:
            r = f(arg)
            rows.append([r.sharding.memory_kind, tuple(r.sharding.spec),
                         float(np.asarray(r).sum()), _signature(f.lower(arg).as_text())])
        out[name] = rows
    return out


def _worker(path):
    worker(CASES, path)


def test_named_sharding_in_host_memory_on_eight_devices_like_jax(tmp_path):
    results, _ = run_cases("test_memory_kinds", tmp_path)
    r = get(results, "named_sharding_in_host_memory_on_eight_devices")
    assert r["minijax"] == r["jax"]
    assert r["jax"][0] == "pinned_host" and r["jax"][1] == ["pinned_host"]


def test_jit_host_and_device_arguments_like_jax():
    """An argument in host memory beside computed device arrays (jnp results): only the
    host one is annotated, results where jax puts them."""
    s, js = _pair("pinned_host")
    a, ja = minijax.device_put(_x(), s), jax.device_put(_x(), js)
    b, jb = minijax.numpy.ones(3) * 2, jax.numpy.ones(3) * 2
    f = minijax.jit(lambda u, v: (u * 2, v + 1, u.sum() * v))
    jf = jax.jit(lambda u, v: (u * 2, v + 1, u.sum() * v))
    got, want = f(a, b), jf(ja, jb)
    assert _kinds(got, minijax) == _kinds(want, jax)
    for g, w in zip(_values(got, minijax), _values(want, jax)):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert _signature(f.lower(a, b).as_text()) == _signature(jf.lower(ja, jb).as_text())
    c, jc = f.lower(a, b).compile(), jf.lower(ja, jb).compile()
    assert repr(c.input_shardings) == repr(jc.input_shardings)
    assert repr(c.output_shardings) == repr(jc.output_shardings)


@pytest.mark.parametrize("kind", HOST)
def test_device_put_to_memory_under_transforms_like_jax(kind):
    """device_put to a memory under jvp, vmap and grad (the primitive run eagerly). (The
    memory of the gradient of a round trip through host memory is not compared: jax's
    eager grad gives device memory where its jit(grad) raises.)"""
    s, js = _pair(kind)
    x = _x()

    def cases(m, t):
        back = t.with_memory_kind("device")
        return [
            lambda: m.jvp(lambda a: m.device_put(a * 2, t), (x,), (x,)),
            lambda: m.vmap(lambda a: m.device_put(a * 2, t))(x),
            lambda: m.device_put(
                m.grad(lambda a: m.device_put(m.device_put(a * 2, t), back).sum())(x), back),
        ]
    for mine, theirs in zip(cases(minijax, s), cases(jax, js)):
        got, want = mine(), theirs()
        assert _kinds(got, minijax) == _kinds(want, jax)
        for g, w in zip(_values(got, minijax), _values(want, jax)):
            np.testing.assert_array_equal(g, w)


def test_device_put_copies_into_host_memory_like_jax():
    """``may_alias=False`` / ``donate=True`` copies to shardings in host memory."""
    def targets(m):
        mesh = m.sharding.Mesh(np.array(m.devices()[:1]), ("x",))
        return [m.sharding.NamedSharding(mesh, m.sharding.PartitionSpec("x"),
                                         memory_kind="pinned_host"),
                m.sharding.SingleDeviceSharding(m.devices()[0], memory_kind="pinned_host")]
    for m_t, j_t in zip(targets(minijax), targets(jax)):
        rows = []
        for m, t in ((minijax, m_t), (jax, j_t)):
            x = m.numpy.arange(4.0)
            y = m.device_put(x, t, may_alias=False)
            z = m.device_put(y, t, may_alias=False)
            d = m.device_put(y, t, donate=True)
            rows.append((y.sharding.memory_kind, z.sharding.memory_kind,
                         d.sharding.memory_kind, np.asarray(z).tolist()))
        assert rows[0] == rows[1]


def test_compiled_for_another_memory_like_jax():
    """A ``Compiled`` program given an argument in host memory where it was compiled for
    device memory: jax's ValueError naming both shardings; a device array where it was
    compiled for host memory is moved there, as jax does."""
    s, js = _pair("pinned_host")
    a, ja = minijax.device_put(_x(), s), jax.device_put(_x(), js)
    b, jb = minijax.numpy.asarray(_x()), jax.numpy.asarray(_x())
    c = minijax.jit(lambda v: v * 2).lower(a).compile()
    jc = jax.jit(lambda v: v * 2).lower(ja).compile()
    assert c(b).sharding.memory_kind == jc(jb).sharding.memory_kind == "pinned_host"
    np.testing.assert_array_equal(np.asarray(c(b)), np.asarray(jc(jb)))
    c = minijax.jit(lambda v: v * 2).lower(b).compile()
    jc = jax.jit(lambda v: v * 2).lower(jb).compile()
    with pytest.raises(ValueError) as mine:
        c(a)
    with pytest.raises(ValueError) as theirs:
        jc(ja)
    lines = str(mine.value).splitlines()
    jlines = str(theirs.value).splitlines()
    assert lines[0] == jlines[0] and lines[2:] == jlines[2:]
    assert lines[1].replace("'", "") == jlines[1]  # minijax quotes the argument's name


def test_grad_of_host_memory_result_is_refused_like_jax():
    """The cotangent seed of a result in host memory is a device value: jax's ValueError
    (the cotangent's type), raised by the vjp's type check."""
    s, js = _pair("pinned_host")
    a, ja = minijax.device_put(_x(), s), jax.device_put(_x(), js)
    with pytest.raises(ValueError, match="f32<host>"):
        minijax.grad(lambda v: (v ** 2).sum())(a)
    with pytest.raises(ValueError, match="float32<host>"):
        jax.grad(lambda v: (v ** 2).sum())(ja)
