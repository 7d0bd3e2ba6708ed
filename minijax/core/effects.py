"""Side effects of equations: what keeps host callbacks alive and in order.

Most primitives are pure: an equation whose outputs nobody reads may be dropped
(``dce_jaxpr``). A primitive with side effects (a host callback that prints,
writes a file...) declares them with an ``"effects"`` rule, ``params -> frozenset
of Effect``, in ``prim.rules``. An equation's effects are its primitive's plus
those of any jaxpr among its params (``jit``, ``cond``, ``scan``, ``while``...
carry their bodies' effects without saying so), and a jaxpr's are the union of its
equations'. Equations with effects are never dropped; ordered effects are also
kept in program order when lowered (a token threads them) and executed
(``runtime/callback.py``).
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["Effect", "NO_EFFECTS", "debug_effect", "eqn_effects", "has_ordered",
           "io_effect", "jaxpr_effects", "ordered_debug_effect", "ordered_io_effect"]


class Effect:
    """One kind of side effect; ``ordered`` ones keep their program order.

    Libraries define their own kinds as jax's extension API does, by subclassing
    (``class MyEffect(Effect): ...; my_effect = MyEffect()``): the name is then the
    class's."""

    __slots__ = ("name", "ordered")

    def __init__(self, name: str | None = None, ordered: bool = False):
        self.name = type(self).__name__ if name is None else name
        self.ordered = ordered

    def __repr__(self) -> str:
        return self.name


NO_EFFECTS: frozenset = frozenset()
debug_effect = Effect("Debug")
ordered_debug_effect = Effect("OrderedDebug", ordered=True)
io_effect = Effect("IO")
ordered_io_effect = Effect("OrderedIO", ordered=True)


def _sub_jaxprs(value: Any):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _sub_jaxprs(v)
        return
    inner = getattr(value, "jaxpr", None)  # ClosedJaxpr, FreshNames
    if inner is not None and hasattr(inner, "eqns"):
        yield from _sub_jaxprs(inner)
    elif hasattr(value, "eqns") and hasattr(value, "outvars"):  # a Jaxpr
        yield value


def eqn_effects(eqn) -> frozenset:
    """The effects of one equation (its primitive's and its sub-jaxprs')."""
    rule = eqn.primitive.rules.get("effects")
    out = rule(eqn.params) if rule is not None else NO_EFFECTS
    for value in eqn.params.values():
        for sub in _sub_jaxprs(value):
            found = jaxpr_effects(sub)
            if found:
                out = out | found
    return out


# jaxpr -> (number of equations when computed, effects); jaxprs are built once and not
# edited afterwards, the count guards against one that is.
_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def jaxpr_effects(jaxpr) -> frozenset:
    """The union of the effects of ``jaxpr``'s equations (memoized per jaxpr)."""
    hit = _memo.get(jaxpr)
    if hit is not None and hit[0] == len(jaxpr.eqns):
        return hit[1]
    out = NO_EFFECTS
    for eqn in jaxpr.eqns:
        found = eqn_effects(eqn)
        if found:
            out = out | found
    _memo[jaxpr] = (len(jaxpr.eqns), out)
    return out


def has_ordered(effects) -> bool:
    return any(e.ordered for e in effects)
