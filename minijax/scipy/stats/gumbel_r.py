"""The right-skewed Gumbel distribution (``jax.scipy.stats.gumbel_r``).

Every function is NaN for a non-positive ``scale``.
"""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax import nn  # (nn.log1mexp at call time: minijax.nn imports minijax.scipy)
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def _check(fname, x, loc, scale):
    x, loc, scale = promote_args_inexact(fname, x, loc, scale)
    return lax.gt(scale, const(scale, 0)), x, loc, scale


def logpdf(x, loc=0, scale=1):
    """Log of the right Gumbel density, ``-z - exp(-z) - log(scale)``."""
    ok, x, loc, scale = _check("gumbel_r.logpdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    out = lax.add(special.xlogy(-1, scale), lax.neg(lax.add(z, lax.exp(lax.neg(z)))))
    return jnp.where(ok, out, np.nan)


def pdf(x, loc=0, scale=1):
    """Right Gumbel probability density function."""
    return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    """Log of the right Gumbel cumulative distribution function, ``-exp(-z)``."""
    ok, x, loc, scale = _check("gumbel_r.logcdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    return jnp.where(ok, lax.neg(lax.exp(lax.neg(z))), np.nan)


def cdf(x, loc=0, scale=1):
    """Right Gumbel cumulative distribution function."""
    return lax.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """Right Gumbel survival function, ``1 - exp(-exp(-z))``."""
    ok, x, loc, scale = _check("gumbel_r.sf", x, loc, scale)
    neg_z = lax.div(lax.sub(loc, x), scale)
    return jnp.where(ok, lax.sub(const(x, 1), lax.exp(lax.neg(lax.exp(neg_z)))), np.nan)


def logsf(x, loc=0, scale=1):
    """Log of the right Gumbel survival function."""
    ok, x, loc, scale = _check("gumbel_r.logsf", x, loc, scale)
    neg_z = lax.div(lax.sub(loc, x), scale)
    return jnp.where(ok, nn.log1mexp(lax.exp(neg_z)), np.nan)


def ppf(p, loc=0, scale=1):
    """Right Gumbel percent point function; NaN outside ``(0, 1)``."""
    p, loc, scale = promote_args_inexact("gumbel_r.ppf", p, loc, scale)
    ok = lax.bitwise_and(lax.gt(p, const(p, 0)), lax.lt(p, const(p, 1)))
    out = lax.sub(loc, lax.mul(scale, lax.log(special.xlogy(-1, p))))
    return jnp.where(ok, out, np.nan)
