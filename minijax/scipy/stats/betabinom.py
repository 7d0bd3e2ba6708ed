"""The beta-binomial distribution (``jax.scipy.stats.betabinom``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const
from minijax.stages.jit import jit

__all__ = ["logpmf", "pmf"]


@jit
def logpmf(k, n, a, b, loc=0):
    """Log of the beta-binomial probability mass function (``k`` is floored; NaN for a
    negative ``n`` or non-positive ``a``, ``b``)."""
    k, n, a, b, loc = promote_args_inexact("betabinom.logpmf", k, n, a, b, loc)
    y = lax.sub(lax.floor(k), loc)
    one, zero = const(y, 1), const(y, 0)
    log_comb = lax.neg(lax.add(lax.log1p(n), special.betaln(lax.add(lax.sub(n, y), one),
                                                            lax.add(y, one))))
    log_beta = lax.sub(special.betaln(lax.add(y, a), lax.add(lax.sub(n, y), b)),
                       special.betaln(a, b))
    out = lax.add(log_comb, log_beta)
    out = jnp.where(lax.eq(y, zero) & lax.eq(n, zero), 0.0, out)
    outside = lax.lt(y, lax.neg(loc)) | lax.gt(y, n) | lax.le(lax.add(y, a), zero)
    out = jnp.where(outside, -np.inf, out)
    return jnp.where(lax.lt(n, zero) | lax.le(a, zero) | lax.le(b, zero), np.nan, out)


def pmf(k, n, a, b, loc=0):
    """Beta-binomial probability mass function."""
    return lax.exp(logpmf(k, n, a, b, loc))
