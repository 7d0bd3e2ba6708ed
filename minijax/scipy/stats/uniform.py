"""The uniform distribution on ``[loc, loc + scale]`` (``jax.scipy.stats.uniform``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "logpdf", "pdf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """Log of the uniform probability density function (``-inf`` outside the support)."""
    x, loc, scale = promote_args_inexact("uniform.logpdf", x, loc, scale)
    outside = jnp.logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc))
    return jnp.where(outside, -np.inf, lax.neg(lax.log(scale)))


def pdf(x, loc=0, scale=1):
    """Uniform probability density function."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """Uniform cumulative distribution function."""
    x, loc, scale = promote_args_inexact("uniform.cdf", x, loc, scale)
    hi = lax.add(loc, scale)
    return jnp.select([lax.lt(x, loc), lax.gt(x, hi), lax.ge(x, loc) & lax.le(x, hi)],
                      [const(x, 0), const(x, 1), lax.div(lax.sub(x, loc), scale)])


def ppf(q, loc=0, scale=1):
    """Uniform percent point function; NaN outside ``[0, 1]``."""
    q, loc, scale = promote_args_inexact("uniform.ppf", q, loc, scale)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan,
                     lax.add(loc, lax.mul(scale, q)))
