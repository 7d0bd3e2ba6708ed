"""minijax.experimental.compilation_cache: the ``compilation_cache`` module (as
``jax.experimental.compilation_cache``)."""

from minijax.experimental.compilation_cache import compilation_cache  # noqa: F401

__all__ = ["compilation_cache"]
