"""Kernel-side primitives and the API kernels use on refs.

Primitives (named as jax's)::

    get[indexer]  ref *dynamic_indices          -> the indexed value
    swap[indexer] ref value *dynamic_indices    -> the old value (the ref now holds value)
    program_id[axis]                            -> int32 scalar

They exist only inside a kernel's jaxpr: the interpreter (``_discharge.py``)
turns them into array operations, the Mosaic lowering into memref/vector ops.
``pl.load``/``pl.store`` with masks, ``pl.when`` and ``pl.num_programs`` are
built on them (and on ``lax.cond``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, Tracer, get_aval
from minijax.experimental.pallas._core import AbstractRef, Slice, is_ref_aval
from minijax.lax._util import type_error
from minijax.lowering.lower import LoweringError

get_p = Primitive("get")
swap_p = Primitive("swap")
program_id_p = Primitive("program_id")

_INT32 = np.dtype(np.int32)


# ---- indexers ------------------------------------------------------------------------------

class Indexer:
    """A normalized ref index: per ref dimension ``("slice", start, size, stride)`` or
    ``("index", start)``; ``start`` is an int, or None when it is a dynamic operand."""

    __slots__ = ("entries", "ref_shape", "_hash")

    def __init__(self, entries: tuple, ref_shape: tuple):
        self.entries = entries
        self.ref_shape = ref_shape
        self._hash = hash((entries, ref_shape))

    @property
    def result_shape(self) -> tuple:
        return tuple(e[2] for e in self.entries if e[0] == "slice")

    @property
    def num_dynamic(self) -> int:
        return sum(e[1] is None for e in self.entries)

    def is_full(self) -> bool:
        """Does it select the whole ref?"""
        return all(e[0] == "slice" and e[1] == 0 and e[2] == n and e[3] == 1
                   for e, n in zip(self.entries, self.ref_shape))

    def __eq__(self, other) -> bool:
        return (type(other) is Indexer and self.entries == other.entries
                and self.ref_shape == other.ref_shape)

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        if self.is_full():
            return "[...]"
        parts = []
        for e, n in zip(self.entries, self.ref_shape):
            if e[0] == "index":
                parts.append("?" if e[1] is None else str(e[1]))
            elif e[1] is None:
                parts.append(f"pl.ds(?, {e[2]}" + (f", {e[3]})" if e[3] != 1 else ")"))
            elif e[1] == 0 and e[2] == n and e[3] == 1:
                parts.append(":")
            else:
                stop = e[1] + (e[2] - 1) * e[3] + 1 if e[2] else e[1]
                parts.append(f"{e[1]}:{stop}" + (f":{e[3]}" if e[3] != 1 else ""))
        return "[" + ", ".join(parts) + "]"

    __repr__ = __str__


def _is_static_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _dynamic_index(x, what: str):
    """A traced (or concrete array) scalar integer index, as int32."""
    from minijax.lax.convert import convert_element_type
    try:
        aval = get_aval(x)
    except TypeError:
        raise TypeError(f"ref indexing: unsupported index {x!r} of type {type(x).__name__}; use "
                        "ints, slices, ... or pl.ds(start, size)") from None
    if aval.shape != () or not dtypes.is_int(aval.dtype):
        raise TypeError(f"ref indexing: {what} must be an integer scalar, got a value of type "
                        f"{aval.str_short()}; array (gather) indices are not supported on refs, "
                        "use pl.ds(start, size) slices")
    return x if aval.dtype == _INT32 else convert_element_type(x, _INT32)


def normalize_index(ref_shape: tuple, idx: Any) -> tuple[Indexer, list]:
    """``idx`` (NumPy-style: ints, slices, ``...``, ``pl.ds``) as an ``Indexer`` and its
    dynamic operands."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_ell = sum(i is Ellipsis for i in idx)
    if n_ell > 1:
        raise IndexError("ref indexing: an index can only have a single ellipsis ('...')")
    n_real = len(idx) - n_ell
    if n_real > len(ref_shape):
        raise IndexError(f"ref indexing: too many indices ({n_real}) for a ref of shape "
                         f"{ref_shape}")
    full = []
    for i in idx:
        if i is Ellipsis:
            full.extend([slice(None)] * (len(ref_shape) - n_real))
        else:
            full.append(i)
    full.extend([slice(None)] * (len(ref_shape) - len(full)))
    entries, dyn = [], []
    for d, (i, n) in enumerate(zip(full, ref_shape)):
        if isinstance(i, slice):
            if not all(b is None or _is_static_int(b) for b in (i.start, i.stop, i.step)):
                raise TypeError(f"ref indexing: slice bounds must be static ints in dimension "
                                f"{d}, got {i}; for a traced start use pl.ds(start, size)")
            start, stop, step = i.indices(n)
            if step < 1:
                raise IndexError(f"ref indexing: slice step must be positive, got {step}")
            entries.append(("slice", start, len(range(start, stop, step)), step))
        elif isinstance(i, Slice):
            if _is_static_int(i.start):
                start = int(i.start)
                if start < 0 or (i.size and start + (i.size - 1) * i.stride >= n):
                    raise IndexError(f"ref indexing: pl.ds({start}, {i.size}) is out of bounds "
                                     f"for dimension {d} of size {n}")
                entries.append(("slice", start, i.size, i.stride))
            else:
                if (i.size - 1) * i.stride + 1 > n:
                    raise IndexError(f"ref indexing: pl.ds(?, {i.size}) is larger than "
                                     f"dimension {d} of size {n}")
                entries.append(("slice", None, i.size, i.stride))
                dyn.append(_dynamic_index(i.start, "a pl.ds start"))
        elif i is None:
            raise IndexError("ref indexing: None (newaxis) is not supported on refs; index the "
                             "ref, then reshape the value")
        elif _is_static_int(i):
            j = int(i) + n if int(i) < 0 else int(i)
            if not 0 <= j < n:
                raise IndexError(f"ref indexing: index {int(i)} is out of bounds for dimension "
                                 f"{d} of size {n}")
            entries.append(("index", j))
        else:
            entries.append(("index", None))
            dyn.append(_dynamic_index(i, f"the index in dimension {d}"))
    return Indexer(tuple(entries), tuple(ref_shape)), dyn


# ---- get / swap ------------------------------------------------------------------------------

def _check_indices(prim: str, ref, idx, indexer: Indexer) -> None:
    if not is_ref_aval(ref):
        raise type_error(prim, "the first operand must be a ref (a kernel's buffer)", ref)
    if len(idx) != indexer.num_dynamic or any(
            i.shape != () or not dtypes.is_int(i.dtype) for i in idx):
        raise type_error(prim, f"expected {indexer.num_dynamic} integer scalar indices",
                         ref, *idx)


@get_p.def_abstract_eval
def _get_abstract(ref, *idx, indexer):
    _check_indices("get", ref, idx, indexer)
    return ShapedArray(indexer.result_shape, ref.dtype)


@swap_p.def_abstract_eval
def _swap_abstract(ref, val, *idx, indexer):
    _check_indices("swap", ref, idx, indexer)
    if val.shape != indexer.result_shape or val.dtype != ref.dtype:
        raise type_error("swap", f"the value must have type "
                         f"{ShapedArray(indexer.result_shape, ref.dtype).str_short()}", ref, val)
    return ShapedArray(indexer.result_shape, ref.dtype)


@program_id_p.def_abstract_eval
def _program_id_abstract(*, axis):
    return ShapedArray((), _INT32)


def _kernel_only(name: str):
    def rule(ctx, *args, **params):
        raise LoweringError(f"{name} can only be used inside a pallas_call kernel (it was "
                            "found outside one, e.g. a ref or program id escaped the kernel)")
    return rule


get_p.def_lowering(_kernel_only("get (reading a ref)"))
swap_p.def_lowering(_kernel_only("swap (writing a ref)"))
program_id_p.def_lowering(_kernel_only("pl.program_id"))


# ---- the kernel's view: Ref objects ------------------------------------------------------------

class Ref:
    """A kernel operand: a mutable block. Read with ``ref[idx]``, write with ``ref[idx] = v``;
    ``idx`` is NumPy-style (ints, static slices, ``...``) or ``pl.ds(start, size)``."""

    __slots__ = ("_tracer",)

    def __init__(self, tracer: Tracer):
        self._tracer = tracer

    @property
    def aval(self) -> AbstractRef:
        return self._tracer.aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, idx):
        return _get(self, idx)

    def __setitem__(self, idx, value) -> None:
        _swap(self, idx, value)

    def __repr__(self) -> str:
        return f"Ref({self.aval.str_short()})"

    def __bool__(self):
        raise TypeError("a Pallas ref has no truth value; read it first: ref[...]")

    def __array__(self, *args, **kwargs):
        raise TypeError(f"a Pallas ref ({self.aval.str_short()}) is not an array; read it with "
                        "ref[...] (or pl.load) to get its value")


def _as_ref(ref, api: str) -> Ref:
    if not isinstance(ref, Ref):
        raise TypeError(f"{api}: expected a kernel ref, got a value of type "
                        f"{type(ref).__name__}")
    return ref


def _get(ref: Ref, idx):
    indexer, dyn = normalize_index(ref.shape, idx)
    return get_p.bind(ref._tracer, *dyn, indexer=indexer)


def _prepare_value(ref: Ref, indexer: Indexer, value):
    """``value`` converted (weak types only) and broadcast (scalars only) to the slot's type."""
    from minijax.lax.convert import convert_element_type
    from minijax.lax.shape import broadcast_in_dim
    aval = get_aval(value)
    shape, dt = indexer.result_shape, ref.dtype
    if aval.dtype != dt:
        if not aval.weak_type:
            raise TypeError(f"pallas: cannot store a value of type {aval.str_short()} into "
                            f"ref{indexer} of type {ShapedArray(shape, dt).str_short()}: the "
                            f"dtypes differ; convert it first with .astype({dt.name})")
        value = (np.asarray(value, dt) if not isinstance(value, Tracer)
                 else convert_element_type(value, dt))
    elif isinstance(value, (int, float, bool, complex)):
        value = np.asarray(value, dt)
    if aval.shape != shape:
        if aval.shape != ():
            raise TypeError(f"pallas: cannot store a value of shape {aval.shape} into "
                            f"ref{indexer} of shape {shape}")
        value = broadcast_in_dim(value, shape, ())
    return value


def _swap(ref: Ref, idx, value):
    indexer, dyn = normalize_index(ref.shape, idx)
    value = _prepare_value(ref, indexer, value)
    return swap_p.bind(ref._tracer, value, *dyn, indexer=indexer)


def load(ref: Ref, idx=Ellipsis, *, mask=None, other=None):
    """``ref[idx]``; where ``mask`` is False the result is ``other`` (default 0)."""
    ref = _as_ref(ref, "pl.load")
    x = _get(ref, idx)
    if mask is None:
        return x
    return _select(mask, x, 0 if other is None else other, "pl.load")


def store(ref: Ref, idx, val, *, mask=None) -> None:
    """``ref[idx] = val``, only where ``mask`` is True (the rest keeps its old value)."""
    ref = _as_ref(ref, "pl.store")
    if mask is None:
        _swap(ref, idx, val)
        return
    indexer, _ = normalize_index(ref.shape, idx)
    old = _get(ref, idx)
    _swap(ref, idx, _select(mask, _prepare_value(ref, indexer, val), old, "pl.store"))


def _select(mask, x, other, api: str):
    from minijax.lax.convert import convert_element_type
    from minijax.lax.select import select
    from minijax.lax.shape import broadcast_in_dim
    shape, dt = get_aval(x).shape, get_aval(x).dtype
    m = get_aval(mask)
    if not dtypes.is_bool(m.dtype):
        raise TypeError(f"{api}: mask must be boolean, got {m.str_short()}")
    if m.shape != shape:
        if m.shape != () and m.shape != shape:
            raise TypeError(f"{api}: mask of shape {m.shape} does not match the indexed "
                            f"shape {shape}")
        mask = broadcast_in_dim(mask, shape, ())
    o = get_aval(other)
    if o.dtype != dt:
        other = (np.asarray(other, dt) if not isinstance(other, Tracer)
                 else convert_element_type(other, dt))
    if o.shape != shape:
        if o.shape != ():
            raise TypeError(f"{api}: other of shape {o.shape} does not match the indexed "
                            f"shape {shape}")
        other = broadcast_in_dim(other, shape, ())
    return select(mask, x, other)


# ---- program ids and when ------------------------------------------------------------------

class _KernelState(threading.local):
    grids: list = []   # the grids of the kernels being traced (innermost last)


_kernel_state = _KernelState()


class tracing_kernel:
    """Context manager: a kernel over ``grid`` is being traced."""

    def __init__(self, grid: tuple):
        self.grid = grid

    def __enter__(self):
        _kernel_state.grids = [*_kernel_state.grids, self.grid]

    def __exit__(self, *exc):
        _kernel_state.grids = _kernel_state.grids[:-1]


def _current_grid(api: str) -> tuple:
    if not _kernel_state.grids:
        raise ValueError(f"{api} can only be called inside a pallas_call kernel")
    return _kernel_state.grids[-1]


def _check_axis(api: str, axis, grid: tuple) -> int:
    if not _is_static_int(axis) or not 0 <= int(axis) < len(grid):
        raise ValueError(f"{api}({axis!r}): axis must be an int in [0, {len(grid)}) for the "
                         f"grid {grid}")
    return int(axis)


def program_id(axis: int):
    """This grid point's index along grid dimension ``axis`` (an int32 scalar)."""
    grid = _current_grid("pl.program_id")
    return program_id_p.bind(axis=_check_axis("pl.program_id", axis, grid))


def num_programs(axis: int) -> int:
    """The grid's size along dimension ``axis`` (grids are static: a Python int)."""
    grid = _current_grid("pl.num_programs")
    return grid[_check_axis("pl.num_programs", axis, grid)]


def when(condition) -> Callable[[Callable[[], None]], None]:
    """Decorator: run the function (which writes refs) only where ``condition`` holds.

    >>> @pl.when(pl.program_id(0) == 0)
    ... def _():
    ...     acc_ref[...] = jnp.zeros_like(acc_ref)
    """
    from minijax.lax.control_flow import cond

    def decorator(f: Callable[[], None]) -> None:
        if isinstance(condition, (bool, np.bool_)):
            if condition:
                f()
            return None

        def true_fun():
            f()
            return None
        cond(condition, true_fun, lambda: None)
        return None
    return decorator
