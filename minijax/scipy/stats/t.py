"""Student's t distribution (``jax.scipy.stats.t``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.numpy._promote import promote_args_inexact
from minijax.numpy._math import scalar_like as const

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    """Log of Student's t probability density function with ``df`` degrees of freedom."""
    x, df, loc, scale = promote_args_inexact("t.logpdf", x, df, loc, scale)
    two = const(x, 2)
    z = lax.div(lax.sub(x, loc), scale)
    half_df = lax.div(df, two)
    half_df_plus = lax.add(half_df, const(x, 0.5))
    log_scale_term = lax.div(lax.log(lax.mul(lax.mul(lax.mul(scale, scale), const(x, np.pi)),
                                             df)), two)
    log_norm = lax.sub(lax.add(lax.lgamma(half_df), log_scale_term), lax.lgamma(half_df_plus))
    return lax.neg(lax.add(log_norm, lax.mul(half_df_plus, lax.log1p(lax.div(lax.mul(z, z),
                                                                             df)))))


def pdf(x, df, loc=0, scale=1):
    """Student's t probability density function."""
    return lax.exp(logpdf(x, df, loc, scale))
