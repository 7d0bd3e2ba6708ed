"""Pallas: write TPU kernels as Python functions over blocks, run and check them anywhere.

``import minijax.experimental.pallas as pl``::

    def add_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    add = pl.pallas_call(
        add_kernel, out_shape=minijax.ShapeDtypeStruct((1024, 128), jnp.float32),
        grid=(8,), in_specs=[pl.BlockSpec((128, 128), lambda i: (i, 0))] * 2,
        out_specs=pl.BlockSpec((128, 128), lambda i: (i, 0)))

Without a TPU the kernel runs in interpret mode (a StableHLO loop over the grid),
with the checks a TPU compile makes: block tiling, VMEM use, block-index bounds
and races between ``parallel`` grid points. ``minijax.experimental.pallas.tpu``
(``pltpu``) has the TPU compiler parameters and memory spaces.
"""

from minijax.experimental.pallas._core import (AbstractRef, BlockSpec, MemoryRef, MemorySpace,
                                               Slice, cdiv, ds, dslice)
from minijax.experimental.pallas._pallas_call import GridSpec, pallas_call, pallas_call_p
from minijax.experimental.pallas._primitives import (Ref, get_p, load, num_programs,
                                                     program_id, program_id_p, store, swap_p,
                                                     when)
from minijax.experimental.pallas._checks import DEFAULT_VMEM_LIMIT_BYTES

ANY = MemorySpace.ANY

__all__ = ["ANY", "AbstractRef", "BlockSpec", "DEFAULT_VMEM_LIMIT_BYTES", "GridSpec",
           "MemoryRef", "MemorySpace", "Ref", "Slice", "cdiv", "ds", "dslice", "get_p", "load",
           "num_programs", "pallas_call", "pallas_call_p", "program_id", "program_id_p",
           "store", "swap_p", "when"]
