"""Autodiff and batching of control flow (cond/switch, while_loop/fori_loop, scan) vs jax.

jvp, grad/vjp (also against finite differences with check_grads), compositions with jit and
vmap, batched predicates (cond becomes a select, while runs until every element is done),
the reverse-mode error of while loops, residual handling and metadata of derived equations.
"""

import re

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax import lax as jlax

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.experimental.xla_metadata import set_xla_metadata
from minijax.test_util import check_grads

RNG = np.random.default_rng(0)
WHILE_MSG = "Reverse-mode differentiation does not work for lax.while_loop"


def _f32(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def _close(ours, theirs, tol=1e-5):
    """Same pytree, shapes, dtypes and (to float32 tolerance) values."""
    ol = minijax.tree_util.tree_leaves(ours)
    tl = jax.tree_util.tree_leaves(theirs)
    assert len(ol) == len(tl)
    for o, t in zip(ol, tl):
        assert o.shape == t.shape
        assert np.dtype(o.dtype) == np.dtype(t.dtype)
        if t.dtype == jax.dtypes.float0:
            continue
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=tol, atol=tol)


def _ct_like(out):
    return jax.tree_util.tree_map(
        lambda o: RNG.standard_normal(np.shape(o)).astype(np.asarray(o).dtype), out)


def _vjp_vs_jax(make, args, mode="jit"):
    """minijax.vjp of make(lax, jnp) against jax.vjp of make(jax.lax, jax.numpy).

    mode: "eager" (op by op), "jit" (vjp and pullback traced together under jit), or
    "inner" (vjp of a jitted function: the jit primitive's partial evaluation).
    """
    ours_f, theirs_f = make(lax, jnp), make(jlax, jjnp)
    jout, jpull = jax.vjp(theirs_f, *args)
    ct = _ct_like(jout)
    if mode == "jit":
        def both(args, ct):
            out, pull = minijax.vjp(ours_f, *args)
            return out, pull(ct)
        out, got = minijax.jit(both)(args, ct)
    else:
        out, pull = minijax.vjp(minijax.jit(ours_f) if mode == "inner" else ours_f, *args)
        got = pull(ct)
    _close(out, jout)
    _close(got, jpull(ct))


def _jvp_vs_jax(make, args, jit=True):
    """minijax.jvp (under jit unless told) against jax.jvp."""
    tangents = tuple(jax.tree_util.tree_map(
        lambda a: RNG.standard_normal(np.shape(a)).astype(np.asarray(a).dtype), args))
    jvp = lambda a, t: minijax.jvp(make(lax, jnp), a, t)
    _close((minijax.jit(jvp) if jit else jvp)(args, tangents),
           jax.jvp(make(jlax, jjnp), args, tangents))


# ---- cond / switch ---------------------------------------------------------------------------

def _cond_fn(L, np_):
    def f(p, x, y):
        # Branches close over y and differ in what they keep as residuals.
        return L.cond(p > 0, lambda x: np_.sin(x) * y, lambda x: x * x + y * 3.0, x)
    return f


@pytest.mark.parametrize("p,mode", [(1.0, "eager"), (-1.0, "inner")])
def test_cond_jvp_grad_and_jit_compositions(p, mode):
    x, y = _f32(3), np.float32(0.7)
    p = np.float32(p)
    make = lambda L, n: lambda x, y: _cond_fn(L, n)(p, x, y)
    _jvp_vs_jax(make, (x, y))
    _vjp_vs_jax(make, (x, y), mode)
    _vjp_vs_jax(make, (x, y), "jit")
    check_grads(minijax.jit(make(lax, jnp)), (x, y), order=2)


def test_cond_grad_with_traced_predicate():
    # Under jit the predicate is traced: a real cond whose index the linear part reuses.
    x, y = np.float32(0.4), np.float32(0.7)
    g = minijax.jit(minijax.grad(_cond_fn(lax, jnp), (1, 2)))
    for p in (1.0, -1.0):
        _close(g(np.float32(p), x, y),
               jax.grad(_cond_fn(jlax, jjnp), (1, 2))(np.float32(p), x, y))


def _switch_fn(L, np_):
    def f(i, x, w, k):
        branches = [
            lambda x, k: (x * w, k + 1),                 # closes over w
            lambda x, k: (np_.exp(x) - w * w, k * 2),     # other residuals
            lambda x, k: (x + 1.0, k),                    # no w: zero tangent to instantiate
        ]
        return L.switch(i, branches, x, k)
    return f


def test_switch_with_closures_and_integer_operands():
    x, w, k = _f32(2, 3), np.float32(1.3), np.int32(4)

    def run(L, n, vjp, jvp):
        def both(i, x, w, tx, tw, ct):
            f = lambda x, w: _switch_fn(L, n)(i, x, w, k)
            (out, m), (t, _) = jvp(f, (x, w), (tx, tw))
            _, pull = vjp(lambda x, w: f(x, w)[0], x, w)
            return out, m, t, pull(ct)
        return both

    # One compilation each: the index is traced.
    ours = minijax.jit(run(lax, jnp, minijax.vjp, minijax.jvp))
    theirs = jax.jit(run(jlax, jjnp, jax.vjp, jax.jvp))
    tx, tw, ct = _f32(2, 3), np.float32(-0.5), _f32(2, 3)
    for i in (0, 1, 2, 7, -1):
        args = (np.int32(i), x, w, tx, tw, ct)
        _close(ours(*args), theirs(*args))
    # Eagerly, the integer output rides along with a float0 tangent.
    out, t = minijax.jvp(lambda x: _switch_fn(lax, jnp)(1, x, w, k), (x,), (x,))
    assert int(out[1]) == 8 and t[1].dtype == jax.dtypes.float0
    _vjp_vs_jax(lambda L, n: lambda x, w: _switch_fn(L, n)(2, x, w, k)[0], (x, w), "eager")
    check_grads(minijax.jit(lambda x, w: _switch_fn(lax, jnp)(1, x, w, k)[0]), (x, w), order=1)


def test_cond_partial_eval_splits_known_and_linear_parts():
    # grad's jaxpr: a known cond computing outputs and residuals, and a transposed cond
    # consuming them (the index is a non-linear operand of both).
    f = lambda p, x: lax.cond(p > 0, lambda x: jnp.sin(x), lambda x: jnp.cos(x) * x, x)
    jaxpr = minijax.make_jaxpr(minijax.grad(f, 1))(np.float32(1), np.float32(0.3))
    conds = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "cond"]
    assert len(conds) == 2
    known, transposed = conds
    assert known.invars[0] is transposed.invars[0]
    n_res = len(known.outvars) - 1
    assert n_res >= 1
    assert all(v in transposed.invars for v in known.outvars[1:])
    for p in (1.0, -1.0):
        _close(minijax.grad(f, 1)(np.float32(p), np.float32(0.3)),
               jax.grad(lambda p, x: jlax.cond(p > 0, jjnp.sin, lambda x: jjnp.cos(x) * x, x),
                        1)(np.float32(p), np.float32(0.3)))


@pytest.mark.parametrize("in_axes", [(0, 0, None), (0, None, 0), (None, 1, 0), (0, -1, None)])
def test_cond_vmap(in_axes):
    p = np.array([1.0, -2.0, 3.0, -0.5], np.float32)
    x, y = _f32(4, 4), _f32(4)
    args = [p if in_axes[0] is not None else np.float32(-1.0), x,
            y if in_axes[2] is not None else np.float32(0.5)]
    theirs = jax.jit(jax.vmap(_cond_fn(jlax, jjnp), in_axes))(*args)
    _close(minijax.jit(minijax.vmap(_cond_fn(lax, jnp), in_axes))(*args), theirs)
    if in_axes == (0, 0, None):  # eagerly too (op by op) once
        _close(minijax.vmap(_cond_fn(lax, jnp), in_axes)(*args), theirs)


def test_switch_vmap_batched_index_and_out_axes():
    idx = np.array([0, 2, 1, 5, -1], np.int32)
    x = _f32(5, 3)

    def make(L, n):
        return lambda i, x: _switch_fn(L, n)(i, x, np.float32(0.9), np.int32(3))
    for out_axes in (0, 1, -1):
        _close(minijax.jit(minijax.vmap(make(lax, jnp), out_axes=(out_axes, 0)))(idx, x),
               jax.jit(jax.vmap(make(jlax, jjnp), out_axes=(out_axes, 0)))(idx, x))


def test_cond_batched_predicate_lowers_to_select():
    f = _cond_fn(lax, jnp)
    p, x = np.array([1.0, -1.0], np.float32), _f32(2, 3)
    text = minijax.jit(minijax.vmap(f, (0, 0, None))).lower(p, x, np.float32(2)).as_text()
    assert "stablehlo.select" in text
    assert "stablehlo.case" not in text
    # An unbatched predicate keeps the cond.
    text = minijax.jit(minijax.vmap(f, (None, 0, None))).lower(np.float32(1), x,
                                                                 np.float32(2)).as_text()
    assert "stablehlo.case" in text


def test_cond_vmap_of_grad_and_jvp():
    p, x = np.array([1.0, -1.0, 2.0], np.float32), _f32(3)

    def make(L, n):
        return lambda p, x: _cond_fn(L, n)(p, x, np.float32(1.5))
    _close(minijax.vmap(minijax.grad(make(lax, jnp), 1))(p, x),
           jax.vmap(jax.grad(make(jlax, jjnp), 1))(p, x))
    t = _f32(3)
    _close(minijax.vmap(lambda p, x, t: minijax.jvp(lambda x: make(lax, jnp)(p, x), (x,),
                                                    (t,)))(p, x, t),
           jax.vmap(lambda p, x, t: jax.jvp(lambda x: make(jlax, jjnp)(p, x), (x,),
                                            (t,)))(p, x, t))


def test_cond_grad_of_vmap_batched_predicate():
    # Untaken branches get no cotangent (sqrt at a negative number would make it NaN).
    p, x = np.array([1.0, -1.0, 2.0], np.float32), np.array([4.0, -1.0, 9.0], np.float32)

    def make(L, n):
        def f(x):
            ys = jax.vmap if L is jlax else minijax.vmap
            return ys(lambda p, x: L.cond(p > 0, n.sqrt, lambda x: x * 2.0, x))(p, x)
        return f
    _vjp_vs_jax(make, (x,))
    ct_x = minijax.vjp(make(lax, jnp), x)[1](np.ones(3, np.float32))[0]
    assert np.all(np.isfinite(np.asarray(ct_x)))


# ---- while_loop / fori_loop ------------------------------------------------------------------

def _while_fn(L, np_):
    def f(x, w, n):
        def body(c):
            i, v, acc = c
            return i + 1, np_.sin(v * w) + x, acc + v * v
        return L.while_loop(lambda c: c[0] < n, body, (0, x, x * 0.0))
    return f


def test_while_loop_jvp():
    x, w = _f32(3), np.float32(0.8)
    _jvp_vs_jax(lambda L, np_: lambda x, w: _while_fn(L, np_)(x, w, 2), (x, w), jit=False)
    # Under jit the trip count is traced. (Float carries only: jit cannot return the float0
    # tangent of the integer counter.)
    ours = minijax.jit(lambda x, w, n, tx, tw: minijax.jvp(
        lambda x, w: _while_fn(lax, jnp)(x, w, n)[1:], (x, w), (tx, tw)))
    ts = (_f32(3), np.float32(1.0))
    for n in (0, 1, 4):
        _close(ours(x, w, np.int32(n), *ts),
               jax.jvp(lambda x, w: _while_fn(jlax, jjnp)(x, w, n)[1:], (x, w), ts))
    check_grads(minijax.jit(lambda x, w: _while_fn(lax, jnp)(x, w, 3)[1:]), (x, w), order=2,
                modes=("fwd",))


def test_while_loop_jvp_tangent_only_through_consts():
    # The initial carry has no tangent; the body's closed-over x gives the carry one.
    x = np.float32(0.6)
    make = lambda L, np_: lambda x: L.while_loop(lambda c: c < 5.0, lambda c: c + x * x, 0.0)
    _jvp_vs_jax(make, (x,))


def test_while_loop_reverse_mode_raises():
    f = lambda x: _while_fn(lax, jnp)(x, np.float32(0.5), 3)[1]
    x = np.float32(0.3)
    with pytest.raises(ValueError, match=WHILE_MSG):
        minijax.grad(f)(x)
    with pytest.raises(ValueError, match="Use lax.scan, or lax.fori_loop with static"):
        minijax.jit(minijax.grad(f))(x)
    with pytest.raises(ValueError, match=WHILE_MSG):
        minijax.grad(minijax.jit(f))(x)
    # as jax: vjp itself linearizes (the loop runs whole on the linear side); calling the
    # vjp function transposes it, which raises
    out, f_vjp = minijax.vjp(lambda x: _while_fn(lax, jnp)(x, np.float32(0.5), 2)[1], _f32(3))
    with pytest.raises(ValueError, match=WHILE_MSG):
        f_vjp(np.ones_like(out))
    # linearize and jvp through the loop work, with jax's values
    h = lambda L, np_: lambda x: _while_fn(L, np_)(x, np.float32(0.5), 3)[1]
    y, lin = minijax.linearize(h(lax, jnp), np.float32(0.3))
    jy, jlin = jax.linearize(h(jlax, jjnp), np.float32(0.3))
    _close(y, jy)
    _close(lin(np.float32(1.5)), jlin(np.float32(1.5)))
    _close(minijax.jit(lin)(np.float32(-2.0)), jlin(np.float32(-2.0)))
    # A loop the differentiated value does not reach is fine.
    g = lambda L, np_: lambda x: x * _while_fn(L, np_)(np.float32(1), np.float32(0.5), 2)[1]
    _close(minijax.grad(g(lax, jnp))(np.float32(2)), jax.grad(g(jlax, jjnp))(np.float32(2)))


def _fori_fn(L, np_):
    def f(x, w, lo, hi):
        return L.fori_loop(lo, hi, lambda i, c: np_.sin(c * w) + i * 0.1, x)
    return f


def test_fori_loop_static_bounds_grad():
    x, w = _f32(4), np.float32(1.2)
    make = lambda L, np_: lambda x, w: _fori_fn(L, np_)(x, w, 1, 5)
    _vjp_vs_jax(make, (x, w), "eager")
    _vjp_vs_jax(make, (x, w), "inner")
    scalar = lambda L, np_: lambda x, w: _fori_fn(L, np_)(x, w, 1, 5)
    _close(minijax.grad(scalar(lax, jnp), (0, 1))(np.float32(0.3), w),
           jax.grad(scalar(jlax, jjnp), (0, 1))(np.float32(0.3), w))
    check_grads(minijax.jit(make(lax, jnp)), (x, w), order=2)


def test_fori_loop_dynamic_bounds_forward_only():
    x, w = _f32(4), np.float32(1.2)
    ours = minijax.jit(lambda x, w, hi: minijax.jvp(
        lambda x, w: _fori_fn(lax, jnp)(x, w, 0, hi), (x, w), (x, np.float32(1))))
    theirs = jax.jit(lambda x, w, hi: jax.jvp(
        lambda x, w: _fori_fn(jlax, jjnp)(x, w, 0, hi), (x, w), (x, np.float32(1))))
    _close(ours(x, w, np.int32(3)), theirs(x, w, np.int32(3)))
    g = minijax.jit(minijax.grad(lambda w, hi: _fori_fn(lax, jnp)(np.float32(0.3), w, 0, hi)))
    with pytest.raises(ValueError, match=WHILE_MSG):
        g(w, np.int32(3))


@pytest.mark.parametrize("in_axes", [(0, None, 0), (None, None, 0), (0, 0, None), (1, 0, 0)])
def test_while_loop_vmap(in_axes):
    # A batched n makes the predicate batched: finished elements must stop changing.
    x = _f32(4, 4) if in_axes[0] is not None else _f32(4)
    w = np.array([0.5, 1.0, 1.5, -1.0], np.float32) if in_axes[1] is not None else np.float32(0.7)
    n = np.array([0, 3, 1, 5], np.int32) if in_axes[2] is not None else np.int32(2)
    theirs = jax.jit(jax.vmap(_while_fn(jlax, jjnp), in_axes))(x, w, n)
    _close(minijax.jit(minijax.vmap(_while_fn(lax, jnp), in_axes))(x, w, n), theirs)
    if in_axes == (0, None, 0):  # eagerly too (op by op) once
        _close(minijax.vmap(_while_fn(lax, jnp), in_axes)(x, w, n), theirs)


def test_while_loop_vmap_batched_predicate_runs_each_lane_its_own_trips():
    n = np.array([0, 1, 4], np.int32)
    loop = lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0),
                                    (0, 1.0))
    out = minijax.vmap(loop)(n)
    np.testing.assert_array_equal(np.asarray(out[0]), n)
    np.testing.assert_array_equal(np.asarray(out[1]), 2.0 ** n)
    text = minijax.jit(minijax.vmap(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0))).lower(
        n).as_text()
    assert "stablehlo.while" in text and "stablehlo.select" in text


def test_while_loop_vmap_of_jvp_and_jvp_of_vmap():
    x, w, n = _f32(3), np.array([0.5, 1.0, 1.5], np.float32), np.array([1, 3, 2], np.int32)
    t = _f32(3)

    def ours(x, w, n, t):
        return minijax.jvp(lambda x: _while_fn(lax, jnp)(x, w, n)[1], (x,), (t,))

    def theirs(x, w, n, t):
        return jax.jvp(lambda x: _while_fn(jlax, jjnp)(x, w, n)[1], (x,), (t,))
    _close(minijax.vmap(ours)(x, w, n, t), jax.vmap(theirs)(x, w, n, t))
    _close(minijax.jvp(lambda x: minijax.vmap(_while_fn(lax, jnp))(x, w, n)[1], (x,), (t,)),
           jax.jvp(lambda x: jax.vmap(_while_fn(jlax, jjnp))(x, w, n)[1], (x,), (t,)))


# ---- scan ------------------------------------------------------------------------------------

def _scan_fn(L, np_, reverse=False, unroll=1):
    def f(c0, xs, w):
        def body(c, x):
            a, b = c
            na = np_.sin(a * w["k"] + x["u"])
            nb = b * x["v"] + na * w["m"]
            return (na, nb), {"y": na * nb, "z": b}
        return L.scan(body, c0, xs, reverse=reverse, unroll=unroll)
    return f


def _scan_args(length=4):
    c0 = (np.float32(0.3), _f32(3))
    xs = {"u": _f32(length), "v": _f32(length, 3)}
    w = {"k": np.float32(0.9), "m": _f32(3)}
    return c0, xs, w


@pytest.mark.parametrize("reverse,unroll,mode", [(False, 1, "eager"), (True, 1, "inner"),
                                                 (True, 2, "jit")])
def test_scan_jvp_and_vjp_pytrees(reverse, unroll, mode):
    args = _scan_args()
    make = lambda L, np_: _scan_fn(L, np_, reverse, unroll)
    _jvp_vs_jax(make, args)
    _vjp_vs_jax(make, args, mode)


def test_scan_check_grads_order_2():
    check_grads(minijax.jit(_scan_fn(lax, jnp, reverse=True)), _scan_args(3), order=2)


def test_scan_grad_closed_over_weight():
    xs = _f32(6)
    make = lambda L: lambda w: L.scan(lambda c, x: (c * w + x, c), 0.0, xs)[0].sum()
    w = np.float32(0.7)
    want = jax.grad(make(jlax))(w)
    _close(minijax.grad(make(lax))(w), want)
    _close(minijax.jit(minijax.grad(make(lax)))(w), want)
    _close(minijax.grad(minijax.jit(make(lax)))(w), want)
    check_grads(minijax.jit(make(lax)), (w,), order=2)


def _rnn(L, np_):
    """A tiny elementwise RNN: grads flow to closed-over weights and to the inputs."""
    def f(params, h0, xs):
        wh, wx, b = params

        def cell(h, x):
            h = np_.tanh(h * wh + x * wx + b)
            return h, h * 2.0
        return L.scan(cell, h0, xs)
    return f


def test_rnn_grads_wrt_weights_and_inputs():
    params = (_f32(3), _f32(3), _f32(3))
    h0, xs = _f32(3), _f32(5, 3)
    _vjp_vs_jax(_rnn, (params, h0, xs), "jit")
    _vjp_vs_jax(_rnn, (params, h0, xs), "inner")
    # A one-unit RNN has a scalar state: grad w.r.t. all weights.
    scalar = lambda L, np_: lambda params: _rnn(L, np_)(params, np.float32(0.2), xs[:, 0])[0]
    p1 = (np.float32(0.9), np.float32(-0.6), np.float32(0.1))
    _close(minijax.grad(scalar(lax, jnp))(p1), jax.grad(scalar(jlax, jjnp))(p1))
    check_grads(minijax.jit(lambda p: _rnn(lax, jnp)(p, h0, xs)), (params,), order=1)


def _matrix_rnn_loss(L, np_):
    """A tiny tanh RNN with matrix weights, reduced to a scalar loss."""
    def loss(params, h0, xs):
        wh, wx, b = params

        def cell(h, x):
            h = np_.tanh(wh @ h + wx @ x + b)
            return h, h
        h, hs = L.scan(cell, h0, xs)
        return (hs * hs).sum() + h.sum()
    return loss


def _matrix_rnn_args(batch=None):
    params = (_f32(4, 4), _f32(4, 3), _f32(4))
    xs = _f32(6, 3) if batch is None else _f32(batch, 6, 3)
    return params, np.zeros(4, np.float32), xs


def test_matrix_rnn_grad_and_vmap_of_grad():
    params, h0, xs = _matrix_rnn_args()
    want = jax.grad(_matrix_rnn_loss(jlax, jjnp), (0, 2))(params, h0, xs)
    grad = minijax.grad(_matrix_rnn_loss(lax, jnp), (0, 2))
    _close(grad(params, h0, xs), want, tol=2e-5)
    _close(minijax.jit(grad)(params, h0, xs), want, tol=2e-5)
    _, _, xb = _matrix_rnn_args(batch=2)
    _close(minijax.vmap(grad, (None, None, 0))(params, h0, xb),
           jax.vmap(jax.grad(_matrix_rnn_loss(jlax, jjnp), (0, 2)), (None, None, 0))(
               params, h0, xb), tol=2e-5)


def test_matrix_rnn_grad_of_vmap():
    params, h0, xb = _matrix_rnn_args(batch=2)

    def make(L, np_, vmap, grad):
        return grad(lambda p: vmap(_matrix_rnn_loss(L, np_), (None, None, 0))(p, h0, xb).sum())
    _close(make(lax, jnp, minijax.vmap, minijax.grad)(params),
           make(jlax, jjnp, jax.vmap, jax.grad)(params), tol=2e-5)


def _nested_fn(L, np_):
    def f(w, xs):
        def outer(c, x):
            def inner(d, y):
                d2 = L.cond(y > 0, lambda v: v * w + y, lambda v: np_.sin(v) - y * w, d)
                return d2, d2 * c
            d, ys = L.scan(inner, c, x)
            return d * 0.5 + c, ys
        return L.scan(outer, np.float32(0.1), xs)
    return f


def test_nested_scan_and_cond_in_scan():
    w, xs = np.float32(0.8), _f32(3, 4)
    _jvp_vs_jax(_nested_fn, (w, xs))
    _vjp_vs_jax(_nested_fn, (w, xs), "jit")
    scalar = lambda L, np_: lambda w, xs: _nested_fn(L, np_)(w, xs)[0]
    want = jax.grad(scalar(jlax, jjnp), (0, 1))(w, xs)
    _close(minijax.jit(minijax.grad(scalar(lax, jnp), (0, 1)))(w, xs), want)
    _close(minijax.grad(minijax.jit(scalar(lax, jnp)), (0, 1))(w, xs), want)
    check_grads(minijax.jit(scalar(lax, jnp)), (w, xs), order=1)


def test_scan_grad_of_grad():
    xs = _f32(4)
    make = lambda L, np_: lambda w: L.scan(lambda c, x: (np_.sin(c * w) + x, c), 0.0, xs)[0]
    _close(minijax.grad(minijax.grad(make(lax, jnp)))(np.float32(0.6)),
           jax.grad(jax.grad(make(jlax, jjnp)))(np.float32(0.6)))


def test_scan_residuals_are_stacked_once_and_consts_hoisted():
    # grad's jaxpr: a forward scan stacking per-step residuals, a reverse scan consuming
    # them; the closed-over weight reaches the reverse scan as a const, not stacked.
    xs = _f32(5)

    def body(c, x):
        return jnp.sin(c * xs[0]) + x, None

    def f(w):
        return lax.scan(lambda c, x: (jnp.sin(c * w) + x, None), 0.0, xs)[0]
    jaxpr = minijax.make_jaxpr(minijax.grad(f))(np.float32(0.5))
    scans = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "scan"]
    assert [e.params["reverse"] for e in scans] == [False, True]
    fwd, bwd = scans
    w = jaxpr.jaxpr.invars[0]
    assert bwd.params["num_consts"] == 1 and bwd.invars[0] is w
    stacked = fwd.outvars[1:]
    assert stacked and all(v.aval.shape == (5,) for v in stacked)
    assert all(v in bwd.invars for v in stacked)
    # Transforming the same scan again reuses the derived jaxprs (so eager calls hit the
    # executable cache).
    g = lambda x: lax.scan(body, x, xs)[0]
    jaxprs = [minijax.make_jaxpr(minijax.grad(g))(np.float32(0.5)) for _ in range(2)]
    fwd1, fwd2 = [[e for e in j.jaxpr.eqns if e.primitive.name == "scan"][0] for j in jaxprs]
    assert fwd2.params["jaxpr"] is fwd1.params["jaxpr"]
    _close(minijax.grad(g)(np.float32(0.5)),
           jax.grad(lambda x: jlax.scan(lambda c, x: (jjnp.sin(c * xs[0]) + x, None), x,
                                        xs)[0])(np.float32(0.5)))


def test_scan_integer_carry_and_ys():
    # An integer counter in the carry and an integer y get zero tangents.
    def make(L, np_):
        def f(x):
            def body(c, t):
                i, v = c
                return (i + 1, v * t + i), (i, v)
            return L.scan(body, (0, x), np_.arange(1.0, 4.0))
        return f
    x = np.float32(0.5)
    _jvp_vs_jax(make, (x,), jit=False)
    _close(minijax.grad(lambda x: make(lax, jnp)(x)[0][1])(x),
           jax.grad(lambda x: make(jlax, jjnp)(x)[0][1])(x))
    ct = (np.float32(1), (np.zeros(3, jax.dtypes.float0), np.ones(3, np.float32)))
    _, pull = minijax.vjp(lambda x: (make(lax, jnp)(x)[0][1], make(lax, jnp)(x)[1]), x)
    _, jpull = jax.vjp(lambda x: (make(jlax, jjnp)(x)[0][1], make(jlax, jjnp)(x)[1]), x)
    _close(pull(ct), jpull(ct))


def test_map_grad():
    make = lambda L, np_: lambda x: L.map(lambda r: np_.sin(r) * r, x)
    _vjp_vs_jax(make, (_f32(4, 3),))


def _stack2(x, axis):
    """Two versions of ``x`` stacked along ``axis`` (a batch of 2); ``x`` if axis is None."""
    x = np.asarray(x, np.float32)
    if axis is None:
        return x
    return np.stack([x, x * 0.5 + 0.25], axis=axis % (x.ndim + 1))


SCAN_VMAP_CASES = {
    # name: (in_axes, batch axis per leaf of (c0, xs, w) or None)
    "xs0": ((None, 0, None), (None, 0, None)),
    "xs1": ((None, 1, None), (None, 1, None)),
    "carry": (0, (0, None, None)),
    "consts": ((None, None, 0), (None, None, 0)),
    "mixed": (((0, None), {"u": 0, "v": -1}, None), ((0, None), {"u": 0, "v": -1}, None)),
}


@pytest.mark.parametrize("case", list(SCAN_VMAP_CASES))
def test_scan_vmap(case):
    in_axes, leaf_axes = SCAN_VMAP_CASES[case]
    c0, xs, w = _scan_args()
    if case == "carry":
        args = (jax.tree_util.tree_map(lambda x: _stack2(x, 0), c0),
                jax.tree_util.tree_map(lambda x: _stack2(x, 0), xs),
                jax.tree_util.tree_map(lambda x: _stack2(x, 0), w))
    else:
        args = []
        for tree, axes in zip((c0, xs, w), leaf_axes):
            if axes is None:
                args.append(tree)
            elif isinstance(axes, int):
                args.append(jax.tree_util.tree_map(lambda x, a=axes: _stack2(x, a), tree))
            else:
                args.append(jax.tree_util.tree_map(_stack2, tree, axes,
                                                   is_leaf=lambda a: a is None))
    out_axes = -1 if case == "mixed" else 0
    theirs = jax.jit(jax.vmap(_scan_fn(jlax, jjnp), in_axes, out_axes))(*args)
    _close(minijax.jit(minijax.vmap(_scan_fn(lax, jnp), in_axes, out_axes))(*args), theirs)
    if case == "xs0":  # eagerly too (op by op) once
        _close(minijax.vmap(_scan_fn(lax, jnp), in_axes)(*args), theirs)


def test_scan_vmap_of_vmap_and_reverse():
    xs = _f32(2, 3, 5)
    make = lambda L, np_: lambda xs: L.scan(lambda c, x: (c * 0.5 + np_.sin(x), c * x), 0.0,
                                             xs, reverse=True)
    vv = lambda v, L, np_: v(v(make(L, np_), in_axes=1), in_axes=0)
    _close(vv(minijax.vmap, lax, jnp)(xs), vv(jax.vmap, jlax, jjnp)(xs))


def test_scan_vmap_of_grad():
    ws = np.array([0.3, 0.7, -0.4], np.float32)
    xs = _f32(5)
    make = lambda L, np_: lambda w: L.scan(lambda c, x: (np_.sin(c * w) + x * w, c), 0.0,
                                            xs)[0]
    _close(minijax.vmap(minijax.grad(make(lax, jnp)))(ws), jax.vmap(jax.grad(make(jlax, jjnp)))(ws))
    _close(minijax.jit(minijax.vmap(minijax.grad(make(lax, jnp))))(ws),
           jax.vmap(jax.grad(make(jlax, jjnp)))(ws))
    fori = lambda L, np_: lambda w: L.fori_loop(0, 3, lambda i, c: np_.sin(c * w) + i, 1.0)
    _close(minijax.vmap(minijax.grad(fori(lax, jnp)))(ws), jax.vmap(jax.grad(fori(jlax, jjnp)))(ws))
    # Batched xs and weights through the RNN.
    params = (np.float32(0.9), np.float32(-0.6), np.float32(0.1))
    h0, xs_b = np.float32(0.2), _f32(2, 5)
    g = lambda L, np_, gr, vm: vm(lambda xs: gr(lambda p: _rnn(L, np_)(p, h0, xs)[0])(
        params))
    _close(g(lax, jnp, minijax.grad, minijax.vmap)(xs_b), g(jlax, jjnp, jax.grad, jax.vmap)(xs_b))


def test_scan_grad_of_vmap():
    w = np.float32(0.6)
    xs = _f32(3, 5)

    def make(L, np_, vm):
        def f(w):
            run = lambda xs: L.scan(lambda c, x: (np_.sin(c * w) + x, c), 0.0, xs)[0]
            return vm(run)(xs)
        return f
    _vjp_vs_jax(lambda L, np_: make(L, np_, minijax.vmap if L is lax else jax.vmap), (w,))


def test_scan_vmap_unbatched_carry_becomes_batched():
    # Only a const is batched; the carry becomes batched through the body (fixed point).
    ws, xs = np.array([0.5, 2.0], np.float32), _f32(4)
    make = lambda L: lambda w: L.scan(lambda c, x: (c + w * x, c * 2.0), 1.0, xs)
    _close(minijax.vmap(make(lax))(ws), jax.vmap(make(jax.lax))(ws))


# ---- jaxprs against jax's --------------------------------------------------------------------

def _norm(text) -> str:
    return re.sub(r"\s+", " ", str(text).replace(";", " ")).strip()


def _jaxpr_jvp_cond(L, N, jvp, vmap):
    body = lambda p, x: L.cond(p > 0, lambda x: N.sin(x) * 2.0, lambda x: x * x, x)
    return lambda p, x, t: jvp(lambda x: body(p, x), (x,), (t,))


def _jaxpr_jvp_scan(L, N, jvp, vmap):
    body = lambda x, xs: L.scan(lambda c, a: (N.sin(c) * a, c * 2.0), x, xs)
    return lambda x, xs, t: jvp(lambda x: body(x, xs), (x,), (t,))


def _jaxpr_jvp_while(L, N, jvp, vmap):
    body = lambda x: L.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, N.sin(c[1])), (0, x))
    return lambda x, t: jvp(body, (x,), (t,))


def _jaxpr_vmap_cond(L, N, jvp, vmap):
    return vmap(lambda p, x: L.cond(p > 0, lambda x: N.sin(x), lambda x: x * x, x))


def _jaxpr_vmap_cond_unbatched_pred(L, N, jvp, vmap):
    return vmap(lambda p, x: L.cond(p > 0, lambda x: N.sin(x), lambda x: x * x, x), (None, 0))


def _jaxpr_vmap_scan(L, N, jvp, vmap):
    return vmap(lambda x, xs: L.scan(lambda c, a: (N.sin(c) * a, c * 2.0), x, xs), (None, 0))


def _jaxpr_vmap_while(L, N, jvp, vmap):
    loop = lambda x, w: L.while_loop(lambda c: c[0] < 3,
                                     lambda c: (c[0] + 1, N.sin(c[1]) * w), (0, x))
    return vmap(loop, (0, None))


_X3 = np.ones(3, np.float32)


@pytest.mark.parametrize("make,args", [
    (_jaxpr_jvp_cond, (np.float32(1), _X3, _X3)),
    (_jaxpr_jvp_scan, (_X3, np.ones((4, 3), np.float32), _X3)),
    (_jaxpr_jvp_while, (_X3, _X3)),
    (_jaxpr_vmap_cond, (_X3, _X3)),
    (_jaxpr_vmap_cond_unbatched_pred, (np.float32(1), _X3)),
    (_jaxpr_vmap_scan, (np.float32(1), np.ones((3, 4), np.float32))),
    (_jaxpr_vmap_while, (np.ones((2, 3), np.float32), np.float32(2))),
], ids=lambda v: v.__name__[7:] if callable(v) else "")
def test_transformed_jaxprs_match_jax(make, args):
    ours = minijax.make_jaxpr(make(lax, jnp, minijax.jvp, minijax.vmap))(*args)
    theirs = jax.make_jaxpr(make(jlax, jjnp, jax.jvp, jax.vmap))(*args)
    assert _norm(ours) == _norm(theirs)


# ---- metadata --------------------------------------------------------------------------------

def test_derived_equations_keep_the_metadata_context():
    xs = _f32(4)

    def f(w, p):
        with set_xla_metadata(tag="cf"):
            c = lax.scan(lambda c, x: (jnp.sin(c * w) + x, None), 0.0, xs)[0]
            return lax.cond(p > 0, lambda c: c * w, lambda c: c - w, c)
    jaxpr = minijax.make_jaxpr(minijax.grad(f))(np.float32(0.5), np.float32(1))
    derived = [e for e in jaxpr.jaxpr.eqns if e.primitive.name in ("scan", "cond")]
    assert len(derived) == 4
    assert all(("tag", "cf") in e.ctx.metadata for e in derived)
    text = minijax.jit(minijax.grad(f)).lower(np.float32(0.5), np.float32(1)).as_text()
    assert 'tag = "cf"' in text
