"""Wrapped -> Traced -> Lowered -> Compiled (mirrors ``jax.stages``)."""

from minijax.stages.jit import Wrapped
from minijax.stages.stages import ArgInfo, Compiled, Lowered, Traced

__all__ = ["ArgInfo", "Compiled", "Lowered", "Traced", "Wrapped"]
