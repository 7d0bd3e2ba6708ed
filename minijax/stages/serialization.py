"""Saving a ``Compiled`` function as bytes and loading it back without compiling.

    >>> data = minijax.stages.serialize(minijax.jit(f).lower(x).compile())
    >>> g = minijax.stages.deserialize(data)   # no XLA compilation
    >>> g(x)

The bytes hold a header (format version, and the jaxlib version, platform and
device kind the executable was built for), the argument and result pytree
structures, the argument and result types, the donated arguments, the argument
names, and XLA's serialized executable. Loading on another jaxlib version or
platform raises ``DeserializationError`` before XLA sees the bytes.

Tree structures are stored with jaxlib's protobuf encoding when they contain
only built-in nodes (tuples, lists, dicts, None, namedtuples are *not* built-in
there); otherwise as the pickled node types and their auxiliary data, so custom
pytree node classes must be importable (module-level) when loading.
"""

from __future__ import annotations

import json
import pickle
import struct
from typing import Any

import numpy as np

from minijax.core.aval import ShapedArray
from minijax.runtime import executable as _rt_exe
from minijax.runtime.executable import DeserializationError
from minijax.runtime.pytree import PyTreeDef, registry

__all__ = ["DeserializationError", "deserialize", "serialize"]

_MAGIC = b"MINIJAX-COMPILED\n"
_VERSION = 1


def serialize(compiled) -> bytes:
    """The bytes of ``compiled`` (a ``minijax.stages.Compiled``); see ``deserialize``."""
    from minijax.stages.stages import Compiled
    if not isinstance(compiled, Compiled):
        raise TypeError(f"serialize expects a minijax.stages.Compiled, got {type(compiled)}")
    entry, exe = compiled._entry, compiled._exe
    header = {
        "version": _VERSION,
        "platform": _rt_exe.platform_fingerprint(exe.backend, exe.device),
        "name": entry.name,
        "in_avals": [_aval_to_json(a) for a in entry.in_avals],
        "out_avals": [_aval_to_json(a) for a in entry.out_avals],
        "donated": [bool(d) for d in entry.donated],
        "arg_names": list(entry.arg_names) if entry.arg_names else None,
    }
    blobs = [json.dumps(header).encode(), _tree_to_bytes(entry.in_tree, "argument"),
             _tree_to_bytes(entry.out_tree, "result"), exe.serialize()]
    return _MAGIC + b"".join(struct.pack("<Q", len(b)) + b for b in blobs)


def deserialize(data: bytes):
    """A callable ``Compiled`` from ``serialize``'s bytes, loaded without compiling.

    Raises ``DeserializationError`` if the bytes are not a serialized ``Compiled``,
    or were made by another jaxlib version or for another platform or device kind.
    """
    from minijax.stages.jit import _Entry
    from minijax.stages.stages import Compiled
    header, in_tree_b, out_tree_b, exe_bytes = _split(bytes(data))
    here = _rt_exe.platform_fingerprint()
    if header.get("platform") != here:
        raise DeserializationError(
            f"this Compiled was serialized for {_describe(header.get('platform'))} and cannot "
            f"be loaded on {_describe(here)}; lower and compile it again here")
    in_avals = [_aval_from_json(a) for a in header["in_avals"]]
    out_avals = [_aval_from_json(a) for a in header["out_avals"]]
    in_tree = _tree_from_bytes(in_tree_b)
    out_tree = _tree_from_bytes(out_tree_b)
    if in_tree.num_leaves != len(in_avals) or out_tree.num_leaves != len(out_avals):
        raise DeserializationError("damaged serialized Compiled: tree and types disagree")
    entry = _Entry(None, in_tree, out_tree, in_avals, header["arg_names"], None, [],
                   header["name"], header["donated"], out_avals=out_avals)
    exe = _rt_exe.deserialize(exe_bytes, out_avals, donated=entry.aliased_inputs)
    return Compiled(entry, exe)


# ---- pieces ----------------------------------------------------------------------------------

def _split(data: bytes) -> tuple[dict, bytes, bytes, bytes]:
    if not data.startswith(_MAGIC):
        raise DeserializationError("not a serialized minijax Compiled (bad magic bytes)")
    pos, blobs = len(_MAGIC), []
    try:
        for _ in range(4):
            (n,) = struct.unpack_from("<Q", data, pos)
            pos += 8
            if pos + n > len(data):
                raise ValueError("truncated")
            blobs.append(data[pos:pos + n])
            pos += n
        header = json.loads(blobs[0])
    except (struct.error, ValueError) as e:
        raise DeserializationError(f"damaged serialized Compiled ({e})") from None
    if header.get("version") != _VERSION:
        raise DeserializationError(
            f"serialized Compiled format version {header.get('version')} is not supported "
            f"by this minijax (it reads version {_VERSION})")
    return header, blobs[1], blobs[2], blobs[3]


def _describe(fingerprint: str | None) -> str:
    if not fingerprint:
        return "an unknown platform"
    parts = dict(p.split("=", 1) for p in fingerprint.split(";") if "=" in p)
    return (f"jaxlib {parts.get('jaxlib', '?')} on {parts.get('platform', '?')} "
            f"({parts.get('device_kind', '?')})")


def _aval_to_json(a: ShapedArray) -> list:
    return [list(a.shape), a.dtype.name, bool(a.weak_type)]


def _aval_from_json(j: list) -> ShapedArray:
    shape, dtype, weak = j
    return ShapedArray(tuple(shape), _dtype(dtype), weak)


def _dtype(name: str) -> np.dtype:
    if name == "float0":
        from minijax.core.dtypes import float0
        return np.dtype(float0)
    import ml_dtypes  # noqa: F401  (registers bfloat16, float8_*, int4 with NumPy)
    return np.dtype(name)


# Trees: b"P" + jaxlib's proto encoding, or b"N" + pickle of (node_data, children) nests.

def _tree_to_bytes(tree: PyTreeDef, what: str) -> bytes:
    try:
        return b"P" + tree.serialize_using_proto()
    except ValueError:  # user-defined node types
        pass
    try:
        return b"N" + pickle.dumps(_nodes(tree))
    except Exception as e:  # noqa: BLE001 - pickling errors come in many types
        raise ValueError(
            f"cannot serialize the {what} structure {tree}: a custom pytree node type or "
            f"its auxiliary data cannot be pickled ({type(e).__name__}: {e}); define node "
            f"classes at module level, or use built-in containers") from None


def _nodes(tree: PyTreeDef) -> Any:
    return (tree.node_data(), [_nodes(c) for c in tree.children()])


_LEAF = registry.flatten(0)[1]


def _tree_from_bytes(b: bytes) -> PyTreeDef:
    kind, body = b[:1], b[1:]
    try:
        if kind == b"P":
            return PyTreeDef.deserialize_using_proto(registry, body)
        if kind == b"N":
            return _build(pickle.loads(body))  # noqa: S301 - our own format
    except Exception as e:  # noqa: BLE001
        raise DeserializationError(f"cannot load a pytree structure: {e}") from None
    raise DeserializationError("damaged serialized Compiled (unknown tree encoding)")


def _build(nodes: Any) -> PyTreeDef:
    node_data, children = nodes
    if node_data is None:
        return _LEAF
    return _LEAF.from_node_data_and_children(registry, node_data,
                                             [_build(c) for c in children])
