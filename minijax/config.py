"""minijax's global configuration flags.

Usage mirrors ``jax.config``::

    import minijax
    minijax.config.update("minijax_enable_x64", True)
    minijax.config.minijax_enable_x64   # -> True

Each flag may also be set from the environment with its upper-cased name,
e.g. ``MINIJAX_ENABLE_X64=1``. jax's option names work too: ``jax_enable_x64`` is
``minijax_enable_x64`` (in ``update`` and attribute reads), and the flags jax exposes as
context managers (``minijax.enable_x64(True)``, ``minijax.numpy_rank_promotion("raise")``,
...) are ``State`` objects below.
"""

from __future__ import annotations

import os
import warnings
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


def _default_cache_dir(name: str) -> str | None:
    """``MINIJAX_COMPILATION_CACHE_DIR`` if set (empty: the cache off), else the user's
    cache directory: ``$XDG_CACHE_HOME/minijax`` or ``~/.cache/minijax``."""
    val = os.environ.get(name.upper())
    if val is not None:
        return val or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return os.path.join(base, "minijax")


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
    # None: as XLA decides (one, or --xla_force_host_platform_device_count in XLA_FLAGS)
    "minijax_num_cpu_devices": (int, lambda n: _env_int(n, None), False),
    # on by default (the user's cache directory); None or an empty variable: off
    "minijax_compilation_cache_dir": (str, _default_cache_dir, False),
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
    # jax's options (also read as jax_<name>). Those that change traced programs are in
    # the jit cache key.
    "minijax_default_matmul_precision": (str, lambda n: _env_str(n, None), True),
    "minijax_numpy_rank_promotion": (
        str, lambda n: _env_choice(n, "allow", "JAX_NUMPY_RANK_PROMOTION"), True),
    "minijax_numpy_dtype_promotion": (
        str, lambda n: _env_choice(n, "standard", "JAX_NUMPY_DTYPE_PROMOTION"), True),
    "minijax_default_device": (object, lambda n: None, True),
    "minijax_log_compiles": (bool, lambda n: _env_bool(n, False), False),
    "minijax_disable_jit": (bool, lambda n: _env_bool(n, False), False),
    "minijax_check_tracer_leaks": (bool, lambda n: _env_bool(n, False), False),
    # Check every output of compiled programs for NaNs / infinities; on one, run the
    # program again op by op and name the operation and its line (runtime/debug_nans.py).
    "minijax_debug_nans": (bool, lambda n: _env_bool(n, False), True),
    "minijax_debug_infs": (bool, lambda n: _env_bool(n, False), True),
    "minijax_transfer_guard_host_to_device": (str, lambda n: None, False),
    "minijax_transfer_guard_device_to_host": (str, lambda n: None, False),
    "minijax_transfer_guard_device_to_device": (str, lambda n: None, False),
    # Accepted and readable, no effect in minijax (jax's debugging / experimental options;
    # _NO_EFFECT below: setting them warns once).
    "minijax_enable_checks": (bool, lambda n: _env_bool(n, False), False),
    "minijax_debug_key_reuse": (bool, lambda n: _env_bool(n, False), False),
    "minijax_no_tracing": (bool, lambda n: False, False),
    "minijax_no_execution": (bool, lambda n: False, False),
    "minijax_thread_guard": (bool, lambda n: False, False),
    "minijax_array_garbage_collection_guard": (str, lambda n: None, False),
    "minijax_allow_f16_reductions": (bool, lambda n: True, False),
    "minijax_default_prng_impl": (str, lambda n: "threefry2x32", False),
    "minijax_enable_custom_prng": (bool, lambda n: False, False),
    "minijax_legacy_prng_key": (str, lambda n: "allow", False),
    "minijax_threefry_partitionable": (bool, lambda n: True, False),
    "minijax_remove_size_one_mesh_axis_from_type": (bool, lambda n: False, False),
    "minijax_jax2tf_associative_scan_reductions": (bool, lambda n: False, False),
    "minijax_auto_pcast": (bool, lambda n: True, False),
    "minijax_softmax_custom_jvp": (bool, lambda n: False, False),
    # sharded programs: Shardy (sdy dialect) or, when off, GSPMD (mhlo.sharding)
    "minijax_use_shardy_partitioner": (bool, lambda n: _env_bool(n, True), True),
}

_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")

# Flags accepted for jax programs' sake that change nothing here: name -> the values that
# describe what minijax does anyway. Setting one to another value warns once per flag (a
# UserWarning) that it has no effect; every other flag in _FLAGS works as in jax
# (tests/test_config_flags.py lists them all).
_NO_EFFECT: dict[str, tuple] = {
    "minijax_default_matmul_precision": (None,),  # XLA:CPU multiplies f32 exactly anyway
    "minijax_check_tracer_leaks": (False,),
    "minijax_transfer_guard_host_to_device": (None, "allow"),
    "minijax_transfer_guard_device_to_host": (None, "allow"),
    "minijax_transfer_guard_device_to_device": (None, "allow"),
    "minijax_enable_checks": (False,),
    "minijax_debug_key_reuse": (False,),
    "minijax_no_tracing": (False,),
    "minijax_no_execution": (False,),
    "minijax_thread_guard": (False,),
    "minijax_array_garbage_collection_guard": (None, "allow"),
    "minijax_allow_f16_reductions": (True,),
    "minijax_default_prng_impl": ("threefry2x32",),  # the only implementation here
    "minijax_enable_custom_prng": (False,),
    "minijax_legacy_prng_key": ("allow",),
    "minijax_threefry_partitionable": (True,),  # jax's default streams, always
    "minijax_remove_size_one_mesh_axis_from_type": (False,),
    "minijax_jax2tf_associative_scan_reductions": (False,),
    "minijax_auto_pcast": (True,),
    "minijax_softmax_custom_jvp": (True,),  # softmax always has its custom jvp
}

# Flags of _NO_EFFECT that have warned already (once per flag and process).
_warned_no_effect: set[str] = set()


def _warn_no_effect(name: str, value: Any) -> None:
    if value in _NO_EFFECT[name] or name in _warned_no_effect:
        return
    _warned_no_effect.add(name)
    jax_name = "jax_" + name[len("minijax_"):]
    warnings.warn(f"config flag {jax_name!r} = {value!r} has no effect in minijax "
                  f"(accepted for compatibility with jax; minijax behaves as "
                  f"{jax_name} = {_NO_EFFECT[name][-1]!r})", UserWarning, stacklevel=3)

# Flags that take one of a fixed set of strings.
_CHOICES: dict[str, tuple[str, ...]] = {
    "minijax_traceback_filtering": ("auto", "off", "tracebackhide", "remove_frames",
                                    "quiet_remove_frames"),
    "minijax_numpy_rank_promotion": ("allow", "warn", "raise"),
    "minijax_numpy_dtype_promotion": ("standard", "strict"),
    "minijax_default_prng_impl": ("threefry2x32", "rbg", "unsafe_rbg"),
    "minijax_legacy_prng_key": ("allow", "warn", "error"),
    "minijax_transfer_guard_host_to_device": (None,) + _GUARD_LEVELS,
    "minijax_transfer_guard_device_to_host": (None,) + _GUARD_LEVELS,
    "minijax_transfer_guard_device_to_device": (None,) + _GUARD_LEVELS,
    "minijax_default_matmul_precision": (
        None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
        "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
        "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
        "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
        "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64"),
}

# jax's names for minijax flags, accepted by update and attribute reads (beside these,
# every jax_<name> is minijax_<name>).
_ALIASES: dict[str, str] = {"jax_traceback_filtering": "minijax_traceback_filtering"}


def _canonical(name: str) -> str:
    name = _ALIASES.get(name, name)
    if name.startswith("jax_") and "minijax_" + name[4:] in _FLAGS:
        return "minijax_" + name[4:]
    return name


# ``on_change(TRACE_KEY, fn)``: fn runs when any flag that is part of ``trace_key`` changes.
TRACE_KEY = "<trace key>"


class Config:
    """Holds the flags; read them as attributes, change them with ``update``."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {n: spec[1](n) for n, spec in _FLAGS.items()}
        self._listeners: dict[str, list[Callable[[Any], None]]] = {}
        self._trace_key = self._compute_trace_key()
        for name in _NO_EFFECT:  # set from the environment (MINIJAX_ENABLE_CHECKS=1, ...)
            if name.upper() in os.environ:
                _warn_no_effect(name, self._values[name])

    def update(self, name: str, value: Any) -> None:
        name = _canonical(name)
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
        if name in _NO_EFFECT:
            _warn_no_effect(name, value)
        self._values[name] = value
        self._trace_key = self._compute_trace_key()
        for fn in self._listeners.get(name, ()):
            fn(value)
        if _FLAGS[name][2]:  # listeners of every flag in the trace key (user contexts too)
            for fn in self._listeners.get(TRACE_KEY, ()):
                fn(value)

    def parse_flags_with_absl(self) -> None:
        """Set flags from the command line, as jax's: ``--jax_enable_x64``,
        ``--nojax_enable_x64``, ``--jax_numpy_rank_promotion=raise`` (minijax's names too)
        in ``sys.argv``; other arguments are left for the program."""
        import sys
        for arg in sys.argv[1:]:
            if not arg.startswith("--"):
                continue
            name, eq, value = arg[2:].partition("=")
            negated = not eq and name.startswith("no") and _canonical(name[2:]) in _FLAGS
            if negated:
                name = name[2:]
            name = _canonical(name)
            if name not in _FLAGS:
                continue
            typ = _FLAGS[name][0]
            if typ is bool:
                val: Any = (not negated) if not eq else value.strip().lower() in (
                    "1", "true", "yes", "on")
            elif not eq:
                continue
            else:
                val = typ(value) if typ in (int, str) else value
            self.update(name, val)

    def config_with_absl(self) -> None:
        """jax's ``config.config_with_absl()``: the flags are read from the command line
        (``parse_flags_with_absl``)."""
        self.parse_flags_with_absl()

    def on_change(self, name: str, fn: Callable[[Any], None]) -> None:
        """Call ``fn(new_value)`` whenever ``name`` is updated (used by the runtime);
        ``name=TRACE_KEY``: whenever any flag in the trace key is."""
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
            return self.__dict__["_values"][_canonical(name)]
        except KeyError:
            raise AttributeError(f"Unknown minijax config flag {name!r}") from None

    @property
    def enable_x64(self) -> bool:
        return self._values["minijax_enable_x64"]

    @property
    def numpy_dtype_promotion(self) -> str:
        return self._values["minijax_numpy_dtype_promotion"]


config = Config()


class _NoDefault:
    def __repr__(self) -> str:
        return "<no default>"


_NO_DEFAULT = _NoDefault()


class State:
    """One flag as jax exposes it at the top level: ``State.value`` reads it, and
    ``with state(new_value):`` sets it for the block (``with minijax.enable_x64():`` for a
    boolean flag means True)."""

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"State({self._name[len('minijax_'):]}={self.value!r})"

    @property
    def value(self) -> Any:
        return config._values[self._name]

    def __call__(self, new_val: Any = _NO_DEFAULT) -> _Setting:
        if new_val is _NO_DEFAULT:
            if _FLAGS[self._name][0] is not bool:
                raise TypeError(f"Context manager for {self._name[len('minijax_'):]} config "
                                f"option requires an argument representing the new value "
                                f"for the config option.")
            new_val = True
        return _Setting(((self._name, new_val),))


class _Setting:
    """Context manager: set flags on entry, restore their previous values on exit."""

    def __init__(self, pairs: tuple):
        self._pairs = pairs
        self._prev: list = []

    def __enter__(self):
        self._prev.append([(n, config._values[n]) for n, _ in self._pairs])
        for n, v in self._pairs:
            config.update(n, v)
        return self

    def __exit__(self, *exc):
        for n, v in self._prev.pop():
            config.update(n, v)

    def __call__(self, fun: Callable) -> Callable:  # usable as a decorator too
        import functools

        @functools.wraps(fun)
        def wrapped(*args, **kwargs):
            with self:
                return fun(*args, **kwargs)
        return wrapped


enable_x64 = State("minijax_enable_x64")
explain_cache_misses = State("minijax_explain_cache_misses")
default_matmul_precision = State("minijax_default_matmul_precision")
numpy_rank_promotion = State("minijax_numpy_rank_promotion")
numpy_dtype_promotion = State("minijax_numpy_dtype_promotion")
default_device = State("minijax_default_device")
log_compiles = State("minijax_log_compiles")
check_tracer_leaks = State("minijax_check_tracer_leaks")
debug_nans = State("minijax_debug_nans")
debug_infs = State("minijax_debug_infs")
transfer_guard_host_to_device = State("minijax_transfer_guard_host_to_device")
transfer_guard_device_to_host = State("minijax_transfer_guard_device_to_host")
transfer_guard_device_to_device = State("minijax_transfer_guard_device_to_device")
enable_checks = State("minijax_enable_checks")
debug_key_reuse = State("minijax_debug_key_reuse")
no_tracing = State("minijax_no_tracing")
no_execution = State("minijax_no_execution")
thread_guard = State("minijax_thread_guard")
array_garbage_collection_guard = State("minijax_array_garbage_collection_guard")
allow_f16_reductions = State("minijax_allow_f16_reductions")
default_prng_impl = State("minijax_default_prng_impl")
enable_custom_prng = State("minijax_enable_custom_prng")
legacy_prng_key = State("minijax_legacy_prng_key")
threefry_partitionable = State("minijax_threefry_partitionable")
remove_size_one_mesh_axis_from_type = State("minijax_remove_size_one_mesh_axis_from_type")
jax2tf_associative_scan_reductions = State("minijax_jax2tf_associative_scan_reductions")
auto_pcast = State("minijax_auto_pcast")
softmax_custom_jvp = State("minijax_softmax_custom_jvp")


def checking_leaks() -> _Setting:
    """``with minijax.checking_leaks():`` is ``check_tracer_leaks(True)``."""
    return check_tracer_leaks(True)


def transfer_guard(new_val: str) -> _Setting:
    """Set all three transfer guards (host-to-device, device-to-host, device-to-device)
    for the block: one of ``"allow"``, ``"log"``, ``"disallow"``, ``"log_explicit"``,
    ``"disallow_explicit"``."""
    return _Setting(tuple((f"minijax_transfer_guard_{k}", new_val)
                          for k in ("host_to_device", "device_to_host", "device_to_device")))


_user_contexts = [0]


def make_user_context(default_value: Any = None) -> State:
    """A new flag of the user's, part of jit's cache key: ``ctx = make_user_context(0)``;
    ``with ctx(1): ...`` sets it, ``ctx.value`` reads it (as ``jax.make_user_context``)."""
    _user_contexts[0] += 1
    name = f"minijax_user_context_{_user_contexts[0]}"
    _FLAGS[name] = (object, lambda n: default_value, True)
    config._values[name] = default_value
    config._trace_key = config._compute_trace_key()
    return State(name)
