"""with_sharding_constraint as flax uses it, side by side with jax on 4 CPU devices:
PartitionSpecs over the mesh set with ``set_mesh`` (a RuntimeError without one), a
NamedSharding over the context mesh's abstract mesh (flax builds them from
``get_abstract_mesh()``) eagerly and under jit, a jit whose only sharded part is a
constraint partitioned over its mesh (also with ``in_shardings=None`` given), typed keys
among the constrained leaves, and ``SingleDeviceSharding.is_equivalent_to``."""

from __future__ import annotations

import numpy as np
import pytest

from tests.sharding._eight_devices import get, run_cases, worker

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _both(body):
    import jax

    import minijax
    return {"minijax": body(minijax), "jax": body(jax)}


def _desc(a):
    s = a.sharding
    spec = getattr(s, "spec", None)
    return (type(s).__name__, None if spec is None else tuple(spec),
            type(getattr(s, "mesh", None)).__name__, np.asarray(a).tolist())


def _mesh(mod):
    return mod.make_mesh((2, 2), ("x", "y"), axis_types=(mod.sharding.AxisType.Auto,) * 2)


@case
def specs_and_abstract_meshes():
    def body(mod):
        P, NS = mod.sharding.PartitionSpec, mod.sharding.NamedSharding
        wsc = mod.lax.with_sharding_constraint
        out = {}
        x = mod.numpy.arange(8.0).reshape(4, 2)
        try:
            wsc(x, P("x"))
        except Exception as e:  # noqa: BLE001
            out["no_mesh"] = type(e).__name__
        mesh = _mesh(mod)
        with mod.set_mesh(mesh):
            am = mod.sharding.get_abstract_mesh()
            out["jit_spec"] = _desc(mod.jit(lambda v: wsc(v, P("x", "y")))(x))
            out["jit_abstract"] = _desc(mod.jit(lambda v: wsc(v, NS(am, P("y"))))(x))
            out["jit_tree"] = _desc(mod.jit(lambda v: wsc({"a": v}, {"a": P(None, "x")}))(x)["a"])
            out["jit_in_shardings_none"] = _desc(
                mod.jit(lambda v: wsc(v, P("x")), in_shardings=None, out_shardings=None)(x))
            y = mod.numpy.arange(8.0).reshape(4, 2)  # made under the mesh
            out["eager_abstract"] = _desc(wsc(y, NS(am, P("x"))))
            k = mod.random.split(mod.random.key(0), 4)
            got = mod.jit(lambda k: wsc({"k": k, "v": x}, {"k": P("x"), "v": P()}))(k)
            out["key_leaf"] = (str(got["k"].dtype), tuple(got["k"].shape),
                               np.asarray(mod.random.key_data(got["k"])).tolist(),
                               tuple(got["k"].sharding.spec))
        return out
    return _both(body)


@case
def make_mesh_positional_axis_types():
    def body(mod):
        T = mod.sharding.AxisType
        m = mod.make_mesh((2, 2), ("x", "y"), (T.Explicit, T.Auto))
        return [t.name for t in m.axis_types], list(m.axis_names), dict(m.shape)
    return _both(body)


@case
def like_functions_keep_sharding():
    def body(mod):
        NS, P = mod.sharding.NamedSharding, mod.sharding.PartitionSpec
        mesh = _mesh(mod)
        jnp = mod.numpy
        x = mod.device_put(jnp.arange(8.0).reshape(4, 2), NS(mesh, P("x", "y")))
        rep = mod.device_put(jnp.ones(4), NS(mesh, P()))
        outs = [jnp.zeros_like(x), jnp.ones_like(x, dtype=jnp.int32), jnp.full_like(x, 3.0),
                jnp.zeros_like(x, shape=(2,)), jnp.zeros_like(rep, shape=(3,)),
                jnp.zeros_like(jnp.ones(3)), jnp.empty_like(x)]
        return [_desc(o) for o in outs]
    return _both(body)


@case
def jit_without_arguments_over_constraint_mesh():
    def body(mod):
        NS, P = mod.sharding.NamedSharding, mod.sharding.PartitionSpec
        mesh = _mesh(mod)
        with mod.set_mesh(mesh):
            am = mod.sharding.get_abstract_mesh()
            f = mod.jit(lambda: mod.lax.with_sharding_constraint(
                mod.numpy.ones((4, 2)), NS(am, P("x", "y"))))
            inner = mod.jit(lambda: mod.lax.with_sharding_constraint(
                mod.numpy.ones((4, 2)), P("y")))
            g = mod.jit(lambda: inner() * 2)
            return [_desc(f()), _desc(g())]
    return _both(body)


@case
def shard_map_custom_node_specs_and_empty_axis_names():
    def body(mod):
        P = mod.sharding.PartitionSpec
        mesh = _mesh(mod)
        jnp = mod.numpy

        class Box:
            def __init__(self, a, b, tag):
                self.a, self.b, self.tag = a, b, tag

        try:
            mod.tree_util.register_pytree_node(Box, lambda x: ((x.a, x.b), x.tag),
                                               lambda tag, ch: Box(*ch, tag))
        except ValueError:
            pass
        x = Box(jnp.arange(8.0).reshape(4, 2), jnp.arange(4.0), "t")
        f = mod.shard_map(lambda v: Box(v.a * 2, v.b + 1, v.tag), mesh=mesh,
                          in_specs=(Box(P("x", "y"), P("x"), "t"),),
                          out_specs=Box(P("x", "y"), P("x"), "t"), axis_names=frozenset())
        out = f(x)
        bad = None
        try:
            mod.shard_map(lambda v: v, mesh=mesh, in_specs=(Box(P("x"), P("x"), "other"),),
                          out_specs=P())(x)
        except ValueError as e:
            bad = type(e).__name__
        return (np.asarray(out.a).tolist(), np.asarray(out.b).tolist(), out.tag, bad)
    return _both(body)


@case
def jit_partition_spec_shardings():
    def body(mod):
        P = mod.sharding.PartitionSpec
        jnp = mod.numpy
        f = mod.jit(lambda a, b: (a + b, a * 2), in_shardings=(P(), P("x")),
                    out_shardings=(P("x"), None))
        a, b = jnp.ones((4, 2)), jnp.arange(8.0).reshape(4, 2)
        try:
            f(a, b)
            err = None
        except RuntimeError as e:
            err = str(e).split(" in context")[0]
        with mod.set_mesh(_mesh(mod)):
            outs = f(a, b)
        return err, [_desc(o) for o in outs]
    return _both(body)


def _worker(path):
    worker(CASES, path)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out, _ = run_cases("test_constraint_specs", tmp_path_factory.mktemp("wsc"), devices=4)
    return out


def test_specs_and_abstract_meshes_like_jax(results):
    r = get(results, "specs_and_abstract_meshes")
    assert r["minijax"] == r["jax"]


_SDS = """
import numpy as np, {mod} as mod
d = mod.devices()[0]
s = mod.sharding.SingleDeviceSharding(d)
m = mod.sharding.Mesh(np.array([d]), ("x",))
NS, P = mod.sharding.NamedSharding, mod.sharding.PartitionSpec
print([s.is_equivalent_to(NS(m, P()), 2), s.is_equivalent_to(NS(m, P("x")), 1),
       s.is_equivalent_to(s, 0),
       s.is_equivalent_to(mod.sharding.SingleDeviceSharding(mod.devices()[1]), 1)])
"""


def test_single_device_is_equivalent_to_like_jax():
    # each in a process of its own: jax puts its own methods on jaxlib's
    # SingleDeviceSharding, the class minijax's single-device arrays share
    import os
    import subprocess
    import sys

    from tests.sharding._eight_devices import ROOT
    env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES="2", XLA_FLAGS=(
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip(),
        JAX_PLATFORMS="cpu", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = [subprocess.run([sys.executable, "-c", _SDS.format(mod=mod)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120) for mod in
           ("minijax", "jax")]
    assert all(p.returncode == 0 for p in out), [p.stderr for p in out]
    assert out[0].stdout == out[1].stdout == "[True, True, True, False]\n"


def test_make_mesh_positional_axis_types_like_jax(results):
    r = get(results, "make_mesh_positional_axis_types")
    assert r["minijax"] == r["jax"]


def test_like_functions_keep_sharding_like_jax(results):
    r = get(results, "like_functions_keep_sharding")
    assert r["minijax"] == r["jax"]


def test_jit_without_arguments_over_constraint_mesh_like_jax(results):
    r = get(results, "jit_without_arguments_over_constraint_mesh")
    assert r["minijax"] == r["jax"]


def test_shard_map_custom_node_specs_and_empty_axis_names_like_jax(results):
    r = get(results, "shard_map_custom_node_specs_and_empty_axis_names")
    assert r["minijax"] == r["jax"]


def test_jit_partition_spec_shardings_like_jax(results):
    r = get(results, "jit_partition_spec_shardings")
    assert r["minijax"] == r["jax"]
