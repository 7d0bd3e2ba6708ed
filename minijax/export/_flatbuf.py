"""A small FlatBuffers writer and bounds-checked reader (the wire format of jax's
``Exported``: ``jax/_src/export/serialization.fbs``).

Format: little-endian; the buffer starts with a ``uoffset`` (u32) to the root table. A
table starts with an ``soffset`` (i32) back to its vtable (``vtable = table - soffset``);
a vtable is ``u16 vtable bytes, u16 table bytes, u16 offset per field`` (0: absent, the
default). Offsets to strings, vectors and tables are u32 and point forward, relative to
where they are stored. A vector is ``u32 length`` then its elements; a string is a
vector of bytes followed by a NUL.

The writer lays objects out front to back: a table, then what it points to, so every
offset is forward. The reader checks every access against the buffer and raises
``FlatbufferError`` (a ValueError) on anything out of bounds.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

__all__ = ["FlatbufferError", "Table", "Vector", "Scalars", "build", "root"]


class FlatbufferError(ValueError):
    pass


# ---- writing -------------------------------------------------------------------------

class Table:
    """A table to write: ``fields`` is ``{slot: value}`` where a value is
    ``("u8"|"i8"|"bool"|"u16"|"i16"|"u32"|"i32", int)`` inline, or a ``str``, ``bytes``,
    ``Table``, ``Vector`` or ``Scalars`` written out of line."""

    __slots__ = ("fields",)

    def __init__(self, fields: dict):
        self.fields = fields


class Vector:
    """A vector of strings or tables."""

    __slots__ = ("items",)

    def __init__(self, items: Sequence):
        self.items = items


class Scalars:
    """A vector of scalars of one struct format (``"B"``, ``"b"``, ``"H"``, ``"I"``)."""

    __slots__ = ("fmt", "values")

    def __init__(self, fmt: str, values: Sequence[int]):
        self.fmt = fmt
        self.values = values


_INLINE = {"u8": "<B", "i8": "<b", "bool": "<B", "u16": "<H", "i16": "<h", "u32": "<I",
           "i32": "<i"}


class _Writer:
    def __init__(self):
        self.buf = bytearray()
        self.vtables: dict[bytes, int] = {}

    def align(self, n: int) -> int:
        pad = -len(self.buf) % n
        if pad:
            self.buf += b"\0" * pad
        return len(self.buf)

    def patch(self, at: int, target: int) -> None:
        struct.pack_into("<I", self.buf, at, target - at)

    def write(self, obj) -> int:
        if isinstance(obj, Table):
            return self.table(obj)
        if isinstance(obj, str):
            obj = obj.encode("utf-8")
            pos = self.align(4)
            self.buf += struct.pack("<I", len(obj)) + obj + b"\0"
            return pos
        if isinstance(obj, (bytes, bytearray, memoryview)):
            pos = self.align(4)
            self.buf += struct.pack("<I", len(obj))
            self.buf += obj
            return pos
        if isinstance(obj, Scalars):
            pos = self.align(4)
            self.buf += struct.pack(f"<I{len(obj.values)}{obj.fmt}", len(obj.values),
                                    *obj.values)
            return pos
        if isinstance(obj, Vector):
            pos = self.align(4)
            n = len(obj.items)
            self.buf += struct.pack("<I", n) + b"\0" * (4 * n)
            for i, item in enumerate(obj.items):
                self.patch(pos + 4 + 4 * i, self.write(item))
            return pos
        raise TypeError(f"cannot write {type(obj)}")

    def table(self, t: Table) -> int:
        fields = t.fields
        nslots = max(fields) + 1 if fields else 0
        # inline layout: 4 bytes of soffset, then each field aligned to its size
        layout, size, offsets = [], 4, [0] * nslots
        for slot in sorted(fields, key=lambda s: -_size(fields[s])):
            fsize = _size(fields[slot])
            size += -size % fsize
            offsets[slot] = size
            layout.append((slot, size))
            size += fsize
        vt = struct.pack(f"<HH{nslots}H", 4 + 2 * nslots, size, *offsets)
        vt_pos = self.vtables.get(vt)
        if vt_pos is None:
            vt_pos = self.align(2)
            self.buf += vt
            self.vtables[vt] = vt_pos
        pos = self.align(4)
        self.buf += b"\0" * size
        struct.pack_into("<i", self.buf, pos, pos - vt_pos)
        later = []
        for slot, off in layout:
            v = fields[slot]
            if type(v) is tuple:
                struct.pack_into(_INLINE[v[0]], self.buf, pos + off, v[1])
            else:
                later.append((pos + off, v))
        for at, v in later:
            self.patch(at, self.write(v))
        return pos


def _size(v) -> int:
    if type(v) is tuple:
        return struct.calcsize(_INLINE[v[0]])
    return 4


def build(root_table: Table) -> bytearray:
    """The bytes of a buffer whose root is ``root_table``."""
    w = _Writer()
    w.buf += b"\0" * 4
    w.patch(0, w.table(root_table))
    return w.buf


# ---- reading -------------------------------------------------------------------------

class Reader:
    """A table in a buffer: ``r.scalar(slot, "<B", default)``, ``r.string(slot)``,
    ``r.table(slot)``, ``r.tables(slot)``, ``r.strings(slot)``, ``r.scalars(slot, fmt)``,
    ``r.bytes(slot)``; each checks bounds."""

    __slots__ = ("buf", "pos", "vt", "vt_len")

    def __init__(self, buf: bytes, pos: int):
        n = len(buf)
        if pos < 0 or pos + 4 > n:
            raise FlatbufferError(f"table at {pos} is outside the buffer ({n} bytes)")
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        if vt < 0 or vt + 4 > n:
            raise FlatbufferError(f"vtable at {vt} is outside the buffer")
        vt_len = struct.unpack_from("<H", buf, vt)[0]
        if vt_len < 4 or vt_len % 2 or vt + vt_len > n:
            raise FlatbufferError(f"bad vtable at {vt}")
        self.buf, self.pos, self.vt, self.vt_len = buf, pos, vt, vt_len

    def _field(self, slot: int, size: int) -> int | None:
        o = 4 + 2 * slot
        if o + 2 > self.vt_len:
            return None
        off = struct.unpack_from("<H", self.buf, self.vt + o)[0]
        if off == 0:
            return None
        at = self.pos + off
        if at + size > len(self.buf):
            raise FlatbufferError(f"field {slot} of the table at {self.pos} is outside "
                                  "the buffer")
        return at

    def scalar(self, slot: int, fmt: str, default=0):
        at = self._field(slot, struct.calcsize(fmt))
        return default if at is None else struct.unpack_from(fmt, self.buf, at)[0]

    def _target(self, slot: int) -> int | None:
        at = self._field(slot, 4)
        if at is None:
            return None
        return _deref(self.buf, at)

    def table(self, slot: int) -> Reader | None:
        t = self._target(slot)
        return None if t is None else Reader(self.buf, t)

    def _vector(self, slot: int, elem: int) -> tuple[int, int] | None:
        v = self._target(slot)
        if v is None:
            return None
        return _vector_at(self.buf, v, elem)

    def length(self, slot: int) -> int:
        """The number of elements of the vector of tables or strings in ``slot`` (0 if
        absent)."""
        v = self._vector(slot, 4)
        return 0 if v is None else v[1]

    def bytes(self, slot: int) -> bytes | None:
        v = self._vector(slot, 1)
        return None if v is None else bytes(self.buf[v[0]:v[0] + v[1]])

    def string(self, slot: int) -> str | None:
        b = self.bytes(slot)
        if b is None:
            return None
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError as e:
            raise FlatbufferError(f"a string is not UTF-8: {e}") from None

    def scalars(self, slot: int, fmt: str) -> tuple:
        size = struct.calcsize("<" + fmt)
        v = self._vector(slot, size)
        if v is None:
            return ()
        return struct.unpack_from(f"<{v[1]}{fmt}", self.buf, v[0])

    def _offsets(self, slot: int) -> list[int]:
        v = self._vector(slot, 4)
        if v is None:
            return []
        start, n = v
        return [_deref(self.buf, start + 4 * i) for i in range(n)]

    def tables(self, slot: int) -> list[Reader]:
        return [Reader(self.buf, p) for p in self._offsets(slot)]

    def strings(self, slot: int) -> list[str]:
        out = []
        for p in self._offsets(slot):
            start, n = _vector_at(self.buf, p, 1)
            try:
                out.append(bytes(self.buf[start:start + n]).decode("utf-8"))
            except UnicodeDecodeError as e:
                raise FlatbufferError(f"a string is not UTF-8: {e}") from None
        return out


def _deref(buf, at: int) -> int:
    t = at + struct.unpack_from("<I", buf, at)[0]
    if t + 4 > len(buf):
        raise FlatbufferError(f"offset at {at} points outside the buffer")
    return t


def _vector_at(buf, v: int, elem: int) -> tuple[int, int]:
    n = struct.unpack_from("<I", buf, v)[0]
    start = v + 4
    if start + n * elem > len(buf):
        raise FlatbufferError(f"vector at {v} ({n} elements) runs past the buffer")
    return start, n


def root(buf: bytes) -> Reader:
    """The root table of ``buf``."""
    if len(buf) < 8:
        raise FlatbufferError(f"{len(buf)} bytes is too short for a flatbuffer")
    return Reader(buf, _deref(buf, 0))
