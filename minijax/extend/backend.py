"""``jax.extend.backend``: the XLA clients minijax runs on."""

from __future__ import annotations

from minijax.runtime import backend as _backend
from minijax.stages.api import clear_caches

__all__ = ["backends", "clear_backends", "clear_in_memory_compilation_cache",
           "get_backend", "get_default_device"]


def get_backend(platform=None):
    """The client of ``platform`` (default: minijax's default backend)."""
    return _backend.get_backend(platform)


def backends() -> dict:
    return {d.platform: d.client for d in _backend.devices()}


def get_default_device():
    return _backend.devices()[0]


def clear_backends() -> None:
    clear_caches()


def clear_in_memory_compilation_cache() -> None:
    clear_caches()
