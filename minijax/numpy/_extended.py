"""Typed PRNG keys (arrays of an extended dtype) in the jnp functions that only move or
select elements.

A key array is ``dtype.from_physical(words)`` over ``words`` of shape
``shape + element_shape``. A function that only rearranges elements of its first
argument (reshape, transpose, take, tile, flip, ...) gives the same result on every
plane of those words, so it runs on the planes, mapped over the trailing element axis,
and the result is the key array over the rearranged words: ``jnp.reshape(keys, ...)``
works as in jax.
"""

from __future__ import annotations

import functools
import math

from minijax.core import dtypes


def on_words(fn, dt, a):
    """``fn`` applied to the key array ``a`` of extended dtype ``dt`` through its words;
    ``fn``'s result (an array or a list of them) comes back as key arrays."""
    from minijax import lax
    from minijax.api.vmap import vmap
    words = dt.to_physical(a)
    eshape = tuple(dt.element_shape)
    lead = tuple(words.shape[:words.ndim - len(eshape)])
    flat = lax.reshape(words, (*lead, math.prod(eshape)))
    out = vmap(fn, in_axes=-1, out_axes=-1)(flat)

    def back(w):
        return dt.from_physical(lax.reshape(w, (*w.shape[:-1], *eshape)))
    return [back(w) for w in out] if isinstance(out, (list, tuple)) else back(out)


def keys_move(fn):
    """Let ``fn``, a jnp function that only moves or selects elements of its first
    argument, take typed key arrays there (see the module docstring)."""
    @functools.wraps(fn)
    def wrapper(a, *args, **kwargs):
        dt = getattr(a, "dtype", None)
        if not isinstance(dt, dtypes.ExtendedDType):
            return fn(a, *args, **kwargs)
        return on_words(lambda w: fn(w, *args, **kwargs), dt, a)
    return wrapper
