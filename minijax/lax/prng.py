"""The Threefry-2x32 block cipher and the 64-bit counters fed to it.

``threefry2x32_p`` is the counter-based hash behind ``minijax.random``
(Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): it
encrypts the counter pair ``(x1, x2)`` under the key ``(k1, k2)`` with 20
rounds of add / rotate / xor, elementwise over uint32 arrays. The lowering is a
loop over the five groups of four rounds (as jax's on CPU): the unrolled 20 rounds
compiled several times slower in programs that draw many random arrays.

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
from minijax.lax._util import broadcast_shapes_scalar, lower_fun, type_error
from minijax.lax.binary import (add, bitwise_or, bitwise_xor, eq, rem, shift_left,
                                shift_right_logical, sub)
from minijax.lax.control_flow import fori_loop
from minijax.lax.convert import convert_element_type
from minijax.lax.select import select
from minijax.lax.shape import broadcast_in_dim, concatenate, reshape
from minijax.lax.slicing import slice as _slice
from minijax.transforms.ad import defjvp_zero
from minijax.transforms.batching import batch_elementwise

threefry2x32_p = Primitive("threefry2x32", multiple_results=True)

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

def _threefry2x32_rolled(k1, k2, x1, x2):
    """The 20 rounds as a loop over the five groups of four (as jax lowers it on CPU): a
    fraction of the unrolled program for XLA to compile, the same bits. The carry holds
    the counters and the key schedule, rotated one step per group; the group's rotation
    distances are picked by its parity."""
    shape = broadcast_shapes_scalar("threefry2x32", [get_aval(v) for v in (k1, k2, x1, x2)])
    # Only the counters take the full shape; the keys (usually scalars) stay as they are, so
    # the loop does not carry and rotate three more full-size arrays.
    x1, x2 = (broadcast_in_dim(v, shape, ()) if get_aval(v).shape != shape else v
              for v in (x1, x2))
    if get_aval(k1).shape != get_aval(k2).shape:  # one scalar, one full: the schedule rotates
        k1, k2 = (broadcast_in_dim(k, shape, ()) if get_aval(k).shape != shape else k
                  for k in (k1, k2))
    k3 = bitwise_xor(bitwise_xor(k1, k2), _U32.type(_PARITY))

    def group(i, carry):
        a, b, k_next, k_after, k_prev = carry
        i = convert_element_type(i, _U32)
        even = eq(rem(i, _U32.type(2)), _U32.type(0))
        for r_even, r_odd in zip(*_ROTATIONS):
            r = select(even, _U32.type(r_even), _U32.type(r_odd))
            a = add(a, b)
            b = bitwise_xor(a, bitwise_or(shift_left(b, r),
                                          shift_right_logical(b, sub(_U32.type(32), r))))
        a = add(a, k_next)
        b = add(add(b, k_after), add(i, _U32.type(1)))
        # group i injects ks[(i + 1) % 3] and ks[(i + 2) % 3] + (i + 1)
        return a, b, k_after, k_prev, k_next

    a, b, *_ = fori_loop(0, 5, group, (add(x1, k1), add(x2, k2), k2, k3, k1))
    return [a, b]


def _threefry2x32_lower(ctx, k1, k2, x1, x2):
    return lower_fun(ctx, _threefry2x32_rolled, k1, k2, x1, x2)


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
iota_2x32_shape_p = Primitive("iota_2x32_shape", multiple_results=True)
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
