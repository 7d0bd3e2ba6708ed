"""The dispatch fast path shared by ``jit``'s ``Wrapped`` and ``Compiled``.

``DispatchBase.__call__``, at top level (no trace, no XLA metadata context):

1. *Flat*: arguments that are device arrays or Python scalars (which use their
   cached device constant, see ``transfer.CONSTANTS``, or else a fresh buffer): the
   key is the positional arguments' aval ids, then, with keyword arguments, theirs
   and the tuple of their names in call order, or, for a function with static
   arguments (positional ones only then), the tuple of the static values;
   ``self._fast[key](bufs)`` runs.
2. *Pytree*: otherwise, when ``self._tree_fast`` has entries, the static arguments
   are split off (``self._dispatch_statics``: None, or the frozenset of static
   argnums and the sorted static argnames), ``(dyn_args, dyn_kwargs)`` is flattened
   with jaxlib's C++ pytree, and ``(treedef, statics, *aval ids)`` is looked up.
   Leaves are Arrays or Python scalars: a scalar uses its device constant, or, when
   it has none (a value that changes every call) or the function donates
   (``self._dispatch_donates``), a fresh buffer (``transfer.put_scalar``). NumPy
   arrays and scalars get a fresh buffer made as ``transfer.NUMPY_SPECS`` says for
   their dtype and shape (recorded by the full path's first call with them). A value
   ``(run, aliased, name)`` is a call that donates: after it, the donated Arrays
   are marked with where they were donated.

Everything else, and any miss, goes to ``self._call(args, kwargs)``, which
subclasses define (the full path, which fills the tables). When the extension
``runtime/_speedups.c`` is built its ``DispatchBase`` (the same logic in C) is
used; ``PyDispatchBase`` below is the reference and the fallback.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Sequence

import numpy as np

from minijax.core.jaxpr import EMPTY_CTX
from minijax.core.trace import EVAL_TRACE, trace_state, user_source
from minijax.core.traceback_util import process_exception, register_boundary
from minijax.runtime._native import speedups
from minijax.runtime.array import Array
from minijax.runtime.pytree import transform_registry as registry
from minijax.runtime.transfer import (CONSTANTS, NUMPY_SPECS, NUMPY_TYPES, PY_SCALAR_TYPES,
                                      SCALAR_SPECS, constant_key, put_numpy_arg, put_scalar,
                                      scalar_constant)
from minijax.stages.common import raise_if_deleted

__all__ = ["DispatchBase", "PyDispatchBase", "donation_site", "flat_key", "ids_and_buffers",
           "make_constants", "mark_donated", "split_statics"]


class PyDispatchBase:
    """The dispatch hot path (see the module docstring), in Python."""

    __slots__ = ()
    _fast: dict
    _tree_fast: dict = {}
    _dispatch_statics: tuple | None = None
    _dispatch_donates: bool = False

    def __call__(self, *args, **kwargs):
        try:
            fast = self._fast
            top = trace_state.ctx is EMPTY_CTX and trace_state.trace is EVAL_TRACE
            if fast and top:
                # One and two arguments are unrolled (a comprehension costs a frame).
                try:
                    n = len(args)
                    if kwargs or self._dispatch_statics is not None or self._dispatch_donates:
                        run, bufs = _lookup_flat(self, args, kwargs)
                    elif n == 2:
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
                    return _call_entry(run, bufs, args)
            if self._tree_fast and top:
                found = _tree_lookup(self, args, kwargs)
                if found is not None:
                    return _call_entry(*found)
            return self._call(args, kwargs)  # the subclass's full path
        except Exception as e:  # the boundary of the Python dispatcher (see traceback_util)
            process_exception(e)
            raise


def _call_entry(value, bufs: list, leaves: Sequence) -> Any:
    """Run a table entry: ``run``, or ``(run, aliased leaves, name)`` for a call that
    donates, after which the donated Arrays among ``leaves`` are marked."""
    run = value[0] if type(value) is tuple else value
    try:
        out = run(bufs)
    except Exception:
        raise_if_deleted(leaves)
        raise
    if type(value) is tuple:
        mark_donated(leaves, value[1], value[2])
    return out


def split_statics(spec: tuple, args: tuple, kwargs: dict) -> tuple[tuple, tuple, dict]:
    """``(statics, dyn_args, dyn_kwargs)``: the static arguments as ``(position or name,
    value)`` pairs (positions in order, then names sorted) and the others; ``spec`` is
    ``(frozenset of static argnums, sorted static argnames)``."""
    nums, names = spec
    n = len(args)
    statics = []
    dyn = []
    for i, x in enumerate(args):
        if i in nums or i - n in nums:
            statics.append((i, x))
        else:
            dyn.append(x)
    dyn_kwargs = kwargs
    if kwargs:
        dyn_kwargs = dict(kwargs)
        for k in names:
            if k in dyn_kwargs:
                statics.append((k, dyn_kwargs.pop(k)))
    return tuple(statics), tuple(dyn), dyn_kwargs


def _tree_lookup(self, args: tuple, kwargs: dict):
    """``(value, leaves, bufs)`` of the pytree table's entry for this call, or None."""
    spec = self._dispatch_statics
    if spec is not None:
        statics, dyn_args, dyn_kwargs = split_statics(spec, args, kwargs)
    else:
        statics, dyn_args, dyn_kwargs = (), args, kwargs
    try:
        leaves, tree = registry.flatten((dyn_args, dyn_kwargs))
    except Exception:
        return None
    donates = self._dispatch_donates
    key, bufs = [tree, statics], []
    for x in leaves:
        if type(x) is Array:
            key.append(id(x.aval))
            bufs.append(x._buf)
            continue
        if type(x) in PY_SCALAR_TYPES:
            c = None if donates else CONSTANTS.get(constant_key(x))
            if c is None:
                c = put_scalar(x)
        else:
            c = _numpy_buffer(x)
        if c is None:
            return None
        key.append(c[0])
        bufs.append(c[1])
    try:
        value = self._tree_fast.get(tuple(key))
    except TypeError:  # an unhashable static argument: the full path says so
        return None
    return None if value is None else (value, bufs, leaves)


def mark_donated(leaves: list, aliased: tuple, name: str, site: str | None = None) -> None:
    """Record where donated arrays went, for the error when they are used again."""
    for i in aliased:
        x = leaves[i]
        if type(x) is Array and x._buf.is_deleted():
            if site is None:
                site = donation_site(name)
            x._donated = site
            x._npy = None


def donation_site(name: str) -> str:
    """``"to jit(f) at file.py:12"``: where the user's call donated an array (the
    innermost frame outside minijax)."""
    src = user_source(1)
    where = f" at {src.file}:{src.line}" if src else ""
    return f"to jit({name}){where}"


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


def _numpy_buffer(x) -> tuple[int, Any] | None:
    """A fresh buffer for a NumPy array (not a subclass, as in C) or scalar whose dtype
    and shape have a spec."""
    ok = type(x) is np.ndarray or isinstance(x, np.generic)
    return put_numpy_arg(x) if ok else None


def _known_constant(x) -> tuple[int, Any] | None:
    """The device constant of a Python scalar, or a fresh buffer for it or for a NumPy
    argument (what the C dispatcher does)."""
    if type(x) not in PY_SCALAR_TYPES:
        return _numpy_buffer(x)
    return CONSTANTS.get(constant_key(x)) or put_scalar(x)


def _fresh_scalar(x) -> tuple[int, Any] | None:
    """A fresh buffer for a Python scalar or NumPy argument (for functions that donate)."""
    return put_scalar(x) if type(x) in PY_SCALAR_TYPES else _numpy_buffer(x)


def flat_key(ids: Sequence[int], kw_names: Sequence[str] = (), statics: tuple | None = None
             ) -> tuple:
    """The flat table's key: the aval ids of the positional arguments then of the
    keyword arguments (in call order), then their names, or else the values of the
    statics (``((position, value), ...)``; positional ones only)."""
    if kw_names:
        return (*ids, tuple(kw_names))
    return tuple(ids) if statics is None else (*ids, tuple([v for _, v in statics]))


def _lookup_flat(self, args: tuple, kwargs: dict) -> tuple[Any, list]:
    """``(run, bufs)`` from the flat table for a call with keyword or static
    arguments, else ``(None, [])``."""
    spec = self._dispatch_statics
    if spec is not None:
        if kwargs:
            return None, []
        statics, args, _ = split_statics(spec, args, {})
    found = ids_and_buffers((*args, *kwargs.values()),
                            _fresh_scalar if self._dispatch_donates else _known_constant)
    if found is None:
        return None, []
    key = flat_key(found[0], tuple(kwargs), statics if spec is not None else None)
    try:
        return self._fast.get(key), found[1]
    except TypeError:  # an unhashable static argument: the full path says so
        return None, []


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
    speedups.set_dispatch_state(trace_state, EMPTY_CTX, EVAL_TRACE, _fast_path_failed, CONSTANTS,
                                registry.flatten, SCALAR_SPECS, NUMPY_SPECS, *NUMPY_TYPES)
else:
    DispatchBase = PyDispatchBase
