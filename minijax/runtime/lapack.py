"""jaxlib's LAPACK kernels, registered as XLA:CPU custom-call targets.

jaxlib ships LAPACK-backed kernels (``lapack_spotrf_ffi``, ``lapack_dgesdd_ffi``,
...) as typed-FFI handlers in ``jaxlib.cpu._lapack``. XLA finds a custom call's
target by name in a process-wide registry, so the handlers must be registered
before the first module that calls one of them is compiled (or deserialized).

Initializing the kernels imports SciPy's LAPACK bindings (~0.3 s), so it is
done lazily: ``register_if_used(module)`` is called by the compile and
deserialize paths and does the work once, the first time a module mentions a
``lapack_`` target. The lowering rules in ``minijax/lax/linalg`` only emit the
custom calls; they never touch jaxlib's private modules.

Registering a name that jax (sharing the process) has already registered is
harmless: XLA accepts the same handler twice.
"""

from __future__ import annotations

import threading

from jaxlib import xla_client

__all__ = ["ensure_registered", "is_registered", "register_if_used", "target_names"]

_lock = threading.Lock()
_registered: list[str] = []  # the target names, once registered


def is_registered() -> bool:
    """Whether the LAPACK targets have been registered in this process."""
    return bool(_registered)


def ensure_registered() -> None:
    """Register every LAPACK FFI target of jaxlib for the CPU platform (once).

    Raises ``RuntimeError`` naming the cause when jaxlib's LAPACK module cannot be
    loaded (it needs SciPy, a jaxlib dependency).
    """
    if _registered:
        return
    with _lock:
        if _registered:
            return
        try:
            from jaxlib import lapack
            lapack._lapack.initialize()  # fills the kernels' LAPACK function pointers
        except Exception as e:  # ImportError of scipy, or a broken jaxlib
            raise RuntimeError(f"minijax: jaxlib's LAPACK kernels are unavailable "
                               f"(needed by minijax.numpy.linalg on CPU): "
                               f"{type(e).__name__}: {e}") from e
        names = []
        for name, capsule, api_version in lapack.registrations()["cpu"]:
            xla_client.register_custom_call_target(name, capsule, platform="cpu",
                                                   api_version=api_version)
            names.append(name)
        _registered.extend(names)


def register_if_used(module) -> None:
    """Register the LAPACK targets if ``module`` (StableHLO text or bytes, or a
    serialized executable) calls one of them. Cheap once registered."""
    if _registered:
        return
    marker = "lapack_" if isinstance(module, str) else b"lapack_"
    try:
        used = marker in module
    except TypeError:  # an unexpected type: let XLA report on it
        return
    if used:
        ensure_registered()


def target_names() -> list[str]:
    """The registered target names (empty until ``ensure_registered`` ran)."""
    return list(_registered)
