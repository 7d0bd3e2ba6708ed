"""minijax.scipy.stats against jax.scipy.stats: every function of every distribution on
the same inputs (values, dtypes, weak types, NaN/inf outside the support), one jitted
program per distribution and library; eager calls, grad, vmap, 64-bit mode; mode,
rankdata, sem and gaussian_kde; and the names each module exposes."""

import types

import jax
import jax.scipy.stats as jstats
import numpy as np
import pytest

import minijax
from minijax.scipy import stats
from tests.numpy._util import assert_same, assert_same_by_key, check_many

X = np.array([-3.0, -1.0, -0.25, 0.0, 0.4, 1.0, 2.5, 7.0], np.float32)
POS = np.array([0.0, 0.2, 0.5, 1.0, 1.7, 3.0, 6.0, 12.0], np.float32)
UNIT = np.array([-0.1, 0.0, 0.05, 0.3, 0.5, 0.8, 1.0, 1.5], np.float32)
K = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 4.5, 7.0, 10.0], np.float32)
SCALE = np.array([[0.5], [2.0]], np.float32)  # broadcasts to (2, 8)
CIRC = np.array([0.0, 0.5, 1.5, 3.0, 4.0, 6.0, 6.5, -0.5], np.float32)

# module -> [(function names, arguments)]
CONT = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]
CASES = {
    "norm": [(CONT, (X, 0.5, SCALE)), (["ppf", "isf"], (UNIT, 0.5, SCALE))],
    "cauchy": [(CONT, (X, 0.5, SCALE)), (["ppf", "isf"], (UNIT, 0.5, SCALE))],
    "expon": [(CONT, (X, 0.5, SCALE)), (["ppf"], (UNIT, 0.5, SCALE))],
    "laplace": [(["logpdf", "pdf", "cdf"], (X, 0.5, SCALE))],
    "logistic": [(["logpdf", "pdf", "cdf", "sf"], (X, 0.5, SCALE)),
                 (["ppf", "isf"], (UNIT, 0.5, SCALE))],
    "uniform": [(["logpdf", "pdf", "cdf"], (X, -1.0, SCALE)), (["ppf"], (UNIT, 1.0, SCALE))],
    "gumbel_l": [(["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (X, 0.5, SCALE)),
                 (["ppf"], (UNIT, 0.5, SCALE)), (["logpdf", "cdf"], (X, 0.0, -1.0))],
    "gumbel_r": [(["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (X, 0.5, SCALE)),
                 (["ppf"], (UNIT, 0.5, SCALE)), (["logsf", "sf"], (X, 0.0, -1.0))],
    "t": [(["logpdf", "pdf"], (X, np.float32(3.5), 0.5, SCALE))],
    "pareto": [(CONT, (POS, 2.5, -1.0, SCALE)), (["ppf"], (UNIT, 2.5, 0.5, SCALE))],
    "chi2": [(CONT, (POS, np.array([1.0, 3.0, 4.5, 10.0] * 2, np.float32), 0.1, SCALE))],
    "gamma": [(CONT, (POS, np.array([0.5, 1.0, 2.5, 8.0] * 2, np.float32), 0.1, SCALE))],
    "beta": [(CONT, (UNIT, np.array([0.5, 1.0, 2.5, 4.0] * 2, np.float32), 1.5, -0.1,
                     np.float32(1.3))),
             (["logpdf"], (UNIT, np.array([-1.0, 0.0, 1.0, 2.0] * 2, np.float32), 2.0))],
    "gennorm": [(["logpdf", "pdf", "cdf"], (X, np.array([[0.8], [2.0]], np.float32)))],
    # (pdf, cdf and sf are exp of these, logsf a mirrored logcdf; they take seconds to
    # compile): an
    # interval around 0, one in the right tail, and an empty one (NaN)
    "truncnorm": [(["logpdf", "logcdf"],
                   (X, np.array([[-1.5], [0.5], [1.0]], np.float32),
                    np.array([[3.0], [6.0], [1.0]], np.float32), 0.2, 1.5))],
    # (not pdf with kappa <= 0: XLA's exp of the NaN is garbage in jax too)
    "vonmises": [(["logpdf", "pdf"], (CIRC, np.array([[0.5], [3.0]], np.float32))),
                 (["logpdf"], (CIRC, np.array([[0.5], [-1.0]], np.float32)))],
    "wrapcauchy": [(["logpdf", "pdf"], (CIRC, np.array([[0.3], [0.9], [1.2]], np.float32)))],
    "bernoulli": [(["logpmf", "pmf"], (K, 0.3)), (["logpmf", "pmf"], (K, 0.3, 1.0)),
                  (["cdf"], (X, np.array([[0.3], [1.3]], np.float32))),
                  (["ppf"], (UNIT, np.array([[0.3], [0.7]], np.float32)))],
    "binom": [(["logpmf", "pmf"], (K, 7.0, np.array([[0.25], [0.0], [1.0]], np.float32))),
              (["logpmf"], (K, 8.0, 0.4, 1.0))],
    "betabinom": [(["logpmf", "pmf"], (K, np.array([[7.0], [7.0], [0.0], [5.0]], np.float32),
                                       np.array([[2.0], [2.0], [2.0], [-1.0]], np.float32),
                                       np.array([[0.5], [3.0], [1.5], [1.0]], np.float32),
                                       np.array([[0.0], [0.0], [-1.0], [0.0]], np.float32)))],
    "geom": [(["logpmf", "pmf"], (K, np.array([[0.2], [0.9]], np.float32), -1.0))],
    "nbinom": [(["logpmf", "pmf"], (K, 3.0, np.array([[0.2], [0.9]], np.float32), 0.5))],
    "poisson": [(["logpmf", "pmf", "cdf"], (K, np.array([[0.5], [4.0]], np.float32), -1.0)),
                (["entropy"], (np.array([0.0, 0.5, 3.0, 9.9, 10.0, 50.0, 99.0, 150.0],
                                        np.float32), np.zeros((2, 1))))],
}


def _call(lib, mod, fname, *args):
    return getattr(getattr(lib, mod), fname)(*args)


def test_against_jax():
    # every case in one jitted program per library (compiling is what takes the time)
    def run(lib):
        return {f"{mod}.{name}[{i}]": _call(lib, mod, name, *args)
                for mod, cases in CASES.items() for i, (names, args) in enumerate(cases)
                for name in names}
    got, want = minijax.jit(lambda: run(stats))(), jax.jit(lambda: run(jstats))()
    assert_same_by_key(got, want, rtol=2e-5, atol=1e-6)


MVN_A = np.random.RandomState(1).randn(3, 3).astype(np.float32)
MVN = (np.random.RandomState(0).randn(5, 3).astype(np.float32),
       np.array([0.1, -0.2, 0.3], np.float32), MVN_A @ MVN_A.T + np.eye(3, dtype=np.float32))
MULTI_CASES = [
    ("multivariate_normal", "logpdf", MVN), ("multivariate_normal", "pdf", MVN),
    ("multivariate_normal", "logpdf", (MVN[0], MVN[1], 2.0)),
    ("multivariate_normal", "logpdf", (MVN[0][:, 0], 0.5, 2.0)),
    ("multivariate_normal", "logpdf", (MVN[0], MVN[1], np.stack([MVN[2]] * 5))),
    ("multivariate_normal", "logpdf", (MVN[0], MVN[1], np.eye(2))),
    ("dirichlet", "logpdf", (np.array([0.2, 0.3, 0.5], np.float32),
                             np.array([1.5, 2.0, 0.7], np.float32))),
    ("dirichlet", "pdf", (np.array([[0.2, 0.6], [0.3, 0.1]], np.float32),
                          np.array([1.5, 2.0, 0.7], np.float32))),
    ("dirichlet", "logpdf", (np.array([0.2, 0.3, 0.6], np.float32), np.ones(3))),
    ("dirichlet", "logpdf", (np.array([0.2, 0.3], np.float32), np.ones((3, 1)))),
    ("dirichlet", "logpdf", (np.array([0.2], np.float32), np.ones(3))),
    ("multinomial", "logpmf", (np.array([[1, 2, 3], [0, 6, 0]]), 6,
                               np.array([0.2, 0.3, 0.5], np.float32))),
    ("multinomial", "pmf", (np.array([1, 2, 3]), 5, np.array([0.2, 0.3, 0.5], np.float32))),
    ("multinomial", "logpmf", (np.array([1.0, 2.0]), 3, np.array([0.5, 0.5]))),
]


@pytest.mark.parametrize("mod,fname,args", MULTI_CASES,
                         ids=[f"{m}.{f}{i}" for i, (m, f, _) in enumerate(MULTI_CASES)])
def test_multivariate_against_jax(mod, fname, args):
    check_many(stats, jstats, [fname], *args, rtol=2e-5, atol=1e-6,
               call=lambda lib, n, *a: _call(lib, mod, n, *a))


def test_eager_scalars_and_weak_types():
    # Python scalars, integer inputs, and eager (unjitted) calls: jax's dtypes and weak types
    for mod, fname, args in [("norm", "logpdf", (1.0,)), ("norm", "ppf", (0.3,)),
                             ("gamma", "logpdf", (2, 3)), ("cauchy", "isf", (0.2,)),
                             ("uniform", "pdf", (np.arange(3), 0, 2))]:
        assert_same(_call(stats, mod, fname, *args), _call(jstats, mod, fname, *args),
                    rtol=1e-5)


def test_x64(x64):
    for mod, fname, args in [("t", "logpdf", (X.astype(np.float64), 4.0)),
                             ("binom", "pmf", (K, 7, 0.25))]:
        assert_same(_call(stats, mod, fname, *args), _call(jstats, mod, fname, *args),
                    rtol=1e-10, atol=1e-12)


def _family_loss(lib, x, p):
    s, np_ = lib.scipy.stats, lib.numpy
    return (s.norm.logpdf(x, p, 1.5).sum() + s.t.logpdf(x, 3.0 + p).sum()
            + s.gamma.logpdf(x + 4.0, 2.0 + p).sum() + s.beta.logpdf(0.3, 1.0 + p, 2.0)
            + s.poisson.logpmf(3.0, 2.0 + p) + s.logistic.cdf(x, p).sum()
            + s.dirichlet.logpdf(np_.array([0.2, 0.3, 0.5]), 1.0 + p * np_.ones(3))
            + s.multivariate_normal.logpdf(x[:3], p * np_.ones(3), MVN[2]))


def test_grad_jit_vmap():
    # one gradient per family through the analytic special-function derivatives
    x = np.array([-0.5, 0.3, 1.2, 2.0], np.float32)
    p = np.float32(0.7)
    want = jax.jit(jax.grad(lambda *a: _family_loss(jax, *a), argnums=(0, 1)))(x, p)
    got = minijax.jit(minijax.grad(lambda *a: _family_loss(minijax, *a), argnums=(0, 1)))(x, p)
    assert_same(got, want, rtol=1e-4, atol=1e-5)
    # vmap over a parameter
    ps = np.array([0.1, 0.7, 1.3], np.float32)
    want = jax.jit(jax.vmap(lambda q: _family_loss(jax, x, q)))(ps)
    got = minijax.jit(minijax.vmap(lambda q: _family_loss(minijax, x, q)))(ps)
    assert_same(got, want, rtol=1e-5)


D = np.array([[1, 2, 1, 3, 2, 1], [3, 1, 3, 2, 1, 3], [1, 2, 2, 3, 1, 2]])
DN = D.astype(np.float32)
DN[0, 2] = np.nan
CORE_CASES = [("mode", D, {}), ("mode", D, {"axis": 1}), ("mode", D, {"axis": None}),
              ("mode", D, {"axis": 1, "keepdims": True}),
              ("mode", D, {"axis": None, "keepdims": True}), ("mode", DN, {"axis": -1}),
              ("mode", np.float32(2.0), {}), ("mode", np.zeros((0, 3)), {}),
              ("mode", D, {"nan_policy": "omit"}), ("mode", D, {"nan_policy": "bogus"}),
              ("mode", D, {"axis": 2}), ("rankdata", DN, {"axis": 1}),
              ("rankdata", D, {"method": "bogus"}), ("rankdata", D, {"nan_policy": "raise"}),
              ("sem", DN, {}), ("sem", DN, {"axis": 1}), ("sem", D, {"axis": None, "ddof": 0}),
              ("sem", DN, {"nan_policy": "omit"}), ("sem", D, {"axis": 1, "keepdims": True}),
              ("sem", D, {"nan_policy": "bogus"})]
CORE_CASES += [("rankdata", D, {"method": m})
               for m in ["average", "min", "max", "dense", "ordinal"]]
CORE_CASES += [("rankdata", D, {"method": "min", "axis": 0})]


@pytest.mark.parametrize("fname,a,kw", CORE_CASES,
                         ids=[f"{f}{i}" for i, (f, _, _) in enumerate(CORE_CASES)])
def test_core_against_jax(fname, a, kw):
    try:
        want = getattr(jstats, fname)(a, **kw)
    except Exception as e:  # noqa: BLE001  (any exception jax raises, minijax must raise)
        with pytest.raises(type(e)):
            getattr(stats, fname)(a, **kw)
        return
    got = getattr(stats, fname)(a, **kw)
    assert_same(tuple(got) if fname == "mode" else got,
                tuple(want) if fname == "mode" else want)


def test_core_traced():
    got = minijax.jit(lambda a: stats.rankdata(a) + stats.sem(a))(DN[2])
    want = jax.jit(lambda a: jstats.rankdata(a) + jstats.sem(a))(DN[2])
    assert_same(got, want)
    assert_same(minijax.jit(minijax.grad(lambda a: stats.sem(a)))(DN[2]),
                jax.jit(jax.grad(jstats.sem))(DN[2]))
    got = minijax.vmap(lambda a: tuple(stats.mode(a)))(D)
    assert_same(got, tuple(jax.vmap(lambda a: tuple(jstats.mode(a)))(D)))


_RANK_EDGES = np.array([0.0, -0.0, 1, -1, np.inf, -np.inf, 0.0, 2.5, -1, 7, 2.5], np.float32)


@pytest.mark.parametrize("a", [_RANK_EDGES, _RANK_EDGES[::-1].astype(np.float16),
                               np.array([3, 0, 255, 3, 7, 0], np.uint8),
                               np.array([1 + 1j, 1, 1 + 1j, -2j], np.complex64)],
                         ids=["f32", "f16", "u8", "c64"])
def test_rankdata_methods_edges(a):
    # signed zeros and infinities tie and order as jax's total order; every method
    for m in ["average", "min", "max", "dense", "ordinal"]:
        np.testing.assert_array_equal(np.asarray(stats.rankdata(a, m)),
                                      np.asarray(jstats.rankdata(a, m)), err_msg=m)


def test_rankdata_sorts_once_with_an_integer_key():
    # ranks by binary search in the sorted keys: one single-operand sort (XLA's fast
    # path), not a key-value sort and a second sort inside nonzero
    a = np.round(np.random.RandomState(4).randn(64) * 5).astype(np.float32)
    text = minijax.jit(stats.rankdata).lower(a).compile().as_text()
    sorts = [line for line in text.split("\n") if " sort(" in line]
    assert len(sorts) == 1 and "s32[64]{0} sort(%" in sorts[0] and "," not in \
        sorts[0].split(" sort(")[1].split(")")[0], sorts
    np.testing.assert_array_equal(np.asarray(stats.rankdata(a)),
                                  np.asarray(jstats.rankdata(a)))


KDE_DATA = np.random.RandomState(2).randn(2, 12).astype(np.float32)
KDE_PTS = np.random.RandomState(3).randn(2, 5).astype(np.float32)
KDE_W = np.linspace(0.5, 2.0, 12).astype(np.float32)


def test_gaussian_kde():
    for i, kw in enumerate([{"bw_method": "silverman"}, {"bw_method": 0.3, "weights": KDE_W}]):
        got, want = stats.gaussian_kde(KDE_DATA, **kw), jstats.gaussian_kde(KDE_DATA, **kw)
        for name in ["neff", "dataset", "weights", "covariance", "inv_cov"]:
            assert_same(getattr(got, name), getattr(want, name), rtol=1e-5)
        assert (got.d, got.n) == (want.d, want.n)
        if i != 1:
            continue
        for m in ["evaluate", "pdf", "logpdf", "__call__"]:
            assert_same(getattr(got, m)(KDE_PTS), getattr(want, m)(KDE_PTS), rtol=1e-5)
        assert_same(got.integrate_gaussian(np.array([0.1, 0.2], np.float32), np.eye(2)),
                    want.integrate_gaussian(np.array([0.1, 0.2], np.float32), np.eye(2)),
                    rtol=1e-5)
        other = (stats.gaussian_kde(KDE_PTS), jstats.gaussian_kde(KDE_PTS))
        assert_same(got.integrate_kde(other[0]), want.integrate_kde(other[1]), rtol=1e-5)
    bw = {"bw_method": lambda k: 0.5 * k.neff ** -0.2}  # a callable bandwidth
    d1 = (stats.gaussian_kde(KDE_DATA[0], **bw), jstats.gaussian_kde(KDE_DATA[0], **bw))
    assert_same(d1[0].covariance, d1[1].covariance)
    assert_same(d1[0].integrate_box_1d(-0.5, 1.0), d1[1].integrate_box_1d(-0.5, 1.0))
    assert_same(d1[0].logpdf(KDE_PTS[0]), d1[1].logpdf(KDE_PTS[0]), rtol=1e-5)
    # resample: jax's key streams, so the same samples
    got = d1[0].resample(minijax.random.key(0), (4,))
    want = d1[1].resample(jax.random.key(0), (4,))
    assert_same(got, want, rtol=1e-5)
    # a pytree: through jit and grad
    f = minijax.jit(lambda k, x: k.logpdf(x).sum())
    assert_same(f(d1[0], KDE_PTS[0]), jax.jit(lambda k, x: k.logpdf(x).sum())(d1[1],
                                                                             KDE_PTS[0]))
    assert_same(minijax.jit(minijax.grad(lambda x: stats.gaussian_kde(x).pdf(0.5)[0]))(
        KDE_DATA[0]), jax.jit(jax.grad(lambda x: jstats.gaussian_kde(x).pdf(0.5)[0]))(
        KDE_DATA[0]), rtol=1e-4)
    kde2 = {stats: got, jstats: want}  # (2-D data)
    for bad in [lambda s: s.gaussian_kde(np.ones(1)), lambda s: s.gaussian_kde(np.ones(3) + 1j),
                lambda s: s.gaussian_kde(KDE_DATA, bw_method="bogus"),
                lambda s: s.gaussian_kde(KDE_DATA, weights=np.ones(3)),
                lambda s: kde2[s].evaluate(np.ones((3, 2))),
                lambda s: kde2[s].integrate_box_1d(0.0, 1.0),
                lambda s: kde2[s].integrate_box(0.0, 1.0), lambda s: kde2[s].set_bandwidth()]:
        with pytest.raises(Exception) as want_e:
            bad(jstats)
        with pytest.raises(want_e.type):
            bad(stats)


def test_names_match_jax():
    want = {n for n in dir(jstats) if not n.startswith("_")}
    assert want <= set(dir(stats)), want - set(dir(stats))
    for n in want:
        if isinstance(getattr(jstats, n), types.ModuleType):
            jnames = {f for f in dir(getattr(jstats, n)) if not f.startswith("_")}
            assert set(getattr(stats, n).__all__) == jnames, n
            assert all(callable(getattr(getattr(stats, n), f)) for f in jnames)
