"""The gamma distribution (``jax.scipy.stats.gamma``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x, a, loc=0, scale=1):
    """Log of the gamma density with shape ``a`` (``-inf`` below ``loc``)."""
    x, a, loc, scale = promote_args_inexact("gamma.logpdf", x, a, loc, scale)
    ok = lax.ge(x, loc)
    one = const(x, 1)
    y = jnp.where(ok, lax.div(lax.sub(x, loc), scale), one)
    log_kernel = lax.sub(special.xlogy(lax.sub(a, one), y), y)
    out = lax.sub(log_kernel, lax.add(special.gammaln(a), lax.log(scale)))
    return jnp.where(ok, out, -np.inf)


def pdf(x, a, loc=0, scale=1):
    """Gamma probability density function."""
    return lax.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    """Gamma cumulative distribution function, ``gammainc(a, y)``."""
    x, a, loc, scale = promote_args_inexact("gamma.cdf", x, a, loc, scale)
    y = lax.clamp(const(x, 0), lax.div(lax.sub(x, loc), scale), const(x, np.inf))
    return special.gammainc(a, y)


def logcdf(x, a, loc=0, scale=1):
    """Log of the gamma cumulative distribution function."""
    return lax.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    """Gamma survival function, ``gammaincc(a, y)``."""
    x, a, loc, scale = promote_args_inexact("gamma.sf", x, a, loc, scale)
    y = lax.div(lax.sub(x, loc), scale)
    return jnp.where(lax.lt(y, const(y, 0)), 1, special.gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
    """Log of the gamma survival function."""
    return lax.log(sf(x, a, loc, scale))
