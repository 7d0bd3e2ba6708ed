"""minijax.numpy.linalg and minijax.lax.linalg vs jax (values, transforms, errors, lowering)."""

import subprocess
import sys

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.lax import linalg as mlinalg
from minijax.test_util import check_grads

RNG = np.random.default_rng(7)


def _rand(shape, dtype=np.float32):
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)
    return RNG.standard_normal(shape).astype(dt)


def _spd(shape, dtype=np.float32):
    """Well-conditioned Hermitian positive-definite matrices."""
    a = _rand(shape, dtype)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def _tol(dtype):
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10


def _close(got, want, dtype=np.float32, scale=1.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    tol = _tol(dtype) * scale
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _tree_close(got, want, dtype=np.float32, scale=1.0):
    gl, wl = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        _close(g, w, dtype, scale)


# ---- registration and lowering ------------------------------------------------------------------

@pytest.mark.slow
def test_lapack_targets_registered_lazily_without_jax(tmp_path):
    # A serialized executable that calls LAPACK, loaded by a fresh process before it
    # compiles anything: deserialization registers the targets too.
    from minijax.stages import serialization
    compiled = minijax.jit(jnp.linalg.cholesky).lower(np.eye(3, dtype=np.float32)).compile()
    (tmp_path / "chol.bin").write_bytes(serialization.serialize(compiled))
    code = (
        "import sys, numpy as np, minijax, minijax.numpy as jnp\n"
        "from minijax.runtime import lapack\n"
        "from minijax.stages import serialization\n"
        "minijax.jit(lambda x: x * 2)(np.ones(3, np.float32))\n"
        "assert not lapack.is_registered() and 'scipy' not in sys.modules\n"
        f"data = open({str(tmp_path / 'chol.bin')!r}, 'rb').read()\n"
        "L = serialization.deserialize(data)(np.eye(3, dtype=np.float32) * 4)\n"
        "assert lapack.is_registered() and 'lapack_spotrf_ffi' in lapack.target_names()\n"
        "np.testing.assert_allclose(np.asarray(L), 2 * np.eye(3))\n"
        "np.testing.assert_allclose(np.asarray(jnp.linalg.det(np.eye(4) * 2)), 16)\n"
        "assert 'jax' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("fn,target", [
    (lambda a: jnp.linalg.cholesky(a), "lapack_spotrf_ffi"),
    (lambda a: jnp.linalg.solve(a, a), "lapack_sgetrf_ffi"),
    (lambda a: jnp.linalg.solve(a, a), "lapack_strsm_ffi"),
    (lambda a: jnp.linalg.det(a), "lapack_sgetrf_ffi"),
])
def test_lowered_module_calls_lapack(fn, target):
    a = _spd((2, 4, 4))
    text = minijax.jit(fn).lower(a).as_text()
    assert f"stablehlo.custom_call @{target}(" in text
    # Column-major matrices with the batch dimension outermost, as jax lays them out.
    assert "operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>" in text


def test_cholesky_custom_call_matches_jax():
    a = _spd((2, 3, 3))

    def call_line(text):
        line = next(ln for ln in text.splitlines() if "custom_call" in ln)
        return line.split("custom_call", 1)[1].split(": (")[0]

    mine = call_line(minijax.jit(lambda x: mlinalg.cholesky(x, symmetrize_input=False))
                     .lower(a).as_text())
    theirs = call_line(jax.jit(lambda x: jax.lax.linalg.cholesky(x, symmetrize_input=False))
                       .lower(a).as_text())
    for part in ("@lapack_spotrf_ffi(%", "mhlo.backend_config = {uplo = 76 : ui8}",
                 "operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>]",
                 "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices"
                 " = [0], operand_index = 0, operand_tuple_indices = []>]",
                 "result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : "
                 "tensor<1xindex>]"):
        assert part in mine and part in theirs, part


# ---- cholesky, solve, inv, det, slogdet: values -------------------------------------------------

# 1x1 and 2x2 (closed forms in det/slogdet), 3x3 (det's closed form), and batched stacks.
SQUARE_SHAPES = [(1, 1), (2, 2), (3, 3), (2, 1, 5, 5)]


def _square_cases(dtype):
    return [
        ("cholesky", lambda m, a: m.linalg.cholesky(a), _spd),
        ("cholesky_upper", lambda m, a: m.linalg.cholesky(a, upper=True), _spd),
        ("inv", lambda m, a: m.linalg.inv(a), _rand),
        ("det", lambda m, a: m.linalg.det(a), _rand),
        ("slogdet", lambda m, a: tuple(m.linalg.slogdet(a)), _rand),
        ("solve_vec", lambda m, a: m.linalg.solve(a, a.reshape(-1, a.shape[-1])[0]), _rand),
        ("solve_mat", lambda m, a: m.linalg.solve(a, a[..., :2]), _rand),
    ]


@pytest.mark.parametrize("shape", SQUARE_SHAPES)
def test_square_functions_match_jax_float32(shape):
    for _name, fn, make in _square_cases(np.float32):
        a = make(shape, np.float32)
        want = fn(jjnp, a)
        _tree_close(fn(jnp, a), want, np.float32, 10)
        if len(shape) > 2:
            _tree_close(minijax.jit(lambda x, fn=fn: fn(jnp, x))(a), want, np.float32, 10)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_square_functions_match_jax_x64(x64, dtype):
    for _name, fn, make in _square_cases(dtype):
        a = make((2, 5, 5), dtype)
        _tree_close(fn(jnp, a), fn(jjnp, a), dtype, 10)


def test_complex64_values():
    for _name, fn, make in _square_cases(np.complex64):
        a = make((2, 4, 4), np.complex64)
        _tree_close(fn(jnp, a), fn(jjnp, a), np.complex64, 10)


def test_solve_broadcasting_matches_jax():
    cases = [((3, 3), (3,)), ((2, 3, 3), (3,)), ((2, 3, 3), (3, 4)), ((3, 3), (5, 3, 2)),
             ((1, 3, 3), (4, 3, 1)), ((2, 3, 3), (2, 3, 3))]
    for sa, sb in cases:
        a, b = _rand(sa), _rand(sb)
        _close(jnp.linalg.solve(a, b), jjnp.linalg.solve(a, b), scale=10)
    # Integer inputs promote to the default float.
    ai = np.array([[2, 1], [1, 3]], np.int32)
    _close(jnp.linalg.solve(ai, np.array([1, 2], np.int32)),
           jjnp.linalg.solve(ai, np.array([1, 2], np.int32)))


def test_singular_and_not_positive_definite():
    s = np.array([[1., 2.], [2., 4.]], np.float32)
    s3 = np.array([[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]], np.float32)
    s4 = np.zeros((4, 4), np.float32)
    assert float(jnp.linalg.det(s)) == 0.0
    for m in (s3, s4):
        _tree_close(jnp.linalg.slogdet(m), jjnp.linalg.slogdet(m))
        assert float(jnp.linalg.det(m)) == float(jjnp.linalg.det(m)) == 0.0
    L = np.asarray(jnp.linalg.cholesky(-np.eye(3, dtype=np.float32)))
    assert np.isnan(L[np.tril_indices(3)]).all()


def test_lax_cholesky_reads_lower_triangle_only():
    a = _spd((3, 3))
    garbage = a + np.triu(np.full((3, 3), 100.0, np.float32), 1)
    _close(mlinalg.cholesky(garbage, symmetrize_input=False), np.linalg.cholesky(a))
    # Symmetrizing divides like jax's ``/``: integers become floats.
    _close(mlinalg.cholesky(4 * np.eye(2, dtype=np.int32)),
           jax.lax.linalg.cholesky(4 * np.eye(2, dtype=np.int32)))


# ---- triangular_solve and lu --------------------------------------------------------------------

@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
def test_triangular_solve_matches_jax(left_side, lower):
    a = _rand((2, 4, 4)) + 4 * np.eye(4, dtype=np.float32)
    b = _rand((2, 4, 3) if left_side else (2, 3, 4))
    for transpose_a in (False, True):
        for unit in (False, True):
            kw = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                      unit_diagonal=unit)
            _close(mlinalg.triangular_solve(a, b, **kw),
                   jax.lax.linalg.triangular_solve(a, b, **kw))
    # A vector right-hand side.
    v = _rand((2, 4))
    _close(mlinalg.triangular_solve(a, v, left_side=left_side, lower=lower),
           jax.lax.linalg.triangular_solve(a, v, left_side=left_side, lower=lower))


def test_triangular_solve_complex_conjugate():
    a = _rand((4, 4), np.complex64) + 4 * np.eye(4, dtype=np.complex64)
    b = _rand((4, 2), np.complex64)
    for transpose_a in (False, True):
        kw = dict(left_side=True, lower=True, transpose_a=transpose_a, conjugate_a=True)
        _close(mlinalg.triangular_solve(a, b, **kw), jax.lax.linalg.triangular_solve(a, b, **kw),
               np.complex64)


@pytest.mark.parametrize("left_side", [True, False])
def test_triangular_solve_vmap(left_side):
    a = _rand((4, 4)) + 4 * np.eye(4, dtype=np.float32)
    bs = _rand((3, 4, 2) if left_side else (3, 2, 4))
    as_ = _rand((3, 4, 4)) + 4 * np.eye(4, dtype=np.float32)

    def f(lib):
        return lambda x, y: lib.triangular_solve(x, y, left_side=left_side, lower=True)

    for axes, args in (((None, 0), (a, bs)), ((None, 2), (a, np.moveaxis(bs, 0, 2))),
                       ((0, 0), (as_, bs)), ((0, None), (as_, bs[0]))):
        _close(minijax.vmap(f(mlinalg), axes)(*args), jax.vmap(f(jax.lax.linalg), axes)(*args))


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5)])
def test_lu_matches_jax(shape):
    a = _rand(shape)
    got, want = mlinalg.lu(a), jax.lax.linalg.lu(a)
    for g, w in zip(got, want):
        _close(g, w)
    lu_, _, perm = (np.asarray(x) for x in got)
    k = min(shape[-2:])
    low = np.tril(lu_[..., :, :k], -1) + np.eye(shape[-2], k, dtype=np.float32)
    up = np.triu(lu_[..., :k, :])
    np.testing.assert_allclose(low @ up, np.take_along_axis(a, perm[..., None], -2), atol=1e-5)


def test_lu_vmap_and_jit():
    a = _rand((3, 4, 4))
    for g, w in zip(minijax.jit(minijax.vmap(mlinalg.lu))(a), jax.vmap(jax.lax.linalg.lu)(a)):
        _close(g, w)


# ---- transforms ---------------------------------------------------------------------------------

def test_vmap_matches_jax():
    a, b = _rand((3, 4, 4)), _rand((3, 4))
    spd = _spd((3, 4, 4))
    _close(minijax.vmap(jnp.linalg.det)(a), jax.vmap(jjnp.linalg.det)(a))
    _close(minijax.vmap(jnp.linalg.inv)(a), jax.vmap(jjnp.linalg.inv)(a), scale=10)
    _close(minijax.vmap(jnp.linalg.cholesky)(spd), jax.vmap(jjnp.linalg.cholesky)(spd))
    _close(minijax.vmap(jnp.linalg.solve)(a, b), jax.vmap(jjnp.linalg.solve)(a, b), scale=10)
    _close(minijax.vmap(jnp.linalg.solve, (None, 0))(a[0], b),
           jax.vmap(jjnp.linalg.solve, (None, 0))(a[0], b), scale=10)
    _tree_close(minijax.vmap(jnp.linalg.slogdet, 1)(np.moveaxis(a, 0, 1)),
                jax.vmap(jjnp.linalg.slogdet, 1)(np.moveaxis(a, 0, 1)))


def test_gradients_match_jax():
    a, b = _rand((2, 4, 4)), _rand((2, 4, 3))
    spd = _spd((2, 4, 4))
    cases = [
        (lambda m, x: m.linalg.det(x).sum(), a),
        (lambda m, x: m.linalg.det(x[0, :3, :3]), a),  # the 3x3 closed form
        (lambda m, x: m.linalg.slogdet(x)[1].sum(), a),
        (lambda m, x: (m.linalg.inv(x) ** 2).sum(), a),
        (lambda m, x: (m.linalg.cholesky(x) * x).sum(), spd),
        (lambda m, x: (m.linalg.solve(x, b) ** 2).sum(), a),
        (lambda m, x: (m.linalg.solve(a, x) ** 2).sum(), b),
    ]
    for fn, x in cases:  # jitted: one compile each instead of one per eager operation
        _close(minijax.jit(minijax.grad(lambda y, fn=fn: fn(jnp, y)))(x),
               jax.jit(jax.grad(lambda y, fn=fn: fn(jjnp, y)))(x), scale=20)


def test_det_gradient_at_singular_matrix_is_the_adjugate():
    # Rank n - 1 (exactly, in integers): d det / dA = adj(A)^T, which jax gets through its
    # cofactor solve where det(A) A^-1 is undefined.
    u = np.array([[1, 2, 0], [0, 1, 1], [2, 0, 1], [1, 1, 1]], np.float32)
    v = np.array([[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1]], np.float32)
    s = u @ v
    assert abs(float(jnp.linalg.det(s))) < 1e-4
    g = minijax.grad(jnp.linalg.det)(s)
    _close(g, jax.grad(jjnp.linalg.det)(s), scale=10)
    assert np.abs(np.asarray(g)).max() > 0.5


def _J(f):
    """``f`` jitted: check_grads then compiles one program per derivative it takes instead
    of one per eager operation."""
    return minijax.jit(f)


def test_check_grads_x64(x64):
    a = _rand((3, 3), np.float64) + 3 * np.eye(3)
    b = _rand((3, 2), np.float64)
    spd = _spd((3, 3), np.float64)
    check_grads(_J(jnp.linalg.det), (_rand((5, 5), np.float64),), 1)
    check_grads(_J(lambda x: jnp.linalg.slogdet(x)[1]), (a,), 1)
    check_grads(_J(jnp.linalg.inv), (a,), 1)
    check_grads(_J(jnp.linalg.solve), (a, b), 1)
    check_grads(_J(jnp.linalg.cholesky), (spd,), 2)
    check_grads(_J(lambda x, y: mlinalg.triangular_solve(x, y, left_side=True, lower=True)),
                (a, b), 1)
    check_grads(_J(lambda x: mlinalg.lu(x)[0]), (a,), 1)


def test_hessians_match_jax():
    a = _rand((3, 3)) + 3 * np.eye(3, dtype=np.float32)
    b = _rand((3,))
    spd = _spd((3, 3))
    cases = [(lambda m, x: m.linalg.det(x), _rand((4, 4))),
             (lambda m, x: (m.linalg.solve(x, b) ** 2).sum(), a),
             (lambda m, x: (m.linalg.cholesky(x) ** 2).sum(), spd),
             (lambda m, x: (m.linalg.eigh(x)[0] ** 3).sum(), spd)]
    for fn, x in cases:
        _close(minijax.jit(minijax.hessian(lambda y, fn=fn: fn(jnp, y)))(x),
               jax.jit(jax.hessian(lambda y, fn=fn: fn(jjnp, y)))(x), scale=50)


def test_jvp_of_solve_reuses_one_factorization():
    a, b = _rand((4, 4)), _rand((4, 2))
    jaxpr = str(minijax.make_jaxpr(lambda x, y: minijax.jvp(jnp.linalg.solve, (x, y),
                                                             (x, y)))(a, b))
    assert jaxpr.count(" = lu ") == 1, jaxpr


# ---- qr, eigh, svd, eig ------------------------------------------------------------------------

def _decomposition_cases(dtype):
    return [
        ("qr", lambda m, x: m.linalg.qr(x), (2, 5, 3)),
        ("qr_complete", lambda m, x: m.linalg.qr(x, mode="complete"), (3, 5)),
        ("qr_r", lambda m, x: m.linalg.qr(x, mode="r"), (4, 4)),
        ("qr_raw", lambda m, x: m.linalg.qr(x, mode="raw"), (5, 3)),
        ("eigh", lambda m, x: m.linalg.eigh(x), (2, 4, 4)),
        ("eigh_upper", lambda m, x: m.linalg.eigh(x, UPLO="U", symmetrize_input=False), (4, 4)),
        ("eigvalsh", lambda m, x: m.linalg.eigvalsh(x), (3, 3)),
        ("svd", lambda m, x: m.linalg.svd(x), (2, 5, 3)),
        ("svd_thin", lambda m, x: m.linalg.svd(x, full_matrices=False), (3, 5)),
        ("svd_values", lambda m, x: m.linalg.svd(x, compute_uv=False), (4, 4)),
        ("svdvals", lambda m, x: m.linalg.svdvals(x), (5, 3)),
        ("eig", lambda m, x: m.linalg.eig(x), (2, 4, 4)),
        ("eigvals", lambda m, x: m.linalg.eigvals(x), (3, 3)),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_decompositions_match_jax(dtype):
    for _name, fn, shape in _decomposition_cases(dtype):
        x = _rand(shape, dtype)
        _tree_close(fn(jnp, x), fn(jjnp, x), dtype, 10)


def test_decompositions_match_jax_x64(x64):
    for _name, fn, shape in _decomposition_cases(np.float64)[::2]:
        x = _rand(shape, np.float64)
        _tree_close(fn(jnp, x), fn(jjnp, x), np.float64, 10)


def test_decompositions_reconstruct():
    x = _rand((2, 5, 3))
    q, r = jnp.linalg.qr(x)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), x, atol=1e-5)
    u, s, vh = jnp.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose((np.asarray(u) * np.asarray(s)[..., None, :]) @ np.asarray(vh),
                               x, atol=1e-5)
    h = _spd((4, 4))
    w, v = jnp.linalg.eigh(h)
    np.testing.assert_allclose(np.asarray(v) @ np.diag(np.asarray(w)) @ np.asarray(v).T, h,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(jnp.linalg.svd(h, hermitian=True)[1]),
                               np.linalg.svd(h, compute_uv=False), rtol=1e-5)


def test_hermitian_svd_matches_jax():
    sym = _rand((2, 4, 4))
    sym = sym + np.swapaxes(sym, -1, -2)
    _tree_close(jnp.linalg.svd(sym, hermitian=True), jjnp.linalg.svd(sym, hermitian=True))
    _close(jnp.linalg.svd(sym, hermitian=True, compute_uv=False),
           jjnp.linalg.svd(sym, hermitian=True, compute_uv=False))


def test_lowered_decompositions_call_lapack():
    x = _rand((2, 4, 4))
    for fn, targets in ((jnp.linalg.qr, ("lapack_sgeqrf_ffi", "lapack_sorgqr_ffi")),
                        (jnp.linalg.eigh, ("lapack_ssyevd_ffi",)),
                        (jnp.linalg.svd, ("lapack_sgesdd_ffi",)),
                        (jnp.linalg.eigvals, ("lapack_sgeev_ffi",))):
        text = minijax.jit(fn).lower(x).as_text()
        for t in targets:
            assert f"stablehlo.custom_call @{t}(" in text, (fn, t)
    text = minijax.jit(jnp.linalg.svd).lower(_rand((4, 4), np.complex64)).as_text()
    assert "@lapack_cgesdd_ffi(" in text and "mhlo.backend_config = {mode = 65 : ui8}" in text


def test_decompositions_vmap_and_jit():
    x = _rand((4, 3, 4))
    for fn in (jnp.linalg.qr, jnp.linalg.eigh, jnp.linalg.svd, jnp.linalg.eigvals):
        jfn = getattr(jjnp.linalg, fn.__name__)
        _tree_close(minijax.jit(minijax.vmap(fn, 1))(x), jax.vmap(jfn, 1)(x), scale=10)


def _lax_of(m):
    return minijax.lax if m is jnp else jax.lax


def test_decomposition_gradients_match_jax():
    x = _rand((2, 4, 3))
    sq = _rand((2, 3, 3))
    cases = [
        (lambda m, y: sum((t * t).sum() for t in m.linalg.qr(y)), x),
        (lambda m, y: (m.linalg.qr(y, mode="complete")[0] * np.arange(16.).reshape(4, 4)).sum(),
         _rand((4, 3))),
        (lambda m, y: (m.linalg.eigh(y)[0] ** 3).sum()
         + (m.linalg.eigh(y)[1] * np.arange(9.).reshape(3, 3)).sum(), sq),
        (lambda m, y: m.linalg.svd(y, compute_uv=False).sum(), x),
        (lambda m, y: sum((t * np.float32(0.5)).sum()
                          for t in m.linalg.svd(y, full_matrices=False)), x),
        (lambda m, y: (m.linalg.pinv(y) ** 2).sum(), x),
        (lambda m, y: m.linalg.norm(y, "nuc", axis=(1, 2)).sum()
         + m.linalg.norm(y, 2, axis=(1, 2)).sum() + m.linalg.norm(y), x),
        (lambda m, y: _lax_of(m).real(m.linalg.eigvals(y)).sum(), sq),
    ]
    for fn, y in cases:
        _close(minijax.jit(minijax.grad(lambda z, fn=fn: fn(jnp, z)))(y),
               jax.jit(jax.grad(lambda z, fn=fn: fn(jjnp, z)))(y), scale=50)


def test_decomposition_check_grads_x64(x64):
    x = _rand((4, 3), np.float64)
    sq = _rand((3, 3), np.float64)
    check_grads(_J(jnp.linalg.qr), (x,), 1)
    check_grads(_J(jnp.linalg.eigh), (sq,), 1)
    check_grads(_J(lambda y: jnp.linalg.svd(y, full_matrices=False)), (x,), 1)
    check_grads(_J(jnp.linalg.pinv), (x,), 1)
    check_grads(_J(lambda y: mlinalg.qr(y, pivoting=True)[:2]), (x,), 1)


# ---- the rest of jnp.linalg ---------------------------------------------------------------------

def _other_cases():
    a = _rand((2, 4, 4))
    r, w, v = _rand((5, 3)), _rand((3, 5)), _rand((4,))
    sym = a + np.swapaxes(a, -1, -2)
    c1, c2 = _rand((4, 3)), _rand((4, 3))
    return [
        ("matrix_power", lambda m: [m.linalg.matrix_power(a, k) for k in (0, 1, 2, 5, -2)]),
        ("matrix_rank", lambda m: [m.linalg.matrix_rank(a), m.linalg.matrix_rank(r @ w),
                                   m.linalg.matrix_rank(v), m.linalg.matrix_rank(a, rtol=0.5),
                                   m.linalg.matrix_rank(sym, hermitian=True)]),
        ("pinv", lambda m: [m.linalg.pinv(r), m.linalg.pinv(w), m.linalg.pinv(a, rtol=0.1),
                            m.linalg.pinv(sym, hermitian=True), m.linalg.pinv(r, rcond=0.3)]),
        ("lstsq", lambda m: [m.linalg.lstsq(r, r[:, 0]), m.linalg.lstsq(w, w[:, :2], rcond=0.1),
                             m.linalg.lstsq(r, r[:, :2], numpy_resid=True)]),
        ("norm", lambda m: [m.linalg.norm(a), m.linalg.norm(v)]
         + [m.linalg.norm(v, o) for o in (1, np.inf, -np.inf, 0, 3, -1.5)]
         + [m.linalg.norm(a, o, axis=(1, 2)) for o in (None, "fro", "nuc", 1, -1, 2, -2,
                                                          np.inf, -np.inf)]
         + [m.linalg.norm(a, 2, axis=(2, 0), keepdims=True),
            m.linalg.norm(a, 1, axis=(2, 1), keepdims=True), m.linalg.norm(a, axis=1)]),
        ("matrix_norm", lambda m: [m.linalg.matrix_norm(a),
                                   m.linalg.matrix_norm(a, ord="nuc", keepdims=True)]),
        ("vector_norm", lambda m: [m.linalg.vector_norm(a),
                                   m.linalg.vector_norm(a, axis=(0, 2), keepdims=True, ord=1)]),
        ("cond", lambda m: [m.linalg.cond(a), m.linalg.cond(a, -2), m.linalg.cond(a, "fro"),
                            m.linalg.cond(a, 1), m.linalg.cond(np.ones((3, 3), np.float32), 1)]),
        ("products", lambda m: [m.linalg.outer(v, v), m.linalg.matmul(a, a),
                                m.linalg.tensordot(r, w, axes=1),
                                m.linalg.tensordot(a, np.swapaxes(a, 0, 2), axes=2),
                                m.linalg.vecdot(a, v), m.linalg.vecdot(a, a, axis=0),
                                m.linalg.cross(c1, c2), m.linalg.cross(c1.T, c2.T, axis=0)]),
        ("multi_dot", lambda m: [m.linalg.multi_dot([r, w, r]),
                                 m.linalg.multi_dot([r[:, 0], r, w, w[0]]),
                                 m.linalg.multi_dot([v, a[0]])]),
        ("tensor", lambda m: [m.linalg.tensorinv(_TINV, ind=2),
                              m.linalg.tensorsolve(_TSA, _TSB)]),
        ("matrix_parts", lambda m: [m.linalg.trace(a), m.linalg.trace(r, offset=1),
                                    m.linalg.trace(r, offset=-2), m.linalg.diagonal(a),
                                    m.linalg.diagonal(r, offset=1),
                                    m.linalg.diagonal(w, offset=-1),
                                    m.linalg.matrix_transpose(a)]),
        ("slogdet_qr", lambda m: m.linalg.slogdet(a, method="qr")),
    ]


_TINV = _rand((4, 6, 8, 3))
_TSA, _TSB = _rand((6, 4, 2, 3, 4)), _rand((6, 4))


@pytest.mark.parametrize("name,fn", _other_cases(), ids=[c[0] for c in _other_cases()])
def test_other_functions_match_jax(name, fn):
    with np.errstate(invalid="ignore"):
        _tree_close(fn(jnp), fn(jjnp), scale=10)


def test_every_jax_name_exists():
    missing = [n for n in dir(jjnp.linalg) if not n.startswith("_") and
               not hasattr(jnp.linalg, n)]
    assert not missing, missing
    assert jnp.linalg is minijax.numpy.linalg
    # jax.lax.linalg too, except qdwh (a TPU polar-decomposition algorithm)
    lax_missing = {n for n in dir(jax.lax.linalg) if not n.startswith("_")} - set(dir(mlinalg))
    assert lax_missing == {"qdwh"}, lax_missing


# ---- errors -------------------------------------------------------------------------------------

ERROR_CASES = [
    ("cholesky_int", lambda m: m.lax.linalg.cholesky(np.eye(3, dtype=np.int32),
                                                      symmetrize_input=False)),
    ("cholesky_nonsquare", lambda m: m.lax.linalg.cholesky(np.ones((2, 3), np.float32),
                                                            symmetrize_input=False)),
    ("cholesky_f16", lambda m: m.lax.linalg.cholesky(np.eye(2, dtype=np.float16))),
    ("cholesky_list", lambda m: m.numpy.linalg.cholesky([[1., 0.], [0., 1.]])),
    ("solve_mismatch", lambda m: m.numpy.linalg.solve(np.ones((3, 3)), np.ones((2,)))),
    ("solve_1d", lambda m: m.numpy.linalg.solve(np.ones(3), np.ones(3))),
    ("solve_old_batched", lambda m: m.numpy.linalg.solve(np.ones((2, 3, 3)), np.ones((2, 3)))),
    ("det_nonsquare", lambda m: m.numpy.linalg.det(np.ones((3, 2)))),
    ("inv_1d", lambda m: m.numpy.linalg.inv(np.ones(3))),
    ("slogdet_nonsquare", lambda m: m.numpy.linalg.slogdet(np.ones((2, 3)))),
    ("slogdet_method", lambda m: m.numpy.linalg.slogdet(np.eye(3), method="x")),
    ("trsm_shapes", lambda m: m.lax.linalg.triangular_solve(
        np.ones((3, 3), np.float32), np.ones((2, 2), np.float32), left_side=True)),
    ("lu_rank1", lambda m: m.lax.linalg.lu(np.ones((3,), np.float32))),
    ("eigh_uplo", lambda m: m.numpy.linalg.eigh(np.eye(2), UPLO="X")),
    ("eigh_nonsquare", lambda m: m.numpy.linalg.eigh(np.ones((2, 3)))),
    ("qr_mode", lambda m: m.numpy.linalg.qr(np.eye(2), mode="bad")),
    ("svd_full_jvp", lambda m: m.jvp(m.numpy.linalg.svd, (np.ones((3, 2)),),
                                     (np.ones((3, 2)),))),
    ("eig_vector_jvp", lambda m: m.jvp(m.numpy.linalg.eig, (np.eye(2),), (np.eye(2),))),
    ("matrix_power_nonsquare", lambda m: m.numpy.linalg.matrix_power(np.ones((2, 3)), 2)),
    ("matrix_power_float", lambda m: m.numpy.linalg.matrix_power(np.eye(2), 1.5)),
    ("norm_ord", lambda m: m.numpy.linalg.norm(np.eye(2), "bad")),
    ("norm_axes", lambda m: m.numpy.linalg.norm(np.ones((2, 2, 2)), axis=(0, 1, 2))),
    ("vector_norm_str", lambda m: m.numpy.linalg.vector_norm(np.ones(2), ord="inf")),
    ("lstsq_rows", lambda m: m.numpy.linalg.lstsq(np.ones((3, 2)), np.ones(2))),
    ("lstsq_3d", lambda m: m.numpy.linalg.lstsq(np.ones((3, 2, 2)), np.ones((3, 2)))),
    ("pinv_both", lambda m: m.numpy.linalg.pinv(np.eye(2), rtol=0.1, rcond=0.1)),
    ("matrix_rank_both", lambda m: m.numpy.linalg.matrix_rank(np.eye(2), rtol=1, tol=1)),
    ("multi_dot_shapes", lambda m: m.numpy.linalg.multi_dot([np.eye(2), np.ones((3, 3))])),
    ("tensorinv_ind", lambda m: m.numpy.linalg.tensorinv(np.ones((2, 2)), ind=0)),
    ("tensorinv_shape", lambda m: m.numpy.linalg.tensorinv(np.ones((2, 3)), ind=1)),
    ("tensorsolve_shape", lambda m: m.numpy.linalg.tensorsolve(np.ones((2, 3)), np.ones(3))),
    ("cross_size", lambda m: m.numpy.linalg.cross(np.ones(2), np.ones(2))),
    ("cond_1d", lambda m: m.numpy.linalg.cond(np.ones(3))),
    ("cond_nonsquare", lambda m: m.numpy.linalg.cond(np.ones((2, 3)), 1)),
    ("outer_2d", lambda m: m.numpy.linalg.outer(np.ones((2, 2)), np.ones(2))),
    ("matrix_transpose_1d", lambda m: m.numpy.linalg.matrix_transpose(np.ones(2))),
]


@pytest.mark.parametrize("name,fn", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_have_jax_exception_types(name, fn):
    import jax.lax  # noqa: F401
    with pytest.raises(Exception) as want:
        fn(jax)
    with pytest.raises(want.type):
        fn(minijax)
