"""jvp, transpose and batching rules of the shape and slicing primitives (lax level).

Each case is one primitive applied through the lax API that jax and minijax share, so the
same function runs on ``jax.lax`` and ``minijax.lax``: derivatives are compared with
``jax.jvp``/``jax.vjp`` and finite differences (``check_grads`` order 2, both modes);
batching with ``jax.vmap`` for several ``in_axes`` (batched and unbatched indices).
"""

import re
from typing import NamedTuple

import jax
import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.lax import slicing
from minijax.test_util import check_grads
from minijax.transforms.ad import UndefinedPrimal

RNG = np.random.default_rng(0)
B = 3  # vmap batch size


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _distinct(*shape):
    """Values well apart from each other (no ties in min/max/set)."""
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.37 + 0.5).reshape(shape).astype(np.float32)


class Idx(NamedTuple):
    """An integer argument; batched copies are drawn in ``[low, high)`` (or permuted)."""

    value: np.ndarray
    low: int
    high: int
    permute: bool = False  # keep the values distinct (unique_indices)

    def variant(self):
        if self.permute:
            return RNG.permutation(self.value)
        return RNG.integers(self.low, self.high, np.shape(self.value)).astype(self.value.dtype)


def _i(v, low, high, permute=False):
    return Idx(np.asarray(v, np.int32), low, high, permute)


def _gdn(L, offset, collapsed, start_map, obd=(), sibd=()):
    return L.GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=collapsed,
                                    start_index_map=start_map, operand_batching_dims=obd,
                                    start_indices_batching_dims=sibd)


def _sdn(L, window, inserted, to_operand, obd=(), sibd=()):
    return L.ScatterDimensionNumbers(update_window_dims=window, inserted_window_dims=inserted,
                                     scatter_dims_to_operand_dims=to_operand,
                                     operand_batching_dims=obd,
                                     scatter_indices_batching_dims=sibd)


def _scatter(name, **kw):
    def f(L, x, i, u):
        dn = _sdn(L, (1,), (0,), (0,))
        return getattr(L, name)(x, i, u, dn, **kw)
    return f


# name -> (fn(L, *args), args); Idx args are integer (non-differentiable) operands.
CASES = {
    "broadcast_in_dim": (lambda L, x: L.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
                         (_rand(3, 1),)),
    "broadcast_in_dim_scalar": (lambda L, x: L.broadcast_in_dim(x, (4, 3), ()), (_rand(),)),
    "broadcast_in_dim_mid": (lambda L, x: L.broadcast_in_dim(x, (2, 5, 3, 4), (0, 3)),
                             (_rand(2, 4),)),
    "reshape": (lambda L, x: L.reshape(x, (6, 4)), (_rand(2, 3, 4),)),
    "reshape_split": (lambda L, x: L.reshape(x, (2, 3, 2, 2)), (_rand(6, 4),)),
    "reshape_dimensions": (lambda L, x: L.reshape(x, (4, 6), (2, 0, 1)), (_rand(2, 3, 4),)),
    "transpose": (lambda L, x: L.transpose(x, (2, 0, 1)), (_rand(2, 3, 4),)),
    "squeeze": (lambda L, x: L.squeeze(x, (1, 3)), (_rand(2, 1, 3, 1),)),
    "concatenate": (lambda L, a, b, c: L.concatenate([a, b, c], 0),
                    (_rand(2, 3), _rand(4, 3), _rand(1, 3))),
    "concatenate_1": (lambda L, a, b: L.concatenate([a, b], 1), (_rand(2, 3), _rand(2, 1))),
    "pad": (lambda L, x, v: L.pad(x, v, ((1, 2, 0), (-1, 1, 2))), (_rand(3, 4), _rand())),
    "pad_negative": (lambda L, x, v: L.pad(x, v, ((-2, 1, 1), (0, -3, 0))),
                     (_rand(4, 5), _rand())),
    "rev": (lambda L, x: L.rev(x, (0, 2)), (_rand(2, 3, 4),)),
    "slice": (lambda L, x: L.slice(x, (1, 0), (5, 7), (2, 3)), (_rand(5, 7),)),
    "slice_unit": (lambda L, x: L.slice(x, (1, 2), (3, 5)), (_rand(4, 6),)),
    "dynamic_slice": (lambda L, x, i, j: L.dynamic_slice(x, (i, j), (2, 3)),
                      (_rand(5, 6), _i(1, 0, 5), _i(2, -3, 6))),
    "dynamic_slice_clamped": (lambda L, x, i: L.dynamic_slice(x, (i, np.int32(1)), (3, 4)),
                              (_rand(5, 6), _i(4, 0, 8))),
    "dynamic_update_slice": (lambda L, x, u, i, j: L.dynamic_update_slice(x, u, (i, j)),
                             (_rand(5, 6), _rand(2, 3), _i(1, 0, 5), _i(5, 0, 6))),
    "gather_rows": (lambda L, x, i: L.gather(x, i, _gdn(L, (1,), (0,), (0,)), (1, 4),
                                             mode="clip"),
                    (_rand(5, 4), _i([[3], [0], [3]], 0, 5))),
    "gather_fill": (lambda L, x, i: L.gather(x, i, _gdn(L, (1,), (0,), (0,)), (1, 4),
                                             mode="fill", fill_value=0.5),
                    (_rand(5, 4), _i([[3], [7], [-1], [1]], -2, 7))),
    "gather_windows": (lambda L, x, i: L.gather(x, i, _gdn(L, (0, 2), (), (0, 1)), (2, 3),
                                                mode="clip"),
                       (_rand(5, 6), _i([[0, 1], [3, 3]], 0, 5))),
    "gather_batching_dims": (lambda L, x, i: L.gather(
        x, i, _gdn(L, (), (1,), (1,), (0,), (0,)), (1, 1), mode="clip"),
        (_rand(3, 5), _i([[[1], [4]], [[0], [0]], [[2], [3]]], 0, 5))),
    "scatter_add": (_scatter("scatter_add"),
                    (_rand(5, 4), _i([[3], [0], [3]], 0, 5), _rand(3, 4))),
    "scatter_add_drop": (_scatter("scatter_add", mode="drop"),
                         (_rand(5, 4), _i([[3], [9], [1]], 0, 7), _rand(3, 4))),
    "scatter_unique": (_scatter("scatter", unique_indices=True),
                       (_rand(5, 4), _i([[3], [0], [1]], 0, 5, permute=True), _rand(3, 4))),
    "scatter_repeated": (_scatter("scatter"),
                         (_rand(5, 4), _i([[3], [0], [0]], 0, 5, permute=True),
                          _rand(3, 4))),
    "scatter_mul_unique": (_scatter("scatter_mul", unique_indices=True),
                           (_rand(5, 4), _i([[3], [0], [1]], 0, 5, permute=True),
                            _rand(3, 4))),
    "scatter_mul": (_scatter("scatter_mul"),
                    (_rand(5, 4), _i([[3], [0], [3]], 0, 5), _rand(3, 4))),
    "scatter_min": (_scatter("scatter_min"),
                    (_distinct(5, 4), _i([[3], [0], [3]], 0, 5), _distinct(3, 4) + 0.1)),
    "scatter_max": (_scatter("scatter_max"),
                    (_distinct(5, 4), _i([[3], [0], [3]], 0, 5), _distinct(3, 4) + 0.1)),
}
# jax raises for these gradients (scatter-mul with repeated indices); checked numerically.
NO_JAX_GRAD = {"scatter_mul"}


def _split(args):
    """Float args, and a function rebuilding all args from them."""
    float_pos = [k for k, a in enumerate(args) if not isinstance(a, Idx)]

    def merge(fargs):
        full = [a.value if isinstance(a, Idx) else a for a in args]
        for k, v in zip(float_pos, fargs):
            full[k] = v
        return full
    return [args[k] for k in float_pos], merge


def _close(got, want, rtol=2e-5, atol=2e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_and_vjp_match_jax(name):
    fn, args = CASES[name]
    fargs, merge = _split(args)
    ours = lambda *xs: fn(lax, *merge(xs))  # noqa: E731
    theirs = lambda *xs: fn(jax.lax, *merge(xs))  # noqa: E731
    tangents = [_rand(*np.shape(a)) for a in fargs]
    out, t = minijax.jvp(ours, fargs, tangents)
    if name in NO_JAX_GRAD:
        with pytest.raises(NotImplementedError):
            jax.jvp(theirs, fargs, tangents)
        return
    jout, jt = jax.jit(lambda xs, ts: jax.jvp(theirs, xs, ts))(fargs, tangents)
    _close(out, jout)
    _close(t, jt, rtol=1e-4, atol=1e-5)
    ct = _rand(*np.shape(jout))
    cts = minijax.vjp(ours, *fargs)[1](ct)
    jcts = jax.jit(lambda xs, ct: jax.vjp(theirs, *xs)[1](ct))(fargs, ct)
    for c, jc in zip(cts, jcts):
        _close(c, jc, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_grads(name):
    fn, args = CASES[name]
    fargs, merge = _split(args)
    check_grads(lambda *xs: fn(lax, *merge(xs)), fargs, order=2)


def _batched(arg, axis):
    """``B`` versions of ``arg`` stacked along ``axis`` (None: ``arg`` itself)."""
    if axis is None:
        return arg.value if isinstance(arg, Idx) else arg
    if isinstance(arg, Idx):
        return np.stack([arg.value] + [arg.variant() for _ in range(B - 1)], axis)
    return np.stack([arg] + [_rand(*np.shape(arg)) for _ in range(B - 1)], axis)


def _in_axes_variants(args):
    """All batched at 0; all at -1; and each argument batched alone (others None)."""
    n = len(args)
    out = [(0,) * n, (-1,) * n]
    for k in range(n):
        out.append(tuple(1 if j == k and np.ndim(_value(args[k])) >= 1 else 0 if j == k
                         else None for j in range(n)))
    return out


def _value(a):
    return a.value if isinstance(a, Idx) else a


def _vmap_check(fn, args, in_axes, out_axes=0):
    batched = [_batched(a, ax) for a, ax in zip(args, in_axes)]
    ours = minijax.vmap(lambda *xs: fn(lax, *xs), in_axes=in_axes, out_axes=out_axes)(*batched)
    # (the reference under jit: much faster than jax's op-by-op dispatch)
    theirs = jax.jit(jax.vmap(lambda *xs: fn(jax.lax, *xs), in_axes=in_axes,
                              out_axes=out_axes))(*batched)
    _close(ours, theirs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_matches_jax(name):
    fn, args = CASES[name]
    for in_axes in _in_axes_variants(args):
        _vmap_check(fn, args, in_axes)


@pytest.mark.parametrize("name", ["gather_rows", "scatter_add", "dynamic_slice", "pad",
                                  "concatenate", "reshape_dimensions"])
def test_vmap_out_axes_and_nested(name):
    fn, args = CASES[name]
    n = len(args)
    _vmap_check(fn, args, (1,) + (0,) * (n - 1), out_axes=-1)
    if n > 1:
        _vmap_check(fn, args, (None,) + (0,) * (n - 1), out_axes=1)
    # vmap of vmap over two batch axes of every argument (axis 1 outside, axis 0 inside).
    xs = [np.stack([_batched(a, 0) for _ in range(2)], 1) for a in args]

    def run(L, vm):
        return vm(vm(lambda *ys: fn(L, *ys)), in_axes=1)(*xs)
    _close(run(lax, minijax.vmap), run(jax.lax, jax.vmap))


def _eqn_names(jaxpr) -> list[str]:
    return re.findall(r"= ([\w-]+)", str(jaxpr))


@pytest.mark.parametrize("name,in_axes", [
    ("broadcast_in_dim", (1,)), ("broadcast_in_dim_mid", (1,)), ("broadcast_in_dim_scalar", (0,)),
    ("reshape", (2,)), ("reshape_split", (1,)), ("reshape_split", (2,)), ("squeeze", (2,)),
    ("rev", (1,)),
    ("pad", (1, None)), ("slice", (1,)), ("transpose", (1,)),
    ("concatenate", (1, None, 1)), ("gather_rows", (1, None)), ("gather_rows", (None, 1)),
    ("gather_rows", (1, 1)), ("gather_batching_dims", (2, 1)), ("scatter_add", (1, None, 1)),
    ("scatter_add", (1, 1, 1)), ("dynamic_slice", (1, None, None)),
    ("dynamic_update_slice", (1, 1, None, None)),
])
def test_batching_keeps_the_batch_dim_in_place(name, in_axes):
    """The batch dimension is folded into the op: no transpose of the batched operands."""
    fn, args = CASES[name]
    batched = [_batched(a, ax) for a, ax in zip(args, in_axes)]
    jaxpr = minijax.make_jaxpr(minijax.vmap(lambda *xs: fn(lax, *xs), in_axes=in_axes))(*batched)
    unbatched = _eqn_names(minijax.make_jaxpr(lambda *xs: fn(lax, *xs))(*(
        _batched(a, None) for a in args)))
    # (out_axes=0 may move the batch dimension with a transpose at the very end)
    assert _eqn_names(jaxpr)[:-1].count("transpose") == unbatched.count("transpose"), str(jaxpr)
    _vmap_check(fn, args, in_axes)


@pytest.mark.parametrize("name,prim", [("dynamic_slice", "gather"),
                                       ("dynamic_update_slice", "scatter")])
def test_batched_start_indices_become_gather_and_scatter(name, prim):
    fn, args = CASES[name]
    in_axes = tuple(0 if isinstance(a, Idx) else None for a in args)
    batched = [_batched(a, ax) for a, ax in zip(args, in_axes)]
    jaxpr = minijax.make_jaxpr(minijax.vmap(lambda *xs: fn(lax, *xs), in_axes=in_axes))(*batched)
    assert prim in _eqn_names(jaxpr)
    _vmap_check(fn, args, in_axes)


def _norm(text: str) -> str:
    return re.sub(r"np\.int64\((-?\d+)\)", r"\1", text)


@pytest.mark.parametrize("name", ["rev", "slice", "transpose", "squeeze", "pad", "concatenate",
                                  "reshape", "broadcast_in_dim"])
def test_jvp_jaxpr_matches_jax(name):
    fn, args = CASES[name]

    def build(L, api):
        def f(*xs):
            return api.jvp(lambda *ys: fn(L, *ys), xs[:len(args)], xs[len(args):])
        return f
    both = list(args) + [_rand(*np.shape(a)) for a in args]
    ours = str(minijax.make_jaxpr(build(lax, minijax))(*both))
    theirs = _norm(str(jax.make_jaxpr(build(jax.lax, jax))(*both)))
    assert ours == theirs


def _gather_rev_sum(L):
    i = np.array([[3], [0], [3]], np.int32)

    def g(x):
        y = L.rev(L.gather(x, i, _gdn(L, (1,), (0,), (0,)), (1, 4), mode="clip"), (0,))
        return L.reduce_sum(L.mul(y, y), (0, 1))
    return g


def test_compositions_with_jit_grad_and_vmap():
    xb = _rand(B, 5, 4)
    ours, theirs = _gather_rev_sum(lax), _gather_rev_sum(jax.lax)
    _close(minijax.jit(minijax.grad(ours))(xb[0]), jax.jit(jax.grad(theirs))(xb[0]))
    _close(minijax.jit(minijax.vmap(minijax.grad(ours)))(xb),
           jax.jit(jax.vmap(jax.grad(theirs)))(xb))
    _close(minijax.grad(lambda v: lax.reduce_sum(minijax.vmap(ours)(v), (0,)))(xb),
           jax.grad(lambda v: jax.vmap(theirs)(v).sum())(xb))
    _close(minijax.vmap(minijax.vmap(minijax.grad(ours)), in_axes=1)(xb[:, None]),
           jax.vmap(jax.vmap(jax.grad(theirs)), in_axes=1)(xb[:, None]))


def test_integer_operands_get_zero_tangents():
    x = np.arange(20, dtype=np.int32).reshape(5, 4)
    i = np.array([[3], [0]], np.int32)
    f = lambda x: lax.gather(x, i, _gdn(lax, (1,), (0,), (0,)), (1, 4), mode="clip")  # noqa: E731
    out, t = minijax.jvp(f, (x,), (np.zeros(x.shape, jax.dtypes.float0),))
    assert t.dtype == jax.dtypes.float0 and t.shape == (2, 4)
    _close(out, x[[3, 0]])


def test_iota_has_no_tangent_and_batches():
    f = lambda x: lax.iota(np.float32, 4) * x  # noqa: E731
    _, t = minijax.jvp(f, (np.float32(2.0),), (np.float32(1.0),))
    _close(t, np.arange(4, dtype=np.float32))
    _close(minijax.vmap(f)(np.arange(3, dtype=np.float32)),
           jax.vmap(lambda x: jax.lax.iota(np.float32, 4) * x)(np.arange(3, dtype=np.float32)))


@pytest.mark.parametrize("cfg", [((1, 2, 1), (0, 0, 0)), ((-1, 0, 2), (2, -2, 0))])
def test_pad_grad_of_padding_value(cfg):
    x, v = _rand(3, 4), np.float32(0.3)
    w = _rand(*jax.eval_shape(lambda: jax.lax.pad(x, v, cfg)).shape)
    g = minijax.grad(lambda x, v: _sum(lax.pad(x, v, cfg) * w), argnums=(0, 1))(x, v)
    jg = jax.jit(jax.grad(lambda x, v: (jax.lax.pad(x, v, cfg) * w).sum(), argnums=(0, 1)))(x, v)
    _close(g[0], jg[0])
    _close(g[1], jg[1], rtol=1e-5)


def _sum(y):
    return lax.reduce_sum(y, tuple(range(y.ndim)))


def test_scatter_transpose_needs_unique_indices():
    x, i, u = _rand(5, 4), np.array([[1], [1]], np.int32), _rand(2, 4)
    dn = _sdn(lax, (1,), (0,), (0,))
    out = lax.scatter(x, i, u, dn)
    params = dict(dimension_numbers=dn, indices_are_sorted=False,
                  mode=lax.GatherScatterMode.FILL_OR_DROP, unique_indices=False,
                  update_consts=(), update_jaxpr=None)
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        slicing.scatter_p.transpose(out, UndefinedPrimal(minijax.ShapedArray((5, 4), np.float32)),
                                    i, u, **params)
    # grad still works with repeated indices (the jvp only emits scatter-add).
    g = minijax.grad(lambda x, u: _sum(lax.scatter(x, i, u, dn) ** 2), argnums=(0, 1))(x, u)
    jg = jax.jit(jax.grad(lambda x, u: (jax.lax.scatter(x, i, u, _sdn(jax.lax, (1,), (0,), (0,)))
                                        ** 2).sum(), argnums=(0, 1)))(x, u)
    _close(g[0], jg[0])
    _close(g[1], jg[1])


def test_scatter_mul_with_zero_updates():
    """Product rule with repeated indices and zeros among the updates (no division by 0).

    (Higher derivatives are exact only where no two updates of an element are zero.)
    """
    x = _rand(4, 3)
    i = np.array([[1], [1], [1], [2]], np.int32)
    u = np.array([[0.0, 2.0, 0.0], [3.0, 0.0, 0.0], [0.5, 1.5, 2.0], [2.0, 0.0, 1.0]],
                 np.float32)
    dn = _sdn(lax, (1,), (0,), (0,))
    f = lambda u: lax.scatter_mul(x, i, u, dn)  # noqa: E731
    t = _rand(4, 3)
    _, got = minijax.jvp(f, (u,), (t,))
    want = np.zeros((4, 3), np.float32)
    for j in range(3):  # d/du_k prod_l u_l = prod_{l != k} u_l
        for k in range(3):
            want[1, j] += x[1, j] * t[k, j] * np.prod([u[m, j] for m in range(3) if m != k])
        want[2, j] = x[2, j] * t[3, j]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    check_grads(f, (u,), order=1)
