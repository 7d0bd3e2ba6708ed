"""Compiling StableHLO modules and running the resulting executables.

Example::

    >>> import numpy as np
    >>> from minijax.runtime import compile, device_put
    >>> exe = compile(ADD_MODULE_TEXT)           # out_avals read from the HLO
    >>> x = device_put(np.ones(3, np.float32))
    >>> exe.execute([x._buf, x._buf])
    [Array([2., 2., 2.], dtype=float32)]
"""

from __future__ import annotations

import hashlib

import contextlib
import dataclasses
import re
import struct
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
from jaxlib import _jax, xla_client

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.runtime import backend as _backend
from minijax.runtime import debug_nans as _debug_nans
from minijax.runtime import compile_options as _options
from minijax.runtime import compiler as _compiler
from minijax.runtime import limits as _limits
from minijax.runtime import lapack as _lapack
from minijax.runtime._native import speedups
from minijax.runtime.array import Array, _wrap, intern_aval

JaxRuntimeError = _jax.JaxRuntimeError  # what XLA raises at compile and run time

__all__ = ["Executable", "MemoryAnalysis", "compile", "compile_count", "default_compile_options",
           "deserialize", "DeserializationError"]

# How many times XLA compiled a module in this process (tests use it to show that a
# cache hit or a deserialization compiled nothing).
_counts = {"compile": 0, "deserialize": 0}


def compile_count() -> int:
    """The number of XLA compilations in this process so far."""
    return _counts["compile"]


class DeserializationError(ValueError):
    """Serialized executable bytes that this jaxlib/platform cannot load."""


@dataclasses.dataclass(frozen=True)
class MemoryAnalysis:
    """Memory use of a compiled executable, in bytes (from XLA's buffer assignment)."""

    argument_size_in_bytes: int
    output_size_in_bytes: int
    alias_size_in_bytes: int
    temp_size_in_bytes: int
    generated_code_size_in_bytes: int
    peak_memory_in_bytes: int = 0
    host_argument_size_in_bytes: int = 0
    host_output_size_in_bytes: int = 0
    host_alias_size_in_bytes: int = 0
    host_temp_size_in_bytes: int = 0
    host_generated_code_size_in_bytes: int = 0

    @classmethod
    def _from_stats(cls, stats: Any) -> MemoryAnalysis:
        return cls(**{f.name: int(getattr(stats, f.name, 0) or 0)
                      for f in dataclasses.fields(cls)})


class Executable:
    """A loaded XLA executable for one device, with precomputed result handlers.

    ``execute(bufs)`` is the dispatch hot path: it takes the jaxlib buffers of
    the arguments (``Array._buf``) and returns the outputs as ``Array``s. It is
    a closure made once per executable (no per-call attribute lookups).

    Args:
      loaded: jaxlib's ``LoadedExecutable``.
      out_avals: the type of each output.
      backend: the backend it was compiled for.
      donated: indices of the arguments whose buffers the executable may reuse.
      host_callbacks: the Python callables its custom calls call back
        (``runtime/callback.py``); ``ordered``: whether any has ordered effects.
      debug_jaxpr: the jaxpr it computes, when its results are to be checked for NaNs
        or infinities (``runtime/debug_nans.py``).
    """

    __slots__ = (
        "__weakref__",
        "_code_size",
        "_checked",
        "_host_callbacks",
        "_handlers",
        "backend",
        "donated",
        "execute",
        "loaded",
        "out_avals",
    )

    execute: Callable[[list], list[Array]]

    def __init__(self, loaded: _jax.LoadedExecutable, out_avals: Sequence[ShapedArray],
                 backend: _backend.Backend, donated: Sequence[int] = (),
                 host_callbacks: Sequence[Callable] = (), ordered: bool = False,
                 debug_jaxpr=None):
        self.loaded = loaded
        self._host_callbacks = tuple(host_callbacks)  # alive as long as the executable
        self._checked = debug_jaxpr is not None
        self.backend = backend
        self.donated = tuple(donated)
        self._code_size: int | None = None  # known generated-code size (deserialized)
        devices = loaded.local_devices()
        if len(devices) != 1:
            raise NotImplementedError(
                f"minijax runs single-device executables only; got {len(devices)} devices")
        # The outputs' avals are the interned ones of this device (see intern_aval).
        self.out_avals = [intern_aval(a, devices[0]) for a in out_avals]
        sharding = _backend.sharding_for(devices[0])
        # float0 outputs (tangents of integers) are computed as bool zeros, as jax lowers
        # them, and handed back as NumPy float0 arrays.
        float0 = [i for i, a in enumerate(self.out_avals) if a.dtype == dtypes.float0]
        dev_avals = [ShapedArray(a.shape, np.bool_) if i in float0 else a
                     for i, a in enumerate(self.out_avals)]
        self._handlers = [_jax.array_result_handler(a, sharding, True, _skip_checks=True)
                          for a in dev_avals]
        if host_callbacks:  # with tokens: effects_barrier waits for its callbacks
            self.execute = _make_effectful_execute(loaded.execute_sharded, self._handlers,
                                                   tuple(dev_avals), ordered)
        else:
            self.execute = _make_execute(loaded.execute_sharded, self._handlers,
                                         tuple(dev_avals))
        if float0:
            self.execute = _with_float0(self.execute, float0, self.out_avals)
        if debug_jaxpr is not None:  # debug_nans / debug_infs
            in_avals = [intern_aval(a, devices[0]) for a in debug_jaxpr.in_avals]
            self.execute = _debug_nans.checked_execute(
                self.execute, debug_jaxpr,
                lambda bufs: [_wrap(b, a) for b, a in zip(bufs, in_avals)])

    @property
    def only_computes(self) -> bool:
        """Whether running it does nothing but compute its outputs: no host callbacks,
        no NaN/Inf checks."""
        return not self._host_callbacks and not self._checked

    def runner(self, out_tree=None) -> Callable[[list], Any]:
        """``bufs -> outputs``: ``execute`` then ``out_tree.unflatten``, in one closure.

        With no ``out_tree`` the outputs come back as a list. When ``out_tree`` is a
        bare leaf the single output Array is built directly from the handler. With the
        C extension, a program without host callbacks, NaN checks or float0 outputs
        runs through ``_speedups.Runner`` (the same steps, without a Python frame).
        """
        if out_tree is None:
            return self.execute
        plain = not self._host_callbacks and not self._checked and self.out_avals and \
            all(a.dtype != dtypes.float0 for a in self.out_avals)
        bare = out_tree.num_leaves == 1 and out_tree.num_nodes == 1
        if plain and speedups is not None:  # the same, in C (no Python frame per call)
            return speedups.Runner(self.loaded.execute_sharded, self._handlers,
                                   tuple(self.out_avals), None if bare else out_tree.unflatten)
        if bare and plain:
            execute_sharded = self.loaded.execute_sharded
            handlers = self._handlers
            aval = self.out_avals[0]
            wrap = _wrap

            def run_one(bufs: list) -> Array:
                return wrap(execute_sharded(bufs).consume_with_handlers(handlers)[0], aval)
            return run_one
        execute = self.execute
        unflatten = out_tree.unflatten

        def run(bufs: list) -> Any:
            return unflatten(execute(bufs))
        return run

    @property
    def device(self) -> _backend.Device:
        return self.loaded.local_devices()[0]

    def __call__(self, *args: Array) -> list[Array]:
        """Run on ``Array`` arguments (checks they are alive, marks donated ones)."""
        bufs = []
        for a in args:
            if a._buf.is_deleted():
                raise RuntimeError(a._deleted_message())
            bufs.append(a._buf)
        outs = self.execute(bufs)
        for i in self.donated:
            if args[i]._buf.is_deleted():
                args[i]._donated = True
                args[i]._npy = None
        return outs

    # ---- inspection ----------------------------------------------------------------

    def hlo_text(self) -> str:
        """The optimized HLO module, as text."""
        return self.loaded.hlo_modules()[0].to_string()

    def cost_analysis(self) -> dict[str, float]:
        """XLA's cost estimates (``'flops'``, ``'bytes accessed'``, ...)."""
        return dict(self.loaded.cost_analysis())

    def memory_analysis(self) -> MemoryAnalysis:
        """Sizes of arguments, outputs, aliases, temporaries and generated code.

        XLA:CPU reports ``generated_code_size_in_bytes = 0``; there it is filled in
        with ``generated_code_size()``.
        """
        m = MemoryAnalysis._from_stats(self.loaded.get_compiled_memory_stats())
        if m.generated_code_size_in_bytes == 0:
            m = dataclasses.replace(m, generated_code_size_in_bytes=self.generated_code_size())
        return m

    def generated_code_size(self) -> int:
        """Bytes of machine code and read-only data XLA generated for this executable.

        jaxlib's own figure (``size_of_generated_code_in_bytes``) when it has one;
        on XLA:CPU, which reports 0, the total size of the loadable (``SHF_ALLOC``)
        sections -- ``.text``/``.ltext`` code, constants, unwind tables -- of the ELF
        object files embedded in the serialized executable.
        """
        n = int(self.loaded.size_of_generated_code_in_bytes() or 0)
        if n == 0 and self._code_size is not None:
            return self._code_size
        if n == 0:
            with contextlib.suppress(Exception):
                n = elf_loaded_size(self.loaded.serialize())
            self._code_size = n
        return n

    def serialize(self) -> bytes:
        """The executable as bytes; see ``deserialize``."""
        if self._host_callbacks:
            raise ValueError("an executable with host callbacks (pure_callback, io_callback, "
                             "debug.print, ...) cannot be serialized: the callbacks are "
                             "Python objects of this process")
        return self.loaded.serialize()

    def __repr__(self) -> str:
        outs = ", ".join(a.str_short() for a in self.out_avals)
        return f"Executable(({outs}) on {self.device})"


def _with_float0(execute: Callable, positions: list[int], out_avals: list) -> Callable:
    zeros = {i: np.zeros(out_avals[i].shape, dtypes.float0) for i in positions}

    def run(bufs: list) -> list:
        outs = execute(bufs)
        for i, z in zeros.items():
            outs[i] = z
        return outs
    return run


def _make_execute(execute_sharded, handlers: list, out_avals: tuple) -> Callable:
    """The per-executable dispatch function (see ``Executable.execute``)."""
    if len(out_avals) == 1:
        aval = out_avals[0]

        def execute(bufs: list) -> list[Array]:
            return [_wrap(execute_sharded(bufs).consume_with_handlers(handlers)[0], aval)]
    elif not out_avals:  # builds no Array, so counts itself toward the release-queue drain
        note_release = _backend.note_release

        def execute(bufs: list) -> list[Array]:
            execute_sharded(bufs).consume_with_handlers(handlers)
            note_release()
            return []
    else:
        def execute(bufs: list) -> list[Array]:
            return list(map(_wrap, execute_sharded(bufs).consume_with_handlers(handlers),
                            out_avals))
    return execute


def _make_effectful_execute(execute_sharded, handlers: list, out_avals: tuple,
                            ordered: bool, deferred=None) -> Callable:
    """``execute`` for a program with host callbacks: its token goes to
    ``callback.track`` (waited for at once when the effects are ordered, or when the
    callbacks' errors are ``deferred``: raised then)."""
    from minijax.runtime.callback import track  # (imports lax: only when needed)
    note_release = _backend.note_release

    def execute(bufs: list) -> list[Array]:
        results = execute_sharded(bufs, with_tokens=True)
        track(results, ordered, deferred)
        outs = results.consume_with_handlers(handlers)
        if not outs:
            note_release()
        return list(map(_wrap, outs, out_avals))
    return execute


def _default_device(backend: _backend.Backend, device) -> Any:
    return backend.default_device if device is None else device


def default_compile_options(device: _backend.Device, num_args: int | None = None,
                            num_outputs: int | None = None) -> xla_client.CompileOptions:
    """Compile options for one device, set as jax sets them for an unsharded ``jit``.

    With ``num_args``/``num_outputs`` given, the optimized HLO's header matches
    jax's exactly (it lists XLA's sharding-propagation flags per parameter/output).
    """
    opts = xla_client.CompileOptions()
    opts.num_replicas = 1
    opts.num_partitions = 1
    opts.device_assignment = xla_client.DeviceAssignment.create(np.array([[device.id]]))
    build = opts.executable_build_options
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = True
    if num_args is not None:
        build.allow_spmd_sharding_propagation_to_parameters = [True] * num_args
    if num_outputs is not None:
        build.allow_spmd_sharding_propagation_to_output = [True] * num_outputs
    return opts


_DYNAMIC_TYPE = re.compile(r"tensor<(?:[0-9]+x)*\?")


def refine_polymorphic_shapes(module):
    """``module`` with its dynamic shapes refined from ``@main``'s static argument types
    (jaxlib's shape refinement, as jax's compile does for shape-polymorphic code); the
    same object where the module (text) has no dynamic shapes."""
    if not isinstance(module, str) or _DYNAMIC_TYPE.search(module) is None:
        return module
    try:
        out = _jax.mlir.refine_polymorphic_shapes(
            module.encode(), enable_shape_assertions=True, validate_static_shapes=True)
    except Exception as e:  # noqa: BLE001 - jaxlib raises its own error types
        raise ValueError(f"Error refining shapes: {e}") from None
    from minijax.lowering import mlir
    text = mlir.to_text(mlir.parse(out), debug_info=True)
    cbs = getattr(module, "host_callbacks", ())
    if cbs or getattr(module, "debug_jaxpr", None) is not None:
        from minijax.lowering.lower import ModuleText
        text = ModuleText(text, cbs, getattr(module, "ordered", False),
                          getattr(module, "debug_jaxpr", None))
    return text


def compile(module: str | bytes, backend: _backend.Backend | str | None = None, *,
            compile_options: xla_client.CompileOptions | None = None,
            out_avals: Sequence[ShapedArray] | None = None,
            num_args: int | None = None,
            device: _backend.Device | None = None,
            donated: Sequence[int] = (), parsed=None) -> Executable:
    """Compile a StableHLO module (MLIR text or bytecode) for one device.

    Module text that calls back into Python (a ``callback.ModuleText``) hands its
    callables to XLA with it.

    Args:
      module: the module, as MLIR text or bytecode; its entry is ``@main``.
      backend: backend (or platform name) to compile for; default backend if None.
      compile_options: XLA options; ``default_compile_options(device, num_args,
        len(out_avals))`` if None.
      out_avals: the outputs' types (with weak types); when omitted they are read
        from the compiled module's entry signature (``weak_type=False``).
      num_args: number of parameters (only used for the default options).
      device: the device to run on (the backend's default device if None).
      donated: indices of parameters whose buffers the executable may reuse
        (marked ``tf.aliasing_output`` in the module).
      parsed: the ``ir.Module`` the text parses to, when the caller has parsed it
        (XLA then compiles it without parsing the text again).

    Raises ``ValueError`` for a module holding an array of more than 2**63-1 bytes,
    on which XLA would abort the process (see ``minijax.runtime.limits``).
    """
    backend = _backend.get_backend(backend)
    device = _default_device(backend, device)
    if compile_options is None:
        compile_options = default_compile_options(
            device, num_args, None if out_avals is None else len(out_avals))
    if isinstance(module, bytearray | memoryview):
        module = bytes(module)
    refined = refine_polymorphic_shapes(module)
    if refined is not module:  # shape polymorphism: now static shapes
        module, parsed = refined, None
    _limits.check_module(module)  # XLA aborts on arrays of more than 2**63-1 bytes
    _lapack.register_if_used(module)  # LAPACK custom-call targets, on first use
    host_callbacks = getattr(module, "host_callbacks", ())
    loaded = compile_and_load(backend, module, parsed, (device,), compile_options)
    _counts["compile"] += 1
    if out_avals is None:
        out_avals = _out_avals_from_hlo(loaded)
    return Executable(loaded, out_avals, backend, donated, host_callbacks,
                      getattr(module, "ordered", False), getattr(module, "debug_jaxpr", None))


def deferred_errors_for(module, devices: Sequence):
    """A ``callback.DeferredErrors`` for a program with host callbacks on several devices
    (a failed callback on one device would leave the others waiting: its error is raised
    by the caller after the run instead), else None."""
    if len(devices) > 1 and getattr(module, "host_callbacks", ()):
        from minijax.runtime.callback import DeferredErrors  # (imports lax)
        return DeferredErrors()
    return None


def compile_and_load(backend: _backend.Backend, module, parsed, devices: Sequence,
                     compile_options: xla_client.CompileOptions, deferred=None):
    """XLA's loaded executable of ``module`` (text, or ``parsed``) on ``devices``, with
    the module's host callbacks (``lowering.lower.ModuleText``) handed to XLA (their
    errors noted in ``deferred``, a ``callback.DeferredErrors``, when given); an option
    XLA rejects becomes a ValueError naming it."""
    host_callbacks = getattr(module, "host_callbacks", ())
    _limits.check_host_callbacks(module, len(host_callbacks))
    try:
        if host_callbacks:  # jaxlib takes them with a parsed module only
            from minijax.lowering import mlir
            from minijax.runtime import callback as _callback
            return _compiler.backend_compile_and_load(
                backend.client, mlir.parse(str(module)) if parsed is None else parsed,
                _jax.DeviceList(tuple(devices)), compile_options,
                [_callback.host_callback(c, deferred) for c in host_callbacks])
        return _compiler.backend_compile_and_load(
            backend.client, module if parsed is None else parsed,
            _jax.DeviceList(tuple(devices)), compile_options, [])
    except _jax.JaxRuntimeError as e:
        bad_option = _options.as_value_error(e)
        if bad_option is not None:
            raise bad_option from None
        raise


def deserialize(data: bytes, out_avals: Sequence[ShapedArray],
                backend: _backend.Backend | str | None = None, *,
                device: _backend.Device | None = None,
                donated: Sequence[int] = (),
                in_avals: Sequence[ShapedArray] | None = None) -> Executable:
    """Load an executable produced by ``Executable.serialize`` (no compilation).

    The bytes are native code and are handed to XLA as they are: callers check
    their integrity first (``minijax.stages.deserialize`` and the compilation cache
    verify a SHA-256). Once loaded, the executable's own result types (and
    parameter types, when ``in_avals`` is given) must be ``out_avals``
    (``in_avals``): results are read back with those types, so a mismatch would
    read or write outside the buffers.

    Raises ``DeserializationError`` when XLA cannot load the bytes (another
    platform, another jaxlib version, or damaged data) or the types disagree.
    """
    backend = _backend.get_backend(backend)
    device = _default_device(backend, device)
    data = bytes(data)
    _lapack.register_if_used(data)
    try:
        loaded = backend.client.deserialize_executable(data, _jax.DeviceList((device,)))
    except Exception as e:  # noqa: BLE001 - XLA's errors are JaxRuntimeError or ValueError
        raise DeserializationError(
            f"cannot load the serialized executable on {backend.platform}: {e}") from None
    _counts["deserialize"] += 1
    check_signature(loaded, out_avals, in_avals)
    exe = Executable(loaded, out_avals, backend, donated)
    # A loaded executable no longer holds its object code: measure it in the input.
    with contextlib.suppress(Exception):
        exe._code_size = elf_loaded_size(data) or None
    return exe


def check_signature(loaded: _jax.LoadedExecutable, out_avals: Sequence[ShapedArray],
                    in_avals: Sequence[ShapedArray] | None = None) -> None:
    """Raise ``DeserializationError`` unless ``loaded``'s entry computation returns
    ``out_avals`` (and takes ``in_avals`` when given); float0 is stored as bool."""
    try:
        program = xla_client.XlaComputation(
            loaded.hlo_modules()[0].as_serialized_hlo_module_proto()).program_shape()
        params = [_shape_type(s) for s in program.parameter_shapes()]
        result = program.result_shape()
        results = [_shape_type(s) for s in (result.tuple_shapes() if result.is_tuple()
                                            else [result])]
    except Exception as e:  # noqa: BLE001 - any failure means we cannot trust the types
        raise DeserializationError(f"cannot read the types of the loaded executable: {e}") \
            from None
    for what, expected, actual in (("result", out_avals, results),
                                   ("parameter", in_avals, params)):
        if expected is None:
            continue
        want = [(tuple(a.shape), np.dtype(np.bool_) if a.dtype == dtypes.float0
                 else np.dtype(a.dtype)) for a in expected]
        if want != actual:
            raise DeserializationError(
                f"the executable's {what} types are ({_types_str(actual)}) but "
                f"({_types_str(want)}) were stated for it")


def _shape_type(shape) -> tuple[tuple[int, ...], np.dtype | None]:
    if not shape.is_array():
        return (), None  # a tuple or token: never what an aval states
    return tuple(shape.dimensions()), np.dtype(shape.numpy_dtype())


def _types_str(types: list) -> str:
    return ", ".join(f"{'?' if dt is None else dt.name}[{','.join(map(str, shape))}]"
                     for shape, dt in types)


def platform_fingerprint(backend: _backend.Backend | str | None = None,
                         device: _backend.Device | None = None) -> str:
    """What a serialized executable depends on: jaxlib version, platform, device kind,
    and on CPU the host's architecture and instruction-set features (XLA:CPU compiles
    for the host: an executable built for one CPU must not load on another)."""
    import jaxlib.version
    backend = _backend.get_backend(backend)
    device = _default_device(backend, device)
    client = backend.client
    out = (f"jaxlib={jaxlib.version.__version__};platform={backend.platform};"
           f"platform_version={client.platform_version};device_kind={device.device_kind}")
    if backend.platform == "cpu":
        out += f";host={host_cpu_features()}"
    return out


_host_features: str | None = None


def host_cpu_features() -> str:
    """The host CPU: machine, vendor, model and the instruction-set flags the kernel
    reports (``/proc/cpuinfo``; the processor description elsewhere), read once."""
    global _host_features
    if _host_features is None:
        import platform
        fields = {}
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    key, _, val = line.partition(":")
                    key = key.strip()
                    if key in ("vendor_id", "cpu family", "model", "flags", "Features",
                               "CPU implementer", "CPU part") and key not in fields:
                        fields[key] = " ".join(sorted(val.split()))
                    elif not line.strip() and fields:
                        break  # the first processor's entry
        except OSError:
            pass
        parts = [platform.machine(), platform.processor()] + [
            f"{k}={v}" for k, v in sorted(fields.items())]
        _host_features = hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]
    return _host_features


# ---- generated code size from the ELF objects of a serialized CPU executable ----------------

_ELF_MAGIC = b"\x7fELF"
_SHF_ALLOC = 0x2


def elf_loaded_size(data: bytes) -> int:
    """Sum of the ``SHF_ALLOC`` section sizes of every 64-bit ELF object inside ``data``."""
    total, pos = 0, data.find(_ELF_MAGIC)
    while pos >= 0:
        size, end = _elf_object(data, pos)
        total += size
        pos = data.find(_ELF_MAGIC, max(end, pos + 4))
    return total


def _elf_object(data: bytes, start: int) -> tuple[int, int]:
    """(loaded bytes, end offset) of the ELF object at ``start``; (0, start) if not one."""
    if len(data) < start + 64 or data[start + 4] != 2 or data[start + 5] not in (1, 2):
        return 0, start
    order = "<" if data[start + 5] == 1 else ">"
    shoff, = struct.unpack_from(order + "Q", data, start + 0x28)
    shentsize, shnum = struct.unpack_from(order + "HH", data, start + 0x3A)
    end = start + shoff + shentsize * shnum
    if shentsize < 64 or shnum == 0 or end > len(data):
        return 0, start
    total = 0
    for k in range(shnum):
        _name, _type, flags, _addr, _off, size = struct.unpack_from(
            order + "IIQQQQ", data, start + shoff + k * shentsize)
        if flags & _SHF_ALLOC:
            total += size
    return total, end


# ---- reading output types from optimized HLO ---------------------------------------------

_HLO_DTYPES = {
    "pred": np.bool_, "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32, "f64": np.float64,
    "c64": np.complex64, "c128": np.complex128,
}
_HLO_ARRAY = re.compile(r"\b(pred|[sufc]\d+|bf16)\[([\d,]*)\]")


def _out_avals_from_hlo(loaded: _jax.LoadedExecutable) -> list[ShapedArray]:
    text = loaded.hlo_modules()[0].to_string()
    header = text.split("\n", 1)[0]
    m = re.search(r"entry_computation_layout=\{\((.*)\)->(.*)\}", header)
    if m is None:
        raise ValueError("cannot read the output types from the compiled module; "
                         "pass out_avals")
    result = m.group(2)
    avals = []
    for dt, dims in _HLO_ARRAY.findall(result):
        if dt not in _HLO_DTYPES:
            raise ValueError(f"unsupported HLO element type {dt}; pass out_avals")
        shape = tuple(int(d) for d in dims.split(",") if d)
        avals.append(ShapedArray(shape, _HLO_DTYPES[dt]))
    return avals
