"""jax names that have no counterpart in minijax, so that they exist and say so.

``unsupported_module(name, reason, **present)`` makes a module ``minijax.<name>`` whose
attributes other than ``present`` raise ``AttributeError`` naming what is missing and why
(what a library probing with ``getattr``/``hasattr``/``try: ... except AttributeError``
expects of a name a module lacks); ``unsupported_function(name, reason)`` makes a function
that is present but raises ``NotImplementedError`` when called.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

from minijax.version import _jax_version

__all__ = ["unsupported_function", "unsupported_module"]


class _UnsupportedModule(types.ModuleType):
    def __init__(self, name: str, reason: str, present: dict[str, Any]):
        super().__init__(f"minijax.{name}", f"jax.{name} has no counterpart in minijax: "
                                            f"{reason}")
        self._reason = reason
        self.__dict__.update(present)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}: it is not "
                             f"implemented in minijax ({self._reason})", name=attr, obj=self)


def unsupported_module(name: str, reason: str, **present: Any) -> types.ModuleType:
    """The module ``minijax.<name>`` (also importable), with only ``present`` in it."""
    mod = _UnsupportedModule(name, reason, present)
    sys.modules[mod.__name__] = mod
    return mod


def unsupported_function(name: str, reason: str) -> Callable:
    """A function ``name`` that raises NotImplementedError with ``reason``."""
    def fn(*args, **kwargs):
        raise NotImplementedError(f"minijax.{name} is not implemented: {reason}")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Not implemented in minijax: {reason}"
    return fn


# ---- the jax names themselves ------------------------------------------------------------------

_SHARDING_IN_TYPES = ("this part of sharding in types (abstract devices, manual axis types, "
                      "auto/explicit_axes, abstract meshes in context) is not part of "
                      "minijax yet; use set_mesh, reshard, shard_map or jit's shardings")

lib = unsupported_module("lib", "minijax uses jaxlib directly (minijax.runtime)",
                         __version__=_jax_version)  # jaxlib's, pinned to jax's version
cloud_tpu_init = unsupported_module("cloud_tpu_init", "minijax does not set up Cloud TPUs")
collect_profile = unsupported_module("collect_profile", "minijax has no profiler")
tools = unsupported_module("tools", "jax's developer tools have no counterpart")
