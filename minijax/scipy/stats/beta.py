"""The beta distribution (``jax.scipy.stats.beta``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x, a, b, loc=0, scale=1):
    """Log of the beta density on ``[loc, loc + scale]`` (NaN for non-positive ``a``,
    ``b`` or ``scale``)."""
    x, a, b, loc, scale = promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
    one = const(x, 1)
    y = lax.div(lax.sub(x, loc), scale)
    log_kernel = lax.add(special.xlogy(lax.sub(a, one), y),
                         special.xlog1py(lax.sub(b, one), lax.neg(y)))
    out = lax.sub(lax.add(lax.neg(special.betaln(a, b)), log_kernel), lax.log(scale))
    out = jnp.where(jnp.logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc)),
                    -np.inf, out)
    zero = const(a, 0)
    return jnp.where(lax.le(a, zero) | lax.le(b, zero) | lax.le(scale, zero), np.nan, out)


def pdf(x, a, b, loc=0, scale=1):
    """Beta probability density function."""
    return lax.exp(logpdf(x, a, b, loc, scale))


def _unit(x, loc, scale):
    return lax.clamp(const(x, 0), lax.div(lax.sub(x, loc), scale), const(x, 1))


def cdf(x, a, b, loc=0, scale=1):
    """Beta cumulative distribution function, ``betainc(a, b, y)``."""
    x, a, b, loc, scale = promote_args_inexact("beta.cdf", x, a, b, loc, scale)
    return special.betainc(a, b, _unit(x, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    """Log of the beta cumulative distribution function."""
    return lax.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    """Beta survival function, ``betainc(b, a, 1 - y)``."""
    x, a, b, loc, scale = promote_args_inexact("beta.sf", x, a, b, loc, scale)
    return special.betainc(b, a, 1 - _unit(x, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    """Log of the beta survival function."""
    return lax.log(sf(x, a, b, loc, scale))
