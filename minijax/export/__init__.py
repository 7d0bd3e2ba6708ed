"""``minijax.export``: serialize a jitted function as versioned StableHLO, in jax's own
format, and call it later (from another process, or from jax 0.10.2).

    >>> exp = minijax.export.export(minijax.jit(f))(x)        # an Exported
    >>> blob = exp.serialize()                                # jax's flatbuffer bytes
    >>> minijax.export.deserialize(blob).call(x)              # or jax.export.deserialize

Shape polymorphism (symbolic dimensions) is not implemented: ``symbolic_shape`` and
``symbolic_args_specs`` raise NotImplementedError.
"""

from __future__ import annotations

from minijax.export._export import (  # noqa: F401
    DisabledSafetyCheck, Exported, call, call_exported, default_export_platform, export,
    maximum_supported_calling_convention_version, minimum_supported_calling_convention_version)
from minijax.export._serialization import deserialize as _deserialize
from minijax.stages.serialization import (register_namedtuple_serialization,
                                          register_pytree_node_serialization)

__all__ = ["DisabledSafetyCheck", "Exported", "SymbolicScope", "default_export_platform",
           "deserialize", "export", "is_symbolic_dim",
           "maximum_supported_calling_convention_version",
           "minimum_supported_calling_convention_version", "register_namedtuple_serialization",
           "register_pytree_node_serialization", "symbolic_args_specs", "symbolic_shape"]

_NO_POLY = ("shape polymorphism (symbolic dimensions) is not implemented in minijax; "
            "export for each concrete shape instead")


def deserialize(blob: bytearray) -> Exported:
    """The ``Exported`` that ``Exported.serialize`` (minijax's or jax's) wrote.

    Raises ValueError for bytes that are not a serialized Exported (nothing runs)."""
    return _deserialize(blob)


class SymbolicScope:
    """Constraints shared by symbolic dimensions (not implemented in minijax)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(_NO_POLY)


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
    """Not implemented in minijax (shape polymorphism)."""
    raise NotImplementedError(_NO_POLY)


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
    """Not implemented in minijax (shape polymorphism)."""
    raise NotImplementedError(_NO_POLY)


def is_symbolic_dim(p) -> bool:
    """Whether ``p`` is a symbolic dimension (never, in minijax)."""
    return False
