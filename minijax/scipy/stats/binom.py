"""The binomial distribution (``jax.scipy.stats.binom``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    """Log of the binomial probability mass function of ``k`` successes in ``n`` trials."""
    k, n, p, loc = promote_args_inexact("binom.logpmf", k, n, p, loc)
    y = lax.sub(k, loc)
    log_comb = lax.sub(special.gammaln(n + 1),
                       lax.add(special.gammaln(y + 1), special.gammaln(n - y + 1)))
    log_kernel = lax.add(special.xlogy(y, p), special.xlog1py(lax.sub(n, y), lax.neg(p)))
    out = lax.add(log_comb, log_kernel)
    zero = const(y, 0)
    out = jnp.where((lax.eq(y, zero) & lax.eq(n, zero)) | lax.eq(log_kernel, zero), 0.0, out)
    return jnp.where(lax.ge(k, loc) & lax.lt(k, loc + n + 1), out, -np.inf)


def pmf(k, n, p, loc=0):
    """Binomial probability mass function."""
    return lax.exp(logpmf(k, n, p, loc))
