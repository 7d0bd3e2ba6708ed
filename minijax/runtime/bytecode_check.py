"""A structural check of MLIR bytecode before jaxlib reads it.

MLIR's bytecode reader trusts some counts in its tables: a damaged artifact can make it
write past a vector (an attribute/type group longer than the table it fills) or ask for
an impossible allocation (a count of 2**48 strings), which corrupts the heap or aborts
the process instead of returning an error. ``check`` walks the sections that reader
reads first -- the framing, the string, dialect, properties and attribute/type offset
tables -- with the same encoding rules, and raises ValueError on anything the reader
would overrun; a well-formed artifact passes unchanged. The IR section itself is left
to the reader, whose reads there are bounds-checked.

The encoding (MLIR's ``mlir/Bytecode/Encoding.h``): after the magic ``ML\\xefR``, a
version varint and a NUL-terminated producer, a sequence of sections, each
``id | aligned << 7`` (one byte), a varint length, an alignment varint and ``0xCB``
padding when aligned, then the data. A varint's first byte holds its length as the
count of trailing zero bits (0 means eight more bytes).
"""

from __future__ import annotations

__all__ = ["check"]

_STRING, _DIALECT, _ATTR_TYPE, _ATTR_TYPE_OFFSET, _IR = 0, 1, 2, 3, 4
_RESOURCE, _RESOURCE_OFFSET, _DIALECT_VERSIONS, _PROPERTIES = 5, 6, 7, 8
_NUM_SECTIONS = 9
_REQUIRED = (_STRING, _DIALECT, _ATTR_TYPE, _ATTR_TYPE_OFFSET, _IR)
_PADDING = 0xCB
# Bytecode versions from which the dialect section carries dialect versions, an op
# count, and op names flagged registered.
_DIALECT_VERSIONING = 1
_NATIVE_PROPERTIES = 5
_OP_COUNT = 4


class _Bad(ValueError):
    pass


class _Reader:
    __slots__ = ("data", "pos", "end", "what")

    def __init__(self, data: bytes, start: int, end: int, what: str):
        self.data, self.pos, self.end, self.what = data, start, end, what

    def empty(self) -> bool:
        return self.pos >= self.end

    def remaining(self) -> int:
        return self.end - self.pos

    def fail(self, msg: str):
        raise _Bad(f"{self.what}: {msg}")

    def byte(self) -> int:
        if self.pos >= self.end:
            self.fail("ends early")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        first = self.byte()
        if first & 1:
            return first >> 1
        if first == 0:
            return int.from_bytes(self.take(8), "little")
        n = (first & -first).bit_length() - 1  # trailing zeros: the extra bytes
        rest = self.take(n)
        return int.from_bytes(bytes([first]) + rest, "little") >> (n + 1)

    def take(self, n: int) -> bytes:
        if n > self.remaining():
            self.fail(f"needs {n} bytes where {self.remaining()} remain")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def skip_to_nul(self) -> None:
        at = self.data.find(0, self.pos, self.end)
        if at < 0:
            self.fail("a string has no NUL terminator")
        self.pos = at + 1

    def count(self, per_entry: int = 1) -> int:
        """A table size, each entry taking at least ``per_entry`` more bytes here."""
        n = self.varint()
        if n * per_entry > self.remaining():
            self.fail(f"claims {n} entries in {self.remaining()} bytes")
        return n


def check(blob: bytes) -> None:
    """Raise ValueError unless ``blob`` (MLIR bytecode) is well framed and its tables are
    consistent (see the module docstring)."""
    try:
        _check(bytes(blob))
    except _Bad as e:
        raise ValueError(f"the serialized module is damaged ({e})") from None


def _check(data: bytes) -> None:
    r = _Reader(data, 0, len(data), "bytecode header")
    if r.take(4) != b"ML\xefR":
        r.fail("bad magic")
    version = r.varint()
    r.skip_to_nul()  # the producer
    sections: dict[int, tuple[int, int]] = {}
    r.what = "section table"
    while not r.empty():
        head = r.byte()
        length = r.varint()
        sid = head & 0x7F
        if sid >= _NUM_SECTIONS:
            r.fail(f"invalid section id {sid}")
        if head & 0x80:
            _align(r, r.varint())
        if length > r.remaining():
            r.fail(f"section {sid} is {length} bytes where {r.remaining()} remain")
        if sid in sections:
            r.fail(f"duplicate section {sid}")
        sections[sid] = (r.pos, r.pos + length)
        r.pos += length
    for sid in _REQUIRED:
        if sid not in sections:
            r.fail(f"missing section {sid}")

    def reader(sid: int, what: str) -> _Reader:
        return _Reader(data, *sections[sid], what)

    num_strings = _check_strings(reader(_STRING, "string section"))
    if _PROPERTIES in sections:
        _check_properties(reader(_PROPERTIES, "properties section"))
    num_dialects = _check_dialects(reader(_DIALECT, "dialect section"), version,
                                   num_strings)
    attr_start, attr_end = sections[_ATTR_TYPE]
    _check_attr_type_offsets(reader(_ATTR_TYPE_OFFSET, "attribute/type offsets"),
                             num_dialects, attr_end - attr_start)


def _align(r: _Reader, alignment: int) -> None:
    if alignment <= 0 or alignment & (alignment - 1):
        r.fail(f"alignment {alignment} is not a power of two")
    while r.pos % alignment:
        if r.byte() != _PADDING:
            r.fail("bad alignment padding")


def _check_strings(r: _Reader) -> int:
    n = r.count(per_entry=2)  # a size varint and at least the NUL
    end = r.end
    for _ in range(n):
        size = r.varint()
        if size < 1 or size > end - r.pos:
            r.fail(f"a string of {size} bytes does not fit")
        end -= size
    if r.pos != end:
        r.fail("the string sizes and their data disagree")
    return n


def _check_properties(r: _Reader) -> None:
    n = r.count()
    for _ in range(n):
        r.take(r.varint())
    if not r.empty():
        r.fail("trailing bytes")


def _check_dialects(r: _Reader, version: int, num_strings: int) -> int:
    n = r.count()
    for _ in range(n):
        idx = r.varint()
        has_version = False
        if version >= _DIALECT_VERSIONING:
            idx, has_version = idx >> 1, bool(idx & 1)
        if idx >= num_strings:
            r.fail(f"dialect name {idx} is not a string")
        if has_version:
            head = r.byte()
            length = r.varint()
            if head & 0x7F != _DIALECT_VERSIONS:
                r.fail("a dialect version is not a version section")
            if head & 0x80:
                _align(r, r.varint())
            r.take(length)
    if version >= _OP_COUNT:
        r.count()  # the number of op names, reserved up front
    while not r.empty():  # op names, grouped by dialect
        if r.varint() >= n:
            r.fail("an op name's dialect is out of range")
        for _ in range(r.count()):
            if r.varint() >> (1 if version >= _NATIVE_PROPERTIES else 0) >= num_strings:
                r.fail("an op name is not a string")
    return n


def _check_attr_type_offsets(r: _Reader, num_dialects: int, section_size: int) -> None:
    num_attrs = r.count()
    num_types = r.count()
    if num_attrs + num_types > r.remaining():
        r.fail("more entries than bytes")
    offset = 0
    for total in (num_attrs, num_types):
        done = 0
        while done < total:
            if r.varint() >= num_dialects:
                r.fail("a group's dialect is out of range")
            k = r.varint()
            if k > total - done:
                r.fail(f"a group of {k} entries overruns the table of {total}")
            for _ in range(k):
                offset += r.varint() >> 1
                if offset > section_size:
                    r.fail("an entry points past the attribute/type section")
            done += k
    if not r.empty():
        r.fail("trailing bytes")
