"""Shared pieces of the stages: argument abstraction, names, compile helpers."""

from __future__ import annotations

import functools
import inspect
import operator
import re
from typing import Any, TypeVar
from collections.abc import Callable, Sequence

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import (ShapedArray, ShapeDtypeStruct, canonicalize_shape,
                               check_nonnegative_shape)
from minijax.core.trace import Tracer, get_aval
from minijax.runtime.array import Array
from minijax.runtime.memory_kinds import memory_of_aval
from minijax._pytree import keystr


def physical_structs(tree):
    """``tree`` with each ``ShapeDtypeStruct`` of an extended dtype (``key<fry>``) replaced
    by what the transformations trace for it (a key array over a uint32 struct)."""
    from minijax import tree_util  # the public registry: such a struct is a leaf there

    def one(x):
        if isinstance(x, ShapeDtypeStruct) and isinstance(x.dtype, dtypes.ExtendedDType):
            return x.dtype._physical_struct(x)
        return x
    return tree_util.tree_map(one, tree)


def public_structs(tree):
    """``tree`` of ``ShapeDtypeStruct``s as the user sees it: a key array over a uint32
    struct is one ``ShapeDtypeStruct`` of the key dtype (as jax's ``eval_shape`` gives)."""
    from minijax import tree_util

    def one(x):
        if getattr(type(x), "_typeof", None) is not None:
            return ShapeDtypeStruct(x.shape, x.dtype)
        return x
    return tree_util.tree_map(one, tree)


def abstractify(x, allow_shape_dtype: bool = False) -> ShapedArray:
    """The aval of an argument; with ``allow_shape_dtype`` any object with shape and dtype."""
    if type(x) is Array:
        return x.aval
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    if isinstance(x, ShapeDtypeStruct) or (allow_shape_dtype and hasattr(x, "shape")
                                           and hasattr(x, "dtype")
                                           and not isinstance(x, (np.ndarray, np.generic))):
        shape = canonicalize_shape(x.shape, "shape of an abstract argument")
        check_nonnegative_shape(shape, f"{type(x).__name__} argument")
        return ShapedArray(shape, dtypes.canonicalize(x.dtype), getattr(x, "weak_type", False),
                           getattr(x, "sharding", None))
    try:
        return get_aval(x)
    except TypeError:
        raise TypeError(
            f"Argument {x!r} of type {type(x).__name__} is not a valid minijax type: "
            "pass arrays, Python or NumPy scalars, or pytrees of them (mark other values "
            "static with static_argnums)") from None


def arg_names_from_paths(fun, paths: Sequence[tuple], n_positional_static: int = 0) -> list[str]:
    """Names like ``x``, ``params[0]['w']`` for flattened ``(args, kwargs)`` leaves."""
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for path in paths:
        if not path:
            names.append("args")
            continue
        top = path[0]
        rest = path[1:]
        if getattr(top, "idx", None) == 0 and rest:  # positional: (args, kwargs)[0][i]
            i = rest[0].idx
            base = params[i] if i < len(params) else f"args[{i}]"
            names.append(base + keystr(rest[1:]))
        elif getattr(top, "idx", None) == 1 and rest:  # kwargs dict
            names.append(str(rest[0].key) + keystr(rest[1:]))
        else:
            names.append(keystr(path))
    return names


def result_names(paths: Sequence[tuple]) -> list[str]:
    return ["result" + keystr(p) for p in paths]


F = TypeVar("F", bound=Callable)


def fun_name(fun, default: str = "<unnamed function>") -> str:
    """A callable's ``__name__`` as jax reads it: a ``functools.partial`` gives its
    function's name, any other nameless callable ``default``."""
    name = getattr(fun, "__name__", None)
    if name is not None:
        return name
    if isinstance(fun, functools.partial):
        return fun_name(fun.func, default)
    return default


def wraps(wrapped: Callable, docstr: str | None = None, **fields) -> Callable[[F], F]:
    """Like ``functools.wraps``, but the docstring is ``docstr`` formatted with ``fun``
    (the wrapped function's name), ``doc`` (its docstring) and ``fields``.

    Attributes are set one by one and a failure (an object that refuses an attribute, a
    docstring that does not format) leaves the rest unset, as jax's helper does.
    """
    def decorate(fun: F) -> F:
        try:
            name = fun_name(wrapped)
            doc = getattr(wrapped, "__doc__", "") or ""
            fun.__dict__.update(getattr(wrapped, "__dict__", {}))
            fun.__annotations__ = getattr(wrapped, "__annotations__", {})
            fun.__name__ = name
            fun.__module__ = getattr(wrapped, "__module__", "<unknown module>")
            fun.__doc__ = doc if docstr is None else docstr.format(fun=name, doc=doc, **fields)
            fun.__qualname__ = getattr(wrapped, "__qualname__", name)
            fun.__wrapped__ = wrapped  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - best effort, as functools.wraps for odd callables
            pass
        return fun
    return decorate


_NOT_IN_NAME = re.compile(r"[^\w.-]")


def sanitize_name(name: str) -> str:
    """``name`` usable as an MLIR/HLO module name: every character outside
    ``[\\w.-]`` becomes ``_`` (as jax does)."""
    return _NOT_IN_NAME.sub("_", name)


def module_name(name: str, transform: str = "jit") -> str:
    """jax's module name for ``transform(name)``: ``jit(<lambda>)`` is ``jit__lambda``,
    ``jit(loss)`` is ``jit_loss`` (sanitized, trailing underscores dropped)."""
    return sanitize_name(f"{transform}({name})").rstrip("_")


def short_types(avals: Sequence[ShapedArray]) -> str:
    return ", ".join(a.str_short() for a in avals)


def is_tracer(x: Any) -> bool:
    return isinstance(x, Tracer)


def as_tuple(x) -> tuple:
    """``argnums``-style options as a tuple: None is empty, one int or name is one."""
    if x is None:
        return ()
    if isinstance(x, (int, str)):
        return (x,)
    return tuple(x)


def argnums_tuple(x, what: str) -> tuple[int, ...]:
    """A ``static_argnums``-style option as a tuple of ints, read as jax reads it.

    None is empty; one integer (``np.int64`` and ``True`` too) is one; anything
    else must be a sequence of integers, else TypeError naming ``what``.
    """
    if x is None:
        return ()
    try:
        return (operator.index(x),)
    except TypeError:
        pass
    try:
        return tuple(operator.index(i) for i in x)
    except TypeError:
        raise TypeError(f"{what} must be an int or a sequence of ints, got {x!r}") from None


def argnames_tuple(x, what: str) -> tuple[str, ...]:
    """A ``static_argnames``-style option as a tuple of strings (TypeError otherwise)."""
    if x is None:
        return ()
    if isinstance(x, str):
        return (x,)
    try:
        names = tuple(x)
    except TypeError:
        names = None
    if names is None or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{what} must be a string or a sequence of strings, got {x!r}")
    return names


def check_argnums(params: Sequence[inspect.Parameter], nums: Sequence[int], what: str,
                  fun_name: str) -> None:
    """ValueError (as jax's, when ``jit`` is applied) for argument numbers that no call of
    a function with parameters ``params`` could have; any number suits ``*args``."""
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    bad = [i for i in nums if not -n <= i < n]
    if bad:
        raise ValueError(f"Jitted function {fun_name} has {what}={tuple(nums)}, but only "
                         f"accepts {n} positional arguments ({bad} out of range).")


def check_argnames(params: Sequence[inspect.Parameter], names: Sequence[str], what: str,
                   fun_name: str) -> None:
    """ValueError (as jax's) for names that are not keyword parameters of the function
    (any name suits ``**kwargs``, except a positional-only parameter's)."""
    positional_only = {p.name for p in params
                       if p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL)}
    bad = positional_only & set(names)
    if bad:
        raise ValueError(f"Jitted function {fun_name} has invalid argnames {sorted(bad)} in "
                         f"{what}. These are positional-only")
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    valid = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    bad = set(names) - valid
    if bad:
        raise ValueError(f"Jitted function {fun_name} has invalid argnames {sorted(bad)} in "
                         f"{what}. Function does not take these args.")


def call_device(args: Sequence[Any]):
    """The device a jitted or eager computation on ``args`` runs on: the one device
    other than the default that holds Array arguments, or None for the default device.

    Arrays on the default device go where the computation runs (like jax's uncommitted
    arrays; constants and cotangent seeds are made there); Arrays on two different
    non-default devices are a ValueError, as jax refuses arguments committed to
    different devices.

    Sharded Arrays among ``args`` make it a ``Placement`` (``stages/sharded.py``): the
    computation is partitioned over their devices.
    """
    from minijax.runtime.backend import Device, default_device
    home = default_device()
    device = None
    for x in args:
        if type(x) is Array:
            if id(x.aval) in memory_of_aval:  # in host memory
                from minijax.stages.sharded import placement_of
                return placement_of(args)
            d = x.device  # RuntimeError for a deleted array
            if d == home or d == device:
                continue
            if type(d) is not Device:  # a sharded array: its sharding
                from minijax.stages.sharded import placement_of
                return placement_of(args)
            if device is not None:
                raise ValueError(
                    f"arguments are on different devices ({device} and {d}, the latter "
                    f"{x.aval.str_short()}); move them to one device with "
                    f"minijax.device_put(x, device) first")
            device = d
    return device


def raise_if_deleted(args: Sequence[Any]) -> None:
    """After a failed execution: a ``RuntimeError`` saying which argument was deleted
    (or donated, and where), if one was; otherwise nothing (the caller re-raises)."""
    for x in args:
        if type(x) is Array and x._buf.is_deleted():
            raise RuntimeError(x._deleted_message()) from None


def check_on_device(args: Sequence[Any], device, names: Sequence[str] | None) -> None:
    """For an executable compiled for ``device`` (a ``Compiled``): ValueError, with
    jax's wording, for Array arguments held on another device (``names``: the
    arguments' names). Arrays on the default device follow, like jax's uncommitted
    ones."""
    from minijax.runtime.backend import default_device, sharding_for
    home = default_device()
    bad = []
    for i, x in enumerate(args):
        if type(x) is Array:
            d = x.device
            if d != device and d != home:
                name = names[i] if names and i < len(names) else f"at leaf {i}"
                shape = ",".join(map(str, x.aval.shape))
                bad.append(f"Argument {name} with shape {x.aval.dtype.name}[{shape}]:\n"
                           f"  Passed sharding: {sharding_for(d)}\n"
                           f"  Required sharding: {sharding_for(device)}")
    sharding_mismatch(bad)


def sharding_mismatch(bad: Sequence[str]) -> None:
    """jax's ValueError for ``Compiled`` arguments laid out otherwise than compiled for
    (``bad``: one ``Argument ... Passed sharding ... Required sharding`` entry each),
    when there are any."""
    if bad:
        raise ValueError("Computation was compiled for input shardings that disagree with "
                         "the shardings of arguments passed to it. Here are the "
                         f"{len(bad)} mismatches:\n" + "\n".join(bad))
