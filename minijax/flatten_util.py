"""``minijax.flatten_util.ravel_pytree``: a pytree of arrays as one flat vector, as
``jax.flatten_util``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.core.trace import get_aval
from minijax._pytree import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(flat, unravel)``: the leaves of ``pytree`` raveled and concatenated into one
    1-D array of their promoted dtype, and the function that turns such a vector back
    into the pytree (each leaf with its own shape and dtype).

    >>> flat, unravel = ravel_pytree({"a": jnp.ones(2), "b": 3.0})
    >>> flat
    Array([1., 1., 3.], dtype=float32)
    """
    leaves, treedef = tree_flatten(pytree)
    avals = [get_aval(x) for x in leaves]
    dtype = jnp.result_type(*leaves) if leaves else jnp.float32
    flat = (jnp.concatenate([jnp.ravel(jnp.asarray(x, dtype)) for x in leaves]) if leaves
            else jnp.zeros((0,), dtype))
    sizes = [a.size for a in avals]
    offsets = np.cumsum([0] + sizes)

    def unravel(v):
        shape = getattr(v, "shape", None)
        if shape != (int(offsets[-1]),):
            raise ValueError(f"The unravel function expected an array of shape "
                             f"{(int(offsets[-1]),)}, got shape {shape}.")
        parts = [lax.convert_element_type(jnp.reshape(v[int(o):int(o) + n], a.shape),
                                          a.dtype, a.weak_type)
                 for o, n, a in zip(offsets, sizes, avals)]
        return tree_unflatten(treedef, parts)

    return flat, unravel
