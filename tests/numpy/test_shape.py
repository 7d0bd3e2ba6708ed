"""Shape functions of minijax.numpy against numpy and jax.numpy (eager and under jit)."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

RNG = np.random.default_rng(2)
X = RNG.normal(size=(2, 3, 4)).astype(np.float32)
XI = np.arange(24, dtype=np.int32).reshape(4, 6)


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _jax_args(args):
    return [jjnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]


def _check(fn, *args, numpy_fn=None, jit=True, jax_fn=None):
    """fn(module, *args) with minijax.numpy, jax.numpy and numpy agree (values, dtype, shape)."""
    results = [_leaves(fn(jnp, *args))]
    jf = jax_fn or fn
    theirs = _leaves(jax.jit(lambda *a: jf(jjnp, *a))(*_jax_args(args))) \
        if jax_fn is not False else results[0]
    if jit:
        results.append(_leaves(minijax.jit(lambda *a: fn(jnp, *a))(*args)))
    expected = _leaves((numpy_fn or fn)(np, *args)) if numpy_fn is not False else None
    for ours in results:
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert isinstance(o, minijax.Array)
            assert o.shape == t.shape and o.dtype == t.dtype, (o.shape, t.shape, o.dtype, t.dtype)
            assert o.weak_type == t.weak_type
            np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6)
    if expected is not None:
        for o, e in zip(results[0], expected):
            assert o.shape == np.shape(e)
            np.testing.assert_allclose(np.asarray(o), e, rtol=1e-6)


CASES = [
    ("reshape", lambda m, x: m.reshape(x, (4, -1))),
    ("reshape_int", lambda m, x: m.reshape(x, -1)),
    ("method_reshape_args", lambda m, x: m.asarray(x).reshape(6, 4)),
    ("method_reshape_tuple", lambda m, x: m.asarray(x).reshape((3, -1, 2))),
    ("ravel", lambda m, x: m.ravel(x)),
    ("method_flatten", lambda m, x: m.asarray(x).flatten()),
    ("transpose", lambda m, x: m.transpose(x)),
    ("transpose_axes", lambda m, x: m.transpose(x, (1, -1, 0))),
    ("method_transpose", lambda m, x: m.asarray(x).transpose(2, 0, 1)),
    ("method_T", lambda m, x: m.asarray(x).T),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, -1)),
    ("method_swapaxes", lambda m, x: m.asarray(x).swapaxes(1, 2)),
    ("moveaxis", lambda m, x: m.moveaxis(x, 0, -1)),
    ("moveaxis_multi", lambda m, x: m.moveaxis(x, (0, 1), (2, 0))),
    ("expand_dims", lambda m, x: m.expand_dims(x, 1)),
    ("expand_dims_tuple", lambda m, x: m.expand_dims(x, (0, -1))),
    ("squeeze_all", lambda m, x: m.squeeze(m.expand_dims(x, (0, 2)))),
    ("squeeze_axis", lambda m, x: m.squeeze(m.expand_dims(x, (0, 2)), -3)),
    ("squeeze_tuple", lambda m, x: m.squeeze(m.expand_dims(x, (0, 2)), (0, 2))),
    ("method_squeeze", lambda m, x: m.asarray(x)[:, :1].squeeze(1)),
    ("concatenate", lambda m, x: m.concatenate([x, x[:1]], axis=0)),
    ("concatenate_neg", lambda m, x: m.concatenate([x, x], axis=-1)),
    ("concatenate_none", lambda m, x: m.concatenate([x, x[0]], axis=None)),
    ("stack", lambda m, x: m.stack([x, x, x])),
    ("stack_axis", lambda m, x: m.stack([x, x], axis=-1)),
    ("hstack", lambda m, x: m.hstack([x, x])),
    ("hstack_1d", lambda m, x: m.hstack([x[0, 0], x[1, 1]])),
    ("vstack", lambda m, x: m.vstack([x[0], x[1], x[0, 0]])),
    ("split", lambda m, x: m.split(x, 2, axis=2)),
    ("split_indices", lambda m, x: m.split(x, [1, 3], axis=-1)),
    ("array_split", lambda m, x: m.array_split(x, 3, axis=2)),
    ("tile", lambda m, x: m.tile(x, 2)),
    ("tile_more", lambda m, x: m.tile(x, (2, 1, 1, 2))),
    ("repeat_flat", lambda m, x: m.repeat(x, 2)),
    ("repeat_axis", lambda m, x: m.repeat(x, 3, axis=1)),
    ("repeat_counts", lambda m, x: m.repeat(x, np.array([2, 0, 1]), axis=1)),
    ("method_repeat", lambda m, x: m.asarray(x).repeat(2, axis=-1)),
    ("flip", lambda m, x: m.flip(x)),
    ("flip_axis", lambda m, x: m.flip(x, 1)),
    ("flip_tuple", lambda m, x: m.flip(x, (0, -1))),
    ("fliplr_flipud", lambda m, x: [m.fliplr(x), m.flipud(x)]),
    ("broadcast_to", lambda m, x: m.broadcast_to(x[0, 0], (5, 4))),
    ("broadcast_arrays", lambda m, x: m.broadcast_arrays(x, x[0], x[0, :1, :1])),
    ("atleast", lambda m, x: [m.atleast_1d(x[0, 0, 0]), m.atleast_2d(x[0, 0]),
                              m.atleast_3d(x[0]), m.atleast_1d(x)]),
    ("pad_int", lambda m, x: m.pad(x, 1)),
    ("pad_pairs", lambda m, x: m.pad(x, ((0, 1), (2, 0), (1, 1)), constant_values=-2.5)),
    ("pad_values_per_axis", lambda m, x: m.pad(x, ((1, 1), (0, 0), (2, 1)),
                                               constant_values=((1, 2), (3, 4), (5, 6)))),
    ("pad_edge", lambda m, x: m.pad(x, ((1, 2), (0, 1), (3, 0)), mode="edge")),
    ("tril", lambda m, x: m.tril(x)),
    ("triu_k", lambda m, x: m.triu(x, -1)),
    ("tril_k", lambda m, x: m.tril(x, 2)),
    ("zeros_like", lambda m, x: m.zeros_like(x)),
    ("ones_like_dtype", lambda m, x: m.ones_like(x, dtype=m.int32)),
    ("full_like", lambda m, x: m.full_like(x, 7)),
    ("full_like_shape", lambda m, x: m.full_like(x, 1.5, shape=(2, 2))),
    ("astype", lambda m, x: m.asarray(x).astype(m.int32)),
    ("astype_bool", lambda m, x: m.astype(x, bool)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy_and_jax(name, fn):
    _check(fn, X)


def test_split_unordered_indices_like_numpy():
    # jax rejects decreasing split points; numpy (and minijax) give empty pieces.
    _check(lambda m, x: m.split(x, [3, 1, 9], axis=2), X, jax_fn=False)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float16])
def test_dtypes_preserved(dtype):
    x = (XI % 3).astype(dtype)
    _check(lambda m, v: [m.reshape(v, (2, 12)), m.transpose(v), m.concatenate([v, v]),
                         m.stack([v, v], 1), m.split(v, 3, axis=1), m.tile(v, (1, 2)),
                         m.repeat(v, 2, axis=0), m.flip(v, 0), m.pad(v, 1), m.tril(v)],
           x, jit=False)


def test_weak_types_follow_jax():
    def fn(m, s):
        return [m.reshape(s, (1, 1)), m.transpose(m.reshape(s, (1, 1))), m.expand_dims(s, 0),
                m.zeros_like(s), m.full_like(s, 3), m.broadcast_to(s, (2,)), m.ravel(s)]
    _check(fn, 2.0, numpy_fn=False)
    _check(lambda m, s: m.concatenate([m.reshape(s, (1,)), m.reshape(s, (1,))]), 2.0,
           numpy_fn=False)
    assert not jnp.concatenate([jnp.ones(1), jnp.reshape(jnp.asarray(2.0), (1,))]).weak_type


@pytest.mark.parametrize("args", [
    (5,), (2, 7), (10, 2, -3), (0.5, 3), (0, 1, 0.25), (3, 1), (-2.5,), (1, 2, 0.3),
])
def test_arange(args):
    _check(lambda m: m.arange(*args), numpy_fn=lambda m: m.arange(*args).astype(
        np.asarray(jjnp.arange(*args)).dtype))


def test_arange_dtype():
    _check(lambda m: m.arange(5, dtype=m.float32))
    _check(lambda m: m.arange(0, 1, 0.1, dtype=m.float16), numpy_fn=False)
    _check(lambda m: m.arange(1, 7, 2, dtype=m.uint8))


@pytest.mark.parametrize("kwargs", [
    {"start": 0, "stop": 1, "num": 7}, {"start": 0.0, "stop": 1.0, "num": 4, "endpoint": False},
    {"start": 2, "stop": 10, "num": 5, "dtype": np.int32}, {"start": -1.0, "stop": 1.0, "num": 1},
    {"start": 1.0, "stop": 3.0, "num": 0},
    {"start": 1.0, "stop": 3.0, "num": 1, "endpoint": False},
])
def test_linspace(kwargs):
    _check(lambda m: m.linspace(**kwargs), jit=False)


def test_linspace_retstep_and_arrays():
    _check(lambda m: m.linspace(0.0, 3.0, 4, retstep=True), numpy_fn=lambda m: [
        np.float32(v) for v in m.linspace(0.0, 3.0, 4, retstep=True)])
    _check(lambda m, a, b: m.linspace(a, b, 3, axis=-1), X[0, 0], X[1, 0])


def test_eye_identity():
    _check(lambda m: [m.eye(3, 5, k=1), m.identity(3, dtype=m.bool_)])
    _check(lambda m: m.eye(4, 2, k=-1, dtype=m.int32), jit=False)


def test_arange_traced_bound_raises():
    f = minijax.jit(lambda n: jnp.arange(n))
    with pytest.raises(minijax.ConcretizationTypeError, match="arange argument 'stop'.*static"):
        f(3)
    g = minijax.jit(lambda n: jnp.arange(n), static_argnums=0)
    np.testing.assert_array_equal(np.asarray(g(3)), [0, 1, 2])


def test_repeat_traced_repeats_raises():
    with pytest.raises(minijax.ConcretizationTypeError, match="repeat.*static"):
        minijax.jit(lambda x, r: jnp.repeat(x, r))(XI, 2)


@pytest.mark.parametrize("fn,exc,match", [
    (lambda m, x: m.reshape(x, (5, 5)), TypeError, r"shape \(4, 6\).*into shape \(5, 5\)"),
    (lambda m, x: m.reshape(x, (-1, -1)), TypeError, "only specify one unknown axis"),
    (lambda m, x: m.reshape(x, (5, -1)), TypeError, r"\(5, -1\).*evenly divide"),
    (lambda m, x: m.transpose(x, (0, 0)), TypeError, r"permutation \(0, 0\)"),
    (lambda m, x: m.transpose(x, (0, 2)), ValueError, "axis 2 is out of bounds"),
    (lambda m, x: m.swapaxes(x, 0, 2), IndexError, "2"),
    (lambda m, x: m.moveaxis(x, 0, 3), ValueError, "axis 3 is out of bounds"),
    (lambda m, x: m.expand_dims(x, 4), ValueError, "axis 4 is out of bounds.*dimension 3"),
    (lambda m, x: m.squeeze(x, 0), ValueError, r"size not equal to one.*\(4, 6\)"),
    (lambda m, x: m.squeeze(x, 3), ValueError, "axis 3 is out of bounds"),
    (lambda m, x: m.concatenate([x, x[0]]), TypeError, "different numbers of dimensions"),
    (lambda m, x: m.concatenate([x, x[:, :2].T]), TypeError, r"shapes \(4, 6\), \(2, 4\)"),
    (lambda m, x: m.concatenate([x, x], axis=2), ValueError, "axis 2 is out of bounds"),
    (lambda m, x: m.concatenate([x[0, 0], x[0, 1]]), ValueError, "Zero-dimensional"),
    (lambda m, x: m.stack([x, x[0]]), ValueError, "same shape"),
    (lambda m, x: m.split(x, 5, axis=1), ValueError, "equal division"),
    (lambda m, x: m.flip(x, 2), ValueError, "axis 2 is out of bounds"),
    (lambda m, x: m.broadcast_to(x, (3, 6)), ValueError, r"\(4, 6\).*\(3, 6\)"),
    (lambda m, x: m.tril(x[0]), ValueError, "at least 2D"),
    (lambda m, x: m.pad(x, -1), ValueError, "negative"),
    (lambda m, x: m.reshape([1, 2], (2,)), TypeError, "list"),
])
def test_errors_match_jax_types(fn, exc, match):
    with pytest.raises(exc):
        fn(jjnp, jjnp.asarray(XI))
    with pytest.raises(exc, match=match):
        fn(jnp, XI)


def test_jaxprs_match_jax():
    x = np.ones((2, 3), np.float32)
    for fn in (lambda m, v: m.reshape(v, (3, 2)), lambda m, v: m.transpose(v),
               lambda m, v: m.ravel(v), lambda m, v: m.concatenate([v, v], axis=1),
               lambda m, v: m.repeat(v, 2, axis=0), lambda m, v: m.moveaxis(v, 0, 1),
               lambda m, v: m.broadcast_to(v, (4, 2, 3)), lambda m, v: m.zeros_like(v),
               lambda m, v: m.astype(v, m.int32), lambda m, v: m.eye(3, 4, k=1),
               lambda m, v: m.arange(0.0, 1.0, 0.25)):
        ours = str(minijax.make_jaxpr(lambda v, fn=fn: fn(jnp, v))(x))
        theirs = str(jax.make_jaxpr(lambda v, fn=fn: fn(jjnp, v))(x))
        assert ours == theirs.replace("] \n", "]\n")


def test_x64_arange_and_linspace(x64):
    _check(lambda m: [m.arange(5), m.arange(0.0, 1.0, 0.25), m.linspace(0, 1, 5)])
    _check(lambda m, x: m.concatenate([x, x.astype(np.int64)]), XI)


PAD_MODES = [
    ("ramp_default", 2, dict(mode="linear_ramp")),
    ("ramp_pairs", ((1, 3), (2, 0)), dict(mode="linear_ramp", end_values=((5, -3), (7, 2)))),
    ("ramp_before_after", (2, 3), dict(mode="linear_ramp", end_values=(1.5, -2.5))),
    ("ramp_scalar", 3, dict(mode="linear_ramp", end_values=(4,))),
    ("mean_len", 2, dict(mode="mean", stat_length=2)),
    ("max_pairs", ((1, 3), (2, 0)), dict(mode="maximum", stat_length=((1, 2), (3, 9)))),
    ("min_before_after", (2, 1), dict(mode="minimum", stat_length=(1, 3))),
    ("median_one_pair", 3, dict(mode="median", stat_length=((2, 3),))),
    ("reflect_odd_long", 5, dict(mode="reflect", reflect_type="odd")),
    ("symmetric_odd", ((1, 9), (4, 0)), dict(mode="symmetric", reflect_type="odd")),
    ("reflect_odd_pairs", ((2, 3), (5, 1)), dict(mode="reflect", reflect_type="odd")),
]


def _pad_against_jax(x, width, kw, grad=False):
    # eager (op by op) only for the float case: it compiles every op, which is slow.
    tol = 2e-3 if x.dtype == np.float16 else 1e-6
    theirs = jjnp.pad(x, width, **kw)
    outs = [minijax.jit(lambda a: jnp.pad(a, width, **kw))(x)]
    if grad:
        outs.append(jnp.pad(x, width, **kw))
    for ours in outs:
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_allclose(np.asarray(ours, np.float64),
                                   np.asarray(theirs, np.float64), rtol=tol, atol=tol)
    if grad:
        ct = RNG.normal(size=theirs.shape).astype(np.float32)
        g = minijax.jit(minijax.grad(lambda a: jnp.sum(jnp.pad(a, width, **kw) * ct)))(x)
        gj = jax.jit(jax.grad(lambda a: jjnp.sum(jjnp.pad(a, width, **kw) * ct)))(x)
        np.testing.assert_allclose(np.asarray(g), np.asarray(gj), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("width,kw", [c[1:] for c in PAD_MODES], ids=[c[0] for c in PAD_MODES])
def test_pad_ramp_stat_length_odd_match_jax(width, kw):
    x = (RNG.normal(size=(3, 4)) * 6).astype(np.float32)
    _pad_against_jax(x, width, kw, grad=kw["mode"] != "median")  # median: slow eager sort
    _pad_against_jax(x.astype(np.int32), width, kw)


@pytest.mark.parametrize("dtype", [np.uint8, np.float16])
def test_pad_ramp_stat_length_small_dtypes(dtype):
    x = np.abs(RNG.normal(size=(3, 4)) * 6).astype(dtype)
    for width, kw in [(((1, 3), (2, 0)), dict(mode="linear_ramp", end_values=((5, 3), (7, 2)))),
                      ((2, 1), dict(mode="mean", stat_length=(1, 3))),
                      (3, dict(mode="median", stat_length=((2, 3),)))]:
        _pad_against_jax(x, width, kw)
    if dtype == np.float16:
        _pad_against_jax(x, ((2, 3), (5, 1)), dict(mode="reflect", reflect_type="odd"))


def test_pad_numpy_modes_agree():
    x = np.arange(12, dtype=np.float64).reshape(3, 4) ** 1.5
    for width, kw in [(((1, 3), (2, 0)), dict(mode="linear_ramp", end_values=((5, -3), (7, 2)))),
                      (7, dict(mode="reflect", reflect_type="odd")),
                      (((1, 9), (4, 0)), dict(mode="symmetric", reflect_type="odd")),
                      (((1, 3), (2, 0)), dict(mode="mean", stat_length=((1, 2), (3, 9))))]:
        np.testing.assert_allclose(np.asarray(jnp.pad(x.astype(np.float32), width, **kw)),
                                   np.pad(x, width, **kw), rtol=1e-4)


@pytest.mark.parametrize("kw,exc,match", [
    (dict(mode="median", stat_length=((2,),)), ValueError, r"unsupported shape \(1, 1\)"),
    (dict(mode="mean", stat_length=0), ValueError, "stat_length of 0"),
    (dict(mode="edge", stat_length=1), ValueError, "unsupported keyword.*stat_length"),
    (dict(mode="constant", reflect_type="odd"), ValueError, "unsupported keyword"),
    (dict(mode="reflect", end_values=1), ValueError, "unsupported keyword.*end_values"),
    (dict(mode="linear_ramp", end_values=((1, 2), (3,))), TypeError, "same shape"),
    (dict(mode="foo"), NotImplementedError, "foo"),
])
def test_pad_kwarg_errors_like_jax(kw, exc, match):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(exc):
        jjnp.pad(x, 1, **kw)
    with pytest.raises(exc, match=match):
        jnp.pad(x, 1, **kw)


def test_pad_with_a_callable_mode_like_jax():
    """A callable mode gets each 1-d slice along each axis, its (before, after) widths, the
    axis and the keyword arguments, and returns the new slice (jax's form of numpy's)."""
    def padder(vector, pad_width, iaxis, kwargs):
        v = kwargs.get("padder", 10) + iaxis
        vector = vector.at[:pad_width[0]].set(v)
        return vector.at[vector.shape[0] - pad_width[1]:].set(v) if pad_width[1] else vector

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for pw in (2, ((1, 2), (0, 1))):
        want = np.asarray(jjnp.pad(a, pw, padder, padder=7))
        np.testing.assert_array_equal(np.asarray(jnp.pad(a, pw, padder, padder=7)), want)
    want = np.asarray(jax.jit(lambda a: jjnp.pad(a, 1, padder))(a))
    np.testing.assert_array_equal(np.asarray(minijax.jit(lambda a: jnp.pad(a, 1, padder))(a)),
                                  want)


@pytest.mark.parametrize("shape,new", [((2, 3, 4), (4, 6)), ((6,), (2, 3)), ((2, 3), (-1,)),
                                       ((2, 3, 4), (3, -1, 2)), ((), (1, 1))])
def test_reshape_order_f(shape, new):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    _check(lambda m, a: m.reshape(a, new, order="F"), x)
    _check(lambda m, a: m.asarray(a).reshape(new, order="F"), x)
    _check(lambda m, a: m.ravel(a, order="F"), x)
    g = minijax.grad(lambda a: (jnp.reshape(a, new, order="F") * jnp.arange(x.size).reshape(
        jnp.reshape(a, new, order="F").shape)).sum())(x)
    gj = jax.grad(lambda a: (jjnp.reshape(a, new, order="F") * jjnp.arange(x.size).reshape(
        jjnp.reshape(a, new, order="F").shape)).sum())(x)
    np.testing.assert_array_equal(g, gj)
    v = minijax.vmap(lambda a: jnp.reshape(a, new, order="F"))(np.stack([x, x + 1]))
    vj = jax.vmap(lambda a: jjnp.reshape(a, new, order="F"))(np.stack([x, x + 1]))
    np.testing.assert_array_equal(v, vj)


def test_reshape_order_a_raises_like_jax():
    with pytest.raises(NotImplementedError):
        jnp.reshape(jnp.ones(4), (2, 2), order="A")
    with pytest.raises(NotImplementedError):
        jjnp.reshape(jjnp.ones(4), (2, 2), order="A")
