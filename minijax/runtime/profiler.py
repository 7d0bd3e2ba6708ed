"""jaxlib's profiler bindings (``jaxlib._profiler``, ``jaxlib._profile_data``): the only place
minijax touches them. ``minijax.profiler`` builds jax's public profiler API on top."""

from __future__ import annotations

import gzip

from jaxlib import _profile_data, _profiler

from minijax.runtime.backend import get_backend

__all__ = ["ProfileData", "ProfileEvent", "ProfileLine", "ProfileOptions", "ProfilePlane",
           "ProfilerServer", "TraceMe", "clear_metadata", "heap_profile", "new_session",
           "register_subprocess", "set_metadata", "start_server"]

ProfileOptions = _profiler.ProfileOptions
ProfilerServer = _profiler.ProfilerServer
TraceMe = _profiler.TraceMe
ProfileData = _profile_data.ProfileData
ProfileEvent = _profile_data.ProfileEvent
ProfileLine = _profile_data.ProfileLine
ProfilePlane = _profile_data.ProfilePlane
start_server = _profiler.start_server
register_subprocess = _profiler.register_subprocess


def set_metadata(key: str, value: str) -> None:
    if hasattr(_profiler, "set_metadata"):
        _profiler.set_metadata(key, value)


def clear_metadata() -> None:
    if hasattr(_profiler, "clear_metadata"):
        _profiler.clear_metadata()


def new_session(options) -> _profiler.ProfilerSession:
    """A running profiler session; the backends are made first so that their tracers
    register with it."""
    get_backend()
    return _profiler.ProfilerSession(options)


def heap_profile(backend=None) -> bytes:
    """The device memory profile of ``backend``'s client, gzipped pprof (as jax)."""
    return gzip.compress(get_backend(backend).client.heap_profile())
