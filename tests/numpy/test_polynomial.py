"""Polynomials, convolutions and window functions of minijax.numpy against jax.numpy
(values, dtypes, exceptions), each case as one jitted program per library, plus grad and
vmap with traced operands."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from tests.numpy._util import assert_same, check_against_jax

A = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
V = np.array([0.0, 1.0, 0.5], np.float32)
P = np.array([2.0, -1.0, 0.5], np.float32)
XS = np.linspace(0, 1, 8).astype(np.float32)
YS = (3 * XS ** 2 - XS + 0.5).astype(np.float32)


def _sorted_roots(L, p, **kw):
    r = L.roots(p, **kw)
    return r[L.lexsort((L.imag(r), L.real(r)))] if r.shape[0] else r


CASES = []
for _mode in ["full", "same", "valid"]:
    CASES += [(f"convolve_{_mode}", lambda L, m=_mode: (L.convolve(A, V, m), L.convolve(V, A, m))),
              (f"correlate_{_mode}", lambda L, m=_mode: (L.correlate(A, V, m),
                                                         L.correlate(V, A, m)))]
CASES += [
    ("convolve_int", lambda L: L.convolve(np.array([1, 2]), np.array([3, 4, 5]))),
    ("convolve_preferred", lambda L: L.convolve(np.array([1, 2]), np.array([3, 4, 5]),
                                                preferred_element_type=np.int32)),
    ("correlate_complex", lambda L: L.correlate(A + 1j, V - 2j, "full")),
    ("convolve_empty", lambda L: L.convolve(A[:0], V)),
    ("convolve_2d", lambda L: L.convolve(np.ones((2, 2)), V)),
    ("vander", lambda L: L.vander(A)),
    ("vander_increasing", lambda L: L.vander(np.array([1, 2, 3]), 4, increasing=True)),
    ("polyval", lambda L: L.polyval(P, A)), ("polyval_int", lambda L: L.polyval(
        np.array([1, 2, 3]), 2)),
    ("polyval_2d", lambda L: L.polyval(np.ones((3, 2)), np.array([1.0, 2.0]))),
    ("polyadd", lambda L: (L.polyadd(P, A), L.polyadd(A, np.array([1, 1])))),
    ("polysub", lambda L: L.polysub(P, A)), ("polymul", lambda L: L.polymul(P, A)),
    ("polydiv", lambda L: L.polydiv(A, P)),
    ("polyder", lambda L: (L.polyder(A, 0), L.polyder(A), L.polyder(A, 2))),
    ("polyder_negative", lambda L: L.polyder(A, -1)),
    ("polyint", lambda L: (L.polyint(A, 0), L.polyint(A), L.polyint(A, 2, k=3))),
    ("polyint_k", lambda L: L.polyint(A, 2, k=np.array([1.0, 2.0]))),
    ("poly", lambda L: (L.poly(np.array([1.0, 2.0, 3.0])), L.poly(np.zeros((0,))))),
    ("poly_matrix", lambda L: L.poly(np.array([[1.0, 2.0], [3.0, 4.0]]))),
    ("roots_short", lambda L: L.roots(np.array([3.0]))),
    ("roots_no_strip", lambda L: L.roots(np.array([0.0, 1.0, -3.0, 2.0]), strip_zeros=False)),
    ("polyfit", lambda L: L.polyfit(XS, YS, 2)),
    ("polyfit_weights", lambda L: L.polyfit(XS, YS, 1, w=np.linspace(1, 2, 8))),
    ("polyfit_full", lambda L: L.polyfit(XS, YS, 2, full=True)[:2]),
    ("polyfit_cov", lambda L: L.polyfit(XS, YS + XS ** 3, 2, cov=True)),
    ("polyfit_2d", lambda L: L.polyfit(XS, np.stack([YS, -YS], 1), 2)),
    ("kaiser", lambda L: (L.kaiser(7, 4.5), L.kaiser(1, 4.5))),
]
for _name in ["bartlett", "blackman", "hamming", "hanning"]:
    CASES.append((_name, lambda L, n=_name: tuple(getattr(L, n)(M) for M in (0, 1, 5, 8))))
EAGER = {"roots", "roots_zeros", "roots_complex", "polymul_trim", "polydiv_trim"}
CASES += [
    ("roots", lambda L: _sorted_roots(L, np.array([1.0, -6.0, 11.0, -6.0]))),
    ("roots_zeros", lambda L: _sorted_roots(L, np.array([0.0, 0.0, 1.0, -3.0, 2.0]))),
    ("roots_complex", lambda L: _sorted_roots(L, np.array([1.0, 0.0, 1.0]))),
    ("polymul_trim", lambda L: L.polymul(np.array([0.0, 0, 1, 2]), A, trim_leading_zeros=True)),
    ("polydiv_trim", lambda L: L.polydiv(np.array([1.0, 3, 3, 1]), np.array([1.0, 1]),
                                         trim_leading_zeros=True)),
]


@pytest.mark.parametrize("label,f", CASES, ids=[c[0] for c in CASES])
def test_against_jax(label, f):
    if label in EAGER:
        check_against_jax(lambda: f(jnp), lambda: f(jjnp), rtol=2e-5, atol=2e-5)
    else:
        check_against_jax(minijax.jit(lambda: f(jnp)), jax.jit(lambda: f(jjnp)), rtol=2e-5,
                          atol=2e-5)


def test_traced_operands():
    def f(L, a, v):
        return (L.convolve(a, v).sum() + L.correlate(a, v, "same")[1] + L.polyval(v, a).sum()
                + L.polymul(a, v)[2] + L.polyint(L.polyder(a))[1] + L.polyfit(XS, a[0] * YS, 2)[0])
    assert_same(minijax.jit(minijax.grad(lambda a, v: f(jnp, a, v), argnums=(0, 1)))(A, V),
                jax.grad(lambda a, v: f(jjnp, a, v), argnums=(0, 1))(A, V), rtol=1e-4)
    batch = (np.stack([A, A * 2]), np.stack([V, V - 1]))
    assert_same(minijax.vmap(lambda a, v: f(jnp, a, v))(*batch),
                jax.vmap(lambda a, v: f(jjnp, a, v))(*batch), rtol=1e-4)
    with pytest.raises(minijax.errors.ConcretizationTypeError, match="strip_zeros"):
        minijax.jit(jnp.roots)(A)


# (64-bit mode: default int/float dtypes of results, float64 computation)
X64_CASES = [
    "convolve_int", "vander_increasing", "polyval_int", "polyint", "poly", "polyfit",
    "kaiser", "hamming", "roots_no_strip",
]


@pytest.mark.parametrize("label", X64_CASES)
def test_x64(label, x64):
    f = dict(CASES)[label]
    check_against_jax(minijax.jit(lambda: f(jnp)), jax.jit(lambda: f(jjnp)), rtol=2e-5, atol=2e-5)
