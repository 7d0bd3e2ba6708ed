"""in_shardings / in_specs that are not pytree prefixes of the arguments (one device)."""

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.sharding import Mesh, NamedSharding, PartitionSpec as P


def _mesh():
    return Mesh(np.array(minijax.devices()[:1]), ("x",))


def test_jit_in_shardings_prefix_mismatch_names_the_place():
    s = NamedSharding(_mesh(), P("x"))
    good = minijax.jit(lambda a, b: a + b["k"], in_shardings=(s, {"k": s}))
    np.testing.assert_array_equal(good(jnp.ones(4), {"k": jnp.ones(4)}), 2 * np.ones(4))
    bad = minijax.jit(lambda a, b: a + b, in_shardings=(s, {"k": s}))
    with pytest.raises(ValueError, match=r"jit\(<lambda>\) in_shardings\[1\]: .* is not a pytree "
                                         r"prefix of the arguments"):
        bad(jnp.ones(4), jnp.ones(4))


def test_shard_map_in_specs_prefix_mismatch_and_none_specs():
    m = _mesh()
    out = minijax.shard_map(lambda a, b: a * b, mesh=m, in_specs=(P("x"), None),
                            out_specs=P("x"))(jnp.ones(4), 2.0)
    np.testing.assert_array_equal(out, 2 * np.ones(4))
    bad = minijax.shard_map(lambda a: a * 2, mesh=m, in_specs=(P("x"), P()), out_specs=P("x"))
    with pytest.raises(ValueError, match=r"shard_map\(<lambda>\) in_specs: .* is not a pytree "
                                         r"prefix of the arguments made of PartitionSpecs"):
        bad(jnp.ones(4))
