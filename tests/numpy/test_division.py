"""Division and remainder against jax, bit for bit, including zero divisors.

XLA leaves integer division by zero implementation-defined (-1, or all bits set),
and jax's numpy functions then build on it: ``7 // 0 == -2``, ``7 % 0 == 0``,
``fmod(7, 0) == 0``. minijax must give the same bits, eagerly and under jit.
"""

import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp

jax = pytest.importorskip("jax")
jjnp = jax.numpy

FLOATS = [1.0, -1.0, 0.0, -0.0, 0.1, 7.0, -7.5, np.inf, -np.inf, np.nan, 3e4]


def _operands(dtype):
    """Every pair of interesting values of ``dtype``, as two flat arrays."""
    dt = jjnp.dtype(dtype)
    if dt == np.bool_:
        vals = np.array([True, False])
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        vals = np.array([v for v in (7, -7, 0, 1, -1, 3, int(info.min), int(info.max))
                         if info.min <= v <= info.max], dt)
    else:
        vals = np.array(FLOATS, dt)
    return np.repeat(vals, len(vals)), np.tile(vals, len(vals))


def _functions(np_mod, lax_mod):
    fns = {
        "//": lambda a, b: a // b,
        "%": lambda a, b: a % b,
        "fmod": np_mod.fmod,
        "divmod": np_mod.divmod,
        "builtin divmod": lambda a, b: divmod(a, b),
        "// 0": lambda a, b: a // 0,
        "% 0": lambda a, b: a % 0,
        "7 //": lambda a, b: 7 // b,
        "7 %": lambda a, b: 7 % b,
    }
    fns_lax = {"lax.div": lax_mod.div, "lax.rem": lax_mod.rem}
    return fns, fns_lax


def _bits(out):
    outs = out if isinstance(out, tuple) else (out,)
    return [(np.asarray(o).dtype, np.asarray(o).tobytes()) for o in outs]


def _check(dtype):
    x, y = _operands(dtype)
    mfns, mlax = _functions(mjnp, minijax.lax)
    jfns, jlax = _functions(jjnp, jax.lax)
    if np.dtype(jjnp.dtype(dtype)) != np.bool_:
        mfns.update(mlax)
        jfns.update(jlax)
    mx, my, jx, jy = mjnp.asarray(x), mjnp.asarray(y), jjnp.asarray(x), jjnp.asarray(y)
    for name in mfns:
        want = _bits(jfns[name](jx, jy))
        assert _bits(mfns[name](mx, my)) == want, (dtype, name, "eager")
        assert _bits(minijax.jit(mfns[name])(mx, my)) == want, (dtype, name, "jit")


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint8", "uint32", "bool",
                                   "float16", "float32", "bfloat16"])
def test_division_matches_jax(dtype):
    _check(dtype)


@pytest.mark.parametrize("dtype", ["int64", "uint64", "float64", "bool"])
def test_division_matches_jax_x64(x64, dtype):
    _check(dtype)


def test_integer_division_by_zero_values():
    x = mjnp.asarray(np.array([7, -7, 0], np.int32))
    zero = mjnp.zeros(3, mjnp.int32)
    np.testing.assert_array_equal(x // zero, [-2, -2, -1])
    np.testing.assert_array_equal(x % zero, [0, 0, 0])
    np.testing.assert_array_equal(mjnp.fmod(x, zero), [0, 0, 0])
    np.testing.assert_array_equal(minijax.lax.div(x, zero), [-1, -1, -1])
    np.testing.assert_array_equal(minijax.lax.rem(x, zero), [7, -7, 0])
    u = mjnp.asarray(np.array([7], np.uint32))
    assert int((u // 0)[0]) == 2**32 - 1
    assert int((u % 0)[0]) == 0


def test_float_floor_divide_is_pythons():
    # floor(1.0 / 0.1) is 10; Python (and jax) say 9.
    assert float(mjnp.floor_divide(1.0, 0.1)) == 1.0 // 0.1 == 9.0
    q, r = mjnp.divmod(mjnp.float32(7.0), mjnp.float32(-2.0))
    assert (float(q), float(r)) == divmod(7.0, -2.0)


def test_floor_divide_rejects_complex():
    with pytest.raises(TypeError, match="complex"):
        mjnp.floor_divide(mjnp.asarray(1 + 1j), 2)
    with pytest.raises(TypeError):
        jjnp.floor_divide(jjnp.asarray(1 + 1j), 2)
