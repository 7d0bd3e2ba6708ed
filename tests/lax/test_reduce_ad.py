"""jvp, transpose and batching rules of reductions, dot_general, sort and cumulative ops.

Derivatives are checked against finite differences (``check_grads``, order 2, forward
and reverse) and against ``jax.jvp``/``jax.grad``/``jax.vjp``; batching against
``jax.vmap`` with several ``in_axes``/``out_axes``, and batched jaxprs against jax's.
"""

import re

import jax
import ml_dtypes
import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.test_util import check_grads

RNG = np.random.default_rng(0)


def _distinct(shape, dtype=np.float32, low=0.5, high=1.5):
    """Values well apart from each other (no ties, no kinks for max/min/sort)."""
    n = int(np.prod(shape))
    return RNG.permutation(np.linspace(low, high, n)).reshape(shape).astype(dtype)


def _close(got, want, rtol=2e-5, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    wide = np.complex128 if np.iscomplexobj(want) else np.float64
    np.testing.assert_allclose(got.astype(wide), want.astype(wide), rtol=rtol, atol=atol)


def _jvp_vs_jax(ours, theirs, args):
    tangents = tuple(RNG.standard_normal(np.shape(a)).astype(np.asarray(a).dtype)
                     for a in args)
    out, t = minijax.jvp(ours, args, tangents)
    jout, jt = jax.jvp(theirs, args, tangents)
    for a, b in zip(jax.tree_util.tree_leaves((out, t)), jax.tree_util.tree_leaves((jout, jt))):
        _close(a, b)


# ---- reductions ------------------------------------------------------------------------

REDUCTIONS = [("reduce_sum", lax.reduce_sum, jax.lax.reduce_sum),
              ("reduce_prod", lax.reduce_prod, jax.lax.reduce_prod),
              ("reduce_max", lax.reduce_max, jax.lax.reduce_max),
              ("reduce_min", lax.reduce_min, jax.lax.reduce_min)]
AXES = [((4,), (0,)), ((2, 3, 4), (1,)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (2, 0)),
        ((2, 3), ())]


@pytest.mark.parametrize("name,ours,_", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("shape,axes", AXES, ids=str)
def test_reduction_check_grads(name, ours, _, shape, axes):
    x = _distinct(shape)
    check_grads(lambda x: ours(x, axes), (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name,ours,theirs", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("shape,axes", AXES[1:4], ids=str)
def test_reduction_jvp_and_grad_match_jax(name, ours, theirs, shape, axes):
    x = _distinct(shape)
    _jvp_vs_jax(lambda x: ours(x, axes), lambda x: theirs(x, axes), (x,))
    w = _distinct(tuple(d for i, d in enumerate(shape) if i not in axes))
    g = minijax.grad(lambda x: (ours(x, axes) * w).sum())(x)
    jg = jax.grad(lambda x: (theirs(x, axes) * w).sum())(x)
    _close(g, jg)


@pytest.mark.parametrize("which", ["max", "min"])
def test_max_min_ties_split_the_tangent_evenly_as_jax(which):
    ours = lax.reduce_max if which == "max" else lax.reduce_min
    theirs = jax.lax.reduce_max if which == "max" else jax.lax.reduce_min
    x = np.array([[1., 3., 3., 0.], [2., 2., 2., 2.], [-1., 5., 4., 5.]], np.float32)
    x = x if which == "max" else -x
    for axes in [(1,), (0,), (0, 1)]:
        _jvp_vs_jax(lambda x: ours(x, axes), lambda x: theirs(x, axes), (x,))
        g = minijax.grad(lambda x: ours(x, axes).sum())(x)
        _close(g, jax.grad(lambda x: theirs(x, axes).sum())(x))
    g = minijax.grad(lambda x: ours(x, (1,))[1])(x)
    _close(g, np.array([[0] * 4, [0.25] * 4, [0] * 4], np.float32))


def test_reduce_prod_with_zeros_matches_jax():
    x = np.array([[0., 2., 3., 4.], [0., 2., 0., 4.], [1., 2., 3., 4.], [0., 0., 0., 0.]],
                 np.float32)
    for axes in [(1,), (0,), (0, 1)]:
        _jvp_vs_jax(lambda x: lax.reduce_prod(x, axes), lambda x: jax.lax.reduce_prod(x, axes),
                    (x,))
        g = minijax.jit(minijax.grad(lambda x: lax.reduce_prod(x, axes).sum()))(x)
        _close(g, jax.jit(jax.grad(lambda x: jax.lax.reduce_prod(x, axes).sum()))(x))
    # second derivatives through the zeros, too
    h = minijax.jit(minijax.grad(
        lambda x: minijax.grad(lambda x: lax.reduce_prod(x, (1,)).sum())(x)[1, 1]))(x)
    jh = jax.jit(jax.grad(
        lambda x: jax.grad(lambda x: jax.lax.reduce_prod(x, (1,)).sum())(x)[1, 1]))(x)
    _close(h, jh)


def test_reduce_prod_complex_jvp():
    x = (_distinct((3, 4)) + 1j * _distinct((3, 4))).astype(np.complex64)
    _jvp_vs_jax(lambda x: lax.reduce_prod(x, (1,)), lambda x: jax.lax.reduce_prod(x, (1,)),
                (x,))


def test_reduce_sum_transpose_via_vjp_matches_jax():
    x = _distinct((2, 3, 4))
    ct = _distinct((3,))
    _, pb = minijax.vjp(lambda x: lax.reduce_sum(x, (0, 2)), x)
    _, jpb = jax.vjp(lambda x: jax.lax.reduce_sum(x, (0, 2)), x)
    _close(pb(ct)[0], jpb(ct)[0])


@pytest.mark.parametrize("fn", [
    lambda x: lax.argmax(x, 1, np.int32), lambda x: lax.argmin(x, 0, np.int32),
    lambda x: lax.reduce_and(x > 1.0, (1,)), lambda x: lax.reduce_or(x > 1.0, (0, 1))])
def test_integer_and_boolean_reductions_have_zero_tangents(fn):
    x = _distinct((3, 4))
    out, t = minijax.jvp(fn, (x,), (np.ones_like(x),))
    assert t.dtype == jax.dtypes.float0
    assert t.shape == out.shape
    # and they are constants for grad
    g = minijax.grad(lambda x: x.sum() + fn(x).astype(np.float32).sum())(x)
    _close(g, np.ones_like(x))


def test_integer_reductions_under_jvp_with_integer_inputs():
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    for fn in (lambda x: lax.reduce_max(x, (1,)), lambda x: lax.reduce_prod(x, (0,)),
               lambda x: lax.reduce_sum(x, (1,))):
        out, t = minijax.jvp(fn, (xi,), (np.zeros(xi.shape, jax.dtypes.float0),))
        assert out.dtype == np.int32 and t.dtype == jax.dtypes.float0


ALL_REDUCERS = [(lax.reduce_sum, jax.lax.reduce_sum), (lax.reduce_prod, jax.lax.reduce_prod),
                (lax.reduce_max, jax.lax.reduce_max), (lax.reduce_min, jax.lax.reduce_min)]


@pytest.mark.parametrize("i", range(len(ALL_REDUCERS)))
@pytest.mark.parametrize("in_axis,axes", [(1, (0, 2)), (2, (1,)), (-1, (0, 1)), (0, ())])
def test_reduction_vmap_matches_jax(i, in_axis, axes):
    ours, theirs = ALL_REDUCERS[i]
    x = _distinct((2, 3, 4, 5))
    got = minijax.vmap(lambda x: ours(x, axes), in_axes=in_axis)(x)
    _close(got, jax.vmap(lambda x: theirs(x, axes), in_axes=in_axis)(x))


@pytest.mark.parametrize("in_axis,out_axis,axis", [(0, 0, 0), (1, -1, 1), (2, 1, 0),
                                                   (-1, 0, 2)])
def test_logical_and_arg_reductions_vmap_match_jax(in_axis, out_axis, axis):
    x = np.round(_distinct((3, 4, 2, 5)) * 4) / 4  # some ties for argmax/argmin
    kw = {"in_axes": in_axis, "out_axes": out_axis}
    for ours, theirs in [(lambda x: lax.argmax(x, axis, np.int32),
                          lambda x: jax.lax.argmax(x, axis, np.int32)),
                         (lambda x: lax.argmin(x, axis, np.int32),
                          lambda x: jax.lax.argmin(x, axis, np.int32)),
                         (lambda x: lax.reduce_and(x > 1.0, (axis,)),
                          lambda x: jax.lax.reduce_and(x > 1.0, (axis,))),
                         (lambda x: lax.reduce_or(x > 1.2, (axis, (axis + 1) % 3)),
                          lambda x: jax.lax.reduce_or(x > 1.2, (axis, (axis + 1) % 3)))]:
        _close(minijax.vmap(ours, **kw)(x), jax.vmap(theirs, **kw)(x))


def _jaxpr_text(text: str) -> str:
    return re.sub(r"np\.int64\((\d+)\)", r"\1", text)


@pytest.mark.parametrize("fn", [
    lambda lax: lambda x: lax.reduce_max(x, (1,)),
    lambda lax: lambda x: lax.reduce_sum(x, (0, 1)),
    lambda lax: lambda x: lax.argmin(x, 1, np.int32),
    lambda lax: lambda x: lax.cumsum(x, 1, reverse=True),
    lambda lax: lambda x: lax.sort(x, 1)])
def test_batched_jaxprs_match_jax(fn):
    x = _distinct((3, 4, 5))
    ours = minijax.make_jaxpr(minijax.vmap(fn(lax), in_axes=1))(x)
    theirs = jax.make_jaxpr(jax.vmap(fn(jax.lax), in_axes=1))(x)
    assert _jaxpr_text(str(ours)) == _jaxpr_text(str(theirs))


# ---- dot_general -------------------------------------------------------------------------

DOTS = [
    ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),
    ((3, 4), (5, 4), (((1,), (1,)), ((), ()))),
    ((4,), (4,), (((0,), (0,)), ((), ()))),
    ((3,), (2,), (((), ()), ((), ()))),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,)))),
    ((2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ()))),
    ((2, 3, 4), (4, 3, 2), (((1,), (1,)), ((0, 2), (2, 0)))),
]


@pytest.mark.parametrize("ls,rs,dims", DOTS, ids=str)
def test_dot_general_check_grads(ls, rs, dims):
    a, b = _distinct(ls, low=-1.0), _distinct(rs, low=-1.0)
    check_grads(lambda a, b: lax.dot_general(a, b, dims), (a, b), order=2,
                modes=("fwd", "rev"))


@pytest.mark.parametrize("ls,rs,dims", DOTS, ids=str)
def test_dot_general_jvp_and_vjp_match_jax(ls, rs, dims):
    a, b = _distinct(ls, low=-1.0), _distinct(rs, low=-1.0)
    f = lambda a, b: lax.dot_general(a, b, dims)
    jf = lambda a, b: jax.lax.dot_general(a, b, dims)
    _jvp_vs_jax(f, jf, (a, b))
    out, pb = minijax.vjp(f, a, b)
    jout, jpb = jax.vjp(jf, a, b)
    ct = RNG.standard_normal(jout.shape).astype(np.float32)
    for g, jg in zip(pb(ct), jpb(ct)):
        _close(g, jg)


@pytest.mark.parametrize("dtype,preferred", [(ml_dtypes.bfloat16, np.float32),
                                             (np.float16, np.float32),
                                             (np.float32, None)])
def test_dot_general_transpose_with_preferred_element_type(dtype, preferred):
    a = _distinct((3, 4), dtype, low=-1.0)
    b = _distinct((4, 2), dtype, low=-1.0)
    dims = (((1,), (0,)), ((), ()))

    def f(lax_):
        return lambda a, b: lax_.dot_general(a, b, dims, preferred_element_type=preferred)

    out, pb = minijax.vjp(f(lax), a, b)
    jout, jpb = jax.vjp(f(jax.lax), a, b)
    assert out.dtype == jout.dtype
    ct = np.ones(jout.shape, jout.dtype)
    for g, jg in zip(pb(ct), jpb(ct)):
        assert g.dtype == jg.dtype == dtype
        _close(g, jg, rtol=1e-2)


def test_dot_general_grad_wrt_float_with_integer_lhs():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = _distinct((4, 2))
    dims = (((1,), (0,)), ((), ()))
    g = minijax.grad(lambda b: lax.dot_general(a, b, dims, preferred_element_type=np.float32)
                     .sum())(b)
    jg = jax.grad(lambda b: jax.lax.dot_general(a, b, dims, preferred_element_type=np.float32)
                  .sum())(b)
    _close(g, jg)


BATCHED_DOTS = [
    # (per-example shapes, dims, in_axes)
    ((3, 4), (4, 5), (((1,), (0,)), ((), ())), (0, 0)),
    ((3, 4), (4, 5), (((1,), (0,)), ((), ())), (1, None)),
    ((3, 4), (4, 5), (((1,), (0,)), ((), ())), (None, 2)),
    ((3, 4), (4, 5), (((1,), (0,)), ((), ())), (-1, 1)),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,))), (2, 0)),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,))), (None, 1)),
    ((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,))), (1, None)),
    ((2, 3, 4), (4, 3, 2), (((1,), (1,)), ((0, 2), (2, 0))), (3, 2)),
]


@pytest.mark.parametrize("ls,rs,dims,in_axes", BATCHED_DOTS, ids=str)
def test_dot_general_vmap_matches_jax_and_emits_only_dot_general(ls, rs, dims, in_axes):
    n = 3

    def batched(shape, ax):
        if ax is None:
            return _distinct(shape, low=-1.0)
        ax = ax % (len(shape) + 1)
        return _distinct(shape[:ax] + (n,) + shape[ax:], low=-1.0)

    a, b = batched(ls, in_axes[0]), batched(rs, in_axes[1])
    ours = minijax.vmap(lambda a, b: lax.dot_general(a, b, dims), in_axes=in_axes)
    theirs = jax.vmap(lambda a, b: jax.lax.dot_general(a, b, dims), in_axes=in_axes)
    _close(ours(a, b), theirs(a, b), rtol=1e-5, atol=1e-5)
    jaxpr = minijax.make_jaxpr(ours)(a, b)
    # the vmapped dimension is folded into the dot: no transpose/broadcast of an operand
    prims = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert prims[0] == "dot_general" and prims.count("dot_general") == 1
    assert "broadcast_in_dim" not in prims
    jaxpr_text = str(jax.make_jaxpr(theirs)(a, b))
    assert str(jaxpr) == jaxpr_text


@pytest.mark.parametrize("in_axes", [(0, None), (None, 1), (1, 0)])
def test_dot_general_vmap_of_grad_and_grad_of_vmap(in_axes):
    import jax.numpy as jjnp

    import minijax.numpy as jnp
    dims = (((1,), (0,)), ((), ()))
    a_shapes = {None: (3, 4), 0: (2, 3, 4), 1: (3, 2, 4)}
    b_shapes = {None: (4, 5), 0: (2, 4, 5), 1: (4, 2, 5)}
    a = _distinct(a_shapes[in_axes[0]], low=-1.0)
    b = _distinct(b_shapes[in_axes[1]], low=-1.0)

    def loss(lax_, np_):
        return lambda a, b: np_.tanh(lax_.dot_general(a, b, dims)).sum()

    ours = minijax.jit(minijax.vmap(minijax.grad(loss(lax, jnp), argnums=(0, 1)),
                                    in_axes=in_axes))(a, b)
    theirs = jax.vmap(jax.grad(loss(jax.lax, jjnp), argnums=(0, 1)), in_axes=in_axes)(a, b)
    for g, jg in zip(ours, theirs):
        _close(g, jg, rtol=1e-5, atol=1e-5)

    def total(lax_, np_, vmap):
        return lambda a, b: vmap(loss(lax_, np_), in_axes=in_axes)(a, b).sum()

    ours = minijax.grad(total(lax, jnp, minijax.vmap), argnums=(0, 1))(a, b)
    theirs = jax.grad(total(jax.lax, jjnp, jax.vmap), argnums=(0, 1))(a, b)
    for g, jg in zip(ours, theirs):
        _close(g, jg, rtol=1e-5, atol=1e-5)


def test_dot_general_vmap_of_vmap():
    # outer vmap over a's axis 2 and b's axis 1; inner over a's axis 0, b unmapped
    a, b = _distinct((2, 3, 4, 5), low=-1.0), _distinct((5, 4, 6), low=-1.0)
    dims = (((1,), (0,)), ((), ()))

    def f(v, lax_):
        inner = v(lambda a, b: lax_.dot_general(a, b, dims), in_axes=(0, None))
        return v(inner, in_axes=(2, 1))

    _close(f(minijax.vmap, lax)(a, b), f(jax.vmap, jax.lax)(a, b), rtol=1e-5, atol=1e-5)


# ---- sort ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dimension", [((5,), 0), ((3, 4), 0), ((3, 4), 1),
                                             ((2, 3, 4), 1)])
def test_sort_check_grads(shape, dimension):
    x = _distinct(shape)
    check_grads(lambda x: lax.sort(x, dimension), (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("num_keys", [1, 2])
def test_multi_operand_sort_check_grads_and_matches_jax(num_keys):
    k, k2, v = _distinct((3, 6)), _distinct((3, 6)), _distinct((3, 6), low=-1.0)
    check_grads(lambda k, k2, v: lax.sort((k, k2, v), 1, num_keys=num_keys), (k, k2, v),
                order=2, modes=("fwd", "rev"))
    k = np.round(k * 2) / 2  # ties in the first key: compare with jax only
    _jvp_vs_jax(lambda k, k2, v: lax.sort((k, k2, v), 1, num_keys=num_keys),
                lambda k, k2, v: jax.lax.sort((k, k2, v), 1, num_keys=num_keys), (k, k2, v))
    w = _distinct((3, 6))
    g = minijax.grad(lambda k, k2, v: (lax.sort((k, k2, v), 1, num_keys=num_keys)[2] * w).sum()
                     + lax.sort((k, k2, v), 1, num_keys=num_keys)[0].sum(),
                     argnums=(0, 1, 2))(k, k2, v)
    jg = jax.grad(lambda k, k2, v: (jax.lax.sort((k, k2, v), 1, num_keys=num_keys)[2] * w)
                  .sum() + jax.lax.sort((k, k2, v), 1, num_keys=num_keys)[0].sum(),
                  argnums=(0, 1, 2))(k, k2, v)
    for a, b in zip(g, jg):
        _close(a, b)


def test_sort_with_integer_keys_carries_float_values():
    keys = np.array([[3, 1, 2, 1], [0, 5, 4, 4]], np.int32)
    v = _distinct((2, 4))
    w = _distinct((2, 4))
    g = minijax.grad(lambda v: (lax.sort_key_val(keys, v, 1)[1] * w).sum())(v)
    jg = jax.grad(lambda v: (jax.lax.sort_key_val(keys, v, 1)[1] * w).sum())(v)
    _close(g, jg)
    out, t = minijax.jvp(lambda v: lax.sort((keys, v), 1), (v,), (w,))
    jout, jt = jax.jvp(lambda v: jax.lax.sort((keys, v), 1), (v,), (w,))
    assert t[0].dtype == jax.dtypes.float0
    _close(t[1], jt[1])


def test_sort_unstable_grad_matches_jax_without_ties():
    x = _distinct((4, 5))
    w = _distinct((4, 5))
    g = minijax.grad(lambda x: (lax.sort(x, 0, is_stable=False) * w).sum())(x)
    _close(g, jax.grad(lambda x: (jax.lax.sort(x, 0, is_stable=False) * w).sum())(x))


@pytest.mark.parametrize("in_axes,dimension,out_axes", [
    ((0, 0), 0, 0), ((1, None), 0, 1), ((None, 2), 1, -1), ((-1, 0), 1, 0)])
def test_sort_vmap_matches_jax(in_axes, dimension, out_axes):
    n = 3

    def batched(ax):
        if ax is None:
            return np.round(_distinct((4, 5)) * 3) / 3
        ax = ax % 3
        shape = [4, 5]
        shape.insert(ax, n)
        return np.round(_distinct(tuple(shape)) * 3) / 3

    k, v = batched(in_axes[0]), batched(in_axes[1])
    kw = {"in_axes": in_axes, "out_axes": out_axes}
    got = minijax.vmap(lambda k, v: lax.sort((k, v), dimension, num_keys=1), **kw)(k, v)
    want = jax.vmap(lambda k, v: jax.lax.sort((k, v), dimension, num_keys=1), **kw)(k, v)
    for a, b in zip(got, want):
        _close(a, b)


def test_vmap_of_sort_grad_matches_jax():
    x = _distinct((3, 4, 5))
    w = _distinct((3, 5))

    def loss(lax_):
        return lambda x: (lax_.sort(x, 0) * w).sum()

    got = minijax.jit(minijax.vmap(minijax.grad(loss(lax)), in_axes=1))(x)
    _close(got, jax.vmap(jax.grad(loss(jax.lax)), in_axes=1)(x))


# ---- cumulative ----------------------------------------------------------------------------

CUMS = [("cumsum", lax.cumsum, jax.lax.cumsum), ("cumprod", lax.cumprod, jax.lax.cumprod),
        ("cummax", lax.cummax, jax.lax.cummax), ("cummin", lax.cummin, jax.lax.cummin)]


@pytest.mark.parametrize("name,ours,_", CUMS, ids=[c[0] for c in CUMS])
@pytest.mark.parametrize("shape,axis,reverse", [((5,), 0, False), ((3, 6), 1, True),
                                                ((4, 3), 0, True), ((2, 7, 2), 1, False)])
def test_cumulative_check_grads(name, ours, _, shape, axis, reverse):
    x = _distinct(shape)
    check_grads(lambda x: ours(x, axis, reverse=reverse), (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name,ours,theirs", CUMS, ids=[c[0] for c in CUMS])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_jvp_and_grad_match_jax(name, ours, theirs, reverse):
    x = _distinct((3, 9), low=-1.0)
    _jvp_vs_jax(lambda x: ours(x, 1, reverse=reverse), lambda x: theirs(x, 1, reverse=reverse),
                (x,))
    w = _distinct((3, 9))
    g = minijax.jit(minijax.grad(lambda x: (ours(x, 1, reverse=reverse) * w).sum()))(x)
    _close(g, jax.jit(jax.grad(lambda x: (theirs(x, 1, reverse=reverse) * w).sum()))(x))


def test_cumprod_with_zeros_matches_jax():
    x = np.array([[2., 0., 3., 0.5, 4.], [0., 0., 2., 3., 1.], [1.5, 2., 3., -1., 0.]],
                 np.float32)
    for reverse in (False, True):
        f = lambda x: lax.cumprod(x, 1, reverse=reverse)
        jf = lambda x: jax.lax.cumprod(x, 1, reverse=reverse)
        _jvp_vs_jax(f, jf, (x,))
        w = _distinct((3, 5))
        _close(minijax.jit(minijax.grad(lambda x: (f(x) * w).sum()))(x),
               jax.jit(jax.grad(lambda x: (jf(x) * w).sum()))(x))
        h = minijax.jit(minijax.grad(
            lambda x: minijax.grad(lambda x: (f(x) * w).sum())(x)[1, 3]))(x)
        _close(h, jax.jit(jax.grad(
            lambda x: jax.grad(lambda x: (jf(x) * w).sum())(x)[1, 3]))(x))


def test_cummax_tangent_follows_the_chosen_element():
    x = np.array([1., 3., 2., 5., 4., 6.], np.float32)
    t = np.arange(1, 7, dtype=np.float32) * 10
    _, dt = minijax.jvp(lambda x: lax.cummax(x), (x,), (t,))
    _close(dt, np.array([10, 20, 20, 40, 40, 60], np.float32))
    _, dt = minijax.jvp(lambda x: lax.cummin(x, reverse=True), (x,), (t,))
    _close(dt, np.array([10, 30, 30, 50, 50, 60], np.float32))


@pytest.mark.parametrize("i", range(len(CUMS)))
@pytest.mark.parametrize("in_axis,axis,reverse,out_axis", [(1, 0, True, 1), (2, 1, False, 0),
                                                           (-1, 1, True, -1)])
def test_cumulative_vmap_matches_jax(i, in_axis, axis, reverse, out_axis):
    _, ours, theirs = CUMS[i]
    x = _distinct((2, 3, 4))
    kw = {"in_axes": in_axis, "out_axes": out_axis}
    got = minijax.vmap(lambda x: ours(x, axis, reverse=reverse), **kw)(x)
    _close(got, jax.vmap(lambda x: theirs(x, axis, reverse=reverse), **kw)(x), rtol=1e-5)


@pytest.mark.parametrize("i", range(len(CUMS)))
def test_cumulative_vmap_of_grad_and_jit_of_grad(i):
    _, ours, theirs = CUMS[i]
    x = _distinct((3, 6), low=-1.0)
    w = _distinct((6,))
    loss = lambda f: lambda x: (f(x, 0, reverse=True) * w).sum()
    got = minijax.vmap(minijax.jit(minijax.grad(loss(ours))))(x)
    _close(got, jax.jit(jax.vmap(jax.grad(loss(theirs))))(x), rtol=1e-5)


def test_jvp_under_vmap_and_vmap_of_vmap_for_reductions():
    x = _distinct((2, 3, 4, 5))
    t = _distinct((2, 3, 4, 5))

    def f(lax_):
        return lambda x: lax_.reduce_max(x, (1,)) + lax_.reduce_prod(x, (1,))

    got = minijax.vmap(minijax.vmap(lambda x, t: minijax.jvp(f(lax), (x,), (t,))[1]),
                       in_axes=3)(x, t)
    want = jax.vmap(jax.vmap(lambda x, t: jax.jvp(f(jax.lax), (x,), (t,))[1]),
                    in_axes=3)(x, t)
    _close(got, want, rtol=1e-5)
