"""The chi-squared distribution (``jax.scipy.stats.chi2``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x, df, loc=0, scale=1):
    """Log of the chi-squared density with ``df`` degrees of freedom."""
    x, df, loc, scale = promote_args_inexact("chi2.logpdf", x, df, loc, scale)
    one, two = const(x, 1), const(x, 2)
    y = lax.div(lax.sub(x, loc), scale)
    half_df = lax.div(df, two)
    kernel = lax.sub(lax.mul(lax.sub(half_df, one), lax.log(y)), lax.div(y, two))
    log_norm = lax.neg(lax.add(lax.lgamma(half_df), lax.div(lax.mul(lax.log(two), df), two)))
    return jnp.where(lax.lt(x, loc), -np.inf,
                     lax.add(lax.sub(log_norm, lax.log(scale)), kernel))


def pdf(x, df, loc=0, scale=1):
    """Chi-squared probability density function."""
    return lax.exp(logpdf(x, df, loc, scale))


def _half(x, loc, scale):
    """``(x - loc) / (2 scale)``, clamped below at 0."""
    return lax.clamp(const(x, 0), lax.div(lax.sub(x, loc), lax.mul(scale, const(scale, 2))),
                     const(x, np.inf))


def cdf(x, df, loc=0, scale=1):
    """Chi-squared cumulative distribution function, ``gammainc(df / 2, y / 2)``."""
    x, df, loc, scale = promote_args_inexact("chi2.cdf", x, df, loc, scale)
    return special.gammainc(lax.div(df, const(scale, 2)), _half(x, loc, scale))


def logcdf(x, df, loc=0, scale=1):
    """Log of the chi-squared cumulative distribution function."""
    return lax.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    """Chi-squared survival function, ``gammaincc(df / 2, y / 2)``."""
    x, df, loc, scale = promote_args_inexact("chi2.sf", x, df, loc, scale)
    return special.gammaincc(lax.div(df, const(scale, 2)), _half(x, loc, scale))


def logsf(x, df, loc=0, scale=1):
    """Log of the chi-squared survival function."""
    return lax.log(sf(x, df, loc, scale))
