"""Exponentially scaled modified Bessel functions of the first kind, orders 0 and 1:
``bessel_i0e(x) = exp(-|x|) I0(x)`` and ``bessel_i1e(x) = exp(-|x|) I1(x)``.

``bessel_i1e`` lowers to ``chlo.bessel_i1e``. CHLO has no order-0 op, so ``bessel_i0e``
lowers to Cephes' Chebyshev expansions (one on [0, 8] in x/2 - 2, one on (8, inf) in
32/x - 2 divided by sqrt(x)), traced and emitted inline; float32 uses the leading terms
of the float64 series, 16-bit floats are computed in float32.
"""

from __future__ import annotations

import numpy as np

from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.trace import get_aval, trace_to_jaxpr
from minijax.lax._util import unary_primitive
from minijax.lax.binary import add, div, gt, le, mul, sub
from minijax.lax.convert import convert_element_type
from minijax.lax.select import select
from minijax.lax.shape import broadcast_in_dim
from minijax.lax.unary import abs as _abs, sign, sqrt
from minijax.transforms.ad import defjvp2

# Chebyshev coefficients of exp(-x) I0(x) (Cephes i0.c), highest order first: on [0, 8]
# in t = x/2 - 2, and of sqrt(x) exp(-x) I0(x) on (8, inf) in t = 32/x - 2. float32 keeps
# the last 18 and 7 of them.
_I0E_NEAR = np.array([
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1])
_I0E_FAR = np.array([
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1])


def _full_like(x, value):
    aval = get_aval(x)
    return broadcast_in_dim(np.asarray(value, aval.dtype), aval.shape, ())


def _chebyshev(t, coefs):
    """``sum_k' c_k T_k(t / 2)`` by Clenshaw's recurrence (Cephes' ``chbevl``)."""
    b0, b1 = _full_like(t, 0), _full_like(t, 0)
    b2 = b1
    for c in coefs:
        b2, b1 = b1, b0
        b0 = add(sub(mul(t, b1), b2), np.asarray(c, get_aval(t).dtype))
    return mul(np.asarray(0.5, get_aval(t).dtype), sub(b0, b2))


def _i0e_impl(x):
    dt = get_aval(x).dtype
    if dt.itemsize < 4:
        return convert_element_type(_i0e_impl(convert_element_type(x, np.float32)), dt)
    near, far = (_I0E_NEAR, _I0E_FAR) if dt == np.float64 else (_I0E_NEAR[-18:], _I0E_FAR[-7:])
    ax = _abs(x)

    def c(v):
        return np.asarray(v, dt)

    small = _chebyshev(sub(mul(c(0.5), ax), c(2)), near)
    large = div(_chebyshev(sub(div(c(32), ax), c(2)), far), sqrt(ax))
    return select(le(ax, c(8)), small, large)


def _i0e_lowering(ctx, x):
    jaxpr, consts, _ = trace_to_jaxpr(lambda v: ([_i0e_impl(v)], None),
                                      [ShapedArray(x.aval.shape, x.aval.dtype)])
    return ctx.lower_jaxpr(ClosedJaxpr(jaxpr, consts), [x])[0]


# ---- the primitives ---------------------------------------------------------------------------
# (abstract eval, the CHLO lowering of i1e and elementwise batching come from unary_primitive)

bessel_i0e_p = unary_primitive("bessel_i0e", "", "f")
bessel_i0e_p.def_lowering(_i0e_lowering)
defjvp2(bessel_i0e_p, lambda t, ans, x: mul(t, sub(bessel_i1e(x), mul(sign(x), ans))))


def bessel_i0e(x):
    """``exp(-|x|) I0(x)``, the exponentially scaled modified Bessel function of order 0."""
    return bessel_i0e_p.bind(x)


def _i1e_jvp(t, ans, x):
    # d/dx i1e = i0e(x) - i1e(x) (sign(x) + 1/x), whose limit at 0 is 1/2.
    eps = np.asarray(np.finfo(get_aval(x).dtype).eps, get_aval(x).dtype)
    away = gt(_abs(x), eps)
    safe = select(away, x, _full_like(x, eps))
    slope = sub(bessel_i0e(safe), mul(ans, add(sign(safe), div(np.asarray(1, eps.dtype), safe))))
    return mul(t, select(away, slope, _full_like(x, 0.5)))


bessel_i1e_p = unary_primitive("bessel_i1e", "chlo.bessel_i1e", "f")
defjvp2(bessel_i1e_p, _i1e_jvp)


def bessel_i1e(x):
    """``exp(-|x|) I1(x)``, the exponentially scaled modified Bessel function of order 1."""
    return bessel_i1e_p.bind(x)
