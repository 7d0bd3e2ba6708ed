"""``minijax.profiler``: jax's profiler API on jaxlib's profiler (``minijax.runtime.profiler``).

``trace(log_dir)`` (or ``start_trace`` / ``stop_trace``) records host activity, minijax's
annotations and the XLA ops of every executable run, and writes what jax writes:
``log_dir/plugins/profile/<run>/<host>.xplane.pb`` and ``<host>.trace.json.gz``, which
TensorBoard and Perfetto open.

>>> import tempfile, minijax, minijax.numpy as jnp
>>> with minijax.profiler.trace(tempfile.mkdtemp()):
...     with minijax.profiler.TraceAnnotation("step"):
...         _ = minijax.jit(jnp.sin)(jnp.ones(3)).block_until_ready()
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import pathlib
import threading
from collections.abc import Callable

from minijax import version as _version
from minijax.runtime import profiler as _rt

__all__ = ["StepTraceAnnotation", "TraceAnnotation", "annotate_function", "start_trace",
           "stop_trace", "trace", "start_server", "stop_server", "device_memory_profile",
           "save_device_memory_profile", "register_subprocess", "ProfileData", "ProfileEvent",
           "ProfileOptions", "ProfilePlane"]

ProfileData = _rt.ProfileData
ProfileEvent = _rt.ProfileEvent
ProfilePlane = _rt.ProfilePlane


class ProfileOptions(_rt.ProfileOptions):
    """Options for a profiler session (``host_tracer_level``, ``python_tracer_level``,
    ``duration_ms``, ...), as ``jax.profiler.ProfileOptions``."""


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.session = None
        self.log_dir: str | None = None
        self.perfetto = False
        self.server = None


_state = _State()


def start_server(port: int):
    """Starts a profiler server on ``port`` (for TensorBoard's capture); one per process."""
    if _state.server is not None:
        raise ValueError("Only one profiler server can be active at a time.")
    _state.server = _rt.start_server(port)
    return _state.server


def stop_server() -> None:
    """Stops the server that ``start_server`` started."""
    if _state.server is None:
        raise ValueError("No active profiler server.")
    _state.server = None  # the server stops when its last reference goes


def register_subprocess(pid: int, port: int):
    """Adds a subprocess's profiler server (on ``port``) to this process's traces."""
    return _rt.register_subprocess(pid, port)


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
    """Starts a trace that ``stop_trace`` saves under ``log_dir``.

    Raises RuntimeError if a trace is already running (one at a time, as jax).
    ``create_perfetto_link`` is accepted but no link is served: minijax writes
    ``perfetto_trace.json.gz`` (as ``create_perfetto_trace``) and returns.
    """
    with _state.lock:
        if _state.session is not None:
            raise RuntimeError("Profile has already been started. "
                               "Only one profile may be run at a time.")
        _rt.clear_metadata()
        _rt.set_metadata("minijax_version", _version.__version__)
        _state.session = _rt.new_session(profiler_options or ProfileOptions())
        _state.log_dir = str(log_dir)
        _state.perfetto = bool(create_perfetto_trace or create_perfetto_link)


def stop_trace() -> None:
    """Stops the running trace and writes it to its ``log_dir``; RuntimeError if none runs."""
    with _state.lock:
        session = _state.session
        if session is None:
            raise RuntimeError("No profile started")
        log_dir = _state.log_dir
        perfetto = _state.perfetto
        _state.session = _state.log_dir = None
        _state.perfetto = False
        session.stop_and_export(log_dir)
        _rt.clear_metadata()
    if perfetto:
        _write_perfetto_trace(log_dir)


def _write_perfetto_trace(log_dir: str) -> pathlib.Path:
    runs = (pathlib.Path(log_dir).absolute() / "plugins" / "profile").iterdir()
    latest = max(runs, key=os.path.getmtime)
    found = list(latest.glob("*.trace.json.gz"))
    if len(found) != 1:
        raise ValueError(f"Invalid trace folder: {latest}")
    with gzip.open(found[0], "rb") as fp:
        data = json.load(fp)
    data.pop("metadata", None)  # Perfetto rejects the metadata field
    out = latest / "perfetto_trace.json.gz"
    with gzip.open(out, "w") as fp:
        fp.write(json.dumps(data).encode("utf-8"))
    return out


@contextlib.contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False,
          profiler_options: ProfileOptions | None = None):
    """Context manager around ``start_trace`` / ``stop_trace``."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation(_rt.TraceMe):
    """Names a span of host code in a trace: ``with TraceAnnotation("label", k=v): ...``."""


class StepTraceAnnotation(TraceAnnotation):
    """A training step in a trace (``StepTraceAnnotation("train", step_num=i)``)."""

    def __init__(self, name: str, **kwargs):
        super().__init__(name, _r=1, **kwargs)


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs) -> Callable:
    """``func`` run inside a ``TraceAnnotation`` named ``name`` (default: its qualname)."""
    name = name or getattr(func, "__qualname__", None) or func.__name__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(name, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper


def device_memory_profile(backend: str | None = None) -> bytes:
    """The live device buffers and executables as a gzipped ``pprof`` protocol buffer."""
    return _rt.heap_profile(backend)


def save_device_memory_profile(filename, backend: str | None = None) -> None:
    """Writes ``device_memory_profile(backend)`` to ``filename``."""
    with open(filename, "wb") as f:
        f.write(device_memory_profile(backend))
