"""Exported functions with shardings, against jax.export 0.10.2 on 8 CPU devices: a jit
with ``in_shardings``/``out_shardings`` over a Mesh (auto and explicit axes), sharded
``ShapeDtypeStruct`` arguments, unspecified shardings, pytrees, one- and two-axis meshes.

Each function is exported by both libraries and its bytes read by both (minijax -> jax,
jax -> minijax, and each to itself): the reader's ``nr_devices``, named shardings (mesh
axes, axis types, abstract device, spec, memory kind), ``in_shardings_hlo`` /
``out_shardings_hlo`` and ``in_shardings_jax(mesh)`` must agree, and calling it under
``jit`` with ``in_shardings_jax(mesh)`` gives the same values and result layouts. Also
jax's error for a call on another number of devices, and damaged sharding fields
(ValueError, never a crash).

The cases run in one subprocess with 8 devices (``tests/sharding/_eight_devices.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.sharding._eight_devices import get as _get
from tests.sharding._eight_devices import run_cases, worker

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _x(*shape):
    return (np.arange(int(np.prod(shape))).reshape(shape) * 0.25 - 3).astype(np.float32)


class _Lib:
    """One library's names: the library, its numpy, sharding and export modules."""

    def __init__(self, which: str):
        if which == "jax":
            import jax
            import jax.numpy as xnp
            from jax import export, sharding
        else:
            import minijax as jax
            import minijax.numpy as xnp
            from minijax import export, sharding
        self.name, self.lib, self.np, self.export, self.sh = which, jax, xnp, export, sharding

    def mesh(self, shape, names, explicit=False):
        t = self.sh.AxisType.Explicit if explicit else self.sh.AxisType.Auto
        return self.lib.make_mesh(shape, names, axis_types=(t,) * len(names))

    def named(self, mesh, *spec):
        return self.sh.NamedSharding(mesh, self.sh.PartitionSpec(*spec))


def _named_summary(s):
    if s is None:
        return None
    m = s.mesh
    d = getattr(m, "abstract_device", None)
    return (tuple(m.axis_sizes), tuple(m.axis_names), tuple(t.name for t in m.axis_types),
            None if d is None else (d.device_kind, d.num_cores, d.platform),
            tuple(s.spec), s.memory_kind)


def _summary(exp, mesh) -> dict:
    def hlo(h):
        return None if h is None else str(h)
    return dict(
        nr_devices=exp.nr_devices,
        in_named=[_named_summary(s) for s in exp._in_named_shardings],
        out_named=[_named_summary(s) for s in exp._out_named_shardings],
        in_hlo=[hlo(h) for h in exp.in_shardings_hlo],
        out_hlo=[hlo(h) for h in exp.out_shardings_hlo],
        in_jax=[None if s is None else (tuple(s.spec), s.memory_kind,
                                        tuple(s.mesh.axis_names))
                for s in exp.in_shardings_jax(mesh)],
        out_jax=[None if s is None else (tuple(s.spec), s.memory_kind)
                 for s in exp.out_shardings_jax(mesh)],
        in_avals=[(tuple(a.shape), str(a.dtype)) for a in exp.in_avals],
        out_avals=[(tuple(a.shape), str(a.dtype)) for a in exp.out_avals])


def _call(L, exp, mesh, args):
    flat = list(exp.in_shardings_jax(mesh))
    shardings, _ = L.lib.tree_util.tree_unflatten(exp.in_tree, flat)
    outs = L.lib.tree_util.tree_unflatten(exp.out_tree, list(exp.out_shardings_jax(mesh)))
    f = L.lib.jit(exp.call, in_shardings=tuple(shardings), out_shardings=outs)
    out = L.lib.tree_util.tree_leaves(f(*args))
    return [np.asarray(o) for o in out], [_spec(o) for o in out]


def _spec(a):
    s = getattr(a, "sharding", None)
    spec = getattr(s, "spec", None)
    if spec is None:
        return None
    parts = list(spec)
    while parts and parts[-1] is None:  # P('x') and P('x', None) lay out alike
        parts.pop()
    return tuple(parts)


# ---- the functions: (build(L) -> (jitted function, mesh), argument specs, arguments) ------

def _matmul(L):
    mesh = L.mesh((4, 2), ("x", "y"))

    def f(a, b):
        return L.np.sin(a) @ b, a.sum()
    return L.lib.jit(f, in_shardings=(L.named(mesh, "x", None), L.named(mesh)),
                     out_shardings=(L.named(mesh, "x", "y"), None)), mesh


def _unspecified(L):
    mesh = L.mesh((4, 2), ("x", "y"))

    def f(a, b):
        return a * 2.0, b + 1.0
    return L.lib.jit(f, in_shardings=(L.named(mesh, "x"), None)), mesh


def _out_only(L):
    mesh = L.mesh((2, 4), ("a", "b"))

    def f(a, b):
        return a * 2.0, (a @ b).T
    return L.lib.jit(f, out_shardings=(L.named(mesh, "b", "a"), L.named(mesh))), mesh


def _one_axis_tuple_spec(L):
    mesh = L.mesh((8,), ("i",))

    def f(d):
        return {"s": d["u"] * d["v"], "t": L.np.cos(d["u"])}
    s = L.named(mesh, "i", None)
    return L.lib.jit(f, in_shardings=({"u": s, "v": L.named(mesh, None, "i")},),
                     out_shardings={"s": s, "t": L.named(mesh)}), mesh


def _multi_axis_dim(L):
    mesh = L.mesh((4, 2), ("x", "y"))

    def f(a):
        return a - 1.0
    return L.lib.jit(f, in_shardings=L.named(mesh, ("x", "y")),
                     out_shardings=L.named(mesh, None, ("y", "x"))), mesh


def _explicit(L):
    mesh = L.mesh((2, 4), ("a", "b"), explicit=True)

    def f(x, y):
        return x * 2.0 + y
    return L.lib.jit(f, in_shardings=(L.named(mesh, "a", "b"), L.named(mesh, "a", "b"))), mesh


FUNS = {
    "matmul": (_matmul, lambda: [_x(8, 4), _x(4, 6)]),
    "unspecified": (_unspecified, lambda: [_x(8, 2), _x(3)]),
    "out_only": (_out_only, lambda: [_x(4, 8), _x(8, 4)]),
    "one_axis_tuple_spec": (_one_axis_tuple_spec,
                            lambda: [{"u": _x(8, 8), "v": _x(8, 8) + 1}]),
    "multi_axis_dim": (_multi_axis_dim, lambda: [_x(16, 8)]),
    "explicit": (_explicit, lambda: [_x(4, 8), _x(4, 8)]),
}


def _specs(L, args):
    return L.lib.tree_util.tree_map(lambda a: L.lib.ShapeDtypeStruct(a.shape, a.dtype), args)


def _both_ways(name):
    build, make_args = FUNS[name]
    libs = {w: _Lib(w) for w in ("jax", "minijax")}
    blobs, meshes = {}, {}
    for w, L in libs.items():
        fj, meshes[w] = build(L)
        exp = L.export.export(fj)(*_specs(L, make_args()))
        blobs[w] = bytes(exp.serialize())
        if w == "jax":
            fresh = _summary(exp, meshes[w])
    out = {"fresh_jax": fresh}
    for writer, blob in blobs.items():
        for reader, L in libs.items():
            exp = L.export.deserialize(bytearray(blob))
            out[writer[0] + reader[0]] = dict(summary=_summary(exp, meshes[reader]),
                                              call=_call(L, exp, meshes[reader], make_args()))
    return out


for _name in FUNS:
    CASES[_name] = (lambda n: lambda: _both_ways(n))(_name)


def _export_sds(L):
    mesh = L.mesh((4, 2), ("x", "y"))

    def f(a, b):
        return a + b.sum()
    sds = [L.lib.ShapeDtypeStruct((8, 4), np.float32, sharding=L.named(mesh, "x")),
           L.lib.ShapeDtypeStruct((3,), np.float32)]
    return L.export.export(L.lib.jit(f))(*sds), mesh


@case
def sharded_shape_dtype_structs():
    out = {}
    for w in ("jax", "minijax"):
        L = _Lib(w)
        exp, mesh = _export_sds(L)
        back = L.export.deserialize(exp.serialize())
        out[w] = dict(fresh=_summary(exp, mesh), back=_summary(back, mesh),
                      call=_call(L, back, mesh, [_x(8, 4), _x(3)]))
    return out


@case
def device_count_errors():
    """Calling an Exported for 8 devices on 1 (eagerly on numpy arguments, or a jit on
    one device) or on 4 devices is jax's ValueError; a 1-device Exported may be called
    in an 8-device computation."""
    out = {}
    for w in ("jax", "minijax"):
        L = _Lib(w)
        fj, mesh = _matmul(L)
        exp = L.export.deserialize(L.export.export(fj)(*_specs(L, [_x(8, 4), _x(4, 6)]))
                                   .serialize())
        a, b = _x(8, 4), _x(4, 6)
        errs = []
        m4 = L.lib.make_mesh((4,), ("x",))
        for thunk in (lambda: exp.call(a, b), lambda: L.lib.jit(exp.call)(a, b),
                      lambda: L.lib.jit(exp.call, in_shardings=L.named(m4))(a, b)):
            try:
                thunk()
                errs.append(None)
            except ValueError as e:  # minijax adds the equation's source on a line below
                errs.append(str(e).splitlines()[0])
        one = L.export.deserialize(L.export.export(L.lib.jit(L.np.sin))(
            L.lib.ShapeDtypeStruct((8,), np.float32)).serialize())
        r = L.lib.jit(one.call, in_shardings=L.named(mesh, "x"))(_x(8))
        out[w] = dict(errs=errs, one_nr=one.nr_devices, one_in=list(one._in_named_shardings),
                      one=np.asarray(r))
    return out


@case
def mesh_mismatch_error():
    out = {}
    for w in ("jax", "minijax"):
        L = _Lib(w)
        fj, _ = _matmul(L)
        exp = L.export.export(fj)(*_specs(L, [_x(8, 4), _x(4, 6)]))
        res = []
        for mesh in (L.mesh((2, 4), ("x", "y")), L.mesh((4, 2), ("x", "y"), explicit=True)):
            try:
                exp.in_shardings_jax(mesh)
                res.append(None)
            except ValueError as e:
                res.append(str(e).split(" does not match")[0].startswith("NamedSharding new"))
        out[w] = res
    return out


def _worker(path):
    worker(CASES, path)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run_cases("tests.export.test_export_sharded", tmp_path_factory.mktemp("exps"))[0]


def get(results, name):
    return _get(results, name)


def _same_values(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", list(FUNS))
def test_both_ways(results, name):
    r = get(results, name)
    want = r["jj"]
    # what jax reads back from its own bytes: the reference for every writer/reader pair
    assert want["summary"]["nr_devices"] == 8
    assert want["summary"]["in_named"] == r["fresh_jax"]["in_named"]
    for pair in ("jm", "mj", "mm"):
        got = r[pair]
        assert got["summary"] == want["summary"], pair
        _same_values(got["call"][0], want["call"][0])
        assert got["call"][1] == want["call"][1], pair


def test_sharded_shape_dtype_structs(results):
    r = get(results, "sharded_shape_dtype_structs")
    assert r["minijax"]["fresh"] == r["jax"]["fresh"]
    assert r["minijax"]["back"] == r["jax"]["back"]
    assert r["jax"]["back"]["in_named"][1] is None  # unspecified
    _same_values(r["minijax"]["call"][0], r["jax"]["call"][0])
    assert r["minijax"]["call"][1] == r["jax"]["call"][1]


def test_device_count_errors(results):
    r = get(results, "device_count_errors")
    assert r["minijax"]["errs"] == r["jax"]["errs"]
    assert r["jax"]["errs"][0] == ("Function f was exported for 8 devices and is called in a "
                                   "context with 1 devices, which is not allowed.")
    assert "with 4 devices" in r["jax"]["errs"][2]
    assert r["minijax"]["one_nr"] == r["jax"]["one_nr"] == 1
    assert r["minijax"]["one_in"] == r["jax"]["one_in"] == [None]
    np.testing.assert_allclose(r["minijax"]["one"], r["jax"]["one"], rtol=1e-6)


def test_mesh_mismatch_error(results):
    r = get(results, "mesh_mismatch_error")
    assert r["minijax"] == r["jax"] == [True, True]


pytestmark = pytest.mark.slow
