"""The elementwise functions of minijax.numpy/_math.py against jax.numpy: values, dtypes
and weak types on each input dtype (or the same exception type as jax), 64-bit mode,
jit, grad and vmap."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from tests.numpy._util import assert_same, check_against_jax, check_many

_F = np.array([-2.5, -1.0, -0.0, 0.0, 0.3, 1.0, 7.5, np.inf, -np.inf, np.nan], np.float32)
_G = np.array([1.0, -2.0, 3.0, -0.0, 0.5, 2.0, -1.5, 1.0, np.nan, 2.0], np.float32)
INPUTS = {
    "f32": _F,
    "f16": _F.astype(np.float16),
    "i32": np.array([-7, -2, 0, 1, 3, 12], np.int32),
    "u8": np.array([0, 1, 3, 200], np.uint8),
    "bool": np.array([True, False, True]),
    "c64": (_F[:6] + 1j * _G[:6]).astype(np.complex64),
    "py_float": 0.5,
    "py_int": 3,
}
UNARY = ["arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
         "acos", "asin", "atan", "acosh", "asinh", "atanh", "real", "imag", "conj",
         "conjugate", "angle", "iscomplex", "isreal", "fabs", "rint", "trunc", "deg2rad",
         "rad2deg", "radians", "degrees", "signbit", "isposinf", "isneginf", "bitwise_invert",
         "bitwise_count", "sinc", "i0", "spacing", "nan_to_num", "frexp", "modf"]
BINARY = ["atan2", "copysign", "fmax", "fmin", "nextafter", "heaviside", "hypot", "logaddexp",
          "logaddexp2", "isclose", "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm"]
SECOND = {"f32": _G, "f16": _G.astype(np.float16), "i32": np.array([3, -4, 0, 5, 6, 8], np.int32),
          "u8": np.array([2, 1, 0, 3], np.uint8), "bool": np.array([False, False, True]),
          "c64": (_G[:6] - 0.5j).astype(np.complex64), "py_float": 2.0, "py_int": 2}


@pytest.mark.parametrize("kind", list(INPUTS))
def test_unary(kind):
    check_many(jnp, jjnp, UNARY, INPUTS[kind], rtol=2e-3 if kind == "f16" else 2e-6)


@pytest.mark.parametrize("kind", list(INPUTS))
def test_binary(kind):
    x = INPUTS[kind]
    check_many(jnp, jjnp, BINARY, x, SECOND[kind], rtol=2e-3 if kind == "f16" else 2e-6)
    if not np.isscalar(x):  # an array meeting a weakly typed Python scalar
        check_many(jnp, jjnp, BINARY, x, call=lambda lib, n, a: getattr(lib, n)(a, 2))


def test_eager():
    # called eagerly, the functions are fused programs (or plain calls): same answers
    for name in ["arccosh", "frexp", "real"]:
        check_against_jax(getattr(jnp, name), getattr(jjnp, name), _F)
        check_against_jax(getattr(jnp, name), getattr(jjnp, name), 0.5)
    for name in ["logaddexp", "heaviside"]:
        check_against_jax(getattr(jnp, name), getattr(jjnp, name), _F, _G)
        check_against_jax(getattr(jnp, name), getattr(jjnp, name), _F, 2.0)
    check_against_jax(jnp.gcd, jjnp.gcd, 12, 18)


@pytest.mark.parametrize("name", ["arccosh", "arcsinh", "sinc", "spacing", "logaddexp", "hypot",
                                  "frexp", "ldexp", "nan_to_num", "angle", "copysign", "i0",
                                  "gcd", "signbit"])
def test_x64(name, x64):
    x = _F.astype(np.float64) if name != "gcd" else np.array([-12, 0, 9, 2**40], np.int64)
    args = (x, np.array(3)) if name == "ldexp" else (x, x[::-1]) if name in BINARY else (x,)
    check_against_jax(getattr(jnp, name), getattr(jjnp, name), *args)


def _edge_cases(L):
    x, y, c = _F, _G, INPUTS["c64"]
    out = {f"isclose{i}": (L.isclose(x, y, **kw), L.allclose(x, x, **kw))
           for i, kw in enumerate([dict(rtol=0.5), dict(atol=1.0), dict(equal_nan=True),
                                   dict(rtol=0, atol=0)])}
    out.update(
        nan_to_num=(L.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), L.nan_to_num(c * np.inf)),
        angle=(L.angle(c, deg=True), L.angle(np.float32(-1.0))),
        ldexp=(L.ldexp(x, np.array([1, -3, 2, 0, 200, -200, 5, 1, 1, 1])),
               L.ldexp(np.float32(1e-40), 10)),
        logaddexp=(L.logaddexp(c, c[::-1]), L.logaddexp(np.float32(-np.inf),
                                                        np.float32(-np.inf))),
        spacing=L.spacing(np.array([0.0, -0.0, 1e-45, 3e38], np.float32)),
        lcm=L.lcm(np.array([0, 4, -6], np.int32), np.array([0, 0, 4])),
        gcd=L.gcd(np.int16(12), np.array([8, 18], np.uint8)))
    return out


def test_keywords_and_edge_cases():
    # in one jitted program per library (constants in)
    got, want = minijax.jit(lambda: _edge_cases(jnp))(), jax.jit(lambda: _edge_cases(jjnp))()
    for k in want:
        assert_same(got[k], want[k])
    check_against_jax(jnp.ldexp, jjnp.ldexp, _F, 1.5)  # ValueError: float exponent
    # (subnormal operands eagerly: in a jitted program XLA may fold them as constants)
    check_against_jax(jnp.frexp, jjnp.frexp, np.array([1e-40, -3e-39, 6e37], np.float32))


def test_jit():
    for name in ["arccosh", "logaddexp", "isclose", "frexp", "gcd", "sinc", "real", "angle"]:
        mf, jf = getattr(jnp, name), getattr(jjnp, name)
        args = (_F,) if name in UNARY else (_F, _G)
        if name == "gcd":
            args = (INPUTS["i32"], SECOND["i32"])
        assert_same(minijax.jit(mf)(*args), jax.jit(jf)(*args))


DIFFERENTIABLE = ["arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arctanh", "real",
                  "imag", "conj", "angle", "fabs", "trunc", "deg2rad", "sinc", "i0", "frexp",
                  "modf", "nan_to_num", "rint"]
_UNIT = np.array([-0.9, -0.4, 0.0, 0.25, 0.7], np.float32)


GRAD = DIFFERENTIABLE + ["arccosh", "copysign", "fmax", "hypot", "logaddexp", "logaddexp2",
                         "ldexp", "heaviside", "atan2"]


def _loss(lib, name):
    f = getattr(lib, name)

    def g(x):
        if name == "arccosh":
            out = f(x + 2.0)
        elif name == "ldexp":
            out = f(x, 3)
        elif name in BINARY:
            out = f(x, x[::-1] * 2.0 + 0.1)
        else:
            out = f(x)
        if isinstance(out, tuple):
            out = out[0] * 2.0 + lib.real(out[1]).astype(x.dtype)
        return lib.real(out * out).sum() if name != "angle" else out.sum()
    return g


def test_grad():
    # all the gradients in one jitted program per library
    want = jax.jit(lambda x: {n: jax.grad(_loss(jjnp, n))(x) for n in GRAD})(_UNIT)
    got = minijax.jit(lambda x: {n: minijax.grad(_loss(jnp, n))(x) for n in GRAD})(_UNIT)
    for n in GRAD:
        assert_same(got[n], want[n], rtol=1e-5), n
    # and eagerly, for a few
    for n in ["arcsin", "logaddexp", "sinc"]:
        assert_same(minijax.grad(_loss(jnp, n))(_UNIT), want[n], rtol=1e-5)


def test_grad_at_special_points():
    # derivatives where the formulas have removable singularities
    for name, x in [("sinc", 0.0), ("i0", 0.0), ("logaddexp", -np.inf)]:
        if name == "logaddexp":
            want = jax.grad(lambda a: jjnp.logaddexp(a, 1.0))(np.float32(x))
            got = minijax.grad(lambda a: jnp.logaddexp(a, 1.0))(np.float32(x))
        else:
            want = jax.grad(getattr(jjnp, name))(np.float32(x))
            got = minijax.grad(getattr(jnp, name))(np.float32(x))
        assert_same(got, want)
    want = jax.grad(jax.grad(jjnp.sinc))(np.float32(0.0))
    assert_same(minijax.grad(minijax.grad(jnp.sinc))(np.float32(0.0)), want, rtol=1e-5)
    # complex operands: the conjugate and the parts transpose as in jax
    z = (_UNIT + 0.5j).astype(np.complex64)
    for name in ["conj", "real", "imag", "angle", "arcsinh", "arctan", "cosh"]:
        def f(lib, z, n=name):
            out = getattr(lib, n)(z)
            return out * out
        ct = jjnp.ones_like(jax.eval_shape(lambda z: f(jjnp, z), z).dtype.type(1)) * 0.7
        ct = np.broadcast_to(np.asarray(ct), _UNIT.shape)
        want = jax.jit(lambda z, ct: jax.vjp(lambda z: f(jjnp, z), z)[1](ct))(z, ct)
        got = minijax.jit(lambda z, ct: minijax.vjp(lambda z: f(jnp, z), z)[1](ct))(z, ct)
        assert_same(got, want, rtol=1e-5)


@pytest.mark.parametrize("name", ["arcsinh", "arccosh", "logaddexp", "gcd", "frexp", "isclose",
                                  "ldexp", "sinc"])
def test_vmap(name):
    mf, jf = getattr(jnp, name), getattr(jjnp, name)
    if name == "gcd":
        args = (np.arange(-6, 6).reshape(3, 4), np.array([[4], [6], [0]]))
    elif name == "ldexp":
        args = (_UNIT.reshape(5, 1) * np.ones((1, 3), np.float32), np.arange(15).reshape(5, 3))
    elif name in BINARY:
        args = (_F.reshape(2, 5), _G.reshape(2, 5))
    else:
        args = (_F.reshape(2, 5),)
    assert_same(minijax.vmap(mf)(*args), jax.vmap(jf)(*args))
    if len(args) == 2:  # one operand unbatched
        assert_same(minijax.vmap(mf, in_axes=(0, None))(args[0], args[1][0]),
                    jax.vmap(jf, in_axes=(0, None))(args[0], args[1][0]))
