"""Wrapped -> Traced -> Lowered -> Compiled (mirrors ``jax.stages``).

``serialize(compiled)`` / ``deserialize(data)`` save and load a ``Compiled``
without recompiling (the bytes are native code: load only bytes you trust);
``register_pytree_node_serialization`` / ``register_namedtuple_serialization``
name the custom pytree node types they may contain.
"""

from minijax.stages.jit import Wrapped
from minijax.stages.serialization import (DeserializationError, deserialize,
                                          register_namedtuple_serialization,
                                          register_pytree_node_serialization, serialize)
from minijax.stages.stages import ArgInfo, Compiled, Lowered, Traced

__all__ = ["ArgInfo", "Compiled", "DeserializationError", "Lowered", "Traced", "Wrapped",
           "deserialize", "register_namedtuple_serialization",
           "register_pytree_node_serialization", "serialize"]
