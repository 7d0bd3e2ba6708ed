"""minijax.experimental.mesh_utils against jax.experimental.mesh_utils.

The 8-device cases run in one subprocess (``--xla_force_host_platform_device_count=8``,
for minijax and jax alike); error cases run here on the default devices.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import minijax
from minijax.experimental import mesh_utils

_SCRIPT = r"""
import numpy as np, minijax, jax
from minijax.experimental import mesh_utils as mm
from jax.experimental import mesh_utils as jm
def ids(a):
    return (a.shape, str(a.dtype), [d.id for d in a.flat])
md, jd = minijax.devices(), jax.devices()
assert len(md) == 8 and len(jd) == 8
for shape in [(8,), (2, 4), (2, 2, 2), [4, 2], np.array([2, 4])]:
    assert ids(mm.create_device_mesh(shape)) == ids(jm.create_device_mesh(shape)), shape
    assert ids(mm.create_device_mesh(shape, contiguous_submeshes=True)) == \
        ids(jm.create_device_mesh(shape, contiguous_submeshes=True)), shape
assert ids(mm.create_device_mesh((2, 4), md[::-1])) == ids(jm.create_device_mesh((2, 4), jd[::-1]))
assert ids(mm.create_device_mesh((2, 2), md[2:6])) == ids(jm.create_device_mesh((2, 2), jd[2:6]))
for args in [((2, 4), (1, 1)), ((2, 4), (1,)), ((8,), (1,)), ((4, 2), (1, 1))]:
    a = mm.create_hybrid_device_mesh(*args, process_is_granule=True)
    b = jm.create_hybrid_device_mesh(*args, process_is_granule=True)
    assert ids(a) == ids(b), args
mesh = minijax.sharding.Mesh(mm.create_device_mesh((2, 4)), ("x", "y"))
spec = minijax.sharding.PartitionSpec("x", "y")
x = minijax.device_put(np.arange(16.0).reshape(4, 4), minijax.sharding.NamedSharding(mesh, spec))
assert len(x.addressable_shards) == 8
np.testing.assert_array_equal(np.asarray(x), np.arange(16.0).reshape(4, 4))
print("OK")
"""


@pytest.mark.slow
def test_meshes_match_jax_on_8_devices():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES="8", MINIJAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr


def test_errors_like_jax():
    from jax.experimental import mesh_utils as jm
    n = len(minijax.devices())
    for bad in [(n + 1,), ["a", n]]:
        with pytest.raises(ValueError) as e1:
            mesh_utils.create_device_mesh(bad)
        with pytest.raises(ValueError) as e2:
            jm.create_device_mesh(bad)
        assert str(e1.value) == str(e2.value)
    with pytest.raises(TypeError):
        mesh_utils.create_device_mesh(n)
    with pytest.raises(ValueError, match="slice_index"):
        mesh_utils.create_hybrid_device_mesh((n,), (1,))
    with pytest.raises(ValueError, match="Number of slices 1"):
        mesh_utils.create_hybrid_device_mesh((n,), (2,), process_is_granule=True)


def test_one_device_mesh():
    m = mesh_utils.create_device_mesh((1,) * 2, minijax.devices()[:1])
    assert m.shape == (1, 1) and m.dtype == object and m[0, 0] == minijax.devices()[0]


def test_device_kind_handler():
    dev = minijax.devices()[0]
    mesh_utils.device_kind_handler_dict[dev.device_kind] = \
        lambda shape, devices, *, contiguous_submeshes: np.array(devices[::-1]).reshape(shape)
    try:
        m = mesh_utils.create_device_mesh((1,), [dev])
        assert m.tolist() == [dev]
    finally:
        del mesh_utils.device_kind_handler_dict[dev.device_kind]
