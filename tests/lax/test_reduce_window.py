"""lax.reduce_window (monoid and generic) and the max-pool gradient primitives vs jax."""

import jax
import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.test_util import check_grads

RNG = np.random.default_rng(0)

# (operand shape, window keywords): strides, padding strings and pairs, both dilations
WINDOWS = {
    "maxpool": ((2, 8, 8, 3), dict(window_dimensions=(1, 2, 2, 1),
                                   window_strides=(1, 2, 2, 1), padding="VALID")),
    "same-stride2": ((2, 7, 6, 3), dict(window_dimensions=(1, 3, 3, 1),
                                        window_strides=(1, 2, 2, 1), padding="SAME")),
    "pairs": ((5, 7), dict(window_dimensions=(2, 3), window_strides=(1, 2),
                           padding=((1, 0), (2, 1)))),
    "base_dilation": ((5, 7), dict(window_dimensions=(2, 2), window_strides=(2, 1),
                                   padding=((0, 1), (1, 1)), base_dilation=(2, 1))),
    "window_dilation": ((9, 8), dict(window_dimensions=(2, 3), window_strides=(1, 1),
                                     padding="SAME_LOWER", window_dilation=(2, 1))),
}
MONOIDS = {"sum": (0.0, "add"), "max": (-np.inf, "max"), "min": (np.inf, "min")}


def _rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _close(got, want, tol=2e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                 got.dtype, want.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


def _pools(op: str, kw: dict):
    init, name = MONOIDS[op]
    return (lambda x: lax.reduce_window(x, init, getattr(lax, name), **kw),
            lambda x: jax.lax.reduce_window(x, init, getattr(jax.lax, name), **kw))


@pytest.mark.parametrize("window", list(WINDOWS))
@pytest.mark.parametrize("op", list(MONOIDS))
def test_monoid_values_grads_and_vmap_match_jax(op, window):
    shape, kw = WINDOWS[window]
    fm, fj = _pools(op, kw)
    x = _rand(shape)
    want = jax.jit(fj)(x)
    _close(minijax.jit(fm)(x), want)
    assert f"reduce_window_{op}" in str(minijax.make_jaxpr(fm)(x))
    xb = _rand((3,) + shape)
    _close(minijax.jit(minijax.vmap(fm, in_axes=1))(xb.swapaxes(0, 1)),
           jax.jit(jax.vmap(fj, in_axes=1))(xb.swapaxes(0, 1)))
    if op != "sum" and window == "window_dilation":
        with pytest.raises(NotImplementedError, match="window dilation"):
            minijax.grad(lambda x: fm(x).sum())(x)
        return
    ct = _rand(want.shape)
    grad_m = minijax.jit(minijax.grad(lambda x: (fm(x) * ct).sum()))
    grad_j = jax.jit(jax.grad(lambda x: (fj(x) * ct).sum()))
    _close(grad_m(x), grad_j(x))
    # vmap of the gradient: batching of select_and_scatter_add / the sum's transpose
    _close(minijax.jit(minijax.vmap(minijax.grad(lambda x: (fm(x) ** 2).sum())))(xb),
           jax.jit(jax.vmap(jax.grad(lambda x: (fj(x) ** 2).sum())))(xb))


@pytest.mark.parametrize("op", ["max", "sum"])
def test_check_grads_float64(x64, op):
    # second order: the jvp and transpose of select_and_scatter_add / select_and_gather_add
    for window in ("same-stride2", "base_dilation"):
        shape, kw = WINDOWS[window]
        fm, fj = _pools(op, kw)
        x = RNG.permutation(np.prod(shape)).reshape(shape) * 0.1  # no ties
        assert minijax.jit(fm)(x).dtype == np.float64
        _close(minijax.jit(fm)(x), fj(x), 1e-12)
        check_grads(fm, (x,), order=2, modes=("fwd", "rev"))


def test_negative_padding_gradients(x64):
    # (jax's max-pool gradient fails with negative padding; minijax's is checked numerically)
    x = RNG.permutation(7) * 0.3
    for op in MONOIDS:
        fm, _ = _pools(op, dict(window_dimensions=(3,), window_strides=(2,),
                                padding=((-1, 1),)))
        check_grads(fm, (x,), order=1, modes=("fwd", "rev"))


def test_integer_and_bool_operands():
    x = RNG.integers(-50, 50, (4, 6)).astype(np.int32)
    kw = dict(window_dimensions=(2, 3), window_strides=(1, 2), padding="SAME")
    for init, name in [(0, "add"), (np.int32(-2**31), "max"), (np.int32(2**31 - 1), "min")]:
        _close(lax.reduce_window(x, init, getattr(lax, name), **kw),
               jax.lax.reduce_window(x, init, getattr(jax.lax, name), **kw))
    b = x > 0
    _close(lax.reduce_window(b, False, lax.max, **kw),
           jax.lax.reduce_window(b, False, jax.lax.max, **kw))


def test_generic_reducer_values_jvp_and_vmap():
    x = _rand((5, 7))
    kw = dict(window_dimensions=(2, 3), window_strides=(1, 2), padding=((1, 0), (0, 2)))
    fm = lambda x: lax.reduce_window(x, 1.0, lax.mul, **kw)  # noqa: E731
    fj = lambda x: jax.lax.reduce_window(x, 1.0, jax.lax.mul, **kw)  # noqa: E731
    assert "reduce_window[" in str(minijax.make_jaxpr(fm)(x))
    _close(minijax.jit(fm)(x), fj(x))
    t = _rand(x.shape)
    _close(minijax.jit(lambda x, t: minijax.jvp(fm, (x,), (t,))[1])(x, t),
           jax.jvp(fj, (x,), (t,))[1])
    xb = _rand((2, 5, 7))
    _close(minijax.jit(minijax.vmap(fm))(xb), jax.vmap(fj)(xb))
    # jax has no reverse mode for a generic reducer either: a clear error
    with pytest.raises(NotImplementedError, match="reduce_window"):
        minijax.grad(lambda x: fm(x).sum())(x)
    # max with an init that is not max's identity is not the monoid: the generic path
    g = lambda L: (lambda x: L.reduce_window(x, 0.5, L.max, **kw))  # noqa: E731
    assert "reduce_window[" in str(minijax.make_jaxpr(g(lax))(x))
    _close(g(lax)(x), g(jax.lax)(x))


def test_pytree_operands():
    x = _rand((2, 9))

    def argmax_pool(L):
        def comp(a, b):
            (av, ai), (bv, bi) = a, b
            pick = L.ge(av, bv)
            return (L.select(pick, av, bv), L.select(pick, ai, bi))
        return lambda x: L.reduce_window(
            {"v": x, "i": L.broadcasted_iota(np.int32, x.shape, 1)},
            {"v": np.float32(-np.inf), "i": np.int32(0)},
            lambda a, b: dict(zip(("v", "i"), comp((a["v"], a["i"]), (b["v"], b["i"])))),
            (1, 3), (1, 2), "SAME")

    got, want = minijax.jit(argmax_pool(lax))(x), argmax_pool(jax.lax)(x)
    _close(got["v"], want["v"])
    _close(got["i"], want["i"])
    # the tangent of the value follows the selected index (the index has none)
    t = _rand(x.shape)
    tan = minijax.jvp(lambda x: argmax_pool(lax)(x)["v"], (x,), (t,))[1]
    _close(tan, np.take_along_axis(t, np.asarray(want["i"]), 1))


def test_maxpool_hlo_matches_jax():
    shape, kw = WINDOWS["maxpool"]
    x = _rand(shape)

    def ops(mod, f):
        text = mod.jit(f).lower(x).as_text()
        return [op for op in ("reduce_window", "select_and_scatter", "maximum", "compare GE")
                if op in text]

    fm, fj = _pools("max", kw)
    assert ops(minijax, minijax.value_and_grad(lambda x: fm(x).sum())) == \
        ops(jax, jax.value_and_grad(lambda x: fj(x).sum())) == \
        ["reduce_window", "select_and_scatter", "maximum", "compare GE"]
    text = minijax.jit(fm).lower(x).as_text()
    assert "window_dimensions = array<i64: 1, 2, 2, 1>" in text and "stablehlo.maximum" in text


def test_helpers_and_jaxpr():
    args = ((8, 7), (2, 3), (2, 1), ((0, 1), (1, 1)))
    assert lax.reduce_window_shape_tuple(*args, (1, 2), (2, 1)) == \
        jax.lax.reduce_window_shape_tuple(*args, (1, 2), (2, 1))
    shape, kw = WINDOWS["maxpool"]
    text = str(minijax.make_jaxpr(_pools("max", kw)[0])(_rand(shape)))
    assert "reduce_window_max[\n      base_dilation=(1, 1, 1, 1)\n      padding=" in text


@pytest.mark.parametrize("call,exc,match", [
    (lambda x: lax.reduce_window((x, x), 0.0, lax.add, (2, 2)), ValueError, "tree structure"),
    (lambda x: lax.reduce_window(x, np.float16(1), lax.mul, (2, 2)), TypeError,
     "inconsistent dtypes"),
    (lambda x: lax.reduce_window(x, np.ones(2, np.float32), lax.mul, (2, 2)), TypeError,
     "scalars"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2,)), TypeError, "window_dimensions"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 0)), TypeError, "strictly positive"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "FOO"), RuntimeError,
     "Unrecognized padding"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2.5)), TypeError, "integers"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), [(0, 0, 0), (0, 0, 0)]),
     TypeError, "pair"),
    (lambda x: lax.reduce_window(x, 0.0, lambda a, b: (a, b), (2, 2)), ValueError,
     "tree structure"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call(_rand((4, 5)))
