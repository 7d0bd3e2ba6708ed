"""Compiling lowered modules: compiler options, the persistent cache, donation aliases.

``compile_module`` is the one entry point from StableHLO text to a runtime
``Executable`` used by ``jit``, ``Lowered.compile`` and eager execution. It

1. checks ``compiler_options`` (``ValueError`` naming a bad option, before XLA runs);
2. returns the executable already compiled for the same module, types, options and
   device when one is alive (``stages/cache.py``);
3. with ``minijax_compilation_cache_dir`` set, looks the module up on disk, keyed by
   the module text without locations, the options, the jaxlib version and the
   platform, and loads it without compiling on a hit (the entry must record that
   key and pass its checksum, and the loaded executable's result types must be the
   module's; see ``minijax.runtime.compilation_cache``);
4. otherwise compiles, and stores the result on disk when the cache is on (within
   ``minijax_compilation_cache_max_size``). The cache never makes compilation fail:
   its problems are logged.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from minijax.config import config
from minijax.core.aval import ShapedArray
from minijax.core.traceback_util import user_stacklevel
from minijax.runtime import compilation_cache as _disk
from minijax.runtime import compile_options as _options
from minijax.runtime import executable as _rt_exe
from minijax.runtime.array import intern_aval
from minijax.runtime.backend import backend_of, get_backend
from minijax.runtime.sharded_executable import compile_sharded, deserialize_sharded
from minijax.runtime.placement import Placement
from minijax.stages.cache import EXECUTABLES

logger = logging.getLogger("minijax")

Options = tuple[tuple[str, Any], ...]


def normalize_options(compiler_options: Mapping[str, Any] | Options | None) -> Options:
    """Checked, hashable compiler options (see ``minijax.runtime.compile_options``)."""
    if not compiler_options:
        return ()
    if isinstance(compiler_options, tuple):  # already normalized
        compiler_options = dict(compiler_options)
    return _options.normalize(compiler_options)


def compile_module(text: str, out_avals: Sequence[ShapedArray],
                   compiler_options: Mapping[str, Any] | Options | None = None,
                   num_args: int | None = None, *, donated: Sequence[int] = (),
                   name: str | None = None, device=None, parsed=None,
                   stripped: Callable[[], str | None] | None = None
                   ) -> _rt_exe.Executable:
    """Compile StableHLO text for ``device`` (the default device if None), or find it
    compiled already (in memory, then in the disk cache).

    ``donated``: indices of the parameters aliased to outputs (marked
    ``tf.aliasing_output`` in the text); the runtime marks them when they are reused.
    ``parsed``: the ``ir.Module`` the text parses to, when the caller has it;
    ``stripped``: a function giving the module as MLIR prints it without locations,
    or None (``Lowered``'s, printed from the builder): the disk cache's key is then
    made without parsing.
    """
    options = normalize_options(compiler_options)
    callbacks = bool(getattr(text, "host_callbacks", ()))  # runtime/callback.py
    checked = getattr(text, "debug_jaxpr", None) is not None  # runtime/debug_nans.py
    if isinstance(device, Placement):  # partitioned over several devices
        return _compile_placed(text, out_avals, options, num_args, donated, name, device,
                               cached=not (callbacks or checked))
    backend = get_backend()
    if device is None:
        device = backend.default_device
    out_avals = [intern_aval(a, device) for a in out_avals]
    shared = EXECUTABLES.module_key(text, out_avals, options, num_args, donated, device)
    exe = EXECUTABLES.executable(shared)
    if exe is not None:
        return exe
    key = None
    if _disk.cache_dir() is not None and not (callbacks or checked):  # process-bound
        # parsed once: the key's location-free text, and on a miss what XLA compiles
        stripped = stripped() if stripped is not None and parsed is None else None
        if parsed is None and stripped is None:
            parsed = _parse(text)
        key = cache_key(text, options, num_args, len(out_avals), backend, device,
                        parsed=parsed, stripped=stripped)
        exe = _cache_load(key, name, lambda data: _rt_exe.deserialize(
            data, out_avals, backend, device=device, donated=donated))
        if exe is not None:
            EXECUTABLES.put_executable(shared, exe)
            return exe
    compile_options = _rt_exe.default_compile_options(device, num_args, len(out_avals))
    _options.apply(compile_options, options)
    start = time.perf_counter()
    with slow_compile_notice(name, text):
        exe = _rt_exe.compile(text, backend, compile_options=compile_options,
                              out_avals=out_avals, device=device, donated=donated,
                              parsed=parsed)
    log_step("Finished XLA compilation of %s in %.9f sec",
             f"jit({name})" if name else "module", start)
    if key is not None:
        _cache_store(key, exe, name)
    EXECUTABLES.put_executable(shared, exe)
    return exe


def _cache_load(key: str, name: str | None, load) -> Any:
    """The executable ``load(data)`` makes of the disk entry ``key``, or None (no entry,
    or one that cannot be loaded: logged, and replaced by the next store)."""
    data = _disk.get(key)
    if data is None:
        if explaining():
            logger.warning("PERSISTENT COMPILATION CACHE MISS for %s: no entry %s in %s",
                           name or "module", key[:16], _disk.cache_dir())
        return None
    try:
        exe = load(data)
    except _rt_exe.DeserializationError as e:
        logger.warning("compilation cache: entry %s for %s could not be loaded and "
                       "will be replaced: %s", key[:16], name or "module", e)
        return None
    logger.debug("compilation cache hit for %s (%s)", name or "module", key[:16])
    return exe


def _cache_store(key: str, exe, name: str | None) -> None:
    try:
        payload = exe.serialize()
    except Exception as e:  # noqa: BLE001 - the cache must never make compilation fail
        logger.warning("compilation cache: cannot serialize %s: %s", name or "module", e)
    else:
        _disk.put(key, payload)


def _compile_placed(text: str, out_avals: Sequence[ShapedArray], options: Options,
                    num_args: int | None, donated: Sequence[int], name: str | None,
                    placement: Placement, cached: bool):
    """``compile_module`` for a program partitioned over ``placement``'s devices: the
    disk cache's key adds the device assignment and the input/output shardings."""
    key = None
    devices = placement.devices
    if cached and _disk.cache_dir() is not None and all(
            d.process_index == devices[0].client.process_index() for d in devices):
        key = cache_key(text, options, num_args, len(out_avals), backend_of(devices[0]),
                        devices[0], placement)
        exe = _cache_load(key, name, lambda data: deserialize_sharded(
            data, out_avals, placement, options=options, donated=donated))
        if exe is not None:
            return exe
    start = time.perf_counter()
    with slow_compile_notice(name, text):
        exe = compile_sharded(text, out_avals, placement, options=options, donated=donated)
    log_step("Finished XLA compilation of %s in %.9f sec",
             f"jit({name})" if name else "module", start)
    if key is not None:
        _cache_store(key, exe, name)
    return exe


# A compilation still running after this many seconds says so, once (``logging``).
SLOW_COMPILE_NOTICE_SECONDS = 5.0


def log_step(message: str, what: str, start: float) -> None:
    """Log that a step of ``what`` (tracing, lowering, compiling) finished, with the
    seconds since ``start``: a warning with ``minijax_log_compiles`` (jax_log_compiles),
    a debug message otherwise, with jax's wording."""
    level = logging.WARNING if config.minijax_log_compiles else logging.DEBUG
    if logger.isEnabledFor(level):
        logger.log(level, message, what, time.perf_counter() - start)


@contextlib.contextmanager
def slow_compile_notice(name: str | None, text: str):
    """Around one XLA compilation: if it takes longer than
    ``SLOW_COMPILE_NOTICE_SECONDS``, a warning says so once while it runs (the function's
    name, the module's size, the time so far)."""
    start = time.perf_counter()

    def notice():
        lines = text.count("\n") + 1 if isinstance(text, str) else None
        size = f"{lines} lines of StableHLO" if lines is not None else "a module"
        logger.warning("XLA is still compiling %s (%s) after %.1f sec",
                       f"jit({name})" if name else "a module", size,
                       time.perf_counter() - start)
    timer = threading.Timer(SLOW_COMPILE_NOTICE_SECONDS, notice)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def explaining() -> bool:
    from minijax.config import config
    return bool(config.minijax_explain_cache_misses)


def _parse(text: str):
    from minijax.lowering import mlir
    return mlir.parse(text)


def cache_key(text: str, options: Options, num_args: int | None, num_outputs: int,
              backend, device, placement: Placement | None = None, *, parsed=None,
              stripped: str | None = None) -> str:
    """The persistent-cache key of one compilation.

    The module is hashed without its locations (file names and line numbers would
    make moved code miss); everything else that changes the executable is included:
    for a partitioned program, its device assignment and in/out shardings.
    ``parsed``: the module ``text`` parses to, when the caller has it; ``stripped``:
    its text without locations (what MLIR prints), when the caller has it.
    """
    from minijax.lowering import mlir
    if stripped is None:
        stripped = mlir.to_text(_parse(text) if parsed is None else parsed, debug_info=False)
    parts = [
        stripped,
        repr(options),
        f"num_args={num_args};num_outputs={num_outputs};device_id={device.id}",
        _rt_exe.platform_fingerprint(backend, device),
        os.environ.get("XLA_FLAGS", ""),
    ]
    if placement is not None:
        parts.append(repr(placement))
    return _disk.make_key(*parts)


# ---- donation --------------------------------------------------------------------------

def donation_aliases(in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray],
                     donated: Sequence[bool]) -> tuple[list[int | None], list[int]]:
    """Which output each donated input can alias, as XLA needs it.

    Outputs are matched in order to the earliest unmatched donated input of the same
    shape and dtype (weak types do not matter: the bytes are the same). Returns
    ``(aliases, unused)``: for every input the output index it aliases or None, and
    the indices of donated inputs that alias nothing.
    """
    pending: dict[tuple, collections.deque] = collections.defaultdict(collections.deque)
    for i, (aval, d) in enumerate(zip(in_avals, donated)):
        if d:
            pending[(aval.shape, aval.dtype)].append(i)
    aliases: list[int | None] = [None] * len(in_avals)
    for j, aval in enumerate(out_avals):
        queue = pending.get((aval.shape, aval.dtype))
        if queue:
            aliases[queue.popleft()] = j
    unused = [i for i, d in enumerate(donated) if d and aliases[i] is None]
    return aliases, unused


def alias_arg_attrs(aliases: Sequence[int | None]) -> list[str] | None:
    """``@main`` argument attributes for ``aliases`` (None when nothing is aliased)."""
    if all(a is None for a in aliases):
        return None
    return ["" if a is None else f"tf.aliasing_output = {a} : i32" for a in aliases]


def warn_unused_donations(in_avals: Sequence[ShapedArray], unused: Sequence[int]) -> None:
    """Warn, as jax does, about donated arguments no output can reuse (at the user's line)."""
    if not unused:
        return
    types = ", ".join(f"{in_avals[i].dtype.name}[{','.join(map(str, in_avals[i].shape))}]"
                      for i in unused)
    msg = (f"Some donated buffers were not usable: {types}. Donation needs an output of "
           "the same shape and dtype; these arguments are not deleted.")
    warnings.warn(msg, UserWarning, stacklevel=user_stacklevel())
