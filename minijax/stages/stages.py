"""The AOT stages: ``Traced`` -> ``Lowered`` -> ``Compiled`` (mirrors ``jax.stages``).

They are the one jit pipeline: ``jit(f)(*args)`` on a miss runs
``Traced(entry, device, options).lower().compile()`` as ``jit(f).trace(*args)`` does,
and every ``Compiled`` comes from (and goes to) the executable cache
(``stages/cache.py``), so both ways share one executable. ``jit`` equations run
eagerly (``run_jit_equation``) take the same path.
"""

from __future__ import annotations

import time
from typing import Any

from minijax.core.aval import ShapeDtypeStruct
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.trace import Tracer, current_ctx
from minijax.core.traceback_util import (add_xla_error_source, api_boundary, process_exception,
                                         register_boundary, user_stacklevel)
from minijax.lowering import mlir
from minijax.lowering.lower import NO_METADATA, LoweringInfo, lower_module
from minijax.runtime.backend import get_backend
from minijax.stages.cache import EXECUTABLES
from minijax.stages.common import (abstractify, check_on_device, module_name, raise_if_deleted,
                                   result_names)
from minijax.stages.compiler import (alias_arg_attrs, compile_module, log_step, normalize_options,
                                     warn_unused_donations)
from minijax.stages.dispatch import DispatchBase, make_constants, mark_donated
from minijax.stages.entry import flat_entry, forwarded_inputs, param_runner
from minijax.stages.sharded import Placement, interned_ids, sharding_attrs, to_buffers
from minijax.stages.fusion import MustFuseError, check_attributes_survived, fusion_report
from minijax._pytree import tree_flatten


class ArgInfo:
    """Shape, dtype and donation of one argument of a lowered/compiled function."""

    __slots__ = ("shape", "dtype", "weak_type", "donated", "_aval")

    def __init__(self, aval, donated: bool):
        self._aval = aval
        self.shape = aval.shape
        self.dtype = aval.dtype
        self.weak_type = aval.weak_type
        self.donated = donated

    def __repr__(self) -> str:
        return f"ArgInfo(shape={self.shape}, dtype={self.dtype.name}, donated={self.donated})"


def _args_info(entry):
    return entry.in_tree.unflatten(ArgInfo(a, d) for a, d in zip(entry.in_avals, entry.donated))


def _out_info(entry):
    return entry.out_tree.unflatten(
        ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
        for a in entry.out_avals)


class _StageInfo:
    """What every stage knows about its function's arguments and results."""

    _entry: object

    @property
    def in_tree(self):
        """Tree structure of ``(positional arguments, keyword arguments)``."""
        return self._entry.in_tree

    @property
    def out_tree(self):
        return self._entry.out_tree

    @property
    def args_info(self):
        """A pytree like the arguments of ``ArgInfo`` (shape, dtype, donated)."""
        return _args_info(self._entry)

    @property
    def out_info(self):
        """A pytree like the outputs of ``ShapeDtypeStruct``."""
        return _out_info(self._entry)


def lower_entry(entry, metadata: tuple = (), device=None) -> tuple[str, LoweringInfo]:
    """``(module text, LoweringInfo)`` of ``entry`` under the XLA metadata ``metadata``
    (``lowering/lower.py``), for ``device``: on a ``Placement`` every parameter gets its
    ``mhlo.sharding``; otherwise the unused arguments are dropped (unless ``keep_unused``)."""
    if entry.unused_donations:
        warn_unused_donations(entry.in_avals, entry.unused_donations)
    if isinstance(device, Placement):  # mhlo.sharding per parameter (and result)
        extra = sharding_attrs(device, entry.in_avals, entry.out_avals,
                               alias_arg_attrs(entry.aliases))
        closed, arg_names = entry.closed, entry.arg_names
    else:
        extra = {"arg_attrs": alias_arg_attrs(entry.params(entry.aliases))}
        closed = entry.pruned_jaxpr()
        arg_names = entry.params(entry.arg_names) if entry.arg_names else entry.arg_names
    start = time.perf_counter()
    out = lower_module(closed, module_name=module_name(entry.name),
                       name_prefix=f"jit({entry.name})", arg_names=arg_names,
                       result_names=(None if entry.out_paths is None
                                     else result_names(entry.out_paths)),
                       outer_metadata=metadata, with_info=True, **extra)
    log_step("Finished jaxpr to MLIR module conversion %s in %.9f sec",
             f"jit({entry.name})", start)
    return out


class Traced(_StageInfo):
    """A function traced for specific argument types: has ``jaxpr`` and ``lower()``.

    ``device``: where it is to run: None (the default device), a ``Device``, or a
    ``Placement`` over several devices; ``compiler_options``: ``jit``'s (normalized).
    """

    def __init__(self, entry, device=None, compiler_options: tuple = ()):
        self._entry = entry
        self._device = device
        self._compiler_options = compiler_options

    @property
    def jaxpr(self):
        return self._entry.closed

    @property
    def fun_name(self) -> str:
        return self._entry.name

    @api_boundary
    def lower(self) -> Lowered:
        """Lower under the XLA metadata context in force (``set_xla_metadata``)."""
        if self._entry.hoisted:
            raise ValueError(f"cannot lower {self._entry.name}: it closes over traced values of "
                             "an enclosing transformation")
        metadata = current_ctx().metadata
        text, info = lower_entry(self._entry, metadata, self._device)
        return Lowered(self._entry, text, info, metadata, self._device,
                       self._compiler_options)


class Lowered(_StageInfo):
    """A function lowered to StableHLO, ready to compile."""

    def __init__(self, entry, text: str, info: LoweringInfo = NO_METADATA,
                 metadata: tuple = (), device=None, compiler_options: tuple = ()):
        self._entry = entry
        self._text = text  # StableHLO in generic form, with locations
        self._info = info  # what lowering noted for the checks after compiling
        self._metadata = metadata  # the XLA metadata context it was lowered under
        self._device = device  # None (the default device), a Device or a Placement
        self._compiler_options = compiler_options
        self._module = None  # the text parsed, once
        self._xla = None  # the module as HLO, converted (and checked) once
        self._pretty_text = None  # as_text() without locations, made once

    def _ir(self):
        if self._module is None:
            self._module = mlir.parse(self._text)
        return self._module

    def _pretty(self) -> str:
        """The module as MLIR prints it without locations: printed from the builder
        when it can be (no parse), else parsed and printed by MLIR; made once."""
        if self._pretty_text is None:
            text = self._info.pretty_text() if self._module is None else None
            self._pretty_text = text if text is not None else mlir.to_text(self._ir())
        return self._pretty_text

    def _stripped(self) -> str | None:
        """The text without locations when it is known without parsing (for the disk
        cache's key), else None."""
        if self._pretty_text is None and self._module is None:
            self._pretty_text = self._info.pretty_text()
        return self._pretty_text

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """StableHLO (default) or HLO text of the lowered module."""
        if dialect in (None, "stablehlo", "mhlo"):
            if not debug_info:
                return self._pretty()
            return mlir.to_text(self._ir(), debug_info=debug_info)
        if dialect == "hlo":
            return self.compiler_ir("hlo").as_hlo_text()
        raise ValueError(f"unknown dialect {dialect!r}; use 'stablehlo' or 'hlo'")

    def compiler_ir(self, dialect: str | None = None):
        """An ``ir.Module`` ('stablehlo') or an ``XlaComputation`` ('hlo')."""
        if dialect in (None, "stablehlo", "mhlo"):
            return self._ir()
        if dialect == "hlo":
            return self._hlo()
        raise ValueError(f"unknown dialect {dialect!r}; use 'stablehlo' or 'hlo'")

    def _hlo(self):
        """The module as an ``XlaComputation``, converted once; with XLA metadata,
        checked once that the conversion kept every attribute."""
        if self._xla is None:
            comp = mlir.to_xla_computation(self._text)
            if self._info.has_metadata:
                check_attributes_survived(self._text, comp.as_hlo_text())
            self._xla = comp
        return self._xla

    def cost_analysis(self) -> dict:
        """XLA's estimate for the unoptimized module: ``flops``, ``bytes accessed``,
        ``transcendentals``, ..."""
        return mlir.cost_analysis(self._text, get_backend().client)

    @api_boundary
    def compile(self, compiler_options: dict | None = None, *,
                must_fuse: str = "warn") -> Compiled:
        """Compile for the device it was lowered for (its arguments', or the default).

        ``compiler_options`` are added to (and override) those given to ``jit``;
        an unknown name or a value of the wrong type raises ``ValueError``.
        ``must_fuse``: what to do when a ``must_fuse_call`` group is split across
        fusions by the backend ("warn": ``MustFuseWarning``; "error": raise
        ``MustFuseError``; "ignore").

        The executable is shared (``stages/cache.py``): a ``jit`` call of the same
        function, types, device and options compiled it already, or will use this one.
        """
        if must_fuse not in ("warn", "error", "ignore"):
            raise ValueError(f"must_fuse must be 'warn', 'error' or 'ignore', got {must_fuse!r}")
        opts = self._compiler_options
        if compiler_options:
            opts = normalize_options({**dict(opts), **dict(normalize_options(compiler_options))})
        entry, device = self._entry, self._device
        compiled = EXECUTABLES.get(entry, self._metadata, device, opts)
        if compiled is None:
            kept = None if isinstance(device, Placement) else entry.kept  # unused dropped
            try:
                exe = compile_module(self._text, entry.out_avals, opts,
                                     len(entry.in_avals) if kept is None else len(kept),
                                     donated=entry.aliased_inputs if kept is None else
                                     entry.param_aliased(), name=entry.name, device=device,
                                     parsed=self._module, stripped=self._stripped)
            except Exception as e:  # XLA's errors carry the locations of the equations
                add_xla_error_source(e, entry.closed.jaxpr, self._text)
                raise
            if self._info.has_metadata:
                self._hlo()  # no attribute dropped by the conversion (checked once)
            compiled = Compiled(entry, exe)
            EXECUTABLES.put(entry, self._metadata, device, opts, compiled)
        if self._info.has_metadata:
            check_must_fuse(compiled.executable, self._info, must_fuse)
        return compiled


class Compiled(_StageInfo, DispatchBase):
    """A compiled executable specialized to argument types; call it like the function.

    It runs on the device it was compiled for (its arguments' when lowered, as
    ``jit`` does): Arrays on the default device move there, and Arrays on any other
    device are a ValueError, as in jax.

    Calling it costs what calling the ``jit``-wrapped function costs (the same
    dispatch fast path, ``stages/dispatch.py``): positional device arrays of exactly
    the compiled types go straight to the executable; anything else is flattened
    and checked first.
    """

    def __init__(self, entry, exe):
        self._entry = entry
        self._exe = exe
        self._placement = getattr(exe, "placement", None)  # a ShardedExecutable's
        from minijax.runtime.backend import default_device
        # where the arguments go: the placement, the one device, or None (the default)
        self._target = self._placement if self._placement is not None else (
            None if exe.device == default_device() else exe.device)
        # one buffer per argument leaf; those of unused ones are dropped (not sharded)
        kept = entry.kept if self._placement is None else None
        forwarded = forwarded_inputs(entry) if self._placement is None else None
        self._run = param_runner(exe, entry.out_tree, kept, forwarded)
        self._run_flat = None  # the same with the outputs as a list (run_jit_equation)
        # The fast path: no kwargs, positional leaves only, nothing donated.
        flat = (not entry.has_donation and
                entry.in_tree == tree_flatten((tuple(range(len(entry.in_avals))), {}))[1])
        self._fast = {interned_ids(entry.in_avals, self._target): self._run} if flat \
            else {}

    @property
    def trace_entry(self):
        """The ``TraceEntry`` (``stages/entry.py``) this was compiled from."""
        return self._entry

    @property
    def executable(self):
        """The runtime ``Executable`` (``runtime/executable.py``) it calls."""
        return self._exe

    @property
    def run_buffers(self):
        """``bufs -> outputs``: runs on one device buffer per argument leaf, placed where
        it runs, and builds the output pytree (``jit``'s dispatch tables hold these)."""
        return self._run

    @property
    def in_avals(self) -> list:
        return list(self._entry.in_avals)

    @property
    def out_avals(self) -> list:
        return list(self._entry.out_avals)


    def as_text(self) -> str:
        """The optimized HLO XLA compiled (for a sharded computation: the per-device
        program XLA's SPMD partitioner made, with its collectives)."""
        return self._exe.hlo_text()

    @property
    def input_shardings(self):
        """``(positional, keyword)`` pytrees of the arguments' shardings."""
        if self._placement is None:
            from minijax.runtime.backend import sharding_for
            ins = [sharding_for(self._exe.device)] * len(self._entry.in_avals)
        else:  # None: unconstrained on the one device of a memory placement
            from minijax.runtime.backend import sharding_for
            home = self._placement.devices[0]
            ins = [sharding_for(home) if s is None else s
                   for s in self._placement.in_shardings]
        return self._entry.in_tree.unflatten(ins)

    @property
    def output_shardings(self):
        """A pytree like the outputs of their shardings."""
        if self._placement is None:
            from minijax.runtime.backend import sharding_for
            outs = [sharding_for(self._exe.device)] * len(self._entry.out_avals)
        else:
            outs = list(self._exe.out_shardings)
        return self._entry.out_tree.unflatten(outs)

    def cost_analysis(self) -> dict:
        """XLA's estimate for the optimized executable (``flops``, ``bytes accessed``,
        ``transcendentals``, ...)."""
        costs = self._exe.cost_analysis()
        for key in ("flops", "bytes accessed", "transcendentals"):
            costs.setdefault(key, 0.0)
        return costs

    def memory_analysis(self):
        """Argument, output, alias, temporary and generated-code sizes in bytes.

        ``generated_code_size_in_bytes`` comes from XLA where it reports it; XLA:CPU
        does not, and there it is the loaded size of the machine code XLA emitted
        (see ``minijax.runtime.Executable.generated_code_size``).
        """
        return self._exe.memory_analysis()

    def runtime_executable(self):
        return self._exe.loaded

    def fusion_report(self) -> dict:
        """For each ``must_fuse_call`` identifier, the fusions its ops landed in."""
        return fusion_report(self.as_text())

    @register_boundary
    def _call(self, args, kwargs) -> Any:
        try:
            # The full path (DispatchBase.__call__ runs the fast one): check, then run.
            entry = self._entry
            leaves, tree = tree_flatten((args, kwargs))
            if tree != entry.in_tree:
                raise TypeError(
                    f"function compiled for {entry.in_tree} called with {tree}: the argument tree "
                    f"structure differs from the one used to lower it")
            for i, (x, expected) in enumerate(zip(leaves, entry.in_avals)):
                if isinstance(x, Tracer):
                    raise TypeError("a Compiled function cannot be called with traced values; "
                                    "call the jit-wrapped function instead")
                got = abstractify(x)
                if got.shape != expected.shape or got.dtype != expected.dtype:
                    raise TypeError(
                        f"Argument {self._arg_name(i)} of {entry.name} was compiled for "
                        f"{expected.str_short()} but called with {got.str_short()}")
            if self._placement is None:
                check_on_device(leaves, self._exe.device, self._entry.arg_names)
                from minijax.stages.sharded import check_device_memory_args
                check_device_memory_args(leaves, self._exe.device, self._arg_name)
            else:
                from minijax.stages.sharded import check_compiled_args
                check_compiled_args(leaves, self._placement, self._arg_name)
            if self._fast and not kwargs and self._target is None:
                make_constants(args)
            try:
                out = self._run(to_buffers(leaves, self._target))
            except Exception:
                raise_if_deleted(leaves)
                raise
            if entry.has_donation:
                mark_donated(leaves, entry.aliased_inputs, entry.name)
            return out
        except Exception as e:  # a boundary (core/traceback_util.py)
            process_exception(e)
            raise

    def _arg_name(self, i: int) -> str:
        names = self._entry.arg_names
        return repr(names[i]) if names and i < len(names) else f"at leaf {i}"

    def _run_leaves(self, leaves) -> list:
        """Run on one value per argument leaf; the outputs as a list."""
        if self._run_flat is None:
            self._run_flat = param_runner(self._exe, None, self._entry.kept
                                          if self._placement is None else None)
        try:
            return self._run_flat(to_buffers(leaves, self._target))
        except Exception:
            raise_if_deleted(leaves)
            raise


def run_jit_equation(args, jaxpr, name: str) -> list:
    """Run a ``jit`` equation (``jit_p``'s eager implementation) through the pipeline.

    Its jaxpr is usually a ``jit``'s trace entry's (``jit(f)`` traced inside a
    transformation): then it runs the executable ``jit(f)(*args)`` uses. Any other
    jaxpr (a jvp, a transpose, a batched jaxpr) gets an entry of its own, kept as long
    as the jaxpr lives, and its executable stays among the latest eager ones, for the
    next jaxpr that lowers to the same module. Nothing is donated.
    """
    from minijax.stages.common import call_device
    entry = EXECUTABLES.entry_of(jaxpr)
    made = entry is None or entry.has_donation
    if made:
        entry = flat_entry(ClosedJaxpr(jaxpr.jaxpr, jaxpr.consts), name)
        EXECUTABLES.adopt(jaxpr, entry)
    device = call_device(args)  # None: the default device; or a Placement
    compiled = EXECUTABLES.get(entry, current_ctx().metadata, device, ())
    if compiled is None:
        compiled = Traced(entry, device).lower().compile()
        if made:  # found by module by the next equation like it (stages/cache.py)
            EXECUTABLES.keep(compiled.executable)
    return compiled._run_leaves(args)


def check_must_fuse(exe, info: LoweringInfo, must_fuse: str = "warn") -> None:
    """Warn or raise (``must_fuse``) for each must-fuse group of the lowered module
    (``info``) that the compiled ``exe`` split across fusions."""
    if info.must_fuse_groups and must_fuse != "ignore":
        _check_must_fuse(exe.hlo_text(), must_fuse)


def _check_must_fuse(optimized_hlo: str, mode: str) -> None:
    import warnings
    from minijax.stages.fusion import MustFuseWarning
    platform = get_backend().platform
    for ident, group in fusion_report(optimized_hlo).items():
        if group.fused:
            continue
        where = ", ".join(group.fusions) or "no fusion"
        extra = f"; left outside any fusion: {', '.join(group.unfused)}" if group.unfused else ""
        msg = (f"must_fuse_call group {ident!r} was not fused into a single fusion by the "
               f"{platform} backend: its ops landed in {where}{extra}. XLA:{platform.upper()} "
               f"does not enforce MUST_FUSE.")
        if mode == "error":
            raise MustFuseError(msg)
        warnings.warn(msg, MustFuseWarning, stacklevel=user_stacklevel())

