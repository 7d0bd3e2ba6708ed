"""checkify against jax: the same programs, each error set and each transformation, give
jax's messages (``err.get()``), outputs and exceptions."""

from __future__ import annotations

import types

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.experimental import checkify as jck

import minijax
import minijax.numpy as mjnp
from minijax.experimental import checkify as mck

JAX = types.SimpleNamespace(jit=jax.jit, vmap=jax.vmap, grad=jax.grad, lax=jax.lax, np=jjnp,
                            ck=jck, custom_jvp=jax.custom_jvp, custom_vjp=jax.custom_vjp,
                            checkpoint=jax.checkpoint, jvp=jax.jvp)
MINI = types.SimpleNamespace(jit=minijax.jit, vmap=minijax.vmap, grad=minijax.grad,
                             lax=minijax.lax, np=mjnp, ck=mck, custom_jvp=minijax.custom_jvp,
                             custom_vjp=minijax.custom_vjp, checkpoint=minijax.checkpoint,
                             jvp=minijax.jvp)


def _f(L, x):
    L.ck.check(x > 0, "{x} needs to be positive!", x=x)
    return L.np.log(x) / x


def _cond(L, x):
    def big(x):
        L.ck.check(x < 10, "too big {}", x)
        return L.np.log(x)
    return L.lax.cond(x > 5, big, lambda x: L.np.sin(x) / x, x)


def _scan(L, xs):
    def body(c, x):
        L.ck.check(x >= 0, "negative x {} at carry {}", x, c)
        return c + L.np.sqrt(x), c / x
    return L.lax.scan(body, L.np.float32(0.), xs)


def _while(L, x):
    def cond(c):
        L.ck.check(c[1] < 100, "v too big: {}", c[1])
        return c[0] < 5

    def body(c):
        L.ck.check(c[0] < 4, "i hit {}", c[0])
        return c[0] + 1, c[1] * x
    return L.lax.while_loop(cond, body, (0, L.np.float32(1.)))


def _multi(L, x):
    y = x / 0.
    L.ck.check(x > 10, "second")
    return L.np.log(-L.np.abs(x)) + y


def _index(L, x, i):
    return x[i]


# (name, program, arguments as numpy, error sets)
CASES = [
    ("user", _f, (np.float32(-3.),), "user_checks"),
    ("user_ok", _f, (np.float32(3.),), "all_checks"),
    ("div_first", _f, (np.float32(0.),), "float_checks"),
    ("nan", lambda L, x: L.np.sin(x) + 1, (np.array([1., np.inf], np.float32),), "nan_checks"),
    ("div_int", lambda L, x, y: x // y, (np.arange(3), np.array([1, 0, 2])), "div_checks"),
    ("index_slice", _index, (np.arange(3.), np.int32(5)), "index_checks"),
    ("index_negative", _index, (np.arange(3.), np.int32(-5)), "index_checks"),
    ("index_gather", _index, (np.arange(3.), np.array([0, 7, 9])), "index_checks"),
    ("index_scatter", lambda L, x, i: x.at[i].set(1.), (np.arange(3.), np.array([0, 7, 9])),
     "index_checks"),
    ("index_update_slice",
     lambda L, x, i: L.lax.dynamic_update_slice(x, L.np.ones(2), (i,)),
     (np.arange(3.), np.int32(2)), "index_checks"),
    ("index_fori", lambda L, x: L.lax.fori_loop(0, 4, lambda i, c: c + x[i], 0.),
     (np.arange(3.),), "index_checks"),
    ("cond_check", _cond, (np.float32(12.),), "all_checks"),
    ("cond_div", _cond, (np.float32(0.),), "all_checks"),
    ("cond_ok", _cond, (np.float32(7.),), "all_checks"),
    ("scan", _scan, (np.array([1., 2., -3., 0.], np.float32),), "all_checks"),
    ("scan_div", _scan, (np.array([1., 2., 0., -1.], np.float32),), "float_checks"),
    ("while_body", _while, (np.float32(2.),), "user_checks"),
    ("while_cond_first", _while, (np.float32(1000.),), "user_checks"),
    ("while_cond_later", _while, (np.float32(20.),), "user_checks"),
    ("first_error_user", _multi, (np.float32(1.),), "all_checks"),
    ("first_error_nan", _multi, (np.float32(1.),), "nan_checks"),
    ("first_error_float", _multi, (np.float32(1.),), "automatic_checks"),
    ("kwargs", lambda L, x, y: (L.ck.check(x < y, "{a} >= {b}", a=x, b=y), x)[1],
     (np.float32(3.), np.float32(1.)), "user_checks"),
    ("array_payload", lambda L, x: (L.ck.check(L.np.all(x > 0), "bad {}", x), x)[1],
     (np.array([1., -2.], np.float32),), "user_checks"),
    ("debug_check", lambda L, x: (L.ck.debug_check(x > 0, "dbg {}", x), x)[1],
     (np.float32(-1.),), "user_checks"),
]


def _run(L, prog, args, errors, wrap):
    fn = L.ck.checkify(lambda *a: prog(L, *a), errors=getattr(L.ck, errors))
    err, out = wrap(L, fn)(*[L.np.asarray(a) for a in args])
    return err.get(), out


TRANSFORMS = {
    "eager": lambda L, fn: fn,
    "jit": lambda L, fn: L.jit(fn),
}


def _assert_same_out(a, b):
    la, lb = jax.tree_util.tree_leaves(a), minijax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-6)


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("name,prog,args,errors", CASES, ids=[c[0] for c in CASES])
def test_message_and_output_as_jax(name, prog, args, errors, transform):
    want_msg, want_out = _run(JAX, prog, args, errors, TRANSFORMS[transform])
    got_msg, got_out = _run(MINI, prog, args, errors, TRANSFORMS[transform])
    assert got_msg == want_msg
    _assert_same_out(want_out, got_out)


# vmap: of a checkified function (one error per element), and checkify of a vmap.
VMAP_CASES = [
    ("user", _f, np.array([1., -1., 0., 2.], np.float32), "all_checks"),
    ("cond", _cond, np.array([12., 7., 0., 3., 11.], np.float32), "all_checks"),
    ("scan", _scan, np.array([[1., 2.], [-3., 0.], [1., 1.]], np.float32), "all_checks"),
    ("while", _while, np.array([2., 1000., 20.], np.float32), "user_checks"),
    ("none", _f, np.array([1., 2.], np.float32), "all_checks"),
]


@pytest.mark.parametrize("name,prog,x,errors", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap_of_checkify_as_jax(name, prog, x, errors):
    for wrap in (lambda L, fn: L.vmap(fn), lambda L, fn: L.jit(L.vmap(fn))):
        want = _run(JAX, prog, (x,), errors, wrap)
        got = _run(MINI, prog, (x,), errors, wrap)
        assert got[0] == want[0]
        _assert_same_out(want[1], got[1])


def test_checkify_of_vmap_reports_the_last_failing_element_as_jax():
    def run(L):
        err, _ = L.ck.checkify(L.vmap(lambda x: _f(L, x)), errors=L.ck.all_checks)(
            L.np.array([1., -1., 0., 2.]))
        return err.get()
    assert run(MINI) == run(JAX) == "0.0 needs to be positive! (`check` failed)"


def test_nested_vmap_indices():
    def run(L):
        fn = L.vmap(L.vmap(L.ck.checkify(lambda x: _f(L, x))))
        return fn(L.np.array([[1., -2.], [-3., 4.]]))[0].get()
    assert run(MINI) == run(JAX)


# grad: checks inside differentiated functions.
def _g(L, x):
    L.ck.check(x > 0, "x must be positive, got {}", x)
    return L.np.sin(x) * x


GRAD_CASES = {
    "checkify_grad": lambda L: L.ck.checkify(L.grad(lambda x: _g(L, x))),
    "checkify_jit_grad": lambda L: L.ck.checkify(L.jit(L.grad(lambda x: _g(L, x)))),
    "jit_checkify_grad": lambda L: L.jit(L.ck.checkify(L.grad(lambda x: _g(L, x)))),
    "checkify_jvp": lambda L: L.ck.checkify(
        lambda x: L.jvp(lambda y: _g(L, y), (x,), (L.np.float32(1.),))),
    "checkify_checkpoint_grad": lambda L: L.ck.checkify(
        L.grad(L.checkpoint(lambda x: _g(L, x)))),
}


@pytest.mark.parametrize("case", list(GRAD_CASES))
@pytest.mark.parametrize("x", [-2., 2.])
def test_grad_as_jax(case, x):
    want_err, want = GRAD_CASES[case](JAX)(np.float32(x))
    got_err, got = GRAD_CASES[case](MINI)(np.float32(x))
    assert got_err.get() == want_err.get()
    _assert_same_out(want, got)


def test_grad_of_checkified_function():
    def run(L):
        return L.grad(lambda x: L.ck.checkify(lambda y: L.np.log(y) * _g(L, y),
                                              errors=L.ck.all_checks)(x)[1])(np.float32(2.))
    np.testing.assert_allclose(run(MINI), run(JAX), rtol=1e-6)


def _custom(L):
    @L.custom_jvp
    def cj(x):
        L.ck.check(x > 0, "cj positive {}", x)
        return L.np.sqrt(x)
    cj.defjvp(lambda p, t: (cj(p[0]), t[0] * 2.))

    @L.custom_vjp
    def cv(x):
        L.ck.check(x > 0, "cv positive {}", x)
        return L.np.sqrt(x)
    cv.defvjp(lambda x: (cv(x), x), lambda r, g: (g * r,))
    return cj, cv


@pytest.mark.parametrize("which", ["cj", "cv"])
@pytest.mark.parametrize("how", ["plain", "jit", "grad"])
@pytest.mark.parametrize("x", [-1., 4.])
def test_custom_derivatives_as_jax(which, how, x):
    def run(L):
        fn = dict(zip(("cj", "cv"), _custom(L)))[which]
        fn = {"plain": fn, "jit": L.jit(fn), "grad": L.grad(fn)}[how]
        err, out = L.ck.checkify(fn, errors=L.ck.all_checks)(np.float32(x))
        return err.get(), out
    want, got = run(JAX), run(MINI)
    assert got[0] == want[0]
    _assert_same_out(want[1], got[1])


# Without checkify: a check raises eagerly, and cannot be staged.
def test_unfunctionalized_checks_as_jax():
    def outcome(fn):
        try:
            return "ok", np.asarray(fn())
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)

    for L in (JAX, MINI):
        L.results = [outcome(lambda: _g(L, L.np.float32(-1.))),
                     outcome(lambda: L.jit(lambda x: _g(L, x))(L.np.float32(1.))),
                     outcome(lambda: L.grad(lambda x: _g(L, x))(L.np.float32(-2.))),
                     outcome(lambda: L.vmap(lambda x: _g(L, x))(L.np.array([1., -2., -3.]))),
                     outcome(lambda: L.jit(lambda x: (L.ck.debug_check(x > 0, "d"), x)[1])(
                         L.np.float32(-1.)))]
    assert [r[0] for r in MINI.results] == [r[0] for r in JAX.results]
    for (_, a), (_, b) in zip(JAX.results, MINI.results):
        if isinstance(a, str):
            assert a == b
        else:
            np.testing.assert_allclose(b, a, rtol=1e-6)
    assert MINI.results[0][0] == "JaxRuntimeError"


def test_error_object_api():
    err, _ = mck.checkify(lambda x: _f(MINI, x))(mjnp.float32(-1.))
    assert str(err) == "Error(-1.0 needs to be positive! (`check` failed))"
    assert type(err.get_exception()).__name__ == "FailedCheckError"
    with pytest.raises(mck.JaxRuntimeError, match="needs to be positive") as info:
        err.throw()
    assert isinstance(info.value, ValueError)
    ok, _ = mck.checkify(lambda x: _f(MINI, x))(mjnp.float32(1.))
    assert ok.get() is None and ok.get_exception() is None
    ok.throw()  # no error: nothing raised
    assert mck.all_checks == mck.automatic_checks | mck.user_checks
    assert mck.float_checks == mck.nan_checks | mck.div_checks


def test_check_error_and_recheckify_as_jax():
    def run(L, wrap):
        def inner(x):
            L.ck.check(x > 0, "must be positive!")
            return x

        def outer(x):
            error, out = L.jit(L.ck.checkify(inner))(x)
            L.ck.check_error(error)
            return out
        return wrap(L, outer)(np.float32(-1.))[0].get()
    for wrap in (lambda L, f: L.ck.checkify(f), lambda L, f: L.jit(L.ck.checkify(f))):
        assert run(MINI, wrap) == run(JAX, wrap) == "must be positive! (`check` failed)"


@pytest.mark.parametrize("call", [
    lambda L: L.ck.check(L.np.array([True, False]), "x"),
    lambda L: L.ck.check(1, "x"),
    lambda L: L.ck.check(L.np.array(True), "x {}", 3),
    lambda L: L.ck.check_error(3),
])
def test_bad_arguments_as_jax(call):
    with pytest.raises(TypeError) as want:
        call(JAX)
    with pytest.raises(TypeError) as got:
        call(MINI)
    assert str(got.value) == str(want.value)
