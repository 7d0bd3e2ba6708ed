"""The Laplace distribution (``jax.scipy.stats.laplace``)."""

from __future__ import annotations

from minijax import lax
from minijax.numpy._promote import promote_args_inexact
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "logpdf", "pdf"]


def logpdf(x, loc=0, scale=1):
    """Log of the Laplace probability density function."""
    x, loc, scale = promote_args_inexact("laplace.logpdf", x, loc, scale)
    dist = lax.div(lax.abs(lax.sub(x, loc)), scale)
    return lax.neg(lax.add(dist, lax.log(lax.mul(const(x, 2), scale))))


def pdf(x, loc=0, scale=1):
    """Laplace probability density function."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """Laplace cumulative distribution function."""
    x, loc, scale = promote_args_inexact("laplace.cdf", x, loc, scale)
    half = const(x, 0.5)
    z = lax.div(lax.sub(x, loc), scale)
    return lax.select(lax.le(z, const(x, 0)), lax.mul(half, lax.exp(z)),
                      lax.sub(const(x, 1), lax.mul(half, lax.exp(lax.neg(z)))))
