"""The negative binomial distribution (``jax.scipy.stats.nbinom``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """Log of the probability of ``k`` failures before the ``n``-th success."""
    k, n, p, loc = promote_args_inexact("nbinom.logpmf", k, n, p, loc)
    one = const(k, 1)
    y = lax.sub(k, loc)
    log_comb = lax.sub(lax.sub(special.gammaln(lax.add(y, n)), special.gammaln(n)),
                       special.gammaln(lax.add(y, one)))
    log_kernel = lax.add(special.xlogy(n, p), special.xlogy(y, lax.sub(one, p)))
    return jnp.where(lax.lt(k, loc), -np.inf, lax.add(log_comb, log_kernel))


def pmf(k, n, p, loc=0):
    """Negative binomial probability mass function."""
    return lax.exp(logpmf(k, n, p, loc))
