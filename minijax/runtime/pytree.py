"""jaxlib's C++ pytree registries (private jaxlib API, wrapped here only).

``registry`` is the public one (``minijax.tree_util``): typed PRNG key arrays are
leaves in it, as in jax. ``transform_registry`` is what the transformations flatten
their arguments and results with: the same node types, plus typed key arrays as nodes
over their uint32 words, so a key crosses ``jit``/``vmap``/``scan``/... as its words
and comes out as a key again (jax unpacks keys across its dispatch boundary the same
way). ``minijax.tree_util.register_pytree_node`` and friends register into both.
"""

from jaxlib import _jax

registry = _jax.pytree.default_registry()
transform_registry = _jax.pytree.PyTreeRegistry(
    enable_none=True, enable_tuple=True, enable_namedtuple=True, enable_list=True,
    enable_dict=True)
REGISTRIES = (registry, transform_registry)
PyTreeDef = _jax.pytree.PyTreeDef
SequenceKey = _jax.pytree.SequenceKey
DictKey = _jax.pytree.DictKey
GetAttrKey = _jax.pytree.GetAttrKey
FlattenedIndexKey = _jax.pytree.FlattenedIndexKey


def treedef_tuple(treedefs) -> PyTreeDef:
    """The treedef of a tuple of the structures ``treedefs`` (an iterable), over the
    public registry, as jax's ``tree_util.treedef_tuple``."""
    return _jax.pytree.treedef_tuple(registry, list(treedefs))


all_leaves = _jax.pytree.all_leaves
