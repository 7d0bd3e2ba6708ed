"""Elementwise promotion replayed from its plan (numpy/_promote.py) does what the first
call did, and follows the flags that change promotion, as jax does."""

import warnings

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from tests.numpy._util import assert_same, x64_mode

A16 = np.linspace(-1, 1, 12, dtype=np.float16).reshape(3, 4)
I32 = np.arange(4, dtype=np.int32)
B = np.array([True, False, True, False])

# Operand mixes: dtypes (with weak Python scalars), rank promotion, size-1 dims.
CASES = [
    lambda np_, a, i, b: a + i,
    lambda np_, a, i, b: a * 2,
    lambda np_, a, i, b: i * 2.5,
    lambda np_, a, i, b: 3 - i,
    lambda np_, a, i, b: b + b,
    lambda np_, a, i, b: np_.maximum(a, i[None]),
    lambda np_, a, i, b: np_.hypot(i, 2),
    lambda np_, a, i, b: np_.square(b),
    lambda np_, a, i, b: np_.sqrt(i),
    lambda np_, a, i, b: a[:, :1] + a[:1, :],
    lambda np_, a, i, b: a[:, None, :] * i[:, None],
    lambda np_, a, i, b: np_.where(b, i, 0.5),
    lambda np_, a, i, b: np_.arctan2(a, i),
    lambda np_, a, i, b: a - 1.5j,
]


def _twice(np_, f):
    # The second application replays the plan the first one made.
    return lambda a, i, b: (f(np_, a, i, b), f(np_, a, i, b))


@pytest.mark.parametrize("x64", [False, True])
def test_replayed_promotion_matches_first_call_and_jax(x64):
    with x64_mode(x64):
        for f in CASES:
            jaxpr = minijax.make_jaxpr(_twice(jnp, f))(A16, I32, B).jaxpr
            n = len(jaxpr.eqns) // 2
            first, again = jaxpr.eqns[:n], jaxpr.eqns[n:]
            assert [(e.primitive, e.params, [v.aval for v in e.outvars]) for e in first] == \
                [(e.primitive, e.params, [v.aval for v in e.outvars]) for e in again]
            got = minijax.jit(_twice(jnp, f))(A16, I32, B)
            want = jax.jit(_twice(jjnp, f))(A16, I32, B)
            assert_same(got, want, rtol=2e-3, atol=2e-3)


def test_rank_promotion_mode_applies_to_every_call_like_jax():
    # add, subtract, multiply share a plan for these operands (one promotion kind).
    for m, np_ in ((minijax, jnp), (jax, jjnp)):
        a, b = np_.ones(3), np_.ones((2, 3))
        assert (a + b).shape == (2, 3)  # allowed: a plan for these operands exists now
        with m.numpy_rank_promotion("raise"):
            for fn in (np_.add, np_.subtract):
                with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
                    fn(a, b)
        with m.numpy_rank_promotion("warn"), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            np_.multiply(a, b)
            np_.subtract(a, b)
            assert [str(x.message).split(" on shapes")[0][-20:] for x in w] == \
                ["rank promotion for multiply"[-20:], "rank promotion for subtract"[-20:]]
        assert (a * b).shape == (2, 3)


def test_strict_dtype_promotion_applies_to_every_call_like_jax():
    for m, np_ in ((minijax, jnp), (jax, jjnp)):
        x, i = np_.ones(3, np_.float32), np_.ones(3, np_.int32)
        assert (x + i).dtype == np.float32
        with m.numpy_dtype_promotion("strict"):
            for _ in range(2):
                with pytest.raises(m.dtypes.TypePromotionError,
                                   match="no available implicit dtype promotion"):
                    x + i
        assert (x + i).dtype == np.float32
