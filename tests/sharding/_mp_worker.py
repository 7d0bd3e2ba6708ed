"""Run by tests/sharding/test_distributed.py in each of two processes (minijax.launch)."""

import numpy as np

import minijax
import minijax.numpy as jnp
from minijax.sharding import NamedSharding, PartitionSpec as P


def main():
    minijax.distributed.initialize(initialization_timeout=60)
    pid = minijax.process_index()
    mesh = minijax.make_mesh((8,), ("x",))
    x = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    s, rep = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())
    a = minijax.make_array_from_callback(x.shape, s, lambda idx: x[idx])
    total = minijax.jit(lambda a: jnp.sum(a * 2), out_shardings=rep)(a)
    local = minijax.make_array_from_process_local_data(s, x[4 * pid:4 * pid + 4])
    psum = minijax.jit(minijax.shard_map(lambda b: minijax.lax.psum(b.sum(), "x"), mesh=mesh,
                                         in_specs=P("x"), out_specs=P()))(local)
    shards = sorted(sh.device.id for sh in a.addressable_shards)
    print("RESULT", pid, minijax.process_count(), minijax.device_count(),
          len(minijax.local_devices()), float(np.asarray(total.addressable_data(0))),
          float(np.asarray(psum.addressable_data(0))), a.is_fully_addressable, shards,
          flush=True)
    minijax.distributed.shutdown()


if __name__ == "__main__":
    main()
