"""jax.experimental's ode, sparse, mesh_utils, serialize_executable and
compilation_cache used as a jax program uses them: the same program runs on jax and,
in the jax mode, on minijax."""

import json
import sys
import tempfile

import numpy as np

import jax
import jax.numpy as jnp
from jax.experimental import mesh_utils, serialize_executable, sparse
from jax.experimental.compilation_cache import compilation_cache as cc
from jax.experimental.ode import odeint

ts = jnp.linspace(0.0, 1.0, 4)
ys = odeint(lambda y, t, k: -k * y, jnp.ones(2), ts, 1.5)
dk = jax.grad(lambda k: odeint(lambda y, t, k: -k * y, jnp.ones(2), ts, k)[-1].sum())(1.5)

m = np.array([[0, 1.0, 0], [2.0, 0, 3.0]], np.float32)
a = sparse.BCOO.fromdense(m)
v = jnp.arange(3.0)
sp = {"matvec": (a @ v).tolist(), "nse": a.nse, "T": a.T.todense().tolist(),
      "grad": jax.grad(lambda x: (a @ x).sum())(v).tolist(),
      "sparsify": sparse.sparsify(lambda s, x: (s * 2) @ x)(a, v).tolist(),
      "bcsr": (sparse.BCSR.fromdense(m) @ v).tolist()}

mesh = mesh_utils.create_device_mesh((len(jax.devices()),))

f = jax.jit(lambda x, y: {"s": x * y + 1.0})
compiled = f.lower(v, v).compile()
payload, in_tree, out_tree = serialize_executable.serialize(compiled)
loaded = serialize_executable.deserialize_and_load(payload, in_tree, out_tree)

with tempfile.TemporaryDirectory() as d:
    cc.set_cache_dir(d)
    cached = float(jax.jit(lambda x: jnp.tanh(x).sum())(v))
    cc.reset_cache()
    cc.set_cache_dir(None)

out = {"ode": np.asarray(ys).tolist(), "ode_grad": float(dk), "sparse": sp,
       "mesh": [int(x.id) for x in mesh.flat], "mesh_shape": list(mesh.shape),
       "serialized": np.asarray(loaded(v, v)["s"]).tolist(), "trees": [str(in_tree), str(out_tree)],
       "cached": cached}
json.dump(out, sys.stdout)
