"""The Bernoulli distribution (``jax.scipy.stats.bernoulli``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["cdf", "logpmf", "pmf", "ppf"]


def logpmf(k, p, loc=0):
    """Log of the Bernoulli probability mass function (``-inf`` outside ``{0, 1}``)."""
    k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
    y = lax.sub(k, loc)
    out = special.xlogy(y, p) + special.xlog1py(lax.sub(const(k, 1), y), -p)
    return jnp.where(jnp.logical_or(lax.lt(y, const(k, 0)), lax.gt(y, const(k, 1))),
                     -np.inf, out)


def pmf(k, p, loc=0):
    """Bernoulli probability mass function."""
    return jnp.exp(logpmf(k, p, loc))


def _bad_p(p):
    return jnp.isnan(p) | (p < const(p, 0)) | (p > const(p, 1))


def cdf(k, p):
    """Bernoulli cumulative distribution function; NaN for a ``p`` outside ``[0, 1]``."""
    k, p = promote_args_inexact("bernoulli.cdf", k, p)
    zero, one = const(k, 0), const(k, 1)
    return jnp.select([jnp.isnan(k) | _bad_p(p), lax.lt(k, zero), lax.lt(k, one),
                       lax.ge(k, one)], [np.nan, zero, one - p, one])


def ppf(q, p):
    """Bernoulli percent point function; NaN for a ``q`` or ``p`` outside ``[0, 1]``."""
    q, p = promote_args_inexact("bernoulli.ppf", q, p)
    zero, one = const(q, 0), const(q, 1)
    bad = jnp.isnan(q) | _bad_p(p) | (q < zero) | (q > one)
    return jnp.where(bad, np.nan, jnp.where(lax.le(q, one - p), zero, one))
