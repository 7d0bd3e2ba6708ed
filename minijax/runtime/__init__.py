"""minijax's runtime: XLA clients and devices, ``Array``, transfers, executables.

This package is the only part of minijax that touches jaxlib's client and
array internals (``jaxlib._jax``, ``jaxlib.xla_client``). It never imports jax.
"""

from minijax.runtime.array import Array, to_numpy
from minijax.runtime.backend import (
    Backend,
    Device,
    backend_of,
    default_backend,
    default_device,
    device_count,
    devices,
    get_backend,
    local_devices,
    sharding_for,
)
from minijax.runtime.executable import (
    DeserializationError,
    Executable,
    MemoryAnalysis,
    compile,
    compile_count,
    default_compile_options,
    deserialize,
)
from minijax.runtime.transfer import block_until_ready, device_put, put_numpy

__all__ = [
    "Array",
    "Backend",
    "DeserializationError",
    "Device",
    "Executable",
    "MemoryAnalysis",
    "backend_of",
    "block_until_ready",
    "compile",
    "compile_count",
    "default_backend",
    "default_compile_options",
    "default_device",
    "deserialize",
    "device_count",
    "device_put",
    "devices",
    "get_backend",
    "local_devices",
    "put_numpy",
    "sharding_for",
    "to_numpy",
]
