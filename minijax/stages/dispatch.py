"""The dispatch fast path shared by ``jit``'s ``Wrapped`` and ``Compiled``.

``DispatchBase.__call__``: positional arguments that are device arrays (or Python
scalars with a cached device constant, see ``transfer.CONSTANTS``), at top level
outside any XLA metadata context, whose aval ids form a key of ``self._fast``, run
``self._fast[key](bufs)`` directly. Everything else, and any miss, goes to
``self._call(args, kwargs)``, which subclasses define (the full path). When the
extension ``runtime/_speedups.c`` is built its ``DispatchBase`` (the same logic in
C) is used; ``PyDispatchBase`` below is the reference and the fallback.
"""

from __future__ import annotations

from typing import Any

from minijax.core.jaxpr import EMPTY_CTX
from minijax.core.trace import EVAL_TRACE, _state
from minijax.core.traceback_util import process_exception, register_boundary
from minijax.runtime._native import speedups
from minijax.runtime.array import Array
from minijax.runtime.transfer import CONSTANTS, PY_SCALAR_TYPES, constant_key, scalar_constant
from minijax.stages.common import raise_if_deleted

__all__ = ["DispatchBase", "PyDispatchBase", "ids_and_buffers", "make_constants"]


class PyDispatchBase:
    """The dispatch hot path (see the module docstring), in Python."""

    __slots__ = ()
    _fast: dict

    def __call__(self, *args, **kwargs):
        try:
            # One and two arguments are unrolled (a comprehension costs a frame).
            fast = self._fast
            if fast and not kwargs and _state.ctx is EMPTY_CTX and _state.trace is EVAL_TRACE:
                try:
                    n = len(args)
                    if n == 2:
                        x, y = args
                        run = fast[id(x.aval), id(y.aval)]
                        bufs = [x._buf, y._buf]
                    elif n == 1:
                        x = args[0]
                        run = fast[id(x.aval),]
                        bufs = [x._buf]
                    else:
                        run = fast[tuple([id(x.aval) for x in args])]
                        bufs = [x._buf for x in args]
                except AttributeError:  # Python scalars among them, perhaps
                    run, bufs = _lookup_with_scalars(fast, args)
                except KeyError:  # a new signature
                    run = None
                if run is not None:
                    try:
                        return run(bufs)
                    except Exception:
                        raise_if_deleted(args)
                        raise
            return self._call(args, kwargs)  # the subclass's full path
        except Exception as e:  # the boundary of the Python dispatcher (see traceback_util)
            process_exception(e)
            raise


register_boundary(PyDispatchBase.__call__)


def make_constants(args: tuple) -> None:
    """Give the Python scalars among ``args`` their device constants, so that the next
    call with them can take the fast path (called by the full paths)."""
    for x in args:
        if type(x) in PY_SCALAR_TYPES:
            scalar_constant(x)


def ids_and_buffers(args, constant) -> tuple[tuple, list] | None:
    """The fast-path key part (aval ids) and the buffers of ``args``: Arrays' own, and
    for other values ``constant(x)``, their device constant's ``(aval id, buffer)``
    or None when there is none (then the result is None)."""
    ids, bufs = [], []
    for x in args:
        if type(x) is Array:
            ids.append(id(x.aval))
            bufs.append(x._buf)
        else:
            c = constant(x)
            if c is None:
                return None
            ids.append(c[0])
            bufs.append(c[1])
    return tuple(ids), bufs


def _known_constant(x) -> tuple[int, Any] | None:
    """The existing device constant of a Python scalar (what the C dispatcher reads)."""
    return CONSTANTS.get(constant_key(x)) if type(x) in PY_SCALAR_TYPES else None


def _lookup_with_scalars(fast: dict, args: tuple) -> tuple[Any, list]:
    """``(run, bufs)`` for Arrays mixed with Python scalars that have a device constant
    (``transfer.CONSTANTS``), else ``(None, [])``."""
    found = ids_and_buffers(args, _known_constant)
    if found is None:
        return None, []
    return fast.get(found[0]), found[1]


@register_boundary
def _fast_path_failed(args: tuple) -> None:
    """The C dispatcher's hook after a cached executable failed: raises the clearer error
    for a deleted or donated argument, with minijax's frames filtered out of its traceback
    (this function is called from C, so it is the boundary)."""
    try:
        raise_if_deleted(args)
    except Exception as e:
        process_exception(e)
        raise


DispatchBase: Any
if speedups is not None:
    DispatchBase = speedups.DispatchBase
    speedups.set_dispatch_state(_state, EMPTY_CTX, EVAL_TRACE, _fast_path_failed, CONSTANTS)
else:
    DispatchBase = PyDispatchBase
