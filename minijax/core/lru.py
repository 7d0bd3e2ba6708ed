"""Size-bounded caches for minijax's in-memory tables.

Every table that grows with the programs a process runs (traces and executables of
``jit``, eager executables, memo tables of abstract evaluation and lowering, device
constants) is an ``LRUCache``: a dict that keeps at most as many entries as a config
flag says and drops the least recently used one first.

=============================  ========  =============================================
flag                           default   bounds
=============================  ========  =============================================
``minijax_jit_cache_size``     4096      argument signatures per ``jit`` function (its
                                         traces, executables and dispatch entries)
``minijax_eager_cache_size``   4096      executables of eagerly run primitives
``minijax_memo_cache_size``    8192      each internal memo table (abstract evaluation,
                                         MLIR types and strings, scalar constants)
=============================  ========  =============================================

Lowering a limit trims the existing caches at once. Example::

    >>> c = LRUCache("minijax_jit_cache_size")
    >>> c["a"] = 1
    >>> c.get("a")
    1
"""

from __future__ import annotations

import collections
import functools
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from minijax.config import config

__all__ = ["LRUCache", "MemoCache", "clear_all", "weak_memo"]

_live: dict[str, weakref.WeakValueDictionary] = {}  # flag -> {id: cache} it bounds


class LRUCache(collections.OrderedDict):
    """A dict of at most ``config.<flag>`` entries; least recently used out first.

    ``get`` and assignment count as uses; plain ``d[key]`` reads and the C dispatcher's
    reads do not (those are the hot paths). When an entry is dropped, the dicts in
    ``clear_on_evict`` are emptied: they are faster indexes into this cache (jit's
    dispatch tables) whose values would otherwise keep dropped entries alive; they
    refill from this cache on their next misses.

    Args:
      flag: the name of the config flag holding the limit (an int >= 1).
      clear_on_evict: dicts to empty whenever an entry is dropped.
    """

    __slots__ = ("_flag", "_clear_on_evict")

    def __init__(self, flag: str, clear_on_evict: Iterable[dict] = ()):
        super().__init__()
        self._flag = flag
        self._clear_on_evict = tuple(clear_on_evict)
        live = _live.get(flag)
        if live is None:
            live = _live[flag] = weakref.WeakValueDictionary()
            config.on_change(flag, lambda _value, flag=flag: _trim_all(flag))
        live[id(self)] = self

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            value = self[key]
            self.move_to_end(key)
        except KeyError:  # absent (or dropped by another thread just now)
            return default
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        try:
            self.move_to_end(key)
        except KeyError:  # dropped by another thread just now
            pass
        if len(self) > getattr(config, self._flag):
            self.trim()

    def trim(self) -> None:
        """Drop the least recently used entries until the limit holds."""
        limit = getattr(config, self._flag)
        dropped = False
        while len(self) > limit:
            try:
                self.popitem(last=False)
            except KeyError:  # emptied meanwhile by another thread
                break
            dropped = True
        if dropped:
            for d in self._clear_on_evict:
                d.clear()

    def __reduce__(self):
        raise TypeError("minijax caches cannot be pickled")


class MemoCache(LRUCache):
    """An ``LRUCache`` for memo tables read on every traced equation (abstract
    evaluation, MLIR types and strings, interned avals, scalar constants): reads do
    not count as uses, so ``get`` is the plain dict lookup, and the entries made
    longest ago are dropped first. Hits cost no reordering (a grad of a 200-layer
    network reads these tables ~50k times)."""

    __slots__ = ()

    get = collections.OrderedDict.get


def weak_memo(key: Callable[[], tuple] = tuple,
              flag: str = "minijax_memo_cache_size") -> Callable:
    """Memoize ``fn(obj, *rest)`` on the identity of ``obj`` (held weakly: its entries go
    when it does), the hashable ``rest`` and ``key()`` (the state the result depends on,
    such as the config's trace key). Transforms of a jaxpr memoized this way give the
    same jaxpr object each time, so what is derived from them in turn is memoized too
    (jax's ``weakref_lru_cache``)."""
    def deco(fn: Callable) -> Callable:
        cache = MemoCache(flag)

        @functools.wraps(fn)
        def memoized(obj, *rest):
            k = (id(obj), rest, key())
            hit = cache.get(k)
            if hit is not None and hit[0]() is obj:
                return hit[1]
            value = fn(obj, *rest)
            cache[k] = (weakref.ref(obj, lambda _, k=k: cache.pop(k, None)), value)
            return value
        memoized.cache = cache
        return memoized
    return deco


def _trim_all(flag: str) -> None:
    for cache in list(_live.get(flag, {}).values()):
        cache.trim()


def clear_all() -> None:
    """Empty every live cache and its fast indexes (``minijax.clear_caches``)."""
    for live in list(_live.values()):
        for cache in list(live.values()):
            cache.clear()
            for d in cache._clear_on_evict:
                d.clear()
