"""The normal distribution (``jax.scipy.stats.norm``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """Log of the normal probability density function.

    >>> norm.logpdf(0.0)   # -log(2 pi) / 2
    """
    x, loc, scale = promote_args_inexact("norm.logpdf", x, loc, scale)
    var = lax.square(scale)
    log_norm = lax.log(lax.mul(const(x, 2 * np.pi), var))
    return lax.div(lax.add(log_norm, lax.div(lax.square(lax.sub(x, loc)), var)), const(x, -2))


def pdf(x, loc=0, scale=1):
    """Normal probability density function."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """Normal cumulative distribution function, ``ndtr((x - loc) / scale)``."""
    x, loc, scale = promote_args_inexact("norm.cdf", x, loc, scale)
    return special.ndtr(lax.div(lax.sub(x, loc), scale))


def logcdf(x, loc=0, scale=1):
    """Log of the normal cumulative distribution function (accurate in the left tail)."""
    x, loc, scale = promote_args_inexact("norm.logcdf", x, loc, scale)
    return special.log_ndtr(lax.div(lax.sub(x, loc), scale))


def sf(x, loc=0, scale=1):
    """Normal survival function ``1 - cdf``, by symmetry."""
    x, loc, scale = promote_args_inexact("norm.sf", x, loc, scale)
    return cdf(lax.neg(x), lax.neg(loc), scale)


def logsf(x, loc=0, scale=1):
    """Log of the normal survival function."""
    x, loc, scale = promote_args_inexact("norm.logsf", x, loc, scale)
    return logcdf(lax.neg(x), lax.neg(loc), scale)


def ppf(q, loc=0, scale=1):
    """Normal percent point function (the inverse of ``cdf``); the result has the
    default float dtype (as in jax)."""
    return jnp.asarray(special.ndtri(q) * scale + loc, float)


def isf(q, loc=0, scale=1):
    """Normal inverse survival function, ``ppf(1 - q)``."""
    return ppf(lax.sub(const(q, 1), q), loc, scale)
