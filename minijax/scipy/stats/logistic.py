"""The logistic distribution (``jax.scipy.stats.logistic``)."""

from __future__ import annotations

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """Log of the logistic density, ``-2 logaddexp(z/2, -z/2) - log(scale)``."""
    x, loc, scale = promote_args_inexact("logistic.logpdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    two = const(z, 2)
    half = lax.div(z, two)
    return lax.sub(lax.mul(lax.neg(two), jnp.logaddexp(half, lax.neg(half))), lax.log(scale))


def pdf(x, loc=0, scale=1):
    """Logistic probability density function."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """Logistic cumulative distribution function, ``expit(z)``."""
    x, loc, scale = promote_args_inexact("logistic.cdf", x, loc, scale)
    return special.expit(lax.div(lax.sub(x, loc), scale))


def sf(x, loc=0, scale=1):
    """Logistic survival function, ``expit(-z)``."""
    x, loc, scale = promote_args_inexact("logistic.sf", x, loc, scale)
    return special.expit(lax.neg(lax.div(lax.sub(x, loc), scale)))


def ppf(x, loc=0, scale=1):
    """Logistic percent point function, ``loc + scale * logit(q)``."""
    x, loc, scale = promote_args_inexact("logistic.ppf", x, loc, scale)
    return lax.add(lax.mul(special.logit(x), scale), loc)


def isf(x, loc=0, scale=1):
    """Logistic inverse survival function, ``loc - scale * logit(q)``."""
    x, loc, scale = promote_args_inexact("logistic.isf", x, loc, scale)
    return lax.add(lax.mul(lax.neg(special.logit(x)), scale), loc)
