"""minijax.scipy.linalg vs jax.scipy.linalg: values, dtypes, grads, vmap, jit, errors."""

import jax
import jax.numpy as jjnp
import jax.scipy.linalg as JL
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
import minijax.scipy.linalg as ML
from tests.scipy._compare import assert_trees_close

RNG = np.random.default_rng(3)
A = RNG.standard_normal((4, 4)).astype(np.float32)
SPD = (A @ A.T + 4 * np.eye(4)).astype(np.float32)
B = RNG.standard_normal((4, 2)).astype(np.float32)
V = RNG.standard_normal(4).astype(np.float32)
R = RNG.standard_normal((5, 3)).astype(np.float32)
UT = (np.triu(A) + 4 * np.eye(4)).astype(np.float32)


def _close(got, want, tol=2e-4):
    assert_trees_close(got, want, tol)


def test_names_cover_jax():
    names = {n for n in dir(JL) if not n.startswith("_")}
    assert names <= set(dir(ML)), sorted(names - set(dir(ML)))
    assert set(ML.__all__) == names


# Each case runs on minijax's and on jax's module (``L``) with the same inputs.
CASES = {
    "block_diag": lambda L: L.block_diag(A[:2, :3], V[:2], 3.0),
    "cho_factor": lambda L: L.cho_factor(SPD),
    "cho_solve": lambda L: [L.cho_solve(L.cho_factor(SPD, lower=lo), B) for lo in (False, True)]
    + [L.cho_solve((np.linalg.cholesky(SPD), True), V)],
    "cholesky": lambda L: [L.cholesky(SPD), L.cholesky(SPD, lower=True)],
    "circulant": lambda L: L.circulant(np.stack([V, 2 * V])),
    "companion": lambda L: L.companion(V),
    "convolution_matrix": lambda L: [L.convolution_matrix(a, n, m)
                                     for a, n in ((V[:3], 5), (V, 2))
                                     for m in ("full", "same", "valid")],
    "det": lambda L: L.det(A),
    "dft": lambda L: [L.dft(5), L.dft(4, "sqrtn"), L.dft(3, "n")],
    "eigh": lambda L: [L.eigh(SPD, eigvals_only=True), L.eigh(SPD, lower=False)[0]],
    "eigh_tridiagonal": lambda L: [
        L.eigh_tridiagonal(V, V[:3], eigvals_only=True),
        L.eigh_tridiagonal(V, V[:3], eigvals_only=True, select="i", select_range=(1, 2))],
    "expm": lambda L: [L.expm(np.stack([A, A / 50])), L.expm(UT / 4, upper_triangular=True)],
    "expm_frechet": lambda L: L.expm_frechet(A, SPD),
    "fiedler": lambda L: L.fiedler(V),
    "fiedler_companion": lambda L: [L.fiedler_companion(a) for a in
                                    (V, np.arange(1, 7.0), np.arange(1, 3.0))],
    "funm": lambda L: L.funm(A, lambda x: x * x + 1),
    "hadamard": lambda L: [L.hadamard(8), L.hadamard(4, dtype=np.float32)],
    "hankel": lambda L: [L.hankel(V, V[:3]), L.hankel(V)],
    "helmert": lambda L: [L.helmert(5), L.helmert(5, full=True)],
    "hessenberg": lambda L: L.hessenberg(A, calc_q=True),
    "hilbert": lambda L: L.hilbert(4),
    "inv": lambda L: L.inv(A),
    "invhilbert": lambda L: L.invhilbert(5),
    "invpascal": lambda L: [L.invpascal(5, k) for k in (None, "lower", "upper")],
    "leslie": lambda L: L.leslie(V, V[:3]),
    "lu": lambda L: [L.lu(R), L.lu(R.T, permute_l=True)],
    "lu_solve": lambda L: [L.lu_solve(L.lu_factor(A), B, trans=t) for t in (0, 1, 2)]
    + [L.lu_solve(L.lu_factor(A), V)],
    "pascal": lambda L: [L.pascal(5, k) for k in (None, "lower", "upper")],
    "polar": lambda L: [L.polar(R), L.polar(R, method="svd"), L.polar(R.T, side="left")],
    "qr": lambda L: [L.qr(R, mode=m, pivoting=p) for m in ("full", "economic", "r")
                     for p in (False, True)],
    "qr_multiply": lambda L: [L.qr_multiply(R, c, mode=m, conjugate=cj)
                              for c, m in ((R[:, :3].T, "right"), (R[:3], "left"),
                                           (V[:3], "left"))
                              for cj in (False, True)] + [L.qr_multiply(R, R.T, pivoting=True)],
    "rsf2csf": lambda L: L.rsf2csf(*L.schur(A)),
    "schur": lambda L: [L.schur(SPD)[0], L.schur(A, output="complex")[0]],
    "solve": lambda L: [L.solve(A, B), L.solve(SPD, V, assume_a="pos"),
                        L.solve(SPD, B, assume_a="pos", lower=True),
                        L.solve(SPD, B, assume_a="sym")],
    "solve_sylvester": lambda L: [L.solve_sylvester(A, SPD, B @ B.T),
                                  L.solve_sylvester(A, SPD, B @ B.T, method="eigen")],
    "solve_triangular": lambda L: [L.solve_triangular(UT, B, trans=t, lower=lo, unit_diagonal=ud)
                                   for t, lo, ud in ((0, False, False), ("T", True, False),
                                                     ("C", False, True), (2, True, True))]
    + [L.solve_triangular(UT, V)],
    "sqrtm": lambda L: [L.sqrtm(SPD), L.sqrtm(A)],
    "svd": lambda L: [L.svd(R, full_matrices=False), L.svd(R, compute_uv=False)],
    "toeplitz": lambda L: [L.toeplitz(V, V[:3]), L.toeplitz(V + 1j * V),
                           L.toeplitz(np.stack([V, V]))],
}
# Matrix functions: different (equally accurate) algorithms or operation orders.
_LOOSE = {"expm": 1e-3, "funm": 1e-3, "solve_sylvester": 1e-3,
          "rsf2csf": 1e-3, "expm_frechet": 1e-3}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_jax(name):
    _close(CASES[name](ML), CASES[name](JL), _LOOSE.get(name, 2e-4))


def test_sqrtm_is_jax_bit_for_bit_in_one_small_kernel():
    # The triangular recurrence reads and writes scalars only, so that XLA:CPU compiles
    # the loop nest as one small call (not a dispatch per step), and in jax's order.
    a = np.random.RandomState(3).randn(12, 12).astype(np.float32)
    f = minijax.jit(ML.sqrtm)
    assert 'xla_cpu_small_call="true"' in f.lower(a).compile().as_text()
    np.testing.assert_array_equal(np.asarray(f(a)), np.asarray(jax.jit(JL.sqrtm)(a)))


def test_complex_and_x64(x64):
    a = (A + 1j * A.T).astype(np.complex128)
    h = a @ a.conj().T + 4 * np.eye(4)
    for f in (lambda L: L.expm(a), lambda L: L.sqrtm(h),
              lambda L: L.solve(h, B, assume_a="pos")):
        _close(f(ML), f(JL), 1e-9)


def test_polar_and_schur_reconstruct():
    u, p = ML.polar(A)
    np.testing.assert_allclose(np.asarray(u @ p), A, atol=1e-4)
    t, z = ML.rsf2csf(*ML.schur(A))
    np.testing.assert_allclose(np.tril(np.asarray(t), -1), 0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(z @ t @ z.conj().T), A, atol=1e-4)
    w, v = ML.eigh_tridiagonal(V, V[:3])
    tri = np.diag(V) + np.diag(V[:3], 1) + np.diag(V[:3], -1)
    np.testing.assert_allclose(tri @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-4)


def test_grads_match_jax():
    fns = {
        "expm": lambda L, np_: lambda a: np_.sum(L.expm(a) ** 2),
        "solve_pos": lambda L, np_: lambda a: np_.sum(L.solve(a @ a.T + 4 * np_.eye(4), B,
                                                               assume_a="pos")),
        "toeplitz": lambda L, np_: lambda a: np_.sum(L.toeplitz(a[0], a[1]) ** 2),
    }
    for make in fns.values():
        got = minijax.grad(make(ML, jnp))(A)
        want = jax.grad(make(JL, jjnp))(A)
        _close(got, want, 2e-3)


def test_vmap_and_jit():
    stack = np.stack([A, A.T, 2 * A])
    spd = np.stack([SPD, 2 * SPD])
    _close(minijax.vmap(ML.expm)(stack), JL.expm(stack), 1e-3)
    _close(minijax.jit(ML.sqrtm)(SPD), JL.sqrtm(SPD), 1e-3)
    _close(minijax.vmap(lambda s: ML.solve(s, V, assume_a="pos"))(spd),
           jax.vmap(lambda s: JL.solve(s, V, assume_a="pos"))(spd))
    _close(minijax.vmap(ML.toeplitz)(stack[:, 0]), jax.vmap(JL.toeplitz)(stack[:, 0]))
    _close(minijax.jit(ML.funm, static_argnums=1)(A, jnp.sin), JL.funm(A, jjnp.sin), 1e-3)


@pytest.mark.parametrize("call, exc", [
    (lambda L: L.solve(A, B, assume_a="xx"), ValueError),
    (lambda L: L.solve_triangular(A, B, trans=3), ValueError),
    (lambda L: L.qr(A, mode="bogus"), ValueError),
    (lambda L: L.schur(A, output="x"), ValueError),
    (lambda L: L.eigh(A, b=A), NotImplementedError),
    (lambda L: L.eigh_tridiagonal(V, V[:3], select="v"), NotImplementedError),
    (lambda L: L.eigh_tridiagonal(V, V[:3].astype(np.float16)), TypeError),
    (lambda L: L.expm(V), ValueError),
    (lambda L: L.polar(V), ValueError),
    (lambda L: L.polar(R.T), NotImplementedError),
    (lambda L: L.sqrtm(A, blocksize=2), NotImplementedError),
    (lambda L: L.hadamard(6), ValueError),
    (lambda L: L.dft(4, "x"), ValueError),
    (lambda L: L.pascal(3, "x"), ValueError),
    (lambda L: L.qr_multiply(R, V, mode="left"), ValueError),
    (lambda L: L.solve_sylvester(A, A, R), ValueError),
    (lambda L: L.toeplitz([1.0, 2.0]), TypeError),
    (lambda L: L.leslie(V, V), ValueError),
    (lambda L: L.block_diag(np.ones((2, 2, 2))), ValueError),
])
def test_errors_like_jax(call, exc):
    with pytest.raises(exc):
        call(JL)
    with pytest.raises(exc):
        call(ML)
