"""The persistent compilation cache's switch (mirrors
``jax.experimental.compilation_cache.compilation_cache``).

minijax's cache (``minijax.runtime.compilation_cache``) is on by default, in the user's
cache directory; ``set_cache_dir`` points it elsewhere (``None`` turns it off), exactly
as ``minijax.config.update("minijax_compilation_cache_dir", path)`` does.

The cache is trusted: its entries are native code this process runs, so whoever can
write to the directory can run code as you. Use a directory only you can write to.
"""

from minijax.config import config as _config

__all__ = ["reset_cache", "set_cache_dir"]


def set_cache_dir(path) -> None:
    """Store compiled executables in ``path`` from now on and look them up there
    before compiling (``None``: no persistent cache). ``path`` may be any path-like."""
    _config.update("minijax_compilation_cache_dir", path)


def reset_cache() -> None:
    """Return the cache to its state at start-up: the directory is read from the
    config again at the next compilation and checked anew; entries on disk stay."""
    from minijax.runtime import compilation_cache
    compilation_cache.reset()
