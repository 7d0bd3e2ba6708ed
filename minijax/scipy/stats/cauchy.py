"""The Cauchy distribution (``jax.scipy.stats.cauchy``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x, loc=0, scale=1):
    """Log of the Cauchy probability density function."""
    x, loc, scale = promote_args_inexact("cauchy.logpdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    return lax.neg(lax.add(lax.log(lax.mul(const(x, np.pi), scale)), lax.log1p(lax.mul(z, z))))


def pdf(x, loc=0, scale=1):
    """Cauchy probability density function."""
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """Cauchy cumulative distribution function, ``1/2 + arctan(z) / pi``."""
    x, loc, scale = promote_args_inexact("cauchy.cdf", x, loc, scale)
    z = lax.div(lax.sub(x, loc), scale)
    return lax.add(const(x, 0.5), lax.mul(lax.div(const(x, 1.0), const(x, np.pi)),
                                          jnp.arctan(z)))


def logcdf(x, loc=0, scale=1):
    """Log of the Cauchy cumulative distribution function."""
    return lax.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    """Cauchy survival function, by symmetry."""
    x, loc, scale = promote_args_inexact("cauchy.sf", x, loc, scale)
    return cdf(lax.neg(x), lax.neg(loc), scale)


def logsf(x, loc=0, scale=1):
    """Log of the Cauchy survival function."""
    x, loc, scale = promote_args_inexact("cauchy.logsf", x, loc, scale)
    return logcdf(lax.neg(x), lax.neg(loc), scale)


def _quantile(fname, q, loc, scale, sign):
    q, loc, scale = promote_args_inexact(fname, q, loc, scale)
    angle = lax.mul(const(q, np.pi), q)
    half_pi = const(q, np.pi / 2)
    unit = lax.tan(lax.sub(angle, half_pi) if sign > 0 else lax.sub(half_pi, angle))
    return lax.add(lax.mul(unit, scale), loc)


def ppf(q, loc=0, scale=1):
    """Cauchy percent point function (inverse of ``cdf``)."""
    return _quantile("cauchy.ppf", q, loc, scale, 1)


def isf(q, loc=0, scale=1):
    """Cauchy inverse survival function (inverse of ``sf``)."""
    return _quantile("cauchy.isf", q, loc, scale, -1)
