"""``jax._src.tree_util._registry`` as flax reads it: ``type in registry`` says whether the
type is a pytree node type in minijax's registry."""

from __future__ import annotations

from minijax.tree_util import is_tree_node


class _RegistryView:
    def __contains__(self, typ) -> bool:
        try:
            return isinstance(typ, type) and is_tree_node(typ)
        except TypeError:
            return False

    def __repr__(self) -> str:
        return "<minijax's pytree registry>"


registry = _RegistryView()
