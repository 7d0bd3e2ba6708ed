"""minijax.numpy.fft: discrete Fourier transforms, with jax.numpy.fft's semantics.

Every transform moves the axes it works on to the end, crops or zero-pads them to
the requested lengths (``n`` / ``s``), applies ``lax.fft`` and moves them back.
XLA transforms at most three dimensions at a time, so more are done in blocks of
at most three. Integer and boolean inputs compute in complex64 (float32 for the
real transforms), as do float16 and bfloat16; float64 needs x64 and gives
complex128.

``norm`` scales the result: ``"backward"`` (the default: the inverse transforms
divide by the size), ``"ortho"`` (both directions divide by its square root) or
``"forward"`` (the forward transforms divide by the size).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.lax.fft import FftType, _conj
from minijax.lax.fft import fft as _lax_fft
from minijax.lax.shape import canonicalize_axis
from minijax.numpy._creation import asarray
from minijax.numpy._promote import check_args, ensure_array
from minijax.runtime.transfer import device_put
from minijax.stages.eager import fused  # one jitted program when called eagerly

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
           "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq",
           "rfftn"]

_NORMS = (None, "backward", "ortho", "forward")


# ---- the shared core ----------------------------------------------------------------------

def _array(fname: str, a):
    """``a`` as a minijax array (TypeError for lists, as jax)."""
    return ensure_array(check_args(f"minijax.numpy.fft.{fname}", (a,))[0])


def _move(x, src: Sequence[int], dst: Sequence[int]):
    """Move axes ``src`` of ``x`` to positions ``dst`` (distinct, non-negative)."""
    ndim = get_aval(x).ndim
    perm = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(x, perm)


def _resize_trailing(x, sizes: Sequence[int]):
    """Crop or zero-pad the trailing ``len(sizes)`` axes of ``x`` to ``sizes``."""
    aval = get_aval(x)
    shape = list(aval.shape)
    target = shape[:len(shape) - len(sizes)] + list(sizes)
    if shape == target:
        return x
    x = lax.slice(x, [0] * aval.ndim, [min(a, b) for a, b in zip(shape, target)])
    padding = [(0, t - min(a, t), 0) for a, t in zip(shape, target)]
    if any(hi for _, hi, _ in padding):
        x = lax.pad(x, np.zeros((), aval.dtype), padding)
    return x


def _transform(x, fft_type: FftType, lengths: tuple[int, ...]):
    """``lax.fft`` over the trailing ``len(lengths)`` axes, in blocks of at most three
    (the most XLA transforms at once). The forward transforms do the last block first
    (the real one, for RFFT) and then the complex FFT of the leading axes; the inverse
    transforms run the other way around, ending with the real IRFFT."""
    if len(lengths) <= 3:
        return _lax_fft(x, fft_type, lengths)
    block = 2 if len(lengths) == 4 else 3  # 4 axes as 2 + 2 rather than 3 + 1
    ndim = get_aval(x).ndim
    first = ndim - len(lengths)
    lead = tuple(range(first, ndim - block))  # the fft axes before the last block
    at_end = tuple(range(first + block, ndim))
    inner, outer = lengths[-block:], lengths[:-block]
    if fft_type in (FftType.FFT, FftType.RFFT):
        x = _lax_fft(x, fft_type, inner)
        x = _move(x, lead, at_end)
        x = _transform(x, FftType.FFT, outer)
        return _move(x, at_end, lead)
    x = _move(x, lead, at_end)
    x = _transform(x, FftType.IFFT, outer)
    x = _move(x, at_end, lead)
    return _lax_fft(x, fft_type, inner)


def _norm_factor(name: str, norm: str | None, size: int) -> float | None:
    """The scale ``norm`` asks for on top of the transform's own (None: nothing to do)."""
    if norm is None or norm == "backward":
        return None
    inverse = name.startswith("i")
    if norm == "ortho":
        root = math.sqrt(size)
        return root if inverse else (1 / root if root else math.inf)
    return float(size) if inverse else (1 / size if size else math.inf)


def _check_norm(norm) -> None:
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or '
                         f'"forward".')


def _fft_core(name: str, fft_type: FftType, a, s, axes, norm):
    """The n-dimensional transform ``fft_type`` of ``a`` over ``axes`` at sizes ``s``."""
    full = f"minijax.numpy.fft.{name}"
    _check_norm(norm)
    x = _array(name, a)
    ndim = get_aval(x).ndim
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if any(n <= 0 for n in s):
            raise ValueError("Shape should be positive.")
        if axes is not None and len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
        if axes is None and len(s) > ndim:
            raise ValueError(f"{full}: s={s} has more entries than the input, of shape "
                             f"{get_aval(x).shape}, has axes")
    moved = axes is not None
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    axes = tuple(canonicalize_axis(operator.index(ax), ndim) for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{full} does not support repeated axes. Got axes {axes}.")
    trailing = tuple(range(ndim - len(axes), ndim))
    if moved:
        x = _move(x, axes, trailing)
    shape = get_aval(x).shape
    if s is None:
        s = tuple(shape[ax] for ax in trailing)
        if fft_type == FftType.IRFFT and s:
            s = s[:-1] + (max(0, 2 * (s[-1] - 1)),)
    else:
        in_sizes = s if fft_type != FftType.IRFFT else s[:-1] + (s[-1] // 2 + 1,)
        x = _resize_trailing(x, in_sizes)
    out = _transform(x, fft_type, s)
    factor = _norm_factor(name, norm, math.prod(s))
    if factor is not None:
        out = lax.mul(out, np.asarray(factor, get_aval(out).dtype))
    if moved:
        out = _move(out, trailing, axes)
    return out


def _axis_1d(name: str, axis) -> list[int] | None:
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"minijax.numpy.fft.{name} does not support multiple axes. Please "
                         f"use minijax.numpy.fft.{name}n. Got axis = {axis!r}.")
    return None if axis is None else [axis]


def _fft_core_1d(name: str, fft_type: FftType, a, n, axis, norm):
    return _fft_core(name, fft_type, a, None if n is None else [n], _axis_1d(name, axis), norm)


def _axes_2d(name: str, axes):
    if len(axes) != 2:
        raise ValueError(f"minijax.numpy.fft.{name} only supports 2 axes. Got axes = "
                         f"{axes!r}.")
    return axes


# ---- one-dimensional transforms -------------------------------------------------------------

@fused(max_args=1)
def fft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """One-dimensional discrete Fourier transform along ``axis``.

    Parameters
    ----------
    a : array_like
        Input; real inputs are converted to complex.
    n : int, optional
        Length of the transformed axis: the input is cropped or zero-padded to it.
    axis : int, default -1
        The axis to transform (None: all of them, as ``fftn``).
    norm : {None, "backward", "ortho", "forward"}, optional
        Normalization (see the module docstring).

    Returns
    -------
    Array
        Complex, of ``a``'s shape with ``axis`` of length ``n``.

    Examples
    --------
    >>> jnp.fft.fft(jnp.array([1.0, 2.0, 3.0, 4.0]))   # doctest: +SKIP
    Array([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex64)
    """
    return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


@fused(max_args=1)
def ifft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """One-dimensional inverse discrete Fourier transform along ``axis`` (see ``fft``)."""
    return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


@fused(max_args=1)
def rfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """One-dimensional discrete Fourier transform of a real input along ``axis``.

    Only the ``n // 2 + 1`` non-negative frequencies are returned (the others are their
    complex conjugates). Complex inputs are a ValueError. Other parameters as ``fft``.
    """
    return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


@fused(max_args=1)
def irfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Inverse of ``rfft``: a real signal of length ``n`` (default ``2 * (m - 1)`` for
    ``m`` input entries along ``axis``) from its non-negative frequencies."""
    return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


@fused(max_args=1)
def hfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Transform of a signal with Hermitian symmetry, given by its first half: a real
    spectrum of length ``n`` (default ``2 * (m - 1)``)."""
    x = _conj_if_complex(_array("hfft", a))
    _axis_1d("hfft", axis)
    if n is None:
        nn = 2 * (get_aval(x).shape[axis] - 1)
    else:
        nn = operator.index(n)
    out = _fft_core_1d("hfft", FftType.IRFFT, x, n, axis, norm)
    return lax.mul(out, np.asarray(nn, get_aval(out).dtype))


@fused(max_args=1)
def ihfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
    """Inverse of ``hfft``: the first ``n // 2 + 1`` entries of the Hermitian spectrum of
    a real signal (complex inputs are a ValueError)."""
    _axis_1d("ihfft", axis)
    x = asarray(a)
    nn = get_aval(x).shape[axis] if n is None else operator.index(n)
    out = _fft_core_1d("ihfft", FftType.RFFT, x, n, axis, norm)
    scale = 1 / nn if nn else math.inf
    return lax.mul(_conj(out), np.asarray(scale, get_aval(out).dtype))


def _conj_if_complex(x):
    return _conj(x) if dtypes.is_complex(get_aval(x).dtype) else x


# ---- two- and n-dimensional transforms -------------------------------------------------------

@fused(max_args=1)
def fftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None):
    """N-dimensional discrete Fourier transform.

    Parameters
    ----------
    a : array_like
        Input; real inputs are converted to complex.
    s : sequence of int, optional
        Lengths of the transformed axes (crop or zero-pad).
    axes : sequence of int, optional
        The axes to transform; default the last ``len(s)`` axes, or all of them.
    norm : {None, "backward", "ortho", "forward"}, optional
        Normalization (see the module docstring).
    """
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


@fused(max_args=1)
def ifftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
    """N-dimensional inverse discrete Fourier transform (parameters as ``fftn``)."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


@fused(max_args=1)
def rfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
    """N-dimensional discrete Fourier transform of a real input; the last axis keeps its
    ``s[-1] // 2 + 1`` non-negative frequencies (parameters as ``fftn``)."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


@fused(max_args=1)
def irfftn(a, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None):
    """Inverse of ``rfftn``: a real array whose transformed axes have lengths ``s``
    (default: those of the input, the last one ``2 * (m - 1)``)."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


@fused(max_args=1)
def fft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None):
    """Two-dimensional discrete Fourier transform (``fftn`` over two axes)."""
    return _fft_core("fft2", FftType.FFT, a, s, _axes_2d("fft2", axes), norm)


@fused(max_args=1)
def ifft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None):
    """Two-dimensional inverse discrete Fourier transform (``ifftn`` over two axes)."""
    return _fft_core("ifft2", FftType.IFFT, a, s, _axes_2d("ifft2", axes), norm)


@fused(max_args=1)
def rfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None):
    """Two-dimensional discrete Fourier transform of a real input (``rfftn``)."""
    return _fft_core("rfft2", FftType.RFFT, a, s, _axes_2d("rfft2", axes), norm)


@fused(max_args=1)
def irfft2(a, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None):
    """Inverse of ``rfft2`` (``irfftn`` over two axes)."""
    return _fft_core("irfft2", FftType.IRFFT, a, s, _axes_2d("irfft2", axes), norm)


# ---- frequencies and shifts ---------------------------------------------------------------

def _freq_args(name: str, n, d, dtype):
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of minijax.numpy.fft.{name} only takes an int. "
                         f"Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of minijax.numpy.fft.{name} only takes a single "
                         f"value. Got d = {list(d)}.")
    n = operator.index(n)
    return n, dtypes.canonicalize(dtype if dtype is not None else dtypes.default_float())


def _divide_by(k: np.ndarray, d, n: int, dtype: np.dtype):
    """``k / (d * n)`` computed in ``dtype`` (``d`` may be a traced array)."""
    denom = asarray(d * n, dtype=dtype)
    return lax.div(asarray(k.astype(dtype)), denom)


def _place(x, device):
    return x if device is None else device_put(x, device)


def fftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``fft`` of length ``n`` with sample spacing ``d``:
    ``[0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (d * n)``.

    Parameters
    ----------
    n : int
        The transform length.
    d : scalar, default 1.0
        The sample spacing (may be a traced value).
    dtype : dtype, optional
        The result's dtype (default: the default float); integer dtypes truncate.
    device : Device, optional
        Where to put the result.
    """
    n, out_dtype = _freq_args("fftfreq", n, d, dtype)
    work = out_dtype if dtypes.is_float(out_dtype) else (
        np.finfo(out_dtype).dtype if dtypes.is_complex(out_dtype) else
        dtypes.float64 if out_dtype.itemsize == 8 else dtypes.float32)
    k = np.array([(i + n // 2) % n - n // 2 for i in range(n)], np.float64)
    out = lax.convert_element_type(_divide_by(k, d, n, work), out_dtype)
    return _place(out, device)


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``rfft`` of length ``n`` with sample spacing ``d``:
    ``[0, 1, ..., n // 2] / (d * n)``. Integer dtypes give the default float (a true
    division). Parameters as ``fftfreq``."""
    n, dtype = _freq_args("rfftfreq", n, d, dtype)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float()
    k = np.arange(n // 2 + 1, dtype=np.float64)
    return _place(_divide_by(k, d, n, dtype), device)


def _roll(x, shifts: Sequence[int], axes: Sequence[int]):
    """``x`` rolled by ``shifts[i]`` along ``axes[i]`` (static shifts)."""
    for shift, ax in zip(shifts, axes):
        size = get_aval(x).shape[ax]
        shift = shift % size if size else 0
        if shift:
            tail = lax.slice_in_dim(x, size - shift, size, axis=ax)
            head = lax.slice_in_dim(x, 0, size - shift, axis=ax)
            x = lax.concatenate([tail, head], ax)
    return x


def _shift(name: str, x, axes, sign: int):
    x = _array(name, x)
    shape = get_aval(x).shape
    ndim = len(shape)
    if axes is None:
        axes = tuple(range(ndim))
    elif isinstance(axes, (list, tuple)):
        axes = tuple(operator.index(a) for a in axes)
    else:
        axes = (operator.index(axes),)
    for ax in axes:
        if not -ndim <= ax < ndim:
            raise IndexError(f"minijax.numpy.fft.{name}: axis {ax} is out of bounds for an "
                             f"array of dimension {ndim}")
    axes = tuple(ax % ndim for ax in axes)
    return _roll(x, [sign * (shape[ax] // 2) for ax in axes], axes)


@fused(max_args=1)
def fftshift(x, axes: int | Sequence[int] | None = None):
    """Move the zero frequency to the center: roll each of ``axes`` (default all) by half
    its length, so ``fftfreq`` order becomes increasing."""
    return _shift("fftshift", x, axes, 1)


@fused(max_args=1)
def ifftshift(x, axes: int | Sequence[int] | None = None):
    """The inverse of ``fftshift`` (they differ for odd lengths)."""
    return _shift("ifftshift", x, axes, -1)
