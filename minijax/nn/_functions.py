"""Activations, normalizations and attention: ``minijax.nn`` (jax.nn's functions).

Each function follows jax.nn's definition step by step, so values, dtypes (weak types
included) and gradients agree with jax's: ``relu``, ``relu6`` and ``log1mexp`` carry
jax's custom jvp rules (the derivative of ``relu`` at 0 is 0), and ``softmax`` has its
own jvp, ``y * (x_dot - sum(y * x_dot))``. Where jax jits a function, so does minijax.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

import minijax.numpy as jnp
from minijax import lax
from minijax.core import dtypes
from minijax.core.errors import ConcretizationTypeError
from minijax.core.trace import Tracer, axis_size, get_aval
from minijax.numpy._promote import check_args, ensure_array, promote_args_inexact
from minijax.lax.shape import canonicalize_axis
from minijax.numpy._reductions import _count
from minijax.scipy.special import logsumexp  # jax.nn.logsumexp is scipy's
from minijax.stages.jit import jit
from minijax.api.custom_derivatives import custom_jvp

Axis = int | Sequence[int] | None


def _arraylike(name: str, *xs):
    """``xs`` as minijax arrays (Python scalars keep their weak type); TypeError for
    lists, tuples and other non-array arguments, as jax's ``ensure_arraylike``."""
    out = [ensure_array(x) for x in check_args(name, xs)]
    for x in out:
        get_aval(x)  # TypeError for anything that is not an array or a scalar
    return out[0] if len(out) == 1 else out


def _zeros_where_not(pred, g):
    return lax.select(pred, g, jnp.zeros_like(g))


# ---- activations ---------------------------------------------------------------------------

@jit
def identity(x):
    """The identity activation: ``x`` unchanged (as an array)."""
    return _arraylike("identity", x)


@custom_jvp
@jit
def relu(x):
    """Rectified linear unit, ``max(x, 0)``; its derivative at 0 is taken to be 0.

    >>> minijax.nn.relu(minijax.numpy.array([-1., 0., 2.]))
    Array([0., 0., 2.], dtype=float32)
    """
    return jnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: _zeros_where_not(x > 0, g))


@custom_jvp
@jit
def relu6(x):
    """``min(max(x, 0), 6)``; its derivative is 0 at both 0 and 6."""
    return jnp.minimum(jnp.maximum(x, 0), 6.)


relu6.defjvps(lambda g, ans, x: _zeros_where_not((x > 0) & (x < 6), g))


@jit
def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``, a smooth relu (arXiv:2112.11687)."""
    x, b = _arraylike("squareplus", x, b)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@jit
def softplus(x):
    """``log(1 + exp(x))``, computed as ``logaddexp(x, 0)``."""
    return jnp.logaddexp(x, 0)


@jit
def sparse_plus(x):
    """0 for ``x <= -1``, ``(x + 1)**2 / 4`` between -1 and 1, ``x`` from 1 on."""
    x = _arraylike("sparse_plus", x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@jit
def soft_sign(x):
    """``x / (|x| + 1)``."""
    x = _arraylike("soft_sign", x)
    return x / (jnp.abs(x) + 1)


@jit(inline=True)
def sigmoid(x):
    """The logistic function ``1 / (1 + exp(-x))``."""
    return lax.logistic(x)


@jit
def sparse_sigmoid(x):
    """0 for ``x <= -1``, ``(x + 1) / 2`` between -1 and 1, 1 from 1 on: the derivative
    of ``sparse_plus``."""
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


@jit
def silu(x):
    """SiLU (swish): ``x * sigmoid(x)``."""
    x = _arraylike("silu", x)
    return x * sigmoid(x)


swish = silu


@jit
def mish(x):
    """``x * tanh(softplus(x))`` (arXiv:1908.08681)."""
    x = _arraylike("mish", x)
    return x * jnp.tanh(softplus(x))


@jit
def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``."""
    x = _arraylike("log_sigmoid", x)
    return -softplus(-x)


@jit
def elu(x, alpha=1.0):
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    x = _arraylike("elu", x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0., x)))


@jit
def leaky_relu(x, negative_slope=1e-2):
    """``x`` for ``x >= 0``, else ``negative_slope * x``."""
    x = _arraylike("leaky_relu", x)
    return jnp.where(x >= 0, x, negative_slope * x)


@jit
def hard_tanh(x):
    """``x`` clipped to ``[-1, 1]``."""
    x = _arraylike("hard_tanh", x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@jit
def celu(x, alpha=1.0):
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)`` (arXiv:1704.07483)."""
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@jit
def selu(x):
    """Scaled ELU: ``scale * elu(x, alpha)`` with the constants of arXiv:1706.02515."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x, approximate: bool = True):
    """Gaussian error linear unit. ``approximate=True``: the tanh formula
    ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))``; else ``x/2 * erfc(-x/sqrt(2))``.
    """
    [x] = promote_args_inexact("gelu", x)
    dt = get_aval(x).dtype
    if approximate:
        k = np.sqrt(2 / np.pi).astype(dt)
        return x * (0.5 * (1.0 + jnp.tanh(k * (x + 0.044715 * (x ** 3)))))
    half = np.sqrt(0.5).astype(dt)
    return jnp.array(0.5 * x * lax.erfc(-x * half), dtype=dt)


@partial(jit, static_argnames=("axis",))
def glu(x, axis: int = -1):
    """Gated linear unit: split ``x`` in two halves along ``axis``, ``a * sigmoid(b)``."""
    x = _arraylike("glu", x)
    if x.shape[axis] % 2 != 0:
        raise AssertionError("axis size must be divisible by 2")
    x1, x2 = jnp.split(x, 2, axis)
    return x1 * sigmoid(x2)


@jit
def hard_sigmoid(x):
    """``relu6(x + 3) / 6``."""
    return relu6(x + 3.) / 6.


@jit
def hard_silu(x):
    """Hard SiLU (hard swish): ``x * hard_sigmoid(x)``."""
    x = _arraylike("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


@custom_jvp
@jit
def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x >= 0``, accurate on both sides of ``log 2``."""
    x = _arraylike("log1mexp", x)
    return jnp.where(x < jnp.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


log1mexp.defjvps(lambda g, ans, x: g / jnp.expm1(x))


# ---- reductions ----------------------------------------------------------------------------

@partial(jit, static_argnames=("axis", "keepdims"))
def logmeanexp(x, axis: Axis = None, where=None, keepdims: bool = False):
    """``logsumexp(x) - log(n)``, n the number of elements reduced (or selected by
    ``where``)."""
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    count = _count(x, axis, keepdims, where, get_aval(lse).dtype)
    return lse - jnp.log(count)


@partial(jit, static_argnames=("axis",))
def log_softmax(x, axis: Axis = -1, where=None):
    """``x - logsumexp(x, axis)``: log of ``softmax``. Entries outside ``where`` are -inf.
    """
    x = _arraylike("log_softmax", x)
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    shifted_lse = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
    result = shifted - shifted_lse
    if where is not None:
        return jnp.where(where, result, -np.inf)
    return result


def softmax(x, axis: Axis = -1, where=None):
    """``exp(x) / sum(exp(x), axis)``, computed with the maximum subtracted. Entries
    outside ``where`` are 0. Its jvp is ``y * (x_dot - sum(y * x_dot, axis))``.

    >>> minijax.nn.softmax(minijax.numpy.array([0., 1.]))
    Array([0.26894143, 0.7310586 ], dtype=float32)
    """
    return _softmax(x, axis, where, -np.inf)


@partial(custom_jvp, nondiff_argnums=(1,))
def _softmax(x, axis, where, initial):
    x_max = jnp.max(x, axis, where=where, initial=initial, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, initial)
    unnormalized = jnp.exp(x_safe - x_max)
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    if where is not None:
        result = jnp.where(where, result, 0)
    return result


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
    x, where, initial = primals
    x_dot = tangents[0]
    y = _softmax(x, axis, where, initial)
    return y, y * (x_dot - (y * x_dot).sum(axis, where=where, keepdims=True))


@partial(jit, static_argnames=("axis", "algorithm"))
def standardize(x, axis: Axis = -1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axis``. ``mean``/``variance``
    default to the statistics of ``x`` (over ``where``); ``algorithm="fast"`` takes the
    variance as ``mean(x**2) - mean(x)**2`` clipped at 0, ``"stable"`` as
    ``mean((x - mean)**2)``."""
    _arraylike("standardize", x)
    for v in (mean, variance, where):
        if v is not None:
            _arraylike("standardize", v)
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True,
                                where=where)
        elif algorithm == "fast":
            variance = jnp.mean(jnp.square(x), axis, keepdims=True,
                                where=where) - jnp.square(mean)
            variance = jnp.clip(variance, 0)
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    return jnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


# ---- one_hot -------------------------------------------------------------------------------

def _concrete_num_classes(num_classes) -> int:
    try:
        return operator.index(num_classes)
    except TypeError:
        msg = (f"one_hot: num_classes must be a concrete integer, got {num_classes!r}. The "
               f"error arose in minijax.nn.one_hot argument `num_classes`.")
        if isinstance(num_classes, Tracer):
            raise ConcretizationTypeError(
                msg + " Its value depends on a traced argument: pass it as a static "
                "argument (static_argnums / static_argnames) instead.") from None
        raise TypeError(msg) from None


@partial(jit, static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x, num_classes: int, *, dtype, axis):
    try:
        out_axis = canonicalize_axis(axis, x.ndim + 1)
    except TypeError:  # a named axis (vmap's axis_name, shard_map's mesh axes)
        names = axis if isinstance(axis, tuple) else (axis,)
        size = math.prod(axis_size(n) for n in names)
        if num_classes != size:
            raise ValueError(f"Expected num_classes to match the size of axis {axis}, "
                             f"but {num_classes} != {size}") from None
        return jnp.asarray(x == lax.axis_index(axis), dtype=dtype)
    axis = operator.index(axis)
    lhs = lax.expand_dims(x, (axis,))
    rhs_shape = [1] * x.ndim
    rhs_shape.insert(out_axis, num_classes)
    rhs = lax.broadcasted_iota(x.dtype, rhs_shape, out_axis)
    return (lhs == rhs).astype(dtype)


def one_hot(x: Any, num_classes: int, *, dtype: Any | None = None, axis: int | str = -1):
    """One-hot encode the integer indices ``x`` with ``num_classes`` classes along
    ``axis`` (a new dimension); indices outside ``[0, num_classes)`` give all zeros.
    ``axis`` may also be a named (vmap/shard_map) axis whose size is ``num_classes``.

    >>> minijax.nn.one_hot(minijax.numpy.array([0, 2]), 3)
    Array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    num_classes = _concrete_num_classes(num_classes)
    x = jnp.asarray(x)
    if not dtypes.is_int(x.dtype):
        warnings.warn(f"minijax.nn.one_hot input should be integer-typed; got "
                      f"dtype={x.dtype}", DeprecationWarning, stacklevel=2)
    dtype = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype, "one_hot")
    return _one_hot(x, num_classes, dtype=dtype, axis=axis)
