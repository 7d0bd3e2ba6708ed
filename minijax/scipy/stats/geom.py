"""The geometric distribution on ``{1, 2, ...}`` (``jax.scipy.stats.geom``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
    """Log of the geometric probability mass function (``-inf`` for ``k - loc <= 0``)."""
    k, p, loc = promote_args_inexact("geom.logpmf", k, p, loc)
    y = lax.sub(k, loc)
    out = special.xlog1py(lax.sub(y, const(k, 1)), -p) + lax.log(p)
    return jnp.where(lax.le(y, const(k, 0)), -np.inf, out)


def pmf(k, p, loc=0):
    """Geometric probability mass function."""
    return jnp.exp(logpmf(k, p, loc))
