"""Mutable array references: ``minijax.new_ref``, ``Ref``, ``freeze``, as jax's ``jax.ref``.

A ``Ref`` holds a value of the trace it was made in and replaces it on every write
(``r[idx] = v`` is ``value.at[idx].set(v)``), so inside a traced function the state
is already "discharged": reads and writes are ordinary array operations of that
trace, and ``grad``, ``vmap`` and ``scan`` of a function that makes its own refs
need nothing more. A ref made *outside* a ``jit`` or loop body and used inside is
found by ``minijax.core.ref.check_ref_scope``; ``jit`` (an argument or a closed-over
ref) and ``scan``/``fori_loop``/``while_loop`` (a closed-over ref) then thread its
value in and its final value out (``threading``), and write it back after the call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax.core.aval import ShapedArray
from minijax.core.ref import AbstractRef, check_ref_scope
from minijax.core.trace import Tracer, trace_state, get_aval, user_source


class Ref:
    """A mutable array reference (``jax.Ref``): ``r[idx]`` reads, ``r[idx] = v`` writes.

    >>> r = minijax.new_ref(jnp.zeros(3))
    >>> r[1] += 2.0
    >>> r[...]
    Array([0., 2., 0.], dtype=float32)
    """

    __slots__ = ("_value", "_trace", "_aval", "_freed", "_source", "__weakref__")

    def __init__(self, value, aval: AbstractRef):
        self._value = value
        self._trace = trace_state.trace
        self._aval = aval
        self._freed = False
        self._source = user_source(2)

    # -- type

    @property
    def aval(self) -> AbstractRef:
        return self._aval

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: self._aval.ndim)
    size = property(lambda self: self._aval.size)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # -- state

    def _get_value(self):
        if self._freed:
            raise ValueError(f"the mutable array reference of type {self._aval} was freed "
                             "(freeze or free_ref) and cannot be used")
        if trace_state.trace is not self._trace:
            check_ref_scope(self, trace_state.trace)
        return self._value

    def _set_value(self, value) -> None:
        self._get_value()  # the same checks
        if isinstance(value, Tracer) and self._trace is not value._trace \
                and not value._trace.is_ancestor_of_or_self(self._trace):
            # a value of a transformation inside the one the ref belongs to
            kind = type(value._trace).__name__
            if "Batch" in kind:
                what, fun = "vmapped value on an unbatched", "to the vmapped"
            elif "JVP" in kind:
                what, fun = ("a differentiated value on a non-differentiated",
                             "of the differentiated")
            else:
                what, fun = "a transformed value on an outer", "of the transformed"
            # jax raises a bare Exception here; a ValueError is one
            raise ValueError(f"performing a set/swap operation with {what} array reference "
                             f"of type {self._aval}. Move the array reference to be an "
                             f"argument {fun} function?")
        self._value = value

    def __getitem__(self, idx):
        value = self._get_value()
        if _is_full(idx, self.ndim):
            return value
        return value[idx]

    def __setitem__(self, idx, update) -> None:
        value = self._get_value()
        full = _is_full(idx, self.ndim)
        slot = self._aval.inner_aval if full else get_aval(value[idx])
        update = _prepare(update, slot, "swap", self._aval)
        self._set_value(update if full else value.at[idx].set(update))

    def get(self, idx=Ellipsis):
        return self[idx]

    def set(self, idx, value) -> None:
        self[idx] = value

    def swap(self, idx, value):
        old = self[idx]
        self[idx] = value
        return old

    def addupdate(self, idx, value) -> None:
        old = self[idx]
        _prepare(value, get_aval(old), "addupdate", self._aval)  # the checks only
        self[idx] = old + value

    # -- Python protocols

    def __repr__(self) -> str:
        if self._freed:
            return f"Ref(<freed>, {self._aval})"
        v = self._value
        if isinstance(v, Tracer):
            return f"Ref({v!r})"
        text = repr(v)
        if text.startswith("Array("):
            return "Ref(" + text[len("Array("):]
        return f"Ref({text})"

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self[...], dtype)

    def __bool__(self):
        raise TypeError("a mutable array reference has no truth value; read it first: r[...]")

    def __hash__(self):
        return id(self)


def _is_full(idx, ndim: int) -> bool:
    if idx is Ellipsis:
        return True
    if isinstance(idx, tuple):
        if idx == () and ndim == 0:
            return True
        if len(idx) == 1 and idx[0] is Ellipsis:
            return True
    return False


def _prepare(update, slot: ShapedArray, prim: str, ref_aval: AbstractRef):
    """``update`` as a value of type ``slot``: its dtype and shape must be the slot's (a
    Python scalar counts as its default dtype, and nothing broadcasts, as in jax)."""
    from minijax.lax.convert import convert_element_type
    aval = get_aval(update)
    if aval.shape != slot.shape:
        raise ValueError(f"Invalid shape for `{prim}`. Ref shape: {ref_aval.shape}. "
                         f"Expected shape: {slot.shape}. Value shape: {aval.shape}. "
                         "Transforms: (). ")
    if aval.dtype != slot.dtype:
        raise ValueError(f"Invalid dtype for `{prim}`. Ref dtype: {slot.dtype}. "
                         f"Value dtype: {aval.dtype}. ")
    if aval.weak_type != slot.weak_type or not isinstance(update, Tracer) \
            and not hasattr(update, "aval"):
        update = convert_element_type(update, slot.dtype, weak_type=slot.weak_type)
    return update


# ---- the public functions -----------------------------------------------------------------

def new_ref(init_val: Any, *, memory_space: Any = None, kind: Any = None) -> Ref:
    """A mutable array reference holding ``init_val`` (``jax.new_ref``)."""
    from minijax.lax.convert import convert_element_type
    if isinstance(init_val, Ref):
        raise TypeError("new_ref: the initial value is already a mutable array reference")
    try:
        aval = get_aval(init_val)
    except TypeError:
        raise TypeError(f"new_ref: the initial value must be an array, got a value of type "
                        f"{type(init_val).__name__}") from None
    value = convert_element_type(init_val, aval.dtype, weak_type=aval.weak_type)  # an array
    return Ref(value, AbstractRef(aval, memory_space))


def empty_ref(ty, memory_space: Any = None) -> Ref:
    """A mutable array reference of type ``ty`` (anything with ``shape`` and ``dtype``);
    its contents are unspecified until written (minijax fills it with zeros)."""
    from minijax.lax.utilities import full
    shape, dtype = tuple(ty.shape), np.dtype(ty.dtype)
    return Ref(full(shape, 0, dtype), AbstractRef(ShapedArray(shape, dtype), memory_space))


def freeze(ref: Ref):
    """The final value of ``ref``; the ref cannot be used afterwards (``jax.freeze``)."""
    if not isinstance(ref, Ref):
        raise TypeError(f"freeze: expected a mutable array reference, got {type(ref).__name__}")
    value = ref[...]
    ref._freed = True
    return value


def free_ref(ref: Ref) -> tuple:
    """Invalidate ``ref`` (``jax.free_ref``)."""
    if not isinstance(ref, Ref):
        raise TypeError(f"free_ref: expected a mutable array reference, got "
                        f"{type(ref).__name__}")
    ref._get_value()
    ref._freed = True
    return ()


def is_ref(x) -> bool:
    return isinstance(x, Ref)


# ---- threading refs through a traced function -------------------------------------------

def run_with_refs(refs: Sequence[Ref], values: Sequence[Any], fn: Callable[[], Any]):
    """Run ``fn()`` with each ref holding the matching value of the *current* trace;
    returns ``(fn's result, the refs' final values)`` and restores the refs."""
    saved = [(r._value, r._trace) for r in refs]
    trace = trace_state.trace
    for r, v in zip(refs, values):
        r._value, r._trace = v, trace
    try:
        out = fn()
        finals = [r._value for r in refs]
    finally:
        for r, (v, t) in zip(refs, saved):
            r._value, r._trace = v, t
    return out, finals


def returned_ref_error(api: str, fun_name: str, ref: Ref, where: str) -> ValueError:
    """jax's error for a ref among a traced function's results."""
    src = ref._source
    made = (f"created on line {src.file}:{src.line}" if src is not None
            else "created inside the function")
    return ValueError(
        f"function {fun_name} traced for {api} returned a mutable array reference of type "
        f"{ref.aval}, but mutable array references cannot be returned.\n\n"
        f"The returned mutable array was {where or made}.")


def is_outer_ref(ref: Ref) -> bool:
    """Does ``ref`` belong to the current trace or one enclosing it?"""
    cur = trace_state.trace
    return ref._trace is cur or ref._trace.is_ancestor_of_or_self(cur)


def threading_refs(run: Callable[[list], Any]) -> Any:
    """``run(refs)`` with ``refs = []``; each time the trace of a body finds one more
    closed-over ref of this or an enclosing trace (``ClosedOverRef``), again with it added.
    ``run`` threads the refs' values through its loop or branches and writes them back."""
    from minijax.core.ref import ClosedOverRef
    refs: list = []
    while True:
        try:
            return run(list(refs))
        except ClosedOverRef as e:
            if any(e.ref is r for r in refs) or not is_outer_ref(e.ref):
                raise
            refs.append(e.ref)


def write_back(refs: Sequence[Ref], values: Sequence[Any]) -> None:
    for r, v in zip(refs, values):
        r._set_value(v)
