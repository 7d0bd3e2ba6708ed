"""Pytrees as the transformations see them.

The same functions as ``minijax.tree_util``, on ``transform_registry``: it holds every
node type of the public registry plus typed PRNG key arrays, which are nodes over their
uint32 words here (leaves in ``minijax.tree_util``, as in jax). ``jit``, ``vmap``,
``grad``, ``lax.scan``, ``device_put`` and the rest flatten their arguments and
results with these, so a key crosses them as its words and comes back out as a key.
"""

from __future__ import annotations

import collections
from typing import Any
from collections.abc import Callable

from minijax.runtime.pytree import transform_registry
from minijax.tree_util import (DictKey, FlattenedIndexKey, GetAttrKey, Partial,  # noqa: F401
                               PrefixMismatchError, PyTreeDef, SequenceKey, _broadcast_prefix,
                               _path_leaf_predicate, _tree_broadcast, keystr,
                               register_pytree_node, register_pytree_node_class,
                               tree_unflatten, treedef_children)

registry = transform_registry
_flatten = transform_registry.flatten


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    return _flatten(tree, is_leaf)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    return _flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return _flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None):
    leaves, treedef = _flatten(tree, is_leaf)
    all_leaves = [leaves] + [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(*all_leaves))


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False):
    return transform_registry.flatten_with_path(
        tree, _path_leaf_predicate(is_leaf, is_leaf_takes_path))


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False):
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable, tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False):
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    rests = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(p, x, *(r[i] for r in rests)) for i, (p, x) in enumerate(pairs))


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    return _tree_broadcast(_flatten, prefix_tree, full_tree, is_leaf)


def broadcast_prefix(prefix: Any, full: Any, is_leaf: Callable[[Any], bool]) -> list:
    return _broadcast_prefix(_flatten, prefix, full, is_leaf)


# OrderedDict and defaultdict are nodes of the transform registry (dict-like, as jax
# registers them). The public registry is jaxlib's default one that jax registers them
# in when it is imported: registering them there too would make that a duplicate.
def _ordered_dict_with_keys(d):
    keys = tuple(d)
    return [(DictKey(k), d[k]) for k in keys], keys


def _defaultdict_with_keys(d):
    keys = tuple(sorted(d))
    return [(DictKey(k), d[k]) for k in keys], (d.default_factory, keys)


transform_registry.register_node(
    collections.OrderedDict, lambda d: (list(d.values()), tuple(d)),
    lambda keys, values: collections.OrderedDict(zip(keys, values)), _ordered_dict_with_keys)
transform_registry.register_node(
    collections.defaultdict, lambda d: ([d[k] for k in sorted(d)], (d.default_factory,
                                                                   tuple(sorted(d)))),
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values)),
    _defaultdict_with_keys)


def trailing_dims(tree: Any) -> list[int]:
    """Per leaf of ``tree`` (this registry's), how many of its trailing dimensions belong
    to its element type rather than to the user's shape: a typed key array's word
    dimension (``key<fry>[3]`` is ``uint32[3, 2]`` here); 0 for every other leaf. For
    negative axes (vmap's ``in_axes=-1`` on keys counts from the key's last dimension)."""
    from minijax.runtime.pytree import registry as public_registry
    out: list[int] = []
    for leaf in public_registry.flatten(tree)[0]:
        inner = _flatten(leaf)[0]
        if getattr(type(leaf), "_typeof", None) is not None:
            out.extend(len(x.shape) - len(leaf.shape) for x in inner)
        else:
            out.extend([0] * len(inner))
    return out
