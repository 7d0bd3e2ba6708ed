"""The Array API standard's namespace hooks for ``minijax.numpy``.

``x.__array_namespace__()`` gives ``minijax.numpy``; ``__array_namespace_info__()``
describes it (capabilities, devices, default and supported dtypes), as jax's does;
``x.to_device(d)`` copies an array to a device. Example::

    >>> info = jnp.__array_namespace_info__()
    >>> info.default_dtypes()["real floating"]
    dtype('float32')
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from minijax.core import dtypes
from minijax.runtime import backend
from minijax.runtime.transfer import device_put_tree

# jax 0.10.2 reports 2024.12; minijax also accepts the 2023.12 revision it was built against.
__array_api_version__ = "2024.12"
_API_VERSIONS = ("2023.12", "2024.12")

# The standard's dtype kinds (the standard's names); 64-bit types only with x64 on.
_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"] + _KINDS["complex floating"]
_WIDE = {"int64", "uint64", "float64", "complex128"}


def __array_namespace__(self, *, api_version: str | None = None) -> ModuleType:
    """The Array API namespace of this array: ``minijax.numpy``."""
    if api_version is not None and api_version not in _API_VERSIONS:
        raise ValueError(f"api_version={api_version!r} is not available; available versions "
                         f"are: {list(_API_VERSIONS)}")
    import minijax.numpy
    return minijax.numpy


def to_device(self, device, *, stream=None):
    """A copy of this array on ``device`` (a device or a sharding); ``stream`` must be None."""
    if stream is not None:
        raise NotImplementedError("to_device: the stream argument is not supported "
                                  "(XLA orders work on a device itself)")
    return device_put_tree(self, device)


class ArrayNamespaceInfo:
    """What ``minijax.numpy`` supports, in the Array API's terms (as jax's)."""

    _capabilities = {
        "boolean indexing": False,  # under transformations: shapes must be static
        "data-dependent shapes": False,
        "max dimensions": 64,  # XLA's limit
    }

    def capabilities(self) -> dict:
        return dict(self._capabilities)

    def default_device(self):
        # Arrays are placed where their computation runs unless put somewhere (jax: None).
        return None

    def devices(self) -> list:
        return [None, *backend.devices()]

    def default_dtypes(self, *, device=None) -> dict:
        del device  # the same on every device
        return {"real floating": dtypes.default_float(),
                "complex floating": dtypes.default_complex(),
                "integral": dtypes.default_int(),
                "indexing": dtypes.default_int()}

    def dtypes(self, *, device=None, kind: str | tuple[str, ...] | None = None) -> dict:
        del device  # the same on every device
        if kind is None:
            names = _KINDS["bool"] + _KINDS["numeric"]
        else:
            names = ()
            for k in (kind if isinstance(kind, tuple) else (kind,)):
                if k not in _KINDS:
                    raise KeyError(f"unknown dtype kind {k!r}; the Array API's kinds are "
                                   f"{', '.join(map(repr, _KINDS))}")
                names += _KINDS[k]
        x64 = dtypes.x64_enabled()
        return {n: np.dtype(n) for n in names if x64 or n not in _WIDE}


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The Array API's inspection object for ``minijax.numpy``."""
    return ArrayNamespaceInfo()
