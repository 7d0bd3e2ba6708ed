"""Special values of complex elementwise functions, as the Array API standard's tables
(C99 Annex G) give them.

XLA's complex kernels compute the common case; at infinities and NaNs some parts come
out NaN where the standard fixes a value (``exp(-inf + i*nan)`` is ``0 + 0j``). Each
function here computes the lax result and then selects the standard's values where the
input's parts say so. Real inputs pass straight through.
"""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core.trace import get_aval

_INF, _NAN = float("inf"), float("nan")


def _const(re_dtype, v, shape):
    return lax.broadcast_in_dim(np.asarray(v, re_dtype), shape, ())


def _fixed(fn, rules):
    """``fn`` with ``rules(re, im, c)`` applied to complex inputs: a list of
    ``(mask, real_part, imag_part)``; the first rule whose mask holds wins. ``c(v)``
    makes a real constant of the input's shape."""
    def f(x):
        out = fn(x)
        aval = get_aval(x)
        if aval.dtype.kind != "c":  # real: nothing to fix
            return out
        re, im = lax.real(x), lax.imag(x)
        rdt = get_aval(re).dtype

        def c(v):
            return _const(rdt, v, aval.shape)
        for mask, r, i in reversed(rules(re, im, c)):
            out = lax.select(mask, lax.complex(r, i), out)
        return out
    return f


def _is(x, c, v):
    return lax.eq(x, c(v))


def _nonfinite(x):
    return lax.bitwise_not(lax.is_finite(x))


def _isnan(x):
    return lax.ne(x, x)


def _isinf(x, c):
    return lax.eq(lax.abs(x), c(_INF))


def _exp_rules(minus_inf_value):
    def rules(re, im, c):
        return [(lax.bitwise_and(_is(re, c, _INF), _nonfinite(im)), c(_INF), c(_NAN)),
                (lax.bitwise_and(_is(re, c, -_INF), _nonfinite(im)),
                 c(minus_inf_value), c(0.0))]
    return rules


def _expm1_rules(re, im, c):
    return _exp_rules(-1.0)(re, im, c) + [
        (lax.bitwise_and(_isnan(re), lax.ne(im, c(0.0))), c(_NAN), c(_NAN))]


def _sinh_rules(re, im, c):
    edge = lax.bitwise_or(lax.eq(re, c(0.0)), _isinf(re, c))
    return [(lax.bitwise_and(edge, _nonfinite(im)), re, c(_NAN))]


def _cosh_rules(re, im, c):
    return [(lax.bitwise_and(lax.eq(re, c(0.0)), _nonfinite(im)), c(_NAN), c(0.0)),
            (lax.bitwise_and(_isinf(re, c), _nonfinite(im)), c(_INF), c(_NAN))]


def _tanh_rules(re, im, c):
    finite_nonzero = lax.bitwise_and(lax.is_finite(re), lax.ne(re, c(0.0)))
    return [(lax.bitwise_and(lax.eq(re, c(0.0)), _nonfinite(im)), re, c(_NAN)),
            (lax.bitwise_and(finite_nonzero, _nonfinite(im)), c(_NAN), c(_NAN)),
            (lax.bitwise_and(_isinf(re, c), _nonfinite(im)), lax.sign(re), c(0.0))]


def _log_rules(shift):
    def rules(re, im, c):
        r = lax.add(re, c(shift)) if shift else re
        return [(lax.bitwise_or(_isinf(re, c), _isinf(im, c)), c(_INF), lax.atan2(im, r))]
    return rules


def _sqrt_rules(re, im, c):
    return [(_isinf(im, c), c(_INF), im),
            (lax.bitwise_and(_is(re, c, _INF), _isnan(im)), c(_INF), c(_NAN)),
            (lax.bitwise_and(_is(re, c, -_INF), _isnan(im)), c(_NAN), c(_INF))]


def _atanh_rules(re, im, c):
    nan_im = _isnan(im)
    return [(lax.bitwise_and(lax.eq(re, c(0.0)), nan_im), re, c(_NAN)),
            (lax.bitwise_and(_isinf(re, c), nan_im), lax.mul(c(0.0), lax.sign(re)), c(_NAN)),
            (lax.bitwise_and(_isnan(re), lax.is_finite(im)), c(_NAN), c(_NAN)),
            (lax.bitwise_or(lax.bitwise_and(_isnan(re), nan_im),
                            lax.bitwise_and(lax.is_finite(re), nan_im)), c(_NAN), c(_NAN))]


def _acos_rules(re, im, c):
    return [(lax.bitwise_and(lax.eq(re, c(0.0)), _isnan(im)), c(np.pi / 2), c(_NAN))]


def _acosh_rules(re, im, c):
    return [(lax.bitwise_and(lax.eq(re, c(0.0)), _isnan(im)), c(_NAN), c(np.pi / 2))]


def _asinh_rules(re, im, c):
    return [(lax.bitwise_and(_isnan(re), lax.eq(im, c(0.0))), c(_NAN), im)]


def sign(x):
    """``lax.sign`` with +0 for (either) zero, as the standard's table says."""
    out = lax.sign(x)
    zero = lax.broadcast_in_dim(np.zeros((), get_aval(x).dtype), get_aval(x).shape, ())
    return lax.select(lax.eq(x, zero), zero, out)


exp = _fixed(lax.exp, _exp_rules(0.0))
expm1 = _fixed(lax.expm1, _expm1_rules)
sinh = _fixed(lax.sinh, _sinh_rules)
cosh = _fixed(lax.cosh, _cosh_rules)
tanh = _fixed(lax.tanh, _tanh_rules)
log = _fixed(lax.log, _log_rules(0.0))
log1p = _fixed(lax.log1p, _log_rules(1.0))
sqrt = _fixed(lax.sqrt, _sqrt_rules)
arctanh = _fixed(lax.atanh, _atanh_rules)
arccos = _fixed(lax.acos, _acos_rules)
arccosh = _fixed(lax.acosh, _acosh_rules)
arcsinh = _fixed(lax.asinh, _asinh_rules)
