"""Debugging helpers: ``print`` and ``callback`` (host callbacks that work under ``jit``,
``vmap``, ``grad`` and control flow), and ``visualize_array_sharding``.

>>> @minijax.jit
... def f(x):
...     minijax.debug.print("x = {x}", x=x)
...     return x * 2
>>> f(jnp.arange(3.0))
x = [0. 1. 2.]

>>> minijax.debug.visualize_array_sharding(x)    # x: f32[8, 4] sharded P("x", "y") on 4x2
+-------+-------+
| CPU 0 | CPU 1 |
+-------+-------+
| CPU 2 | CPU 3 |
...
"""

from __future__ import annotations

import builtins
import cmd
import inspect
import logging
import os
import string
import sys
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from minijax.core.effects import Effect, debug_effect, ordered_debug_effect
from minijax.core.trace import Tracer, get_aval, user_source
from minijax.lax.callback import debug_callback_p, debug_print_p, with_static_args
from minijax.runtime.array import Array
from minijax.runtime.backend import default_device
from minijax.runtime.sharding import AbstractMesh, SingleDeviceSharding
from minijax._pytree import tree_flatten

__all__ = ["DebugEffect", "OrderedDebugEffect", "breakpoint", "callback",
           "inspect_array_sharding", "log", "print", "visualize_array_sharding",
           "visualize_sharding"]

_logger = logging.getLogger("minijax")

DebugEffect = OrderedDebugEffect = Effect  # the type of debug_effect, ordered_debug_effect


# ---- callback ------------------------------------------------------------------------------

def _split_args(args: tuple, kwargs: dict) -> tuple[Any, list, dict[int, Any]]:
    """The tree of ``(args, kwargs)``, its array leaves, and the other (static) leaves by
    position."""
    leaves, tree = tree_flatten((args, kwargs))
    dynamic, static = [], {}
    for i, x in enumerate(leaves):
        try:
            get_aval(x)
        except TypeError:
            static[i] = x
        else:
            dynamic.append(x)
    return tree, dynamic, static


def callback(callback: Callable[..., None] | None = None, *args: Any, ordered: bool = False,
             partitioned: bool = False, **kwargs: Any):
    """Call ``callback(*args, **kwargs)`` on the host when the program runs, also inside
    ``jit``, ``vmap`` (once per element), ``grad`` (on the primal values) and control flow.

    Array arguments arrive as host ``minijax.Array``s, other arguments as they are. The
    call is a side effect: never dropped; ``ordered=True`` keeps it in program order
    with the other ordered callbacks. ``callback(ordered=True)(fn, *args)`` is the
    two-call form. Wait for the callbacks of programs already run with
    ``minijax.effects_barrier()``.
    """
    def debug_callback(fn: Callable[..., None], *c_args: Any, **c_kwargs: Any) -> None:
        if not callable(fn):
            raise TypeError("first argument to jax.debug.callback must be callable, but got "
                            f"an object of type {type(fn)}")
        tree, dynamic, static = _split_args(c_args, c_kwargs)
        effect = ordered_debug_effect if ordered else debug_effect
        debug_callback_p.bind(*dynamic, callback=with_static_args(fn, tree, static),
                              effect=effect, partitioned=partitioned)

    return _one_or_two_calls("debug_callback", debug_callback, callback, args, kwargs)


def _one_or_two_calls(name: str, call: Callable, first: Any, args: tuple, kwargs: dict):
    """``call(first, *args, **kwargs)`` (the one-call form) or, with no ``first``, ``call``
    itself for the second call of the two-call form (which takes the options only)."""
    if first is not None:
        call(first, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"{name} received unexpected arguments in the two-call form: "
                        f"args={args!r} kwargs={kwargs!r}")
    return call


# ---- print ---------------------------------------------------------------------------------

class _FormatChecker(string.Formatter):
    """Checks that a format string uses every argument (formats nothing)."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused_args = [a for i, a in enumerate(args) if i not in used_args]
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused_args:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused_args}")
        if unused_kwargs:
            raise ValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be "
                "passing an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead "
                "should pass in a regular string.")


_checker = _FormatChecker()


def print(fmt: str | None = None, *args: Any, ordered: bool = False,  # noqa: A001
          partitioned: bool = False, skip_format_check: bool = False,
          _use_logging: bool = False, **kwargs: Any):
    """Print ``fmt.format(*args, **kwargs)`` when the program runs, also inside ``jit``,
    ``vmap`` (one line per element), ``grad`` and control flow (not an f-string: the
    values are formatted on the host when they exist). NumPy's print options in force
    at the call are used. ``ordered=True`` keeps the lines in program order;
    ``print(ordered=True)(fmt, ...)`` is the two-call form.
    """
    def debug_print(fmt: str, *c_args: Any, **c_kwargs: Any) -> None:
        if not skip_format_check:
            _checker.format(fmt, *c_args, **c_kwargs)
        has_placeholders = False
        if fmt:
            _, field, *_ = next(iter(string.Formatter().parse(fmt)))
            has_placeholders = field is not None
        tree, dynamic, static = _split_args(c_args, c_kwargs)
        debug_print_p.bind(*dynamic, fmt=fmt, has_placeholders=has_placeholders, in_tree=tree,
                           logging_record=_log_record() if _use_logging else None,
                           np_printoptions=tuple(np.get_printoptions().items()),
                           ordered=ordered, partitioned=partitioned,
                           static_args=tuple(static.items()))

    return _one_or_two_calls("debug_print", debug_print, fmt, args, kwargs)


def _log_record() -> logging.LogRecord:
    """An INFO record of the ``minijax`` logger at the user's line (its message is set
    when the values are printed)."""
    src = user_source()
    return _logger.makeRecord(_logger.name, logging.INFO,
                              src.file if src else "(unknown file)",
                              src.line if src else 0, "", (), None)


def log(fmt: str | None = None, *args: Any, ordered: bool = False, partitioned: bool = False,
        skip_format_check: bool = False, **kwargs: Any):
    """``print`` to the ``minijax`` logger (INFO, at the caller's line) instead of stdout,
    as ``jax.debug.log``."""
    return print(fmt, *args, ordered=ordered, partitioned=partitioned,
                 skip_format_check=skip_format_check, _use_logging=True, **kwargs)


# ---- sharding ------------------------------------------------------------------------------


def visualize_sharding(shape: tuple, sharding: Any, *, use_color: bool = False,
                       print_output: bool = True) -> str:
    """A text table of which devices hold which block of an array of ``shape``
    (1-d or 2-d): one cell per distinct block, naming its devices."""
    del use_color
    shape = tuple(shape)
    if len(shape) > 2:
        raise ValueError(f"visualize_sharding shows 1-d and 2-d arrays only, got shape {shape}")
    shape2 = (1,) + shape if len(shape) == 1 else (shape or (1, 1))
    cells: dict[tuple, list] = {}
    for d, index in sharding.devices_indices_map(shape).items():
        index = tuple(index)
        if len(shape) == 1:
            index = (slice(None),) + index
        elif not shape:
            index = (slice(None), slice(None))
        key = tuple(s.indices(n)[:2] for s, n in zip(index, shape2))
        cells.setdefault(key, []).append(d)
    rows = sorted({k[0] for k in cells})
    cols = sorted({k[1] for k in cells})
    platform = next(iter(cells.values()))[0].platform.upper()
    text = {(r, c): f"{platform} {','.join(str(d.id) for d in cells[(r, c)])}"
            for r in rows for c in cols if (r, c) in cells}
    width = max(len(t) for t in text.values()) + 2
    line = "+" + "+".join("-" * width for _ in cols) + "+"
    out = [line]
    for r in rows:
        out.append("|" + "|".join(text.get((r, c), "").center(width) for c in cols) + "|")
        out.append(line)
    result = "\n".join(out)
    if print_output:
        builtins.print(result)
    return result


def visualize_array_sharding(arr: Array, **kwargs) -> str:
    """Print (and return) the table of ``visualize_sharding`` for ``arr``'s layout."""
    if not isinstance(arr, Array):
        raise TypeError(f"visualize_array_sharding expects a minijax Array, got {arr!r}")
    return visualize_sharding(arr.shape, arr.sharding, **kwargs)


def inspect_array_sharding(value: Any, *, callback: Callable[[Any], None]) -> None:
    """Call ``callback`` with the sharding of each array in the pytree ``value``.

    Eagerly it gets the array's own sharding; under ``jit`` it is called once, while the
    function is traced and compiled (not each time it runs), with the sharding the
    traced value is known to have (its single device's when it has none).
    """
    leaves, _ = tree_flatten(value)
    for leaf in leaves:
        if isinstance(leaf, Tracer):
            sharding = getattr(get_aval(leaf), "sharding", None)
            if sharding is None or isinstance(getattr(sharding, "mesh", None), AbstractMesh):
                # no devices known at trace time (a type's sharding is over an abstract
                # mesh): the program runs on the default device
                sharding = SingleDeviceSharding(default_device())
            callback(sharding)
        elif isinstance(leaf, Array):
            callback(leaf.sharding)
        else:
            raise TypeError(f"inspect_array_sharding expects arrays, got {type(leaf).__name__}")


# ---- breakpoint ------------------------------------------------------------------------------

class DebuggerFrame:
    """One Python frame seen by ``breakpoint``: its file, line, function name, source,
    and its locals and globals (array values as host arrays)."""

    def __init__(self, filename: str, lineno: int, function: str, locals: dict,
                 globals: dict, source: list[str], offset: int):
        self.filename, self.lineno, self.function = filename, lineno, function
        self.locals, self.globals = locals, globals
        self.source, self.offset = source, offset


_MINIJAX_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_frames(filter_frames: bool, num_frames: int | None) -> list[inspect.FrameInfo]:
    frames = inspect.stack(context=0)[2:]  # skip _user_frames and breakpoint
    if filter_frames:
        frames = [f for f in frames
                  if not os.path.abspath(f.filename).startswith(_MINIJAX_DIR + os.sep)]
    return frames if num_frames is None else frames[:num_frames]


def _frame_source(frame) -> tuple[list[str], int]:
    try:
        lines, start = inspect.getsourcelines(frame)
        return [ln.rstrip("\n") for ln in lines], max(start, 1)
    except (OSError, TypeError):
        return [], 0


class _CliDebugger(cmd.Cmd):
    """The ``(mdb)`` prompt of ``breakpoint``: ``p``/``pp`` evaluate an expression in the
    current frame, ``u``/``d`` move up and down the stack, ``l`` lists the source,
    ``w``/``bt`` prints the stack, ``c`` continues, ``q`` quits (raises SystemExit);
    any other line is evaluated as a Python expression in the frame."""

    prompt = "(mdb) "

    def __init__(self, frames: list[DebuggerFrame], stdin=None, stdout=None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = False
        self.frames, self.index = frames, 0

    def _say(self, text: str) -> None:
        builtins.print(text, file=self.stdout)

    def _eval(self, expr: str):
        frame = self.frames[self.index]
        return eval(expr, frame.globals, dict(frame.locals))  # noqa: S307 (a debugger)

    def _show(self, arg: str, pretty: bool = False) -> None:
        try:
            value = self._eval(arg)
        except Exception:
            self._say("".join(traceback.format_exception_only(*sys.exc_info()[:2])).rstrip())
            return
        self._say(__import__("pprint").pformat(value) if pretty else repr(value))

    def default(self, line: str) -> bool:
        self._show(line)
        return False

    def emptyline(self) -> bool:
        return False

    def do_p(self, arg: str) -> bool:
        """p expression: print the value of the expression."""
        self._show(arg)
        return False

    def do_pp(self, arg: str) -> bool:
        """pp expression: pretty-print the value of the expression."""
        self._show(arg, pretty=True)
        return False

    def _where_line(self, i: int) -> str:
        f = self.frames[i]
        return f"{'>' if i == self.index else ' '} {f.filename}({f.lineno}){f.function}()"

    def do_list(self, arg: str) -> bool:
        """l(ist): the source around the current line."""
        f = self.frames[self.index]
        if not f.source:
            self._say(f"(no source for {f.filename})")
            return False
        for i, line in enumerate(f.source):
            no = f.offset + i
            if abs(no - f.lineno) <= 5:
                self._say(f"{no:4d} {'->' if no == f.lineno else '  '} {line}")
        return False

    def do_up(self, arg: str) -> bool:
        """u(p): move to the caller's frame."""
        if self.index + 1 >= len(self.frames):
            self._say("At topmost frame.")
        else:
            self.index += 1
            self._say(self._where_line(self.index))
        return False

    def do_down(self, arg: str) -> bool:
        """d(own): move to the callee's frame."""
        if self.index == 0:
            self._say("At bottommost frame.")
        else:
            self.index -= 1
            self._say(self._where_line(self.index))
        return False

    def do_where(self, arg: str) -> bool:
        """w(here), bt: print the stack, the current frame marked with '>'."""
        for i in reversed(range(len(self.frames))):
            self._say(self._where_line(i))
        return False

    def do_continue(self, arg: str) -> bool:
        """c(ont(inue)): leave the debugger and go on running."""
        return True

    def do_quit(self, arg: str) -> bool:
        """q(uit): stop the program (raises SystemExit)."""
        raise SystemExit("quitting the minijax debugger")

    def do_EOF(self, arg: str) -> bool:  # noqa: N802 (cmd's name for end of input)
        return True

    do_l, do_u, do_d, do_w, do_bt = do_list, do_up, do_down, do_where, do_where
    do_c = do_cont = do_continue
    do_q = do_exit = do_quit

    def run(self) -> None:
        f = self.frames[0]
        self._say(f"Entering minijax debugger at {f.filename}:{f.lineno} ({f.function})")
        self.cmdloop()


_BACKENDS = {"cli": _CliDebugger}


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token: Any = None,
               **kwargs: Any):
    """Stop in an interactive debugger (``p x``, ``u``/``d``, ``l``, ``w``, ``c``, ``q``)
    when the program reaches this point, also inside ``jit``, ``vmap`` and ``grad``: the
    arrays in the calling frames' locals are shown with their run-time values.

    ``backend`` is ``"cli"`` (the default; it reads ``sys.stdin``), ``filter_frames``
    hides minijax's own frames, ``num_frames`` limits how many callers are captured,
    ``ordered`` keeps the stop in program order with other ordered callbacks. With
    ``token`` given, it is returned (so the stop can be sequenced with it).
    """
    del kwargs  # jax's backends take options; the cli one has none
    backend = "cli" if backend is None else backend
    if backend not in _BACKENDS:
        raise ValueError(f"breakpoint: unknown debugger backend {backend!r}; "
                         f"available: {sorted(_BACKENDS)}")
    debugger = _BACKENDS[backend]
    infos = _user_frames(filter_frames, num_frames)
    # The arrays among the frames' locals are passed through the callback, so they
    # arrive with their run-time values; everything else is kept as it is.
    dynamic, layout = [], []
    for info in infos:
        names, static = [], {}
        for name, value in info.frame.f_locals.items():
            if isinstance(value, (Tracer, Array)):
                names.append(name)
                dynamic.append(value)
            else:
                static[name] = value
        source, offset = _frame_source(info.frame)
        layout.append((info.filename, info.lineno, info.function, names, static,
                       info.frame.f_globals, source, offset))
    del infos

    def launch(*values):
        frames, it = [], iter(values)
        for filename, lineno, function, names, static, globs, source, offset in layout:
            local = dict(static)
            local.update((n, next(it)) for n in names)
            frames.append(DebuggerFrame(filename, lineno, function, local, globs, source,
                                        offset))
        debugger(frames, stdin=sys.stdin, stdout=sys.stdout).run()

    callback(launch, *dynamic, ordered=ordered)
    return token
