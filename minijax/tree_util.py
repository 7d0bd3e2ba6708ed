"""Pytrees: nested containers of arrays, flattened by jaxlib's C++ registry.

Mirrors ``jax.tree_util``: tuples, lists, dicts, ``None`` and namedtuples are
containers; anything else is a leaf unless registered with
``register_pytree_node``.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable, Iterable

from minijax.runtime.pytree import (DictKey, FlattenedIndexKey, GetAttrKey, PyTreeDef,
                                    SequenceKey, registry, treedef_tuple)

__all__ = [
    "PyTreeDef", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map",
    "register_pytree_node", "register_pytree_node_class", "register_pytree_with_keys",
    "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path", "keystr",
    "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey", "treedef_tuple", "tree_all",
    "tree_reduce", "tree_transpose", "treedef_children", "treedef_is_leaf",
]

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


def tree_all(tree: Any) -> bool:
    return all(tree_leaves(tree))


def tree_reduce(f: Callable, tree: Any, *initializer):
    import functools
    return functools.reduce(f, tree_leaves(tree), *initializer)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.num_nodes == 1


def tree_transpose(outer: PyTreeDef, inner: PyTreeDef, tree: Any):
    flat = outer.flatten_up_to(tree)
    inner_flat = [inner.flatten_up_to(x) for x in flat]
    cols = list(zip(*inner_flat)) if inner_flat else [()] * inner.num_leaves
    return inner.unflatten(outer.unflatten(c) for c in cols)


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Register ``nodetype`` as a container: ``flatten_func(x) -> (children, aux)``,
    ``unflatten_func(aux, children) -> x``."""
    if flatten_with_keys_func is None:
        registry.register_node(nodetype, flatten_func, unflatten_func)
    else:
        registry.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable, flatten_func: Callable | None = None):
    if flatten_func is None:
        def flatten_func(x):
            kids, aux = flatten_with_keys(x)
            return [c for _, c in kids], aux
    registry.register_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: uses ``cls.tree_flatten`` and ``cls.tree_unflatten``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def tree_flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    """``([(key_path, leaf), ...], treedef)``."""
    return registry.flatten_with_path(tree, is_leaf)


def tree_leaves_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    return registry.flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f: Callable, tree: Any, *rest: Any,
                       is_leaf: Callable[[Any], bool] | None = None):
    pairs, treedef = registry.flatten_with_path(tree, is_leaf)
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
    out: list = []

    def walk(p, sub, where):
        if is_leaf(p):
            out.extend([p] * len(tree_flatten(sub)[0]))
        elif isinstance(p, (tuple, list)) and isinstance(sub, (tuple, list)) \
                and len(p) == len(sub):
            for k, (a, b) in enumerate(zip(p, sub)):
                walk(a, b, f"{where}[{k}]")
        elif isinstance(p, dict) and isinstance(sub, dict) and set(p) == set(sub):
            for k in p:
                walk(p[k], sub[k], f"{where}[{k!r}]")
        else:
            raise PrefixMismatchError(where, p, sub)

    walk(prefix, full, "")
    return out


def keystr(path: tuple) -> str:
    """``"[0]['w']"`` for a key path, as in jax."""
    return "".join(_key_str(k) for k in path)


def _key_str(k) -> str:
    if isinstance(k, SequenceKey):
        return f"[{k.idx}]"
    if isinstance(k, DictKey):
        return f"[{k.key!r}]"
    if isinstance(k, GetAttrKey):
        return f".{k.name}"
    if isinstance(k, FlattenedIndexKey):
        return f"[<flat index {k.key}>]"
    return f"[{k!r}]"


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


registry.register_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)
