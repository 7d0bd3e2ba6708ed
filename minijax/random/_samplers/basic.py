"""uniform, normal, the integer samplers, permutations and choice, and the simple
transforms of uniform and normal draws (exponential, cauchy, laplace, logistic, gumbel)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

import minijax.numpy as jnp
from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import Tracer, get_aval
from minijax.numpy._promote import promote_dtypes_inexact
from minijax.random._keys import (UINT_DTYPES, canonicalize_shape, check_prng_key,
                                  random_bits_impl as _random_bits)
from minijax.random._samplers._common import (_bcast, _broadcast_shapes, _check_sampler_args,
                                              _check_shape, _float_dtype, _int_dtype, _no_sharding,
                                              _split_n)
from minijax.stages.jit import jit


# ---- uniform and normal -------------------------------------------------------------------------

def _uniform(key, minval, maxval, shape: tuple, dtype):
    if not dtypes.is_float(dtype):
        raise TypeError("uniform only accepts floating point dtypes.")
    minval = lax.convert_element_type(minval, dtype)
    maxval = lax.convert_element_type(maxval, dtype)
    for v in (minval, maxval):
        vshape = get_aval(v).shape
        if len(vshape) > len(shape) or _broadcast_shapes(shape, vshape) != shape:
            raise TypeError(f"uniform: minval/maxval of shape {vshape} do not broadcast to the "
                            f"sample shape {shape}")
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}.")
    # Random mantissa bits under the exponent of 1.0 give a float in [1, 2); minus 1.
    rng_bits = 8 if nmant < 8 else nbits
    bits = _random_bits(key, rng_bits, shape)
    uint = UINT_DTYPES[nbits]
    if rng_bits != nbits:
        bits = lax.convert_element_type(bits, uint)
    float_bits = lax.shift_right_logical(bits, np.asarray(rng_bits - nmant, uint))
    float_bits = lax.bitwise_or(float_bits, np.array(1.0, dtype).view(uint))
    floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), np.asarray(1.0, dtype))
    lo, hi = _bcast(minval, shape), _bcast(maxval, shape)
    return lax.max(lo, lax.add(lax.mul(floats, lax.sub(hi, lo)), lo))


_uniform_jit = jit(_uniform, static_argnums=(3, 4))


def uniform(key, shape: Sequence[int] = (), dtype=None, minval=0., maxval=1., *,
            out_sharding=None):
    """Uniform samples in ``[minval, maxval)`` of a float dtype (default float32).

    >>> minijax.random.uniform(minijax.random.key(0), (2,))
    Array([0.947667 , 0.9785799], dtype=float32)
    """
    words, _ = check_prng_key("uniform", key)
    _no_sharding(out_sharding)
    dtype = _float_dtype("uniform", dtype)
    return _uniform_jit(words, minval, maxval, canonicalize_shape(shape), dtype)


def _normal_real(key, shape: tuple, dtype):
    lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
    u = _uniform(key, lo, np.array(1., dtype), shape, dtype)
    return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


def _normal(key, shape: tuple, dtype):
    if dtypes.is_complex(dtype):
        sqrt2 = np.array(np.sqrt(2), dtype)
        key_re, key_im = _split_n(key, 2)
        real_dtype = np.array(0, dtype).real.dtype
        re = _normal_real(key_re, shape, real_dtype).astype(dtype)
        im = _normal_real(key_im, shape, real_dtype).astype(dtype)
        return (re + 1j * im) / sqrt2
    return _normal_real(key, shape, dtype)


_normal_jit = jit(_normal, static_argnums=(1, 2))


def normal(key, shape: Sequence[int] = (), dtype=None, *, out_sharding=None):
    """Standard normal samples of a float or complex dtype (default float32)."""
    words, _ = check_prng_key("normal", key)
    _no_sharding(out_sharding)
    dtype = _float_dtype("normal", dtype, "inexact")
    return _normal_jit(words, canonicalize_shape(shape), dtype)


# ---- integers ---------------------------------------------------------------------------------

def _convert_and_clip_integer(val, dtype):
    """``val`` clipped to the range both its dtype and ``dtype`` can hold, as ``dtype``."""
    vd = get_aval(val).dtype
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(vd).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(vd).max))
    return jnp.clip(val, np.asarray(lo, vd), np.asarray(hi, vd)).astype(dtype)


def _randint(key, minval, maxval, shape: tuple, dtype):
    _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    if not dtypes.is_int(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
    if not dtypes.is_int(minval.dtype):
        minval = minval.astype(dtypes.default_int())
    if not dtypes.is_int(maxval.dtype):
        maxval = maxval.astype(dtypes.default_int())
    maxval_out_of_range = lax.gt(
        maxval, _convert_and_clip_integer(jnp.asarray(np.iinfo(dtype).max, dtype), maxval.dtype))
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    nbits = np.iinfo(dtype).bits
    if nbits not in (8, 16, 32, 64):
        raise TypeError(f"randint only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}")
    k1, k2 = _split_n(key, 2)
    higher_bits, lower_bits = _random_bits(k1, nbits, shape), _random_bits(k2, nbits, shape)
    unsigned = UINT_DTYPES[nbits]
    minval, maxval = _bcast(minval, shape), _bcast(maxval, shape)
    maxval_out_of_range = _bcast(maxval_out_of_range, shape)
    span = lax.convert_element_type(maxval - minval, unsigned)
    # An empty range samples minval; a range reaching past dtype's maximum gets one more value.
    span = jnp.where(maxval <= minval, np.asarray(1, unsigned), span)
    span = jnp.where(maxval_out_of_range & (maxval > minval), span + np.asarray(1, unsigned), span)
    # (hi * 2**(nbits/2) * 2**(nbits/2) + lo) mod span, without overflow.
    multiplier = lax.rem(np.asarray(2 ** (nbits // 2), unsigned), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    random_offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier),
                            lax.rem(lower_bits, span))
    random_offset = lax.rem(random_offset, span)
    return lax.add(minval, lax.convert_element_type(random_offset, dtype))


_randint_jit = jit(_randint, static_argnums=(3, 4))


def _randint_data(words, shape: tuple, minval, maxval, dtype):
    info = np.iinfo(dtype)
    sample_dtype = dtype
    if info.bits < 32:  # sample as int32 within dtype's range
        sample_dtype = np.dtype(np.int32)
        minval = jnp.asarray(minval).astype(np.int32).clip(int(info.min), int(info.max))
        maxval = jnp.asarray(maxval).astype(np.int32).clip(int(info.min), int(info.max) + 1)
    return _randint_jit(words, minval, maxval, shape, sample_dtype).astype(dtype)


def randint(key, shape: Sequence[int], minval, maxval, dtype=None, *, out_sharding=None):
    """Integers uniform in ``[minval, maxval)`` of an integer dtype (default int32)."""
    words, _ = check_prng_key("randint", key)
    _no_sharding(out_sharding)
    dtype = _int_dtype("randint", dtype)
    shape = canonicalize_shape(shape)
    if not dtypes.is_int(dtype):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    return _randint_data(words, shape, minval, maxval, dtype)


# ---- permutations and choice ----------------------------------------------------------------

def _shuffle(key, x, axis: int):
    # Sorting by 32-bit random keys; enough rounds that ties are unlikely to bias the result
    # (the number of rounds grows like 3 log(n) / log(2**32 - 1)).
    size = get_aval(x).size
    num_rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(num_rounds):
        key, subkey = _split_n(key, 2)
        sort_keys = _random_bits(subkey, 32, get_aval(x).shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


_shuffle_jit = jit(_shuffle, static_argnums=(2,))


def permutation(key, x, axis: int = 0, independent: bool = False, *, out_sharding=None):
    """A random permutation of ``arange(x)`` (integer ``x``) or of ``x`` along ``axis``
    (each slice independently if ``independent``)."""
    words, _ = check_prng_key("permutation", key)
    _check_sampler_args("permutation", x)
    _no_sharding(out_sharding)
    ndim = np.ndim(x)
    axis = lax.shape.canonicalize_axis(axis, ndim or 1)
    if not ndim:
        if not dtypes.is_int(get_aval(x).dtype):
            raise TypeError("x must be an integer or at least 1-dimensional")
        r = int(x.to_concrete("permutation") if isinstance(x, Tracer) else x)
        return _shuffle_jit(words, jnp.arange(r), axis)
    x = jnp.asarray(x)
    if independent or ndim == 1:
        return _shuffle_jit(words, x, axis)
    ind = _shuffle_jit(words, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, ind, axis)


def shuffle(key, x, axis: int = 0):
    """Shuffle ``x`` along ``axis``, each slice independently (deprecated in jax long ago:
    use ``permutation(key, x, axis, independent=True)``)."""
    warnings.warn("minijax.random.shuffle is deprecated; use minijax.random.permutation with "
                  "independent=True.", FutureWarning, stacklevel=2)
    words, _ = check_prng_key("shuffle", key)
    _check_sampler_args("shuffle", x)
    x = jnp.asarray(x)
    return _shuffle_jit(words, x, lax.shape.canonicalize_axis(axis, x.ndim or 1))


def _searchsorted_left(sorted_arr, query):
    """Indices i with sorted_arr[i-1] < query <= sorted_arr[i] (a binary search)."""
    n = get_aval(sorted_arr).shape[0]
    levels = int(np.ceil(np.log2(n + 1)))
    idx_dt = dtypes.default_int()
    low = jnp.zeros(get_aval(query).shape, idx_dt)
    high = jnp.full(get_aval(query).shape, n, idx_dt)

    def step(_, bounds):
        low, high = bounds
        mid = (low + high) // 2
        go_left = query <= jnp.take(sorted_arr, mid, mode="clip")
        return jnp.where(go_left, low, mid), jnp.where(go_left, mid, high)

    return lax.fori_loop(0, levels, step, (low, high))[1]


def choice(key, a, shape: Sequence[int] = (), replace: bool = True, p=None, axis: int = 0,
           mode: str | None = None):
    """Random samples from ``a`` (or ``arange(a)``), with or without replacement, uniform
    or with probabilities ``p`` along ``axis``."""
    words, _ = check_prng_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of minijax.random.choice must be a sequence, got "
                        f"{shape}")
    _check_sampler_args("choice", a)
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = int(a.to_concrete("choice") if isinstance(a, Tracer) else a)
    else:
        axis = lax.shape.canonicalize_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    shape = canonicalize_shape(shape)
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                         f"{n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = _randint_data(words, shape, 0, n_inputs, dtypes.default_int())
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
        else:
            slices = (slice(None),) * axis + (slice(n_draws),)
            result = permutation(words, n_inputs if arr.ndim == 0 else arr, axis)[slices]
    else:
        _check_sampler_args("choice", p)
        p_arr = jnp.asarray(promote_dtypes_inexact(p)[0])
        if p_arr.shape != (n_inputs,):
            raise ValueError(f"p must be None or a 1D vector with the same size as a.shape[axis]."
                             f" p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            r = p_cuml[-1] * (1 - uniform(words, shape, dtype=p_cuml.dtype))
            ind = _searchsorted_left(p_cuml, r).astype(dtypes.default_int())
        else:
            g = gumbel(words, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp.log(p_arr)
            ind = lax.top_k(g, k=n_draws)[1].astype(dtypes.default_int())
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
    return result.reshape(shape if arr.ndim == 0 else
                          arr.shape[:axis] + tuple(shape) + arr.shape[axis + 1:])


# ---- simple transforms of uniform and normal ----------------------------------------------------

def _exponential(key, shape, dtype):
    u = _uniform(key, 0., 1., shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))


def _cauchy(key, shape, dtype):
    u = _uniform(key, float(dtypes.finfo(dtype).eps), 1., shape, dtype)
    return lax.tan(lax.mul(np.asarray(np.pi, dtype), lax.sub(u, np.asarray(0.5, dtype))))


def _laplace(key, shape, dtype):
    u = _uniform(key, -1. + float(dtypes.finfo(dtype).epsneg), 1., shape, dtype)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def _logistic(key, shape, dtype):
    x = _uniform(key, float(dtypes.finfo(dtype).tiny), 1., shape, dtype)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def _gumbel(key, shape, dtype, mode):
    info = dtypes.finfo(dtype)
    if dtype == np.float32 and mode == "highest":
        return _gumbel_highest(key, shape)
    if mode in ("high", "highest"):
        both = _uniform(key, 0., 1., (2, *shape), dtype)
        high, low = both[0], both[1]
        x = jnp.where(high >= 0.5, high, high + 2 ** -int(info.nmant) * low + info.tiny)
        return -jnp.log(-jnp.log1p(-x))
    return -jnp.log(-jnp.log(_uniform(key, float(info.tiny), 1., shape, dtype)))


def _bits_to_unit_float32(bits):
    """Two uint32 words (stacked on axis 0) as one float32 in (0, 1) keeping every leading
    zero bit: 64 random bits of mantissa-and-exponent instead of 23."""
    finfo = dtypes.finfo(np.float32)
    u32 = np.uint32
    hi, lo = bits[0], bits[1]
    hiclz, loclz = lax.clz(hi), lax.clz(lo)
    mantissa = lax.bitwise_or(
        lax.shift_left(hi, hiclz),
        jnp.where(hiclz == 32, lax.shift_left(lo, loclz),
                  lax.shift_right_logical(lo, np.asarray(finfo.bits, u32) - hiclz)))
    mantissa = lax.shift_right_logical(mantissa, np.asarray(finfo.bits - finfo.nmant - 1, u32))
    mantissa = lax.bitwise_and(mantissa, np.asarray((1 << finfo.nmant) - 1, u32))
    exp = lax.shift_left(-finfo.minexp - jnp.where(hiclz == 32, 32 + loclz, hiclz),
                         np.asarray(finfo.nmant, u32))
    exp = lax.bitwise_and(exp, np.asarray((1 << (finfo.bits - 2)) - (1 << (finfo.nmant - 1)),
                                          u32))
    return lax.bitcast_convert_type(lax.bitwise_or(exp, mantissa), np.float32)


def _gumbel_highest(key, shape):
    u32 = np.dtype(np.uint32)
    bits = _random_bits(key, 32, (2, *shape))
    neg = lax.bitwise_not(bits)
    lo_bits = neg[1]
    carry = jnp.stack([(lo_bits == np.asarray(0xFFFFFFFF, u32)).astype(u32),
                       jnp.ones_like(lo_bits)])
    neg = neg + carry
    flip = bits[0] < np.asarray(1 << 31, u32)
    x = _bits_to_unit_float32(jnp.where(flip, bits, neg))
    return jnp.where(flip, -jnp.log(-jnp.log1p(-x)), -jnp.log(-jnp.log(x)))


def _simple_sampler(name: str, impl):
    jitted = jit(impl, static_argnums=(1, 2))

    def sampler(key, shape: Sequence[int] = (), dtype=None, *, out_sharding=None):
        words, _ = check_prng_key(name, key)
        _no_sharding(out_sharding)
        dt = _float_dtype(name, dtype)
        return jitted(words, canonicalize_shape(shape), dt)

    sampler.__name__ = sampler.__qualname__ = name
    return sampler


exponential = _simple_sampler("exponential", _exponential)
exponential.__doc__ = "Exponential(1) samples of a float dtype (default float32)."
cauchy = _simple_sampler("cauchy", _cauchy)
cauchy.__doc__ = "Standard Cauchy samples of a float dtype (default float32)."
laplace = _simple_sampler("laplace", _laplace)
laplace.__doc__ = "Laplace(0, 1) samples of a float dtype (default float32)."
logistic = _simple_sampler("logistic", _logistic)
logistic.__doc__ = "Standard logistic samples of a float dtype (default float32)."

_gumbel_jit = jit(_gumbel, static_argnums=(1, 2, 3))


def gumbel(key, shape: Sequence[int] = (), dtype=None, mode: str | None = None, *,
           out_sharding=None):
    """Standard Gumbel samples; ``mode`` "low" (default), "high" or "highest" trades speed for
    accuracy in the upper tail."""
    words, _ = check_prng_key("gumbel", key)
    _no_sharding(out_sharding)
    dtype = _float_dtype("gumbel", dtype)
    shape = canonicalize_shape(shape)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
    return _gumbel_jit(words, shape, dtype, mode)
