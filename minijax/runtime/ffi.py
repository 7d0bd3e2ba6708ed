"""User FFI handlers and types, registered with XLA (``minijax.ffi`` calls these).

XLA finds a custom call's handler by target name and platform in a process-wide
registry; jaxlib's ``xla_client`` keeps registrations for a platform whose client
is not made yet and hands them over when it is. A name registered twice for the same
platform keeps its first handler (jax sharing the process may register it too).
"""

from __future__ import annotations

import os
from typing import Any

import jaxlib
from jaxlib import xla_client

__all__ = ["include_dir", "register_custom_call_as_batch_partitionable",
           "register_custom_call_target", "register_custom_type"]


def register_custom_call_target(name: str, fn: Any, platform: str = "cpu",
                                api_version: int = 1, **kwargs: Any) -> None:
    """Register ``fn`` (a PyCapsule holding an ``XLA_FFI_Handler*``, or a dict of them by
    stage name: ``"instantiate"``, ``"prepare"``, ``"initialize"``, ``"execute"``) as the
    handler of custom calls to ``name`` on ``platform``. ``api_version`` 1 is the typed
    FFI, 0 the legacy custom-call API; ``kwargs`` (``traits``) go to jaxlib as they are."""
    xla_client.register_custom_call_target(name, fn, platform, api_version, **kwargs)


def register_custom_type(name: str, type_registration: Any, platform: str = "cpu") -> None:
    """Register an FFI user type (``{"type_id": capsule, "type_info": capsule}``)."""
    xla_client.register_custom_type(name, type_registration, platform=platform)


def register_custom_call_as_batch_partitionable(name: str) -> None:
    """Mark the custom call ``name`` as partitionable along its batch dimensions."""
    xla_client.register_custom_call_as_batch_partitionable(name)


def include_dir() -> str:
    """The directory of the C/C++ headers jaxlib ships (``xla/ffi/api/ffi.h`` ...)."""
    path = getattr(jaxlib, "__file__", None)
    if path is not None:
        root = os.path.dirname(os.path.abspath(path))
    elif getattr(jaxlib, "__path__", None):
        root = next(iter(jaxlib.__path__))
    else:
        raise RuntimeError("Cannot determine jaxlib directory: neither __file__ nor "
                           "__path__ is available")
    return os.path.join(root, "include")
