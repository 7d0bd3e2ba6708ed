"""The one place XLA compiles a module for a single device or a device list.

``backend_compile_and_load`` is read from this module at each compilation (never bound
by name elsewhere), so a program that replaces it here (chex's ``restrict_backends``
does, as ``jax._src.compiler.backend_compile_and_load`` in the jax mode) sees every
compilation; a hit in the compilation cache compiles nothing and does not call it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jaxlib import _jax, xla_client

__all__ = ["backend_compile_and_load"]


def backend_compile_and_load(backend: Any, module: Any, executable_devices: _jax.DeviceList,
                             options: xla_client.CompileOptions,
                             host_callbacks: Sequence[Any] = ()) -> Any:
    """Compile ``module`` (MLIR text, bytecode or a parsed module) with XLA client
    ``backend`` for ``executable_devices`` and load it (jax's signature)."""
    if host_callbacks:  # jaxlib takes them with a parsed module only
        return backend.compile_and_load(module, executable_devices,
                                        compile_options=options,
                                        host_callbacks=list(host_callbacks))
    return backend.compile_and_load(module, executable_devices, options)
