"""The Poisson distribution (``jax.scipy.stats.poisson``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact, promote_dtypes_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const
from minijax.stages.jit import jit

__all__ = ["cdf", "entropy", "logpmf", "pmf"]


def logpmf(k, mu, loc=0):
    """Log of the Poisson probability mass function (``-inf`` off the integers >= loc)."""
    k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
    y = lax.sub(k, loc)
    out = special.xlogy(y, mu) - special.gammaln(y + 1) - mu
    return jnp.where(lax.lt(y, const(k, 0)) | lax.ne(jnp.round(k), k), -np.inf, out)


def pmf(k, mu, loc=0):
    """Poisson probability mass function."""
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """Poisson cumulative distribution function, ``gammaincc(floor(k - loc) + 1, mu)``."""
    k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
    y = lax.sub(k, loc)
    zero = const(k, 0)
    return jnp.where(lax.lt(y, zero), zero, special.gammaincc(jnp.floor(1 + y), mu))


def _entropy_by_sum(mu, kmax: int, upper):
    """``-sum p log p`` over ``k < min(kmax, upper)``, one column per element of ``mu``."""
    k = jnp.arange(kmax, dtype=mu.dtype)[:, None]
    p = pmf(k, mu, 0)
    p = jnp.where(k < upper.astype(k.dtype)[None, :], p, 0.0)
    return jnp.sum(special.entr(p), axis=0)


@jit
def entropy(mu, loc=0):
    """Entropy of the Poisson distribution with mean ``mu``: an explicit sum for small
    and medium ``mu``, the asymptotic series ``log(2 pi e mu) / 2 - 1 / (12 mu)`` from
    100 on. ``loc`` changes nothing but the result's shape."""
    mu, loc = promote_dtypes_inexact(mu, loc)
    shape = jnp.broadcast_shapes(jnp.shape(mu), jnp.shape(loc))
    m = jnp.ravel(mu)
    small = _entropy_by_sum(m, 35, jnp.ceil(m + 20))
    medium = _entropy_by_sum(m, 250, jnp.ceil(m + 10 * jnp.sqrt(m) + 20))
    large = 0.5 * jnp.log(2 * np.pi * np.e * m) - 1.0 / (12 * m)
    out = jnp.where(m == 0, jnp.zeros_like(m),
                    jnp.where(m < 10, small, jnp.where(m < 100, medium, large)))
    return jnp.broadcast_to(jnp.reshape(out, jnp.shape(mu)), shape)
