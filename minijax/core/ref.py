"""The type of a mutable array reference and the rule for where a ref may be used.

``AbstractRef`` is the type of a ref (``jax.typeof(minijax.new_ref(x))``) and of a
Pallas kernel's buffers. A top-level ref (``minijax.lax.state.Ref``) holds a value
of the trace it was made in; using it while tracing an inner jaxpr (the body of a
``jit`` or ``scan`` closing over it) is noticed here: ``check_ref_scope`` raises
``_RefEscape`` for the innermost jaxpr trace it crosses, which ``trace_to_jaxpr``
turns into ``ClosedOverRef`` for the API that started that trace. That API then
threads the ref's value through its jaxpr (an input and an output of a ``jit``,
a carry of a ``scan``) and retraces; one that cannot raises ``ClosedOverRef``'s
message to the user.
"""

from __future__ import annotations

from typing import Any

from minijax.core.aval import ShapedArray


class AbstractRef:
    """The type of a ref: a mutable buffer of ``inner_aval``'s shape and dtype."""

    __slots__ = ("inner_aval", "memory_space", "_hash")
    array_abstraction_level = 2

    def __init__(self, inner_aval: ShapedArray, memory_space: Any = None):
        self.inner_aval = inner_aval
        self.memory_space = memory_space
        self._hash = hash((inner_aval, memory_space))

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: self.inner_aval.ndim)
    size = property(lambda self: self.inner_aval.size)
    weak_type = False

    def strip_weak_type(self) -> AbstractRef:
        return self

    def __eq__(self, other) -> bool:
        return (type(other) is AbstractRef and self.inner_aval == other.inner_aval
                and self.memory_space == other.memory_space)

    def __hash__(self) -> int:
        return self._hash

    def _space(self) -> str:
        ms = self.memory_space
        return f"<{getattr(ms, 'value', ms)}>" if ms is not None else ""

    def str_short(self) -> str:
        return f"Ref{self._space()}{{{self.inner_aval.str_short()}}}"

    def __str__(self) -> str:
        return f"Ref{self._space()}{{{self.inner_aval}}}"

    __repr__ = __str__  # as jax: Ref{float32[3]}


def is_ref_aval(aval: Any) -> bool:
    return type(aval) is AbstractRef


class ClosedOverRef(TypeError):
    """A ref made outside a traced function was used inside it where minijax cannot
    thread it through (``.ref`` is the ref); ``jit``, ``scan``, ``fori_loop`` and
    ``while_loop`` catch it and retrace with the ref's value as an input and output."""

    def __init__(self, ref, api: str = "this transformation"):
        self.ref = ref
        super().__init__(
            f"a mutable array reference of type {ref.aval} created outside {api} was used "
            f"inside it; minijax threads such closed-over refs through jit, scan, fori_loop "
            f"and while_loop only: pass the ref as an argument, or read it (ref[...]) outside "
            f"and pass the value")


class _RefEscape(Exception):
    """Internal: ``ref`` was used inside the jaxpr trace ``trace`` (not its own)."""

    def __init__(self, ref, trace):
        super().__init__("internal: a closed-over ref")
        self.ref = ref
        self.trace = trace


def check_ref_scope(ref, current) -> None:
    """Raise ``_RefEscape`` if a jaxpr trace lies between ``current`` and the trace
    ``ref`` belongs to (the ref is closed over by that jaxpr)."""
    owner = ref._trace
    t = current
    while t is not None and t is not owner:
        if getattr(t, "ref_scope", False):  # a jaxpr trace_to_jaxpr made for an API
            raise _RefEscape(ref, t)
        t = t.parent
