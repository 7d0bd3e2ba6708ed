"""minijax.experimental: ``io_callback`` (as ``jax.experimental.io_callback``), ``cur_qdd``
(see ``minijax.experimental.hijax``), and the
``xla_metadata``, ``pallas``, ``shard_map``, ``mesh_utils``, ``ode``, ``sparse``,
``compilation_cache`` and ``serialize_executable`` submodules.

``jax.experimental.enable_x64`` / ``disable_x64`` were removed from jax in
favour of the ``jax.enable_x64(True/False)`` context manager; as in jax 0.10.2 they
are absent here (``AttributeError``, naming ``minijax.enable_x64``).
"""

__all__ = ["io_callback"]

# names jax.experimental no longer has -> what to use instead
_REMOVED = {
    "enable_x64": "jax removed it; use `with minijax.enable_x64(True):`",
    "disable_x64": "jax removed it; use `with minijax.enable_x64(False):`",
}


def __getattr__(name: str):
    # Imported on first use: lower layers import submodules of this package.
    if name == "io_callback":
        from minijax._callback import io_callback
        return io_callback
    if name == "cur_qdd":
        from minijax.experimental.hijax import cur_qdd
        return cur_qdd
    if name in _REMOVED:
        raise AttributeError(f"module 'minijax.experimental' has no attribute {name!r}: "
                             f"{_REMOVED[name]}", name=name)
    raise AttributeError(f"module 'minijax.experimental' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), "io_callback", "cur_qdd"])
