"""``Exported`` to bytes and back in jax's format (``jax/_src/export/serialization.fbs``,
serialization version 11 read, written as jax writes it), with minijax's own flatbuffer
code (``_flatbuf.py``).

Shardings are written as jax 0.10.2 writes them: the distinct abstract meshes (table
20: axis sizes, names, types, abstract device) and named shardings (table 21: mesh
index, PartitionSpec, memory kind), each argument's and result's as an index (tables
24/25, 0 unspecified) and, for older readers, spelled out (tables 7/8). Reading also
takes the older forms: shardings in tables 7/8 only, and jax's HloSharding protos of
before 1/15/2026 (``_opsharding.py``), which make an Exported without named shardings.

Reading checks everything: a buffer that is not an Exported (truncated, flipped bits,
another file) is a ``ValueError`` and nothing runs. Pytree node types other than tuple,
list, dict and None are looked up by the name they were registered under with
``register_pytree_node_serialization`` (the registry ``minijax.stages`` serialization
shares); no code is ever taken from the bytes.
"""

from __future__ import annotations

import json
import struct

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.shape_poly import SymbolicScope, symbolic_shape
from minijax.export import _export
from minijax.export._flatbuf import FlatbufferError, Scalars, Table, Vector, build, root
from minijax.runtime.pytree import PyTreeDef
from minijax.runtime.pytree import transform_registry as registry
from minijax.stages import serialization as _stages_ser

__all__ = ["deserialize", "serialize"]

# enum values of the schema
_LEAF, _NONE, _TUPLE, _LIST, _DICT, _CUSTOM = range(6)
_DTYPE_CODES = {
    "bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5, "uint16": 6,
    "uint32": 7, "uint64": 8, "float16": 9, "float32": 10, "float64": 11, "complex64": 12,
    "complex128": 13, "bfloat16": 14, "int4": 15, "uint4": 16, "float8_e4m3b11fnuz": 17,
    "float8_e4m3fn": 18, "float8_e4m3fnuz": 19, "float8_e5m2": 20, "float8_e5m2fnuz": 21,
    "float0": 22, "float8_e4m3": 23, "float8_e3m4": 24, "float8_e8m0fnu": 25,
    "float4_e2m1fn": 26}
_MEM_DEVICE = 1
_AXIS_TYPE_CODES = {"Auto": 1, "Explicit": 2, "Manual": 3}
_KEY_FRY = 27
_DC_PLATFORM, _DC_CUSTOM_CALL, _DC_SHAPE_ASSERTIONS = 0, 1, 2


def _dtype_by_name(name: str):
    if name == "float0":
        return dtypes.float0
    try:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) \
            else np.dtype(name)
    except TypeError:
        return None


_CODE_TO_DTYPE = {}
for _name, _code in _DTYPE_CODES.items():
    _dt = _dtype_by_name(_name)
    if _dt is not None:
        _CODE_TO_DTYPE[_code] = _dt
_DTYPE_TO_CODE = {dt: c for c, dt in _CODE_TO_DTYPE.items()}


# ---- writing -------------------------------------------------------------------------------

def serialize(exp: _export.Exported, vjp_order: int = 0) -> bytearray:
    return build(_exported_table(exp, vjp_order))


def _exported_table(exp: _export.Exported, vjp_order: int) -> Table:
    # typed PRNG keys: minijax's tree has a key node over a uint32 leaf; jax's has a leaf
    # whose aval is the key array (dtype key<fry>, the key shape)
    in_keys, out_keys = _key_leaves(exp.in_tree), _key_leaves(exp.out_tree)
    flagged = [(a, i in in_keys) for i, a in enumerate(exp.in_avals)] + \
        [(a, i in out_keys) for i, a in enumerate(exp.out_avals)]
    uniques: list = []
    index: dict = {}
    for a, key in flagged:
        k = _aval_key(a, key)
        if k not in index:
            index[k] = len(uniques)
            uniques.append((a, key))
    n_in = len(exp.in_avals)
    if not exp._has_named_shardings:
        raise ValueError("Exported being serialized must have named shardings after "
                         "3/17/2026.")
    shardings = _Shardings(exp)
    f: dict = {
        0: ("u16", 3),  # as jax: older readers accept only version 2 or 3 here
        1: exp.fun_name,
        2: _tree_table(exp.in_tree),
        3: Vector([_aval_table(a, k) for a, k in flagged[:n_in]]),
        4: _tree_table(exp.out_tree),
        5: Vector([_aval_table(a, k) for a, k in flagged[n_in:]]),
        7: Vector([shardings.sharding_table(x) for x in exp._in_named_shardings]),
        8: Vector([shardings.sharding_table(x) for x in exp._out_named_shardings]),
        9: Vector(list(exp.platforms)),
        10: Vector([_effect_table(e) for e in exp.ordered_effects]),
        11: Vector([_effect_table(e) for e in exp.unordered_effects]),
        12: Vector([_check_table(c) for c in exp.disabled_safety_checks]),
        13: bytes(exp.mlir_module_serialized),
        14: ("u16", exp.calling_convention_version),
        15: Scalars("H", exp.module_kept_var_idx),
        18: ("u32", exp.nr_devices),
        19: Vector([_aval_table(a, k) for a, k in uniques]),
        20: Vector([_mesh_table(m) for m in shardings.meshes]),
        21: Vector([shardings.named_table(x) for x in shardings.named]),
        22: Scalars("I", [index[_aval_key(a, k)] for a, k in flagged[:n_in]]),
        23: Scalars("I", [index[_aval_key(a, k)] for a, k in flagged[n_in:]]),
        24: Scalars("I", [shardings.index(x) for x in exp._in_named_shardings]),
        25: Scalars("I", [shardings.index(x) for x in exp._out_named_shardings]),
    }
    if exp.uses_global_constants:
        f[16] = ("bool", 1)
    if vjp_order > 0:
        if not exp.has_vjp():
            raise ValueError("serialization of an Exported that does not have vjps of "
                             "high-enough order")
        if in_keys or out_keys:
            raise NotImplementedError(
                "serializing the vjp of an Exported whose arguments or results are typed "
                "PRNG keys is not implemented in minijax (export with vjp_order=0, or pass "
                "random.key_data(key))")
        f[17] = _exported_table(exp.vjp(), vjp_order - 1)
    return Table(f)


class _Shardings:
    """The distinct abstract meshes and named shardings of an Exported, in order of first
    use (jax's tables 20 and 21; a sharding's index in table 24/25 is one more than its
    position, 0 being unspecified)."""

    def __init__(self, exp: _export.Exported):
        self.meshes: list = []
        self.named: list = []
        self._mesh_pos: dict = {}
        self._pos: dict = {}
        for x in (*exp._in_named_shardings, *exp._out_named_shardings):
            if x is None:
                continue
            m = x.mesh
            if _mesh_id(m) not in self._mesh_pos:
                self._mesh_pos[_mesh_id(m)] = len(self.meshes)
                self.meshes.append(m)
            if _named_id(x) not in self._pos:
                self._pos[_named_id(x)] = len(self.named)
                self.named.append(x)

    def index(self, x) -> int:
        return 0 if x is None else 1 + self._pos[_named_id(x)]

    def named_table(self, x) -> Table:
        # as jax: the whole mesh again (for readers older than table 20) and its index
        f = {0: _mesh_table(x.mesh), 1: _spec_table(x.spec)}
        if x.memory_kind is not None:
            f[2] = x.memory_kind
        i = self._mesh_pos[_mesh_id(x.mesh)]
        if i:
            f[3] = ("u32", i)
        return Table(f)

    def sharding_table(self, x) -> Table:
        return Table({}) if x is None else Table({2: self.named_table(x)})


def _mesh_id(m) -> tuple:
    # jax's abstract meshes differ when their devices' kinds do
    d = getattr(m, "abstract_device", None)
    return (tuple(m.axis_sizes), tuple(m.axis_names), tuple(m.axis_types),
            None if d is None else (d.device_kind, d.num_cores, d.platform))


def _named_id(x) -> tuple:
    # as jax's NamedSharding equality: the spec as written (P('x') is not P('x', None))
    return (_mesh_id(x.mesh), tuple(x.spec), x.memory_kind)


def _mesh_table(m) -> Table:
    from minijax.runtime.sharding import AbstractMesh
    if not isinstance(m, AbstractMesh):
        m = m.abstract_mesh
    f = {0: Scalars("I", list(m.axis_sizes)), 1: Vector(list(m.axis_names)),
         2: Scalars("b", [_AXIS_TYPE_CODES[t.name] for t in m.axis_types])}
    d = getattr(m, "abstract_device", None)
    if d is not None:
        df = {0: d.device_kind, 2: d.platform}
        if d.num_cores is not None:
            df[1] = ("u32", d.num_cores)
        f[3] = Table(df)
    return Table(f)


def _spec_table(spec) -> Table:
    from minijax.runtime.sharding import UNCONSTRAINED
    parts = []
    for p in spec:
        if p is UNCONSTRAINED:
            raise NotImplementedError("serializing a PartitionSpec with UNCONSTRAINED")
        axes = () if p is None else (p,) if isinstance(p, str) else tuple(p)
        parts.append(Table({0: Vector(list(axes))}))
    return Table({0: Vector(parts), 1: Vector([]), 2: Vector([])})


def _aval_key(a, key: bool) -> tuple:
    return (tuple(a.shape), np.dtype(a.dtype), key)


def _aval_table(a, key: bool) -> Table:
    if key:  # a threefry key array: its uint32 data has one more axis, of 2
        shape, code = a.shape[:-1], _KEY_FRY
    else:
        shape, code = a.shape, _DTYPE_TO_CODE.get(np.dtype(a.dtype))
    if code is None:
        raise NotImplementedError(f"serializing an array of dtype {a.dtype}")
    return Table({0: ("i8", 0), 1: Vector([str(d) for d in shape]), 2: ("i8", code),
                  3: ("i8", _MEM_DEVICE)})


def _key_types():
    from minijax.random._keys import THREEFRY, PRNGKeyArray
    return PRNGKeyArray, THREEFRY


def _key_leaves(t: PyTreeDef) -> set:
    """The flat indices of the leaves of ``t`` that are the data of threefry key arrays."""
    key_type, threefry = _key_types()
    out: set = set()

    def walk(t, start: int) -> int:
        nd = t.node_data()
        if nd is None:
            return start + 1
        if nd[0] is key_type:
            kids = t.children()
            if nd[1] is not threefry or len(kids) != 1 or kids[0].node_data() is not None:
                raise NotImplementedError(f"serializing PRNG keys of implementation {nd[1]}")
            out.add(start)
            return start + 1
        for c in t.children():
            start = walk(c, start)
        return start
    walk(t, 0)
    return out


def _effect_table(e) -> Table:
    return Table({0: str(getattr(e, "name", e))})


def _check_table(c: _export.DisabledSafetyCheck) -> Table:
    target = c.is_custom_call()
    if target is not None:
        return Table({0: ("i8", _DC_CUSTOM_CALL), 1: target})
    if c == _export.DisabledSafetyCheck.platform():
        return Table({0: ("i8", _DC_PLATFORM)})
    if c == _export.DisabledSafetyCheck.shape_assertions():
        return Table({0: ("i8", _DC_SHAPE_ASSERTIONS)})
    raise NotImplementedError(f"serializing DisabledSafetyCheck: {c}")


def _tree_table(t: PyTreeDef) -> Table:
    nd = t.node_data()
    kids = t.children()
    f: dict = {}
    if nd is None:
        f[0] = ("i8", _LEAF)
    else:
        ty, aux = nd
        if ty is _key_types()[0]:  # jax's key arrays are leaves
            return Table({0: ("i8", _LEAF)})
        if ty is type(None):
            f[0] = ("i8", _NONE)
        elif ty is tuple:
            f[0] = ("i8", _TUPLE)
        elif ty is list:
            f[0] = ("i8", _LIST)
        elif ty is dict:
            f[0] = ("i8", _DICT)
            for k in aux:
                if not isinstance(k, str):
                    raise TypeError("Serialization is supported only for dictionaries with "
                                    f"string keys. Found key {k} of type {type(k)}.")
            f[2] = Vector(list(aux))
        else:
            name, data = _custom_aux(ty, aux)
            f[0] = ("i8", _CUSTOM)
            f[3] = name
            f[4] = data
    if kids:
        f[1] = Vector([_tree_table(c) for c in kids])
    return Table(f)


def _custom_aux(ty, aux) -> tuple[str, bytes]:
    import collections
    reg = _stages_ser._by_type.get(ty)
    if reg is None:
        if ty is collections.OrderedDict:
            if not all(isinstance(k, str) for k in aux):
                raise NotImplementedError(
                    "Serialization of collections.OrderedDict is supported only when the "
                    f"keys are strings. Found keys: {aux}.")
            return "collections.OrderedDict", json.dumps(list(aux)).encode("utf-8")
        raise ValueError(
            f"Cannot serialize PyTreeDef containing an unregistered type `{ty}`. Use "
            "`export.register_pytree_node_serialization` or "
            "`export.register_namedtuple_serialization`.")
    if reg.kind == "namedtuple":
        data = json.dumps(list(ty._fields)).encode("utf-8")
    elif reg.kind == "json":
        data = json.dumps(aux).encode("utf-8")
    else:
        data = reg.to_bytes(aux)
        if not isinstance(data, (bytes, bytearray)):
            raise ValueError("The custom serialization function for `node_type` must return "
                             f"a `bytes` object. It returned a {type(data)}.")
    return reg.name, bytes(data)


# ---- reading -------------------------------------------------------------------------------

def deserialize(blob) -> _export.Exported:
    """The ``Exported`` of bytes made by ``Exported.serialize`` (minijax's or jax's)."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"deserialize expects bytes, got {type(blob).__name__}")
    buf = bytes(blob)
    try:
        exp = _read_exported(root(buf), depth=0)
    except (FlatbufferError, struct.error, RecursionError, IndexError, KeyError,
            OverflowError, UnicodeDecodeError) as e:
        raise ValueError(f"not a serialized jax Exported: {e}") from None
    return exp


def _bad(msg: str):
    raise FlatbufferError(msg)


def _read_exported(r, depth: int) -> _export.Exported:
    if depth > 16:
        _bad("vjp nesting too deep")
    version = r.scalar(0, "<H")
    if version < 1 or version > 11:
        _bad(f"unknown serialization version {version}")
    fun_name = r.string(1)
    if fun_name is None:
        _bad("no function name")
    scope = SymbolicScope(())  # jax does not serialize constraints
    uniq = [_read_aval(a, scope) for a in r.tables(19)]  # (aval, is a key)
    meshes = [_read_mesh(m) for m in r.tables(20)]
    named = [_read_named(n, meshes) for n in r.tables(21)]
    in_idx, out_idx = r.scalars(22, "I"), r.scalars(23, "I")
    if in_idx or out_idx:
        if any(i >= len(uniq) for i in (*in_idx, *out_idx)):
            _bad("an aval index is out of range")
        in_avals = tuple(uniq[i] for i in in_idx)
        out_avals = tuple(uniq[i] for i in out_idx)
    else:
        in_avals = tuple(_read_aval(a, scope) for a in r.tables(3))
        out_avals = tuple(_read_aval(a, scope) for a in r.tables(5))
    in_keys = {i for i, (_, k) in enumerate(in_avals) if k}
    out_keys = {i for i, (_, k) in enumerate(out_avals) if k}
    in_avals = tuple(a for a, _ in in_avals)
    out_avals = tuple(a for a, _ in out_avals)
    in_named = _read_shardings(r, 24, 7, in_avals, named, meshes)
    out_named = _read_shardings(r, 25, 8, out_avals, named, meshes)
    if any(isinstance(x, _OldHlo) for x in (*in_named, *out_named)):
        # written by jax before 1/15/2026: HloShardings and no named shardings
        has_named = False
        in_hlo = tuple(_old_hlo(x) for x in in_named)
        out_hlo = tuple(_old_hlo(x) for x in out_named)
        in_named, out_named = (None,) * len(in_avals), (None,) * len(out_avals)
    else:
        has_named = True
        in_avals = tuple(_with_sharding(a, x) for a, x in zip(in_avals, in_named))
        out_avals = tuple(_with_sharding(a, x) for a, x in zip(out_avals, out_named))
        in_hlo = tuple(_hlo_of(x, a) for x, a in zip(in_named, in_avals))
        out_hlo = tuple(_hlo_of(x, a) for x, a in zip(out_named, out_avals))
    # A table reached twice (offsets may share it) is read twice: the budget keeps a
    # crafted buffer from growing a tree exponentially. jax writes every node apart, in
    # at least 8 bytes (its table and the offset to it).
    budget = [len(r.buf) // 8]
    in_tree = _read_tree(r.table(2), 0, budget, in_keys, [0])
    out_tree = _read_tree(r.table(4), 0, budget, out_keys, [0])
    if in_tree.num_leaves != len(in_avals) or out_tree.num_leaves != len(out_avals):
        _bad("the pytree structures do not match the avals")
    platforms = tuple(r.strings(9))
    ordered = tuple(_read_effect(e) for e in r.tables(10))
    unordered = tuple(_read_effect(e) for e in r.tables(11))
    checks = tuple(_read_check(c) for c in r.tables(12))
    module = r.bytes(13)
    if not module:
        _bad("no module")
    ccv = r.scalar(14, "<H")
    if not (_export.minimum_supported_calling_convention_version <= ccv
            <= _export.maximum_supported_calling_convention_version):
        raise ValueError(f"calling convention version {ccv} is not supported (minijax "
                         f"supports {_export.minimum_supported_calling_convention_version}"
                         f"..{_export.maximum_supported_calling_convention_version})")
    kept = r.scalars(15, "H")
    if any(k >= len(in_avals) for k in kept) or list(kept) != sorted(set(kept)):
        _bad("module_kept_var_idx is not a sorted list of argument indices")
    uses_global = bool(r.scalar(16, "<B"))
    nr_devices = r.scalar(18, "<I") or r.scalar(6, "<h")
    if nr_devices < 1:
        _bad(f"nr_devices is {nr_devices}")
    vjp_r = r.table(17)
    get_vjp = None
    if vjp_r is not None:
        vjp = _read_exported(vjp_r, depth + 1)
        get_vjp = lambda _: vjp  # noqa: E731
    return _export.Exported(
        fun_name=fun_name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
        out_avals=out_avals, _has_named_shardings=has_named,
        _in_named_shardings=in_named, _out_named_shardings=out_named,
        in_shardings_hlo=in_hlo, out_shardings_hlo=out_hlo, nr_devices=nr_devices,
        platforms=platforms, ordered_effects=ordered,
        unordered_effects=unordered, disabled_safety_checks=checks,
        mlir_module_serialized=module, calling_convention_version=ccv,
        module_kept_var_idx=tuple(kept), uses_global_constants=uses_global,
        _get_vjp=get_vjp)


_MAX_MESH_AXES = 64
_MAX_MESH_SIZE = 1 << 20


def _name(x: str, what: str) -> str:
    if not x or len(x) > 256 or not x.isprintable():
        _bad(f"bad {what} {x[:50]!r}")
    return x


def _read_mesh(r):
    """An ``AbstractMesh`` (table AbstractMesh), every field checked."""
    from minijax.runtime.sharding import AbstractMesh, AxisType
    n = r.length(1)
    if n > _MAX_MESH_AXES:
        _bad(f"a mesh with {n} axes")
    sizes = r.scalars(0, "I")
    names = tuple(_name(a, "mesh axis name") for a in r.strings(1))
    codes = r.scalars(2, "b")
    if not (len(sizes) == len(names) == len(codes)):
        _bad(f"a mesh with {len(sizes)} axis sizes, {len(names)} names and {len(codes)} "
             "axis types")
    if len(set(names)) != len(names):
        _bad(f"a mesh repeats an axis name: {names}")
    total = 1
    for z in sizes:
        if z < 1:
            _bad(f"a mesh axis of size {z}")
        total *= z
        if total > _MAX_MESH_SIZE:
            _bad(f"a mesh of more than {_MAX_MESH_SIZE} devices")
    by_code = {v: k for k, v in _AXIS_TYPE_CODES.items()}
    if any(c not in by_code for c in codes):
        _bad(f"unknown mesh axis type in {list(codes)}")
    types = tuple(getattr(AxisType, by_code[c]) for c in codes)
    return AbstractMesh(sizes, names, axis_types=types, abstract_device=_read_device(r.table(3)))


def _read_device(r):
    from minijax.runtime.sharding import AbstractDevice
    if r is None:
        return None
    kind = r.string(0)
    if kind is None:
        _bad("an abstract device without a device kind")
    _name(kind, "device kind")
    cores = r.scalar(1, "<I", None)
    platform = r.string(2)
    if platform:
        _name(platform, "platform")
    else:  # written before jax recorded the platform: from the device kind, as jax
        low = kind.lower()
        if "cpu" in low:
            platform = "cpu"
        elif "tpu" in low:
            platform = "tpu"
        elif any(x in low for x in ("nvidia", "tesla", "amd")):
            platform = "gpu"
        else:
            _bad(f"Got unexpected device_kind={kind!r}")
    return AbstractDevice(kind, cores, platform)


def _read_named(r, meshes: list):
    """A ``NamedSharding`` over an abstract mesh (table NamedSharding): its mesh is
    ``meshes[abstract_mesh_idx]`` when the Exported has a mesh table, else its own."""
    from minijax.runtime.sharding import DuplicateSpecError, NamedSharding, PartitionSpec
    if meshes:
        i = r.scalar(3, "<I")
        if i >= len(meshes):
            _bad(f"a sharding names mesh {i} of {len(meshes)}")
        mesh = meshes[i]
    else:
        m = r.table(0)
        if m is None:
            _bad("a sharding without a mesh")
        mesh = _read_mesh(m)
    spec_r = r.table(1)
    if spec_r is None:
        _bad("a sharding without a PartitionSpec")
    if spec_r.length(0) > 1024:
        _bad("a PartitionSpec of more than 1024 dimensions")
    parts = []
    for one in spec_r.tables(0):
        axes = tuple(_name(a, "axis name") for a in one.strings(0))
        parts.append(None if not axes else axes[0] if len(axes) == 1 else axes)
    if spec_r.length(1) or spec_r.length(2):
        raise NotImplementedError("deserializing a PartitionSpec with reduced or unreduced "
                                  "axes is not implemented in minijax")
    kind = r.string(2)
    if kind is not None:
        _name(kind, "memory kind")
    try:
        return NamedSharding(mesh, PartitionSpec(*parts), memory_kind=kind)
    except (DuplicateSpecError, TypeError) as e:
        _bad(f"a bad sharding: {e}")


def _read_shardings(r, idx_slot: int, old_slot: int, avals: tuple, named: list,
                    meshes: list) -> tuple:
    """One sharding (None: unspecified) per aval: by index into ``named`` (table 24/25,
    0 unspecified) or, in older buffers, spelled out (table 7/8)."""
    idxs = r.scalars(idx_slot, "I")
    if idxs:
        if len(idxs) != len(avals):
            _bad("the shardings do not match the arguments")
        if any(i > len(named) for i in idxs):
            _bad("a sharding index is out of range")
        out = tuple(None if i == 0 else named[i - 1] for i in idxs)
    else:
        old = r.tables(old_slot)
        if old and len(old) != len(avals):
            _bad("the shardings do not match the arguments")
        out = tuple(_read_old_sharding(s, meshes, len(a.shape))
                    for s, a in zip(old, avals)) or (None,) * len(avals)
    for x, a in zip(out, avals):
        if x is not None and not isinstance(x, _OldHlo) and len(x.spec) > len(a.shape):
            _bad(f"the sharding {x.spec} has more entries than the {len(a.shape)} "
                 "dimensions of its array")
    return out


class _OldHlo:
    """An argument's sharding as an XLA HloSharding (jax's exports before 1/15/2026)."""

    __slots__ = ("hlo",)

    def __init__(self, hlo):
        self.hlo = hlo


def _old_hlo(x):
    if x is None:
        return None
    if not isinstance(x, _OldHlo):
        _bad("an Exported mixes named shardings and HloSharding protos")
    return x.hlo


def _read_old_sharding(r, meshes: list, ndim: int):
    ns = r.table(2)
    if ns is not None:
        return _read_named(ns, meshes)
    proto = r.bytes(1)
    if proto is not None:
        from minijax.export._opsharding import op_sharding_text
        from minijax.runtime.sharding import hlo_sharding_from_text
        if len(proto) > 1 << 20:
            _bad("an HloSharding proto of more than 1 MiB")
        return _OldHlo(hlo_sharding_from_text(op_sharding_text(proto, ndim)))
    return None


def _with_sharding(a: ShapedArray, x) -> ShapedArray:
    """The aval carries the sharding of its explicit mesh axes, as jax's
    ``update_aval_with_sharding``."""
    if x is None:
        return a
    from minijax.runtime.sharding import aval_sharding
    s = aval_sharding(x, len(a.shape))
    return a if s is None else ShapedArray(a.shape, a.dtype, a.weak_type, sharding=s)


def _hlo_of(x, a):
    return None if x is None else x._to_xla_hlo_sharding(len(a.shape))


def _read_aval(r, scope) -> tuple[ShapedArray, bool]:
    kind = r.scalar(0, "<b")
    if kind == 1:
        raise NotImplementedError("deserializing an abstract token is not implemented")
    if kind != 0:
        _bad(f"unknown abstract value kind {kind}")
    code = r.scalar(2, "<b")
    dt = _CODE_TO_DTYPE.get(code)
    key = code == _KEY_FRY
    if key:
        dt = np.dtype(np.uint32)
    elif dt is None:
        if code in (28, 29):
            raise NotImplementedError("deserializing rbg PRNG key arrays is not implemented "
                                      "(minijax has threefry keys only)")
        _bad(f"unknown dtype code {code}")
    mem = r.scalar(3, "<b")
    if mem in (2, 3):
        raise NotImplementedError("deserializing arrays in host (or any) memory is not "
                                  "implemented")
    if mem not in (0, 1):
        _bad(f"unknown memory space {mem}")
    shape = []
    for d in r.strings(1):
        if not d.strip() or not d.isprintable():
            _bad(f"bad dimension {d!r}")
        try:
            v = int(d)
        except ValueError:  # a symbolic dimension, in the one scope of this Exported
            if len(d) > 1000:
                _bad(f"bad dimension {d[:50]!r}...")
            try:
                v, = symbolic_shape(d, scope=scope)
            except ValueError as e:
                _bad(f"bad dimension {d!r} ({e})")
        else:
            if v < 0 or v > 2 ** 62:
                _bad(f"bad dimension {d!r}")
        shape.append(v)
    if key:
        shape.append(2)
    return ShapedArray(tuple(shape), dt), key


def _read_tree(r, depth: int, budget: list, keys: set, leaf: list) -> PyTreeDef:
    """The tree of table ``r``; the leaves whose flat index (counted in ``leaf``) is in
    ``keys`` become key arrays over a uint32 leaf."""
    if r is None:
        _bad("a pytree is missing")
    if depth > 200:
        _bad("pytree too deep")
    budget[0] -= r.length(1)  # before reading the children
    if budget[0] < 0:
        _bad("the pytrees have more nodes than the buffer can hold")
    kind = r.scalar(0, "<b")
    kids = [_read_tree(c, depth + 1, budget, keys, leaf) for c in r.tables(1)]
    if kind == _LEAF:
        if kids:
            _bad("a leaf with children")
        leaf[0] += 1
        if leaf[0] - 1 in keys:
            key_type, threefry = _key_types()
            return PyTreeDef.from_node_data_and_children(
                registry, (key_type, threefry), [registry.flatten(0)[1]])
        return registry.flatten(0)[1]
    if kind == _NONE:
        if kids:
            _bad("None with children")
        return registry.flatten(None)[1]
    if kind == _TUPLE:
        return PyTreeDef.from_node_data_and_children(registry, (tuple, None), kids)
    if kind == _LIST:
        return PyTreeDef.from_node_data_and_children(registry, (list, None), kids)
    if kind == _DICT:
        keys = r.strings(2)
        if len(keys) != len(kids) or len(set(keys)) != len(keys):
            _bad("dict keys do not match its children")
        if keys != sorted(keys):
            order = sorted(range(len(keys)), key=keys.__getitem__)
            keys = [keys[i] for i in order]
            kids = [kids[i] for i in order]
        return PyTreeDef.from_node_data_and_children(registry, (dict, keys), kids)
    if kind == _CUSTOM:
        return _read_custom(r.string(3), r.bytes(4) or b"", kids)
    _bad(f"Cannot deserialize PyTreeDef with unknown kind: {kind}")


def _read_custom(name: str | None, data: bytes, kids) -> PyTreeDef:
    import collections
    reg = _stages_ser._by_name.get(name)
    if reg is None:
        if name == "collections.OrderedDict":
            keys = _json(data)
            if not isinstance(keys, list) or len(keys) != len(kids):
                _bad("bad OrderedDict keys")
            return PyTreeDef.from_node_data_and_children(
                registry, (collections.OrderedDict, tuple(keys)), kids)
        raise ValueError(
            f"Cannot deserialize a PyTreeDef containing an unregistered type `{name}`. Use "
            "`export.register_pytree_node_serialization` or "
            "`export.register_namedtuple_serialization`.")
    ty = reg.nodetype
    if reg.kind == "namedtuple":
        fields = _json(data)
        if list(fields) != list(ty._fields) or len(kids) != len(fields):
            raise ValueError(f"the namedtuple {name} has fields {list(ty._fields)}; the bytes "
                             f"have {fields}")
        return PyTreeDef.from_node_data_and_children(registry, (ty, None), kids)
    aux = _json(data) if reg.kind == "json" else reg.from_bytes(data)
    if reg.kind == "json" and isinstance(aux, list):
        aux = _tuples(aux)
    return PyTreeDef.from_node_data_and_children(registry, (ty, aux), kids)


def _tuples(x):
    return tuple(_tuples(v) for v in x) if isinstance(x, list) else x


def _json(data: bytes):
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        _bad("bad JSON in a pytree node")


def _read_effect(r):
    name = r.string(0)
    raise NotImplementedError(f"cannot deserialize effect type {name}")


def _read_check(r) -> _export.DisabledSafetyCheck:
    kind = r.scalar(0, "<b")
    if kind == _DC_CUSTOM_CALL:
        target = r.string(1)
        if target is None:
            _bad("a custom_call check without a target")
        return _export.DisabledSafetyCheck.custom_call(target)
    if kind == _DC_PLATFORM:
        return _export.DisabledSafetyCheck.platform()
    if kind == _DC_SHAPE_ASSERTIONS:
        return _export.DisabledSafetyCheck.shape_assertions()
    _bad(f"Cannot deserialize DisabledSafetyCheck with unknown kind: {kind}")
