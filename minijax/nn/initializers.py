"""Initializers for neural network parameters: ``minijax.nn.initializers``.

Each builder returns an ``init(key, shape, dtype=..., out_sharding=None)`` function.
They draw from ``minijax.random`` the way jax's do (same samplers, same scaling, same
order of operations), so the same key gives jax's numbers.

>>> init = minijax.nn.initializers.glorot_uniform()
>>> init(minijax.random.key(0), (2, 3)).shape
(2, 3)
"""

from __future__ import annotations

import math
import typing
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

import minijax.numpy as jnp
from minijax import random
from minijax.core import dtypes
from minijax.random._keys import canonicalize_shape
from minijax.runtime.transfer import device_put_tree
from minijax.core.aval import no_sharding_constraint

__all__ = [
    "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
    "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
    "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
    "variance_scaling", "xavier_normal", "xavier_uniform", "zeros",
]

DTypeLikeInexact = Any
RealNumeric = Any


@typing.runtime_checkable
class Initializer(Protocol):
    """What the builders in ``minijax.nn.initializers`` return."""

    def __call__(self, key, shape, dtype: DTypeLikeInexact | None = None,
                 out_sharding=None):
        raise NotImplementedError


def _dtype(dtype):
    return dtypes.default_float() if dtype is None else dtype


def _place(x, out_sharding):
    """``x`` laid out as ``out_sharding`` (a Sharding), or as it is for None. Random draws
    are made whole and then placed: jax's sharded draws give the same numbers."""
    return x if out_sharding is None else device_put_tree(x, out_sharding)


def zeros(key, shape, dtype: DTypeLikeInexact | None = None, out_sharding=None):
    """An array of zeros (``key`` is ignored)."""
    return _place(jnp.zeros(shape, _dtype(dtype)), out_sharding)


def ones(key, shape, dtype: DTypeLikeInexact | None = None, out_sharding=None):
    """An array of ones (``key`` is ignored)."""
    return _place(jnp.ones(shape, _dtype(dtype)), out_sharding)


def constant(value, dtype: DTypeLikeInexact | None = None) -> Initializer:
    """Arrays full of ``value``."""
    def init(key, shape, dtype: DTypeLikeInexact | None = dtype, out_sharding=None):
        return _place(jnp.full(shape, value, dtype=_dtype(dtype)), out_sharding)
    return init


def uniform(scale: RealNumeric = 1e-2, dtype: DTypeLikeInexact | None = None) -> Initializer:
    """Uniform samples in ``[0, scale)``."""
    def init(key, shape, dtype: DTypeLikeInexact | None = dtype, out_sharding=None):
        dtype = _dtype(dtype)
        return _place(random.uniform(key, shape, dtype) * jnp.array(scale, dtype),
                      out_sharding)
    return init


def normal(stddev: RealNumeric = 1e-2, dtype: DTypeLikeInexact | None = None) -> Initializer:
    """Normal samples with mean 0 and standard deviation ``stddev``."""
    def init(key, shape, dtype: DTypeLikeInexact | None = dtype, out_sharding=None):
        dtype = _dtype(dtype)
        return _place(random.normal(key, shape, dtype) * jnp.array(stddev, dtype),
                      out_sharding)
    return init


def truncated_normal(stddev: RealNumeric = 1e-2, dtype: DTypeLikeInexact | None = None,
                     lower: RealNumeric = -2.0, upper: RealNumeric = 2.0) -> Initializer:
    """Standard normal samples truncated to ``(lower, upper)``, then times ``stddev`` (no
    correction for the truncation's smaller variance)."""
    def init(key, shape, dtype: DTypeLikeInexact | None = dtype, out_sharding=None):
        dtype = _dtype(dtype)
        return _place(random.truncated_normal(key, lower, upper, shape, dtype)
                      * jnp.array(stddev, dtype), out_sharding)
    return init


def _axes_size(shape: tuple, axes) -> int:
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _compute_fans(shape: Sequence[int], in_axis: int | Sequence[int] = -2,
                  out_axis: int | Sequence[int] = -1,
                  batch_axis: int | Sequence[int] = ()) -> tuple[float, float]:
    """(fan_in, fan_out) of a weight of ``shape``: the sizes of the input and output axes
    times the receptive field, the product of the axes that are none of in, out, batch."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         f"weights tensor with default in_axis. Must be at least 2D or specify "
                         f"in_axis explicitly.")
    in_size = _axes_size(shape, in_axis)
    out_size = _axes_size(shape, out_axis)
    batch_size = _axes_size(shape, batch_axis)
    receptive_field = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field, out_size * receptive_field


def _complex_dtype_of(dtype) -> tuple[np.dtype, np.dtype]:
    """(the real dtype of ``dtype``, the complex dtype of that real dtype)."""
    real = np.array(0, dtype).real.dtype
    return real, np.dtype(np.complex64 if real.itemsize <= 4 else np.complex128)


def _complex_uniform(key, shape: tuple, dtype):
    """Uniform on the complex disk of radius sqrt(2): mean 0, variance 1."""
    key_r, key_theta = random.split(key)
    real, cdt = _complex_dtype_of(dtype)
    r = jnp.sqrt(2 * random.uniform(key_r, shape, real)).astype(cdt)
    theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(cdt)
    return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape: tuple, dtype):
    """A complex normal of variance 1 with its modulus truncated to ``upper``."""
    key_r, key_theta = random.split(key)
    real, cdt = _complex_dtype_of(dtype)
    t = ((1 - jnp.exp(jnp.array(-(upper ** 2), cdt)))
         * random.uniform(key_r, shape, real).astype(cdt))
    r = jnp.sqrt(-jnp.log(1 - t))
    theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(cdt)
    return r * jnp.exp(1j * theta)


# The standard deviation of a standard normal truncated to (-2, 2), and of a complex
# standard normal with its modulus truncated to 2.
_TRUNC_STD = .87962566103423978
_COMPLEX_TRUNC_STD = .95311164380491208


def variance_scaling(scale: RealNumeric, mode: str, distribution: str,
                     in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                     batch_axis: int | Sequence[int] = (),
                     dtype: DTypeLikeInexact | None = None) -> Initializer:
    """Samples of variance ``scale / n``, n the fan of the weight per ``mode``:
    ``"fan_in"``, ``"fan_out"``, ``"fan_avg"`` (arithmetic mean) or ``"fan_geo_avg"``
    (geometric mean); axes in none of ``in_axis``/``out_axis``/``batch_axis`` form the
    receptive field. ``distribution``: ``"truncated_normal"`` (cut at 2 standard
    deviations, rescaled to the variance), ``"normal"``, or ``"uniform"`` (an interval,
    or a disk for complex dtypes)."""
    def init(key, shape, dtype: DTypeLikeInexact | None = dtype, out_sharding=None):
        return _place(draw(key, canonicalize_shape(shape), _dtype(dtype)), out_sharding)

    def draw(key, shape: tuple, dtype):
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            denominator = (fan_in * fan_out) ** 0.5
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = jnp.array(scale / denominator, dtype=dtype)
        is_float = dtypes.is_float(np.dtype(dtype))
        if distribution == "truncated_normal":
            if is_float:
                stddev = jnp.sqrt(variance) / jnp.array(_TRUNC_STD, dtype)
                return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
            stddev = jnp.sqrt(variance) / jnp.array(_COMPLEX_TRUNC_STD, dtype)
            return _complex_truncated_normal(key, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * jnp.sqrt(variance)
        if distribution == "uniform":
            if is_float:
                return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
            return _complex_uniform(key, shape, dtype) * jnp.sqrt(variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: "
                         f"{distribution}")
    return init


def _variance_scaling_builder(name: str, scale: float, mode: str, distribution: str,
                              doc: str):
    def builder(in_axis: int | Sequence[int] = -2, out_axis: int | Sequence[int] = -1,
                batch_axis: int | Sequence[int] = (),
                dtype: DTypeLikeInexact | None = None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis=in_axis,
                                out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)
    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = (f"{doc}: ``variance_scaling({scale}, {mode!r}, {distribution!r})`` "
                       f"with the given axes and dtype.")
    return builder


glorot_uniform = _variance_scaling_builder("glorot_uniform", 1.0, "fan_avg", "uniform",
                                           "Glorot (Xavier) uniform initializer")
glorot_normal = _variance_scaling_builder("glorot_normal", 1.0, "fan_avg", "truncated_normal",
                                          "Glorot (Xavier) normal initializer")
lecun_uniform = _variance_scaling_builder("lecun_uniform", 1.0, "fan_in", "uniform",
                                          "LeCun uniform initializer")
lecun_normal = _variance_scaling_builder("lecun_normal", 1.0, "fan_in", "truncated_normal",
                                         "LeCun normal initializer")
he_uniform = _variance_scaling_builder("he_uniform", 2.0, "fan_in", "uniform",
                                       "He (Kaiming) uniform initializer")
he_normal = _variance_scaling_builder("he_normal", 2.0, "fan_in", "truncated_normal",
                                      "He (Kaiming) normal initializer")
xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale: RealNumeric = 1.0, column_axis: int = -1,
               dtype: DTypeLikeInexact | None = None) -> Initializer:
    """Uniformly distributed (Haar) orthogonal matrices: the weight, as a matrix with the
    ``column_axis`` as its columns, has orthonormal rows or columns (whichever are fewer),
    times ``scale``."""
    def init(key, shape, dtype: DTypeLikeInexact | None = dtype, out_sharding=None):
        if not no_sharding_constraint(out_sharding):
            raise NotImplementedError("orthogonal initializer: out_sharding is not supported")
        dtype = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if any(d == 0 for d in shape):
            return jnp.zeros(shape, dtype=dtype)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = random.orthogonal(key, n_rows, (), dtype, n_cols)
        q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (n_cols,))
        return jnp.array(scale, dtype) * jnp.moveaxis(q, -1, column_axis)
    return init


def delta_orthogonal(scale: RealNumeric = 1.0, column_axis: int = -1,
                     dtype: DTypeLikeInexact | None = None) -> Initializer:
    """Delta-orthogonal convolution kernels (arXiv:1806.05393): zeros except at the
    spatial centre, which holds an orthogonal (in, out) matrix. The shape must be 3D, 4D
    or 5D with ``shape[-2] <= shape[-1]``."""
    def init(key, shape, dtype: DTypeLikeInexact | None = dtype, out_sharding=None):
        if not no_sharding_constraint(out_sharding):
            raise NotImplementedError("delta_orthogonal initializer: out_sharding is not "
                                      "supported")
        dtype = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, dtype=dtype).at[centre + (Ellipsis,)].set(ortho)
    return init
