"""Typed key arrays against jax: they are Arrays, and their dtype is a prng_key."""

import numpy as np


def test_key_arrays_are_arrays_and_their_dtype_a_prng_key_like_jax():
    import jax
    import jax.numpy as jjnp

    import minijax
    import minijax.numpy as mjnp
    ours, theirs = minijax.random.key(0), jax.random.key(0)
    assert isinstance(ours, minijax.Array) and isinstance(theirs, jax.Array)
    for lib, np_, k in ((minijax, mjnp, ours), (jax, jjnp, theirs)):
        got = [np_.issubdtype(k.dtype, lib.dtypes.prng_key),
               np_.issubdtype(k.dtype, lib.dtypes.extended),
               np_.issubdtype(k.dtype, np.floating), np_.issubdtype(k.dtype, k.dtype),
               np_.issubdtype(np.float32, lib.dtypes.extended),
               lib.dtypes.issubdtype(k.dtype, lib.dtypes.prng_key)]
        assert got == [True, True, False, True, False, True]
