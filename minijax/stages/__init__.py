"""Wrapped -> Traced -> Lowered -> Compiled (mirrors ``jax.stages``).

``serialize(compiled)`` / ``deserialize(data)`` save and load a ``Compiled``
without recompiling.
"""

from minijax.stages.jit import Wrapped
from minijax.stages.serialization import DeserializationError, deserialize, serialize
from minijax.stages.stages import ArgInfo, Compiled, Lowered, Traced

__all__ = ["ArgInfo", "Compiled", "DeserializationError", "Lowered", "Traced", "Wrapped",
           "deserialize", "serialize"]
