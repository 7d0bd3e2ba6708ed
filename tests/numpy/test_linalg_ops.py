"""minijax.numpy matmul, dot, vdot, inner, outer, tensordot and einsum vs numpy and jax."""

import re

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

RNG = np.random.default_rng(4)


def _rand(shape, dtype=np.float32):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return RNG.integers(-3, 4, shape).astype(dt)
    if dt.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)
    return RNG.standard_normal(shape).astype(dt)


MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                 ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)),
                 ((4,), (2, 4, 5)), ((2, 3, 4), (4,)), ((2, 3, 4), (2, 4, 5))]


def test_matmul_and_dot_shapes_match_numpy():
    pairs = [(_rand(sa), _rand(sb)) for sa, sb in MATMUL_SHAPES]
    f = minijax.jit(lambda ps: [(jnp.matmul(a, b), jnp.dot(a, b), a @ b) for a, b in ps])
    for (mm, d, at), (a, b) in zip(f(pairs), pairs):
        for got, want in ((mm, np.matmul(a, b)), (d, np.dot(a, b)), (at, a @ b)):
            assert got.shape == want.shape, (a.shape, b.shape)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES[:3] + MATMUL_SHAPES[6:7])
def test_matmul_eager_and_operator(sa, sb):
    a, b = _rand(sa), _rand(sb)
    got = jnp.asarray(a) @ jnp.asarray(b)
    assert isinstance(got, minijax.Array)
    np.testing.assert_allclose(np.asarray(got), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(jnp.matmul(a, b)), np.asarray(jjnp.matmul(a, b)),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("da,db", [(np.float32, np.int32), (np.float16, np.float16),
                                   (ml_dtypes.bfloat16, np.float32), (np.int8, np.int8),
                                   (np.bool_, np.bool_), (np.uint8, np.int8),
                                   (np.complex64, np.float32)])
def test_product_dtypes_match_jax(da, db):
    a, b = _rand((3, 4), da), _rand((4, 2), db)

    def f(mod):
        return lambda a, b: (mod.matmul(a, b), mod.dot(a, b), mod.tensordot(a, b, 1),
                             mod.einsum("ij,jk->ik", a, b), mod.inner(a, b.T), mod.outer(a, b))

    got = minijax.jit(f(jnp))(a, b)
    want = jax.jit(f(jjnp))(a, b)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g).astype(np.complex128),
                                   np.asarray(w).astype(np.complex128), rtol=2e-2, atol=1e-2)


def test_python_scalar_operands_keep_weak_type():
    x = _rand((3,))
    assert jnp.dot(x, 2.0).dtype == np.float32
    np.testing.assert_allclose(np.asarray(jnp.dot(2, x)), 2 * x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jnp.inner(x, 3.0)), 3 * x, rtol=1e-6)
    assert jnp.dot(np.float16(2), np.ones(3, np.float16)).dtype == np.float16


def test_dot_nd_vdot_inner_outer_tensordot():
    a, b = _rand((2, 3, 4)), _rand((5, 4, 6))
    f = minijax.jit(lambda a, b: (jnp.dot(a, b), jnp.inner(a, b.transpose(0, 2, 1)),
                                  jnp.tensordot(a, b, axes=((2,), (1,))),
                                  jnp.tensordot(a, a, axes=([1, 2], [1, 2])),
                                  jnp.tensordot(a, b, axes=0), jnp.outer(a, b[0])))
    want = (np.dot(a, b), np.inner(a, b.transpose(0, 2, 1)), np.tensordot(a, b, ((2,), (1,))),
            np.tensordot(a, a, ([1, 2], [1, 2])), np.tensordot(a, b, 0), np.outer(a, b[0]))
    for g, w in zip(f(a, b), want):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-4)
    c, d = _rand((2, 3), np.complex64), _rand((6,), np.complex64)
    got = jnp.vdot(c, d)
    assert got.shape == () and got.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), np.vdot(c, d), rtol=1e-5)
    e, g = _rand((3, 4)), _rand((3, 4))
    got = jnp.tensordot(e, g)  # axes=2: all of both
    assert got.shape == ()
    np.testing.assert_allclose(np.asarray(got), np.tensordot(e, g), rtol=1e-5)


EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,kj", [(3, 4), (5, 4)]), ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]), ("ij->ji", [(3, 4)]), ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i", [(4,), (4,)]), ("i,j->ij", [(3,), (4,)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ijk->", [(2, 3, 4)]), ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
    ("ij,jk", [(3, 4), (4, 5)]), ("...i,...i->...", [(2, 3), (2, 3)]),
    ("...ij,jk->...ik", [(1, 3, 4), (4, 5)]), ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 6)]),
    ("iij->j", [(3, 3, 2)]), ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("i,i,i->", [(4,), (4,), (4,)]), ("ij,ij->ij", [(2, 3), (2, 3)]), ("ij,i->j", [(3, 4), (3,)]),
    ("ji", [(3, 4)]), ("...", [(2, 3)]), ("i...->...", [(2, 3, 4)]),
    ("b i j , b j -> b i", [(2, 3, 4), (2, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,ab->", [(3, 4), (1, 4)]),
]


def test_einsum_matches_numpy():
    ops = [[_rand(s) for s in shapes] for _, shapes in EINSUM_CASES]
    f = minijax.jit(lambda ops: [jnp.einsum(spec, *o) for (spec, _), o in zip(EINSUM_CASES, ops)])
    for got, (spec, _), o in zip(f(ops), EINSUM_CASES, ops):
        want = np.einsum(spec, *o)
        assert got.shape == want.shape, spec
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4, err_msg=spec)


def test_einsum_eager_int_and_optimize_ignored():
    a, b = _rand((3, 4), np.int32), _rand((4, 2), np.int32)
    got = jnp.einsum("ij,jk->ik", a, b, optimize="greedy")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), a @ b)
    np.testing.assert_array_equal(np.asarray(jnp.einsum("ii->", a[:3, :3])), np.trace(a[:3, :3]))


def _norm(text: str) -> str:
    # Compare jaxprs up to line breaking inside an equation's [params].
    text = re.sub(r"\s+", " ", text)
    return re.sub(r"\[ ", "[", re.sub(r" \]", "]", text))


def test_dot_jaxpr_matches_jax():
    a, b = _rand((3, 4)), _rand((4, 5))
    got = str(minijax.make_jaxpr(lambda a, b: jnp.dot(a, b))(a, b))
    want = str(jax.make_jaxpr(lambda a, b: jjnp.dot(a, b))(a, b))
    assert _norm(got) == _norm(want)
    assert "dot_general[dimension_numbers=(([1], [0]), ([], [])) " \
           "preferred_element_type=float32] a b" in _norm(got)


def test_product_errors():
    with pytest.raises(TypeError, match=r"dot_general.*contracting.*\(3, 4\).*\(5, 2\)"):
        jnp.dot(np.ones((3, 4), np.float32), np.ones((5, 2), np.float32))
    with pytest.raises(TypeError, match=r"dot_general.*contracting.*\(3, 4\).*\(5,\)"):
        minijax.jit(jnp.dot)(np.ones((3, 4), np.float32), np.ones(5, np.float32))
    with pytest.raises(ValueError, match=r"matmul: contracting dimensions differ.*\(3, 4\)"):
        jnp.matmul(np.ones((3, 4)), np.ones((5, 2)))
    with pytest.raises(ValueError, match=r"matmul input operand 0 must have ndim at least 1"):
        jnp.matmul(2.0, np.ones(3))
    with pytest.raises(ValueError, match=r"matmul: incompatible batch dimensions"):
        jnp.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5)))
    with pytest.raises(ValueError, match=r"einsum: subscripts 'ij' do not match an operand of "
                                         r"rank 1"):
        jnp.einsum("ij", np.ones(3))
    with pytest.raises(ValueError, match=r"einsum: label 'j' has incompatible sizes 4 and 5"):
        jnp.einsum("ij,jk", np.ones((3, 4)), np.ones((5, 2)))
    with pytest.raises(ValueError, match=r"einsum: output label 'k' does not appear"):
        jnp.einsum("ij->k", np.ones((3, 4)))
    with pytest.raises(ValueError, match=r"name 2 operands but 1 were given"):
        jnp.einsum("ij,jk", np.ones((3, 4)))
    with pytest.raises(TypeError, match=r"Number of tensordot axes"):
        jnp.tensordot(np.ones(3), np.ones(3), 2)
    with pytest.raises(TypeError, match=r"matmul requires ndarray or scalar arguments"):
        jnp.matmul([1.0, 2.0], np.ones(2))


# ---- einsum: jax's private _dot_general hook, and labels that are not letters -----------------

def _einsum_with_hook(np_, lax_, a, b, spec):
    calls = []

    def dg(lhs, rhs, dims, precision=None, preferred_element_type=None, **kw):
        calls.append((str(preferred_element_type), sorted(kw)))
        return 2 * lax_.dot_general(lhs, rhs, dims, precision=precision,
                                    preferred_element_type=preferred_element_type)
    return np_.einsum(spec, a, b, _dot_general=dg), calls


@pytest.mark.parametrize("spec", ["bij,bjk->bik", "ij,jk", "...qk,...kd->...qd"])
def test_einsum_dot_general_hook_like_jax(spec):
    import jax
    import jax.numpy as jjnp
    rng = np.random.RandomState(0)
    a = rng.rand(2, 3, 4).astype(np.float32)
    b = rng.rand(2, 4, 5).astype(np.float32)
    if spec == "ij,jk":
        a, b = a[0], b[0]
    got, got_calls = _einsum_with_hook(jnp, minijax.lax, a, b, spec)
    want, want_calls = _einsum_with_hook(jjnp, jax.lax, a, b, spec)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert got_calls == want_calls


@pytest.mark.parametrize("spec", ["...hgqk,...kh1d->...qhgd", "i#,#k->ik", "i1,1k"])
def test_einsum_non_letter_labels_like_jax(spec):
    import jax.numpy as jjnp
    rng = np.random.RandomState(1)
    if spec.startswith("..."):
        a, b = rng.rand(2, 3, 4, 5, 6), rng.rand(2, 6, 3, 1, 7)
    else:
        a, b = rng.rand(2, 3), rng.rand(3, 4)
    a, b = a.astype(np.float32), b.astype(np.float32)
    got, want = jnp.einsum(spec, a, b), jjnp.einsum(spec, a, b)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
