"""XLA ``OpSharding`` protos (``xla_data.proto``) as jax wrote them into an Exported
before January 2026 (``Sharding.hlo_sharding_proto``), decoded in Python and checked
before anything of XLA sees them.

The proto's fields read here: 1 ``type`` (REPLICATED 0, MAXIMAL 1, TUPLE 2, OTHER 3,
MANUAL 4, UNKNOWN 5, UNREDUCED 6), 3 ``tile_assignment_dimensions``, 4
``tile_assignment_devices``, 6 ``replicate_on_last_tile_dim``, 7 ``metadata`` (skipped),
8 ``last_tile_dims``, 9 ``iota_reshape_dims``, 10 ``iota_transpose_perm``, 11
``is_shard_group``. A valid sharding of an array becomes the HLO sharding text
(``{devices=[4,1,2]<=[8] last_tile_dim_replicate}``) that XLA parses; anything else is a
``ValueError`` (``NotImplementedError`` for tuple shardings and shard groups).
"""

from __future__ import annotations

import math

from minijax.export._flatbuf import FlatbufferError

__all__ = ["op_sharding_text"]

_REPLICATED, _MAXIMAL, _TUPLE, _OTHER, _MANUAL, _UNKNOWN, _UNREDUCED = range(7)
_LAST_TILE_NAMES = {_REPLICATED: "replicated", _MANUAL: "manual"}
_MAX_DEVICES = 1 << 20
_MAX_DIMS = 64


class _Bad(FlatbufferError):
    """A damaged proto (a ValueError; ``deserialize`` says the bytes are not an
    Exported)."""


def _varint(buf: bytes, at: int) -> tuple[int, int]:
    v, shift = 0, 0
    while True:
        if at >= len(buf):
            raise _Bad("a truncated varint")
        b = buf[at]
        at += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, at
        shift += 7
        if shift > 63:
            raise _Bad("a varint of more than 10 bytes")


def _fields(buf: bytes) -> dict[int, list]:
    """``{field number: [values]}``: ints for varints, bytes for length-delimited."""
    out: dict[int, list] = {}
    at = 0
    while at < len(buf):
        key, at = _varint(buf, at)
        num, wire = key >> 3, key & 7
        if num == 0:
            raise _Bad("field number 0")
        if wire == 0:
            v, at = _varint(buf, at)
        elif wire == 2:
            n, at = _varint(buf, at)
            if at + n > len(buf):
                raise _Bad("a length-delimited field runs past the proto")
            v, at = bytes(buf[at:at + n]), at + n
        elif wire == 1:
            if at + 8 > len(buf):
                raise _Bad("a truncated fixed64")
            v, at = int.from_bytes(buf[at:at + 8], "little"), at + 8
        elif wire == 5:
            if at + 4 > len(buf):
                raise _Bad("a truncated fixed32")
            v, at = int.from_bytes(buf[at:at + 4], "little"), at + 4
        else:
            raise _Bad(f"wire type {wire}")
        out.setdefault(num, []).append(v)
    return out


def _ints(fields: dict, num: int, limit: int = 1 << 20) -> list[int]:
    """A repeated integer field, packed or not; each value a non-negative int64."""
    vals: list[int] = []
    for v in fields.get(num, ()):
        if isinstance(v, bytes):
            at = 0
            while at < len(v):
                x, at = _varint(v, at)
                vals.append(x)
                if len(vals) > limit:
                    raise _Bad(f"field {num} has more than {limit} values")
        else:
            vals.append(v)
    for x in vals:
        if x >= 1 << 63:  # a negative int64
            raise _Bad(f"a negative value in field {num}")
    return vals


def _scalar(fields: dict, num: int, default: int = 0) -> int:
    v = fields.get(num)
    if not v:
        return default
    if isinstance(v[-1], bytes):
        raise _Bad(f"field {num} is not a scalar")
    return v[-1]


def op_sharding_text(data: bytes, ndim: int) -> str:
    """The HLO sharding text of the ``OpSharding`` proto ``data`` for an ``ndim``-d
    array; ValueError unless it is a consistent sharding of such an array."""
    f = _fields(data)
    kind = _scalar(f, 1)
    if _scalar(f, 11):
        raise NotImplementedError("deserializing an HloSharding with a shard group")
    if 2 in f:
        raise _Bad("an OpSharding with a tile shape")
    dims, devices = _ints(f, 3, _MAX_DIMS), _ints(f, 4, _MAX_DEVICES)
    reshape, perm = _ints(f, 9, _MAX_DIMS), _ints(f, 10, _MAX_DIMS)
    last = _ints(f, 8, _MAX_DIMS)
    rep_last = bool(_scalar(f, 6))
    plain = not (dims or devices or reshape or perm or last or rep_last or 5 in f)
    if kind == _REPLICATED:
        if not plain:
            raise _Bad("a replicated OpSharding with a tile assignment")
        return "{replicated}"
    if kind == _MANUAL:
        if not plain:
            raise _Bad("a manual OpSharding with a tile assignment")
        return "{manual}"
    if kind == _MAXIMAL:
        if len(devices) != 1 or dims or reshape or perm or last or rep_last or 5 in f:
            raise _Bad("a maximal OpSharding must name exactly one device")
        if devices[0] >= _MAX_DEVICES:
            raise _Bad(f"device {devices[0]}")
        return f"{{maximal device={devices[0]}}}"
    if kind == _TUPLE:
        raise NotImplementedError("deserializing a tuple HloSharding for an array")
    if kind != _OTHER:
        raise _Bad(f"OpSharding type {kind}")
    if 5 in f:
        raise _Bad("a tiled OpSharding with tuple shardings")
    if not dims or any(d < 1 for d in dims):
        raise _Bad(f"tile assignment dimensions {dims}")
    n = math.prod(dims)
    if n > _MAX_DEVICES:
        raise _Bad(f"a tile assignment of {n} devices")
    if any(t not in _LAST_TILE_NAMES for t in last):
        raise _Bad(f"last tile dims {last}")
    if rep_last and last:
        raise _Bad("both replicate_on_last_tile_dim and last_tile_dims")
    if len(dims) - int(rep_last) - len(last) != ndim:
        raise _Bad(f"a tile assignment of rank {len(dims)} for a {ndim}-d array")
    if devices:
        if reshape or perm:
            raise _Bad("both a device list and an iota tile assignment")
        if len(devices) != n or len(set(devices)) != n or max(devices) >= _MAX_DEVICES:
            raise _Bad(f"{len(devices)} distinct devices for a tile assignment {dims}")
        assign = ",".join(map(str, devices))
    else:
        if not reshape or any(d < 1 for d in reshape) or math.prod(reshape) != n:
            raise _Bad(f"iota reshape dims {reshape} for a tile assignment {dims}")
        if sorted(perm) != list(range(len(reshape))):
            raise _Bad(f"iota transpose {perm} of {len(reshape)} dims")
        assign = f"<=[{','.join(map(str, reshape))}]"
        if perm != sorted(perm):
            assign += f"T({','.join(map(str, perm))})"
    text = f"devices=[{','.join(map(str, dims))}]{assign}"
    if rep_last:
        text += " last_tile_dim_replicate"
    if last:
        text += " last_tile_dims={" + ", ".join(_LAST_TILE_NAMES[t] for t in last) + "}"
    return "{" + text + "}"
