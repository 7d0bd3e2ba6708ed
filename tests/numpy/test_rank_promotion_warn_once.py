"""``numpy_rank_promotion='warn'`` warns as jax does: when a numpy function is traced for
operand types it has not seen, so once per (function, operand types), whether the call is
eager, under jit (a fresh jit too), vmap or grad, with device or NumPy operands; and
``where`` never checks ranks. Each case uses shapes no other test uses (the record of
warned-about operand types lives as long as the process, as jax's trace caches)."""

import warnings

import jax
import jax.numpy as jjnp
import numpy as np

import minijax
import minijax.numpy as jnp


def _count(fn) -> int:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return sum("rank promotion" in str(x.message) for x in w)


def _script(m, np_, n):
    """How many warnings each step gives: operands (n,) and (2, n), with a given n."""
    x, y = np_.ones(n), np_.ones((2, n))
    yh = np.ones((2, n), np.float32)
    xi = np_.ones(n, np_.int32)
    steps = [
        lambda: np_.add(x, y),                 # first trace of add for these: warns
        lambda: np_.add(x, y),                 # cached
        lambda: x + y,                         # the same function as add
        lambda: np_.add(x, yh),                # NumPy operand, same types: cached
        lambda: np_.add(x, yh),
        lambda: np_.add(xi, y),                # other dtypes: a new trace
        lambda: np_.add(xi, y),
        lambda: np_.multiply(x, y),            # another function
        lambda: m.jit(lambda a, b: a * b)(x, y),   # a fresh jit: multiply's trace is cached
        lambda: m.jit(lambda a, b: a - b)(x, y),   # subtract: first time, under jit
        lambda: np_.subtract(x, y),
        lambda: m.vmap(lambda a: np_.maximum(a, y))(np_.ones((3, n))),
        lambda: m.vmap(lambda a: np_.maximum(a, y))(np_.ones((3, n))),
        lambda: m.grad(lambda a: np_.power(a, y).sum())(x),
        lambda: m.grad(lambda a: np_.power(a, y).sum())(x),
        lambda: np_.where(True, x, y),         # where: no rank check at all
        lambda: np_.where(x > 0, x, y),
    ]
    with m.numpy_rank_promotion("warn"):
        return [_count(s) for s in steps]


def test_rank_promotion_warns_once_per_operand_types_like_jax():
    want = _script(jax, jjnp, 7)
    assert sum(want) >= 4  # the script does exercise warnings
    assert _script(minijax, jnp, 7) == want


def test_where_broadcasts_ranks_in_raise_mode_like_jax():
    for m, np_ in ((minijax, jnp), (jax, jjnp)):
        with m.numpy_rank_promotion("raise"):
            out = np_.where(np_.ones((2, 9)) > 0, np_.ones(9), 2)
            assert out.shape == (2, 9)
            try:
                np_.add(np_.ones(9), np_.ones((2, 9)))
            except ValueError as e:
                assert "jax_numpy_rank_promotion='raise'" in str(e)
            else:
                raise AssertionError(f"{m.__name__}: add did not raise")


def test_raise_mode_raises_every_call_and_later_warn_still_warns():
    # A failed trace is not cached, in jax as here: 'raise' raises each time, and the
    # first 'warn' call afterwards warns.
    for m, np_ in ((minijax, jnp), (jax, jjnp)):
        x, y = np_.ones(11), np_.ones((2, 11))
        with m.numpy_rank_promotion("raise"):
            for _ in range(2):
                try:
                    np_.arctan2(x, y)
                except ValueError:
                    pass
                else:
                    raise AssertionError(m.__name__)
        with m.numpy_rank_promotion("warn"):
            assert [_count(lambda: np_.arctan2(x, y)) for _ in range(2)] == [1, 0], m.__name__
