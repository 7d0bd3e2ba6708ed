"""Poisson, binomial and multinomial."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import minijax.numpy as jnp
from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.numpy._promote import promote_dtypes_inexact
from minijax.random._keys import canonicalize_shape, check_prng_key, split
from minijax.random._samplers._common import (_broadcast_shapes, _check_sampler_args, _check_shape,
                                              _float_dtype, _int_dtype, _isnan, _no_sharding,
                                              _split_n)
from minijax.random._samplers.basic import _uniform
from minijax.stages.jit import jit


# ---- Poisson ------------------------------------------------------------------------------------

def _poisson_knuth(key, lam, shape, dtype, max_iters):
    # Count uniforms until their product drops below exp(-lam) (for small lam).
    def body(carry):
        i, k, rng, log_prod = carry
        rng, subkey = _split_n(rng, 2)
        k = lax.select(log_prod > -lam, k + 1, k)
        u = _uniform(subkey, 0., 1., shape, np.dtype(np.float32))
        return i + 1, k, rng, log_prod + jnp.log(u)

    def cond(carry):
        i, log_prod = carry[0], carry[3]
        return (log_prod > -lam).any() & (i < max_iters)

    k_init = jnp.zeros(shape, dtype)
    log_rate_init = jnp.zeros(shape, np.float32)
    k = lax.while_loop(cond, body, (0, k_init, key, log_rate_init))[1]
    return (k - 1).astype(dtype)


def _poisson_rejection(key, lam, shape, dtype, max_iters):
    # Hormann's transformed rejection with squeeze (PTRS), for lam >= 10.
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry):
        i, k_out, accepted, key = carry
        key, subkey_0, subkey_1 = _split_n(key, 3)
        u = _uniform(subkey_0, 0., 1., shape, lam.dtype) - 0.5
        v = _uniform(subkey_1, 0., 1., shape, lam.dtype)
        u_shifted = 0.5 - abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept2 = s <= t
        accept = accept1 | (~reject & accept2)
        k_out = lax.select(accept, k, k_out)
        accepted = accepted | accept
        return i + 1, k_out, accepted, key

    def cond(carry):
        i, _, accepted, _ = carry
        return (~accepted).any() & (i < max_iters)

    k_init = jnp.full(shape, -1, lam.dtype)
    accepted = jnp.zeros(shape, bool)
    k = lax.while_loop(cond, body, (0, k_init, accepted, key))[1]
    return k.astype(dtype)


def _poisson(key, lam, shape, dtype):
    use_knuth = _isnan(lam) | (lam < 10)
    lam_knuth = lax.select(use_knuth, lam, jnp.zeros_like(lam))
    lam_rejection = lax.select(use_knuth, jnp.full_like(lam, 1e5), lam)
    max_iters = dtype.type(np.iinfo(dtype).max)
    result = lax.select(use_knuth,
                        _poisson_knuth(key, lam_knuth, shape, dtype, max_iters),
                        _poisson_rejection(key, lam_rejection, shape, dtype, max_iters))
    return lax.select(lam == 0, jnp.zeros_like(result), result)


_poisson_jit = jit(_poisson, static_argnums=(2, 3))


def poisson(key, lam, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """Poisson(lam) samples of an integer dtype (default int32)."""
    words, _ = check_prng_key("poisson", key)
    _no_sharding(out_sharding)
    dtype = _int_dtype("poisson", dtype)
    shape = canonicalize_shape(shape) if shape is not None else np.shape(lam)
    lam = jnp.broadcast_to(lam, shape)
    lam = lax.convert_element_type(lam, np.float32)
    return _poisson_jit(words, lam, shape, dtype)


# ---- binomial and multinomial ----------------------------------------------------------------

_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k):
    """log(k!) minus its Stirling approximation: tabulated for k <= 9, a series beyond."""
    dt = get_aval(k).dtype
    table = jnp.asarray(np.asarray(_STIRLING_TAIL, dt))
    use_table = k <= 9
    k = lax.clamp(np.asarray(0.0, dt), k, np.asarray(9.0, dt))
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    k = jnp.floor(k)
    return lax.select(use_table, table[jnp.asarray(k, dtype=np.int32)], approx)


def _binomial_inversion(key, count, prob, shape, dtype, max_iters):
    # Sum geometric waiting times until they pass `count` (for count * prob <= 10).
    log1minusprob = jnp.log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, key = carry
        subkey, key = _split_n(key, 2)
        num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform(subkey, 0., 1., shape, prob.dtype)
        geom = jnp.ceil(jnp.log(u) / log1minusprob)
        return i + 1, num_geom_out, geom_sum + geom, key

    def cond(carry):
        i, geom_sum = carry[0], carry[2]
        return (geom_sum <= count).any() & (i < max_iters)

    zeros = jnp.zeros(shape, prob.dtype)
    k = lax.while_loop(cond, body, (0, zeros, zeros, key))[1]
    return (k - 1).astype(dtype)


def _btrs(key, count, prob, shape, dtype, max_iters):
    # Hormann's transformed rejection (BTRS), for count * prob > 10.
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, key = carry
        key, subkey_0, subkey_1 = _split_n(key, 3)
        u = _uniform(subkey_0, 0., 1., shape, prob.dtype)
        v = _uniform(subkey_1, 0., 1., shape, prob.dtype)
        u = u - 0.5
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
              + _stirling_approx_tail(m)
              + _stirling_approx_tail(count - m)
              - _stirling_approx_tail(k)
              - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= ub))
        k_out = lax.select(accept, k, k_out)
        return i + 1, k_out, accepted | accept, key

    def cond(carry):
        i, accepted = carry[0], carry[2]
        return (~accepted).any() & (i < max_iters)

    k_init = jnp.full(shape, -1, prob.dtype)
    carry = (0, k_init, jnp.zeros(shape, bool), key)
    return lax.while_loop(cond, body, carry)[1].astype(dtype)


def _binomial(key, count, prob, shape, dtype):
    if shape is None:
        shape = _broadcast_shapes(np.shape(count), np.shape(prob))
    else:
        _check_shape("binomial", shape, np.shape(count), np.shape(prob))
    prob = jnp.asarray(promote_dtypes_inexact(prob)[0])
    count = lax.convert_element_type(count, prob.dtype)
    count = jnp.broadcast_to(count, shape)
    prob = jnp.broadcast_to(prob, shape)
    # Sample with q = min(p, 1 - p) and reflect; invalid inputs give nan, infinite counts inf.
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = _isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = _isnan(q)
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, jnp.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = jnp.floor(count)
    count_inv = lax.select(use_inversion, count, jnp.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, jnp.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, jnp.full_like(q, 0.5), q)
    max_iters = dtype.type(dtypes.finfo(dtype).max)
    samples = lax.select(use_inversion,
                         _binomial_inversion(key, count_inv, q, shape, dtype, max_iters),
                         _btrs(key, count_btrs, q_btrs, shape, dtype, max_iters))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, jnp.full_like(samples, np.nan, dtype), samples)
    samples = lax.select(count_inf & (~invalid), jnp.full_like(samples, np.inf, dtype), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      count.astype(dtype) - samples)


_binomial_jit = jit(_binomial, static_argnums=(3, 4))


def binomial(key, n, p, shape: Sequence[int] | None = None, dtype=None):
    """Binomial(n, p) samples (as floats: nan for invalid parameters, inf for n = inf)."""
    words, _ = check_prng_key("binomial", key)
    _check_sampler_args("binomial", n, p)
    dtype = _float_dtype("binomial", dtype)
    if shape is not None:
        shape = canonicalize_shape(shape)
    return _binomial_jit(words, n, p, shape, dtype)


def multinomial(key, n, p, *, shape: Sequence[int] | None = None, dtype=None,
                unroll: int | bool = 1):
    """Multinomial(n, p) counts over the last axis of ``p``, as a float dtype."""
    words, _ = check_prng_key("multinomial", key)
    _check_sampler_args("multinomial", n, p)
    n, p = (jnp.asarray(v) for v in promote_dtypes_inexact(n, p))
    dtype = _float_dtype("multinomial", dtype)
    shape = p.shape if shape is None else canonicalize_shape(shape)
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.broadcast_to(p, shape)

    # One binomial per category, of what the earlier categories left, with the conditional
    # probability p_i / (p_i + ... + p_last).
    def step(remainder, ratio_key):
        ratio, k = ratio_key
        count = binomial(k, remainder, ratio.clip(0, 1), dtype=remainder.dtype)
        return remainder - count, count

    p = jnp.moveaxis(p, -1, 0)
    remaining = lax.cumsum(p, 0, reverse=True)
    ratios = p / jnp.where(remaining == 0, 1, remaining)
    keys = split(words, ratios.shape[0])
    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    return jnp.moveaxis(counts, 0, -1).astype(dtype)
