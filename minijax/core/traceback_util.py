"""Errors in user code point at user code: traceback filtering and source lines.

A mistake in a user's function (a shape mismatch, a traced value used as a Python
``bool``) is raised deep inside minijax, below a dozen frames of tracing machinery.
Every public entry point (``jit``'s call, ``grad``, ``vmap``, ``lax.cond``, an eager
primitive...) is a *boundary*: when an exception passes through it, its except
handler calls ``process_exception(e)``. Only the outermost boundary on the stack acts
(the inner ones see it above them and let the exception through untouched):

1. If the exception was raised inside minijax on behalf of a line of user code that
   minijax was running (a traced function, a loop body), the message gets
   ``(in <operation>, at <file>:<line> (<function>))``, unless it already names
   that line. Errors found after tracing (lowering, transposition, batching a
   traced jaxpr) are named after the equation's recorded source line instead
   (``add_equation_source``), by the loops that process equations, and XLA's
   compilation errors after the equation their location points at
   (``add_xla_error_source``).
2. The traceback is filtered according to the ``minijax_traceback_filtering`` flag
   (environment: ``MINIJAX_TRACEBACK_FILTERING``, or jax's ``JAX_TRACEBACK_FILTERING``):

   - ``auto`` (default): ``tracebackhide`` under IPython, else ``quiet_remove_frames``;
   - ``quiet_remove_frames``: frames in the minijax package are removed from
     ``e.__traceback__`` and a note says so; the unfiltered traceback stays available
     as ``minijax.errors.unfiltered_traceback(e)``;
   - ``remove_frames``: the same, and the unfiltered traceback is also chained as
     ``e.__cause__`` (an ``UnfilteredStackTrace``), as jax does;
   - ``tracebackhide``: the frames stay but are marked ``__tracebackhide__`` (which
     IPython and pytest honour);
   - ``off``: the traceback is left alone.

Boundaries cost nothing when nothing is raised: a ``try`` block is free in Python
3.11, and all the work is in the except handler. Hot entry points (``jit``'s call,
``Primitive.bind``, the array operators) hold the try/except in their own body and
are marked with ``register_boundary``; the others are wrapped with ``api_boundary``.
"""

from __future__ import annotations

import builtins
import functools
import os
import re
import sys
import sysconfig
import traceback
import types
from collections.abc import Callable
from typing import TypeVar

from minijax.config import config
from minijax.core.errors import UnfilteredStackTrace

__all__ = ["add_equation_source", "add_xla_error_source", "api_boundary", "filter_traceback",
           "is_internal", "process_exception", "register_boundary", "unfiltered_traceback",
           "user_stacklevel"]

F = TypeVar("F", bound=Callable)

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_internal: dict[str, bool] = {}


class _ExcludedPaths(list):
    """Paths whose frames are filtered like minijax's own (``register_exclusion``; flax
    edits the list directly, so each change forgets what was classified)."""

    def append(self, path):
        super().append(path)
        _internal.clear()

    def remove(self, path):
        super().remove(path)
        _internal.clear()


_exclude_paths: list[str] = _ExcludedPaths()


def register_exclusion(path: str) -> None:
    """Filter the frames of files under ``path`` (a library's) from tracebacks, as minijax's
    own (jax's ``traceback_util.register_exclusion``)."""
    _exclude_paths.append(str(path))


def include_frame(frame: types.FrameType) -> bool:
    """Whether a traceback filter keeps ``frame`` (it is not minijax's nor excluded)."""
    return not is_internal(frame.f_code.co_filename)


def is_internal(filename: str) -> bool:
    """Whether ``filename`` is a file of the minijax package (or of a path registered with
    ``register_exclusion``)."""
    r = _internal.get(filename)
    if r is None:
        r = _internal[filename] = filename.startswith(_PKG_DIR) or (
            bool(_exclude_paths) and filename.startswith(tuple(_exclude_paths)))
    return r


_library_dirs: tuple[str, ...] | None = None


def _is_library(filename: str) -> bool:
    """Whether ``filename`` belongs to Python's standard library or an installed package."""
    global _library_dirs
    if _library_dirs is None:
        paths = sysconfig.get_paths()
        _library_dirs = tuple({os.path.abspath(paths[k]) + os.sep
                               for k in ("stdlib", "platstdlib", "purelib", "platlib")
                               if k in paths})
    return filename.startswith(_library_dirs) or filename.startswith("<frozen")


def _is_user(filename: str) -> bool:
    return not is_internal(filename) and not _is_library(filename)


# ---- boundaries -------------------------------------------------------------------------

# Code objects of the functions whose except handlers call process_exception.
_BOUNDARY_CODES: set[types.CodeType] = set()


def register_boundary(fn: F) -> F:
    """Mark ``fn`` as a boundary; its body must catch ``Exception`` and call
    ``process_exception(e)`` before re-raising with a bare ``raise``::

        def _call(self, args, kwargs):
            try:
                ...
            except Exception as e:
                process_exception(e)
                raise
    """
    _BOUNDARY_CODES.add(fn.__code__)
    return fn


def api_boundary(fun: F) -> F:
    """``fun`` wrapped as a boundary (for entry points that are not on a hot path)."""

    @functools.wraps(fun)
    def minijax_api_boundary(*args, **kwargs):
        try:
            return fun(*args, **kwargs)
        except Exception as e:
            process_exception(e)
            raise

    return minijax_api_boundary  # type: ignore[return-value]


_WRAPPER_CODE = api_boundary(lambda: None).__code__
_BOUNDARY_CODES.add(_WRAPPER_CODE)


def _under_another_boundary(frame: types.FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code in _BOUNDARY_CODES:
            return True
        frame = frame.f_back
    return False


def process_exception(e: BaseException) -> None:
    """Name the user's line in ``e`` and filter its traceback (see the module docstring);
    a no-op below another boundary. Call it from a boundary's except handler."""
    if _under_another_boundary(sys._getframe(2)):
        return
    try:
        _process(e)
    except Exception:  # noqa: BLE001 - never let this hide the user's error behind another
        pass


def _process(e: BaseException) -> None:
    tb = e.__traceback__
    if tb is None:
        return
    _add_user_source(e, tb)
    mode = config.minijax_traceback_filtering
    if mode == "auto":
        mode = "tracebackhide" if _under_ipython() else "quiet_remove_frames"
    if mode == "off":
        return
    if mode == "tracebackhide":
        for f, _ in traceback.walk_tb(tb):
            if is_internal(f.f_code.co_filename):
                f.f_locals["__tracebackhide__"] = True
        return
    first_time = getattr(e, "_minijax_unfiltered_tb", None) is None
    if first_time:
        e._minijax_unfiltered_tb = tb  # type: ignore[attr-defined]
    e.with_traceback(filter_traceback(tb))
    if not first_time:  # re-raised through another boundary: noted already
        return
    if mode == "remove_frames":
        msg = "".join(traceback.format_exception_only(type(e), e)).strip()
        full = UnfilteredStackTrace(
            f"{msg}\n\nThe stack trace below includes minijax's internal frames.\n"
            "The preceding is the original exception that occurred, unmodified.\n"
            "\n--------------------")
        full.with_traceback(_with_callers(tb))
        full.__cause__, full.__context__ = e.__cause__, e.__context__
        full.__suppress_context__ = e.__suppress_context__
        e.__cause__, e.__context__ = full, None
    else:
        e.add_note(_NOTE)


_NOTE = ("--------------------\n"
         "For simplicity, minijax has removed its internal frames from the traceback of this "
         "exception. Set MINIJAX_TRACEBACK_FILTERING=off (or "
         "minijax.config.update('minijax_traceback_filtering', 'off')) to include them; "
         "minijax.errors.unfiltered_traceback(e) returns the full traceback.")


def _under_ipython() -> bool:
    return hasattr(builtins, "get_ipython")


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """A copy of ``tb`` without the frames of files in the minijax package."""
    out = None
    for f, lineno in reversed(list(traceback.walk_tb(tb))):
        if not is_internal(f.f_code.co_filename):
            out = types.TracebackType(out, f, f.f_lasti, lineno)
    return out


def _with_callers(tb: types.TracebackType) -> types.TracebackType:
    """``tb`` extended with the frames that called its outermost frame, up to the
    first module-level frames (a script, or the cell of a notebook)."""
    out = tb
    at_module = False
    for f, lineno in traceback.walk_stack(tb.tb_frame.f_back):
        is_module = f.f_code.co_name == "<module>"
        if at_module and not is_module:
            break
        out = types.TracebackType(out, f, f.f_lasti, lineno)
        at_module = at_module or is_module
    return out


def unfiltered_traceback(e: BaseException) -> types.TracebackType | None:
    """The traceback ``e`` had before minijax removed its internal frames from it
    (``e.__traceback__`` if it was not filtered)."""
    return getattr(e, "_minijax_unfiltered_tb", None) or e.__traceback__


# ---- naming the user's line ---------------------------------------------------------------

def _append_to_message(e: BaseException, text: str) -> None:
    """``text`` on a new line of ``e``'s message (a note when the message is not one string)."""
    args = e.args
    if (len(args) == 1 and isinstance(args[0], str) and not isinstance(e, KeyError)
            and type(e).__str__ is BaseException.__str__):
        e.args = (f"{args[0]}\n  {text}",)
    else:
        e.add_note(text)
    e._minijax_source = True  # type: ignore[attr-defined]


def add_equation_source(e: BaseException, eqn) -> None:
    """Name ``eqn``'s primitive and the user line that made it in ``e``'s message,
    unless ``e`` already names a line. For errors found after tracing."""
    src = eqn.source
    if src is None or getattr(e, "_minijax_source", False):
        return
    if f"{src.file}:{src.line}" in str(e):
        e._minijax_source = True  # type: ignore[attr-defined]
        return
    _append_to_message(e, f"(in {eqn.primitive.name}, at {src})")


_XLA_LOCATION = re.compile(r"(\S+?):(\d+):\d+: error: (?:'([\w.]+)' op)?")


def _equations(jaxpr):
    """The equations of ``jaxpr`` and of the jaxprs in their params, depth first."""
    for eqn in jaxpr.eqns:
        yield eqn
        for p in eqn.params.values():
            for sub in (p if isinstance(p, (tuple, list)) else (p,)):
                sub = getattr(sub, "jaxpr", sub)  # a ClosedJaxpr's jaxpr
                if hasattr(sub, "eqns"):
                    yield from _equations(sub)


def add_xla_error_source(e: BaseException, jaxpr, module_text: str = "") -> None:
    """Name the operation and user function of the equation of ``jaxpr`` that an XLA
    error (``file:line:col: error: 'stablehlo.op' op ...``) points at: the equation
    made on that line, and among several, the one whose op in ``module_text`` (the
    lowered module: ``loc("jit(f)/mul"("file":line:0))``) has that location."""
    m = _XLA_LOCATION.search(str(e))
    if m is None or getattr(e, "_minijax_source", False):
        return
    file, line, op = m.group(1), int(m.group(2)), m.group(3)
    eqn = next((q for q in _equations(jaxpr) if q.source is not None
                and q.source.file == file and q.source.line == line), None)
    if eqn is None:
        return
    name = eqn.primitive.name
    if op and module_text:
        loc = re.search(rf'"{re.escape(op)}".*loc\("([^"]*)"\("{re.escape(file)}":{line}:',
                        module_text)
        if loc:
            name = loc.group(1).rsplit("/", 1)[-1]
    _append_to_message(e, f"(in {name}, at {eqn.source})")


def _op_name(frames: list) -> str | None:
    """The operation the user called: the function of the first internal frame below
    the user's frame (seen through minijax's generic entry points)."""
    for f, _ in frames:
        name = f.f_code.co_name
        loc = f.f_locals
        if f.f_code is _WRAPPER_CODE:  # api_boundary(fun)
            name = getattr(loc.get("fun"), "__name__", name)
        elif name == "method" and isinstance(loc.get("name"), str):
            name = loc["name"]  # an array operator: the numpy function it calls
        elif name in ("_call", "bind"):  # a jitted or numpy function; a primitive
            name = getattr(loc.get("self"), "_name", None) or getattr(loc.get("self"), "name",
                                                                      name)
        elif name == "_getitem":
            name = "getitem"
        if name == "<lambda>":
            continue  # a property or an alias: what it calls says more
        if name.startswith("__") and name.endswith("__"):
            name = name[2:-2]
        return name if isinstance(name, str) else None
    return None


def _add_user_source(e: BaseException, tb: types.TracebackType) -> None:
    """Name the innermost user line that called into minijax, when ``e`` was raised by
    minijax (or a library it called) below it."""
    if getattr(e, "_minijax_source", False):
        return
    frames = list(traceback.walk_tb(tb))
    files = [f.f_code.co_filename for f, _ in frames]
    last_internal = max((i for i, fn in enumerate(files) if is_internal(fn)), default=-1)
    if last_internal < 0 or any(_is_user(fn) for fn in files[last_internal + 1:]):
        return  # raised by user code itself: its own frame shows where
    for i in range(last_internal - 1, -1, -1):
        if _is_user(files[i]) and is_internal(files[i + 1]):
            f, lineno = frames[i]
            where = f"{files[i]}:{lineno}"
            if where in str(e):
                e._minijax_source = True  # type: ignore[attr-defined]
                return
            op = _op_name(frames[i + 1:last_internal + 1])
            src = f"{where} ({f.f_code.co_name})"
            _append_to_message(e, f"(in {op}, at {src})" if op else f"(at {src})")
            return


# ---- warnings -------------------------------------------------------------------------

def user_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` call made by the caller of this function
    that attributes the warning to the innermost frame outside minijax."""
    f = sys._getframe(1)
    level = 1
    while f is not None and is_internal(f.f_code.co_filename):
        f = f.f_back
        level += 1
    return level
