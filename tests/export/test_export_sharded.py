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
        in_avals=[_aval_summary(a) for a in exp.in_avals],
        out_avals=[_aval_summary(a) for a in exp.out_avals])


def _aval_summary(a):
    """Shape, dtype and, over explicit mesh axes, the sharding in the type (jax's avals
    over an auto mesh carry an all-None spec, minijax's none: both say nothing)."""
    return (tuple(map(str, a.shape)), str(a.dtype), _spec(a) or None)


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
def vjp_both_ways():
    """``serialize(vjp_order=1)`` of a sharded function: the vjp is laid out as jax's
    (primals and cotangents as the primal's arguments and results, input cotangents as
    its arguments), and ``grad`` of the function read back gives jax's values."""
    libs = {w: _Lib(w) for w in ("jax", "minijax")}
    blobs, meshes, out = {}, {}, {}
    for w, L in libs.items():
        fj, meshes[w] = _unspecified_out(L)
        exp = L.export.export(fj)(*_specs(L, [_x(8, 4), _x(4, 6)]))
        out[w + "_vjp"] = _summary(exp.vjp(), meshes[w])
        blobs[w] = bytes(exp.serialize(vjp_order=1))
    for writer, blob in blobs.items():
        for reader, L in libs.items():
            exp = L.export.deserialize(bytearray(blob))
            mesh = meshes[reader]

            def loss(a, b):
                r = exp.call(a, b)
                return (r[0] * r[0]).sum() + r[1]
            g = L.lib.jit(L.lib.grad(loss, argnums=(0, 1)),
                          in_shardings=(L.named(mesh, "x", None), L.named(mesh)))(
                _x(8, 4), _x(4, 6))
            out[writer[0] + reader[0]] = dict(vjp=_summary(exp.vjp(), mesh),
                                              grad=[np.asarray(x) for x in g],
                                              spec=[_spec(x) for x in g])
    return out


def _unspecified_out(L):
    mesh = L.mesh((4, 2), ("x", "y"))

    def f(a, b):
        return L.np.sin(a) @ b, a.sum()
    return L.lib.jit(f, in_shardings=(L.named(mesh, "x", None), None),
                     out_shardings=(L.named(mesh, "x", "y"), None)), mesh


@case
def polymorphic_both_ways():
    """A shape-polymorphic sharded function (``8*b`` rows split over the mesh), called on
    16 rows: the module is refined to static shapes before it is partitioned."""
    libs = {w: _Lib(w) for w in ("jax", "minijax")}
    blobs, meshes, out = {}, {}, {}
    for w, L in libs.items():
        meshes[w] = mesh = L.mesh((8,), ("a",))
        b, = L.export.symbolic_shape("8*b")
        fj = L.lib.jit(lambda x: L.np.sin(x) * 2, in_shardings=L.named(mesh, "a"))
        blobs[w] = bytes(L.export.export(fj)(L.lib.ShapeDtypeStruct((b, 3), np.float32))
                         .serialize())
    for writer, blob in blobs.items():
        for reader, L in libs.items():
            exp = L.export.deserialize(bytearray(blob))
            out[writer[0] + reader[0]] = dict(
                summary=_summary(exp, meshes[reader]),
                call=_call(L, exp, meshes[reader], [_x(16, 3)]))
    return out


@case
def reversed_mesh():
    """Called over a mesh of the devices in another order (jax's in_shardings_jax
    example): each device holds the rows its place in the mesh says."""
    out = {}
    for w in ("jax", "minijax"):
        L = _Lib(w)
        mesh = L.sh.Mesh(L.lib.devices(), ("a",))
        exp = L.export.deserialize(L.export.export(L.lib.jit(
            lambda x: x + x, in_shardings=L.named(mesh, "a")))(np.arange(8)).serialize())
        run = L.sh.Mesh(L.lib.devices()[::-1], ("a",))
        res = exp.call(L.lib.device_put(np.arange(8), exp.in_shardings_jax(run)[0]))
        out[w] = sorted((s.device.id, np.asarray(s.data).tolist())
                        for s in res.addressable_shards)
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_sharded_shape_dtype_structs(results):
    r = get(results, "sharded_shape_dtype_structs")
    assert r["minijax"]["fresh"] == r["jax"]["fresh"]
    assert r["minijax"]["back"] == r["jax"]["back"]
    assert r["jax"]["back"]["in_named"][1] is None  # unspecified
    _same_values(r["minijax"]["call"][0], r["jax"]["call"][0])
    assert r["minijax"]["call"][1] == r["jax"]["call"][1]


@pytest.mark.slow
def test_vjp_both_ways(results):
    r = get(results, "vjp_both_ways")
    assert r["minijax_vjp"] == r["jax_vjp"]
    assert r["jax_vjp"]["nr_devices"] == 8
    want = r["jj"]
    for pair in ("jm", "mj", "mm"):
        assert r[pair]["vjp"] == want["vjp"], pair
        _same_values(r[pair]["grad"], want["grad"])
        assert r[pair]["spec"] == want["spec"], pair


@pytest.mark.slow
def test_polymorphic_both_ways(results):
    r = get(results, "polymorphic_both_ways")
    want = r["jj"]
    assert want["summary"]["in_avals"] == [(("8*b", "3"), "float32", None)]
    for pair in ("jm", "mj", "mm"):
        assert r[pair]["summary"] == want["summary"], pair
        _same_values(r[pair]["call"][0], want["call"][0])
        assert r[pair]["call"][1] == want["call"][1], pair


@pytest.mark.slow
def test_reversed_mesh(results):
    r = get(results, "reversed_mesh")
    assert r["minijax"] == r["jax"]
    assert r["jax"][0] == (0, [14])


@pytest.mark.slow
def test_device_count_errors(results):
    r = get(results, "device_count_errors")
    assert r["minijax"]["errs"] == r["jax"]["errs"]
    assert r["jax"]["errs"][0] == ("Function f was exported for 8 devices and is called in a "
                                   "context with 1 devices, which is not allowed.")
    assert "with 4 devices" in r["jax"]["errs"][2]
    assert r["minijax"]["one_nr"] == r["jax"]["one_nr"] == 1
    assert r["minijax"]["one_in"] == r["jax"]["one_in"] == [None]
    np.testing.assert_allclose(r["minijax"]["one"], r["jax"]["one"], rtol=1e-6)


@pytest.mark.slow
def test_mesh_mismatch_error(results):
    r = get(results, "mesh_mismatch_error")
    assert r["minijax"] == r["jax"] == [True, True]



# ---- damaged sharding fields (in this process: reading needs no devices) ------------------

def _sharded_table():
    """The table of a (1-device) Exported given shardings over an abstract 4x2 mesh."""
    import dataclasses
    import minijax
    import minijax.numpy as mnp
    from minijax import export as mexport
    from minijax.export import _serialization as ser
    from minijax.sharding import AbstractMesh, AxisType, NamedSharding, PartitionSpec as P
    from minijax.runtime.sharding import AbstractDevice

    def f(a, b):
        return mnp.sin(a) @ b, a.sum()
    exp = mexport.export(minijax.jit(f))(_x(8, 4), _x(4, 6))
    mesh = AbstractMesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Auto),
                        abstract_device=AbstractDevice("cpu", None, "cpu"))
    exp = dataclasses.replace(
        exp, nr_devices=8,
        _in_named_shardings=(NamedSharding(mesh, P("x", None)), None),
        _out_named_shardings=(NamedSharding(mesh, P(("x", "y"))), NamedSharding(mesh, P())))
    return exp, ser._exported_table(exp, 0)


def test_round_trip_without_devices():
    from minijax import export as mexport
    exp, _ = _sharded_table()
    back = mexport.deserialize(exp.serialize())
    assert back.nr_devices == 8
    assert [_named_summary(s) for s in back._in_named_shardings] == [
        ((4, 2), ("x", "y"), ("Explicit", "Auto"), ("cpu", None, "cpu"), ("x", None),
         None), None]
    assert [str(h) for h in back.out_shardings_hlo] == ["{devices=[8,1]<=[8]}", "{replicated}"]
    assert back.in_shardings_hlo[1] is None
    # the explicit axis is in the argument's type, as jax's update_aval_with_sharding
    assert tuple(back.in_avals[0].sharding.spec) == ("x", None)


def _damaged(edit):
    """The bytes of ``_sharded_table()`` after ``edit(fields)`` changed its fields."""
    from minijax.export._flatbuf import build
    _, t = _sharded_table()
    edit(t.fields)
    return bytes(build(t))


def _mesh(f):
    return f[20].items[0].fields


def _named(f, i=0):
    return f[21].items[i].fields


def _set(d, k, v):
    d[k] = v


BAD_FIELDS = {
    "axis type 0 (Missing)": lambda f: _set(_mesh(f), 2, _scalars("b", [0, 1])),
    "axis type 9": lambda f: _set(_mesh(f), 2, _scalars("b", [1, 9])),
    "fewer axis types": lambda f: _set(_mesh(f), 2, _scalars("b", [1])),
    "axis size 0": lambda f: _set(_mesh(f), 0, _scalars("I", [4, 0])),
    "huge mesh": lambda f: _set(_mesh(f), 0, _scalars("I", [2 ** 31, 2 ** 31])),
    "more sizes than names": lambda f: _set(_mesh(f), 0, _scalars("I", [4, 2, 1])),
    "repeated axis name": lambda f: _set(_mesh(f), 1, _vector(["x", "x"])),
    "empty axis name": lambda f: _set(_mesh(f), 1, _vector(["x", ""])),
    "device without kind": lambda f: _mesh(f)[3].fields.pop(0),
    "unknown device kind": lambda f: (_mesh(f)[3].fields.pop(2),
                                      _set(_mesh(f)[3].fields, 0, "abacus")),
    "mesh index out of range": lambda f: _set(_named(f), 3, ("u32", 5)),
    "spec names an unknown axis": lambda f: _set(
        _named(f)[1].fields, 0, _vector([_table({0: _vector(["z"])})])),
    "spec uses an axis twice": lambda f: _set(
        _named(f)[1].fields, 0, _vector([_table({0: _vector(["x"])}),
                                         _table({0: _vector(["x"])})])),
    "spec longer than the array": lambda f: _set(
        _named(f)[1].fields, 0, _vector([_table({})] * 3)),
    "no spec": lambda f: _named(f).pop(1),
    "sharding index out of range": lambda f: _set(f, 24, _scalars("I", [7, 0])),
    "sharding indices for other arguments": lambda f: _set(f, 24, _scalars("I", [1])),
    "bad memory kind": lambda f: _set(_named(f), 2, "dev\x00ice"),
    "no mesh table nor mesh": lambda f: (f.pop(20), _named(f).pop(0)),
    "old shardings, fewer": lambda f: (f.pop(24), _set(f, 7, _vector([_table({})]))),
}


def _scalars(fmt, values):
    from minijax.export._flatbuf import Scalars
    return Scalars(fmt, values)


def _vector(items):
    from minijax.export._flatbuf import Vector
    return Vector(items)


def _table(fields):
    from minijax.export._flatbuf import Table
    return Table(fields)


@pytest.mark.parametrize("what", list(BAD_FIELDS))
def test_damaged_sharding_fields_are_value_errors(what):
    from minijax import export as mexport
    blob = _damaged(BAD_FIELDS[what])
    with pytest.raises(ValueError):
        mexport.deserialize(blob)


def test_unsupported_sharding_fields_are_not_implemented():
    from minijax import export as mexport
    red = _damaged(lambda f: _set(_named(f)[1].fields, 1, _vector(["y"])))
    with pytest.raises(NotImplementedError, match="reduced"):
        mexport.deserialize(red)


def test_old_buffers_spell_shardings_out():
    """Before table 24/25 (jax before 4/2026) each argument's sharding is spelled out in
    table 7/8, its mesh in the sharding itself."""
    from minijax import export as mexport
    blob = _damaged(lambda f: [f.pop(k) for k in (20, 21, 24, 25)])
    back = mexport.deserialize(blob)
    assert [None if h is None else str(h) for h in back.in_shardings_hlo] == [
        "{devices=[4,1,2]<=[8] last_tile_dim_replicate}", None]
    assert tuple(back._out_named_shardings[0].spec) == (("x", "y"),)


FUZZ = r"""
import collections, numpy as np
import tests.export.test_export_sharded as t
from minijax import export as mexport
exp, _ = t._sharded_table()
blob = bytes(exp.serialize())
start = blob.index(b"ML\xefR") + len(exp.mlir_module_serialized)  # after the module
proto = t._proto("{devices=[2,4]<=[4,2]T(1,0)}")
old = t._old_blob([proto, None], [t._proto("{devices=[8,1]<=[8]}"), None])
old_start = old.index(proto) - 64  # the HloSharding protos, written before the module
rng = np.random.default_rng(0)
seen = collections.Counter()
for i in range(N):
    src, lo, hi = (blob, start, len(blob)) if i % 2 else (old, old_start, old_start + 200)
    b = bytearray(src)
    for _ in range(rng.integers(1, 4)):
        b[rng.integers(lo, min(hi, len(b)))] = rng.integers(0, 256)
    try:
        mexport.deserialize(bytes(b))
        seen["ok"] += 1
    except (ValueError, TypeError, NotImplementedError) as e:
        seen[type(e).__name__] += 1
print(dict(seen))
"""


@pytest.mark.slow
def test_fuzz_sharding_fields_in_subprocess():
    import os
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-c", "N = 300\n" + FUZZ], cwd=repo,
                       capture_output=True, text=True, errors="replace", timeout=240,
                       env={**os.environ, "PYTHONPATH": repo})
    assert r.returncode >= 0, f"killed by signal {-r.returncode}:\n{r.stderr[-3000:]}"
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    seen = eval(r.stdout.strip().splitlines()[-1])  # a dict of counts
    assert sum(seen.values()) == 300
    assert seen.get("ValueError", 0) > 30


# ---- HloSharding protos: jax's exports before 1/15/2026 (table 7/8, no named shardings) ---

# shardings of the first (2-d) argument
HLO_TEXTS = ["{replicated}", "{devices=[4,1,2]<=[8] last_tile_dim_replicate}",
             "{devices=[2,4]<=[4,2]T(1,0)}", "{devices=[2,2,2]0,2,1,3,4,6,5,7 "
             "last_tile_dim_replicate}", "{maximal device=3}", "{devices=[8,1]<=[8]}",
             "{devices=[4,2]0,1,2,3,4,5,6,7}"]


def _proto(text):
    from jax._src.lib import xla_client
    return bytes(xla_client.HloSharding.from_string(text).to_proto().SerializeToString())


def _old_blob(in_protos, out_protos=(None, None)):
    def edit(f):
        for k in (20, 21, 24, 25):
            f.pop(k)
        f[7] = _vector([_table({}) if p is None else _table({1: p}) for p in in_protos])
        f[8] = _vector([_table({}) if p is None else _table({1: p}) for p in out_protos])
    return _damaged(edit)


@pytest.mark.parametrize("text", HLO_TEXTS)
def test_hlo_sharding_protos_like_jax(text):
    import jax
    from jax import export as jexport
    from minijax import export as mexport
    from minijax.sharding import AbstractMesh
    blob = _old_blob([_proto(text), None], [_proto("{replicated}"), None])
    je = jexport.deserialize(bytearray(blob))
    me = mexport.deserialize(blob)
    assert me._has_named_shardings == je._has_named_shardings is False
    for a, b in ((me.in_shardings_hlo, je.in_shardings_hlo),
                 (me.out_shardings_hlo, je.out_shardings_hlo)):
        assert [None if h is None else str(h) for h in a] == \
            [None if h is None else str(h) for h in b]
    assert list(me._in_named_shardings) == [None, None]
    jm = jax.sharding.AbstractMesh((4, 2), ("x", "y"))
    mm = AbstractMesh((4, 2), ("x", "y"))
    try:
        want = [None if s is None else (tuple(s.spec), s.memory_kind)
                for s in je.in_shardings_jax(jm)]
    except Exception:  # noqa: BLE001 - no PartitionSpec over the mesh (maximal)
        with pytest.raises(ValueError):
            me.in_shardings_jax(mm)
        return
    got = [None if s is None else (tuple(s.spec), s.memory_kind)
           for s in me.in_shardings_jax(mm)]
    assert [None if g is None else (_strip(g[0]), g[1]) for g in got] == \
        [None if w is None else (_strip(w[0]), w[1]) for w in want]
    # an Exported without named shardings is not serialized again, as in jax
    for e in (me, je):
        with pytest.raises(ValueError, match="must have named shardings"):
            e.serialize()


def _strip(spec):
    parts = list(spec)
    while parts and parts[-1] is None:
        parts.pop()
    return tuple(parts)


BAD_PROTOS = {
    "truncated varint": b"\x08\x83",
    "field past the end": b"\x08\x03\x1a\x09\x04",
    "type 9": b"\x08\x09",
    "rank 3 for a 2-d array": _proto("{devices=[2,2,2]<=[8]}"),
    "devices do not fill the tiles": b"\x08\x03\x1a\x02\x02\x02\x22\x03\x00\x01\x02",
    "a device twice": b"\x08\x03\x1a\x02\x02\x01\x22\x02\x01\x01",
    "iota of another size": b"\x08\x03\x1a\x02\x02\x02\x4a\x01\x08\x52\x01\x00",
    "bad transpose": b"\x08\x03\x1a\x02\x04\x02\x4a\x02\x04\x02\x52\x02\x00\x00",
    "zero tile dim": b"\x08\x03\x1a\x02\x00\x02\x4a\x01\x00\x52\x01\x00",
    "maximal without a device": b"\x08\x01",
    "replicated with tiles": b"\x08\x00\x1a\x02\x02\x01",
    "wire type 7": b"\x0f",
    "huge tile assignment": b"\x08\x03\x1a\x06\x80\x80\x80\x80\x80\x01\x01",
}


@pytest.mark.parametrize("what", list(BAD_PROTOS))
def test_bad_hlo_sharding_protos_are_value_errors(what):
    from minijax import export as mexport
    with pytest.raises(ValueError):
        mexport.deserialize(_old_blob([BAD_PROTOS[what], None]))


def test_tuple_hlo_sharding_proto_is_not_implemented():
    from minijax import export as mexport
    with pytest.raises(NotImplementedError, match="tuple"):
        mexport.deserialize(_old_blob([b"\x08\x02", None]))
