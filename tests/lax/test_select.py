"""vmap of select_n where some cases are unbatched (and rank 0): they are broadcast."""

import jax
import numpy as np
import pytest

import minijax
from minijax import lax

P = np.array([True, False, True])
X = np.arange(12, dtype=np.float32).reshape(3, 4)


@pytest.mark.parametrize("f,args,in_axes", [
    (lambda L, p, x: L.select(p, x, np.float32(-1)), (P, X[:, 0]), (0, 0)),
    (lambda L, p: L.select(p, np.float32(1), np.float32(2)), (P,), (0,)),
    (lambda L, p, x: L.select(p, x, np.zeros(4, np.float32)), (P, X), (0, 0)),
    (lambda L, x: L.select(np.array([True, False, True]), x, np.zeros(3, np.float32)), (X,),
     (1,)),
    (lambda L, p, x: L.select_n(p, x, -x, x * 2), (np.array([0, 1, 2], np.int32), X[:, 0]),
     (0, None)),
], ids=["scalar_constant_case", "only_predicate", "scalar_predicate", "fixed_predicate",
        "int_predicate"])
def test_vmap_select_with_unbatched_cases_matches_jax(f, args, in_axes):
    got = minijax.vmap(lambda *a: f(lax, *a), in_axes=in_axes)(*args)
    want = jax.vmap(lambda *a: f(jax.lax, *a), in_axes=in_axes)(*args)
    np.testing.assert_array_equal(got, want)
