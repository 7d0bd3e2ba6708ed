"""The von Mises distribution on the circle (``jax.scipy.stats.vonmises``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_args_inexact
from minijax.numpy._math import scalar_like as const

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
    """Log of the von Mises density with concentration ``kappa > 0`` (NaN otherwise),
    ``kappa (cos x - 1) - log(2 pi i0e(kappa))``."""
    x, kappa = promote_args_inexact("vonmises.logpdf", x, kappa)
    out = kappa * (jnp.cos(x) - 1) - jnp.log(2 * np.pi * lax.bessel_i0e(kappa))
    return jnp.where(lax.gt(kappa, const(kappa, 0)), out, np.nan)


def pdf(x, kappa):
    """Von Mises probability density function."""
    return lax.exp(logpdf(x, kappa))
