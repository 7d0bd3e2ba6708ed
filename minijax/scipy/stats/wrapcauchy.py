"""The wrapped Cauchy distribution on ``[0, 2 pi]`` (``jax.scipy.stats.wrapcauchy``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.numpy._math import scalar_like as const

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
    """Log of the wrapped Cauchy density with shape ``0 < c < 1`` (NaN otherwise;
    ``-inf`` outside ``[0, 2 pi]``)."""
    x, c = promote_args_inexact("wrapcauchy.logpdf", x, c)
    inside = lax.ge(x, const(x, 0)) & lax.le(x, const(x, 2 * np.pi))
    density = (jnp.log(1 - c * c) - jnp.log(2 * np.pi)
               - jnp.log(1 + c * c - 2 * c * jnp.cos(x)))
    good_c = lax.gt(c, const(c, 0)) & lax.lt(c, const(c, 1))
    return jnp.where(good_c, jnp.where(inside, density, -np.inf), np.nan)


def pdf(x, c):
    """Wrapped Cauchy probability density function."""
    return lax.exp(logpdf(x, c))
