"""Array construction from other sources, and printing: ``logspace``/``geomspace``,
``fromfunction``, ``frombuffer``/``fromstring``, ``from_dlpack``, ``packbits``/
``unpackbits``, ``array_repr``/``array_str``.

``save``/``savez`` are NumPy's and ``load`` wraps NumPy's, as in jax (on concrete arrays
only). ``fromfile`` and ``fromiter`` exist for NumPy compatibility only: they raise
``NotImplementedError`` naming the NumPy function to use with ``jnp.asarray``.
"""

from __future__ import annotations

import operator

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.aval import canonicalize_shape
from minijax.core.trace import get_aval
from minijax.runtime import dlpack as _dlpack
from minijax.numpy._creation import asarray
from minijax.numpy._dtypes_api import result_type
from minijax.numpy._promote import ensure_array
from minijax.numpy._reductions import canonicalize_axis
from minijax.numpy._shape import arange, linspace, moveaxis, ravel, reshape
from minijax.numpy._ufuncs import log10, power, sign


def _inexact(dt) -> np.dtype:
    """jax's ``to_inexact_dtype``: 64-bit integers to float64, other ints and bool to float32
    (then canonicalized)."""
    dt = np.dtype(dt)
    if dtypes.is_inexact(dt):
        return dt
    return dtypes.canonicalize(dtypes.float64 if dt.itemsize == 8 else dtypes.float32)


def _static(x, what: str) -> int:
    try:
        return operator.index(x)
    except TypeError:
        from minijax.core.errors import ConcretizationTypeError
        raise ConcretizationTypeError(f"{what} must be a static integer, got {x!r}") from None


def _log_space_args(name: str, start, stop, num, axis, dtype):
    """The checked ``num`` and ``axis``, the result dtype, the inexact dtype computed in,
    and ``start``/``stop`` converted to it (shared by logspace and geomspace)."""
    num = _static(num, f"'num' argument of jnp.{name}")
    axis = _static(axis, f"'axis' argument of jnp.{name}")
    if dtype is None:
        dtype = _inexact(result_type(start, stop))
    else:
        dtype = dtypes.check_user_dtype(dtype, name)
    comp = _inexact(dtype)
    start = lax.convert_element_type(ensure_array(start), comp)
    stop = lax.convert_element_type(ensure_array(stop), comp)
    return num, axis, dtype, comp, start, stop


def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None,
             axis: int = 0):
    """``base ** linspace(start, stop, num)``: numbers evenly spaced on a log scale."""
    num, axis, dtype, comp, start, stop = _log_space_args("logspace", start, stop, num,
                                                          axis, dtype)
    lin = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    return lax.convert_element_type(power(base, lin), dtype)


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
    """Numbers evenly spaced on a log scale from ``start`` to ``stop`` (a geometric
    progression; negative endpoints keep their sign)."""
    num, axis, dtype, comp, start, stop = _log_space_args("geomspace", start, stop, num,
                                                          axis, dtype)
    s = sign(start)
    res = s * logspace(log10(start / s), log10(stop / s), num, endpoint=endpoint, base=10.0,
                       dtype=comp, axis=0)
    axis = canonicalize_axis(axis, get_aval(res).ndim)
    if axis:
        res = moveaxis(res, 0, axis)
    return lax.convert_element_type(res, dtype)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function(*indices)`` evaluated over a grid of ``shape`` (vectorized with ``vmap``,
    so ``function`` sees scalar indices)."""
    from minijax.api.vmap import vmap
    shape = canonicalize_shape(shape, "shape argument of jnp.fromfunction()")
    for i in range(len(shape)):
        in_axes = [0 if i == j else None for j in range(len(shape))]
        function = vmap(function, in_axes=tuple(in_axes[::-1]))
    return function(*(arange(s, dtype=dtype) for s in shape), **kwargs)


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
    """An array from the bytes of ``buffer`` (copied), interpreted as ``dtype``."""
    return asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype=float, count: int = -1, *, sep: str):
    """An array from the numbers in ``string`` separated by ``sep``."""
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from any object that supports DLPack (``__dlpack__``): a NumPy array, a
    minijax or jax array, a torch tensor... On CPU the result shares the producer's
    memory when it is row-major, 64-byte aligned and of a canonical dtype
    (``copy=None``); ``copy=True`` always copies, ``copy=False`` raises ``ValueError``
    where a copy is needed. ``device`` moves the result there."""
    return _dlpack.from_dlpack(x, device, copy)


def _not_io(name: str, alternative: str):
    def f(*args, **kwargs):
        raise NotImplementedError(
            f"jnp.{name}() is not implemented: minijax arrays cannot be read from or written "
            f"to files inside minijax (it would not be pure under jit). Use {alternative} "
            f"instead.")
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Not implemented (file I/O): use {alternative}."
    return f


# As jax's: saving is NumPy's own (minijax arrays convert to NumPy arrays); loading wraps
# NumPy's, so a ``.npy`` file comes back as an Array (bfloat16 restored from its void16).
save = np.save
savez = np.savez


def load(file, *args, **kwargs):
    """``np.load(file, ...)``, a ``.npy`` array returned as a minijax Array (and bfloat16
    data, which NumPy stores as void16, restored); ``.npz`` files give NumPy arrays."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == "V2":
            out = out.view(dtypes.bfloat16)
        try:
            out = asarray(out)
        except (TypeError, AssertionError):  # a dtype minijax has no arrays of
            pass
    return out


fromfile = _not_io("fromfile", "jnp.asarray(np.fromfile(...))")


def fromiter(*args, **kwargs):
    """Not implemented: iterating a Python iterable is a side effect. Use
    ``jnp.asarray(np.fromiter(...))``."""
    raise NotImplementedError(
        "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for use "
        "with jit and other transformations. Consider using jnp.asarray(np.fromiter(...)) "
        "instead.")


# ---- bits ---------------------------------------------------------------------------------------

def packbits(a, axis: int | None = None, bitorder: str = "big"):
    """The truth values of ``a`` packed 8 to a ``uint8`` along ``axis`` (flattened if None);
    the last byte is padded with zeros."""
    if isinstance(a, (list, tuple)):
        raise TypeError(f"packbits requires ndarray or scalar arguments, got {type(a).__name__}")
    arr = ensure_array(a)
    dt = get_aval(arr).dtype
    if not (dtypes.is_int(dt) or dt == dtypes.bool_):
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    arr = lax.convert_element_type(lax.ne(arr, np.zeros((), dt)), dtypes.uint8)
    bits = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        bits = bits[::-1]
    if axis is None:
        arr, axis = ravel(arr), 0
    arr = moveaxis(arr, axis, -1)
    shape = get_aval(arr).shape
    rem = shape[-1] % 8
    if rem:
        arr = lax.pad(arr, np.uint8(0), [(0, 0, 0)] * (len(shape) - 1) + [(0, 8 - rem, 0)])
        shape = get_aval(arr).shape
    arr = reshape(arr, shape[:-1] + (shape[-1] // 8, 8))
    shifted = lax.shift_left(arr, lax.broadcast_in_dim(bits, get_aval(arr).shape,
                                                       (len(shape),)))
    packed = lax.convert_element_type(lax.reduce_sum(lax.convert_element_type(
        shifted, dtypes.uint32), (len(shape),)), dtypes.uint8)
    return moveaxis(packed, -1, axis)


def unpackbits(a, axis: int | None = None, count: int | None = None, bitorder: str = "big"):
    """The bits of the ``uint8`` array ``a`` as 0/1 ``uint8`` values along ``axis``
    (flattened if None), optionally only the first ``count`` (or padded to it)."""
    arr = ensure_array(a)
    if get_aval(arr).dtype != dtypes.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    bits = (np.uint8(1) << np.arange(8, dtype=np.uint8)).astype(np.uint8)
    if bitorder == "big":
        bits = bits[::-1].copy()
    if axis is None:
        arr, axis = ravel(arr), 0
    arr = moveaxis(arr, axis, -1)
    shape = get_aval(arr).shape
    wide = shape + (8,)
    masked = lax.bitwise_and(lax.broadcast_in_dim(arr, wide, tuple(range(len(shape)))),
                             lax.broadcast_in_dim(bits, wide, (len(shape),)))
    unpacked = lax.convert_element_type(lax.gt(masked, np.zeros((), dtypes.uint8)),
                                        dtypes.uint8)
    unpacked = reshape(unpacked, shape[:-1] + (shape[-1] * 8,))
    if count is not None:
        n = get_aval(unpacked).shape[-1]
        if count > n:
            unpacked = lax.pad(unpacked, np.uint8(0),
                               [(0, 0, 0)] * (len(shape) - 1) + [(0, count - n, 0)])
        else:
            unpacked = unpacked[..., :count]
    return moveaxis(unpacked, -1, axis)


# ---- printing -----------------------------------------------------------------------------------

# NumPy's own, as in jax: they format any array-like (minijax arrays convert on the host).
array_repr = np.array_repr
array_str = np.array_str
