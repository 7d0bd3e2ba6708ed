"""ShapedArray is an immutable value: avals are interned and shared between arrays."""

import numpy as np
import pytest

import minijax.numpy as jnp
from minijax.core.aval import ShapedArray


def test_shaped_array_fields_cannot_be_changed_in_place():
    a = ShapedArray((2, 3), np.float32)
    for name, value in [("shape", (64,)), ("dtype", np.dtype(np.int8)), ("weak_type", True),
                        ("_hash", 0), ("other", 1)]:
        with pytest.raises(AttributeError, match="immutable"):
            setattr(a, name, value)
    with pytest.raises(AttributeError, match="immutable"):
        del a.shape
    assert (a.shape, a.dtype, a.weak_type) == ((2, 3), np.float32, False)
    assert a.update(shape=(6,)) == ShapedArray((6,), np.float32)


def test_an_arrays_aval_cannot_be_grown_to_read_past_its_buffer():
    x = jnp.arange(4.0)
    y = jnp.arange(4.0) + 1  # shares the interned aval f32[4]
    with pytest.raises(AttributeError):
        x.aval.shape = (64,)
    np.testing.assert_array_equal(np.asarray(x), [0, 1, 2, 3])
    np.testing.assert_array_equal(np.asarray(y), [1, 2, 3, 4])
    assert hash(x.aval) == hash(ShapedArray((4,), np.float32))
