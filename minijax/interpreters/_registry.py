"""A mapping ``{primitive: rule}`` that reads and writes one rule slot of minijax's
``Primitive`` objects, so jax's registries (``ad.primitive_jvps[p] = rule``) are minijax's."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping

from minijax.core.trace import Primitive, registered_primitives


class RuleRegistry(MutableMapping):
    """``registry[prim] = rule`` sets ``prim.<slot>`` to ``wrap(rule)`` (the rule in
    minijax's calling convention); ``registry[prim]`` gives back the rule as registered
    (or minijax's own rule for its primitives); KeyError where there is none."""

    def __init__(self, slot: str, wrap: Callable | None = None, key: str | None = None):
        self.slot, self.wrap = slot, wrap
        self.key = key or f"_jax_{slot}"  # where the rule as registered is kept

    def _get(self, prim):
        if not isinstance(prim, Primitive):
            return None
        rule = getattr(prim, self.slot, None) if self.slot != "rules" else None
        if rule is None:
            return None
        mine = prim.__dict__.get(self.key)
        return mine[1] if mine is not None and mine[0] is rule else rule

    def __getitem__(self, prim):
        rule = self._get(prim)
        if rule is None:
            raise KeyError(prim)
        return rule

    def __setitem__(self, prim, rule):
        if not isinstance(prim, Primitive):
            raise TypeError(f"expected a Primitive, got {prim!r}")
        wrapped = rule if self.wrap is None else self.wrap(prim, rule)
        setattr(prim, self.slot, wrapped)
        prim.__dict__[self.key] = (wrapped, rule)

    def __delitem__(self, prim):
        if self._get(prim) is None:
            raise KeyError(prim)
        setattr(prim, self.slot, None)
        prim.__dict__.pop(self.key, None)

    def __contains__(self, prim):
        return self._get(prim) is not None

    def __iter__(self):
        return (p for p in registered_primitives() if self._get(p) is not None)

    def __len__(self):
        return sum(1 for _ in self)

    def __repr__(self):
        return f"<registry of the {self.slot} rules of minijax's primitives>"
