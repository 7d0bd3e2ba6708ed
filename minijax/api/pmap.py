"""``pmap``: run a function on several devices at once, one slice of the mapped axis each.

The function is traced once per argument signature for one device's slice (the
mapped axis removed) with the axis name bound to the mapped size, lowered with
``mhlo.num_replicas = N`` (collectives become cross-replica ops over those N
replicas) and compiled for N devices; replica ``i`` runs on ``devices[i]`` with
slice ``i`` of every mapped argument::

    >>> f = minijax.pmap(lambda x: x - minijax.lax.pmean(x, 'i'), axis_name='i')
    >>> f(np.arange(4.0))            # with at least 4 devices
    Array([-1.5, -0.5,  0.5,  1.5], dtype=float32)

Results stay on their devices: one sharded Array over the pmap's devices, split along
``out_axes``. Called under another transformation (``jit``, ``grad``, ``vmap``,
an outer ``pmap``), ``pmap(f)`` computes the same values as
``vmap(f, axis_name=...)`` inside the enclosing computation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from minijax.config import config
from minijax.core.aval import ShapeDtypeStruct, ShapedArray
from minijax.core.lru import LRUCache
from minijax.core.trace import EVAL_TRACE, trace_state, extend_axis_env, gc_paused
from minijax.core.traceback_util import api_boundary
from minijax.lowering.lower import lower_module
from minijax.runtime.backend import get_backend
from minijax.runtime.replicated import ReplicatedExecutable, compile_replicated
from minijax.runtime.transfer import put_numpy
from minijax.stages.common import (abstractify, as_tuple, fun_name, module_name, result_names,
                                   wraps)
from minijax._pytree import tree_flatten

__all__ = ["pmap"]


def _flatten_axes(what: str, spec, tree) -> list:
    """Broadcast the prefix tree ``spec`` (leaves: int or None) to the leaves of ``tree``."""
    if spec is None or isinstance(spec, int):
        return [spec] * len(tree_flatten(tree)[0])
    leaves, spec_tree = tree_flatten(spec, is_leaf=lambda x: x is None)
    try:
        subtrees = spec_tree.flatten_up_to(tree)
    except (ValueError, TypeError) as e:
        raise ValueError(f"pmap {what} specification must be a tree prefix of the "
                         f"corresponding value, got specification {spec!r}: {e}") from None
    out = []
    for ax, sub in zip(leaves, subtrees):
        if ax is not None and (isinstance(ax, bool) or not isinstance(ax, int)):
            raise TypeError(f"pmap {what} leaves must be ints or None, got {ax!r}")
        out.extend([ax] * len(tree_flatten(sub)[0]))
    return out


_LEAF = object()  # a placeholder leaf, to match out_axes against the output structure


class _Compiled:
    __slots__ = ("exe", "out_tree", "out_avals", "devices", "text")

    def __init__(self, exe: ReplicatedExecutable, out_tree, out_avals, devices, text=""):
        self.exe = exe
        self.out_tree = out_tree
        self.out_avals = out_avals
        self.devices = devices
        self.text = text


class PmapLowered:
    """``pmap(f).lower(*args)``: the replicated program for arguments like ``args``
    (``as_text()``, its StableHLO), and ``compile()`` (as jax's ``Lowered`` of a pmap; the
    program is compiled when lowered, the executable cached for calls of the pmap)."""

    def __init__(self, pmapped: Pmapped, compiled: _Compiled):
        self._pmapped, self._compiled = pmapped, compiled

    def as_text(self, dialect: str | None = None, **kwargs) -> str:
        del dialect, kwargs
        return str(self._compiled.text)

    def compile(self, compiler_options=None) -> PmapCompiled:
        del compiler_options
        return PmapCompiled(self._pmapped, self._compiled)


class PmapCompiled:
    """``pmap(f).lower(*args).compile()``: called with arguments like those it was lowered
    for, it runs the compiled replicated program."""

    def __init__(self, pmapped: Pmapped, compiled: _Compiled):
        self._pmapped, self._compiled = pmapped, compiled

    def __call__(self, *args, **kwargs):
        return self._pmapped(*args, **kwargs)


class Pmapped:
    """A function mapped over devices (``pmap(f)``); see ``pmap``."""

    def __init__(self, fun: Callable, axis_name, in_axes, out_axes,
                 static_broadcasted_argnums, devices, backend, axis_size=None):
        wraps(fun)(self)
        self._fun = fun
        self._name = fun_name(fun)
        self._axis_name = axis_name
        self._in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        self._out_axes = out_axes
        self._static = tuple(sorted(set(as_tuple(static_broadcasted_argnums))))
        self._devices = None if devices is None else tuple(devices)
        self._backend = backend
        self._axis_size = axis_size
        self._cache = LRUCache("minijax_jit_cache_size")  # signature -> compiled program

    def __repr__(self) -> str:
        return f"<minijax.pmap wrapping {self._name}>"

    # -- arguments

    def _split(self, args: tuple):
        """(statics, dynamic args, in_axes over the dynamic args)."""
        n = len(args)
        if self._static and max(self._static) >= n:
            raise ValueError(
                f"pmapped function {self._name} has static_broadcasted_argnums="
                f"{self._static} but was called with only {n} positional argument(s). "
                f"All static broadcasted arguments must be passed positionally.")
        statics = []
        for i in self._static:
            try:
                hash(args[i])
            except TypeError:
                raise ValueError(
                    f"Non-hashable static argument at position {i} of {self._name}: "
                    f"{args[i]!r} of type {type(args[i]).__name__}. Static broadcasted "
                    f"arguments must be hashable.") from None
            statics.append((i, args[i]))
        dyn = tuple(a for i, a in enumerate(args) if i not in self._static)
        in_axes = self._in_axes
        if isinstance(in_axes, tuple):
            if len(in_axes) != n:
                raise ValueError(
                    f"pmap in_axes must be an int, None, or a tuple of entries "
                    f"corresponding to the positional arguments passed to the function, "
                    f"but got len(in_axes)={len(in_axes)}, len(args)={n}")
            in_axes = tuple(a for i, a in enumerate(in_axes) if i not in self._static)
        return tuple(statics), dyn, in_axes

    def _merge(self, statics: tuple, dyn: Sequence) -> tuple:
        pos = dict(statics)
        it = iter(dyn)
        return tuple(pos[i] if i in pos else next(it) for i in range(len(dyn) + len(pos)))

    # -- calling

    @api_boundary
    def __call__(self, *args, **kwargs):
        statics, dyn, in_axes = self._split(args)
        if trace_state.trace is not EVAL_TRACE:
            return self._call_traced(statics, dyn, in_axes, kwargs)
        compiled, leaves, local, axes, devices = self._compiled_for(statics, dyn, in_axes,
                                                                    kwargs)
        shards = [self._shard(x, a, ax, devices) for x, a, ax in zip(leaves, local, axes)]
        outs = compiled.exe.execute(shards)
        tree = compiled.out_tree.unflatten([_LEAF] * len(outs))
        out_axes = _flatten_axes("out_axes", self._out_axes, tree)
        results = [self._gather(o, a, ax) for o, a, ax in zip(outs, compiled.out_avals,
                                                                  out_axes)]
        return compiled.out_tree.unflatten(results)

    @api_boundary
    def lower(self, *args, **kwargs) -> PmapLowered:
        """The program for arguments like ``args`` (arrays or ShapeDtypeStructs), as
        jax's ``pmap(f).lower``."""
        statics, dyn, in_axes = self._split(args)
        compiled = self._compiled_for(statics, dyn, in_axes, kwargs)[0]
        return PmapLowered(self, compiled)

    def _compiled_for(self, statics, dyn, in_axes, kwargs):
        leaves, in_tree = tree_flatten((dyn, kwargs))
        n_pos = len(tree_flatten(dyn)[0])
        axes = _flatten_axes("in_axes", in_axes, dyn) + [0] * (len(leaves) - n_pos)
        avals = [abstractify(x) for x in leaves]
        size, axes = self._mapped_size(avals, axes)
        devices = self._pick_devices(size)
        local = [a if ax is None else
                 ShapedArray(a.shape[:ax] + a.shape[ax + 1:], a.dtype, a.weak_type)
                 for a, ax in zip(avals, axes)]
        key = (in_tree, statics, tuple(axes), tuple(local), devices, config.trace_key)
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = self._cache[key] = self._compile(statics, in_tree, local, size,
                                                        devices)
        return compiled, leaves, local, axes, devices

    def _call_traced(self, statics, dyn, in_axes, kwargs):
        """Under another transformation: the same values as ``vmap`` with the axis name."""
        from minijax.api.vmap import vmap

        def body(*dyn_args, **kw):
            return self._fun(*self._merge(statics, dyn_args), **kw)

        return vmap(body, in_axes=in_axes, out_axes=self._out_axes,
                    axis_name=self._axis_name)(*dyn, **kwargs)

    def _mapped_size(self, avals: Sequence[ShapedArray], axes: list):
        sizes, norm = [], []
        for a, ax in zip(avals, axes):
            if ax is None:
                norm.append(None)
                continue
            if not -a.ndim <= ax < a.ndim:
                raise ValueError(
                    f"pmap was requested to map its argument along axis {ax}, which implies "
                    f"that its rank should be at least {ax + 1 if ax >= 0 else -ax}, but is "
                    f"only {a.ndim} (its type is {a.str_short()})")
            ax %= a.ndim
            norm.append(ax)
            sizes.append(a.shape[ax])
        if not sizes:
            raise ValueError("pmap requires at least one argument with a mapped axis.")
        if len(set(sizes)) > 1:
            raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: "
                             f"{sizes}")
        if self._axis_size is not None and self._axis_size != sizes[0]:
            raise ValueError(f"Specified axis_size {self._axis_size} doesn't match received "
                             f"axis_size {sizes[0]}.")
        if sizes[0] == 0:
            raise ValueError(f"pmap of {self._name}: the mapped axis has size 0, but pmap "
                             f"needs at least one replica (argument shapes "
                             f"{[a.str_short() for a in avals]}, in_axes {axes})")
        return sizes[0], norm

    def _pick_devices(self, size: int) -> tuple:
        devices = self._devices if self._devices is not None else \
            tuple(get_backend(self._backend).devices)
        if size > len(devices):
            raise ValueError(
                f"pmap of {self._name}: the mapped axis has size {size}, which requires "
                f"{size} devices (one replica each), but only {len(devices)} XLA devices "
                f"are available{' in devices=' if self._devices is not None else ''}. "
                f"Map over at most {len(devices)} elements (use minijax_num_cpu_devices / "
                f"MINIJAX_NUM_CPU_DEVICES for more CPU devices).")
        return devices[:size]

    def _compile(self, statics, in_tree, local, size: int, devices) -> _Compiled:
        from minijax.stages.jit import Wrapped
        dyn, kwargs = in_tree.unflatten(
            ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in local)
        env = ((self._axis_name, size),) if self._axis_name is not None else ()
        # A fresh Wrapped: its trace cache does not know the axis size.
        wrapped = Wrapped(self._fun, static_argnums=self._static)
        with extend_axis_env(env):
            entry, _ = wrapped._entry(self._merge(statics, dyn), kwargs, allow_shape_dtype=True)
        with gc_paused():
            text = lower_module(entry.closed, module_name=module_name(self._name, "pmap"),
                                name_prefix=f"pmap({self._name})", arg_names=entry.arg_names,
                                result_names=result_names(entry.out_paths),
                                num_replicas=size, axis_env=env)
        out_avals = entry.closed.out_avals
        exe = compile_replicated(text, devices, out_avals=out_avals)
        return _Compiled(exe, entry.out_tree, out_avals, devices, text)

    @staticmethod
    def _shard(x: Any, aval: ShapedArray, ax: int | None, devices) -> list:
        host = np.asarray(x)
        if host.dtype != aval.dtype:
            host = host.astype(aval.dtype)
        if ax is None:
            return [put_numpy(host, aval.weak_type, d) for d in devices]
        return [put_numpy(np.ascontiguousarray(np.take(host, i, axis=ax)), aval.weak_type, d)
                for i, d in enumerate(devices)]

    @staticmethod
    def _gather(shards: list, aval: ShapedArray, ax: int | None):
        if ax is None:
            return shards[0]
        rank = aval.ndim + 1
        if not -rank <= ax < rank:
            raise ValueError(f"pmap out_axes {ax} is out of bounds for an output of rank "
                             f"{rank}")
        ax %= rank
        # The results stay where they were computed: one sharded Array over the pmap's
        # devices, split along the mapped axis (each shard reshaped on its own device).
        from minijax.lax import reshape
        from minijax.runtime.sharding import Mesh, NamedSharding, PartitionSpec
        from minijax.runtime.transfer import from_shards
        devices = [s.device for s in shards]
        spec = PartitionSpec(*([None] * ax + ["pmap"]))
        sharding = NamedSharding(Mesh(np.array(devices, dtype=object), ("pmap",)), spec)
        block = aval.shape[:ax] + (1,) + aval.shape[ax:]
        pieces = [reshape(s, block)._buf for s in shards]
        shape = aval.shape[:ax] + (len(shards),) + aval.shape[ax:]
        return from_shards(pieces, devices, ShapedArray(shape, aval.dtype, aval.weak_type),
                           sharding)


def pmap(fun: Callable, axis_name=None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Iterable[int] = (),
         devices: Sequence | None = None, backend: str | None = None,
         axis_size: int | None = None, donate_argnums: int | Iterable[int] = ()) -> Pmapped:
    """Map ``fun`` over an array axis, one device per element; mirrors ``jax.pmap``.

    Parameters
    ----------
    fun : the function to run on every device.
    axis_name : name of the mapped axis, for collectives (``psum``, ``all_gather``...).
    in_axes : which axis of each argument is mapped (a prefix tree of ints / None;
        None broadcasts the argument to every device). Keyword arguments map axis 0.
    out_axes : where the mapped axis goes in each output (None: the value of device 0,
        for outputs that are the same on every device).
    static_broadcasted_argnums : positional arguments passed to ``fun`` as Python values.
    devices : the devices to use (default: the backend's devices, in order).
    backend : 'cpu' or 'gpu' (default: the default backend).
    axis_size : the size of the mapped axis, if given (``ValueError`` when the arguments'
        mapped size differs; one process, so it is the local size).
    donate_argnums : accepted as jax takes it; the arguments' buffers are not reused
        (donation is a hint that a backend may ignore).

    The mapped size must not exceed the number of devices (``ValueError`` otherwise).
    """
    if not callable(fun):
        raise TypeError(f"pmap expects a callable, got {fun!r}")
    if devices is not None and not devices:
        raise ValueError("'devices' argument to pmap must be non-empty, or None.")
    return Pmapped(fun, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices,
                   backend, axis_size)
