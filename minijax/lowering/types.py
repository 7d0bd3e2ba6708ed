"""MLIR type and attribute spelling for avals and Python values."""

from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.lru import MemoCache
from minijax.core.shape_poly import DimExpr

_ELEM = {
    dtypes.bool_: "i1", dtypes.int8: "i8", dtypes.int16: "i16", dtypes.int32: "i32",
    dtypes.int64: "i64", dtypes.uint8: "ui8", dtypes.uint16: "ui16", dtypes.uint32: "ui32",
    dtypes.uint64: "ui64", dtypes.bfloat16: "bf16", dtypes.float16: "f16",
    dtypes.float32: "f32", dtypes.float64: "f64", dtypes.complex64: "complex<f32>",
    dtypes.complex128: "complex<f64>",
    dtypes.float0: "i1",  # tangents of integers: no data; lowered as bool zeros (as jax)
}

_type_cache = MemoCache("minijax_memo_cache_size")  # (shape, dtype) -> tensor type


def elem_type(dtype) -> str:
    return _ELEM[np.dtype(dtype)]


def tensor_type(aval: ShapedArray) -> str:
    """``tensor<3x4xf32>`` for ``f32[3,4]``."""
    key = (aval.shape, aval.dtype)
    t = _type_cache.get(key)
    if t is None:
        dims = "".join("?x" if type(d) is DimExpr else f"{d}x" for d in aval.shape)
        t = _type_cache[key] = f"tensor<{dims}{_ELEM[aval.dtype]}>"
    return t


def type_of(aval) -> str:
    """The MLIR type of a value: a ShapedArray's tensor type; a string is its own type."""
    return tensor_type(aval) if isinstance(aval, ShapedArray) else aval


def i64_array(xs) -> str:
    """``array<i64: 0, 1>`` (a DenseI64ArrayAttr)."""
    if type(xs) is tuple:  # made once per tuple
        text = _i64_arrays.get(xs)
        if text is None:
            text = _i64_arrays[xs] = _i64_array(xs)
        return text
    return _i64_array(xs)


def _i64_array(xs) -> str:
    xs = list(xs)
    return f"array<i64: {', '.join([str(int(x)) for x in xs])}>" if xs else "array<i64>"


_i64_arrays = MemoCache("minijax_memo_cache_size")


def bool_array(xs) -> str:
    xs = list(xs)
    return f"array<i1: {', '.join('true' if x else 'false' for x in xs)}>" if xs else "array<i1>"


def dense_i64(xs, shape=None) -> str:
    """``dense<[0, 1]> : tensor<2xi64>``."""
    arr = np.asarray(xs, dtype=np.int64)
    if shape is not None:
        arr = arr.reshape(shape)
    dims = "".join(f"{d}x" for d in arr.shape)
    return f"dense<{_nested(arr.tolist())}> : tensor<{dims}i64>"


def _nested(x) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_nested(y) for y in x) + "]"
    return str(x)


def dense_elements(value: np.ndarray, aval: ShapedArray) -> str:
    """A ``dense<...> : tensor<...>`` attribute holding ``value`` (cast to aval's dtype)."""
    ttype = tensor_type(aval)
    if aval.dtype == dtypes.float0:
        return f"dense<false> : {ttype}"
    arr = np.asarray(value)
    if arr.dtype != aval.dtype:
        arr = arr.astype(aval.dtype)
    if arr.size == 1 or (arr.size and _is_splat(arr)):
        scalar = arr.reshape(-1)[0]
        return f"dense<{_scalar_literal(scalar, aval.dtype)}> : {ttype}"
    if arr.size == 0:
        return f"dense<> : {ttype}"
    if aval.dtype == dtypes.bool_:
        data = arr.astype(np.uint8).tobytes()
    else:
        data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
    return f'dense<"0x{data.hex().upper()}"> : {ttype}'


def _is_splat(arr: np.ndarray) -> bool:
    flat = np.ascontiguousarray(arr).reshape(-1)
    if arr.dtype.kind in "fc":
        return bool(np.all(flat.view(np.uint8).reshape(flat.size, -1) ==
                           flat[:1].view(np.uint8).reshape(1, -1)))
    return bool(np.all(flat == flat[0]))


def scalar_literal(x, dtype: np.dtype) -> str:
    """The literal of one element of ``dtype`` (``1.5``, ``3``, ``true``; non-finite floats in
    hex), as in a dense attribute or after ``value : type`` in a scalar attribute."""
    return _scalar_literal(x, np.dtype(dtype))


def _scalar_literal(x, dtype: np.dtype) -> str:
    if dtype == dtypes.bool_:
        return "true" if bool(x) else "false"
    if dtype.kind in "iu":
        return str(int(x))
    if dtype.kind == "c":
        return f"({_float_literal(x.real, np.dtype(x.real.dtype))}, " \
               f"{_float_literal(x.imag, np.dtype(x.imag.dtype))})"
    return _float_literal(x, dtype)


def _float_literal(x, dtype: np.dtype) -> str:
    f = float(x)
    if np.isfinite(f):
        s = repr(f)
        if "e" in s and "." not in s:
            mant, exp = s.split("e")
            s = f"{mant}.0e{exp}"
        return s
    # Non-finite values: spell the bit pattern in hex.
    bits = np.asarray(x, dtype=dtype).view(f"u{dtype.itemsize}").item()
    return f"0x{bits:0{dtype.itemsize * 2}X}"


_string_cache = MemoCache("minijax_memo_cache_size")


def string_attr(s: str) -> str:
    """An MLIR string literal with escapes."""
    out = _string_cache.get(s)
    if out is None:
        out = _string_cache[s] = _escape(s)
    return out


def _escape(s: str) -> str:
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    out = []
    for ch in s:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):02X}")
        elif ord(ch) > 0x7F:
            out.extend(f"\\{b:02X}" for b in ch.encode("utf-8"))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
