"""The Pareto distribution (``jax.scipy.stats.pareto``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def _below(x, loc, scale):
    return lax.lt(x, lax.add(loc, scale))


def logpdf(x, b, loc=0, scale=1):
    """Log of the Pareto probability density function with shape ``b``."""
    x, b, loc, scale = promote_args_inexact("pareto.logpdf", x, b, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    out = lax.neg(lax.add(lax.log(lax.div(scale, b)),
                          lax.mul(lax.add(b, const(x, 1)), lax.log(z))))
    return jnp.where(_below(x, loc, scale), -np.inf, out)


def pdf(x, b, loc=0, scale=1):
    """Pareto probability density function."""
    return lax.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    """Pareto cumulative distribution function, ``1 - z**-b``."""
    x, b, loc, scale = promote_args_inexact("pareto.cdf", x, b, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    out = lax.sub(const(x, 1), lax.pow(z, lax.neg(b)))
    return jnp.where(_below(x, loc, scale), const(x, 0), out)


def logcdf(x, b, loc=0, scale=1):
    """Log of the Pareto cumulative distribution function."""
    x, b, loc, scale = promote_args_inexact("pareto.logcdf", x, b, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    out = lax.log1p(lax.neg(lax.pow(z, lax.neg(b))))
    return jnp.where(_below(x, loc, scale), -np.inf, out)


def logsf(x, b, loc=0, scale=1):
    """Log of the Pareto survival function, ``-b log z``."""
    x, b, loc, scale = promote_args_inexact("pareto.logsf", x, b, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    out = lax.neg(lax.mul(b, lax.log(z)))
    return jnp.where(_below(x, loc, scale), const(x, 0), out)


def sf(x, b, loc=0, scale=1):
    """Pareto survival function."""
    return lax.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    """Pareto percent point function; NaN outside ``[0, 1]``."""
    q, b, loc, scale = promote_args_inexact("pareto.ppf", q, b, loc, scale)
    one = const(q, 1)
    out = lax.add(loc, lax.mul(scale, lax.pow(lax.sub(one, q), lax.neg(lax.div(one, b)))))
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), np.nan, out)
