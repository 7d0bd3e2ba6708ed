"""Array manipulation, index construction, array construction and vectorize/ufunc of
minijax.numpy against jax.numpy: values, dtypes and exceptions, plus jit, grad and vmap."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from tests.numpy._util import assert_same, check_against_jax

X = np.arange(12, dtype=np.float32).reshape(3, 4)
V = np.array([1.0, 2.0, 3.0], np.float32)
A3 = np.array([[1.0, 2, 3], [4, 5, 6]], np.float32)
B3 = np.array([[0.0, 1, 0], [1, 1, 1]], np.float32)
C = np.array([[0, 1, 2], [2, 1, 0]])
IDX = np.array([[0, 1], [2, 0], [3, 3]])


def _add(L):
    return L.frompyfunc(lambda a, b: a + b, nin=2, nout=1, identity=0)


# (label, f(L) with L either jax.numpy or minijax.numpy)
CASES = [
    ("diag", lambda L: L.diag(V, 1)), ("diag_neg", lambda L: L.diag(V, -2)),
    ("diag_2d", lambda L: L.diag(X, -1)), ("diagflat", lambda L: L.diagflat(X[:2, :2], 1)),
    ("diagonal", lambda L: L.diagonal(np.arange(24).reshape(2, 3, 4), 1, 2, 0)),
    ("trace", lambda L: L.trace(X, 1)), ("trace_dtype", lambda L: L.trace(X.astype(np.int8),
                                                                         dtype=np.int16)),
    ("tri", lambda L: L.tri(3, 4, -1)), ("tri_dtype", lambda L: L.tri(3, dtype=np.int32)),
    ("rot90", lambda L: L.rot90(X, 3)), ("rot90_axes", lambda L: L.rot90(
        np.arange(24).reshape(2, 3, 4), 1, (2, 0))),
    ("roll", lambda L: L.roll(X, 1)), ("roll_axes", lambda L: L.roll(X, (1, 2), (0, 1))),
    ("roll_broadcast", lambda L: (L.roll(X, (1, 2), 0), L.roll(X, -2, (0, 1)))),
    ("rollaxis", lambda L: L.rollaxis(np.ones((2, 3, 4, 5)), 3, 1)),
    ("resize", lambda L: L.resize(X, (5, 3))), ("append", lambda L: L.append(X, V)),
    ("append_axis", lambda L: L.append(X, X[:1], axis=0)),
    ("insert", lambda L: L.insert(X, 1, 99.0, axis=1)),
    ("insert_many", lambda L: L.insert(V, np.array([3, 0, 0]), np.array([7.0, 8.0, 9.0]))),
    ("insert_slice", lambda L: L.insert(X, slice(1, 3), 5.0, axis=0)),
    ("delete", lambda L: L.delete(X, -1, axis=1)),
    ("delete_mask", lambda L: L.delete(X, np.array([True, False, True, False]), axis=1)),
    ("delete_unique", lambda L: L.delete(X, np.array([0, 3]), axis=1,
                                         assume_unique_indices=True)),
    ("concat", lambda L: L.concat([X, X], axis=1)),
    ("column_stack", lambda L: L.column_stack([V, V * 2])),
    ("dstack", lambda L: L.dstack([V, V])), ("unstack", lambda L: L.unstack(X, axis=1)),
    ("hsplit", lambda L: L.hsplit(X, 2)), ("vsplit", lambda L: L.vsplit(X, [1])),
    ("dsplit", lambda L: L.dsplit(np.ones((2, 2, 4)), 2)),
    ("block", lambda L: L.block([[np.ones((2, 2)), np.zeros((2, 1))], [np.zeros((1, 3))]])),
    ("choose", lambda L: L.choose(C, [np.arange(3), np.arange(3) * 10, np.arange(3) * 100])),
    ("choose_wrap", lambda L: L.choose(C + 2, [np.arange(3), np.arange(3) * 10.0], mode="wrap")),
    ("choose_raise", lambda L: L.choose(C + 2, [np.arange(3), np.arange(3) * 10])),
    ("select", lambda L: L.select([V > 1, V > 2], [V, V * 10], default=-1)),
    ("piecewise", lambda L: L.piecewise(V, [V < 2, V > 2], [lambda t: -t, lambda t: t * 10,
                                                            0.5])),
    ("kron", lambda L: L.kron(V, X)), ("cross", lambda L: L.cross(A3, B3)),
    ("cross_2d", lambda L: L.cross(A3[:, :2], B3)),
    ("cross_axis", lambda L: L.cross(A3.T, B3.T, axis=0)),
    ("matvec", lambda L: L.matvec(np.ones((2, 3, 4)), np.arange(4.0))),
    ("vecmat", lambda L: L.vecmat(np.arange(3.0), np.ones((2, 3, 4)))),
    ("vecdot", lambda L: L.vecdot(np.array([1 + 1j, 2]), np.array([1j, 1]), axis=0)),
    ("apply_along_axis", lambda L: L.apply_along_axis(
        lambda r: L.stack([r.min(), r.max()]), 1, np.arange(24.0).reshape(2, 3, 4))),
    ("apply_over_axes", lambda L: L.apply_over_axes(L.sum, X, [0, 1])),
    ("array_equal", lambda L: (L.array_equal(X, X), L.array_equal(X, V))),
    ("array_equal_nan", lambda L: L.array_equal(np.array([np.nan]), np.array([np.nan]),
                                                equal_nan=True)),
    ("array_equiv", lambda L: (L.array_equiv(X[:1], X), L.array_equiv(V, X))),
    ("broadcast_shapes", lambda L: L.broadcast_shapes((3, 1), (4,), (1, 4))),
    ("broadcast_shapes_bad", lambda L: L.broadcast_shapes((3,), (4,))),
    ("matrix_transpose", lambda L: L.matrix_transpose(np.ones((2, 3, 4)))),
    ("copy", lambda L: L.copy(X)), ("diff", lambda L: L.diff(X, 2, axis=0)),
    ("diff_ends", lambda L: L.diff(V, prepend=0.0, append=np.array([9.0]))),
    ("diff_bool", lambda L: L.diff(np.array([True, False, False]))),
    ("ediff1d", lambda L: L.ediff1d(X, to_begin=np.array([-1, -2]), to_end=5)),
    ("einsum_path", lambda L: L.einsum_path("ij,jk,kl->il", np.ones((2, 3)), np.ones((3, 4)),
                                            np.ones((4, 5)))[0]),
    # index construction
    ("meshgrid", lambda L: L.meshgrid(V, np.arange(4), V)),
    ("meshgrid_sparse_ij", lambda L: L.meshgrid(V, np.arange(4), sparse=True, indexing="ij")),
    ("indices", lambda L: L.indices((2, 3), dtype=np.int8)),
    ("indices_sparse", lambda L: L.indices((2, 3), sparse=True)),
    ("ix_", lambda L: L.ix_(np.array([0, 2]), np.array([1, 3, 0]))),
    ("mgrid", lambda L: L.mgrid[0:1:5j, 2:4]), ("ogrid", lambda L: L.ogrid[0:3, 0:4:2]),
    ("r_", lambda L: L.r_[np.array([1, 2]), 0, 3:6]),
    ("r_directive", lambda L: L.r_["0,2", np.array([1, 2]), np.array([3, 4])]),
    ("c_", lambda L: L.c_[np.ones((2, 2)), np.array([3, 4])]),
    ("tril_indices", lambda L: L.tril_indices(4, -1)),
    ("triu_indices", lambda L: L.triu_indices(4, 2, 3)),
    ("tril_indices_from", lambda L: L.tril_indices_from(np.ones((3, 5)), 1)),
    ("triu_indices_from", lambda L: L.triu_indices_from(np.ones((3, 5)))),
    ("diag_indices", lambda L: L.diag_indices(3, 3)),
    ("diag_indices_from", lambda L: L.diag_indices_from(np.ones((3, 4)))),
    ("mask_indices", lambda L: L.mask_indices(3, L.triu, 1)),
    ("fill_diagonal", lambda L: L.fill_diagonal(np.zeros((4, 4)), np.array([1.0, 2]),
                                                inplace=False)),
    ("fill_diagonal_inplace", lambda L: L.fill_diagonal(X, 9.0)),
    ("ravel_multi_index", lambda L: L.ravel_multi_index((np.array([0, 2, 1]),
                                                         np.array([3, 1, 5])), (3, 4),
                                                        mode="clip")),
    ("ravel_multi_index_raise", lambda L: L.ravel_multi_index((np.array([0, 2]),
                                                               np.array([3, 5])), (3, 4))),
    ("unravel_index", lambda L: L.unravel_index(np.array([0, 5, 11, 12, -1, -20]), (3, 4))),
    ("put", lambda L: L.put(X, np.array([0, 5, 20]), np.array([-1.0, -2.0]), inplace=False)),
    ("put_wrap", lambda L: L.put(X, np.array([0, 5, 20]), -1.0, mode="wrap", inplace=False)),
    ("put_inplace", lambda L: L.put(X, np.array([0]), -1.0)),
    ("put_along_axis", lambda L: L.put_along_axis(X, IDX, 99.0, axis=1, inplace=False)),
    ("place", lambda L: L.place(X, X > 5, np.array([1.0, 2.0]), inplace=False)),
    # construction
    ("geomspace", lambda L: L.geomspace(-1.0, -1000.0, 4, endpoint=False)),
    ("geomspace_axis", lambda L: L.geomspace(np.array([1.0, 2.0]), np.array([10.0, 200.0]), 3,
                                             axis=1)),
    ("logspace", lambda L: L.logspace(0, 3, 4, base=2, dtype=np.int32)),
    ("fromfunction", lambda L: L.fromfunction(lambda i, j: i * 10 + j, (3, 4))),
    ("frombuffer", lambda L: L.frombuffer(b"\x01\x00\x00\x00\x02\x00\x00\x00",
                                          dtype=np.int32)),
    ("fromstring", lambda L: L.fromstring("1 2 3", dtype=np.float32, sep=" ")),
    ("from_dlpack", lambda L: L.from_dlpack(np.arange(3.0))),
    ("fromiter", lambda L: L.fromiter(iter([1, 2]))),
    ("packbits", lambda L: L.packbits(np.arange(30).reshape(3, 10) % 3 == 0, axis=1)),
    ("packbits_little", lambda L: L.packbits(np.arange(30) % 3 == 0, bitorder="little")),
    ("unpackbits", lambda L: L.unpackbits(np.array([[7, 200], [1, 255]], np.uint8), axis=0)),
    ("unpackbits_count", lambda L: L.unpackbits(np.array([7, 200], np.uint8), count=18,
                                                bitorder="little")),
    # vectorize and ufunc
    ("vectorize", lambda L: L.vectorize(lambda a, b: a * 2 + b)(np.ones((2, 3)), V)),
    ("vectorize_signature", lambda L: L.vectorize(lambda a: (a.sum(), a * 2),
                                                  signature="(n)->(),(n)")(np.ones((2, 3)))),
    ("vectorize_excluded", lambda L: L.vectorize(lambda a, p: a ** p, excluded={1})(V, 2)),
    ("vectorize_bad", lambda L: L.vectorize(lambda a, b: a @ b, signature="(n),(n)->()")(
        np.ones((2, 3)), np.arange(4.0))),
    ("ufunc_call_outer", lambda L: (_add(L)(np.arange(3), 10),
                                    _add(L).outer(np.arange(3), np.arange(4)))),
    ("ufunc_reduce", lambda L: (_add(L).reduce(X, axis=1, keepdims=True),
                                _add(L).reduce(X, axis=None), _add(L).reduce(X, where=X > 3))),
    ("ufunc_accumulate", lambda L: _add(L).accumulate(X, axis=1)),
    ("ufunc_at", lambda L: _add(L).at(np.arange(5), np.array([0, 0, 3]), 10, inplace=False)),
    ("ufunc_reduceat", lambda L: _add(L).reduceat(np.arange(8), np.array([0, 4, 1, 5]))),
]


# Cases whose results are not arrays, or that read values (choose and ravel_multi_index
# with mode='raise', mask_indices without size), run eagerly; the others in one jitted
# program per library, where the operands are constants (far fewer compilations than op by
# op).
EAGER = {"einsum_path", "broadcast_shapes", "broadcast_shapes_bad", "choose", "choose_raise",
         "mask_indices", "ravel_multi_index_raise"}


@pytest.mark.parametrize("label,f", CASES, ids=[c[0] for c in CASES])
def test_against_jax(label, f):
    if label in EAGER:
        check_against_jax(lambda: f(jnp), lambda: f(jjnp))
    else:
        check_against_jax(minijax.jit(lambda: f(jnp)), jax.jit(lambda: f(jjnp)))


def test_eagerly():
    # (op by op, for a few)
    for label in ["insert_many", "choose", "meshgrid", "packbits", "ufunc_reduce", "diag"]:
        f = dict(CASES)[label]
        check_against_jax(lambda: f(jnp), lambda: f(jjnp))


def test_io_raises_naming_the_alternative():
    with pytest.raises(NotImplementedError, match="np\\."):
        jnp.fromfile("file.npy")
    assert jnp.s_[1:2] == jjnp.s_[1:2] and jnp.index_exp[1] == jjnp.index_exp[1]
    assert jnp.array_repr(jnp.ones(2)).startswith("Array(")
    assert repr(_add(jnp)) == "<jnp.ufunc '<lambda>'>" and _add(jnp).nin == 2


def test_jit_grad_vmap():
    def f(L, x):
        y = L.roll(L.rot90(x), 1, axis=0)
        y = L.insert(y, 1, L.diag(x)[:1].sum(), axis=1)
        y = L.kron(L.diagonal(y)[:2], L.tril(x)[:1])
        return (y ** 2).sum() + L.trace(x) + L.cross(x[:2, :3], x[1:, 1:]).sum()
    assert_same(minijax.jit(minijax.grad(lambda x: f(jnp, x)))(X),
                jax.grad(lambda x: f(jjnp, x))(X), rtol=1e-5)
    batch = np.stack([X, X * 2])
    assert_same(minijax.vmap(lambda x: f(jnp, x))(batch), jax.vmap(lambda x: f(jjnp, x))(batch),
                rtol=1e-5)
    g = lambda L, x: L.vectorize(lambda a: a.sum() * a, signature="(n)->(n)")(x)  # noqa: E731
    assert_same(minijax.jit(lambda x: g(jnp, x))(X), jax.jit(lambda x: g(jjnp, x))(X))
    shift = lambda L, x, s: (L.roll(x, s[0], axis=1), L.roll(x, s, (0, 1)))  # noqa: E731
    s = np.array([3, -7], np.int32)
    assert_same(minijax.jit(lambda x, s: shift(jnp, x, s))(X, s),
                jax.jit(lambda x, s: shift(jjnp, x, s))(X, s))


# (64-bit mode: default int/float dtypes of results, float64 computation)
X64_CASES = [
    "insert_many", "delete_unique", "choose_wrap", "select", "kron", "vecdot", "indices",
    "ix_", "tril_indices", "ravel_multi_index", "unravel_index", "geomspace", "logspace",
    "fromfunction", "packbits", "ufunc_reduce", "diff_ends", "trace_dtype",
]


@pytest.mark.parametrize("label", X64_CASES)
def test_x64(label, x64):
    f = dict(CASES)[label]
    check_against_jax(minijax.jit(lambda: f(jnp)), jax.jit(lambda: f(jjnp)), rtol=2e-5, atol=2e-5)


def test_array_methods():
    # the jax.Array methods that forward to the functions here, eagerly and under jit
    x = np.array([[3.0, 0, 2], [1, 5, 0]], np.float32)

    def f(L, a):
        return (a.nonzero(size=4), a.diagonal(), a.trace(1), a.ptp(axis=1), a.cumprod(1),
                a.take(np.array([0, 3])), a.argpartition(1), a.copy(),
                L.sort(a[0]).searchsorted(2.5), a.conj(), a.real)

    def g(L, a):  # (these read values: eagerly only)
        return (a.compress(np.array([1, 0, 1]), axis=1),
                L.asarray(np.array([0, 1])).choose([a[0, :2], a[1, :2]]))
    for h in (f, g):
        check_against_jax(lambda h=h: h(jnp, jnp.asarray(x)), lambda h=h: h(jjnp, jjnp.asarray(x)))
    check_against_jax(minijax.jit(lambda a: f(jnp, a)), jax.jit(lambda a: f(jjnp, a)), x)
