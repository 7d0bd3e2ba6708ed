"""``jax.extend.mlir``: StableHLO portable artifacts (not provided: minijax serializes
executables instead, see ``minijax.stages``); names missing raise AttributeError."""

__all__: list[str] = []
