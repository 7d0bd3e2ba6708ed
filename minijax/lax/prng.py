"""The Threefry-2x32 block cipher and the 64-bit counters fed to it.

``threefry2x32_p`` is the counter-based hash behind ``minijax.random``
(Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): it
encrypts the counter pair ``(x1, x2)`` under the key ``(k1, k2)`` with 20
rounds of add / rotate / xor, elementwise over uint32 arrays. The lowering
writes all 20 rounds as StableHLO ops (no loop, no callback), which XLA fuses
into one elementwise kernel.

``iota_2x32_shape_p`` gives the row-major index of each element of a shape as
a 64-bit counter split into two uint32 arrays (high and low words), whatever
the x64 flag: the counters of ``random_bits`` and ``split``.

``threefry_2x32(keypair, count)`` is the older interface over one flat
counter array (its first and second halves are the two words), used by
``fold_in``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from minijax.core.aval import ShapedArray, canonicalize_shape
from minijax.core.trace import Primitive, get_aval
from minijax.lax._util import broadcast_operand, broadcast_shapes_scalar, type_error
from minijax.lax.shape import concatenate, reshape
from minijax.lax.slicing import slice as _slice
from minijax.transforms.ad import defjvp_zero
from minijax.transforms.batching import batch_elementwise

threefry2x32_p = Primitive("threefry2x32", multiple_results=True)
iota_2x32_shape_p = Primitive("iota_2x32_shape", multiple_results=True)

_U32 = np.dtype(np.uint32)
_U64 = np.dtype(np.uint64)

# Rotation distances of the even and odd groups of four rounds, and the key-schedule
# parity constant (from the Threefry specification).
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


# ---- threefry2x32: abstract eval ----------------------------------------------------------

def _threefry2x32_abstract(k1, k2, x1, x2):
    avals = (k1, k2, x1, x2)
    for a in avals:
        if a.dtype != _U32:
            raise type_error("threefry2x32", "all operands must have dtype uint32", *avals)
    shape = broadcast_shapes_scalar("threefry2x32", avals)
    out = ShapedArray(shape, _U32)
    return out, out


# ---- threefry2x32: lowering -----------------------------------------------------------------

def _threefry2x32_lower(ctx, k1, k2, x1, x2):
    aval = ctx.avals_out[0]
    k1, k2, x1, x2 = (broadcast_operand(ctx, v, aval.shape) for v in (k1, k2, x1, x2))

    def const(c):
        return ctx.constant(c, _U32, aval.shape)

    def add(a, b):
        return ctx.op("stablehlo.add", [a, b], aval)

    def xor(a, b):
        return ctx.op("stablehlo.xor", [a, b], aval)

    def rotate_left(v, r):
        hi = ctx.op("stablehlo.shift_left", [v, const(r)], aval)
        lo = ctx.op("stablehlo.shift_right_logical", [v, const(32 - r)], aval)
        return ctx.op("stablehlo.or", [hi, lo], aval)

    ks = (k1, k2, xor(xor(k1, k2), const(_PARITY)))
    a, b = add(x1, ks[0]), add(x2, ks[1])
    # Five groups of four rounds; after group i the key schedule injects
    # ks[(i + 1) % 3] and ks[(i + 2) % 3] + (i + 1).
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            a = add(a, b)
            b = xor(a, rotate_left(b, r))
        a = add(a, ks[(i + 1) % 3])
        b = add(add(b, ks[(i + 2) % 3]), const(i + 1))
    return [a, b]


# ---- threefry2x32: batching (elementwise) ---------------------------------------------------

def _threefry2x32_batch(trace, vals, dims):
    outs, bdim = batch_elementwise(trace, vals, dims, threefry2x32_p)
    return outs, [bdim, bdim]


# ---- threefry2x32: registration -------------------------------------------------------------
# jvp: uint32 in, uint32 out, so every tangent is a symbolic zero (float0). No transpose: the
# primitive is not linear.

threefry2x32_p.def_abstract_eval(_threefry2x32_abstract)
threefry2x32_p.def_lowering(_threefry2x32_lower)
threefry2x32_p.def_batch(_threefry2x32_batch)
defjvp_zero(threefry2x32_p)


def threefry2x32(k1, k2, x1, x2):
    """Threefry-2x32 of the counters ``(x1, x2)`` under the key ``(k1, k2)``.

    All four operands are uint32 arrays of one shape (rank-0 operands broadcast);
    returns the two uint32 output words.
    """
    return tuple(threefry2x32_p.bind(k1, k2, x1, x2))


# ---- iota_2x32_shape ----------------------------------------------------------------------

def _iota_2x32_shape_abstract(*, shape):
    out = ShapedArray(shape, _U32)
    return out, out


def _iota_2x32_shape_lower(ctx, *, shape):
    out = ctx.avals_out[0]
    if not shape:
        zero = ctx.constant(0, _U32, ())
        return [zero, zero]
    # The row-major index sum(i_d * stride_d), computed in uint64 (XLA has 64-bit integers
    # whatever minijax's x64 flag says), then split into its two 32-bit words.
    wide = ShapedArray(shape, _U64)
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    counts = None
    for d, stride in enumerate(strides):
        term = ctx.op("stablehlo.iota", [], wide, {"iota_dimension": f"{d} : i64"})
        if stride != 1:
            term = ctx.op("stablehlo.multiply", [term, ctx.constant(stride, _U64, shape)], wide)
        counts = term if counts is None else ctx.op("stablehlo.add", [counts, term], wide)
    high = ctx.op("stablehlo.shift_right_logical", [counts, ctx.constant(32, _U64, shape)],
                  wide)
    return [ctx.op("stablehlo.convert", [high], out), ctx.op("stablehlo.convert", [counts], out)]


# Registration: no operands, so there is nothing to differentiate or batch.
iota_2x32_shape_p.def_abstract_eval(_iota_2x32_shape_abstract)
iota_2x32_shape_p.def_lowering(_iota_2x32_shape_lower)


def iota_2x32_shape(shape: Sequence[int]):
    """The row-major index of each element of ``shape`` as a 64-bit count, returned as
    two uint32 arrays ``(high_words, low_words)`` of that shape."""
    shape = canonicalize_shape(shape, "shape of iota_2x32_shape")
    if any(d < 0 for d in shape):
        raise ValueError(f"iota_2x32_shape: negative dimension in shape {shape}")
    if math.prod(shape) > 2 ** 64:
        raise NotImplementedError("random bits array of size exceeding 2 ** 64")
    return tuple(iota_2x32_shape_p.bind(shape=shape))


# ---- the flat-counter interface ---------------------------------------------------------------

def threefry_2x32(keypair, count):
    """Threefry-2x32 of a flat counter array under ``keypair`` (a uint32[2] key).

    The counters are ``count`` flattened (padded with one zero to an even length); its
    first half supplies the first words and its second half the second words, and the
    two output halves are joined back in the same order, so the result has
    ``count``'s shape.
    """
    kaval, caval = get_aval(keypair), get_aval(count)
    if kaval.dtype != _U32 or caval.dtype != _U32:
        raise TypeError(f"threefry_2x32 requires uint32 arguments, got "
                        f"{[kaval.dtype.name, caval.dtype.name]}")
    if kaval.shape != (2,):
        raise TypeError(f"threefry_2x32 requires a key of shape (2,), got {kaval.shape}")
    k1 = reshape(_slice(keypair, (0,), (1,)), ())
    k2 = reshape(_slice(keypair, (1,), (2,)), ())
    n = caval.size
    flat = reshape(count, (n,))
    odd = n % 2
    if odd:
        flat = concatenate([flat, np.zeros((1,), _U32)], 0)
    half = (n + odd) // 2
    y1, y2 = threefry2x32(k1, k2, _slice(flat, (0,), (half,)), _slice(flat, (half,), (2 * half,)))
    out = concatenate([y1, y2], 0)
    if odd:
        out = _slice(out, (0,), (n,))
    return reshape(out, caval.shape)


__all__ = ["iota_2x32_shape", "iota_2x32_shape_p", "threefry2x32", "threefry2x32_p",
           "threefry_2x32"]
