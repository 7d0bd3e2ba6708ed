"""jit calls whose every output is an unchanged input run no executable: the outputs are
new Arrays over the input buffers (stages/entry.py ``forwarded_inputs``). Compared with
the unjitted function and with the executable path over random trees and repeated calls,
on both dispatch paths."""

import random

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp


def _tree(rng, n):
    kinds = [lambda i: jnp.full((i % 3 + 1,), i, jnp.float32),
             lambda i: jnp.arange(i + 2, dtype=jnp.int32),
             lambda i: np.full((2,), i, np.float64 if i % 2 else np.float32),
             lambda i: float(i), lambda i: i]
    return {f"k{i}": rng.choice(kinds)(i) for i in range(n)}


@pytest.mark.parametrize("seed", range(6))
def test_forwarded_outputs_equal_the_unjitted_function(seed):
    rng = random.Random(seed)
    tree = _tree(rng, rng.randint(1, 6))
    keys = list(tree)
    rng.shuffle(keys)
    picked = keys[:rng.randint(1, len(keys))]

    def f(t):
        return [t[k] for k in picked], t[picked[0]]

    jf = minijax.jit(f)
    for _ in range(4):  # the first call traces; the others take the fast paths
        got = jf(tree)
        want = f(tree)
        for g, w in zip(minijax.tree_util.tree_leaves(got), minijax.tree_util.tree_leaves(want)):
            g_np, w_np = np.asarray(g), np.asarray(jnp.asarray(w))
            assert g_np.dtype == w_np.dtype and g_np.shape == w_np.shape
            np.testing.assert_array_equal(g_np, w_np)
            assert g.weak_type == jnp.asarray(w).weak_type


def test_identity_runs_no_executable_and_other_outputs_do():
    x, y = jnp.arange(4.0), jnp.ones(3, jnp.int32)
    ident = minijax.jit(lambda a, b: {"a": a, "b": b})
    for _ in range(3):
        out = ident(x, y)  # forwarded: the input buffers themselves
        assert out["a"].unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
        assert out["b"].unsafe_buffer_pointer() == y.unsafe_buffer_pointer()
        np.testing.assert_array_equal(out["a"], np.arange(4.0))
    mixed = minijax.jit(lambda a, b: (a, b + 1))  # one computed output: the program runs
    for _ in range(3):
        a, b = mixed(x, y)
        assert a.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
        np.testing.assert_array_equal(b, np.full(3, 2))


def test_not_forwarded_when_types_change_or_effects_or_donation(capfd):
    x = jnp.arange(3.0)
    # a cast, a donated input and a side effect each need the executable
    cast = minijax.jit(lambda a: a.astype(jnp.int32))
    assert cast(x).dtype == jnp.int32
    donating = minijax.jit(lambda a: a, donate_argnums=0)
    z = jnp.arange(3.0)
    np.testing.assert_array_equal(donating(z), np.arange(3.0))
    assert z.is_deleted()

    def printing(a):
        minijax.debug.print("seen {}", a)
        return a
    jp = minijax.jit(printing)
    jp(x)
    jp(x)
    minijax.effects_barrier()
    assert capfd.readouterr().out.count("seen") == 2


def test_forwarded_output_of_a_python_scalar_is_weak_and_on_device():
    f = minijax.jit(lambda a: a)
    for _ in range(3):
        out = f(2.5)
        assert out.weak_type and out.dtype == jnp.float32 and float(out) == 2.5
        assert isinstance(out, minijax.Array)


def test_copy_is_a_distinct_buffer():
    a = jnp.arange(3.0)
    b, c = jnp.copy(a), jnp.array(a)
    a.delete()
    np.testing.assert_array_equal(b, np.arange(3.0))
    np.testing.assert_array_equal(c, np.arange(3.0))
