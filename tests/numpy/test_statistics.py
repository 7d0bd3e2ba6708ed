"""Statistics of minijax.numpy against jax.numpy: nan reductions, quantiles, cov/corrcoef,
histograms, cumulative functions and numerical calculus (values, dtypes, exceptions),
each case as one jitted program per library, plus jit/grad/vmap with traced operands."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from tests.numpy._util import assert_same, check_against_jax

X = np.array([[1.0, np.nan, 3.0, 4.0], [np.nan] * 4, [5.0, 2.0, -1.0, 0.0]], np.float32)
Y = np.array([[3.0, 1.0, 2.0, 5.0], [0.0, 9.0, 4.0, 4.0], [7.0, 2.0, 2.0, 1.0]], np.float32)
D = np.array([0, 1, 1, 3, 2, 1, 7])
S = np.array([0.1, 0.5, 1.2, 3.3, 3.3, 9.9, 2.0, 5.0], np.float32)
F = np.array([1.0, 2, 4, 7, 11], np.float32)
XP = np.array([0.0, 1.0, 2.5, 4.0], np.float32)
FP = np.array([1.0, 3.0, -1.0, 0.0], np.float32)
XS = np.array([-1.0, 0.0, 0.5, 2.0, 3.9, 4.0, 7.0], np.float32)
PH = np.array([0.0, 1.0, 3.5, 6.5, 0.2, -3.0], np.float32)
Q3 = np.array([0.0, 0.5, 1.0])

NAN_REDUCTIONS = ["nanmin", "nanmax", "nansum", "nanprod", "nanmean", "nanvar", "nanstd",
                  "nanargmax", "nanargmin", "nanmedian"]
CASES = [(f"{n}_{i}", lambda L, n=n, kw=kw: getattr(L, n)(X, **kw))
         for n in NAN_REDUCTIONS for i, kw in enumerate([{}, {"axis": 1},
                                                          {"axis": 0, "keepdims": True}])]
CASES += [
    ("nanvar_ddof", lambda L: L.nanvar(X, axis=1, ddof=2)),
    ("nansum_int", lambda L: L.nansum(np.arange(5, dtype=np.int8))),
    ("nanmin_initial", lambda L: L.nanmin(X, axis=1, initial=0.5)),
    ("nancumsum", lambda L: L.nancumsum(X, axis=1)), ("nancumprod", lambda L: L.nancumprod(X)),
    ("cumulative_sum", lambda L: L.cumulative_sum(Y, axis=1, include_initial=True)),
    ("cumulative_sum_int8", lambda L: L.cumulative_sum(np.arange(5, dtype=np.int8))),
    ("cumulative_sum_no_axis", lambda L: L.cumulative_sum(Y)),
    ("cumulative_prod", lambda L: L.cumulative_prod(Y, axis=0, include_initial=True)),
    ("average", lambda L: L.average(Y)),
    ("average_weights", lambda L: L.average(Y, axis=1, weights=np.array([1.0, 2, 3, 4]),
                                            returned=True)),
    ("average_full", lambda L: L.average(Y, weights=Y, returned=True, keepdims=True)),
    ("average_int", lambda L: L.average(np.arange(4), returned=True)),
    ("ptp", lambda L: L.ptp(Y, axis=1)),
]
for _m in ["linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf"]:
    CASES.append((f"quantile_{_m}", lambda L, m=_m: L.quantile(Y, Q3, axis=1, method=m)))
    CASES.append((f"nanquantile_{_m}", lambda L, m=_m: L.nanquantile(X, 0.3, axis=1, method=m)))
CASES += [
    ("quantile_axes", lambda L: L.quantile(np.arange(24.0).reshape(2, 3, 4),
                                           np.array([0.25, 0.75]), axis=(0, 2), keepdims=True)),
    ("quantile_keepdims", lambda L: L.quantile(Y, 0.5, keepdims=True)),
    ("quantile_nan", lambda L: L.quantile(X, 0.5, axis=1)),
    ("quantile_weights", lambda L: L.quantile(Y, 0.5, axis=1, method="inverted_cdf",
                                              weights=np.array([1.0, 0, 2, 1]))),
    ("quantile_weights_bad", lambda L: L.quantile(Y, 0.5, axis=1,
                                                  weights=np.array([1.0, 0, 2, 1]))),
    ("quantile_int", lambda L: L.quantile(np.arange(10), 0.33)),
    ("quantile_bad_method", lambda L: L.quantile(Y, 0.5, method="bogus")),
    ("percentile", lambda L: L.percentile(Y, np.array([10, 90]), axis=0)),
    ("nanpercentile", lambda L: L.nanpercentile(X, 50)),
    ("median", lambda L: L.median(Y, axis=0)), ("median_int", lambda L: L.median(np.arange(7))),
    ("cov", lambda L: L.cov(Y)), ("cov_y", lambda L: L.cov(Y[0], Y[1])),
    ("cov_rowvar", lambda L: L.cov(Y, rowvar=False, bias=True)),
    ("cov_weights", lambda L: L.cov(Y, fweights=np.array([1, 2, 1, 3]),
                                    aweights=np.array([0.5, 1.0, 2, 1]))),
    ("cov_1d", lambda L: L.cov(Y[0])),
    ("corrcoef", lambda L: L.corrcoef(Y)), ("corrcoef_complex", lambda L: L.corrcoef(
        Y + 1j * Y[::-1])),
    ("bincount_weights", lambda L: L.bincount(D, weights=np.linspace(0, 1, 7), length=10)),
    ("bincount_length", lambda L: L.bincount(D, length=4)),
    ("bincount_float", lambda L: L.bincount(np.array([1.0]), length=2)),
    ("digitize", lambda L: L.digitize(XS, XP)),
    ("digitize_right", lambda L: L.digitize(XS, XP, right=True)),
    ("digitize_decreasing", lambda L: L.digitize(XS, XP[::-1])),
    ("histogram_bin_edges", lambda L: L.histogram_bin_edges(S, 3, range=(0, 6))),
    ("histogram_bin_edges_flat", lambda L: L.histogram_bin_edges(np.ones(3), 2)),
    ("histogram", lambda L: L.histogram(S, 4)),
    ("histogram_edges", lambda L: L.histogram(S, np.array([0.0, 1, 5, 10]))),
    ("histogram_density", lambda L: L.histogram(S, 3, weights=S, density=True)),
    ("histogram2d", lambda L: L.histogram2d(S, S[::-1], bins=[2, np.array([0.0, 5.0, 10.0])],
                                            density=True)),
    ("histogramdd", lambda L: L.histogramdd(np.stack([S, S * 2, -S], 1), bins=(2, 3, 2))),
    ("gradient", lambda L: L.gradient(F, 2.0)),
    ("gradient_coordinates", lambda L: L.gradient(F, np.array([0.0, 1, 1.5, 3.5, 4]))),
    ("gradient_2d", lambda L: L.gradient(Y)),
    ("gradient_too_small", lambda L: L.gradient(np.ones(1))),
    ("trapezoid", lambda L: L.trapezoid(Y)),
    ("trapezoid_dx", lambda L: L.trapezoid(Y, dx=0.5, axis=0)),
    ("trapezoid_x", lambda L: L.trapezoid(Y, x=np.array([0.0, 1, 3, 4]))),
    ("interp", lambda L: L.interp(XS, XP, FP)),
    ("interp_left_right", lambda L: L.interp(XS, XP, FP, left=-9.0, right=9.0)),
    ("interp_extrapolate", lambda L: L.interp(XS, XP, FP, left="extrapolate",
                                              right="extrapolate")),
    ("interp_period", lambda L: L.interp(XS, XP, FP, period=3.0)),
    ("unwrap", lambda L: L.unwrap(PH)), ("unwrap_discont", lambda L: L.unwrap(PH, discont=4.0)),
    ("unwrap_int_period", lambda L: L.unwrap(np.array([0, 3, 5, 9, 1]), period=6)),
]
EAGER = {"bincount", "bincount_bool"}
CASES += [("bincount", lambda L: L.bincount(D, minlength=10)),
          ("bincount_bool", lambda L: L.bincount(np.array([True, False, True])))]


@pytest.mark.parametrize("label,f", CASES, ids=[c[0] for c in CASES])
def test_against_jax(label, f):
    if label in EAGER:
        check_against_jax(lambda: f(jnp), lambda: f(jjnp), rtol=2e-5)
    else:
        check_against_jax(minijax.jit(lambda: f(jnp)), jax.jit(lambda: f(jjnp)), rtol=2e-5)


def test_traced_operands():
    # jit with traced operands, grad and vmap through the quantile, cov and interp paths
    def f(L, y, xs):
        return (L.nanmedian(y, axis=1).sum() + L.quantile(y, 0.3) + L.cov(y).sum()
                + L.interp(xs, XP, FP).sum() + L.nanvar(y) + L.trapezoid(y).sum()
                + L.average(y, axis=0, weights=y[:, 0]).sum())
    args = (Y, XS)
    assert_same(minijax.jit(lambda *a: f(jnp, *a))(*args), jax.jit(lambda *a: f(jjnp, *a))(*args),
                rtol=1e-5)
    assert_same(minijax.jit(minijax.grad(lambda *a: f(jnp, *a)))(*args),
                jax.grad(lambda *a: f(jjnp, *a))(*args), rtol=1e-4)
    batch = (np.stack([Y, Y * 2]), np.stack([XS, XS - 1]))
    assert_same(minijax.vmap(lambda *a: f(jnp, *a))(*batch),
                jax.vmap(lambda *a: f(jjnp, *a))(*batch), rtol=1e-5)
    with pytest.raises(minijax.errors.ConcretizationTypeError, match="length"):
        minijax.jit(jnp.bincount)(D)


# (64-bit mode: default int/float dtypes of results, float64 computation)
X64_CASES = [
    "nanmean_1", "nanargmax_1", "nancumsum", "cumulative_sum_int8", "average_int",
    "quantile_linear", "quantile_int", "median_int", "cov_weights", "bincount_weights",
    "digitize", "histogram", "histogramdd", "interp", "unwrap_int_period",
    "gradient_coordinates",
]


@pytest.mark.parametrize("label", X64_CASES)
def test_x64(label, x64):
    f = dict(CASES)[label]
    check_against_jax(minijax.jit(lambda: f(jnp)), jax.jit(lambda: f(jjnp)), rtol=2e-5, atol=2e-5)
