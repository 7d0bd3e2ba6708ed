"""minijax.scipy.fft: discrete cosine transforms, mirroring ``jax.scipy.fft``.

Only type 2 is implemented (as in jax): ``dct``/``dctn`` are the DCT-II,
``idct``/``idctn`` its inverse (a scaled DCT-III). Each 1-D transform is one complex
FFT of the same length (Makhoul's reordering), so they trace, differentiate and
vectorize like ``minijax.numpy.fft``.

Example::

    >>> from minijax.scipy.fft import dct, idct
    >>> import minijax.numpy as jnp
    >>> dct(jnp.array([1., 2., 3.]))
    Array([12.       , -3.4641016,  0.       ], dtype=float32)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.numpy._promote import promote_dtypes_inexact
from minijax.numpy._reductions import arraylike, canonicalize_axis

__all__ = ["dct", "dctn", "idct", "idctn"]


def _check(name: str, x, type: int, norm):  # noqa: A002 (scipy's name)
    arraylike(f"minijax.scipy.fft.{name}", x)
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")
    if norm is not None and norm not in ("backward", "ortho"):
        raise ValueError(f"minijax.scipy.fft.{name}: norm={norm!r} is not implemented")
    x, = promote_dtypes_inexact(jnp.asarray(x))
    return x


def _resize(x, axis: int, n: int | None):
    """Zero-pad or truncate ``x`` along ``axis`` to length ``n``."""
    if n is None:
        return x
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"Invalid number of DCT data points ({n}) specified.")
    size = get_aval(x).shape[axis]
    if n <= size:
        return lax.slice_in_dim(x, 0, n, axis=axis)
    pads = [(0, 0)] * get_aval(x).ndim
    pads[axis] = (0, n - size)
    return jnp.pad(x, pads)


def _ortho_scale(n: int, dtype, inverse: bool):
    """Per-frequency factors of the orthonormal DCT-II: ``1/sqrt(4n)`` for ``k = 0``
    and ``1/sqrt(2n)`` otherwise (their reciprocals for ``inverse``)."""
    f = np.full(n, 1 / math.sqrt(2 * n))
    f[0] = 1 / math.sqrt(4 * n)
    return np.asarray(1 / f if inverse else f, dtype)


def _twiddle(n: int, dtype):
    """``exp(-i pi k / (2n))`` for ``k = 0..n-1``."""
    return np.exp(-0.5j * np.pi * np.arange(n) / n).astype(dtype)


def _dct_last(x, norm):
    """DCT-II of real ``x`` along its last axis: ``y_k = 2 sum_n x_n cos(pi k (2n+1) / 2N)``.
    Reorder to ``v = (x_0, x_2, ..., x_3, x_1)``; then ``y_k = 2 Re(w_k fft(v)_k)``."""
    n = get_aval(x).shape[-1]
    v = jnp.concatenate([x[..., ::2], jnp.flip(x[..., 1::2], -1)], axis=-1)
    ctype = np.result_type(x.dtype, np.complex64)
    y = 2 * jnp.real(jnp.fft.fft(v, axis=-1) * _twiddle(n, ctype))
    if norm == "ortho":
        y = y * _ortho_scale(n, x.dtype, inverse=False)
    return y


def _idct_last(y, norm):
    """Inverse of ``_dct_last``. With ``V = fft(v)`` of a real ``v`` and ``y_N = 0``:
    ``w_k V_k = (y_k - i y_{N-k}) / 2``; ``v = Re(ifft(V))`` is then un-reordered."""
    n = get_aval(y).shape[-1]
    if norm == "ortho":
        y = y * _ortho_scale(n, y.dtype, inverse=True)
    ctype = np.result_type(y.dtype, np.complex64)
    rev = jnp.concatenate([jnp.zeros_like(y[..., :1]), jnp.flip(y[..., 1:], -1)], axis=-1)
    spec = lax.complex(y, -rev) * (0.5 / _twiddle(n, ctype))
    v = jnp.real(jnp.fft.ifft(spec, axis=-1))
    half = (n + 1) // 2
    evens, odds = v[..., :half], jnp.flip(v[..., half:], -1)
    # Interleave: x_{2j} = evens_j, x_{2j+1} = odds_j.
    if n % 2:
        odds = jnp.concatenate([odds, jnp.zeros_like(evens[..., :1])], axis=-1)
    x = jnp.stack([evens, odds], axis=-1).reshape(get_aval(v).shape[:-1] + (2 * half,))
    return x[..., :n]


def _along(fun, x, axis: int, norm):
    """``fun`` along ``axis``; complex ``x`` transforms its real and imaginary parts."""
    if dtypes.is_complex(x.dtype):
        return lax.complex(_along(fun, jnp.real(x), axis, norm),
                           _along(fun, jnp.imag(x), axis, norm))
    moved = jnp.moveaxis(x, axis, -1)
    return jnp.moveaxis(fun(moved, norm), -1, axis)


def dct(x, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
        norm: str | None = None):
    """Discrete cosine transform (type II) of ``x`` along ``axis``, zero-padded or
    truncated to ``n`` points; ``norm``: ``None``/``'backward'`` or ``'ortho'``."""
    x = _check("dct", x, type, norm)
    axis = canonicalize_axis(axis, x.ndim)
    return _along(_dct_last, _resize(x, axis, n), axis, norm)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
         norm: str | None = None):
    """Inverse of ``dct`` (type II) along ``axis``: ``idct(dct(x, norm=m), norm=m) == x``."""
    x = _check("idct", x, type, norm)
    axis = canonicalize_axis(axis, x.ndim)
    return _along(_idct_last, _resize(x, axis, n), axis, norm)


def _axes_and_sizes(name: str, x, s, axes):
    if s is not None:
        try:
            s = [operator.index(v) for v in s]
        except TypeError:
            s = [operator.index(s)]
        if len(s) > x.ndim:
            raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
    if axes is None:
        axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    else:
        axes = tuple(canonicalize_axis(a, x.ndim) for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{name}: repeated axis in axes={axes}")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{name}: s={s} and axes={axes} must have the same length")
    return axes, (s if s is not None else [None] * len(axes))


def dctn(x, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
         axes: Sequence[int] | None = None, norm: str | None = None):
    """Multidimensional DCT (type II): ``dct`` along each of ``axes`` (default: the last
    ``len(s)`` axes, or all), each resized to the matching entry of ``s``."""
    x = _check("dctn", x, type, norm)
    axes, sizes = _axes_and_sizes("dctn", x, s, axes)
    for axis, n in zip(axes, sizes):
        x = _along(_dct_last, _resize(x, axis, n), axis, norm)
    return x


def idctn(x, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
          axes: Sequence[int] | None = None, norm: str | None = None):
    """Inverse of ``dctn``: ``idct`` along each of ``axes``."""
    x = _check("idctn", x, type, norm)
    axes, sizes = _axes_and_sizes("idctn", x, s, axes)
    for axis, n in zip(axes, sizes):
        x = _along(_idct_last, _resize(x, axis, n), axis, norm)
    return x
