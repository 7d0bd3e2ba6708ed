"""Pytrees: nested containers of arrays, flattened by jaxlib's C++ registry.

Mirrors ``jax.tree_util``: tuples, lists, dicts, ``None`` and namedtuples are
containers; anything else is a leaf unless registered with
``register_pytree_node``. Typed PRNG key arrays are leaves, as in jax (the
transformations unpack them to their uint32 words with the registry of
``minijax._pytree``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any
from collections.abc import Callable, Hashable, Iterable, Sequence

from minijax.runtime.pytree import (REGISTRIES, DictKey, FlattenedIndexKey, GetAttrKey,
                                    PyTreeDef, SequenceKey, registry, treedef_tuple)
from minijax.runtime.pytree import all_leaves as _all_leaves

__all__ = [
    "PyTreeDef", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map",
    "register_pytree_node", "register_pytree_node_class", "register_pytree_with_keys",
    "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path", "keystr",
    "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey", "treedef_tuple", "tree_all",
    "tree_reduce", "tree_transpose", "treedef_children", "treedef_is_leaf",
    "tree_broadcast", "tree_reduce_associative", "all_leaves", "flatten_one_level",
    "flatten_one_level_with_keys", "is_tree_node", "register_dataclass", "register_static",
    "register_pytree_with_keys_class", "default_registry", "KeyEntry", "KeyPath", "Partial",
]

default_registry = registry
KeyEntry = Any  # SequenceKey, DictKey, GetAttrKey or FlattenedIndexKey (or a custom key)
KeyPath = tuple  # a tuple of KeyEntry


class _Unspecified:
    def __repr__(self) -> str:
        return "<unspecified>"


_UNSPECIFIED = _Unspecified()

_flatten = registry.flatten


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """``(leaves, treedef)`` for ``tree``."""
    return _flatten(tree, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    return _flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return _flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None):
    leaves, treedef = _flatten(tree, is_leaf)
    all_leaves = [leaves] + [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(*all_leaves))


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every leaf of ``tree`` is truthy (``all`` of its leaves)."""
    return all(tree_leaves(tree, is_leaf))


def tree_reduce(function: Callable, tree: Any, initializer: Any = _UNSPECIFIED,
                is_leaf: Callable[[Any], bool] | None = None):
    """``functools.reduce`` over the leaves of ``tree``."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _UNSPECIFIED:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation: Callable, tree: Any, *, identity: Any = _UNSPECIFIED,
                            is_leaf: Callable[[Any], bool] | None = None):
    """Reduce the leaves of ``tree`` with an associative ``operation``, pairing neighbours
    level by level (a balanced tree of calls, as jax does). ``identity`` is the result for
    a tree without leaves (else TypeError)."""
    items = tree_leaves(tree, is_leaf)
    if not items:
        if identity is _UNSPECIFIED:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    while len(items) > 1:
        paired = [operation(a, b) for a, b in zip(items[::2], items[1::2])]
        items = paired + items[len(paired) * 2:]
    return items[0]


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``prefix_tree`` with each of its leaves repeated over the subtree of ``full_tree``
    below it, so that the result has ``full_tree``'s structure."""
    return _tree_broadcast(_flatten, prefix_tree, full_tree, is_leaf)


def _tree_broadcast(flatten, prefix_tree, full_tree, is_leaf):
    full_def = flatten(full_tree, is_leaf)[1]
    leaves, prefix_def = flatten(prefix_tree, is_leaf)
    subtrees = prefix_def.flatten_up_to(full_tree)  # ValueError where it is no prefix
    out = [x for x, sub in zip(leaves, subtrees)
           for _ in range(flatten(sub, is_leaf)[1].num_leaves)]
    return full_def.unflatten(out)


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every element of ``iterable`` is a leaf."""
    if is_leaf is None:
        return _all_leaves(registry, iterable)
    items = list(iterable)
    return items == tree_leaves(items, is_leaf)


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
    """``(children, aux_data)`` of the top node of ``tree``; ValueError for a leaf."""
    out = registry.flatten_one_level(tree)
    if out is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return out


def flatten_one_level_with_keys(tree: Any):
    """``([(key, child), ...], aux_data)`` of the top node of ``tree``; ValueError for a
    leaf."""
    out = registry.flatten_one_level_with_keys(tree)
    if out is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return out


def is_tree_node(typ: type) -> bool:
    """Whether instances of ``typ`` are pytree nodes (not leaves)."""
    return registry.is_node(typ)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.num_nodes == 1


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turn a tree of structure ``outer`` of trees of structure ``inner`` into a tree of
    structure ``inner`` of trees of structure ``outer``. ``inner_treedef=None`` takes
    the structure of the first inner tree.

    >>> tree_transpose(tree_structure([0, 0]), tree_structure((0, 0)), [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    flat = outer_treedef.flatten_up_to(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(flat[0]) if flat else tree_structure(None)
    expected = outer_treedef.compose(inner_treedef)
    got = tree_structure(pytree_to_transpose)
    if got != expected:
        raise TypeError(f"Mismatch\n{got}\n != \n{expected}")
    inner_flat = [inner_treedef.flatten_up_to(x) for x in flat]
    cols = list(zip(*inner_flat)) if inner_flat else [()] * inner_treedef.num_leaves
    return inner_treedef.unflatten(outer_treedef.unflatten(c) for c in cols)


def _registries_for(nodetype: type) -> tuple:
    """The registries to register ``nodetype`` in: both, except when it is already a node
    of the public registry only. That registry is jaxlib's default one, shared with jax
    when both are imported: a type jax registered is then registered for minijax's
    transformations alone (a second public registration would be a duplicate)."""
    if registry.is_node(nodetype) and not REGISTRIES[1].is_node(nodetype):
        return REGISTRIES[1:]
    return REGISTRIES


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Register ``nodetype`` as a container: ``flatten_func(x) -> (children, aux)``,
    ``unflatten_func(aux, children) -> x``."""
    for reg in _registries_for(nodetype):
        if flatten_with_keys_func is None:
            reg.register_node(nodetype, flatten_func, unflatten_func)
        else:
            reg.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable, flatten_func: Callable | None = None):
    if flatten_func is None:
        def flatten_func(x):
            kids, aux = flatten_with_keys(x)
            return [c for _, c in kids], aux
    for reg in _registries_for(nodetype):
        reg.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: uses ``cls.tree_flatten`` and ``cls.tree_unflatten``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def _path_leaf_predicate(is_leaf, takes_path: bool):
    if is_leaf is None or takes_path:
        return is_leaf
    return lambda _, x: is_leaf(x)


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: uses ``cls.tree_flatten_with_keys`` and ``cls.tree_unflatten``
    (and ``cls.tree_flatten`` when the class defines it)."""
    flatten = getattr(cls, "tree_flatten", None)
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                              None if flatten is None else (lambda x: x.tree_flatten()))
    return cls


def register_dataclass(nodetype: type, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> type:
    """Register a class (typically a dataclass) whose ``data_fields`` are children and
    ``meta_fields`` static data. For a dataclass both default from its fields: those
    marked ``metadata={"static": True}`` (``minijax.tree.static``) are meta fields."""
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError("register_dataclass: data_fields and meta_fields must both be "
                            f"specified when either is specified. Got {data_fields=} "
                            f"{meta_fields=}.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required "
                            f"when nodetype is not a dataclass. Got {nodetype=}.")
        fields = [f for f in dataclasses.fields(nodetype) if f.init and
                  f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    for reg in _registries_for(nodetype):
        reg.register_dataclass_node(nodetype, list(data_fields), list(meta_fields))
    return nodetype


def register_static(cls: type) -> type:
    """Register ``cls`` as a node without children: its instances are static data
    (part of the tree structure, and of jit's cache key)."""
    register_pytree_with_keys(cls, lambda obj: ((), obj), lambda obj, _: obj)
    return cls


_flatten_with_path = registry.flatten_with_path


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False):
    """``([(key_path, leaf), ...], treedef)``; with ``is_leaf_takes_path`` the predicate is
    called as ``is_leaf(key_path, x)``."""
    return _flatten_with_path(tree, _path_leaf_predicate(is_leaf, is_leaf_takes_path))


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False):
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable, tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False):
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    rests = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(p, x, *(r[i] for r in rests)) for i, (p, x) in enumerate(pairs))


class PrefixMismatchError(ValueError):
    """``broadcast_prefix``: ``prefix`` does not match ``full`` at key path ``where``."""

    def __init__(self, where: str, prefix: Any, full: Any):
        super().__init__(f"{where or 'the top level'}: {prefix!r} is not a pytree prefix of "
                         f"{full!r}")
        self.where, self.prefix, self.full = where, prefix, full


def broadcast_prefix(prefix: Any, full: Any, is_leaf: Callable[[Any], bool]) -> list:
    """Each leaf of ``prefix`` repeated once per leaf of ``full`` below it, in ``full``'s
    flattening order.

    ``prefix`` is a pytree prefix of ``full`` built from tuples, lists and dicts, whose
    leaves are the values ``is_leaf`` accepts (shardings, PartitionSpecs, None, ...).
    Raises ``PrefixMismatchError`` naming the key path where it does not match.

    >>> broadcast_prefix((1, {"a": 2}), ([0, 0], {"a": 0}), lambda x: isinstance(x, int))
    [1, 1, 2]
    """
    return _broadcast_prefix(_flatten, prefix, full, is_leaf)


def _broadcast_prefix(flatten, prefix, full, is_leaf) -> list:
    out: list = []

    def walk(p, sub, where):
        if is_leaf(p):
            out.extend([p] * len(flatten(sub)[0]))
        elif isinstance(p, (tuple, list)) and isinstance(sub, (tuple, list)) \
                and len(p) == len(sub):
            for k, (a, b) in enumerate(zip(p, sub)):
                walk(a, b, f"{where}[{k}]")
        elif isinstance(p, dict) and isinstance(sub, dict) and set(p) == set(sub):
            for k in p:
                walk(p[k], sub[k], f"{where}[{k!r}]")
        elif (pair := _custom_children(flatten, p, sub)) is not None:
            # a registered node type (flax's State, NodeStates...): the same type and
            # metadata, then child by child, as jax's prefix matching
            for k, (a, b) in enumerate(zip(*pair)):
                walk(a, b, f"{where}[<flat index {k}>]")
        else:
            raise PrefixMismatchError(where, p, sub)

    walk(prefix, full, "")
    return out


def _custom_children(flatten, p, sub):
    """``(children of p, children of sub)`` when both are nodes of one registered type
    with equal metadata (in the registry ``flatten`` belongs to), else None."""
    reg = getattr(flatten, "__self__", None)
    if reg is None or p is None or type(p) is not type(sub):
        return None
    one_p, one_s = reg.flatten_one_level(p), reg.flatten_one_level(sub)
    if one_p is None or one_s is None or len(one_p[0]) != len(one_s[0]):
        return None
    try:
        same = bool(one_p[1] == one_s[1])
    except Exception:  # noqa: BLE001 - metadata that does not compare: not the same
        same = False
    return (list(one_p[0]), list(one_s[0])) if same else None


def keystr(path: tuple, *, simple: bool = False, separator: str = "") -> str:
    """``"[0]['w']"`` for a key path, as in jax; ``simple=True`` writes each key bare
    (``0``, ``w``), and ``separator`` joins the keys (``keystr(p, simple=True,
    separator='/')`` is ``"0/w"``). Entries that are not key objects print as ``str``."""
    return separator.join((_simple_key_str if simple else _key_str)(k) for k in path)


def _key_str(k) -> str:
    if isinstance(k, SequenceKey):
        return f"[{k.idx}]"
    if isinstance(k, DictKey):
        return f"[{k.key!r}]"
    if isinstance(k, GetAttrKey):
        return f".{k.name}"
    if isinstance(k, FlattenedIndexKey):
        return f"[<flat index {k.key}>]"
    return str(k)


def _simple_key_str(k) -> str:
    if isinstance(k, SequenceKey):
        return str(k.idx)
    if isinstance(k, DictKey):
        return str(k.key)
    if isinstance(k, GetAttrKey):
        return str(k.name)
    if isinstance(k, FlattenedIndexKey):
        return str(k.key)
    return str(k)


class Partial:
    """A function with some arguments bound, that is a pytree whose leaves are those
    arguments (as ``jax.tree_util.Partial``): it can cross ``jit``/``custom_vjp``
    boundaries as data."""

    __slots__ = ("func", "args", "keywords")

    def __init__(self, func: Callable, *args, **keywords):
        self.func = func
        self.args = args
        self.keywords = keywords

    def __call__(self, *args, **kwargs):
        return self.func(*self.args, *args, **{**self.keywords, **kwargs})

    def __repr__(self) -> str:
        return f"Partial({self.func!r}, {len(self.args)} args)"


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)
