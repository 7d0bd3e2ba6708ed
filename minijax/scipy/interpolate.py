"""minijax.scipy.interpolate: ``RegularGridInterpolator``, mirroring
``jax.scipy.interpolate``."""

from __future__ import annotations

import itertools

import numpy as np

from minijax import numpy as jnp
from minijax.numpy._promote import check_args, promote_dtypes_inexact
from minijax._pytree import register_pytree_node

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _points_array(points, ndim: int):
    """Sample points as one ``(..., ndim)`` array: a tuple of coordinate arrays is
    broadcast and stacked; a 1-D array holds points of ``ndim`` coordinates each."""
    if isinstance(points, tuple) and len(points) == 1:
        points = points[0]
    if isinstance(points, tuple):
        coords = jnp.broadcast_arrays(*points)
        return jnp.stack([c.astype(float) for c in coords], axis=-1)
    check_args("RegularGridInterpolator", (points,))
    points = jnp.asarray(points)
    return points.reshape(-1, ndim) if points.ndim == 1 else points


class RegularGridInterpolator:
    """Interpolation of ``values`` given on a rectilinear grid (``points``: one strictly
    ascending 1-D array per leading axis of ``values``), ``"linear"`` or ``"nearest"``.

    Points outside the grid take ``fill_value`` (NaN by default), or are extrapolated
    when it is None. ``bounds_error=True`` is not supported (it cannot act under jit),
    as in jax. A pytree: it passes through ``jit`` and ``vmap``.

    >>> interp = RegularGridInterpolator((jnp.arange(3.0),), jnp.array([0.0, 10.0, 40.0]))
    >>> interp(jnp.array([[0.5], [1.5]]))
    Array([ 5., 25.], dtype=float32)
    """

    def __init__(self, points, values, method: str = "linear", bounds_error: bool = False,
                 fill_value=np.nan):
        if method not in _METHODS:
            raise ValueError(f"method {method!r} is not defined")
        self.method = method
        self.bounds_error = bounds_error
        if bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT")
        check_args("RegularGridInterpolator", (values,))
        values = jnp.asarray(values)
        if len(points) > values.ndim:
            raise ValueError(f"there are {len(points)} point arrays, but values has "
                             f"{values.ndim} dimensions")
        (values,) = promote_dtypes_inexact(values)
        if fill_value is not None:
            check_args("RegularGridInterpolator", (fill_value,))
            fill_value = jnp.asarray(fill_value)
            if not jnp.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError(
                    "fill_value must be either 'None' or of a type compatible with values")
        self.fill_value = fill_value
        check_args("RegularGridInterpolator", tuple(points))
        self.grid = tuple(jnp.asarray(p) for p in points)
        self.values = values

    def __call__(self, xi, method: str | None = None):
        """Interpolate at ``xi``: ``(..., ndim)`` points (or a tuple of coordinate
        arrays); the result has shape ``xi.shape[:-1] + values.shape[ndim:]``."""
        method = self.method if method is None else method
        if method not in _METHODS:
            raise ValueError(f"method {method!r} is not defined")
        ndim = len(self.grid)
        xi = _points_array(xi, ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, "
                             f"but this RegularGridInterpolator has dimension {ndim}")
        lead = xi.shape[:-1]
        xi = xi.reshape(-1, ndim)
        indices, fractions, outside = self._locate(xi.T)
        if method == "linear":
            result = self._linear(indices, fractions)
        else:
            result = self.values[tuple(jnp.where(f <= 0.5, i, i + 1)
                                       for i, f in zip(indices, fractions))]
        if self.fill_value is not None:
            mask = outside.reshape(result.shape[:1] + (1,) * (result.ndim - 1))
            result = jnp.where(mask, self.fill_value, result)
        return result.reshape(lead + self.values.shape[ndim:])

    def _locate(self, xi):
        """Per axis: the cell of each point (clamped to the grid's cells), its fractional
        position in the cell, and whether the point lies outside the grid."""
        indices, fractions = [], []
        outside = jnp.zeros((xi.shape[1],), dtype=bool)
        for x, g in zip(xi, self.grid):
            i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.size - 2)
            indices.append(i)
            fractions.append((x - g[i]) / (g[i + 1] - g[i]))
            outside = outside | (x < g[0]) | (x > g[-1])
        return indices, fractions, outside

    def _linear(self, indices, fractions):
        """Sum over the cell's corners of the corner values times their weights."""
        trailing = (slice(None),) + (None,) * (self.values.ndim - len(indices))
        total = jnp.asarray(0.0)
        for corner in itertools.product(*[(i, i + 1) for i in indices]):
            weight = jnp.asarray(1.0)
            for c, i, f in zip(corner, indices, fractions):
                weight = weight * jnp.where(c == i, 1 - f, f)
            total = total + self.values[corner] * weight[trailing]
        return total


register_pytree_node(
    RegularGridInterpolator,
    lambda r: ((r.grid, r.values, r.fill_value), (r.method, r.bounds_error)),
    lambda aux, children: RegularGridInterpolator(children[0], children[1], *aux,
                                                  children[2]))
