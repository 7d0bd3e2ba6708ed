"""``minijax.typeof(x).sharding``: the sharding of a value outside any mesh, as jax gives
it (a NamedSharding over the empty AbstractMesh, one ``None`` per dimension), and the
``out_sharding=`` arguments that accept it."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.sharding import AbstractMesh, NamedSharding, PartitionSpec


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (1, 2, 4)])
def test_typeof_sharding_matches_jax(shape):
    ours = minijax.typeof(jnp.ones(shape)).sharding
    theirs = jax.typeof(jjnp.ones(shape)).sharding
    assert isinstance(ours, NamedSharding)
    assert tuple(ours.spec) == tuple(theirs.spec)
    m, tm = ours.mesh, theirs.mesh
    assert (m.empty, m.axis_names, m.axis_sizes, m.size) == \
        (tm.empty, tm.axis_names, tm.axis_sizes, tm.size)
    assert (m.are_all_axes_explicit, m.are_all_axes_auto, m.are_all_axes_manual) == \
        (tm.are_all_axes_explicit, tm.are_all_axes_auto, tm.are_all_axes_manual)
    assert ours.shard_shape(shape) == theirs.shard_shape(shape)
    assert ours.is_fully_replicated == theirs.is_fully_replicated
    assert repr(m) == repr(tm)


def test_typeof_sharding_under_jit_and_of_scalars():
    seen = []
    minijax.jit(lambda x: seen.append(minijax.typeof(x).sharding) or x)(jnp.ones((2, 5)))
    assert tuple(seen[0].spec) == (None, None) and seen[0].mesh.empty
    assert tuple(minijax.typeof(1.0).sharding.spec) == ()
    assert minijax.ShapedArray((4,), np.float32).sharding == \
        NamedSharding(AbstractMesh((), ()), PartitionSpec(None))


def test_update_keeps_or_rejects_sharding():
    a = minijax.ShapedArray((4,), np.float32)
    assert a.update(shape=(2,), sharding=a.sharding) == minijax.ShapedArray((2,), np.float32)
    assert tuple(a.update(shape=(2, 2)).sharding.spec) == (None, None)
    mesh = minijax.make_mesh((1,), ("x",))  # explicit axes: the sharding is in the type
    b = a.update(sharding=NamedSharding(mesh, PartitionSpec("x")))
    assert tuple(b.sharding.spec) == ("x",) and b.sharding.mesh == mesh.abstract_mesh
    assert b.str_short() == "f32[4@x]" and b != a
    assert a.update(sharding=NamedSharding(minijax.sharding.Mesh(mesh.devices, ("x",)),
                                           PartitionSpec("x"))) == a  # Auto: not in types


def test_out_sharding_of_typeof_is_no_constraint():
    x = jnp.arange(6.0).reshape(2, 3)
    s = minijax.typeof(x).sharding
    key = minijax.random.key(0)
    np.testing.assert_array_equal(minijax.random.normal(key, (2, 3), out_sharding=s),
                                  minijax.random.normal(key, (2, 3)))
    np.testing.assert_array_equal(jnp.zeros((2, 3), out_sharding=s), np.zeros((2, 3)))
    np.testing.assert_array_equal(jnp.tensordot(x, x, 2, out_sharding=s),
                                  np.tensordot(np.asarray(x), np.asarray(x), 2))
    np.testing.assert_array_equal(jnp.matmul(x, x.T, out_sharding=None), np.asarray(x @ x.T))
    np.testing.assert_array_equal(jnp.array([1, 2], out_sharding=s), [1, 2])
    with pytest.raises(ValueError, match="abstract mesh"):
        minijax.device_put(x, s)


def test_abstract_mesh_axes():
    m = AbstractMesh((2, 4), ("a", "b"))
    tm = jax.sharding.AbstractMesh((2, 4), ("a", "b"))
    assert m.shape == dict(tm.shape) and m.size == tm.size and m.axis_sizes == tm.axis_sizes
    assert m.are_all_axes_auto == tm.are_all_axes_auto
    assert m.auto_axes == tuple(tm.auto_axes)
    assert m == AbstractMesh((2, 4), ("a", "b")) and m != AbstractMesh((4, 2), ("a", "b"))
    with pytest.raises(ValueError):
        AbstractMesh((2,), ("a", "b"))
