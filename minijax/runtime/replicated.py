"""Multi-replica executables: one program run on N devices at once (for ``pmap``).

A module lowered with ``mhlo.num_replicas = N`` is compiled with a device
assignment over ``N`` devices (replica ``i`` runs on ``devices[i]``); its
cross-replica collectives (``all-reduce``, ``all-gather``, ``collective-permute``)
then exchange data between those devices. Each argument is given as one
single-device ``Array`` per replica, and each output comes back the same way.

Example::

    >>> exe = compile_replicated(text, devices[:4], out_avals=[aval])
    >>> outs = exe.execute([[x0, x1, x2, x3]])   # outs[0] is a list of 4 Arrays
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib import _jax, xla_client

from minijax.core.aval import ShapedArray
from minijax.runtime import backend as _backend
from minijax.runtime import lapack as _lapack
from minijax.runtime.array import Array, _wrap, intern_aval
from minijax.runtime.executable import compile_and_load, deferred_errors_for

__all__ = ["ReplicatedExecutable", "compile_replicated", "replicated_compile_options"]


def replicated_compile_options(devices: Sequence[_backend.Device]) -> xla_client.CompileOptions:
    """Compile options for ``len(devices)`` replicas, replica ``i`` on ``devices[i]``."""
    opts = xla_client.CompileOptions()
    opts.num_replicas = len(devices)
    opts.num_partitions = 1
    opts.device_assignment = xla_client.DeviceAssignment.create(
        np.array([[d.id] for d in devices]))
    opts.executable_build_options.use_spmd_partitioning = False
    return opts


class ReplicatedExecutable:
    """A loaded executable running one replica per device.

    Args:
      loaded: jaxlib's ``LoadedExecutable``.
      devices: the devices, in replica order.
      out_avals: the per-replica type of each output.
    """

    __slots__ = ("loaded", "devices", "out_avals", "_sharding", "_host_callbacks", "_ordered",
                 "_deferred")

    def __init__(self, loaded, devices: Sequence[_backend.Device],
                 out_avals: Sequence[ShapedArray], host_callbacks: Sequence = (),
                 ordered: bool = False, deferred=None):
        self.loaded = loaded
        self._deferred = deferred  # errors of the callbacks (runtime/callback.py)
        self._host_callbacks = tuple(host_callbacks)  # alive as long as the executable
        self._ordered = ordered
        self.devices = tuple(devices)
        self.out_avals = list(out_avals)
        # The per-replica buffers of one argument are handed to XLA as one jaxlib
        # array over all devices. Its sharding only tells jaxlib which device holds
        # which buffer (one whole buffer per device); the buffers may differ.
        self._sharding = _jax.GSPMDSharding(_jax.DeviceList(self.devices),
                                            xla_client.HloSharding.replicate())

    def execute(self, args: Sequence[Sequence[Array]]) -> list[list[Array]]:
        """Run every replica; ``args[k][i]`` is argument ``k`` of replica ``i`` (on
        ``devices[i]``). Returns ``outs[k][i]``, output ``k`` of replica ``i``."""
        n = len(self.devices)
        arrays = []
        for k, shards in enumerate(args):
            if len(shards) != n:
                raise ValueError(f"argument {k}: expected {n} per-replica arrays, "
                                 f"got {len(shards)}")
            for a in shards:
                a._check_alive()
            arrays.append(_jax.ArrayImpl(shards[0].aval, self._sharding,
                                         [a._buf for a in shards], True, _skip_checks=True))
        if self._host_callbacks:  # with tokens: effects_barrier waits for its callbacks
            from minijax.runtime.callback import track  # (imports lax: only when needed)
            results = self.loaded.execute_sharded(arrays, with_tokens=True)
            track(results, self._ordered, self._deferred)
        else:
            results = self.loaded.execute_sharded(arrays)
        outs = results.disassemble_into_single_device_arrays()
        return [[_wrap(b, intern_aval(aval, d)) for b, d in zip(bufs, self.devices)]
                for bufs, aval in zip(outs, self.out_avals)]

    def hlo_text(self) -> str:
        """The optimized HLO module, as text."""
        return self.loaded.hlo_modules()[0].to_string()

    def __repr__(self) -> str:
        outs = ", ".join(a.str_short() for a in self.out_avals)
        return f"ReplicatedExecutable(({outs}) on {len(self.devices)} devices)"


def compile_replicated(module: str, devices: Sequence[_backend.Device], *,
                       out_avals: Sequence[ShapedArray]) -> ReplicatedExecutable:
    """Compile a StableHLO module with ``mhlo.num_replicas = len(devices)``.

    All devices must belong to the same backend; replica ``i`` runs on ``devices[i]``.
    """
    devices = tuple(devices)
    if not devices:
        raise ValueError("compile_replicated needs at least one device")
    if len(set(devices)) != len(devices):
        raise ValueError(f"each device may run only one replica; got {list(devices)}")
    backend = _backend.backend_of(devices[0])
    _lapack.register_if_used(module)
    host_callbacks = getattr(module, "host_callbacks", ())
    deferred = deferred_errors_for(module, devices)
    loaded = compile_and_load(backend, module, None, devices,
                              replicated_compile_options(devices), deferred)
    return ReplicatedExecutable(loaded, devices, out_avals, host_callbacks,
                                getattr(module, "ordered", False), deferred)
