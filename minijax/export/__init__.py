"""``minijax.export``: serialize a jitted function as versioned StableHLO, in jax's own
format, and call it later (from another process, or from jax 0.10.2).

    >>> exp = minijax.export.export(minijax.jit(f))(x)        # an Exported
    >>> blob = exp.serialize()                                # jax's flatbuffer bytes
    >>> minijax.export.deserialize(blob).call(x)              # or jax.export.deserialize

Shape polymorphism: ``symbolic_shape("b, 3")`` gives dimension expressions
(``minijax.core.shape_poly``) for ``ShapeDtypeStruct`` shapes; ``export`` then lowers
to dynamic-shaped StableHLO (``tensor<?x3xf32>``) and ``Exported.call`` refines it to
the concrete shapes of each call.
"""

from __future__ import annotations

from collections.abc import Sequence

from minijax.core.aval import ShapeDtypeStruct
from minijax.core.shape_poly import DimExpr, SymbolicScope, symbolic_shape  # noqa: F401
from minijax.export._export import (  # noqa: F401
    DisabledSafetyCheck, Exported, call, call_exported, default_export_platform, export,
    maximum_supported_calling_convention_version, minimum_supported_calling_convention_version,
    shape_and_dtype)
from minijax.export._serialization import deserialize as _deserialize
from minijax.tree_util import tree_unflatten
from minijax.stages.serialization import (register_namedtuple_serialization,
                                          register_pytree_node_serialization)

__all__ = ["DisabledSafetyCheck", "Exported", "SymbolicScope", "default_export_platform",
           "deserialize", "export", "is_symbolic_dim",
           "maximum_supported_calling_convention_version",
           "minimum_supported_calling_convention_version", "register_namedtuple_serialization",
           "register_pytree_node_serialization", "symbolic_args_specs", "symbolic_shape"]



def deserialize(blob: bytearray) -> Exported:
    """The ``Exported`` that ``Exported.serialize`` (minijax's or jax's) wrote.

    Raises ValueError for bytes that are not a serialized Exported (nothing runs)."""
    return _deserialize(blob)


def symbolic_args_specs(args, shapes_specs, constraints: Sequence[str] = (),
                        scope: SymbolicScope | None = None):
    """``ShapeDtypeStruct`` specs like ``args`` (arrays or structs) with the symbolic
    shapes of ``shapes_specs`` (None, one spec string for all, or a pytree prefix of
    ``args``); placeholders ``_`` and ``...`` take ``args``' sizes.

    >>> import numpy as np
    >>> symbolic_args_specs(np.zeros((2, 3), np.float32), "b, _")
    ShapeDtypeStruct(shape=(b, 3), dtype=float32)
    """
    from minijax.tree_util import broadcast_prefix, tree_flatten
    leaves, tree = tree_flatten(args)
    specs = shapes_specs
    if isinstance(args, tuple) and isinstance(specs, list):
        specs = tuple(specs)
    try:
        flat_specs = broadcast_prefix(specs, args,
                                      is_leaf=lambda x: x is None or isinstance(x, str))
    except ValueError as e:
        raise ValueError(f"export.symbolic_args_specs shapes_specs: {e}") from None
    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot use both `scope` and `constraints`")
    out = []
    for leaf, spec in zip(leaves, flat_specs):
        shape, dtype = shape_and_dtype(leaf)
        out.append(ShapeDtypeStruct(symbolic_shape(spec, like=shape, scope=scope), dtype))
    return tree_unflatten(tree, out)


def is_symbolic_dim(p) -> bool:
    """Whether ``p`` is a symbolic dimension (a dimension expression)."""
    return isinstance(p, DimExpr)
