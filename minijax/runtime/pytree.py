"""jaxlib's C++ pytree registry (private jaxlib API, wrapped here only)."""

from jaxlib import _jax

registry = _jax.pytree.default_registry()
PyTreeDef = _jax.pytree.PyTreeDef
SequenceKey = _jax.pytree.SequenceKey
DictKey = _jax.pytree.DictKey
GetAttrKey = _jax.pytree.GetAttrKey
FlattenedIndexKey = _jax.pytree.FlattenedIndexKey
treedef_tuple = _jax.pytree.treedef_tuple
all_leaves = _jax.pytree.all_leaves
