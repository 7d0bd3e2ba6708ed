"""Complex-number primitives: ``complex`` (build ``x + iy`` from two real arrays) and
``conj`` (the complex conjugate, also of a real array, which it makes complex).

Both are linear, so each has a transpose beside its jvp. Cotangents follow jax's
convention (no conjugation, pairing ``Re(sum(ct * t))``): ``complex``'s cotangent
``ct`` pulls back to ``(real(ct), -imag(ct))``; ``conj``'s to ``conj(ct)`` (``real(ct)``
for a real operand).
"""

from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax._util import (broadcast_operand, broadcast_shapes_scalar, check_dtype,
                               same_dtypes, type_error)
from minijax.lax.binary import unbroadcast
from minijax.lax.unary import imag, neg, real
from minijax.transforms.ad import deflinear, is_undefined
from minijax.transforms.batching import def_elementwise_batch

_COMPLEX_OF = {dtypes.float32: dtypes.complex64, dtypes.float64: dtypes.complex128,
               dtypes.complex64: dtypes.complex64, dtypes.complex128: dtypes.complex128}


# ---- complex ----------------------------------------------------------------------------------
complex_p = Primitive("complex")


@complex_p.def_abstract_eval
def _complex_abstract(x, y):
    check_dtype("complex", x, "f")
    dt = same_dtypes("complex", [x, y])
    if dt not in _COMPLEX_OF:
        raise type_error("complex", f"expected float32 or float64 operands, got {dt.name}", x, y)
    return ShapedArray(broadcast_shapes_scalar("complex", [x, y]), _COMPLEX_OF[dt],
                       x.weak_type and y.weak_type)


@complex_p.def_lowering
def _complex_lower(ctx, x, y):
    out = ctx.avals_out[0]
    return ctx.op("stablehlo.complex", [broadcast_operand(ctx, x, out.shape),
                                        broadcast_operand(ctx, y, out.shape)], out)


def _complex_jvp(primals, tangents):
    from minijax.transforms.ad import Zero, instantiate, tangent_aval
    out = complex_p.bind(*primals)
    out_aval = get_aval(out)
    if all(type(t) is Zero for t in tangents):
        return out, Zero(tangent_aval(out_aval))
    from minijax.lax.shape import broadcast_in_dim
    parts = []
    for t in tangents:
        t = instantiate(t)
        if get_aval(t).shape != out_aval.shape:
            t = broadcast_in_dim(t, out_aval.shape, ())
        parts.append(t)
    return out, complex_p.bind(*parts)


def _complex_transpose(ct, x, y):
    return [unbroadcast(real(ct), x.aval) if is_undefined(x) else None,
            unbroadcast(neg(imag(ct)), y.aval) if is_undefined(y) else None]


complex_p.def_jvp(_complex_jvp)
complex_p.def_transpose(_complex_transpose)
def_elementwise_batch(complex_p)


def complex(x, y):  # noqa: A001
    """``x + 1j * y`` from two real arrays of the same dtype (float32 or float64)."""
    return complex_p.bind(x, y)


# ---- conj -------------------------------------------------------------------------------------
conj_p = Primitive("conj")


@conj_p.def_abstract_eval
def _conj_abstract(x, *, input_dtype):
    check_dtype("conj", x, "fc")
    if x.dtype not in _COMPLEX_OF:
        raise type_error("conj", f"expected a float32, float64 or complex operand, got "
                         f"{x.dtype.name}", x)
    return ShapedArray(x.shape, _COMPLEX_OF[x.dtype], x.weak_type)


@conj_p.def_lowering
def _conj_lower(ctx, x, *, input_dtype):
    out = ctx.avals_out[0]
    if dtypes.is_complex(x.aval.dtype):
        part = ShapedArray(x.aval.shape, np.finfo(out.dtype).dtype)
        re = ctx.op("stablehlo.real", [x], part)
        im = ctx.op("stablehlo.negate", [ctx.op("stablehlo.imag", [x], part)], part)
        return ctx.op("stablehlo.complex", [re, im], out)
    zero = ctx.constant(0, x.aval.dtype, x.aval.shape)
    return ctx.op("stablehlo.complex", [x, zero], out)


def _conj_transpose(ct, x, *, input_dtype):
    if dtypes.is_complex(input_dtype):
        return [conj(ct)]
    return [real(ct)]


deflinear(conj_p, _conj_transpose)
def_elementwise_batch(conj_p)


def conj(x):
    """The complex conjugate; a real operand becomes complex with a zero imaginary part."""
    return conj_p.bind(x, input_dtype=get_aval(x).dtype)

