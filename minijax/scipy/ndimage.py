"""minijax.scipy.ndimage: ``map_coordinates`` (orders 0 and 1), mirroring
``jax.scipy.ndimage``."""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Sequence

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.stages.jit import jit

__all__ = ["map_coordinates"]


def _mirror(index, size: int):
    """Reflect about the edge samples: ``... 2 1 | 0 1 2 ... n-1 | n-2 ...``."""
    period = size - 1
    return jnp.abs((index + period) % (2 * period) - period)


def _reflect(index, size: int):
    """Reflect about the edges of the edge samples: ``... 1 0 | 0 1 ... n-1 | n-1 ...``
    (period ``2 size``; integer arithmetic only, a handful of ops)."""
    period = 2 * size
    j = lax.rem(index, np.int32(period))
    j = jnp.where(j < 0, j + period, j)
    return jnp.where(j < size, j, period - 1 - j)


# mode -> index into [0, size) for an index that may lie outside
_MODES = {
    "constant": lambda index, size: index,  # outside points take cval (masked below)
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round(x):
    """Round half away from zero (integers unchanged)."""
    return x if jnp.issubdtype(x.dtype, np.integer) else lax.round(x)


def _nearest(coordinate):
    """Order 0: one node with weight 1."""
    return [(_round(coordinate).astype(np.int32), coordinate.dtype.type(1))]


def _linear(coordinate):
    """Order 1: the nodes below and above, weighted by closeness."""
    below = jnp.floor(coordinate)
    frac = coordinate - below
    index = below.astype(np.int32)
    return [(index, 1 - frac), (index + 1, frac)]


def _sample(image, indices):
    """``image[indices]`` for indices in range (or masked by the caller): through the
    flattened image, one index per point and no negative-index normalization."""
    if not 0 < image.size <= np.iinfo(np.int32).max or image.ndim == 0:
        return image[tuple(indices)]
    flat_index = indices[-1]
    stride = 1
    for k in range(image.ndim - 2, -1, -1):
        stride *= image.shape[k + 1]
        flat_index = indices[k] * stride + flat_index
    return jnp.take(image.reshape(-1), flat_index, mode="clip")


@functools.partial(jit, static_argnums=(2, 3))
def _map_coordinates(input, coordinates, order: int, mode: str, cval):  # noqa: A002
    image = jnp.asarray(input)
    coords = [jnp.asarray(c) for c in coordinates]
    cval = jnp.asarray(cval, image.dtype)
    if len(coords) != image.ndim:
        raise ValueError("coordinates must be a sequence of length input.ndim, but "
                         f"{len(coords)} != {image.ndim}")
    fix = _MODES.get(mode)
    if fix is None:
        raise NotImplementedError(
            f"minijax.scipy.ndimage.map_coordinates does not yet support mode {mode}. "
            f"Currently supported modes are {set(_MODES)}.")
    if order == 0:
        nodes_of = _nearest
    elif order == 1:
        nodes_of = _linear
    else:
        raise NotImplementedError(
            "minijax.scipy.ndimage.map_coordinates currently requires order<=1")
    per_axis = []
    for coordinate, size in zip(coords, image.shape):
        nodes = []
        for index, weight in nodes_of(coordinate):
            inside = (0 <= index) & (index < size) if mode == "constant" else None
            nodes.append((fix(index, size), inside, weight))
        per_axis.append(nodes)
    terms = []
    for corner in itertools.product(*per_axis):
        masks = [node[1] for node in corner if node[1] is not None]
        value = _sample(image, [node[0] for node in corner])
        if masks:
            value = jnp.where(functools.reduce(operator.and_, masks), value, cval)
        terms.append(functools.reduce(operator.mul, [node[2] for node in corner]) * value)
    result = functools.reduce(operator.add, terms)
    if jnp.issubdtype(image.dtype, np.integer):
        result = _round(result)
    return result.astype(image.dtype)


def map_coordinates(input, coordinates: Sequence, order: int, mode: str = "constant",  # noqa: A002
                    cval=0.0):
    """Sample ``input`` at the points ``coordinates`` (one array per axis of ``input``,
    all of one shape) by interpolation of the given ``order`` (0: nearest, 1: linear).

    ``mode`` says how points outside the array are handled: ``"constant"`` (they take
    ``cval``), ``"nearest"``, ``"wrap"``, ``"mirror"`` or ``"reflect"``, as in
    ``scipy.ndimage.map_coordinates``. An integer ``input`` gives rounded integers.

    >>> x = jnp.arange(12.0).reshape(3, 4)
    >>> map_coordinates(x, [jnp.array([0.5, 2.0]), jnp.array([0.5, 3.0])], order=1)
    Array([ 2.5, 11. ], dtype=float32)
    """
    return _map_coordinates(input, coordinates, order, mode, cval)
