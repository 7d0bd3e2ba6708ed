"""minijax.scipy.cluster.vq: assign observations to their nearest code."""

from __future__ import annotations

from minijax import numpy as jnp
from minijax.numpy._promote import check_args, promote_dtypes_inexact

__all__ = ["vq"]


def vq(obs, code_book, check_finite: bool = True):
    """The index of the nearest code (Euclidean distance) in ``code_book`` for each
    observation, and that distance. ``obs`` is ``(M, N)`` and ``code_book`` ``(K, N)``
    (or both 1-D). ``check_finite`` is accepted and ignored, as in jax.

    >>> vq(jnp.array([[1.0, 1.0], [4.0, 5.0]]), jnp.array([[0.0, 0.0], [5.0, 5.0]]))
    (Array([0, 1], dtype=int32), Array([1.4142135, 1.       ], dtype=float32))
    """
    del check_finite
    check_args("scipy.cluster.vq.vq", (obs, code_book))
    obs, code_book = promote_dtypes_inexact(jnp.asarray(obs), jnp.asarray(code_book))
    if obs.ndim != code_book.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, code_book = obs[..., None], code_book[..., None]
    if obs.ndim != 2:
        raise ValueError("ndim different than 1 or 2 are not supported")
    dist = jnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
    code = jnp.argmin(dist, axis=-1)
    return code, jnp.take_along_axis(dist, code[:, None], axis=-1)[:, 0]
