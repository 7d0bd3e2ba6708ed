"""Window functions of minijax.numpy: ``bartlett``, ``blackman``, ``hamming``, ``hanning``
and ``kaiser``, each an array of ``M`` samples of the default float dtype (``M`` must be a
concrete integer; ``M <= 1`` gives ones)."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.numpy._math import i0
from minijax.numpy._promote import ensure_array
from minijax.numpy._ufuncs import abs as abs_, cos, sqrt


def _samples(M, name: str):
    """(M, the sample positions 0..M-1 as floats, or None when M <= 1)."""
    if hasattr(M, "aval"):
        from minijax.core.trace import Tracer
        if isinstance(M, Tracer):
            from minijax.core.errors import ConcretizationTypeError
            raise ConcretizationTypeError(f"M argument of jnp.{name} must be a concrete "
                                          f"integer, got a traced value {M!r}")
    M = int(M)  # (as jax: a float or a 0-d array is truncated; a string is a ValueError)
    dt = dtypes.default_float()
    if M <= 1:
        return M, None
    return M, lax.iota(dt, M)


def _ones(M: int):
    return lax.broadcast_in_dim(np.ones((), dtypes.default_float()), (max(M, 0),), ())


def bartlett(M: int):
    """The Bartlett (triangular) window."""
    M, n = _samples(M, "bartlett")
    if n is None:
        return _ones(M)
    return 1 - abs_(2 * n + 1 - M) / (M - 1)


def blackman(M: int):
    """The Blackman window."""
    M, n = _samples(M, "blackman")
    if n is None:
        return _ones(M)
    return 0.42 - 0.5 * cos(2 * np.pi * n / (M - 1)) + 0.08 * cos(4 * np.pi * n / (M - 1))


def hamming(M: int):
    """The Hamming window."""
    M, n = _samples(M, "hamming")
    if n is None:
        return _ones(M)
    return 0.54 - 0.46 * cos(2 * np.pi * n / (M - 1))


def hanning(M: int):
    """The Hann window."""
    M, n = _samples(M, "hanning")
    if n is None:
        return _ones(M)
    return 0.5 * (1 - cos(2 * np.pi * n / (M - 1)))


def kaiser(M: int, beta):
    """The Kaiser window with shape parameter ``beta``."""
    M, n = _samples(M, "kaiser")
    if n is None:
        return _ones(M)
    beta = ensure_array(beta) if not isinstance(beta, (int, float)) else beta
    alpha = 0.5 * (M - 1)
    return i0(beta * sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)
