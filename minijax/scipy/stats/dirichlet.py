"""The Dirichlet distribution (``jax.scipy.stats.dirichlet``)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.numpy._promote import promote_dtypes_inexact
from minijax.scipy import special
from minijax.numpy._math import scalar_like as const

__all__ = ["logpdf", "pdf"]


def _on_simplex(x):
    return jnp.all(x > 0, axis=0) & (abs(jnp.sum(x, axis=0) - 1) < 1e-6)


def logpdf(x, alpha):
    """Log of the Dirichlet density with concentrations ``alpha`` (1-D, length ``K``).

    ``x`` has ``K`` or ``K - 1`` entries along its first axis (the last one is then
    ``1 - sum``); further axes are batch axes. ``-inf`` off the simplex.
    """
    x, alpha = promote_dtypes_inexact(x, alpha)
    x, alpha = jnp.asarray(x), jnp.asarray(alpha)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    k = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (k, k - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                         f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
    one = const(x, 1)
    if x.shape[0] != k:
        x = jnp.concatenate([x, lax.sub(one, x.sum(0, keepdims=True))], axis=0)
    log_norm = jnp.sum(special.gammaln(alpha)) - special.gammaln(jnp.sum(alpha))
    if x.ndim > 1:
        alpha = lax.broadcast_in_dim(alpha, alpha.shape + (1,) * (x.ndim - 1), (0,))
    out = lax.sub(jnp.sum(special.xlogy(lax.sub(alpha, one), x), axis=0), log_norm)
    return jnp.where(_on_simplex(x), out, -np.inf)


def pdf(x, alpha):
    """Dirichlet probability density function."""
    return lax.exp(logpdf(x, alpha))
