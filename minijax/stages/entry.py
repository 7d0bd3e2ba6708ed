"""``TraceEntry``: what one argument signature of a jitted function traced to.

``jit`` keeps one per signature (``stages/jit.py``); ``Traced``, ``Lowered`` and
``Compiled`` carry theirs, and a deserialized ``Compiled`` is rebuilt around one
(``stages/serialization.py``; its jaxpr is then None). Its ``calls`` table holds
its ``Compiled`` executables (``stages/cache.py``).
"""

from __future__ import annotations

from minijax.core import dtypes
from minijax.core.effects import jaxpr_effects
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, dce_jaxpr, used_invars
from minijax.core.lru import LRUCache
from minijax.core.shape_poly import DimExpr
from minijax._pytree import tree_flatten
from minijax.stages.compiler import donation_aliases

__all__ = ["TraceEntry", "flat_entry", "forwarded_inputs", "param_runner", "used_inputs"]


def used_inputs(closed: ClosedJaxpr) -> tuple[int, ...] | None:
    """Indices of the inputs ``closed`` needs once dead equations are gone, or None
    when it needs them all (``jit``'s ``keep_unused=False`` drops the others)."""
    used = used_invars(closed.jaxpr)
    if not all(used) and any(type(d) is DimExpr for v in closed.jaxpr.invars
                             for d in getattr(v.aval, "shape", ())):
        return None  # symbolic shapes: every input is kept (its sizes may be needed), as jax
    kept = tuple(i for i, u in enumerate(used) if u)
    return None if len(kept) == len(used) else kept


class TraceEntry:
    """What one argument signature of a jitted function traced to.

    ``donated``: per input leaf, whether the user donated it; ``kept``: the input
    leaves the executable takes (None: all), the others being unused and dropped
    as jax drops them unless ``keep_unused``; ``aliases``: per input leaf, the
    output it is aliased to (None if not; a dropped leaf never is, so it is not
    deleted); ``unused_donations``: kept donated leaves that no output can reuse
    (warned about at lowering).
    """

    __slots__ = ("closed", "in_tree", "out_tree", "in_avals", "out_avals", "arg_names",
                 "out_paths", "hoisted", "calls", "name", "donated", "has_donation",
                 "aliases", "unused_donations", "statics", "kept", "_pruned", "__weakref__")

    def __init__(self, closed, in_tree, out_tree, in_avals, arg_names, out_paths, hoisted,
                 name, donated, out_avals=None, statics=(), kept=None):
        self.closed = closed
        self.statics = statics  # ((position or name, value), ...) of the static arguments
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.in_avals = in_avals
        self.out_avals = list(closed.out_avals if out_avals is None else out_avals)
        self.arg_names = arg_names
        self.out_paths = out_paths
        self.hoisted = hoisted
        # (XLA metadata, device or None for the default, compiler options) -> Compiled
        self.calls = LRUCache("minijax_jit_cache_size")
        self.name = name
        self.donated = tuple(donated)
        self.kept = kept
        self._pruned = None
        effective = (self.donated if kept is None else
                     tuple(d and i in kept for i, d in enumerate(self.donated)))
        self.has_donation = any(effective)
        if self.has_donation:
            self.aliases, self.unused_donations = donation_aliases(
                in_avals, self.out_avals, effective)
        else:
            self.aliases, self.unused_donations = [None] * len(in_avals), []

    @property
    def aliased_inputs(self) -> list[int]:
        """Indices of the input leaves whose buffers an output reuses."""
        return [i for i, a in enumerate(self.aliases) if a is not None]

    def params(self, values) -> list:
        """The items of ``values`` (one per input leaf) for the kept leaves."""
        return list(values) if self.kept is None else [values[i] for i in self.kept]

    def param_aliased(self) -> list[int]:
        """``aliased_inputs`` as indices among the kept leaves (the parameters)."""
        return [j for j, a in enumerate(self.params(self.aliases)) if a is not None]

    def pruned_jaxpr(self) -> ClosedJaxpr:
        """The jaxpr with only the kept inputs (the lowered ``main``'s parameters)."""
        if self.kept is None:
            return self.closed
        if self._pruned is None:
            j = dce_jaxpr(self.closed.jaxpr)  # a dead equation may read a dropped input
            self._pruned = ClosedJaxpr(
                Jaxpr(j.constvars, self.params(j.invars), j.outvars, j.eqns, j.debug_info),
                self.closed.consts)
        return self._pruned


def flat_entry(closed: ClosedJaxpr, name: str) -> TraceEntry:
    """An entry for a jaxpr that no ``jit`` traced (a ``jit`` equation's, run eagerly):
    flat arguments and results, nothing donated, every input kept."""
    n_in, n_out = len(closed.in_avals), len(closed.out_avals)
    in_tree = tree_flatten((tuple(range(n_in)), {}))[1]
    out_tree = tree_flatten(list(range(n_out)))[1]
    return TraceEntry(closed, in_tree, out_tree, list(closed.in_avals), None, None, [], name,
                      (False,) * n_in)


def forwarded_inputs(entry: TraceEntry) -> tuple[int, ...] | None:
    """When every output of ``entry`` is one of its input leaves, unchanged (same type,
    weak type included, nothing donated, no side effects): the input leaf index of each
    output. None otherwise. Such a call needs no executable: its outputs are its input
    buffers (``param_runner`` forwards them without running anything)."""
    closed = entry.closed
    if closed is None or entry.has_donation or entry.hoisted or jaxpr_effects(closed.jaxpr):
        return None
    jaxpr = closed.jaxpr
    if not jaxpr.outvars:
        return None
    position = {id(v): i for i, v in enumerate(jaxpr.invars)}
    fwd = []
    for v, aval in zip(jaxpr.outvars, entry.out_avals):
        i = position.get(id(v))
        if i is None or entry.in_avals[i] != aval or aval.dtype == dtypes.float0:
            return None
        fwd.append(i)
    return tuple(fwd)


def param_runner(exe, out_tree, kept, forwarded=None):
    """``exe.runner(out_tree)`` called with one buffer per input leaf: only the kept
    leaves' buffers (``TraceEntry.kept``; None: all) reach the executable.

    ``forwarded`` (``forwarded_inputs``): the outputs are these input leaves' buffers,
    returned as new Arrays over the same buffers without running the executable."""
    if forwarded is not None and out_tree is not None and exe.only_computes:
        from minijax.runtime.array import wrap_buffer
        avals = exe.out_avals
        pairs = tuple(zip(forwarded, avals))
        unflatten = out_tree.unflatten

        def run_forwarded(bufs: list):
            return unflatten([wrap_buffer(bufs[i], aval) for i, aval in pairs])
        return run_forwarded
    run = exe.runner(out_tree)
    if kept is None:
        return run

    def run_kept(bufs: list):
        return run([bufs[i] for i in kept])
    return run_kept
