"""Per-function XLA compiler options, checked by name and type before XLA sees them.

``compiler_options`` maps option names to values, as in jax:

* ``exec_time_optimization_effort``, ``memory_fitting_effort`` (floats in [-1, 1]),
  ``optimization_level``, ``memory_fitting_level`` (``"O0"``..``"O3"``) are set on
  the executable build options;
* every other name must be a field of XLA's ``DebugOptions`` proto
  (``xla_cpu_enable_fast_math``, ``xla_embed_ir_in_executable``, ...). They are
  passed as ``env_option_overrides``, which XLA applies to the debug options.

XLA itself rejects unknown names and ill-typed values only when it compiles,
with a ``JaxRuntimeError``. We check first, against the ``DebugOptions`` schema:
jaxlib exposes no Python descriptor for it, but its shared library embeds the
serialized ``FileDescriptorProto`` of ``xla/xla.proto`` (as every C++ protobuf
library does); ``_debug_option_fields`` reads the field names, types and enum
values from there once. If that ever fails (another jaxlib build), the names
jaxlib exposes as ``DebugOptions`` attributes are checked and XLA's own error
is turned into a ``ValueError``.

Example::

    >>> normalize({"xla_cpu_enable_fast_math": True})
    (('xla_cpu_enable_fast_math', True),)
    >>> normalize({"xla_cpu_enable_fast_math": 1})
    Traceback (most recent call last):
    ValueError: compiler option 'xla_cpu_enable_fast_math' takes a bool, got 1 (int)
"""

from __future__ import annotations

import dataclasses
import functools
import mmap
import os
from collections.abc import Mapping
from typing import Any

from jaxlib import _jax, xla_client

__all__ = ["apply", "normalize", "known_options"]

# ---- the schema ---------------------------------------------------------------------

# FieldDescriptorProto.Type
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32 = 1, 2, 3, 4, 5
_FIXED64, _FIXED32, _BOOL, _STRING, _GROUP, _MESSAGE = 6, 7, 8, 9, 10, 11
_BYTES, _UINT32, _ENUM, _SFIXED32, _SFIXED64, _SINT32, _SINT64 = 12, 13, 14, 15, 16, 17, 18
_INT_RANGES = {
    _INT32: (-2**31, 2**31 - 1), _SINT32: (-2**31, 2**31 - 1), _SFIXED32: (-2**31, 2**31 - 1),
    _INT64: (-2**63, 2**63 - 1), _SINT64: (-2**63, 2**63 - 1), _SFIXED64: (-2**63, 2**63 - 1),
    _UINT32: (0, 2**32 - 1), _FIXED32: (0, 2**32 - 1),
    _UINT64: (0, 2**64 - 1), _FIXED64: (0, 2**64 - 1),
}
_REPEATED = 3


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    type: int
    repeated: bool
    enum_values: tuple[tuple[str, int], ...] | None  # None: unknown enum (other file)

    def describe(self) -> str:
        if self.type == _BOOL:
            kind = "a bool"
        elif self.type in _INT_RANGES:
            kind = "an int"
        elif self.type in (_DOUBLE, _FLOAT):
            kind = "a float"
        elif self.type == _ENUM:
            names = ", ".join(n for n, _ in self.enum_values or ())
            kind = f"one of {names}" if names else "an enum value name"
        elif self.type == _STRING:
            kind = "a str"
        else:
            kind = "a message (not settable)"
        return f"a comma-separated list (str or sequence) of {kind}" if self.repeated else kind


_DESCRIPTOR_MARK = b"\n\rxla/xla.proto\x12\x03xla"
_LIBRARIES = ("libjax_common.so", "_jax.so", "_xla.so")


def _varint(b: bytes, p: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        c = b[p]
        p += 1
        result |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return result, p


def _proto_fields(b: bytes):
    """(field number, value) pairs of a serialized message; stops at anything invalid."""
    p, end = 0, len(b)
    while p < end:
        try:
            tag, p = _varint(b, p)
            num, wire = tag >> 3, tag & 7
            if num == 0:
                return
            if wire == 0:
                value, p = _varint(b, p)
            elif wire == 2:
                n, p = _varint(b, p)
                if p + n > end:
                    return
                value, p = b[p:p + n], p + n
            elif wire == 1:
                value, p = b[p:p + 8], p + 8
            elif wire == 5:
                value, p = b[p:p + 4], p + 4
            else:
                return
        except IndexError:
            return
        yield num, value


def _enum(blob: bytes) -> tuple[str, tuple[tuple[str, int], ...]]:
    name, values = "", []
    for num, v in _proto_fields(blob):
        if num == 1:
            name = v.decode()
        elif num == 2:
            f = dict(_proto_fields(v))
            values.append((f[1].decode(), f.get(2, 0)))
    return name, tuple(values)


def _message(blob: bytes, prefix: str, messages: dict, enums: dict) -> None:
    """Record message ``blob`` (a DescriptorProto) and its nested types under ``prefix``."""
    body = list(_proto_fields(blob))
    name = next(v.decode() for num, v in body if num == 1)
    full = f"{prefix}.{name}"
    fields = []
    for num, v in body:
        if num == 2:  # field
            f = dict(_proto_fields(v))
            fields.append((f[1].decode(), f.get(5, 0), f.get(4, 1) == _REPEATED,
                           f.get(6, b"").decode()))
        elif num == 3:  # nested message
            _message(v, full, messages, enums)
        elif num == 4:  # nested enum
            ename, values = _enum(v)
            enums[f"{full}.{ename}"] = values
    messages[full] = fields


@functools.cache
def _schema() -> tuple[dict[str, list], dict[str, tuple]] | None:
    """Messages and enums of ``xla/xla.proto``, from the descriptor inside jaxlib."""
    import jaxlib
    root = os.path.dirname(jaxlib.__file__)
    for lib in _LIBRARIES:
        path = os.path.join(root, lib)
        try:
            with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                start = mm.find(_DESCRIPTOR_MARK)
                if start < 0:
                    continue
                blob = mm[start:start + (1 << 20)]
        except (OSError, ValueError):
            continue
        messages: dict[str, list] = {}
        enums: dict[str, tuple] = {}
        try:
            for num, v in _proto_fields(blob):
                if num == 4:
                    _message(v, ".xla", messages, enums)
                elif num == 5:
                    ename, values = _enum(v)
                    enums[f".xla.{ename}"] = values
        except (KeyError, StopIteration, UnicodeDecodeError):
            pass
        if ".xla.DebugOptions" in messages and ".xla.ExecutionOptions" in messages:
            return messages, enums
    return None


@functools.cache
def _debug_option_fields() -> dict[str, _Field] | None:
    schema = _schema()
    if schema is None:
        return None
    messages, enums = schema
    return {name: _Field(name, typ, rep, enums.get(tname) if typ == _ENUM else None)
            for name, typ, rep, tname in messages[".xla.DebugOptions"]}


@functools.cache
def _effort_levels() -> tuple[tuple[str, int], ...]:
    schema = _schema()
    levels = schema[1].get(".xla.ExecutionOptions.EffortLevel") if schema else None
    return levels or (("EFFORT_UNKNOWN", 0), ("EFFORT_O0", 9), ("EFFORT_O1", 19),
                      ("EFFORT_O2", 29), ("EFFORT_O3", 39))


_BUILD_FLOATS = ("exec_time_optimization_effort", "memory_fitting_effort")
_BUILD_LEVELS = ("optimization_level", "memory_fitting_level")


def known_options() -> list[str]:
    """Names accepted in ``compiler_options`` (build options and XLA debug options)."""
    fields = _debug_option_fields()
    debug = fields.keys() if fields is not None else _exposed_debug_options()
    return sorted([*_BUILD_FLOATS, *_BUILD_LEVELS, *debug])


def _exposed_debug_options() -> dict[str, Any]:
    # Keep every object of the chain alive while reading: the inner ones are views.
    options = xla_client.CompileOptions()
    build = options.executable_build_options
    debug = build.debug_options
    values = {n: getattr(debug, n) for n in dir(debug) if n.startswith("xla_")}
    del debug, build, options
    return values


# ---- checking values ----------------------------------------------------------------

def _type_error(name: str, expected: str, value: Any) -> ValueError:
    return ValueError(f"compiler option {name!r} takes {expected}, got {value!r} "
                      f"({type(value).__name__})")


def _check_scalar(name: str, field: _Field, value: Any, expected: str) -> Any:
    t = field.type
    if t == _BOOL:
        if type(value) is not bool:
            raise _type_error(name, expected, value)
        return value
    if t in _INT_RANGES:
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise _type_error(name, expected, value) from None
        if not isinstance(value, int) or isinstance(value, bool):
            raise _type_error(name, expected, value)
        lo, hi = _INT_RANGES[t]
        if not lo <= value <= hi:
            raise ValueError(f"compiler option {name!r}: {value} is out of range [{lo}, {hi}]")
        return value
    if t in (_DOUBLE, _FLOAT):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _type_error(name, expected, value)
        return float(value)  # XLA rejects '1' for a float field
    if t == _STRING:
        if not isinstance(value, str):
            raise _type_error(name, expected, value)
        return value
    if t == _ENUM:
        values = field.enum_values
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise _type_error(name, expected, value)
        if values:
            by_name = dict(values)
            if isinstance(value, str) and value not in by_name:
                raise ValueError(f"compiler option {name!r}: {value!r} is not one of "
                                 f"{', '.join(by_name)}")
            if isinstance(value, int) and value not in by_name.values():
                raise ValueError(f"compiler option {name!r}: {value} is not a value of "
                                 f"its enum ({', '.join(f'{k}={v}' for k, v in values)})")
        return value
    raise ValueError(f"compiler option {name!r} is a message-valued XLA option, which "
                     "cannot be set through compiler_options")


def _check_debug_option(name: str, value: Any, field: _Field) -> Any:
    expected = field.describe()
    if not field.repeated:
        return _check_scalar(name, field, value, expected)
    items = value.split(",") if isinstance(value, str) else value
    if isinstance(items, (list, tuple)):
        scalar = dataclasses.replace(field, repeated=False)
        checked = [_check_scalar(name, scalar, v.strip() if isinstance(v, str) else v,
                                 expected) for v in items if v != ""]
        return ",".join(str(v) for v in checked)
    raise _type_error(name, expected, value)


def _check_exposed(name: str, value: Any, exposed: dict[str, Any]) -> Any:
    """Fallback check when the schema is unavailable: types of the exposed defaults."""
    if name not in exposed:
        return value  # XLA decides; its error becomes a ValueError (see ``apply``)
    default = exposed[name]
    for typ in (bool, int, float, str):
        if type(default) is typ:
            ok = (type(value) is bool) if typ is bool else (
                isinstance(value, typ) and not isinstance(value, bool)
                or (typ is float and isinstance(value, int) and not isinstance(value, bool)))
            if not ok:
                raise _type_error(name, f"a {typ.__name__}", value)
            return float(value) if typ is float else value
    return value


def _check_level(name: str, value: Any) -> int:
    levels = _effort_levels()
    if isinstance(value, str) and not isinstance(value, bool):
        key = value.upper()
        for full, number in levels:
            if key in (full, full.removeprefix("EFFORT_")):
                return number
    elif isinstance(value, int) and not isinstance(value, bool):
        if value in dict(levels).values():
            return value
    names = ", ".join(n.removeprefix("EFFORT_") for n, _ in levels)
    raise ValueError(f"compiler option {name!r} takes one of {names}, got {value!r}")


def normalize(options: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """Check ``options`` and return them as a sorted tuple of ``(name, value)`` pairs.

    Raises ``ValueError`` naming the first unknown option or ill-typed value.
    The result is hashable: it is part of compilation cache keys.
    """
    if not options:
        return ()
    if not isinstance(options, Mapping):
        raise ValueError(f"compiler_options must be a dict of option names to values, "
                         f"got {options!r}")
    fields = _debug_option_fields()
    exposed = _exposed_debug_options() if fields is None else None
    out = []
    for name, value in options.items():
        if not isinstance(name, str):
            raise ValueError(f"compiler option names are strings, got {name!r}")
        if name in _BUILD_FLOATS:
            if not isinstance(value, (int, float)) or isinstance(value, bool) \
                    or not -1.0 <= value <= 1.0:
                raise ValueError(f"compiler option {name!r} takes a float in [-1, 1], "
                                 f"got {value!r}")
            value = float(value)
        elif name in _BUILD_LEVELS:
            value = _check_level(name, value)
        elif fields is not None:
            field = fields.get(name)
            if field is None:
                raise UnknownCompilerOption(_unknown_message(name, fields))
            value = _check_debug_option(name, value, field)
        else:
            value = _check_exposed(name, value, exposed)
        out.append((name, value))
    return tuple(sorted(out))


class UnknownCompilerOption(_jax.JaxRuntimeError, ValueError):
    """An option name XLA does not know: the ``JaxRuntimeError`` jax raises there (XLA's
    INVALID_ARGUMENT), raised before compiling; a ``ValueError`` as minijax's other
    option checks."""


def _unknown_message(name: str, fields: Mapping[str, Any]) -> str:
    import difflib
    close = difflib.get_close_matches(name, [*fields, *_BUILD_FLOATS, *_BUILD_LEVELS], n=3)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    return (f"INVALID_ARGUMENT: No such compile option: unknown compiler option {name!r}: "
            f"not an XLA debug option nor an "
            f"executable build option{hint}")


def apply(compile_options: xla_client.CompileOptions,
          normalized: tuple[tuple[str, Any], ...]) -> xla_client.CompileOptions:
    """Set checked options (from ``normalize``) on ``compile_options``; returns it."""
    build = compile_options.executable_build_options
    overrides = []
    for name, value in normalized:
        if name in _BUILD_FLOATS or name in _BUILD_LEVELS:
            setattr(build, name, value)
        else:
            overrides.append((name, value))
    if overrides:
        compile_options.env_option_overrides = overrides
    return compile_options


def as_value_error(err: Exception) -> ValueError | None:
    """XLA's error for a bad option (fallback path) as a ``ValueError``, else None."""
    msg = str(err)
    for marker in ("No such compile option", "While setting option"):
        if marker in msg:
            return ValueError(f"invalid compiler option: {msg.split(': ', 1)[-1]}")
    return None
