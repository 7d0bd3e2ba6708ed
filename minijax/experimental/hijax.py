"""``jax.experimental.hijax``: "high-level" types and primitives, as far as flax.nnx uses
them at import time.

What works: the names exist with jax's shapes, so a library defines its hi types and
primitives as in jax — ``HiPrimitive`` subclasses (their ``impl``, ``abstract_eval``
(returning ``(aval, effects)``), ``jvp``, ``transpose``, ``batch(axis_data, ...)`` and
``to_lojax`` methods become the primitive's minijax rules), ``MutableHiType`` /
``HiType`` avals with ``aval_method`` / ``aval_property`` members, ``register_hitype``,
``control_flow_allowed_effects``.

What does not: minijax's tracers hold arrays only, so a value of a registered hi type
cannot itself be an argument or result of a traced function (``jit`` raises TypeError:
not a valid minijax type). flax.nnx uses hi types only for its opt-in ``hijax``
variables; its default (pytree) variables do not need them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

from minijax.core.aval import AbstractValue
from minijax.extend.core import Primitive
from minijax.interpreters import mlir
from minijax.interpreters.batching import AxisData
from minijax.transforms.ad import Zero, instantiate, is_undefined

__all__ = ["AbstractValue", "AvalMutableQDD", "AvalQDD", "HiPrimitive", "HiType",
           "MutableHiType", "Zero", "aval_method", "aval_property",
           "control_flow_allowed_effects", "cur_qdd", "instantiate_zeros", "is_undefined_primal",
           "register_hitype"]

instantiate_zeros = instantiate
is_undefined_primal = is_undefined


class HiType(AbstractValue):
    """The aval of a high-level (non-array) type."""

    __slots__ = ()
    mutable = False


class MutableHiType(HiType):
    """The aval of a high-level type with mutable state."""

    __slots__ = ()
    mutable = True


class AvalQDD(NamedTuple):
    aval: Any
    qdd: Any


class AvalMutableQDD(NamedTuple):
    aval: Any
    mutable_qdd: Any


class aval_method:
    """A method of a hi type's aval, callable on its values: ``fun(value, ...)``."""

    def __init__(self, fun: Callable):
        self.fun = fun
        functools.update_wrapper(self, fun)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self.fun, obj)


class aval_property:
    """A property of a hi type's aval, readable on its values."""

    def __init__(self, fget: Callable):
        self.fget = fget

    def __get__(self, obj, objtype=None):
        return self if obj is None else self.fget(obj)


class _EffectTypes:
    """Effect types that control flow (cond, scan, while) lets through."""

    def __init__(self):
        self._types: set[type] = set()

    def add_type(self, t: type) -> None:
        self._types.add(t)

    def contains(self, effect) -> bool:
        return isinstance(effect, tuple(self._types))

    __contains__ = contains


control_flow_allowed_effects = _EffectTypes()

# hi value type -> its typeof function (see the module docstring for what is supported)
hitype_registry: dict[type, Callable] = {}


def register_hitype(val_cls: type, typeof_fn: Callable) -> None:
    hitype_registry[val_cls] = typeof_fn


def cur_qdd(x):
    """``jax.experimental.cur_qdd``: the current quasi-dynamic data (the type state) of
    a value of a mutable hi type, what its ``cur_qdd()`` method reports. A traced array
    has none (None, as jax's tracers without a mutable type state); minijax traces arrays
    only, so a hi value is always its concrete self here."""
    from minijax.core.trace import Tracer
    if isinstance(x, Tracer):
        return None
    return x.cur_qdd()


class HiPrimitive(Primitive):
    """A primitive whose rules are methods of the subclass (jax's hijax convention)."""

    def __init__(self, name: str):
        super().__init__(name)
        cls = type(self)
        for slot in ("impl", "jvp"):
            if _defines(cls, slot):
                # the bound method (``getattr(self, slot)`` would find the None that
                # Primitive.__init__ put in the instance's dict)
                setattr(self, slot, getattr(cls, slot).__get__(self))
        if _defines(cls, "abstract_eval"):
            method = self.abstract_eval_rule = cls.abstract_eval.__get__(self)

            def abstract_eval(*avals, **params):
                out = method(*avals, **params)
                return out[0] if isinstance(out, tuple) and len(out) == 2 and \
                    isinstance(out[1], (set, frozenset)) else out
            self.abstract_eval = abstract_eval
        if _defines(cls, "transpose"):
            self.transpose = cls.transpose.__get__(self)
        if _defines(cls, "batch"):
            batch = cls.batch.__get__(self)
            self.batch = lambda trace, vals, dims, **params: batch(
                AxisData(trace.axis_name, trace.axis_size), vals, dims, **params)
        if _defines(cls, "to_lojax"):
            lo = cls.to_lojax.__get__(self)
            self.lowering = None
            mlir.register_lowering(self, mlir.lower_fun(lo, multiple_results=True))


def _defines(cls: type, name: str) -> bool:
    return any(name in k.__dict__ for k in cls.__mro__ if k not in
               (HiPrimitive, Primitive, Primitive.__mro__[1], object))

