"""Saving a compiled function and loading it without compiling (mirrors
``jax.experimental.serialize_executable``).

    >>> payload, in_tree, out_tree = serialize(minijax.jit(f).lower(x).compile())
    >>> g = deserialize_and_load(payload, in_tree, out_tree)
    >>> g(x)

As in jax, the pytree structures are not in the bytes: ``serialize`` returns them and
the caller hands them back to ``deserialize_and_load``, so any pytree node type works.
Unlike jax, nothing is pickled: the bytes are ``minijax.stages.serialize``'s container
(a checksummed header and XLA's executable; see ``minijax.stages.serialization``),
and loading runs no Python code taken from them.

The bytes hold native code that runs in this process: load only bytes you trust.
"""

from __future__ import annotations

from collections.abc import Sequence

from minijax.stages import serialization as _ser

__all__ = ["deserialize_and_load", "serialize"]


def serialize(compiled):
    """``(bytes, in_tree, out_tree)`` of a ``Compiled``: its executable and types, and
    the structures of its ``(args, kwargs)`` and of its result.

    Raises:
      TypeError: ``compiled`` is not a ``minijax.stages.Compiled``.
      ValueError: the executable cannot be serialized (host callbacks).
    """
    from minijax.stages.stages import Compiled
    if not isinstance(compiled, Compiled):
        raise TypeError(f"serialize expects a minijax.stages.Compiled, got {type(compiled)}")
    payload = _ser.serialize_with_trees(compiled, store_trees=False)
    entry = compiled.trace_entry
    return payload, entry.in_tree, entry.out_tree


def deserialize_and_load(serialized, in_tree, out_tree, backend=None,
                         execution_devices: Sequence | None = None):
    """The ``Compiled`` that ``serialize`` saved, loaded without compiling.

    Args:
      serialized, in_tree, out_tree: what ``serialize`` returned.
      backend: a platform name (``"cpu"``, ``"gpu"``) or None for the default.
      execution_devices: the devices to run on; default the backend's devices. A
        single-device executable runs on the first one.

    Raises:
      ValueError: ``execution_devices`` belong to another backend.
      minijax.stages.DeserializationError: the bytes are damaged, were made by another
        jaxlib or for another platform or device kind, or disagree with the trees.
    """
    from minijax.runtime import backend as _backend
    if not (backend is None or isinstance(backend, str | _backend.Backend)):
        backend = backend.platform  # a jaxlib client, as jax accepts
    be = _backend.get_backend(backend)
    if execution_devices is None:
        device = None
    else:
        execution_devices = list(execution_devices)
        if not execution_devices:
            raise ValueError("execution_devices must not be empty")
        device = execution_devices[0]
        if device.platform != be.platform:
            raise ValueError(
                f"Execution devices belong to a client other than `backend`. Got backend "
                f"client: {be.platform} and execution devices client: {device.platform}")
    return _ser.load(serialized, (in_tree, out_tree), backend=be, device=device)
