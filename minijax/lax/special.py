"""Special functions: inverse error function, log-gamma and its derivatives, the
regularized incomplete gamma and beta functions, the Hurwitz zeta function, and the
derivative of gamma samples.

All are elementwise on floating-point operands (operands take equal shapes, a rank-0
operand broadcasts), so each is batched elementwise.

- ``erf_inv``, ``erfc``, ``lgamma``, ``digamma``, ``polygamma``, ``zeta`` lower to the
  CHLO op of the same name, which XLA expands into polynomial approximations.
- ``igamma`` (P(a, x)), ``igammac`` (Q(a, x) = 1 - P), ``igamma_grad_a`` (dP/da) and
  ``random_gamma_grad`` (d sample / d alpha of a Gamma(alpha, 1) sample, the
  implicit-reparameterization gradient) have no CHLO op: their lowering traces the
  Cephes-style algorithm below (a power series for small x, a continued fraction for
  large x, each a ``while_loop`` that stops when every element has converged) and
  emits it inline. ``betainc`` (``regularized_incomplete_beta_p``, I_x(a, b)) is traced
  the same way: a continued fraction evaluated by the modified Lentz method.
  float16 and bfloat16 operands are computed in float32.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.trace import Primitive, get_aval, trace_to_jaxpr
from minijax.lax._util import (binary_primitive, broadcast_shapes_scalar, check_dtype, const_like,
                               same_dtypes, unary_primitive)
from minijax.lax.binary import (add, bitwise_and, bitwise_or, div, eq, ge, gt, le, lt, mul, ne,
                                rem, sub)
from minijax.lax.control_flow import while_loop
from minijax.lax.convert import convert_element_type
from minijax.lax.reduce import reduce_or
from minijax.lax.select import select
from minijax.lax.shape import broadcast_in_dim
from minijax.lax.unary import abs as _abs, bitwise_not, exp, integer_pow, log, log1p, neg
from minijax.transforms.batching import def_elementwise_batch
from minijax.transforms import ad
from minijax.transforms.ad import defjvp, defjvp2

_const = const_like


def _full_like(x, value):
    aval = get_aval(x)
    return broadcast_in_dim(np.asarray(value, aval.dtype), aval.shape, ())


def _isnan(x):
    return ne(x, x)


def _any(pred):
    return reduce_or(pred, tuple(range(get_aval(pred).ndim)))


# ---- the incomplete gamma algorithms ------------------------------------------------------

class _Mode(enum.Enum):
    VALUE = 1               # P(a, x) or Q(a, x)
    DERIVATIVE = 2          # d/da P(a, x)
    SAMPLE_DERIVATIVE = 3   # dx/da along P(a, x) = const: the gamma sample's gradient


def _log_ax(a, x):
    """``a log x - x - lgamma(a)``: the log of the common prefactor x^a e^-x / Gamma(a)."""
    return sub(sub(mul(a, log(x)), x), lgamma(a))


def _series(ax, x, a, enabled, mode: _Mode):
    """P(a, x) by its power series sum_n x^n / (a+1)...(a+n) (converges fast for x < a + 1),
    or a derivative of it, where ``enabled``; other elements are left at their start."""
    eps = float(dtypes.finfo(get_aval(x).dtype).eps)

    def cond(vals):
        return _any(vals[0])

    def body(vals):
        on, r, c, total, dc_da, dtotal_da = vals
        r_new = add(r, _const(r, 1))
        # c_n = c_{n-1} * x / r_n (r_n = a + n); its a-derivative by the product rule.
        dc_new = sub(mul(dc_da, div(x, r_new)), div(mul(c, x), mul(r_new, r_new)))
        dtotal_new = add(dtotal_da, dc_new)
        c_new = mul(c, div(x, r_new))
        total_new = add(total, c_new)
        if mode is _Mode.VALUE:
            more = gt(div(c_new, total_new), _const(c_new, eps))
        else:
            more = gt(_abs(div(dc_new, dtotal_new)), _const(dc_new, eps))
        return (bitwise_and(on, more), select(on, r_new, r), select(on, c_new, c),
                select(on, total_new, total), select(on, dc_new, dc_da),
                select(on, dtotal_new, dtotal_da))

    one, zero = _full_like(a, 1), _full_like(a, 0)
    _, _, _, total, _, dtotal_da = while_loop(cond, body, (enabled, a, one, one, zero, zero))
    if mode is _Mode.VALUE:
        return div(mul(total, ax), a)
    dlogax_da = sub(log(x), digamma(add(a, _const(a, 1))))
    if mode is _Mode.DERIVATIVE:
        return div(mul(ax, add(mul(total, dlogax_da), dtotal_da)), a)
    return div(mul(neg(add(dtotal_da, mul(total, dlogax_da))), x), a)


def _continued_fraction(ax, x, a, enabled, mode: _Mode):
    """Q(a, x) by its continued fraction (converges fast for x > a + 1), or a derivative of
    it, where ``enabled``. The convergents p_k / q_k are rescaled when they grow large."""
    dt = get_aval(x).dtype
    eps = float(dtypes.finfo(dt).eps)
    big = _const(x, 1.0 / eps)

    def cond(vals):
        return bitwise_and(lt(vals[5], _const(vals[5], 2000)), _any(vals[0]))

    def body(vals):
        (on, ans, t, y, z, n, pkm1, qkm1, pkm2, qkm2,
         dpkm2, dqkm2, dpkm1, dqkm1, dans) = vals
        n = add(n, _const(n, 1))
        y_new = add(y, _const(y, 1))
        z_new = add(z, _const(z, 2))
        yc = mul(y_new, n)
        pk = sub(mul(pkm1, z_new), mul(pkm2, yc))
        qk = sub(mul(qkm1, z_new), mul(qkm2, yc))
        nonzero = ne(qk, _const(qk, 0))
        r = div(pk, qk)
        t_new = select(nonzero, _abs(div(sub(ans, r), r)), _full_like(r, 1))
        ans_new = select(nonzero, r, ans)
        dpk = add(sub(sub(mul(dpkm1, z_new), pkm1), mul(dpkm2, yc)), mul(pkm2, n))
        dqk = add(sub(sub(mul(dqkm1, z_new), qkm1), mul(dqkm2, yc)), mul(qkm2, n))
        dans_new = select(nonzero, div(sub(dpk, mul(ans_new, dqk)), qk), dans)
        dchange = select(nonzero, _abs(sub(dans_new, dans)), _full_like(dans, 1))
        # Shift the recurrence, rescaling every term by eps when p_k grows past 1/eps.
        rescale = gt(_abs(pk), big)

        def scaled(v):
            return select(rescale, mul(v, _const(v, eps)), v)

        new_p2, new_p1, new_q2, new_q1 = scaled(pkm1), scaled(pk), scaled(qkm1), scaled(qk)
        new_dp2, new_dq2 = scaled(dpkm1), scaled(dqkm1)
        new_dp1, new_dq1 = scaled(dpk), scaled(dqk)
        if mode is _Mode.VALUE:
            more = gt(t_new, _const(t_new, eps))
        else:
            more = gt(dchange, _const(dchange, eps))
        keep = [(ans_new, ans), (t_new, t), (y_new, y), (z_new, z)]
        rest = [(new_p1, pkm1), (new_q1, qkm1), (new_p2, pkm2), (new_q2, qkm2),
                (new_dp2, dpkm2), (new_dq2, dqkm2), (new_dp1, dpkm1), (new_dq1, dqkm1),
                (dans_new, dans)]
        return (bitwise_and(on, more), *[select(on, v, old) for v, old in keep], n,
                *[select(on, v, old) for v, old in rest])

    y = sub(_const(a, 1), a)
    z = add(add(x, y), _const(x, 1))
    pkm2 = _full_like(x, 1)
    qkm2 = x
    pkm1 = add(x, _const(x, 1))
    qkm1 = mul(z, x)
    ans = div(pkm1, qkm1)
    zero = _full_like(x, 0)
    dqkm1 = neg(x)
    dans = div(sub(zero, mul(ans, dqkm1)), qkm1)
    init = (enabled, ans, _full_like(x, 1), y, z, np.zeros((), dt), pkm1, qkm1, pkm2, qkm2,
            zero, zero, zero, dqkm1, dans)
    out = while_loop(cond, body, init)
    ans, dans = out[1], out[14]
    if mode is _Mode.VALUE:
        return mul(ans, ax)
    dlogax_da = sub(log(x), digamma(a))
    if mode is _Mode.DERIVATIVE:
        return mul(ax, add(mul(ans, dlogax_da), dans))
    return mul(neg(add(dans, mul(ans, dlogax_da))), x)


def _domain(a, x):
    """Masks shared by the igamma family: (is_nan, x == 0, x == inf)."""
    return bitwise_or(_isnan(a), _isnan(x)), eq(x, _const(x, 0)), eq(x, _const(x, np.inf))


def _underflows(log_ax):
    """Where the prefactor exp(log_ax) underflows (log_ax < -log(finfo.max))."""
    dt = get_aval(log_ax).dtype
    return lt(log_ax, _const(log_ax, -np.log(dtypes.finfo(dt).max)))


def _igamma_impl(a, x):
    is_nan, x_zero, x_inf = _domain(a, x)
    a_zero = eq(a, _const(a, 0))
    bad = bitwise_or(bitwise_or(lt(x, _const(x, 0)), lt(a, _const(a, 0))),
                     bitwise_or(bitwise_and(a_zero, x_zero), is_nan))
    use_cf = bitwise_and(ge(x, _const(x, 1)), gt(x, a))
    log_ax = _log_ax(a, x)
    ax = exp(log_ax)
    on = bitwise_not(bitwise_or(bitwise_or(x_zero, bad), bitwise_or(_underflows(log_ax), x_inf)))
    out = select(use_cf,
                 sub(_const(a, 1), _continued_fraction(ax, x, a, bitwise_and(on, use_cf),
                                                       _Mode.VALUE)),
                 _series(ax, x, a, bitwise_and(on, bitwise_not(use_cf)), _Mode.VALUE))
    out = select(x_zero, _full_like(a, 0), out)
    out = select(x_inf, _full_like(a, 1), out)
    return select(bad, _full_like(a, np.nan), out)


def _igammac_impl(a, x):
    is_nan, x_zero, x_inf = _domain(a, x)
    a_zero = eq(a, _const(a, 0))
    bad = bitwise_or(bitwise_or(lt(x, _const(x, 0)), lt(a, _const(a, 0))),
                     bitwise_or(bitwise_and(a_zero, x_zero), is_nan))
    use_series = bitwise_or(lt(x, _const(x, 1)), lt(x, a))
    log_ax = _log_ax(a, x)
    on = bitwise_not(bitwise_or(bitwise_or(bad, _underflows(log_ax)), bitwise_or(x_inf, a_zero)))
    ax = exp(log_ax)
    series = _series(ax, x, a, bitwise_and(on, use_series), _Mode.VALUE)
    cf = _continued_fraction(ax, x, a, bitwise_and(on, bitwise_not(use_series)), _Mode.VALUE)
    out = select(use_series, sub(_const(a, 1), series), cf)
    out = select(bitwise_or(x_inf, a_zero), _full_like(out, 0), out)
    return select(bad, _full_like(a, np.nan), out)


def _derivative_impl(mode: _Mode):
    """d/da P(a, x) (``DERIVATIVE``) or the gamma sample gradient (``SAMPLE_DERIVATIVE``)."""
    def impl(a, x):
        is_nan, x_zero, _ = _domain(a, x)
        bad = bitwise_or(lt(x, _const(x, 0)), le(a, _const(a, 0)))
        use_cf = bitwise_and(gt(x, _const(x, 1)), gt(x, a))
        log_ax = _log_ax(a, x)
        ax = exp(log_ax)
        on = bitwise_not(bitwise_or(bitwise_or(x_zero, bad),
                                    bitwise_or(_underflows(log_ax), is_nan)))
        out = select(use_cf,
                     neg(_continued_fraction(ax, x, a, bitwise_and(on, use_cf), mode)),
                     _series(ax, x, a, bitwise_and(on, bitwise_not(use_cf)), mode))
        out = select(x_zero, _full_like(out, 0), out)
        return select(bitwise_or(bad, is_nan), _full_like(a, np.nan), out)
    return impl


_igamma_grad_a_impl = _derivative_impl(_Mode.DERIVATIVE)
_random_gamma_grad_impl = _derivative_impl(_Mode.SAMPLE_DERIVATIVE)


# ---- the regularized incomplete beta function ---------------------------------------------------

def _betainc_continued_fraction(a, b, x, iterations: int, tiny):
    """The continued fraction ``1 / (1 + d1 / (1 + d2 / (1 + ...)))`` of I_x(a, b) (DLMF
    8.17.22) by the modified Lentz method: every element is updated until all of them have
    converged (|step - 1| < tiny) or ``iterations`` terms were taken. ``tiny`` also stands in
    for vanishing intermediate denominators."""
    one = _full_like(x, 1)

    def numerator(n):
        # n = 1: 1; even n = 2m + 2: -(a+m)(a+b+m)x / ((a+2m)(a+2m+1)); odd n = 2m + 1 > 1:
        # m(b-m)x / ((a+2m-1)(a+2m)).
        m = convert_element_type(div(sub(n, np.int32(1)), np.int32(2)), get_aval(x).dtype)
        two_m = add(m, m)
        even = div(neg(mul(mul(add(a, m), add(add(a, b), m)), x)),
                   mul(add(a, two_m), add(add(a, two_m), _const(a, 1))))
        # (at m = 0 the same term, written without the cancelling factor, stays exact for
        # tiny a when denormals flush to zero)
        even = select(eq(n, np.int32(2)),
                      div(neg(mul(add(a, b), x)), add(a, _const(a, 1))), even)
        odd = div(mul(mul(m, sub(b, m)), x), mul(sub(add(a, two_m), _const(a, 1)),
                                                 add(a, two_m)))
        return select(eq(n, np.int32(1)), one,
                      select(eq(rem(n, np.int32(2)), np.int32(0)), even, odd))

    def floor_tiny(v):
        return select(lt(_abs(v), tiny), _full_like(v, tiny), v)

    def cond(vals):
        n, unconverged = vals[0], vals[1]
        return bitwise_and(lt(n, np.int32(iterations)), unconverged)

    def body(vals):
        n, _, c, d, h = vals
        an = numerator(n)
        c = floor_tiny(add(one, div(an, c)))
        d = div(one, floor_tiny(add(one, mul(an, d))))
        step = mul(c, d)
        return (add(n, np.int32(1)), _any(ge(_abs(sub(step, one)), tiny)), c, d, mul(h, step))

    h0 = _full_like(x, tiny)        # the leading term b0 = 0, floored to tiny
    out = while_loop(cond, body, (np.int32(1), np.bool_(True), h0, _full_like(x, 0), h0))
    return out[4]


def _betainc_impl(a, b, x):
    dt = get_aval(x).dtype
    finfo = dtypes.finfo(dt)
    zero, one = _const(x, 0), _const(x, 1)
    inf = _const(x, np.inf)
    a_vanishes = bitwise_or(eq(a, zero), eq(b, inf))     # the mass sits at x = 0
    b_vanishes = bitwise_or(eq(b, zero), eq(a, inf))     # ... at x = 1
    x0, x1 = eq(x, zero), eq(x, one)
    out_zero = bitwise_or(bitwise_and(b_vanishes, bitwise_not(x1)), bitwise_and(a_vanishes, x0))
    out_one = bitwise_or(bitwise_and(a_vanishes, bitwise_not(x0)), bitwise_and(b_vanishes, x1))
    out_nan = bitwise_or(
        bitwise_or(bitwise_or(lt(a, zero), lt(b, zero)), bitwise_or(lt(x, zero), gt(x, one))),
        bitwise_or(bitwise_and(a_vanishes, b_vanishes),
                   bitwise_or(bitwise_or(_isnan(a), _isnan(b)), _isnan(x))))
    # The fraction converges fast below the mean (a+1)/(a+b+2); above it, use
    # I_x(a, b) = 1 - I_{1-x}(b, a) (DLMF 8.17.4).
    direct = lt(x, div(add(a, one), add(add(a, b), _const(x, 2))))
    a, b, x = select(direct, a, b), select(direct, b, a), select(direct, x, sub(one, x))
    tiny = _const(x, finfo.eps / 2)
    cf = _betainc_continued_fraction(a, b, x, 200 if dt == np.float32 else 600, tiny)
    # x^a (1-x)^b / (a B(a, b)); for a below 2 * tiny-normal, a Gamma(a) = Gamma(a+1) ~ 1.
    log_b_ratio = sub(lgamma(b), lgamma(add(a, b)))
    small_a = lt(a, _const(a, 2 * finfo.tiny))
    prefactor = select(small_a, exp(sub(mul(log1p(neg(x)), b), log_b_ratio)),
                       div(exp(sub(add(mul(log(x), a), mul(log1p(neg(x)), b)),
                                   add(lgamma(a), log_b_ratio))), a))
    out = mul(cf, prefactor)
    out = select(direct, out, sub(one, out))
    out = select(out_zero, _full_like(out, 0), out)
    out = select(out_one, _full_like(out, 1), out)
    return select(out_nan, _full_like(out, np.nan), out)


def _ternary_float_abstract(a, b, x):
    name = "regularized_incomplete_beta"
    check_dtype(name, a, "f")
    dt = same_dtypes(name, [a, b, x])
    shape = broadcast_shapes_scalar(name, [a, b, x])
    return ShapedArray(shape, dt, a.weak_type and b.weak_type and x.weak_type)


def _upcast_and_broadcast(impl: Callable) -> Callable:
    """``impl`` on operands broadcast to one shape, computed in float32 for 16-bit floats."""
    def wrapped(*args):
        avals = [get_aval(v) for v in args]
        shape = next((a.shape for a in avals if a.shape), ())
        args = [v if a.shape == shape else broadcast_in_dim(v, shape, ())
                for v, a in zip(args, avals)]
        dt = avals[0].dtype
        if dt.itemsize < 4:
            f32 = np.dtype(np.float32)
            out = impl(*[convert_element_type(v, f32) for v in args])
            return convert_element_type(out, dt)
        return impl(*args)
    return wrapped


def _traced_lowering(impl: Callable):
    """A lowering rule that traces ``impl`` on the operand avals and emits it inline."""
    def rule(ctx, *args):
        avals = [ShapedArray(v.aval.shape, v.aval.dtype) for v in args]
        jaxpr, consts, _ = trace_to_jaxpr(lambda *xs: ([impl(*xs)], None), avals)
        return ctx.lower_jaxpr(ClosedJaxpr(jaxpr, consts), list(args))[0]
    return rule


def _jvp_of_impl(impl: Callable):
    """A jvp rule that differentiates ``impl`` itself (forward mode runs through its loops)."""
    def rule(primals, tangents):
        tangents = [ad.instantiate(t) for t in tangents]
        (out,), (t_out,) = ad.jvp_flat(lambda *xs: [impl(*xs)], list(primals), tangents)
        return out, ad.instantiate(t_out)
    return rule


# ---- the primitives ---------------------------------------------------------------------------
# One block each. Abstract eval, lowering and (elementwise) batching of the CHLO-backed ones
# come from unary_primitive / binary_primitive; the traced lowerings and jvps are set here.

erf_inv_p = unary_primitive("erf_inv", "chlo.erf_inv", "f")
defjvp2(erf_inv_p, lambda t, ans, x: mul(mul(t, _const(x, np.sqrt(np.pi) / 2)),
                                         exp(integer_pow(ans, 2))))

erfc_p = unary_primitive("erfc", "chlo.erfc", "f")
defjvp(erfc_p, lambda t, x: mul(mul(t, _const(x, -2 / np.sqrt(np.pi))),
                                exp(neg(integer_pow(x, 2)))))

lgamma_p = unary_primitive("lgamma", "chlo.lgamma", "f")
defjvp(lgamma_p, lambda t, x: mul(t, digamma(x)))

digamma_p = unary_primitive("digamma", "chlo.digamma", "f")
defjvp(digamma_p, lambda t, x: mul(t, polygamma(_const(x, 1), x)))


def _polygamma_jvp_m(t, m, x):
    raise ValueError("polygamma gradient with respect to m is not supported")


polygamma_p = binary_primitive("polygamma", "chlo.polygamma", "f")
defjvp(polygamma_p, _polygamma_jvp_m,
       lambda t, m, x: mul(t, polygamma(add(m, _const(m, 1)), x)))


def _igamma_jvp_x(t, a, x):
    # dP/dx = x^(a-1) e^-x / Gamma(a)
    return mul(t, exp(sub(add(neg(x), mul(sub(a, _const(a, 1)), log(x))), lgamma(a))))


igamma_p = binary_primitive("igamma", "", "f")
igamma_p.def_lowering(_traced_lowering(_upcast_and_broadcast(_igamma_impl)))
defjvp(igamma_p, lambda t, a, x: mul(t, igamma_grad_a(a, x)), _igamma_jvp_x)

igammac_p = binary_primitive("igammac", "", "f")
igammac_p.def_lowering(_traced_lowering(_upcast_and_broadcast(_igammac_impl)))
defjvp(igammac_p, lambda t, a, x: neg(mul(t, igamma_grad_a(a, x))),
       lambda t, a, x: neg(_igamma_jvp_x(t, a, x)))

igamma_grad_a_p = binary_primitive("igamma_grad_a", "", "f")
igamma_grad_a_p.def_lowering(_traced_lowering(_upcast_and_broadcast(_igamma_grad_a_impl)))
igamma_grad_a_p.def_jvp(_jvp_of_impl(_upcast_and_broadcast(_igamma_grad_a_impl)))

random_gamma_grad_p = binary_primitive("random_gamma_grad", "", "f")
random_gamma_grad_p.def_lowering(
    _traced_lowering(_upcast_and_broadcast(_random_gamma_grad_impl)))
random_gamma_grad_p.def_jvp(_jvp_of_impl(_upcast_and_broadcast(_random_gamma_grad_impl)))


def _zeta_jvp_x(t, x, q):
    raise ValueError("zeta gradient with respect to x is not supported")


zeta_p = binary_primitive("zeta", "chlo.zeta", "f")
# d/dq zeta(x, q) = -x zeta(x + 1, q) (jax defines no jvp for zeta_p)
defjvp(zeta_p, _zeta_jvp_x, lambda t, x, q: mul(t, neg(mul(x, zeta(add(x, _const(x, 1)), q)))))


def _betainc_jvp_ab(t, a, b, x):
    raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_jvp_x(t, a, b, x):
    # d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b)
    log_beta = sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))
    return mul(t, exp(sub(add(mul(sub(b, _const(b, 1)), log1p(neg(x))),
                              mul(sub(a, _const(a, 1)), log(x))), log_beta)))


regularized_incomplete_beta_p = Primitive("regularized_incomplete_beta")
regularized_incomplete_beta_p.def_abstract_eval(_ternary_float_abstract)
regularized_incomplete_beta_p.def_lowering(_traced_lowering(_upcast_and_broadcast(_betainc_impl)))
defjvp(regularized_incomplete_beta_p, _betainc_jvp_ab, _betainc_jvp_ab, _betainc_jvp_x)
def_elementwise_batch(regularized_incomplete_beta_p)


# ---- the lax-level functions ------------------------------------------------------------------

def erf_inv(x):
    """The inverse error function, elementwise: ``erf(erf_inv(x)) == x`` on (-1, 1)."""
    return erf_inv_p.bind(x)


def erfc(x):
    """The complementary error function ``1 - erf(x)``, elementwise."""
    return erfc_p.bind(x)


def lgamma(x):
    """``log |Gamma(x)|``, elementwise."""
    return lgamma_p.bind(x)


def digamma(x):
    """The digamma function ``d/dx log Gamma(x)``, elementwise."""
    return digamma_p.bind(x)


def polygamma(m, x):
    """The polygamma function ``psi^(m)(x)``, the m-th derivative of digamma."""
    return polygamma_p.bind(m, x)


def igamma(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)``, elementwise."""
    return igamma_p.bind(a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    return igammac_p.bind(a, x)


def igamma_grad_a(a, x):
    """``d/da P(a, x)``, elementwise."""
    return igamma_grad_a_p.bind(a, x)


def zeta(x, q):
    """The Hurwitz zeta function ``sum_{n>=0} (q + n)^-x``, elementwise."""
    return zeta_p.bind(x, q)


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)``, elementwise."""
    return regularized_incomplete_beta_p.bind(a, b, x)


def random_gamma_grad(a, x):
    """The derivative of a Gamma(a, 1) sample ``x`` with respect to ``a``, holding the
    sample's quantile P(a, x) fixed (implicit reparameterization), elementwise."""
    return random_gamma_grad_p.bind(a, x)

