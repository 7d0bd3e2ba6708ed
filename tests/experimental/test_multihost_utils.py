"""jax.experimental.multihost_utils in one process (flax.training.checkpoints imports
it), side by side with jax: sync_global_devices returns, broadcast_one_to_all gives NumPy
copies, process_allgather stacks along a new leading axis (or not, tiled=True)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
from jax.experimental import multihost_utils as jmu

import minijax.numpy as jnp
from minijax.experimental import multihost_utils as mmu


def _tree(np_):
    return {"a": np_.arange(6.0).reshape(2, 3), "b": [np_.ones(()), np_.zeros((2,), np_.int32)]}


def _check(got, want):
    gl, gt = jax.tree_util.tree_flatten(got)
    wl, wt = jax.tree_util.tree_flatten(want)
    assert gt == wt
    for g, w in zip(gl, wl):
        assert type(g) is type(w) is np.ndarray
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_sync_global_devices():
    assert mmu.sync_global_devices("x") is None and jmu.sync_global_devices("x") is None


def test_broadcast_one_to_all_like_jax():
    _check(mmu.broadcast_one_to_all(_tree(jnp)), jmu.broadcast_one_to_all(_tree(jjnp)))


def test_process_allgather_like_jax():
    for tiled in (False, True):
        _check(mmu.process_allgather(_tree(jnp), tiled=tiled),
               jmu.process_allgather(_tree(jjnp), tiled=tiled))
