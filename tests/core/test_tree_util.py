"""minijax.tree_util against jax.tree_util."""

import collections

import jax
import pytest

from minijax import tree_util as tu

Point = collections.namedtuple("Point", "x y")
TREES = [
    1, (1, 2), [1, (2, 3)], {"b": 1, "a": [2, 3]}, None, (None, 1), Point(1, [2]),
    {"x": {"y": (1, None, [2, 3])}}, [],
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_flatten_unflatten_matches_jax(tree):
    leaves, treedef = tu.tree_flatten(tree)
    jleaves, _ = jax.tree_util.tree_flatten(tree)
    assert leaves == jleaves
    assert tu.tree_unflatten(treedef, leaves) == tree
    assert tu.tree_leaves(tree) == jleaves
    assert tu.tree_map(lambda v: v * 10, tree) == jax.tree_util.tree_map(lambda v: v * 10, tree)


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_key_paths_match_jax(tree):
    ours = [(tu.keystr(p), v) for p, v in tu.tree_flatten_with_path(tree)[0]]
    theirs = [(jax.tree_util.keystr(p), v)
              for p, v in jax.tree_util.tree_flatten_with_path(tree)[0]]
    assert ours == theirs


def test_tree_map_multiple_trees():
    assert tu.tree_map(lambda a, b: a + b, (1, [2]), (10, [20])) == (11, [22])


def test_register_pytree_node():
    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

    tu.register_pytree_node(Box, lambda bx: ((bx.a, bx.b), None), lambda _, c: Box(*c))
    leaves, treedef = tu.tree_flatten(Box(1, (2, 3)))
    assert leaves == [1, 2, 3]
    back = tu.tree_unflatten(treedef, [4, 5, 6])
    assert isinstance(back, Box) and back.a == 4 and back.b == (5, 6)


def test_register_pytree_node_class():
    @tu.register_pytree_node_class
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def tree_flatten(self):
            return (self.a, self.b), "aux"

        @classmethod
        def tree_unflatten(cls, aux, children):
            assert aux == "aux"
            return cls(*children)

    out = tu.tree_map(lambda v: v + 1, Pair(1, 2))
    assert (out.a, out.b) == (2, 3)


def test_tree_structure_and_is_leaf():
    s = tu.tree_structure({"a": (1, 2)})
    assert s.num_leaves == 2
    leaves = tu.tree_leaves([(1, 2), (3, 4)], is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), (3, 4)]


def test_broadcast_prefix_repeats_prefix_leaves_and_names_the_mismatch():
    from minijax.tree_util import PrefixMismatchError, broadcast_prefix
    is_int = lambda x: isinstance(x, int)  # noqa: E731
    full = ([0.0, 0.0], {"a": 0.0, "b": (0.0, 0.0)})
    assert broadcast_prefix(7, full, is_int) == [7] * 5
    assert broadcast_prefix((1, {"a": 2, "b": 3}), full, is_int) == [1, 1, 2, 3, 3]
    assert broadcast_prefix((1, {"a": 2, "b": (3, 4)}), full, is_int) == [1, 1, 2, 3, 4]
    with pytest.raises(PrefixMismatchError, match=r"\[1\]\['b'\]: \(3, 4, 5\)") as info:
        broadcast_prefix((1, {"a": 2, "b": (3, 4, 5)}), full, is_int)
    assert isinstance(info.value, ValueError) and info.value.where == "[1]['b']"
    with pytest.raises(PrefixMismatchError, match="the top level"):
        broadcast_prefix((1, 2, 3), full, is_int)
