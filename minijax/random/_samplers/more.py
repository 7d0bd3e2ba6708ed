"""More transforms, and categorical."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

import minijax.numpy as jnp
from minijax import lax
from minijax.core import dtypes
from minijax.numpy._promote import promote_dtypes_inexact
from minijax.random._keys import canonicalize_shape, check_prng_key
from minijax.random._samplers._common import (_broadcast_shapes, _check_sampler_args,
                                              _check_broadcast_shapes, _check_shape, _float_dtype,
                                              _float_sampler_args, _int_dtype, _no_sharding,
                                              _split_n)
from minijax.random._samplers.basic import _exponential, _normal, _uniform, gumbel
from minijax.random._samplers.transforms import _rademacher
from minijax.stages.jit import jit


# ---- more transforms --------------------------------------------------------------------------

def _pareto(key, b, shape, dtype):
    b = lax.convert_element_type(b, dtype)
    return lax.exp(_exponential(key, shape, dtype) / b)


def _maxwell(key, shape, dtype):
    norm_rvs = _normal(key, (*shape, 3), dtype)
    return jnp.sqrt(jnp.sum(norm_rvs * norm_rvs, axis=-1))


def _double_sided_maxwell(key, loc, scale, shape, dtype):
    params_shapes = _broadcast_shapes(np.shape(loc), np.shape(scale))
    if not shape:
        shape = params_shapes
    shape = shape + params_shapes  # (as jax: the parameter shape is appended to `shape`)
    maxwell_key, rademacher_key = _split_n(key, 2)
    maxwell_rvs = _maxwell(maxwell_key, shape, dtype)
    random_sign = _rademacher(rademacher_key, shape, dtype)
    return random_sign * maxwell_rvs * scale + loc


def _weibull_min(key, scale, concentration, shape, dtype):
    random_uniform = _uniform(key, 0, 1, shape, dtype)
    return jnp.power(-jnp.log1p(-random_uniform), 1.0 / concentration) * scale


def _rayleigh(key, scale, shape, dtype):
    u = _uniform(key, 0., 1., shape, dtype)
    scale = jnp.broadcast_to(jnp.asarray(scale).astype(dtype), shape)
    log_u = lax.log(u)
    return lax.mul(scale, lax.sqrt(lax.mul(log_u, np.asarray(-2, dtype))))


def _wald(key, mean, shape, dtype):
    k1, k2 = _split_n(key, 2)
    mean = jnp.broadcast_to(jnp.asarray(mean).astype(dtype), shape)
    v = _normal(k1, shape, dtype)
    z = _uniform(k2, 0., 1., shape, dtype)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


def _geometric(key, p, shape, dtype):
    _check_sampler_args("geometric", p)
    p = jnp.asarray(promote_dtypes_inexact(p)[0])
    u = _uniform(key, 0., 1., shape, p.dtype)
    u = jnp.where(u == 0, 1, u)
    log_u = lax.log(u)
    log_one_minus_p = jnp.broadcast_to(lax.log1p(-p), shape)
    g = lax.floor(lax.div(log_u, log_one_minus_p)) + 1
    return g.astype(dtype)


def _triangular(key, left, mode, right, shape, dtype):
    left = jnp.broadcast_to(lax.convert_element_type(left, dtype), shape)
    right = jnp.broadcast_to(lax.convert_element_type(right, dtype), shape)
    mode = jnp.broadcast_to(lax.convert_element_type(mode, dtype), shape)
    fc = (mode - left) / (right - left)
    u = _uniform(key, 0., 1., shape, dtype)
    out1 = left + lax.sqrt(u * (right - left) * (mode - left))
    out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select(u < fc, out1, out2)


def _lognormal(key, sigma, shape, dtype):
    sigma = lax.convert_element_type(sigma, dtype)
    return lax.exp(_normal(key, shape, dtype) * sigma)


_ONE_F32 = np.float32(1)
_pareto_jit = jit(_pareto, static_argnums=(2, 3))
_maxwell_jit = jit(_maxwell, static_argnums=(1, 2))
_double_sided_maxwell_jit = jit(_double_sided_maxwell, static_argnums=(3, 4))
_weibull_min_jit = jit(_weibull_min, static_argnums=(3, 4))
_rayleigh_jit = jit(_rayleigh, static_argnums=(2, 3))
_wald_jit = jit(_wald, static_argnums=(2, 3))
_geometric_jit = jit(_geometric, static_argnums=(2, 3))
_triangular_jit = jit(_triangular, static_argnums=(4, 5))
_lognormal_jit = jit(_lognormal, static_argnums=(2, 3))


def pareto(key, b, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """Pareto samples with shape parameter ``b`` (support [1, inf))."""
    words, shape, dtype = _float_sampler_args("pareto", key, (b,), shape, dtype, out_sharding)
    return _pareto_jit(words, b, shape, dtype)


def maxwell(key, shape: Sequence[int] = (), dtype=None, *, out_sharding=None):
    """One-sided Maxwell samples (the norm of a 3-d standard normal)."""
    words, _ = check_prng_key("maxwell", key)
    _no_sharding(out_sharding)
    dtype = _float_dtype("maxwell", dtype)
    return _maxwell_jit(words, canonicalize_shape(shape), dtype)


def double_sided_maxwell(key, loc, scale, shape: Sequence[int] = (), dtype=None):
    """Double-sided Maxwell samples with location ``loc`` and scale ``scale``."""
    words, _ = check_prng_key("double_sided_maxwell", key)
    dtype = _float_dtype("double_sided_maxwell", dtype)
    return _double_sided_maxwell_jit(words, loc, scale, canonicalize_shape(shape), dtype)


def weibull_min(key, scale, concentration, shape: Sequence[int] = (), dtype=None):
    """Weibull samples with ``scale`` and ``concentration``."""
    words, _ = check_prng_key("weibull_min", key)
    dtype = _float_dtype("weibull_min", dtype)
    return _weibull_min_jit(words, scale, concentration, canonicalize_shape(shape), dtype)


def rayleigh(key, scale, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """Rayleigh samples with ``scale``."""
    words, shape, dtype = _float_sampler_args("rayleigh", key, (scale,), shape, dtype, out_sharding)
    return _rayleigh_jit(words, scale, shape, dtype)


def wald(key, mean, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """Wald (inverse Gaussian) samples with ``mean`` and unit shape."""
    words, shape, dtype = _float_sampler_args("wald", key, (mean,), shape, dtype, out_sharding)
    return _wald_jit(words, mean, shape, dtype)


def geometric(key, p, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """Geometric samples (trials until the first success, >= 1) of an integer dtype."""
    words, _ = check_prng_key("geometric", key)
    _no_sharding(out_sharding)
    dtype = _int_dtype("geometric", dtype)
    if not dtypes.is_int(dtype):
        raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
    shape = _check_broadcast_shapes("geometric", shape, p)
    return _geometric_jit(words, p, shape, dtype)


def triangular(key, left, mode, right, shape: Sequence[int] | None = None, dtype=None, *,
               out_sharding=None):
    """Triangular samples on ``[left, right]`` peaking at ``mode``."""
    words, shape, dtype = _float_sampler_args("triangular", key, (left, mode, right), shape,
                                              dtype, out_sharding)
    return _triangular_jit(words, left, mode, right, shape, dtype)


def lognormal(key, sigma=_ONE_F32, shape: Sequence[int] | None = None, dtype=None, *,
              out_sharding=None):
    """Log-normal samples: ``exp(sigma * normal)``."""
    words, shape, dtype = _float_sampler_args("lognormal", key, (sigma,), shape, dtype,
                                              out_sharding, "inexact")
    return _lognormal_jit(words, sigma, shape, dtype)


# ---- categorical --------------------------------------------------------------------------------

def categorical(key, logits, axis: int = -1, shape: Sequence[int] | None = None,
                replace: bool = True, mode: str | None = None, *, out_sharding=None):
    """Category indices drawn with probabilities ``softmax(logits)`` along ``axis`` (the
    Gumbel-max trick; without replacement, the top ``k`` of logits + Gumbel noise)."""
    words, _ = check_prng_key("categorical", key)
    _check_sampler_args("categorical", logits)
    _no_sharding(out_sharding)
    logits_arr = jnp.asarray(logits)
    batch_shape = tuple(np.delete(np.asarray(logits_arr.shape, dtype=np.int64), axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = canonicalize_shape(shape)
        _check_shape("categorical", shape, batch_shape)
    shape_prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        if axis >= 0:
            axis -= logits_arr.ndim
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % logits_arr.ndim, logits_arr.shape[axis])
        noise = gumbel(words, (*shape_prefix, *logits_shape), logits_arr.dtype, mode=mode)
        return jnp.argmax(noise + lax.expand_dims(logits_arr, tuple(range(len(shape_prefix)))),
                          axis=axis)
    logits_arr = logits_arr + gumbel(words, logits_arr.shape, logits_arr.dtype, mode=mode)
    k = math.prod(shape_prefix)
    if k > logits_arr.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                         f"categories ({logits_arr.shape[axis]}).")
    _, indices = lax.top_k(jnp.moveaxis(logits_arr, axis, -1), k)
    dimensions = (indices.ndim - 1, *range(indices.ndim - 1))
    return lax.reshape(indices, shape, dimensions)
