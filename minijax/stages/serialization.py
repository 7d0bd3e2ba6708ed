"""Saving a ``Compiled`` function as bytes and loading it back without compiling.

    >>> data = minijax.stages.serialize(minijax.jit(f).lower(x).compile())
    >>> g = minijax.stages.deserialize(data)   # no XLA compilation
    >>> g(x)

Trust model
-----------
The bytes hold XLA's executable: native machine code that runs in this process
when the loaded function is called. **Load only bytes you trust** (that you made,
or received over a channel that authenticates them). A SHA-256 checksum over all
of the bytes is verified before anything else reads them, so accidental
corruption (a truncated file, flipped bits) is a ``DeserializationError`` instead
of a crash inside XLA; the checksum does not stop an attacker, who can recompute
it. Loading never runs Python code taken from the bytes: there is no pickle;
pytree structures are plain JSON and custom node types are looked up by a name
registered in this process.

Format (version 2)
------------------
``b"MINIJAX-COMPILED v2\\n"``, then the SHA-256 (32 bytes) of the magic line and
everything after the digest, then four sections, each an 8-byte little-endian
length followed by that many bytes:

1. header, JSON: the platform fingerprint (jaxlib version, platform, device kind),
   the function name, argument and result types (shape, dtype name from a fixed
   list, weak type), the donated arguments and the argument names, and, when the
   executable dropped unused arguments (``jit``'s ``keep_unused=False``), the
   indices of those it takes (``kept``);
2. the argument pytree structure, JSON;
3. the result pytree structure, JSON;
4. XLA's serialized executable.

``minijax.experimental.serialize_executable`` writes ``null`` for both structures (its
caller keeps them and gives them back to ``load``); ``deserialize`` refuses such bytes.

Every header field is validated, the trees must agree with the types, and once XLA
has loaded the executable its own parameter and result types must be the ones the
header states; anything else is a ``DeserializationError``. Bytes made by another
jaxlib version, platform or device kind are refused before XLA sees them.

Pytree structures
-----------------
Tuples, lists, dicts (keys made of ``None``, ``bool``, ``int``, ``float``,
``str`` and tuples of them) and ``None`` are stored as they are. A namedtuple is
stored by its module, qualified name and fields and found again in its (already
imported) module when loading; ``register_namedtuple_serialization`` names it
explicitly instead. Any other node type (``minijax.tree_util.register_pytree_node``)
must be registered with ``register_pytree_node_serialization``: under a name, with
either a pair of functions that turn its auxiliary data into bytes and back, or no
functions when the auxiliary data is JSON-like (``None``, ``bool``, ``int``,
``float``, ``str``, and lists, tuples and dicts of them). An unregistered node type
is a ``ValueError`` when serializing, naming the type and the registration function.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import struct
import sys
import types
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.runtime import executable as _rt_exe
from minijax.runtime.executable import DeserializationError
from minijax.runtime.pytree import PyTreeDef
from minijax.runtime.pytree import transform_registry as registry

__all__ = ["DeserializationError", "deserialize", "register_namedtuple_serialization",
           "register_pytree_node_serialization", "serialize"]

T = TypeVar("T", bound=type)

_MAGIC_PREFIX = b"MINIJAX-COMPILED"
_VERSION = 2
_MAGIC = _MAGIC_PREFIX + b" v%d\n" % _VERSION
_DIGEST_SIZE = 32
_SECTIONS = 4
_MAX_RANK = 64
_MAX_DIM = 2**63 - 1

# The dtypes a serialized type may name (anything else, e.g. "object", is refused).
_DTYPES: dict[str, np.dtype] = {d.name: d for d in dtypes.SUPPORTED}
_DTYPES["float0"] = dtypes.float0
_NO_TREE = b"null"  # a tree section left for the caller to supply (serialize_executable)
_HEADER_FIELDS = {"platform", "name", "in_avals", "out_avals", "donated", "arg_names"}


# ---- registration of pytree node types --------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _NodeSerialization:
    """How one node type is written: under ``name``, with its aux data as
    ``"json"`` (JSON-like values), ``"bytes"`` (through the two functions) or
    ``"namedtuple"`` (its field names)."""

    nodetype: type
    name: str
    kind: str
    to_bytes: Callable[[Any], bytes] | None = None
    from_bytes: Callable[[bytes], Any] | None = None


_by_type: dict[type, _NodeSerialization] = {}
_by_name: dict[str, _NodeSerialization] = {}


def register_pytree_node_serialization(
        nodetype: T, *, serialized_name: str,
        serialize_auxdata: Callable[[Any], bytes] | None = None,
        deserialize_auxdata: Callable[[bytes], Any] | None = None,
        from_children: Callable[[Any, Any], Any] | None = None) -> T:
    """Make a custom pytree node type serializable (mirrors jax's function of that name).

    A ``Compiled`` whose argument or result structure contains a node type
    registered with ``minijax.tree_util.register_pytree_node`` can only be
    serialized once the type is registered here too, in the process that
    serializes and in the one that deserializes.

    Args:
      nodetype: the node type (already a registered pytree node).
      serialized_name: the name stored in the bytes and looked up when loading;
        unique among registrations.
      serialize_auxdata: turns the node's auxiliary data (the second result of its
        flatten function) into ``bytes``.
      deserialize_auxdata: the inverse of ``serialize_auxdata``.
        Leave both out when the auxiliary data is made only of ``None``, ``bool``,
        ``int``, ``float``, ``str``, lists, tuples and dicts: it is then stored as
        JSON (a minijax extension; jax requires the two functions).
      from_children: accepted as jax's: ``from_children(aux, children)`` builds a node.
        jax uses it only to get the node's tree structure, which minijax builds from
        ``nodetype``'s registration, so it is not called (``nodetype`` must still be a
        registered pytree node).

    Returns:
      ``nodetype``, so that this can be used as a class decorator (with
      ``functools.partial``).

    Raises:
      ValueError: ``nodetype`` or ``serialized_name`` is registered already,
        ``nodetype`` is not a pytree node, or only one of the two functions is given.

    Example::

        >>> class Box:
        ...     def __init__(self, value, label):
        ...         self.value, self.label = value, label
        >>> minijax.tree_util.register_pytree_node(
        ...     Box, lambda b: ((b.value,), b.label), lambda label, c: Box(c[0], label))
        >>> minijax.stages.register_pytree_node_serialization(Box, serialized_name="my.Box")
    """
    if not isinstance(nodetype, type):
        raise TypeError(f"register_pytree_node_serialization expects a type, got {nodetype!r}")
    if (serialize_auxdata is None) != (deserialize_auxdata is None):
        raise ValueError("give both serialize_auxdata and deserialize_auxdata, or neither "
                         "(for JSON-like auxiliary data)")
    if not registry.is_node(nodetype):
        raise ValueError(
            f"{_type_name(nodetype)} is not a pytree node type; register it with "
            f"minijax.tree_util.register_pytree_node before registering its serialization")
    if from_children is not None and not callable(from_children):
        raise TypeError(f"from_children must be callable, got {from_children!r}")
    kind = "json" if serialize_auxdata is None else "bytes"
    _register(_NodeSerialization(nodetype, serialized_name, kind, serialize_auxdata,
                                 deserialize_auxdata))
    return nodetype


def register_namedtuple_serialization(nodetype: T, *, serialized_name: str) -> T:
    """Store a namedtuple type under ``serialized_name`` (mirrors jax's function).

    Unregistered namedtuples are found again by module and qualified name, which
    needs their module to be imported before ``deserialize`` and fails for
    namedtuples defined inside functions; a registered one is found by name. Its
    fields must be the same when loading.

    Returns:
      ``nodetype``.
    """
    if not _is_namedtuple(nodetype):
        raise ValueError("use minijax.stages.register_pytree_node_serialization for types "
                         f"other than collections.namedtuple (got {nodetype!r})")
    _register(_NodeSerialization(nodetype, serialized_name, "namedtuple"))
    return nodetype


def _register(reg: _NodeSerialization) -> None:
    if not isinstance(reg.name, str) or not reg.name:
        raise ValueError(f"serialized_name must be a non-empty string, got {reg.name!r}")
    if reg.nodetype in _by_type:
        raise ValueError(f"duplicate serialization registration for {_type_name(reg.nodetype)}; "
                         f"it is registered as {_by_type[reg.nodetype].name!r}")
    if reg.name in _by_name:
        raise ValueError(f"duplicate serialization registration for the serialized_name "
                         f"{reg.name!r}; it names {_type_name(_by_name[reg.name].nodetype)}")
    _by_type[reg.nodetype] = reg
    _by_name[reg.name] = reg


# ---- serialize / deserialize ------------------------------------------------------------------

def serialize(compiled) -> bytes:
    """The bytes of ``compiled`` (a ``minijax.stages.Compiled``); see ``deserialize``.

    Raises:
      TypeError: ``compiled`` is not a ``Compiled``.
      ValueError: its argument or result structure holds a pytree node type that is
        not registered for serialization (see ``register_pytree_node_serialization``),
        or it is partitioned over several devices.
    """
    return serialize_with_trees(compiled, store_trees=True)


def serialize_with_trees(compiled, *, store_trees: bool) -> bytes:
    """``serialize``; with ``store_trees=False`` the two pytree structures are left out
    (each section is JSON ``null``) and must be given to ``load`` (``serialize_executable``'s way:
    the caller keeps the trees, so any node type works)."""
    from minijax.stages.stages import Compiled
    if not isinstance(compiled, Compiled):
        raise TypeError(f"serialize expects a minijax.stages.Compiled, got {type(compiled)}")
    entry, exe = compiled.trace_entry, compiled.executable
    placement = getattr(exe, "placement", None)
    if placement is not None and len(placement.devices) > 1:
        # loading binds an executable to one device, and XLA aborts the process on a
        # partitioned one
        raise ValueError(f"cannot serialize a Compiled partitioned over "
                         f"{len(placement.devices)} devices; only single-device executables "
                         f"can be serialized")
    header = {
        "platform": _rt_exe.platform_fingerprint(exe.backend, exe.device),
        "name": str(entry.name),
        "in_avals": [_aval_to_json(a) for a in entry.in_avals],
        "out_avals": [_aval_to_json(a) for a in entry.out_avals],
        "donated": [bool(d) for d in entry.donated],
        "arg_names": [str(n) for n in entry.arg_names] if entry.arg_names else None,
    }
    # unused arguments dropped (a program partitioned over devices keeps them all)
    if entry.kept is not None and getattr(exe, "placement", None) is None:
        header["kept"] = list(entry.kept)
    trees = ([_tree_to_bytes(entry.in_tree, "argument"),
              _tree_to_bytes(entry.out_tree, "result")] if store_trees else [_NO_TREE] * 2)
    return _pack([json.dumps(header).encode(), *trees, exe.serialize()])


def deserialize(data: bytes):
    """A callable ``Compiled`` from ``serialize``'s bytes, loaded without compiling.

    The bytes hold native code: load only bytes you trust (see the module
    docstring). Their checksum is verified first, so damaged bytes never reach XLA.

    Raises:
      DeserializationError: the bytes are not a serialized ``Compiled`` of this
        format version, are damaged, were made by another jaxlib version or for
        another platform or device kind, name a pytree node type not registered
        here, or state types that the executable does not have.
    """
    return load(data)


def load(data: bytes, trees: tuple[PyTreeDef, PyTreeDef] | None = None,
         backend=None, device=None):
    """``deserialize``, with the ``(in_tree, out_tree)`` given by the caller instead of
    read from the bytes (required when ``serialize_with_trees`` left them out), on
    ``backend``'s ``device`` (default: the default backend's first device)."""
    from minijax.stages.entry import TraceEntry
    from minijax.stages.stages import Compiled
    if not isinstance(data, bytes | bytearray | memoryview):
        raise DeserializationError(f"deserialize expects bytes, got {type(data).__name__}")
    header_b, in_tree_b, out_tree_b, exe_bytes = _unpack(bytes(data))
    header = _parse_header(header_b)
    here = _rt_exe.platform_fingerprint(backend, device)
    if header["platform"] != here:
        raise DeserializationError(
            f"this Compiled was serialized for {_describe(header['platform'])} and cannot "
            f"be loaded on {_describe(here)}; lower and compile it again here")
    in_avals, out_avals = header["in_avals"], header["out_avals"]
    if trees is not None:
        in_tree, out_tree = trees
        if not (isinstance(in_tree, PyTreeDef) and isinstance(out_tree, PyTreeDef)):
            raise TypeError(f"in_tree and out_tree must be PyTreeDefs, got "
                            f"{type(in_tree).__name__} and {type(out_tree).__name__}")
    elif in_tree_b == _NO_TREE or out_tree_b == _NO_TREE:
        raise DeserializationError(
            "these bytes do not hold the pytree structures (made by minijax.experimental."
            "serialize_executable.serialize): load them with deserialize_and_load and the "
            "in_tree and out_tree that serialize returned")
    else:
        in_tree = _tree_from_bytes(in_tree_b, "argument")
        out_tree = _tree_from_bytes(out_tree_b, "result")
    if not _is_args_kwargs(in_tree):
        raise DeserializationError("damaged serialized Compiled: the argument structure is not "
                                   "a pair of positional and keyword arguments")
    if in_tree.num_leaves != len(in_avals) or out_tree.num_leaves != len(out_avals):
        raise DeserializationError(
            f"damaged serialized Compiled: the trees have {in_tree.num_leaves} argument and "
            f"{out_tree.num_leaves} result leaves, the header {len(in_avals)} and "
            f"{len(out_avals)} types")
    entry = TraceEntry(None, in_tree, out_tree, in_avals, header["arg_names"], None, [],
                   header["name"], header["donated"], out_avals=out_avals,
                   kept=header.get("kept"))
    exe = _rt_exe.deserialize(exe_bytes, out_avals, backend, device=device,
                              donated=entry.param_aliased(), in_avals=entry.params(in_avals))
    return Compiled(entry, exe)


# ---- the container: magic, checksum, sections -------------------------------------------------

def _pack(sections: list[bytes]) -> bytes:
    """Magic line, SHA-256, then the length-prefixed sections."""
    body = b"".join(struct.pack("<Q", len(s)) + s for s in sections)
    return _MAGIC + hashlib.sha256(_MAGIC + body).digest() + body


def _unpack(data: bytes) -> list[bytes]:
    """The sections of ``data``, after checking the magic line, version and checksum."""
    if not data.startswith(_MAGIC_PREFIX):
        raise DeserializationError("not a serialized minijax Compiled (bad magic bytes)")
    if not data.startswith(_MAGIC):
        raise DeserializationError(
            f"serialized Compiled format version {_version_of(data)} is not supported by "
            f"this minijax (it reads version {_VERSION}); serialize it again")
    start = len(_MAGIC) + _DIGEST_SIZE
    if len(data) < start:
        raise DeserializationError("damaged serialized Compiled (truncated before the checksum)")
    body = data[start:]
    if hashlib.sha256(_MAGIC + body).digest() != data[len(_MAGIC):start]:
        raise DeserializationError("damaged serialized Compiled (checksum mismatch: the bytes "
                                   "were truncated or modified)")
    sections, pos = [], 0
    for _ in range(_SECTIONS):
        if pos + 8 > len(body):
            raise DeserializationError("damaged serialized Compiled (truncated section length)")
        (n,) = struct.unpack_from("<Q", body, pos)
        pos += 8
        if n > len(body) - pos:
            raise DeserializationError("damaged serialized Compiled (section longer than the data)")
        sections.append(body[pos:pos + n])
        pos += n
    if pos != len(body):
        raise DeserializationError("damaged serialized Compiled (trailing bytes)")
    return sections


def _version_of(data: bytes) -> str:
    """The format version named by the magic line (version 1 had no number)."""
    rest = data[len(_MAGIC_PREFIX):len(_MAGIC_PREFIX) + 12]
    if rest.startswith(b"\n"):
        return "1"
    if rest.startswith(b" v") and b"\n" in rest:
        number = rest[2:rest.index(b"\n")]
        if number.isdigit():
            return number.decode()
    return "unknown"


# ---- header ------------------------------------------------------------------------------------

def _parse_header(b: bytes) -> dict:
    """The header's fields, each checked; avals as ``ShapedArray``s."""
    try:
        h = json.loads(b.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise DeserializationError(f"damaged serialized Compiled (header: {e})") from None
    if not isinstance(h, dict) or set(h) - {"kept"} != _HEADER_FIELDS:
        got = sorted(h) if isinstance(h, dict) else type(h).__name__
        raise DeserializationError(f"damaged serialized Compiled (header fields {got}, "
                                   f"expected {sorted(_HEADER_FIELDS)})")
    if not isinstance(h["platform"], str) or not isinstance(h["name"], str):
        raise DeserializationError("damaged serialized Compiled (header: platform and name "
                                   "must be strings)")
    in_avals = _avals_from_json(h["in_avals"], "argument")
    out_avals = _avals_from_json(h["out_avals"], "result")
    donated = h["donated"]
    if not (isinstance(donated, list) and len(donated) == len(in_avals)
            and all(type(d) is bool for d in donated)):
        raise DeserializationError("damaged serialized Compiled (header: 'donated' must be one "
                                   "bool per argument)")
    names = h["arg_names"]
    if names is not None and not (isinstance(names, list) and len(names) == len(in_avals)
                                  and all(isinstance(n, str) for n in names)):
        raise DeserializationError("damaged serialized Compiled (header: 'arg_names' must be "
                                   "null or one string per argument)")
    kept = h.get("kept")
    if kept is not None:
        if not (isinstance(kept, list) and all(type(i) is int for i in kept)
                and kept == sorted(set(kept)) and all(0 <= i < len(in_avals) for i in kept)):
            raise DeserializationError("damaged serialized Compiled (header: 'kept' must be "
                                       "increasing argument indices)")
        kept = tuple(kept)
    return dict(h, in_avals=in_avals, out_avals=out_avals, kept=kept)


def _aval_to_json(a: ShapedArray) -> list:
    name = "float0" if a.dtype == dtypes.float0 else a.dtype.name
    return [[int(d) for d in a.shape], name, bool(a.weak_type)]


def _avals_from_json(items: Any, what: str) -> list[ShapedArray]:
    if not isinstance(items, list):
        raise DeserializationError(f"damaged serialized Compiled (header: the {what} types "
                                   f"are not a list)")
    return [_aval_from_json(j, what, i) for i, j in enumerate(items)]


def _aval_from_json(j: Any, what: str, i: int) -> ShapedArray:
    def bad(why: str) -> DeserializationError:
        return DeserializationError(f"damaged serialized Compiled (header: {what} type {i} "
                                    f"{j!r:.100}: {why})")
    if not (isinstance(j, list) and len(j) == 3):
        raise bad("not [shape, dtype, weak_type]")
    shape, dtype, weak = j
    if not (isinstance(shape, list) and len(shape) <= _MAX_RANK
            and all(type(d) is int and 0 <= d <= _MAX_DIM for d in shape)):
        raise bad("the shape must be a list of non-negative ints")
    if not isinstance(dtype, str) or dtype not in _DTYPES:
        raise bad(f"unknown dtype; expected one of {', '.join(sorted(_DTYPES))}")
    if type(weak) is not bool:
        raise bad("weak_type must be a bool")
    return ShapedArray(tuple(shape), _DTYPES[dtype], weak)


def _describe(fingerprint: str) -> str:
    parts = dict(p.split("=", 1) for p in fingerprint.split(";") if "=" in p)
    if not parts:
        return "an unknown platform"
    return (f"jaxlib {parts.get('jaxlib', '?')} on {parts.get('platform', '?')} "
            f"({parts.get('device_kind', '?')})")


def _is_args_kwargs(tree: PyTreeDef) -> bool:
    """Whether ``tree`` is the structure of ``(args_tuple, kwargs_dict)``."""
    def kind(t: PyTreeDef):
        data = t.node_data()
        return None if data is None else data[0]
    children = tree.children()
    return (kind(tree) is tuple and len(children) == 2 and kind(children[0]) is tuple
            and kind(children[1]) is dict)


# ---- trees -------------------------------------------------------------------------------------
#
# A node is JSON:
#   "*"                                             a leaf
#   ["None"]                                        None
#   ["tuple", [children]]   ["list", [children]]
#   ["dict", [keys], [children]]                    keys as JSON-like values (below)
#   ["namedtuple", module, qualname, [fields], [children]]
#   ["custom", serialized_name, auxdata, [children]]
#
# A JSON-like value is None, a bool, int, float or str as itself, or a container
# tagged by its type: {"list": [...]}, {"tuple": [...]}, {"dict": [[key, value], ...]}.

_LEAF = registry.flatten(0)[1]
_NONE = type(None)


class _Unserializable(Exception):
    """A node or value that has no safe encoding (becomes a ValueError)."""


def _tree_to_bytes(tree: PyTreeDef, what: str) -> bytes:
    try:
        return json.dumps(_encode_node(tree), allow_nan=True).encode()
    except _Unserializable as e:
        raise ValueError(f"cannot serialize the {what} structure {tree}: {e}") from None
    except RecursionError:
        raise ValueError(f"cannot serialize the {what} structure {tree}: it, or the "
                         f"auxiliary data of one of its nodes, is nested too deeply or "
                         f"contains itself") from None


def _encode_node(tree: PyTreeDef) -> Any:
    data = tree.node_data()
    if data is None:
        return "*"
    nodetype, aux = data
    children = [_encode_node(c) for c in tree.children()]
    if nodetype is _NONE:
        return ["None"]
    if nodetype is tuple or nodetype is list:
        return [nodetype.__name__, children]
    if nodetype is dict:
        return ["dict", [_encode_value(k, "a dict key") for k in aux], children]
    reg = _by_type.get(nodetype)
    if reg is not None:
        return ["custom", reg.name, _encode_aux(reg, aux), children]
    if _is_namedtuple(nodetype) and aux is None:
        module, qualname = nodetype.__module__, nodetype.__qualname__
        if _find_namedtuple(module, qualname, list(nodetype._fields)) is not nodetype:
            raise _Unserializable(
                f"the namedtuple type {_type_name(nodetype)} cannot be found again by its "
                f"module and name (it is defined inside a function, or hidden); register it "
                f"with minijax.stages.register_namedtuple_serialization")
        return ["namedtuple", module, qualname, list(nodetype._fields), children]
    raise _Unserializable(
        f"the pytree node type {_type_name(nodetype)} is not registered for serialization; "
        f"register it with minijax.stages.register_pytree_node_serialization (or "
        f"minijax.stages.register_namedtuple_serialization for a namedtuple)")


def _encode_aux(reg: _NodeSerialization, aux: Any) -> Any:
    if reg.kind == "namedtuple":
        return list(reg.nodetype._fields)
    if reg.kind == "json":
        return _encode_value(aux, f"the auxiliary data of {_type_name(reg.nodetype)}")
    b = reg.to_bytes(aux)
    if not isinstance(b, bytes | bytearray):
        raise _Unserializable(f"the serialize_auxdata function registered for "
                              f"{_type_name(reg.nodetype)} returned {type(b).__name__}, "
                              f"not bytes")
    return base64.b64encode(bytes(b)).decode("ascii")


def _encode_value(v: Any, what: str) -> Any:
    if v is None or type(v) in (bool, int, float, str):
        return v
    if type(v) is list or type(v) is tuple:
        return {type(v).__name__: [_encode_value(x, what) for x in v]}
    if type(v) is dict:
        return {"dict": [[_encode_value(k, what), _encode_value(x, what)]
                         for k, x in v.items()]}
    raise _Unserializable(
        f"{what} contains {v!r:.80} of type {_type_name(type(v))}; only None, bool, int, "
        f"float, str, lists, tuples and dicts of them can be stored as JSON (register "
        f"serialize_auxdata/deserialize_auxdata functions with "
        f"minijax.stages.register_pytree_node_serialization for other auxiliary data)")


class _Bad(Exception):
    """A malformed tree encoding (becomes a DeserializationError)."""


def _tree_from_bytes(b: bytes, what: str) -> PyTreeDef:
    try:
        return _decode_node(json.loads(b.decode("utf-8")))
    except DeserializationError:
        raise
    except (_Bad, UnicodeDecodeError, ValueError, TypeError, RecursionError) as e:
        raise DeserializationError(f"damaged serialized Compiled (the {what} structure: "
                                   f"{e})") from None


def _decode_node(j: Any) -> PyTreeDef:
    if j == "*":
        return _LEAF
    if not (isinstance(j, list) and j and isinstance(j[0], str)):
        raise _Bad(f"not a node: {j!r:.80}")
    tag, rest = j[0], j[1:]
    if tag == "None" and not rest:
        return _node((_NONE, None), [])
    if tag in ("tuple", "list") and len(rest) == 1:
        return _node((tuple if tag == "tuple" else list, None), _decode_children(rest[0]))
    if tag == "dict" and len(rest) == 2:
        keys, children = rest[0], _decode_children(rest[1])
        if not isinstance(keys, list) or len(keys) != len(children):
            raise _Bad("a dict's keys and children disagree")
        keys = [_decode_value(k) for k in keys]
        if len(set(keys)) != len(keys):
            raise _Bad("a dict has duplicate keys")
        return _node((dict, keys), children)
    if tag == "namedtuple" and len(rest) == 4:
        module, qualname, fields, children = rest[0], rest[1], rest[2], _decode_children(rest[3])
        if not (isinstance(module, str) and isinstance(qualname, str) and
                isinstance(fields, list) and all(isinstance(f, str) for f in fields)):
            raise _Bad("a namedtuple node needs a module, a name and field names")
        cls = _find_namedtuple(module, qualname, fields)
        if cls is None:
            raise DeserializationError(
                f"the serialized Compiled uses the namedtuple {module}.{qualname} with fields "
                f"{tuple(fields)}, which is not defined here with those fields (import "
                f"{module} first, or register it with "
                f"minijax.stages.register_namedtuple_serialization where it is serialized "
                f"and loaded)")
        if len(children) != len(fields):
            raise _Bad(f"the namedtuple {qualname} has {len(fields)} fields but "
                       f"{len(children)} children")
        return _node((cls, None), children)
    if tag == "custom" and len(rest) == 3:
        name, aux, children = rest[0], rest[1], _decode_children(rest[2])
        if not isinstance(name, str):
            raise _Bad("a custom node needs a name")
        reg = _by_name.get(name)
        if reg is None:
            raise DeserializationError(
                f"the serialized Compiled uses a pytree node type serialized as {name!r}, "
                f"which is not registered in this process; call "
                f"minijax.stages.register_pytree_node_serialization (or "
                f"register_namedtuple_serialization) for it before deserialize")
        return _node((reg.nodetype, _decode_aux(reg, aux, len(children))), children)
    raise _Bad(f"unknown node {tag!r:.40} with {len(rest)} fields")


def _decode_children(j: Any) -> list[PyTreeDef]:
    if not isinstance(j, list):
        raise _Bad("children must be a list")
    return [_decode_node(c) for c in j]


def _decode_aux(reg: _NodeSerialization, aux: Any, num_children: int) -> Any:
    name = _type_name(reg.nodetype)
    if reg.kind == "namedtuple":
        fields = list(reg.nodetype._fields)
        if aux != fields or num_children != len(fields):
            raise DeserializationError(
                f"the namedtuple {name} registered as {reg.name!r} has the fields "
                f"{tuple(fields)} here but {aux!r:.100} in the serialized Compiled")
        return None
    if reg.kind == "json":
        return _decode_value(aux)
    if not isinstance(aux, str):
        raise _Bad(f"the auxiliary data of {name} is not base64 text")
    try:
        raw = base64.b64decode(aux.encode("ascii"), validate=True)
    except ValueError as e:
        raise _Bad(f"the auxiliary data of {name} is not base64 ({e})") from None
    try:
        return reg.from_bytes(raw)
    except Exception as e:  # noqa: BLE001 - the user's function may raise anything
        raise DeserializationError(
            f"the deserialize_auxdata function registered for {name} failed: "
            f"{type(e).__name__}: {e}") from None


def _decode_value(j: Any) -> Any:
    if j is None or type(j) in (bool, int, float, str):
        return j
    if isinstance(j, dict) and len(j) == 1:
        (tag, items), = j.items()
        if tag in ("list", "tuple") and isinstance(items, list):
            values = [_decode_value(x) for x in items]
            return values if tag == "list" else tuple(values)
        if tag == "dict" and isinstance(items, list):
            if not all(isinstance(p, list) and len(p) == 2 for p in items):
                raise _Bad("a dict value must be a list of [key, value] pairs")
            return {_decode_value(k): _decode_value(v) for k, v in items}
    raise _Bad(f"not a JSON-like value encoding: {j!r:.80}")


def _node(node_data: tuple, children: list[PyTreeDef]) -> PyTreeDef:
    try:
        return _LEAF.from_node_data_and_children(registry, node_data, children)
    except Exception as e:  # noqa: BLE001 - jaxlib's errors are RuntimeError or ValueError
        raise _Bad(f"cannot build a {_type_name(node_data[0])} node: {e}") from None


def _is_namedtuple(t: Any) -> bool:
    return (isinstance(t, type) and issubclass(t, tuple) and
            isinstance(getattr(t, "_fields", None), tuple) and
            all(isinstance(f, str) for f in t._fields))


def _find_namedtuple(module: str, qualname: str, fields: list[str]) -> type | None:
    """The namedtuple class ``module.qualname`` with these fields, or None.

    Only modules already imported are searched, through their and their classes'
    ``__dict__`` (no import, no attribute hooks: nothing runs).
    """
    obj: Any = sys.modules.get(module)
    for part in qualname.split("."):
        if not isinstance(obj, types.ModuleType | type):
            return None
        obj = vars(obj).get(part)
    if _is_namedtuple(obj) and list(obj._fields) == fields:
        return obj
    return None


def _type_name(t: Any) -> str:
    if isinstance(t, type):
        return f"{t.__module__}.{t.__qualname__}"
    return repr(t)
