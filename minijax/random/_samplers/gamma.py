"""``random_gamma_p`` (with jax's implicit-reparameterization gradient) and the samplers
built on it: gamma, loggamma, beta, dirichlet, chisquare, f, t, ..."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import numpy as np

import minijax.numpy as jnp
from minijax import lax
from minijax.api.vmap import vmap
from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.trace import Primitive, Tracer, get_aval, trace_to_jaxpr
from minijax.random._keys import _split_impl, canonicalize_shape, check_prng_key
from minijax.random._samplers._common import (_check_all_safe_to_cast, _check_broadcast_shapes,
                                              _check_shape, _float_dtype, _float_sampler_args,
                                              _no_sharding, _split_n)
from minijax.random._samplers.basic import _exponential, _normal, _normal_real, _uniform
from minijax.random._samplers.transforms import _rademacher
from minijax.stages.jit import jit
from minijax.transforms.ad import defjvp2
from minijax.transforms.batching import bdim_at


# ---- gamma and the distributions built on it ----------------------------------------------------

def _gamma_one(key, alpha, log_space: bool):
    """One Gamma(alpha, 1) sample by Marsaglia and Tsang's method (alpha < 1 is boosted:
    sample Gamma(alpha + 1) and multiply by U ** (1 / alpha)); its log if ``log_space``."""
    dt = get_aval(alpha).dtype

    def c(v):
        return np.asarray(v, dt)

    zero, one, two, minus_one = c(0), c(1), c(2), c(-1)
    one_over_two, one_over_three, squeeze_const = c(0.5), c(1. / 3.), c(0.0331)
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, one_over_three)
    cc = lax.div(one_over_three, lax.sqrt(d))

    def rejected(kXVU):
        _, X, V, U = kXVU
        squeeze = lax.ge(U, lax.sub(one, lax.mul(squeeze_const, lax.mul(X, X))))
        full = lax.ge(lax.log(U), lax.add(lax.mul(X, one_over_two),
                                          lax.mul(d, lax.add(lax.sub(one, V), lax.log(V)))))
        return lax.bitwise_and(squeeze, full)

    def propose(kXVU):
        def next_kxv(kxv):
            k, sub = _split_n(kxv[0], 2)
            x = _normal_real(sub, (), dt)
            return k, x, lax.add(one, lax.mul(x, cc))

        k, x_key, u_key = _split_n(kXVU[0], 3)
        _, x, v = lax.while_loop(lambda kxv: lax.le(kxv[2], zero), next_kxv,
                                 (x_key, zero, minus_one))
        X = lax.mul(x, x)
        V = lax.mul(lax.mul(v, v), v)
        U = _uniform(u_key, 0., 1., (), dt)
        return k, X, V, U

    key, subkey = _split_n(key, 2)
    _, _, V, _ = lax.while_loop(rejected, propose, (key, zero, one, two))
    if log_space:
        log_samples = lax.neg(_exponential(subkey, (), dt))
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, zero)), zero,
                               lax.mul(log_samples, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
    samples = 1 - _uniform(subkey, 0., 1., (), dt)
    boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, V), boost)


def _gamma_impl(key, a, *, log_space: bool):
    """Gamma(a, 1) samples of a's shape. ``key`` is uint32[*batch, 2] for a's leading
    ``batch`` dimensions (vmapped keys): each key is split into one key per sample of its
    slice of ``a``, and the samples are drawn elementwise."""
    key_batch = get_aval(key).shape[:-1]
    shape = get_aval(a).shape
    n = math.prod(shape[len(key_batch):])
    if key_batch:
        keys = vmap(lambda k: _split_impl(k, (n,)))(lax.reshape(key, (math.prod(key_batch), 2)))
        keys = lax.reshape(keys, (math.prod(shape), 2))
    else:
        keys = _split_impl(key, (n,))
    alphas = lax.reshape(a, (math.prod(shape),))
    samples = vmap(partial(_gamma_one, log_space=log_space))(keys, alphas)
    return lax.reshape(samples, shape)


def _gamma_grad(sample, a, log_space: bool):
    """d sample / d a for Gamma(a, 1) samples (or their logs, for ``log_space``)."""
    if log_space:
        samples = lax.exp(sample)
        tiny = jnp.full_like(samples, dtypes.finfo(get_aval(samples).dtype).tiny)
        samples = lax.select(lax.eq(samples, jnp.zeros_like(samples)), tiny, samples)
        return lax.div(lax.random_gamma_grad(a, samples), samples)
    return lax.random_gamma_grad(a, sample)


# random_gamma_p(key, a, *, log_space): the gamma sampler as one primitive, as in jax, so
# that its derivative in ``a`` is the implicit-reparameterization one (the sample moves
# with a so that its quantile stays put) rather than that of the rejection loop.

random_gamma_p = Primitive("random_gamma")


def _random_gamma_abstract(key, a, *, log_space):
    if key.dtype != np.uint32 or key.ndim < 1 or key.shape[-1] != 2:
        raise TypeError(f"random_gamma: expected uint32[..., 2] key words, got "
                        f"{key.str_short()}")
    if not dtypes.is_float(a.dtype):
        raise TypeError(f"random_gamma: expected a floating-point a, got {a.str_short()}")
    if a.shape[:key.ndim - 1] != key.shape[:-1]:
        raise TypeError(f"random_gamma: the key's batch shape {key.shape[:-1]} must lead "
                        f"a's shape {a.shape}")
    return ShapedArray(a.shape, a.dtype)


def _random_gamma_lowering(ctx, key, a, *, log_space):
    avals = [ShapedArray(v.aval.shape, v.aval.dtype) for v in (key, a)]
    jaxpr, consts, _ = trace_to_jaxpr(
        lambda k, x: ([_gamma_impl(k, x, log_space=log_space)], None), avals)
    return ctx.lower_jaxpr(ClosedJaxpr(jaxpr, consts), [key, a])[0]


def _random_gamma_batch(trace, vals, dims, *, log_space):
    # Both batch dimensions to the front (an unbatched key is shared by every example).
    key, a = (bdim_at(v, d, trace.axis_size, 0) for v, d in zip(vals, dims))
    return random_gamma_p.bind(key, a, log_space=log_space), 0


random_gamma_p.def_abstract_eval(_random_gamma_abstract)
random_gamma_p.def_lowering(_random_gamma_lowering)
random_gamma_p.def_batch(_random_gamma_batch)
defjvp2(random_gamma_p, None,
        lambda t, ans, key, a, *, log_space: lax.mul(t, _gamma_grad(ans, a, log_space)))


def _gamma(key, a, shape, dtype, log_space=False):
    if shape is None:
        shape = np.shape(a)
    else:
        _check_shape("gamma", shape, np.shape(a))
    a = lax.convert_element_type(a, dtype)
    if np.shape(a) != shape:
        a = jnp.broadcast_to(a, shape)
    return random_gamma_p.bind(key, a, log_space=log_space)


_gamma_jit = jit(_gamma, static_argnames=("shape", "dtype", "log_space"))


def gamma(key, a, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """Gamma(a, 1) samples; differentiable in ``a`` (implicit reparameterization)."""
    words, _ = check_prng_key("gamma", key)
    _no_sharding(out_sharding)
    dtype = _float_dtype("gamma", dtype)
    if shape is not None:
        shape = canonicalize_shape(shape)
    return _gamma_jit(words, a, shape=shape, dtype=dtype)


def loggamma(key, a, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """The logs of Gamma(a, 1) samples, accurate for small ``a`` (where samples underflow)."""
    words, _ = check_prng_key("loggamma", key)
    _no_sharding(out_sharding)
    dtype = _float_dtype("gamma", dtype)
    if shape is not None:
        shape = canonicalize_shape(shape)
    return _gamma_jit(words, a, shape=shape, dtype=dtype, log_space=True)


def _beta(key, a, b, shape, dtype):
    a = lax.convert_element_type(a, dtype)
    b = lax.convert_element_type(b, dtype)
    key_a, key_b = _split_n(key, 2)
    a = jnp.broadcast_to(a, shape)
    b = jnp.broadcast_to(b, shape)
    log_gamma_a = _gamma(key_a, a, shape, dtype, log_space=True)
    log_gamma_b = _gamma(key_b, b, shape, dtype, log_space=True)
    # gamma_a / (gamma_a + gamma_b), scaled by the larger one to avoid underflow.
    log_max = lax.max(log_gamma_a, log_gamma_b)
    gamma_a_scaled = jnp.exp(log_gamma_a - log_max)
    gamma_b_scaled = jnp.exp(log_gamma_b - log_max)
    return gamma_a_scaled / (gamma_a_scaled + gamma_b_scaled)


_beta_jit = jit(_beta, static_argnums=(3, 4))


def beta(key, a, b, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """Beta(a, b) samples."""
    words, _ = check_prng_key("beta", key)
    _no_sharding(out_sharding)
    dtype = _float_dtype("beta", dtype)
    _check_all_safe_to_cast("beta", dtype, a, b)
    shape = _check_broadcast_shapes("beta", shape, a, b)
    return _beta_jit(words, a, b, shape, dtype)


def _softmax_last(x):
    x_max = jnp.max(x, axis=-1, keepdims=True)
    unnormalized = jnp.exp(x - lax.stop_gradient(x_max))
    return unnormalized / jnp.sum(unnormalized, axis=-1, keepdims=True)


def _dirichlet(key, alpha, shape, dtype):
    if np.ndim(alpha) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == "
                         f"{np.ndim(alpha)}")
    if shape is None:
        shape = np.shape(alpha)[:-1]
    else:
        _check_shape("dirichlet", shape, np.shape(alpha)[:-1])
    alpha = lax.convert_element_type(alpha, dtype)
    # Normalized gamma samples, computed from their logs (softmax) for small alphas.
    log_gamma_samples = _gamma(key, alpha, shape + np.shape(alpha)[-1:], dtype, log_space=True)
    return _softmax_last(log_gamma_samples)


_dirichlet_jit = jit(_dirichlet, static_argnums=(2, 3))


def dirichlet(key, alpha, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """Dirichlet(alpha) samples over the last axis of ``alpha``."""
    words, _ = check_prng_key("dirichlet", key)
    _no_sharding(out_sharding)
    dtype = _float_dtype("dirichlet", dtype)
    if shape is not None:
        shape = canonicalize_shape(shape)
    return _dirichlet_jit(words, alpha, shape, dtype)


def _t(key, df, shape, dtype):
    if shape is None:
        shape = np.shape(df)
    else:
        _check_shape("t", shape, np.shape(df))
    df = lax.convert_element_type(df, dtype)
    key_n, key_g = _split_n(key, 2)
    n = _normal(key_n, shape, dtype)
    half_df = lax.div(df, np.asarray(2, dtype))
    g = _gamma(key_g, half_df, shape, dtype)
    return n * jnp.sqrt(half_df / g)


def _chisquare(key, df, shape, dtype):
    df = lax.convert_element_type(df, dtype)
    two = np.asarray(2, dtype)
    log_g = _gamma(key, lax.div(df, two), shape, dtype, log_space=True)
    return lax.mul(jnp.exp(log_g), two)


def _f(key, dfnum, dfden, shape, dtype):
    dfden = lax.convert_element_type(dfden, dtype)
    dfnum = lax.convert_element_type(dfnum, dtype)
    key_dfd, key_dfn = _split_n(key, 2)
    chi2_dfn = _chisquare(key_dfn, dfnum, shape, dtype)
    chi2_dfd = _chisquare(key_dfd, dfden, shape, dtype)
    return lax.div(lax.div(chi2_dfn, dfnum), lax.div(chi2_dfd, dfden))


_t_jit = jit(_t, static_argnums=(2, 3))
_chisquare_jit = jit(_chisquare, static_argnums=(2, 3))
_f_jit = jit(_f, static_argnums=(3, 4))


def t(key, df, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """Student's t samples with ``df`` degrees of freedom."""
    words, shape, dtype = _float_sampler_args("t", key, (df,), shape, dtype, out_sharding)
    return _t_jit(words, df, shape, dtype)


def chisquare(key, df, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """Chi-square samples with ``df`` degrees of freedom."""
    words, shape, dtype = _float_sampler_args("chisquare", key, (df,), shape, dtype, out_sharding)
    return _chisquare_jit(words, df, shape, dtype)


def f(key, dfnum, dfden, shape: Sequence[int] | None = None, dtype=None, *, out_sharding=None):
    """F-distribution samples with ``dfnum`` and ``dfden`` degrees of freedom."""
    words, shape, dtype = _float_sampler_args("f", key, (dfnum, dfden), shape, dtype, out_sharding)
    return _f_jit(words, dfnum, dfden, shape, dtype)


def _generalized_normal(key, p, shape, dtype):
    k_g, k_r = _split_n(key, 2)
    g = _gamma(k_g, 1 / p, shape, dtype)
    r = _rademacher(k_r, shape, dtype)
    return r * g ** (1 / p)


_generalized_normal_jit = jit(_generalized_normal, static_argnums=(2, 3))


def generalized_normal(key, p, shape: Sequence[int] = (), dtype=None, *, out_sharding=None):
    """Samples with density proportional to ``exp(-|x| ** p)``."""
    shape = canonicalize_shape(shape)
    words, _ = check_prng_key("generalized_normal", key)
    _no_sharding(out_sharding)
    dtype = _float_dtype("generalized_normal", dtype)
    return _generalized_normal_jit(words, p, shape, dtype)


def _ball(key, p, d, shape, dtype):
    k1, k2 = _split_n(key, 2)
    g = _generalized_normal(k1, p, (*shape, d), dtype)
    e = _exponential(k2, shape, dtype)
    return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


_ball_jit = jit(_ball, static_argnums=(2, 3, 4))


def ball(key, d: int, p: float = 2, shape: Sequence[int] = (), dtype=None, *,
         out_sharding=None):
    """Points uniform in the ``d``-dimensional unit ``p``-norm ball."""
    shape = canonicalize_shape(shape)
    words, _ = check_prng_key("ball", key)
    _no_sharding(out_sharding)
    dtype = _float_dtype("ball", dtype)
    d = int(d.to_concrete("ball") if isinstance(d, Tracer) else d)
    return _ball_jit(words, p, d, shape, dtype)
