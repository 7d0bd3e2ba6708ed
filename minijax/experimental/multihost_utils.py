"""``jax.experimental.multihost_utils`` for one process (what flax's checkpointing and
single-host training scripts call): with a single process there is no other host to
synchronize with or gather from, so each function does what jax's does in that case.
Several processes (``minijax.process_count() > 1``) are not supported here."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["broadcast_one_to_all", "process_allgather", "sync_global_devices",
           "assert_equal"]


def _single_process(name: str) -> None:
    from minijax import process_count
    if process_count() != 1:
        raise NotImplementedError(f"minijax.experimental.multihost_utils.{name} supports a "
                                  f"single process only")


def _tree_map(f, tree):
    from minijax.tree_util import tree_map
    return tree_map(f, tree)


def sync_global_devices(name: str) -> None:
    """Wait until every process reaches this point: with one process, at once."""
    del name
    _single_process("sync_global_devices")


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """The source host's values on every host: with one process, ``in_tree`` as NumPy
    arrays (as jax's)."""
    del is_source
    _single_process("broadcast_one_to_all")
    return _tree_map(np.asarray, in_tree)


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's values, stacked along a new leading axis (``tiled=False``) or
    concatenated along the first one: with one process, NumPy copies of ``in_tree``'s
    arrays (with a leading axis of 1 unless ``tiled``), as jax's."""
    _single_process("process_allgather")

    def gather(x):
        out = np.asarray(x)
        return out if tiled else np.expand_dims(out, axis=0)
    return _tree_map(gather, in_tree)


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """That ``in_tree`` is the same on every process: with one process, always."""
    del in_tree, fail_message
    _single_process("assert_equal")
