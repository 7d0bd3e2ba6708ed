"""Collectives over named axes inside vmap, against jax.vmap(axis_name=...)."""

import jax
import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.lax.parallel import replica_groups

X = np.arange(12, dtype=np.float32).reshape(3, 4)

CASES = [
    ("psum", lambda L: (lambda v: v - L.psum(v, "i"))),
    ("pmean", lambda L: (lambda v: L.pmean(v, "i"))),
    ("pmax", lambda L: (lambda v: L.pmax(v, "i"))),
    ("pmin", lambda L: (lambda v: L.pmin(v, "i") + v)),
    ("all_gather", lambda L: (lambda v: L.all_gather(v, "i"))),
    ("all_gather_axis1", lambda L: (lambda v: L.all_gather(v, "i", axis=1))),
    ("all_gather_tiled", lambda L: (lambda v: L.all_gather(v, "i", tiled=True))),
    ("axis_index", lambda L: (lambda v: v * L.axis_index("i"))),
    ("ppermute", lambda L: (lambda v: L.ppermute(v, "i", [(0, 1), (1, 2), (2, 0)]))),
    ("ppermute_4", lambda L: (lambda v: L.ppermute(v, "i", [(0, 2), (2, 1), (1, 3), (3, 0)]))),
    ("psum_unbatched", lambda L: (lambda v: L.psum(2.0, "i") * v)),
]


# ppermute permutations must cover the mapped axis: the 3-cycle is for in_axes=0 (size 3),
# the 4-cycle for in_axes=1 (size 4).
PARAMS = [(name, make, ax) for name, make in CASES for ax in (0, 1)
          if not (name == "ppermute" and ax == 1) and not (name == "ppermute_4" and ax == 0)]


@pytest.mark.parametrize("name,make,in_axes", PARAMS, ids=[f"{p[0]}-{p[2]}" for p in PARAMS])
def test_collectives_in_vmap_match_jax(name, make, in_axes):
    ours = minijax.vmap(make(lax), in_axes=in_axes, axis_name="i")(X)
    theirs = jax.vmap(make(jax.lax), in_axes=in_axes, axis_name="i")(X)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


def test_nested_vmaps_over_different_names():
    def g(L):
        return lambda v: L.psum(v, "i") + 10 * L.psum(v, "j") + 100 * L.psum(v, ("i", "j"))
    ours = minijax.vmap(minijax.vmap(g(lax), axis_name="j"), axis_name="i")(X)
    theirs = jax.vmap(jax.vmap(g(jax.lax), axis_name="j"), axis_name="i")(X)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


def test_collectives_under_jit_and_grad():
    f = minijax.jit(minijax.vmap(lambda v: v - lax.pmean(v, "i"), axis_name="i"))
    np.testing.assert_allclose(np.asarray(f(X)), X - X.mean(0), rtol=1e-6)
    text = f.lower(X).as_text()
    assert "stablehlo.while" not in text and "all_reduce" not in text


def test_unknown_axis_name_is_a_name_error_listing_names():
    with pytest.raises(NameError, match=r"unbound axis name: 'k'.*\['i'\]"):
        minijax.vmap(lambda v: lax.psum(v, "k"), axis_name="i")(X)
    with pytest.raises(NameError, match="unbound axis name: 'i'"):
        lax.psum(X, "i")


def test_replica_groups_of_the_reference_axis_env():
    env = [("i", 4), ("j", 2)]
    assert replica_groups(env, ("i",)) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert replica_groups(env, ("j",)) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert replica_groups(env, ("i", "j")) == [[0, 1, 2, 3, 4, 5, 6, 7]]
    assert replica_groups([("i", 4)], ("i",)) == [[0, 1, 2, 3]]
