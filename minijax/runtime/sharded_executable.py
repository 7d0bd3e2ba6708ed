"""Executables partitioned by XLA's SPMD partitioner over several devices.

A module whose parameters (and perhaps results) carry sharding attributes is
compiled with ``num_partitions = len(devices)`` and SPMD partitioning on: XLA splits
the program into one per-device program and inserts the collectives it needs, with
Shardy when the module is in the ``sdy`` dialect (it declares an ``sdy.mesh``), else
with GSPMD (``mhlo.sharding`` attributes). Arguments are sharded Arrays (one jaxlib
array over all devices, one buffer per device); outputs come back the same way, laid
out as the compiled program says (``get_output_shardings``), without gathering.

Example::

    >>> exe = compile_sharded(text, out_avals, placement)
    >>> exe.execute([x._buf])        # x: a sharded Array
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib import _jax, xla_client

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.config import config
from minijax.core.lru import LRUCache
from minijax.lowering.sdy import Meshes
from minijax.lowering.types import string_attr, tensor_type
from minijax.runtime import backend as _backend
from minijax.runtime import compile_options as _options
from minijax.runtime import lapack as _lapack
from minijax.runtime import limits as _limits
from minijax.runtime import sharding as _sharding
from minijax.runtime.array import Array, intern_aval
from minijax.runtime.executable import (DeserializationError, Executable, _counts,
                                        _make_effectful_execute, _make_execute,
                                        _with_float0, check_signature, compile_and_load,
                                        deferred_errors_for, refine_polymorphic_shapes)

__all__ = ["ShardedExecutable", "can_reshard", "compile_sharded", "deserialize_sharded",
           "reshard", "sharded_compile_options"]


def sharded_compile_options(devices: Sequence, num_args: int, out_given: Sequence[bool],
                            shardy: bool = False) -> xla_client.CompileOptions:
    """Options for one program partitioned over ``devices`` (partition ``i`` on
    ``devices[i]``); XLA chooses the layout of outputs whose ``out_given`` is False.
    ``shardy``: partitioned by Shardy (the module is in the ``sdy`` dialect), else by
    GSPMD (``mhlo.sharding`` attributes; XLA imports only the one the option names)."""
    opts = xla_client.CompileOptions()
    opts.num_replicas = 1
    opts.num_partitions = len(devices)
    opts.device_assignment = xla_client.DeviceAssignment.create(
        np.array([[d.id for d in devices]]))
    build = opts.executable_build_options
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = shardy
    build.allow_spmd_sharding_propagation_to_parameters = [False] * num_args
    build.allow_spmd_sharding_propagation_to_output = [not g for g in out_given] or [False]
    return opts


class ShardedExecutable(Executable):
    """A loaded executable partitioned over ``placement.devices``.

    ``in_shardings``/``out_shardings``: the layout of each parameter and result
    (minijax shardings); ``execute(bufs)`` takes the arguments' jaxlib arrays, laid out
    as ``in_shardings``, and returns sharded Arrays.
    """

    __slots__ = ("placement", "in_shardings", "out_shardings")

    def __init__(self, loaded: Any, out_avals: Sequence[ShapedArray],
                 backend: _backend.Backend, placement: _sharding.Placement,
                 donated: Sequence[int] = (), host_callbacks: Sequence[Any] = (),
                 ordered: bool = False, deferred: Any = None):
        self.loaded = loaded
        self.backend = backend
        self.donated = tuple(donated)
        self._code_size = None
        self._host_callbacks = tuple(host_callbacks)  # alive as long as the executable
        self._checked = False
        self.placement = placement
        self.in_shardings = placement.in_shardings
        protos = loaded.get_output_shardings()  # None when compiled for one device
        hlos = ([xla_client.HloSharding.from_proto(p) for p in protos] if protos is not None
                else [xla_client.HloSharding.replicate()] * len(out_avals))
        if len(hlos) != len(out_avals):  # one tuple sharding for all results
            hlos = [hlos[0]] * len(out_avals) if len(hlos) == 1 else hlos
        wanted = placement.out_shardings or (None,) * len(out_avals)
        candidates = [s for s in (*wanted, *placement.in_shardings) if s is not None]
        outs = []
        for a, hlo, want in zip(out_avals, hlos, wanted):
            if want is not None and want._to_xla_hlo_sharding(len(a.shape)) == hlo:
                outs.append(want)
            else:
                outs.append(_sharding.sharding_from_hlo(hlo, placement.devices, len(a.shape),
                                                        candidates))
        self.out_shardings = tuple(outs)
        # a jaxlib SingleDeviceSharding (one device, no candidate) is its device's layout
        self.out_avals = [intern_aval(ShapedArray(a.shape, a.dtype, a.weak_type),
                                      s._device if type(s) is _jax.SingleDeviceSharding else s)
                          for a, s in zip(out_avals, outs)]
        # float0 results (tangents of integers) are bool zeros on the devices, handed
        # back as NumPy float0 arrays, as for one device
        float0 = [i for i, a in enumerate(self.out_avals) if a.dtype == dtypes.float0]
        dev_avals = [intern_aval(ShapedArray(a.shape, np.bool_), s) if i in float0 else a
                     for i, (a, s) in enumerate(zip(self.out_avals, outs))]
        self._handlers = [
            _jax.array_result_handler(a, s if type(s) is _jax.SingleDeviceSharding else
                                      _sharding.jaxlib_sharding(s, len(a.shape)), True,
                                      _skip_checks=True)
            for a, s in zip(dev_avals, outs)]
        if host_callbacks:  # with tokens: effects_barrier waits for its callbacks
            run = _make_effectful_execute(loaded.execute_sharded, self._handlers,
                                          tuple(dev_avals), ordered, deferred)
        else:
            run = _make_execute(loaded.execute_sharded, self._handlers, tuple(dev_avals))
        self.execute = _bounded(run, placement)
        if float0:
            self.execute = _with_float0(self.execute, float0, self.out_avals)

    def runner(self, out_tree=None):
        execute = self.execute
        if out_tree is None:
            return execute
        if out_tree.num_leaves == 1 and out_tree.num_nodes == 1:
            def run_one(bufs: list) -> Array:
                return execute(bufs)[0]
            return run_one
        unflatten = out_tree.unflatten

        def run(bufs: list) -> Any:
            return unflatten(execute(bufs))
        return run

    @property
    def device(self):
        return self.placement.devices[0]

    @property
    def devices(self) -> tuple:
        return self.placement.devices

    def __call__(self, *args):
        bufs = []
        for a in args:
            a._check_alive()
            bufs.append(a._buf)
        return self.execute(bufs)

    def __repr__(self) -> str:
        outs = ", ".join(a.str_short() for a in self.out_avals)
        return f"ShardedExecutable(({outs}) on {len(self.placement.devices)} devices)"


# XLA:CPU runs the members of a cross-device collective as tasks that wait for each other;
# with dozens of partitioned executions queued (a training loop that never reads a
# result) they can all wait forever (jax 0.10.2 hangs on the same loop on a 2-core
# machine). At most MAX_IN_FLIGHT executions of one executable are left unfinished: when
# that many are, the next call waits until all but the newest are done. (Waiting for
# the oldest at every call instead costs a sleep and a wake-up per call once the queue
# is full, about a third of a small call's CPU time on 8 devices; executions of one
# program on the same devices finish in order, so one wait drains the window.)
MAX_IN_FLIGHT = 8


def _bounded(run, placement):
    if len(placement.devices) == 1 or placement.devices[0].platform != "cpu":
        return run
    window: collections.deque = collections.deque()

    def bounded(bufs):
        if len(window) >= MAX_IN_FLIGHT:
            newest = window.pop()
            with contextlib.suppress(Exception):  # deleted (donated) meanwhile: done
                window.pop().block_until_ready()
            window.clear()
            window.append(newest)
        out = run(bufs)
        if out:
            window.append(out[0]._buf)
        return out
    return bounded


def is_shardy(module: str | bytes) -> bool:
    """Whether ``module`` is partitioned by Shardy: it declares an ``sdy.mesh``."""
    return (b"sdy.mesh" if isinstance(module, bytes) else "sdy.mesh") in module


def _options_for(placement: _sharding.Placement, num_outputs: int,
                 options: tuple, shardy: bool = False) -> xla_client.CompileOptions:
    given = [s is not None for s in (placement.out_shardings or (None,) * num_outputs)]
    opts = sharded_compile_options(placement.devices, len(placement.in_shardings), given,
                                   shardy)
    _options.apply(opts, options)
    return opts


def deserialize_sharded(data: bytes, out_avals: Sequence[ShapedArray],
                        placement: _sharding.Placement, *, options: tuple = (),
                        donated: Sequence[int] = ()) -> ShardedExecutable:
    """Load a partitioned executable serialized by ``ShardedExecutable.serialize`` onto
    ``placement``'s devices (no compilation). Its per-device result types must be the
    shards of ``out_avals`` under the shardings it records, else
    ``DeserializationError`` (as for ``executable.deserialize``, the caller checks the
    bytes' integrity first)."""
    devices = placement.devices
    backend = _backend.backend_of(devices[0])
    data = bytes(data)
    _lapack.register_if_used(data)
    try:
        loaded = backend.client.deserialize_executable(
            data, _jax.DeviceList(devices), _options_for(placement, len(out_avals), options))
    except Exception as e:  # noqa: BLE001 - XLA's errors are JaxRuntimeError or ValueError
        raise DeserializationError(
            f"cannot load the serialized executable on {len(devices)} devices: {e}") from None
    _counts["deserialize"] += 1
    exe = ShardedExecutable(loaded, out_avals, backend, placement, donated)
    check_signature(loaded, [ShapedArray(s.shard_shape(a.shape), a.dtype)
                             for a, s in zip(exe.out_avals, exe.out_shardings)])
    return exe


def compile_sharded(module: str, out_avals: Sequence[ShapedArray],
                    placement: _sharding.Placement, *, options: tuple = (),
                    donated: Sequence[int] = ()) -> ShardedExecutable:
    """Compile a module annotated with shardings (``sdy`` or ``mhlo.sharding``) for
    ``placement``'s devices."""
    devices = placement.devices
    backend = _backend.backend_of(devices[0])
    module = refine_polymorphic_shapes(module)  # a shape-polymorphic Exported called
    opts = _options_for(placement, len(out_avals), options, is_shardy(module))
    _limits.check_module(module)
    _lapack.register_if_used(module)
    host_callbacks = getattr(module, "host_callbacks", ())
    deferred = deferred_errors_for(module, devices)
    loaded = compile_and_load(backend, module, None, devices, opts, deferred)
    _counts["compile"] += 1
    return ShardedExecutable(loaded, out_avals, backend, placement, donated,
                             host_callbacks, getattr(module, "ordered", False), deferred)


# ---- resharding on the devices: a compiled identity ---------------------------------

_reshards = LRUCache("minijax_memo_cache_size")  # (aval, src, dst) -> ShardedExecutable


def _identity_module(aval: ShapedArray, src: Any, dst: Any, n: int, devices=()) -> str:
    t = tensor_type(aval)
    ndim = len(aval.shape)
    head = (f"module @reshard attributes {{mhlo.num_partitions = {n} : i32, "
            f"mhlo.num_replicas = 1 : i32}} {{\n")
    if _shardy_for(src, dst):
        sdy = Meshes(devices)
        a, b = sdy.attr(src, ndim), sdy.attr(dst, ndim)
        head += "\n".join(sdy.lines()) + "\n"
        a, b = f"sdy.sharding = {a}", f"sdy.sharding = {b}"
    else:
        a = f"mhlo.sharding = {string_attr(src.hlo_text(ndim))}"
        b = f"mhlo.sharding = {string_attr(dst.hlo_text(ndim))}"
    return (f"{head}  func.func public @main(%arg0: {t} {{{a}}}) -> ({t} {{{b}}}) {{\n"
            f"    return %arg0 : {t}\n  }}\n}}\n")


def _shardy_for(*shardings) -> bool:
    return bool(config.minijax_use_shardy_partitioner) and all(
        type(s) is _sharding.NamedSharding and isinstance(s.mesh, _sharding.Mesh)
        for s in shardings)


def can_reshard(src: Any, dst: Any) -> bool:
    """Whether ``reshard`` moves an array from ``src`` to ``dst`` on the devices:
    both multi-device shardings over the same devices in the same order."""
    return (isinstance(src, _sharding.Sharding) and isinstance(dst, _sharding.Sharding)
            and tuple(src._device_assignment) == tuple(dst._device_assignment))


def reshard(x: Array, src: Any, dst: Any) -> Array:
    """``x`` (laid out as ``src``) laid out as ``dst``, moved between the devices by
    XLA (a compiled identity whose parameter is sharded as ``src`` and whose result as
    ``dst``: the partitioner inserts the slices and collectives), never via the host.
    The caller checks ``can_reshard(src, dst)``."""
    aval = ShapedArray(x.aval.shape, x.aval.dtype, x.aval.weak_type)
    key = (aval, src, dst)
    exe = _reshards.get(key)
    if exe is None:
        _sharding.check_sharding_shape(dst, aval.shape, "device_put: an array")
        placement = _sharding.Placement(src._device_assignment, (src,), (dst,))
        exe = _reshards[key] = compile_sharded(
            _identity_module(aval, src, dst, len(placement.devices), placement.devices),
            [aval], placement)
    return exe(x)[0]
