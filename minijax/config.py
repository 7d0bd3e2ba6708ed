"""minijax's global configuration flags.

Usage mirrors ``jax.config``::

    import minijax
    minijax.config.update("minijax_enable_x64", True)
    minijax.config.minijax_enable_x64   # -> True

Each flag may also be set from the environment with its upper-cased name,
e.g. ``MINIJAX_ENABLE_X64=1``.
"""

from __future__ import annotations

import os
from typing import Any
from collections.abc import Callable


def _env_bool(name: str, default: bool) -> bool:
    val = os.environ.get(name.upper())
    if val is None:
        return default
    return val.strip().lower() in ("1", "true", "yes", "on")


def _env_int(name: str, default: int) -> int:
    val = os.environ.get(name.upper())
    return default if val is None else int(val)


def _env_str(name: str, default: str | None) -> str | None:
    return os.environ.get(name.upper(), default)


def _env_choice(name: str, default: str, *also: str) -> str:
    """A flag with fixed choices (``_CHOICES``) from ``NAME`` or, failing that, the
    other variables ``also`` (jax's spelling); ValueError for a value not among them."""
    for var in (name.upper(), *also):
        val = os.environ.get(var)
        if val is not None:
            val = val.strip().lower()
            if val not in _CHOICES[name]:
                raise ValueError(f"{var}={val!r} is not one of {', '.join(_CHOICES[name])}")
            return val
    return default


# name -> (type, reader of the default, whether the flag changes traced programs)
_FLAGS: dict[str, tuple[type, Callable[[str], Any], bool]] = {
    "minijax_enable_x64": (bool, lambda n: _env_bool(n, False), True),
    "minijax_explain_cache_misses": (bool, lambda n: _env_bool(n, False), False),
    "minijax_num_cpu_devices": (int, lambda n: _env_int(n, 1), False),
    "minijax_compilation_cache_dir": (str, lambda n: _env_str(n, None), False),
    # bytes; -1: no limit, 0: cache off (runtime/compilation_cache.py)
    "minijax_compilation_cache_max_size": (int, lambda n: _env_int(n, 1 << 30), False),
    "minijax_platforms": (str, lambda n: _env_str(n, None), False),
    # Entries kept by in-memory caches, least recently used dropped first (core/lru.py):
    # argument signatures per jit function, eager executables, each memo table.
    "minijax_jit_cache_size": (int, lambda n: _env_int(n, 4096), False),
    "minijax_eager_cache_size": (int, lambda n: _env_int(n, 4096), False),
    "minijax_memo_cache_size": (int, lambda n: _env_int(n, 8192), False),
    # Remove minijax's frames from tracebacks of user errors (core/traceback_util.py).
    "minijax_traceback_filtering": (
        str, lambda n: _env_choice(n, "auto", "JAX_TRACEBACK_FILTERING"), False),
}

# Flags that take one of a fixed set of strings.
_CHOICES: dict[str, tuple[str, ...]] = {
    "minijax_traceback_filtering": ("auto", "off", "tracebackhide", "remove_frames",
                                    "quiet_remove_frames"),
}

# jax's names for minijax flags, accepted by update and attribute reads.
_ALIASES: dict[str, str] = {"jax_traceback_filtering": "minijax_traceback_filtering"}


class Config:
    """Holds the flags; read them as attributes, change them with ``update``."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {n: spec[1](n) for n, spec in _FLAGS.items()}
        self._listeners: dict[str, list[Callable[[Any], None]]] = {}
        self._trace_key = self._compute_trace_key()

    def update(self, name: str, value: Any) -> None:
        name = _ALIASES.get(name, name)
        if name not in _FLAGS:
            known = ", ".join(sorted(_FLAGS))
            raise AttributeError(f"Unknown minijax config flag {name!r}; known flags: {known}")
        typ = _FLAGS[name][0]
        if value is not None and not isinstance(value, typ):
            if typ is bool and isinstance(value, int):
                value = bool(value)
            elif typ is str and isinstance(value, os.PathLike):
                value = os.fspath(value)
            else:
                raise TypeError(f"config flag {name!r} takes a {typ.__name__}, got {value!r}")
        if name in _CHOICES and value not in _CHOICES[name]:
            raise ValueError(f"config flag {name!r} takes one of "
                             f"{', '.join(_CHOICES[name])}, got {value!r}")
        if name.endswith("_cache_size") and (value is None or value < 1):
            raise ValueError(f"config flag {name!r} must be an int >= 1, got {value!r}")
        self._values[name] = value
        self._trace_key = self._compute_trace_key()
        for fn in self._listeners.get(name, ()):
            fn(value)

    def on_change(self, name: str, fn: Callable[[Any], None]) -> None:
        """Call ``fn(new_value)`` whenever ``name`` is updated (used by the runtime)."""
        self._listeners.setdefault(name, []).append(fn)

    def _compute_trace_key(self) -> tuple:
        return tuple(self._values[n] for n, spec in _FLAGS.items() if spec[2])

    @staticmethod
    def trace_key_names() -> tuple[str, ...]:
        """The names of the flags in ``trace_key``, in order."""
        return tuple(n for n, spec in _FLAGS.items() if spec[2])

    @property
    def trace_key(self) -> tuple:
        """The values of the flags that change traced programs (part of jit cache keys)."""
        return self._trace_key

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_values"][_ALIASES.get(name, name)]
        except KeyError:
            raise AttributeError(f"Unknown minijax config flag {name!r}") from None

    @property
    def enable_x64(self) -> bool:
        return self._values["minijax_enable_x64"]


config = Config()
