"""The left-skewed Gumbel distribution (``jax.scipy.stats.gumbel_l``).

Every function is NaN for a non-positive ``scale``.
"""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def _z(fname, x, loc, scale):
    x, loc, scale = promote_args_inexact(fname, x, loc, scale)
    return lax.gt(scale, const(scale, 0)), lax.div(lax.sub(x, loc), scale), scale


def logpdf(x, loc=0, scale=1):
    """Log of the left Gumbel density, ``z - exp(z) - log(scale)``."""
    ok, z, scale = _z("gumbel_l.logpdf", x, loc, scale)
    out = lax.add(special.xlogy(-1, scale), lax.sub(z, lax.exp(z)))
    return jnp.where(ok, out, np.nan)


def pdf(x, loc=0, scale=1):
    """Left Gumbel probability density function."""
    return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """Log of the left Gumbel cumulative distribution function, ``log(1 - exp(-exp(z)))``."""
    ok, z, _ = _z("gumbel_l.logcdf", x, loc, scale)
    return jnp.where(ok, lax.log(-lax.expm1(lax.neg(lax.exp(z)))), np.nan)


def cdf(x, loc=0, scale=1):
    """Left Gumbel cumulative distribution function."""
    return lax.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    """Log of the left Gumbel survival function, ``-exp(z)``."""
    ok, z, _ = _z("gumbel_l.logsf", x, loc, scale)
    return jnp.where(ok, lax.neg(lax.exp(z)), np.nan)


def sf(x, loc=0, scale=1):
    """Left Gumbel survival function."""
    return jnp.exp(logsf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    """Left Gumbel percent point function; NaN outside ``(0, 1)``."""
    p, loc, scale = promote_args_inexact("gumbel_l.ppf", p, loc, scale)
    ok = lax.bitwise_and(lax.gt(p, const(p, 0)), lax.lt(p, const(p, 1)))
    out = lax.add(loc, lax.mul(scale, lax.log(special.xlog1py(-1, lax.neg(p)))))
    return jnp.where(ok, out, np.nan)
