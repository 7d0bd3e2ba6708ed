"""Inverse trigonometric and hyperbolic primitives: asin, acos, atan, sinh, cosh, asinh,
acosh, atanh.

Each is elementwise on floating-point and complex operands and lowers to the CHLO op
of the same name, which XLA expands into an accurate approximation (complex branch
cuts are CHLO's, which are jax's). One block per primitive: ``unary_primitive`` gives
its abstract eval, lowering and elementwise batching; then its jvp and lax function.
"""

from __future__ import annotations


from minijax.lax._util import const_like, unary_primitive
from minijax.lax.binary import add, div, mul, sub
from minijax.lax.unary import neg, rsqrt, square
from minijax.transforms.ad import defjvp


def _one(x):
    return const_like(x, 1)


# d asin = 1 / sqrt(1 - x^2), d acos = -1 / sqrt(1 - x^2), d atan = 1 / (1 + x^2)
asin_p = unary_primitive("asin", "chlo.asin")
defjvp(asin_p, lambda t, x: mul(t, rsqrt(sub(_one(x), square(x)))))


def asin(x):
    """Elementwise arc sine (``chlo.asin``)."""
    return asin_p.bind(x)


acos_p = unary_primitive("acos", "chlo.acos")
defjvp(acos_p, lambda t, x: mul(t, neg(rsqrt(sub(_one(x), square(x))))))


def acos(x):
    """Elementwise arc cosine (``chlo.acos``)."""
    return acos_p.bind(x)


atan_p = unary_primitive("atan", "chlo.atan")
defjvp(atan_p, lambda t, x: div(t, add(_one(x), square(x))))


def atan(x):
    """Elementwise arc tangent (``chlo.atan``)."""
    return atan_p.bind(x)


sinh_p = unary_primitive("sinh", "chlo.sinh")
defjvp(sinh_p, lambda t, x: mul(t, cosh(x)))


def sinh(x):
    """Elementwise hyperbolic sine (``chlo.sinh``)."""
    return sinh_p.bind(x)


cosh_p = unary_primitive("cosh", "chlo.cosh")
defjvp(cosh_p, lambda t, x: mul(t, sinh(x)))


def cosh(x):
    """Elementwise hyperbolic cosine (``chlo.cosh``)."""
    return cosh_p.bind(x)


# d asinh = 1 / sqrt(x^2 + 1), d acosh = 1 / sqrt(x^2 - 1), d atanh = 1 / ((1 + x)(1 - x))
asinh_p = unary_primitive("asinh", "chlo.asinh")
defjvp(asinh_p, lambda t, x: mul(t, rsqrt(add(square(x), _one(x)))))


def asinh(x):
    """Elementwise inverse hyperbolic sine (``chlo.asinh``)."""
    return asinh_p.bind(x)


acosh_p = unary_primitive("acosh", "chlo.acosh")
defjvp(acosh_p, lambda t, x: mul(t, rsqrt(sub(square(x), _one(x)))))


def acosh(x):
    """Elementwise inverse hyperbolic cosine (``chlo.acosh``)."""
    return acosh_p.bind(x)


atanh_p = unary_primitive("atanh", "chlo.atanh")
defjvp(atanh_p, lambda t, x: div(div(t, sub(_one(x), x)), add(_one(x), x)))


def atanh(x):
    """Elementwise inverse hyperbolic tangent (``chlo.atanh``)."""
    return atanh_p.bind(x)
