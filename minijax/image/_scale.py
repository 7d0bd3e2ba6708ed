"""Separable image resampling: ``resize`` and ``scale_and_translate``.

Every spatial axis is resampled by one matrix product with a weight matrix
``W[input_index, output_index]``. Output pixel ``j`` (pixel centres at ``j + 0.5``)
samples the input at ``(j + 0.5 - translation) / scale - 0.5``; its weights are the
resampling kernel evaluated at the distances to each input pixel, widened by
``1 / scale`` when ``antialias`` and shrinking, then normalized to sum to one. Samples
that fall outside the input get zero weight, except for ``CUBIC_PYTORCH`` without
antialiasing, which repeats the edge pixels as PyTorch does. ``AREA`` weights are the
overlaps of the output pixel's footprint with each input pixel.

Everything is built from ``minijax.numpy``, so ``grad`` flows to the image and, for
``scale_and_translate``, to ``scale`` and ``translation``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

import minijax.numpy as jnp
from minijax import lax
from minijax.core.aval import canonicalize_shape
from minijax.lax.shape import canonicalize_axis
from minijax.numpy._promote import promote_dtypes_inexact
from minijax.numpy._promote import check_arraylike
from minijax.stages.jit import jit


class ResizeMethod(enum.Enum):
    """How :func:`resize` and :func:`scale_and_translate` interpolate.

    ``NEAREST`` (resize only), ``LINEAR`` (triangle kernel), ``LANCZOS3`` and
    ``LANCZOS5`` (Lanczos kernels of radius 3 and 5), ``CUBIC`` (Keys cubic kernel,
    a = -0.5), ``CUBIC_PYTORCH`` (a = -0.75 and edge padding without antialiasing, as
    PyTorch's bicubic) and ``AREA`` (box averaging over each output pixel's area).
    """

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> ResizeMethod:
        """The method named ``s`` ("nearest", "linear"/"bilinear"/"trilinear"/"triangle",
        "lanczos3", "lanczos5", "cubic"/"bicubic"/"tricubic",
        "cubic-pytorch"/"bicubic-pytorch", "area")."""
        method = _NAMES.get(s)
        if method is None:
            raise ValueError(f'Unknown resize method "{s}"')
        return method


_NAMES = {
    "nearest": ResizeMethod.NEAREST,
    **dict.fromkeys(("linear", "bilinear", "trilinear", "triangle"), ResizeMethod.LINEAR),
    "lanczos3": ResizeMethod.LANCZOS3,
    "lanczos5": ResizeMethod.LANCZOS5,
    **dict.fromkeys(("cubic", "bicubic", "tricubic"), ResizeMethod.CUBIC),
    **dict.fromkeys(("cubic-pytorch", "bicubic-pytorch"), ResizeMethod.CUBIC_PYTORCH),
    "area": ResizeMethod.AREA,
}


# ---- kernels: weight as a function of the (non-negative) distance x --------------------

def _triangle(x):
    return jnp.maximum(0, 1 - jnp.abs(x))


def _lanczos(radius: float, x):
    y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
    # Near 0 the ratio is 0/0: its limit is 1.
    ratio = jnp.where(x > 1e-3, jnp.divide(y, jnp.where(x != 0, np.pi ** 2 * x ** 2, 1)), 1)
    return jnp.where(x > radius, 0., ratio)


def _cubic(a: float, x):
    """The cubic convolution kernel with parameter ``a`` (Keys: -0.5; OpenCV: -0.75)."""
    inner = ((a + 2.) * x - (a + 3.)) * x * x + 1.
    outer = ((a * x - 5. * a) * x + 8. * a) * x - 4. * a
    return jnp.where(x >= 2., 0., jnp.where(x >= 1., outer, inner))


def _keys_cubic(x):
    # With a = -0.5 the polynomials simplify; this is the form whose rounding jax has.
    inner = ((1.5 * x - 2.5) * x) * x + 1.
    outer = ((-0.5 * x + 2.5) * x - 4.) * x + 2.
    return jnp.where(x >= 2., 0., jnp.where(x >= 1., outer, inner))


_AREA = "area"  # marks the box-overlap weights, which are not a kernel of distance

# method -> (kernel radius, kernel)
_KERNELS: dict[ResizeMethod, tuple[int, Callable | str]] = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, partial(_lanczos, 3.)),
    ResizeMethod.LANCZOS5: (5, partial(_lanczos, 5.)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, partial(_cubic, -0.75)),
    ResizeMethod.AREA: (1, _AREA),
}


def _normalize_columns(w):
    """Each column divided by its sum; columns summing to (nearly) zero become zero."""
    total = jnp.sum(w, axis=0, keepdims=True)
    safe = jnp.where(total != 0, total, 1)
    return jnp.where(jnp.abs(total) > 1000. * float(np.finfo(np.float32).eps),
                     jnp.divide(w, safe), 0)


def _weight_matrix(in_size: int, out_size: int, scale, translation, kernel, antialias: bool,
                   edge_padding: bool, radius: int):
    """``W[in_size, out_size]`` mapping one axis of the input to the output."""
    dtype = jnp.result_type(scale, translation)
    inv_scale = 1. / scale
    kernel_scale = jnp.maximum(inv_scale, 1.) if antialias else 1.
    sample = ((jnp.arange(out_size, dtype=dtype) + 0.5) * inv_scale
              - translation * inv_scale - 0.5)
    # Edge padding comes only without antialiasing (see _kernel_for): the kernel is not
    # widened, so ``radius`` positions beyond each edge are enough.
    pad = radius if edge_padding else 0
    positions = jnp.arange(-pad, in_size + pad, dtype=dtype)

    if kernel is _AREA:
        left = jnp.arange(out_size, dtype=dtype) * inv_scale - translation * inv_scale
        right = left + inv_scale
        in_left = jnp.arange(in_size, dtype=dtype)
        in_right = in_left + 1.
        w = jnp.maximum(0., jnp.minimum(right[None, :], in_right[:, None])
                        - jnp.maximum(left[None, :], in_left[:, None]))
    else:
        w = kernel(jnp.abs(sample[None, :] - positions[:, None]) / kernel_scale)

    if edge_padding:
        # Fold the weights of positions beyond the edges onto the edge pixels.
        rows = jnp.clip(positions.astype(jnp.int32), 0, in_size - 1)
        cols = lax.broadcast_in_dim(jnp.arange(out_size), (positions.shape[0], out_size), (1,))
        w = jnp.zeros((in_size, out_size), dtype=dtype).at[rows[:, None], cols].add(w)
        return _normalize_columns(w)
    w = _normalize_columns(w)
    inside = jnp.logical_and(sample >= -0.5, sample <= in_size - 0.5)
    return jnp.where(inside[None, :], w, 0)


def _resample(x, out_shape, spatial_dims, scale, translation, kernel, antialias: bool,
              precision, edge_padding: bool, radius: int):
    for i, d in enumerate(spatial_dims):
        d = canonicalize_axis(d, x.ndim)
        w = _weight_matrix(x.shape[d], out_shape[d], scale[i], translation[i], kernel,
                           antialias, edge_padding, radius).astype(x.dtype)
        x = jnp.moveaxis(jnp.tensordot(x, w, axes=([d], [0]), precision=precision), -1, d)
    return x


def _method(method) -> ResizeMethod:
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    if not isinstance(method, ResizeMethod):
        raise TypeError(f"method must be a ResizeMethod or a string, got {method!r}")
    return method


def _kernel_for(method: ResizeMethod, antialias: bool):
    """``(radius, kernel, edge_padding)``; PyTorch's cubic with antialiasing is Keys'."""
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    return radius, kernel, method == ResizeMethod.CUBIC_PYTORCH


def _check_rank(shape, image) -> None:
    if len(shape) != image.ndim:
        raise ValueError("shape must have length equal to the number of dimensions of x; "
                         f" {shape} vs {image.shape}")


def scale_and_translate(image, shape, spatial_dims: Sequence[int], scale, translation,
                        method: str | ResizeMethod, antialias: bool = True,
                        precision=lax.Precision.HIGHEST):
    """Resample ``image`` into ``shape`` under the map ``x -> x * scale + translation``
    of the ``spatial_dims`` (pixel centres at half-integers; samples outside the input
    are zero).

    Args:
      image: the array to resample.
      shape: the output shape, one entry per axis of ``image``.
      spatial_dims: the K axes that ``scale`` and ``translation`` apply to.
      scale: K scale factors (output size / input size for a plain resize).
      translation: K translations, in output pixels.
      method: a :class:`ResizeMethod` or its name; ``NEAREST`` is not supported here.
      antialias: widen the kernel when downsampling. No effect when upsampling.
      precision: the precision of the matrix products.

    ``torch.nn.functional.interpolate(..., align_corners=True)`` is
    ``scale = (n - 1) / (m - 1)``, ``translation = 0.5 * (1 - scale)``.
    """
    shape = canonicalize_shape(shape)
    _check_rank(shape, image)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate.")
    radius, kernel, edge_padding = _kernel_for(method, antialias)
    check_arraylike("scale_and_translate", image, scale, translation)
    image, = promote_dtypes_inexact(jnp.asarray(image))
    scale, translation = promote_dtypes_inexact(jnp.asarray(scale), jnp.asarray(translation))
    if not (len(spatial_dims) == len(scale) == len(translation)):
        raise ValueError(f"scale_and_translate: spatial_dims, scale and translation must have "
                         f"equal lengths, got {len(spatial_dims)}, {len(scale)} and "
                         f"{len(translation)}")
    return _resample(image, shape, spatial_dims, scale, translation, kernel, antialias,
                     precision, edge_padding, radius)


def _resize_nearest(x, shape):
    for d, (m, n) in enumerate(zip(x.shape, shape)):
        if m == n:
            continue
        src = (jnp.arange(n, dtype=np.float32) + 0.5) * m / n
        idx = [slice(None)] * x.ndim
        idx[d] = jnp.floor(src.astype(np.float32)).astype(np.int32)
        x = x[tuple(idx)]
    return x


@partial(jit, static_argnums=(1, 2, 3, 4))
def _resize(image, shape, method, antialias: bool, precision):
    _check_rank(shape, image)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    image, = promote_dtypes_inexact(image)
    spatial_dims = tuple(d for d in range(len(shape)) if image.shape[d] != shape[d])
    radius, kernel, edge_padding = _kernel_for(method, antialias)
    scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in spatial_dims]
    return _resample(image, shape, spatial_dims, scale, [0.] * len(spatial_dims), kernel,
                     antialias, precision, edge_padding, radius)


def resize(image, shape, method: str | ResizeMethod, antialias: bool = True,
           precision=lax.Precision.HIGHEST):
    """Resize ``image`` to ``shape`` (every axis; keep batch/channel sizes unchanged).

    Args:
      image: the array to resize.
      shape: the output shape, one entry per axis of ``image``.
      method: a :class:`ResizeMethod` or its name: "nearest", "linear" (bilinear,
        trilinear, triangle), "cubic" (bicubic, tricubic), "cubic-pytorch", "lanczos3",
        "lanczos5" or "area".
      antialias: widen the kernel when downsampling (not for "nearest"). No effect
        when upsampling.
      precision: the precision of the matrix products.

    Returns:
      The resized image: ``image``'s dtype for "nearest", else a floating dtype.

    >>> import minijax.numpy as jnp
    >>> resize(jnp.array([0., 1.]), (4,), "linear")
    Array([0.  , 0.25, 0.75, 1.  ], dtype=float32)
    """
    return _resize(image, canonicalize_shape(shape), method, antialias, precision)
