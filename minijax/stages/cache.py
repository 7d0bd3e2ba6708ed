"""The executable cache: one compiled program per computation, whoever asks for it.

Its users are ``jit`` calls (``stages/jit.py``), ``Lowered.compile`` (``stages/stages.py``),
the ``jit`` primitive run eagerly (``stages/jit_primitive.py``) and the fused numpy
functions (``stages/eager.py``, which are ``jit``s). All of them go through ``Traced`` ->
``Lowered`` -> ``Compiled`` and ask ``EXECUTABLES`` first:

1. *By trace entry*: ``(TraceEntry, metadata context, device, compiler options)`` ->
   ``Compiled``. The table lives on the entry (``TraceEntry.calls``), so it goes
   when the entry does (``jit``'s trace cache bounds them). A hit needs no lowering.
2. *By module*: on a miss the entry is lowered, and the module text (a digest of
   it), the result types, the options, the parameter count, the donated parameters
   and the device find an executable compiled for another entry that lowered to
   the same module (``jit(jnp.sin)`` and ``jnp.sin`` called eagerly). Held weakly:
   an executable lives as long as a ``Compiled`` uses it. Modules that call back
   into Python or are checked for NaNs are bound to their own callables and are
   not shared (``compiler.compile_module`` asks this table).

``jit`` equations run eagerly find the entry their jaxpr was traced to
(``register``/``entry_of``), so ``eval_jaxpr`` of a jaxpr holding ``jit(f)`` runs the
executable ``jit(f)(x)`` compiled. Those whose jaxpr no ``jit`` traced (the jvp or
transpose of ``jit(f)`` under ``grad`` run eagerly, new at every call) get an entry
each, and their executables stay alive among the latest ``minijax_eager_cache_size``
(``keep``), so the next call finds them by module.
"""

from __future__ import annotations

import hashlib
import weakref
from typing import Any

from minijax.core.lru import LRUCache

__all__ = ["EXECUTABLES", "ExecutableCache"]


class ExecutableCache:
    """The executables of the process, by trace entry and by module (module docstring)."""

    def __init__(self):
        # module key -> weakref to the runtime Executable compiled for it
        self._modules = LRUCache("minijax_jit_cache_size")
        # ClosedJaxpr -> weakref to the TraceEntry it was traced as (jit's entries), or a
        # TraceEntry made for it (whose own jaxpr is another ClosedJaxpr object, so the
        # value does not keep the key alive)
        self._jaxprs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # the executables of the latest jit equations made by transformations run eagerly
        # (their jaxprs are new at every call of grad(jit(f)), the modules the same)
        self._eager = LRUCache("minijax_eager_cache_size")

    # -- by trace entry

    @staticmethod
    def get(entry, metadata: tuple, device, options: tuple):
        """The ``Compiled`` of ``entry`` for this context, device and options, or None."""
        return entry.calls.get((metadata, device, options))

    @staticmethod
    def put(entry, metadata: tuple, device, options: tuple, compiled) -> None:
        entry.calls[metadata, device, options] = compiled

    # -- by module

    @staticmethod
    def module_key(text: str, out_avals, options: tuple, num_args: int | None,
                   donated, device) -> tuple | None:
        """The key of a module's executable, or None for one that is not shared."""
        if getattr(text, "host_callbacks", ()) or getattr(text, "debug_jaxpr", None) is not None:
            return None
        digest = hashlib.blake2b(text.encode(), digest_size=20).digest()
        return (digest, tuple((a.shape, a.dtype, a.weak_type) for a in out_avals), options,
                num_args, tuple(donated), device)

    def executable(self, key: tuple | None):
        """The live executable compiled for ``key``, or None."""
        if key is None:
            return None
        ref = self._modules.get(key)
        return None if ref is None else ref()

    def put_executable(self, key: tuple | None, exe: Any) -> None:
        if key is not None:
            self._modules[key] = weakref.ref(exe)

    # -- jit equations

    def register(self, entry) -> None:
        """Let ``jit`` equations holding ``entry``'s jaxpr run its executables."""
        self._jaxprs[entry.closed] = weakref.ref(entry)

    def entry_of(self, closed):
        """The entry ``closed`` was traced as or made for (``adopt``), or None."""
        found = self._jaxprs.get(closed)
        if type(found) is weakref.ref:
            found = found()
        return found

    def adopt(self, closed, entry) -> None:
        """Keep ``entry``, made to run the jaxpr ``closed`` (its own jaxpr a copy of it),
        as long as ``closed`` lives."""
        self._jaxprs[closed] = entry

    def keep(self, exe) -> None:
        """Keep ``exe`` alive while it is among the latest ``minijax_eager_cache_size``
        kept, so that the module layer finds it for the next equation of that module."""
        self._eager[id(exe)] = exe

    def clear(self) -> None:
        self._modules.clear()
        self._jaxprs.clear()
        self._eager.clear()


EXECUTABLES = ExecutableCache()
