"""``jax.extend.linear_util``: wrapped functions and their transformations, as flax and
equinox use them (``wrap_init``, ``WrappedFun.call_wrapped``, ``transformation*``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["StoreException", "WrappedFun", "cache", "merge_linear_aux", "transformation",
           "transformation2", "transformation_with_aux", "transformation_with_aux2",
           "wrap_init"]


class StoreException(Exception):
    pass


class Store:
    """A value set once by a transformation (its auxiliary output)."""

    def __init__(self):
        self._val = _EMPTY

    def store(self, val) -> None:
        if self._val is not _EMPTY:
            raise StoreException("Store occupied")
        self._val = val

    def reset(self) -> None:
        self._val = _EMPTY

    @property
    def val(self):
        if self._val is _EMPTY:
            raise StoreException("Store empty")
        return self._val

    def __nonzero__(self):
        return self._val is not _EMPTY

    __bool__ = __nonzero__


_EMPTY = object()


class WrappedFun:
    """``f`` with transformations applied around it (innermost first) and fixed params."""

    def __init__(self, f: Callable, transforms: tuple = (), params: tuple = (),
                 debug_info: Any = None):
        self.f = f
        self.transforms = transforms
        self.params = params
        self.debug_info = debug_info

    @property
    def __name__(self) -> str:
        return getattr(self.f, "__name__", "<unnamed wrapped function>")

    def wrap(self, gen: Callable, gen_static_args: tuple, out_store) -> WrappedFun:
        return WrappedFun(self.f, ((gen, gen_static_args, out_store), *self.transforms),
                          self.params, self.debug_info)

    def call_wrapped(self, *args, **kwargs):
        """Call ``f`` through the transformations, outermost first."""
        call = (lambda *a, **k: self.f(*a, **dict(self.params), **k))
        for gen, static, store in reversed(self.transforms):
            call = _apply(gen, static, store, call)
        return call(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Wrapped function {self.__name__}"


def _apply(gen, static, store, inner):
    def call(*args, **kwargs):
        if store is None:
            return gen(inner, *static, *args, **kwargs)
        return gen(inner, store, *static, *args, **kwargs)
    return call


def wrap_init(f: Callable, params=None, *, debug_info: Any = None) -> WrappedFun:
    return WrappedFun(f, (), tuple(sorted((params or {}).items())), debug_info)


def transformation2(gen: Callable, fun: WrappedFun, *gen_static_args) -> WrappedFun:
    """``gen(f, *static, *args)`` wrapped around ``fun``."""
    return fun.wrap(gen, gen_static_args, None)


def transformation_with_aux2(gen: Callable, fun: WrappedFun, *gen_static_args,
                             use_eq_store: bool = False):
    """``gen(f, store, *static, *args)`` around ``fun``; returns ``(fun, aux thunk)``."""
    store = Store()
    return fun.wrap(gen, gen_static_args, store), (lambda: store.val)


transformation = transformation2
transformation_with_aux = transformation_with_aux2


def merge_linear_aux(aux1, aux2):
    try:
        out1 = aux1()
    except StoreException:
        return False, aux2()
    return True, out1


def cache(call: Callable, *, explain: Callable | None = None):
    """Memoize ``call(fun, *args)`` per wrapped function and arguments."""
    memo: dict = {}

    def cached(fun: WrappedFun, *args):
        key = (fun.f, fun.transforms, fun.params, args)
        try:
            hit = memo.get(key)
        except TypeError:
            return call(fun, *args)
        if hit is None:
            hit = memo[key] = call(fun, *args)
        return hit

    cached.cache_clear = memo.clear
    return cached
