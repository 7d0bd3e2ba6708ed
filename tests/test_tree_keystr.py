"""tree_util.keystr's simple= and separator= (flax names parameters with them), side by
side with jax, on every kind of key entry and on entries that are not key objects."""

from __future__ import annotations

import jax.tree_util as jtu
import pytest

import minijax.tree_util as mtu


def _path(tu):
    return (tu.DictKey("a"), tu.SequenceKey(0), tu.GetAttrKey("w"), tu.FlattenedIndexKey(3),
            "raw", 5)


@pytest.mark.parametrize("kwargs", [{}, {"simple": True}, {"separator": ","},
                                    {"simple": True, "separator": "/"}])
def test_keystr_like_jax(kwargs):
    assert mtu.keystr(_path(mtu), **kwargs) == jtu.keystr(_path(jtu), **kwargs)


def test_keystr_of_real_paths_like_jax():
    tree = {"foo": {"bar": {"baz": 1, "bat": [2, 3]}}}
    got = [mtu.keystr(p, simple=True, separator="/")
           for p, _ in mtu.tree_leaves_with_path(tree)]
    want = [jtu.keystr(p, simple=True, separator="/")
            for p, _ in jtu.tree_leaves_with_path(tree)]
    assert got == want == ["foo/bar/bat/0", "foo/bar/bat/1", "foo/bar/baz"]
