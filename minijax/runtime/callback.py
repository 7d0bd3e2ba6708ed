"""Host callbacks: Python functions that compiled programs call on the host.

A lowered callback is a ``stablehlo.custom_call @xla_ffi_python_cpu_callback`` whose
``index`` attribute picks a Python callable from the list handed to XLA with the
module (``lowering.lower.ModuleText``; ``compile_and_load(..., host_callbacks=[...])``
in ``executable.compile``).
XLA calls it with the operands as read-only NumPy arrays (and ``None`` for a token)
and expects a tuple of NumPy arrays back (the token first when it takes one).

Executions of programs with callbacks are tracked here: ``effects_barrier`` waits
until every one that ran has finished, and an execution with *ordered* effects is
waited for before the next Python statement runs, so ordered callbacks of
successive calls come in program order.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import numpy as np

from minijax.core import dtypes
from minijax.lax import callback as _lax_callback
from minijax.runtime.array import Array
from minijax.runtime.transfer import device_put, put_numpy

__all__ = ["CALL_TARGET", "DeferredErrors", "effects_barrier", "host_callback", "track"]

# A failing callback is logged as jax logs it ("jax.pure_callback failed" on the logger
# "jax._src.callback"): libraries filter those records by name and message (equinox's
# filter_jit, which re-raises the error itself).
_callback_logger = logging.getLogger("jax._src.callback")

CALL_TARGET = "xla_ffi_python_cpu_callback"


def _to_host_array(x) -> Array:
    """What a callback sees of a value: a minijax Array on the default device."""
    if type(x) is Array:
        return x
    if isinstance(x, np.ndarray):
        return put_numpy(np.array(x))  # XLA's operand memory is only lent for the call
    return device_put(x)


class DeferredErrors:
    """The errors of the callbacks of a program run on several devices, raised by the
    caller after the execution (``raise_pending``) instead of failing the device that
    ran the callback: XLA:CPU would leave the other devices waiting for it in a
    collective and abort the process (jax 0.10.2 does). The failed callback's results
    are zeros, never seen: the execution's outputs are dropped when it raises."""

    __slots__ = ("errors", "lock")

    def __init__(self):
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def raise_pending(self) -> None:
        with self.lock:
            errors, self.errors = self.errors, []
        if errors:
            from jaxlib import _jax
            raise _jax.JaxRuntimeError(
                f"INTERNAL: CpuCallback error calling callback: {errors[0]}")


def host_callback(spec, deferred: DeferredErrors | None = None) -> Callable:
    """The callable XLA runs for ``spec`` (a ``lowering.lower.HostCallback``): the
    operands become host Arrays, the results NumPy arrays checked against the
    expected number, shapes and dtypes (RuntimeError naming the mismatch, as jax's); a
    token is passed through when the custom call threads one. With ``deferred``, an
    error is noted there and zeros returned (see ``DeferredErrors``)."""
    fn, result_avals, what = spec.fn, spec.result_avals, spec.what
    checked = _checked_call(fn, result_avals, what)
    if deferred is None:
        call = checked
    else:
        def call(*args):
            try:
                return checked(*args)
            except BaseException:  # noqa: BLE001 - raised by the caller after the run
                import traceback
                with deferred.lock:
                    deferred.errors.append(traceback.format_exc())
                return tuple(np.zeros(a.shape, a.dtype) for a in result_avals)

    if not spec.token:
        return call

    def call_with_token(tok, *args):
        return (tok, *call(*args))
    return call_with_token


def _checked_call(fn, result_avals, what) -> Callable:
    def call(*args):
        try:
            outs = fn(*[_to_host_array(a) for a in args])
        except BaseException:
            name = "jax." + what[len("minijax."):] if what.startswith("minijax.") else what
            _callback_logger.exception("%s failed", name)
            raise
        if len(outs) != len(result_avals):
            raise RuntimeError(f"Mismatched number of outputs from callback. Expected: "
                               f"{len(result_avals)}, Actual: {len(outs)}")
        vals = []
        for i, (x, aval) in enumerate(zip(outs, result_avals)):
            x = np.asarray(x)
            x = x.astype(dtypes.canonicalize(x.dtype), copy=False)
            if x.shape != aval.shape:
                raise RuntimeError(f"Incorrect output shape for return value #{i}: "
                                   f"Expected: {aval.shape}, Actual: {x.shape}")
            if x.dtype != aval.dtype:
                raise RuntimeError(f"Incorrect output dtype for return value #{i}: "
                                   f"Expected: {aval.dtype}, Actual: {x.dtype}")
            vals.append(x)
        return tuple(vals)
    return call


# Tokens of executions with callbacks that may still be running.
_pending: list = []
_pending_lock = threading.Lock()


def track(results, ordered: bool, deferred: DeferredErrors | None = None) -> None:
    """Note the token of an execution's ``results`` (``execute_sharded(...,
    with_tokens=True)``); an ordered one is waited for now, and so is one whose
    callbacks' errors are ``deferred`` (then raised here)."""
    tok = results.consume_token()
    if ordered or deferred is not None:
        tok.block_until_ready()
        if deferred is not None:
            deferred.raise_pending()
        return
    old = ()
    with _pending_lock:
        _pending.append(tok)
        if len(_pending) > 256:  # the oldest have long finished: wait for them, forget them
            old = _pending[:128]
            del _pending[:128]
    for t in old:
        t.block_until_ready()


def effects_barrier() -> None:
    """Wait until every callback of the programs run so far has run."""
    with _pending_lock:
        toks = list(_pending)
        _pending.clear()
    for t in toks:
        t.block_until_ready()


_lax_callback.TO_HOST_ARRAY[0] = _to_host_array
