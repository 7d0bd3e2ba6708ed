"""minijax.scipy.signal: convolution, detrending and spectral analysis, mirroring
``jax.scipy.signal``.

``convolve``/``correlate`` (any rank) and the 2-D variants lower to one
``lax.conv_general_dilated``; ``fftconvolve`` multiplies spectra from
``minijax.numpy.fft``. ``stft``/``istft``/``csd``/``welch`` cut the signal into
windowed segments with one gather and transform them together.

Example::

    >>> from minijax.scipy import signal
    >>> import minijax.numpy as jnp
    >>> signal.convolve(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]))
    Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.numpy._reductions import _check_arraylike, canonicalize_axis
from minijax.numpy.linalg._common import promote_inexact_args

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
           "fftconvolve", "istft", "stft", "welch"]

_MODES = ("full", "same", "valid")


def _shape(x) -> tuple:
    return get_aval(x).shape


def _larger_first(name: str, in1, in2, message: str):
    """``(big, small, swapped)``: one input must be at least as large as the other in
    every dimension."""
    s1, s2 = _shape(in1), _shape(in2)
    if all(a >= b for a, b in zip(s1, s2)):
        return in1, in2, False
    if all(a <= b for a, b in zip(s1, s2)):
        return in2, in1, True
    raise ValueError(message)


# ---- direct convolution --------------------------------------------------------------------

def _convolve_nd(in1, in2, mode: str, precision):
    """Direct n-D convolution: a correlation (XLA's convolution) with the flipped smaller
    operand, padded so the output is the ``mode`` window of the full result. ``'same'``
    has ``in1``'s shape, centred as in scipy."""
    if mode not in _MODES:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 must have the same number of dimensions")
    if in1.size == 0 or in2.size == 0:
        raise ValueError(f"zero-size arrays not supported in convolutions, got shapes "
                         f"{_shape(in1)} and {_shape(in2)}.")
    n1, n2 = _shape(in1), _shape(in2)
    big, small, _ = _larger_first("convolve", in1, in2,
                                  "One input must be smaller than the other in every dimension.")
    ks = _shape(small)
    padding = []
    for b, k, a1, a2 in zip(_shape(big), ks, n1, n2):
        if mode == "full":
            padding.append((k - 1, k - 1))
        elif mode == "valid":
            padding.append((0, 0))
        else:
            # Window [start, start + a1) of the full result (full index j <-> padding k-1).
            start = (a2 - 1) // 2
            lo = k - 1 - start
            padding.append((lo, a1 - b + k - 1 - lo))
    kernel = jnp.flip(small)
    out = lax.conv_general_dilated(big[None, None], kernel[None, None], (1,) * big.ndim,
                                   padding, precision=precision)
    return out[0, 0]


def convolve(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """N-dimensional convolution of ``in1`` and ``in2`` (same rank). ``mode``:
    ``'full'``, ``'same'`` (``in1``'s shape) or ``'valid'``; ``method``: ``'auto'`` and
    ``'direct'`` (XLA convolution) or ``'fft'`` (``fftconvolve``)."""
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method not in ("direct", "auto"):
        raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")
    in1, in2 = promote_inexact_args("convolve", in1, in2)
    return _convolve_nd(in1, in2, mode, precision)


def correlate(in1, in2, mode: str = "full", method: str = "auto", precision=None):
    """N-dimensional cross-correlation: ``convolve(in1, flip(conj(in2)))``."""
    _check_arraylike("correlate", in2)
    return convolve(in1, jnp.flip(jnp.conj(jnp.asarray(in2))), mode, method=method,
                    precision=precision)


def _check_2d(name: str, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")
    return promote_inexact_args(name, in1, in2)


def convolve2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue: float = 0,
               precision=None):
    """2-D convolution (``boundary='fill'`` with ``fillvalue=0`` only, as in jax)."""
    in1, in2 = _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd(in1, in2, mode, precision)


def correlate2d(in1, in2, mode: str = "full", boundary: str = "fill", fillvalue: float = 0,
                precision=None):
    """2-D cross-correlation, with scipy's output alignment for each ``mode``
    (``boundary='fill'`` with ``fillvalue=0`` only)."""
    in1, in2 = _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    s1, s2 = _shape(in1), _shape(in2)
    in1_smaller = all(a <= b for a, b in zip(s1, s2)) and s1 != s2

    def flipped(mode):
        # correlate(a, b) = flip(convolve(flip(a), conj(b))): keeps scipy's centring.
        return jnp.flip(_convolve_nd(jnp.flip(in1), jnp.conj(in2), mode, precision))

    if mode == "same" or not in1_smaller:
        return flipped(mode)
    out = _convolve_nd(jnp.flip(in2), jnp.conj(in1), mode, precision)
    # Smaller first input: scipy correlates the other way round ('valid'), or returns
    # the conjugate of that ('full', equal to flipped('full') up to rounding).
    return out if mode == "valid" else jnp.conj(out)


# ---- FFT convolution ----------------------------------------------------------------------

def _fftconvolve(in1, in2, mode: str, axes: tuple[int, ...]):
    s1, s2 = _shape(in1), _shape(in2)
    full = {a: s1[a] + s2[a] - 1 for a in axes}
    if mode == "valid":
        sub1 = [s1[a] for a in axes]
        sub2 = [s2[a] for a in axes]
        if not (all(a >= b for a, b in zip(sub1, sub2)) or all(a <= b for a, b in zip(sub1, sub2))):
            raise ValueError("For 'valid' mode, One input must be at least as large as the other "
                             "in every dimension.")
        if all(a <= b for a, b in zip(sub1, sub2)):
            in1, in2, s1, s2 = in2, in1, s2, s1
    if all(s1[a] == 1 or s2[a] == 1 for a in axes):
        conv = in1 * in2
    else:
        size = [full[a] for a in axes]
        if dtypes.is_complex(in1.dtype):
            spec = jnp.fft.fftn(in1, size, axes) * jnp.fft.fftn(in2, size, axes)
            conv = jnp.fft.ifftn(spec, size, axes)
        else:
            spec = jnp.fft.rfftn(in1, size, axes) * jnp.fft.rfftn(in2, size, axes)
            conv = jnp.fft.irfftn(spec, size, axes)
    out_shape = list(_shape(conv))
    starts = [0] * len(out_shape)
    for a in axes:
        n = {"full": full[a], "same": s1[a], "valid": s1[a] - s2[a] + 1}[mode]
        starts[a], out_shape[a] = (full[a] - n) // 2, n
    return lax.slice(conv, tuple(starts), tuple(s + n for s, n in zip(starts, out_shape)))


def fftconvolve(in1, in2, mode: str = "full", axes: Sequence[int] | None = None):
    """Convolution through the FFT over ``axes`` (default all); the other axes must have
    equal sizes and are treated elementwise. Modes as in ``convolve``."""
    in1, in2 = promote_inexact_args("fftconvolve", in1, in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise ValueError("mode must be one of ['same', 'full', 'valid']")
    if axes is None:
        axes = tuple(range(in1.ndim))
    else:
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        axes = tuple(sorted(canonicalize_axis(operator.index(a), in1.ndim) for a in axes))
        others = [i for i in range(in1.ndim) if i not in axes]
        if any(_shape(in1)[i] != _shape(in2)[i] for i in others):
            raise ValueError(f"mapped axes must have same shape; got in1.shape={_shape(in1)} "
                             f"in2.shape={_shape(in2)} axes={axes}")
    return _fftconvolve(in1, in2, mode, axes)


# ---- detrend ----------------------------------------------------------------------------------

def _remove_line(x):
    """``x`` ``[n, m]`` minus its least-squares line along axis 0."""
    n = _shape(x)[0]
    t = np.arange(n, dtype=np.float64) - (n - 1) / 2
    denom = float(np.sum(t * t))
    mean = jnp.mean(x, axis=0, keepdims=True)
    if denom == 0:
        return x - mean
    t = jnp.asarray(t.astype(dtypes.finfo(x.dtype).dtype))[:, None]
    slope = jnp.sum(t * x, axis=0, keepdims=True) / denom
    return x - mean - t * slope


def detrend(data, axis: int = -1, type: str = "linear", bp=0,  # noqa: A002 (scipy's name)
            overwrite_data=None):
    """Remove the mean (``type='constant'``) or a least-squares line (``'linear'``, piecewise
    between the breakpoints ``bp``) along ``axis``."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    data, = promote_inexact_args("detrend", data)
    if type == "constant":
        return data - jnp.mean(data, axis=axis, keepdims=True)
    axis = canonicalize_axis(axis, data.ndim)
    n = _shape(data)[axis]
    bps = np.sort(np.unique(np.r_[0, bp, n]))
    if bps[0] < 0 or bps[-1] > n:
        raise ValueError("Breakpoints must be non-negative and less than length of data along "
                         "given axis.")
    moved = jnp.moveaxis(data, axis, 0)
    flat = moved.reshape((n, -1))
    pieces = [_remove_line(flat[lo:hi]) for lo, hi in zip(bps[:-1], bps[1:])]
    out = jnp.concatenate(pieces, axis=0).reshape(_shape(moved))
    return jnp.moveaxis(out, 0, axis)


# ---- spectral analysis ---------------------------------------------------------------------------

def _hann(n: int, dtype):
    """Periodic Hann window of length ``n`` (scipy's ``get_window('hann', n)``)."""
    if n == 1:
        return jnp.ones((1,), dtype)
    return jnp.asarray(np.sin(np.pi * np.arange(n) / n) ** 2, dtype)


def _named_window(window, n: int, dtype):
    if isinstance(window, str) and window == "hann":
        return _hann(n, dtype)
    try:
        from scipy.signal import get_window
    except ImportError as err:
        raise ImportError(f"scipy must be available to use window={window!r}") from err
    return jnp.asarray(get_window(window, n), dtype)


def _window_and_length(window, nperseg, length: int, dtype):
    """The window array and segment length from ``window`` (name, tuple or array) and
    ``nperseg`` (scipy's rules: a named window defaults to 256 points, capped at the
    signal length; an array window fixes the length)."""
    if isinstance(window, (str, tuple)):
        n = 256 if nperseg is None else int(nperseg)
        if n > length:
            warnings.warn(f"nperseg = {n} is greater than input length  = {length}, using "
                          f"nperseg = {length}", stacklevel=4)
            n = length
        return _named_window(window, n, dtype), n
    win = jnp.asarray(window)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if length < _shape(win)[-1]:
        raise ValueError("window is longer than input signal")
    if nperseg is not None and int(nperseg) != _shape(win)[0]:
        raise ValueError("value specified for nperseg is different from length of window")
    return win, _shape(win)[0]


def _extend(x, n: int, boundary):
    """Extend ``x`` by ``n`` points at both ends of its last axis."""
    if boundary is None or n < 1:
        return x
    if boundary == "zeros":
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)])
    if boundary == "constant":
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode="edge")
    if n > _shape(x)[-1] - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                         f"x.shape[axis]-1, which is {_shape(x)[-1] - 1}.")
    left = jnp.flip(x[..., 1:n + 1], -1)
    right = jnp.flip(x[..., -n - 1:-1], -1)
    if boundary == "odd":
        left, right = 2 * x[..., :1] - left, 2 * x[..., -1:] - right
    return jnp.concatenate([left, x, right], axis=-1)


_BOUNDARIES = ("even", "odd", "constant", "zeros", None)


def _segments_fft(x, win, detrend_func, nperseg: int, noverlap: int, nfft: int,
                  onesided: bool):
    """FFT of the windowed, detrended segments of ``x`` along its last axis: shape
    ``[..., nseg, nfreq]``."""
    step = nperseg - noverlap
    nseg = (_shape(x)[-1] - nperseg) // step + 1
    if nperseg % step == 0:
        # Segment i is blocks i .. i+r-1 of the signal cut into blocks of ``step``: r
        # slices and a concatenate instead of a gather.
        r = nperseg // step
        blocks = x[..., :(nseg + r - 1) * step].reshape(_shape(x)[:-1] + (nseg + r - 1, step))
        segs = jnp.concatenate([blocks[..., j:j + nseg, :] for j in range(r)], axis=-1)
    else:
        starts = np.arange(nseg) * step
        segs = x[..., starts[:, None] + np.arange(nperseg)[None, :]]
    segs = detrend_func(segs)
    if dtypes.is_complex(win.dtype) and not dtypes.is_complex(segs.dtype):
        segs = segs.astype(np.result_type(segs.dtype, win.dtype))
    segs = segs * win
    if onesided:
        return jnp.fft.rfft(jnp.real(segs), n=nfft)
    return jnp.fft.fft(segs, n=nfft)


def _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided: bool,
              scaling: str, axis: int, mode: str, boundary=None, padded: bool = False):
    """``(freqs, times, result)`` shared by ``stft`` (``mode='stft'``) and ``csd``
    (``'psd'``); ``result`` has the segment axis last and frequencies at ``axis``."""
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         f"{list(_BOUNDARIES)}")
    if y is None:
        x, = promote_inexact_args("spectral_helper", x)
    else:
        x, y = promote_inexact_args("spectral_helper", x, y)
        if x.ndim != y.ndim:
            raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
    axis = canonicalize_axis(operator.index(axis), x.ndim)
    ctype = np.result_type(x.dtype, np.complex64)
    ftype = dtypes.finfo(ctype).dtype
    if nperseg is not None:
        nperseg = int(nperseg)
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
    win, nperseg = _window_and_length(window, nperseg, _shape(x)[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    x = jnp.moveaxis(x, axis, -1)
    if y is not None:
        y = jnp.moveaxis(y, axis, -1)
        nx, ny = _shape(x)[-1], _shape(y)[-1]
        if nx < ny:
            x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, ny - nx)])
        elif ny < nx:
            y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, nx - ny)])
    step = nperseg - noverlap
    x = _extend(x, nperseg // 2, boundary)
    if y is not None:
        y = _extend(y, nperseg // 2, boundary)
    if padded:
        extra = -(_shape(x)[-1] - nperseg) % step % nperseg
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, extra)])
        if y is not None:
            y = jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, extra)])
    if isinstance(detrend_type, str):
        def detrend_func(d):
            return detrend(d, type=detrend_type, axis=-1)
    elif callable(detrend_type):
        detrend_func = detrend_type
    elif not detrend_type:
        def detrend_func(d):
            return d
    else:
        raise ValueError(f"Unsupported detrend type: {detrend_type}")
    if scaling == "density":
        scale = 1.0 / (fs * jnp.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / jnp.sum(win) ** 2
    else:
        raise ValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = jnp.sqrt(scale)
    onesided = bool(return_onesided)
    if onesided and (dtypes.is_complex(x.dtype)
                     or (y is not None and dtypes.is_complex(y.dtype))):
        onesided = False
        warnings.warn("Input data is complex, switching to return_onesided=False", stacklevel=3)
    freqs = (jnp.fft.rfftfreq if onesided else jnp.fft.fftfreq)(nfft, 1 / fs, dtype=ftype)
    res = _segments_fft(x, win, detrend_func, nperseg, noverlap, nfft, onesided)
    if y is not None:
        res = jnp.conj(res) * _segments_fft(y, win, detrend_func, nperseg, noverlap, nfft,
                                            onesided)
    elif mode == "psd":
        res = jnp.conj(res) * res
    res = res * jnp.asarray(scale).astype(ctype)
    if onesided and mode == "psd":
        # Fold the negative frequencies in: double all but DC (and Nyquist for even nfft).
        stop = _shape(res)[-1] - (0 if nfft % 2 else 1)
        factor = np.ones(_shape(res)[-1])
        factor[1:stop] = 2
        res = res * factor.astype(ftype)
    times = jnp.arange(nperseg / 2, _shape(x)[-1] - nperseg / 2 + 1, step, dtype=ftype) / fs
    if boundary is not None:
        times = times - (nperseg / 2) / fs
    res = res.astype(ctype)
    if y is None and mode != "stft":
        res = jnp.real(res)
    # [..., nseg, nfreq] -> frequencies at ``axis``, segments last.
    res = jnp.moveaxis(jnp.swapaxes(res, -1, -2), -2, axis)
    return freqs, times, res


def stft(x, fs=1.0, window: str = "hann", nperseg: int = 256, noverlap: int | None = None,
         nfft: int | None = None, detrend: bool = False, return_onesided: bool = True,
         boundary: str | None = "zeros", padded: bool = True, axis: int = -1):
    """Short-time Fourier transform: ``(f, t, Zxx)`` with frequencies ``f``, segment times
    ``t`` and ``Zxx`` of shape ``[..., len(f), len(t)]`` (``axis`` replaced)."""
    return _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     "spectrum", axis, "stft", boundary, padded)


def _median_bias(n: int) -> float:
    """Ratio of the median to the mean of ``n`` chi-squared(2) variables (scipy's
    correction for median-averaged periodograms)."""
    k = 2 * np.arange(1, (n - 1) // 2 + 1)
    return float(1 + np.sum(1.0 / (k + 1) - 1.0 / k))


def csd(x, y, fs=1.0, window: str = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: str = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean"):
    """Cross power spectral density of ``x`` and ``y`` by Welch's method: ``(f, Pxy)``
    (``y=None``: the power spectral density of ``x``)."""
    freqs, _, pxy = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                              return_onesided, scaling, axis, "psd")
    if y is not None:
        pxy = pxy.astype(np.result_type(pxy.dtype, np.complex64))
    if pxy.ndim >= 2 and pxy.size > 0:
        nseg = _shape(pxy)[-1]
        if nseg > 1:
            if average == "median":
                if dtypes.is_complex(pxy.dtype):
                    med = lax.complex(jnp.median(jnp.real(pxy), axis=-1),
                                      jnp.median(jnp.imag(pxy), axis=-1))
                else:
                    med = jnp.median(pxy, axis=-1)
                pxy = med / np.asarray(_median_bias(nseg), dtypes.finfo(pxy.dtype).dtype)
            elif average == "mean":
                pxy = jnp.mean(pxy, axis=-1)
            else:
                raise ValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = pxy.reshape(_shape(pxy)[:-1])
    return freqs, pxy


def welch(x, fs=1.0, window: str = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend: str = "constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean"):
    """Power spectral density by Welch's method (averaged periodograms): ``(f, Pxx)``."""
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                     nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                     scaling=scaling, axis=axis, average=average)
    return freqs, jnp.real(pxx)


def _overlap_add(frames, step: int):
    """Sum frames ``[..., nframes, length]`` placed ``step`` apart: ``[..., out_len]``."""
    *batch, nframes, length = _shape(frames)
    total = step * (nframes - 1) + length
    pos = (np.arange(nframes)[:, None] * step + np.arange(length)[None, :]).ravel()
    flat = frames.reshape(tuple(batch) + (nframes * length,))
    out = jnp.zeros(tuple(batch) + (total,), frames.dtype)
    return out.at[..., pos].add(flat)


def istft(Zxx, fs=1.0, window: str = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1, freq_axis: int = -2):
    """Inverse short-time Fourier transform by weighted overlap-add: ``(t, x)``."""
    _check_arraylike("istft", Zxx)
    Zxx = jnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    freq_axis = canonicalize_axis(freq_axis, Zxx.ndim)
    time_axis = canonicalize_axis(time_axis, Zxx.ndim)
    if freq_axis == time_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    Zxx = Zxx.astype(np.result_type(Zxx.dtype, np.complex64))
    nfreq = _shape(Zxx)[freq_axis]
    n_default = 2 * (nfreq - 1) if input_onesided else nfreq
    nperseg = int(nperseg or n_default)
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft = n_default + (1 if input_onesided and nperseg == n_default + 1 else 0)
    nfft = int(nfft)
    if nfft < nperseg:
        raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = int(noverlap or nperseg // 2)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    step = nperseg - noverlap
    others = tuple(i for i in range(Zxx.ndim) if i not in (time_axis, freq_axis))
    Zxx = jnp.transpose(Zxx, others + (time_axis, freq_axis))  # [..., nseg, nfreq]
    inverse = jnp.fft.irfft if input_onesided else jnp.fft.ifft
    segs = inverse(Zxx, n=nfft, axis=-1)[..., :nperseg]
    rtype = dtypes.finfo(segs.dtype).dtype
    if isinstance(window, (str, tuple)):
        win = _named_window(window, nperseg, rtype).astype(segs.dtype)
    else:
        win = jnp.asarray(window)
        if win.ndim != 1:
            raise ValueError("window must be 1-D")
        if _shape(win)[0] != nperseg:
            raise ValueError(f"window must have length of {nperseg}")
        win = win.astype(segs.dtype)
    segs = segs * jnp.sum(win)
    x = _overlap_add(segs * win, step)
    nseg = _shape(segs)[-2]
    norm = _overlap_add(jnp.broadcast_to(win * win, (nseg, nperseg)), step)
    if boundary:
        half = nperseg // 2
        x, norm = x[..., half:-half], norm[..., half:-half]
    x = x / jnp.where(norm > 1e-10, norm, jnp.ones_like(norm))
    if x.ndim > 1 and time_axis != Zxx.ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    times = jnp.arange(_shape(x)[0], dtype=dtypes.finfo(x.dtype).dtype) / fs
    return times, x
