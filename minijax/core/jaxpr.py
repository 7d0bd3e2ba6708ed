"""The typed IR: variables, literals, equations and jaxprs.

A jaxpr is a list of equations in SSA form::

    { lambda a:f32[3] ; b:f32[3]. let c:f32[3] = sin b; d:f32[3] = mul c a in (d,) }

``a`` is a constvar (bound by a ``ClosedJaxpr``'s ``consts``), ``b`` an input,
``c``/``d`` outputs of equations. Each equation records the primitive, its
params, the metadata context (``ctx``) and the user source line it came from.
"""

from __future__ import annotations

from typing import Any, NamedTuple
from collections.abc import Sequence

import numpy as np

from minijax.core.aval import ShapedArray
from minijax.core import dtypes
from minijax.core.effects import eqn_effects


class Var:
    """A variable: an SSA name with a type. Identity is the name (a Var hashes and compares
    by identity, so tables of Vars can be keyed by the Vars themselves)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


class DropVar(Var):
    """An output nobody reads (printed ``_``)."""

    __slots__ = ()


class Literal:
    """A scalar constant written inline in an equation (``1.0:f32[]``)."""

    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({self.val!r}:{self.aval.str_short()})"


Atom = Var | Literal


class SourceInfo(NamedTuple):
    """Where in the user's code an equation was created."""

    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f'{self.file}:{self.line} ({self.function})'


class EqnContext(NamedTuple):
    """Context in force when an equation was made: XLA metadata and the name stack.

    ``metadata`` is a sorted tuple of ``(key, value_string)`` pairs; ``name_stack``
    a tuple of transform names (``("jvp",)``, ``("transpose",)``...).
    """

    metadata: tuple = ()
    name_stack: tuple = ()


EMPTY_CTX = EqnContext()


class JaxprEqn:
    __slots__ = ("primitive", "invars", "outvars", "params", "ctx", "source")

    def __init__(self, primitive, invars: list, outvars: list, params: dict,
                 ctx: EqnContext = EMPTY_CTX, source: SourceInfo | None = None):
        self.primitive = primitive
        self.invars = invars
        self.outvars = outvars
        self.params = params
        self.ctx = ctx
        self.source = source

    @property
    def effects(self) -> frozenset:
        """The effects of this equation (its primitive's and its sub-jaxprs'), as jax's
        ``eqn.effects``."""
        return eqn_effects(self)

    def replace(self, **kw) -> JaxprEqn:
        new = JaxprEqn(self.primitive, self.invars, self.outvars, self.params, self.ctx,
                       self.source)
        for k, v in kw.items():
            setattr(new, k, v)
        return new

    def __repr__(self) -> str:
        return pp_eqn(self, _Names())


class Jaxpr:
    """An open jaxpr: constvars and invars in, outvars out."""

    __slots__ = ("constvars", "invars", "outvars", "eqns", "debug_info", "__weakref__")

    def __init__(self, constvars: Sequence[Var], invars: Sequence[Var],
                 outvars: Sequence[Atom], eqns: Sequence[JaxprEqn], debug_info=None):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)
        self.debug_info = debug_info

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def __str__(self) -> str:
        return pp_toplevel_jaxpr(self)

    __repr__ = __str__


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars."""

    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        assert len(jaxpr.constvars) == len(consts)
        self.jaxpr = jaxpr
        self.consts = list(consts)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return self.jaxpr.in_avals

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.jaxpr.out_avals

    @property
    def eqns(self) -> list[JaxprEqn]:
        return self.jaxpr.eqns

    def __str__(self) -> str:
        return pp_toplevel_jaxpr(self.jaxpr)

    __repr__ = __str__


def dce_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Drop equations whose outputs are never used, unless they have side effects
    (``core/effects.py``: host callbacks that print or do I/O stay)."""
    kept, _ = _live_eqns(jaxpr)
    if len(kept) == len(jaxpr.eqns):
        return jaxpr
    kept.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, kept, jaxpr.debug_info)


def used_invars(jaxpr: Jaxpr) -> list[bool]:
    """For each input of ``jaxpr``, whether what remains of it after ``dce_jaxpr`` (its
    outputs and live equations) reads it."""
    _, live = _live_eqns(jaxpr)
    return [v in live for v in jaxpr.invars]


def _live_eqns(jaxpr: Jaxpr) -> tuple[list[JaxprEqn], set[Var]]:
    """The equations ``dce_jaxpr`` keeps (last first) and the Vars they and the outputs
    read (Vars hash by identity)."""
    live = {v for v in jaxpr.outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            if v in live:
                break
        else:
            if not eqn_effects(eqn):
                continue
        kept.append(eqn)
        for v in eqn.invars:
            if type(v) is not Literal:
                live.add(v)
    return kept, live


# ---- pretty printing ----------------------------------------------------------

def _letters(n: int) -> str:
    s = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        s = chr(ord("a") + r) + s
    return s


class _Names:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.fresh = 0  # letters handed out (suggested names reuse one)
        self.shared: dict[int, str] = {}  # id(jaxpr) -> its name, for jaxprs printed first
        self.shared_names: set[str] = set()  # (no variable takes one of these names)

    def __call__(self, atom) -> str:
        if isinstance(atom, Literal):
            return pp_literal(atom)
        if isinstance(atom, DropVar):
            return "_"
        key = id(atom)
        name = self.names.get(key)
        if name is None:
            name = _letters(self.fresh)
            self.fresh += 1
            while name in self.shared_names:
                name = _letters(self.fresh)
                self.fresh += 1
            self.names[key] = name
        return name

    def binder(self, v) -> str:
        return f"{self(v)}:{v.aval.str_short()}"

    def suggest(self, for_vars, like_vars) -> None:
        """Name the unnamed Vars ``for_vars`` as the ``like_vars`` they stand for (a
        sub-jaxpr's binders after the equation's operands and results, as jax prints
        ``jit``); a Var passed twice lends its name once."""
        if len(for_vars) != len(like_vars):
            return
        lent = set()
        for v, like in zip(for_vars, like_vars):
            if (isinstance(like, Var) and id(like) not in lent and isinstance(v, Var)
                    and id(v) not in self.names):
                lent.add(id(like))
                self.names[id(v)] = self(like)


def pp_literal(lit: Literal) -> str:
    val = lit.val
    if isinstance(val, np.ndarray):
        val = val.item() if val.ndim == 0 else val
    if isinstance(val, (bool, np.bool_)):
        s = str(bool(val))
    elif dtypes.is_float(lit.aval.dtype) and not isinstance(val, np.ndarray):
        s = repr(float(val))
    else:
        s = str(val)
    return f"{s}:{lit.aval.str_short()}"


class FreshNames:
    """Wrap a jaxpr param so it prints with its own variable names."""

    __slots__ = ("jaxpr",)

    def __init__(self, jaxpr):
        self.jaxpr = jaxpr


class SameNames(FreshNames):
    """Wrap a jaxpr param whose binders print with the names of the equation's operands
    and results, other variables continuing the enclosing names (as jax's ``jit``)."""

    __slots__ = ()


def _is_jaxpr_param(v) -> bool:
    if isinstance(v, (Jaxpr, ClosedJaxpr, FreshNames)):
        return True
    return isinstance(v, (tuple, list)) and bool(v) and all(
        isinstance(x, (Jaxpr, ClosedJaxpr)) for x in v)


def _pp_param(v, names: _Names, indent: int) -> str:
    if isinstance(v, SameNames):
        return _pp_param(v.jaxpr, names, indent)
    if isinstance(v, FreshNames):
        return _pp_param(v.jaxpr, _Names(), indent)
    if isinstance(v, ClosedJaxpr):
        v = v.jaxpr
    if isinstance(v, Jaxpr):
        shared = names.shared.get(id(v))
        return shared if shared is not None else pp_jaxpr(v, indent, names=names)
    if _is_jaxpr_param(v):
        pad = " " * (indent + 2)
        inner = "".join(f"\n{pad}{_pp_param(x, names, indent + 2)}" for x in v)
        return f"({inner}\n{' ' * indent})"
    if isinstance(v, np.dtype):
        return v.name
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    return str(v)


def pp_eqn(eqn: JaxprEqn, names: _Names, indent: int = 4) -> str:
    """One equation; params go one per line when the equation does not fit in 80 columns
    or holds a sub-jaxpr (as jax prints)."""
    params = eqn.params
    shown = getattr(eqn.primitive, "pp_params", None)
    if shown is not None:
        params = shown(params)
        for v in params.values():
            if isinstance(v, SameNames):
                inner = v.jaxpr.jaxpr if isinstance(v.jaxpr, ClosedJaxpr) else v.jaxpr
                if id(inner) in names.shared:
                    continue
                names.suggest(inner.invars, eqn.invars)
                names.suggest(inner.outvars, eqn.outvars)
    lhs = " ".join(names.binder(v) for v in eqn.outvars)
    rhs = " ".join(names(v) for v in eqn.invars)
    # no results (a debug callback): no "=", as jax prints it
    head = f"{lhs} = {eqn.primitive.name}" if eqn.outvars else eqn.primitive.name
    if not params:
        return f"{head} {rhs}".rstrip()
    items = list(params.items())
    texts = [_pp_param(v, names, indent) for _, v in items]
    if not any("\n" in t for t in texts):  # sub-jaxprs too, when each fits on a line
        flat = "[" + " ".join(f"{k}={t}" for (k, _), t in zip(items, texts)) + "]"
        # jax keeps params on the line when the text up to "]" fits (operands don't count)
        if indent + len(f"{head}{flat}") <= 80:
            return f"{head}{flat} {rhs}".rstrip()
    pad = " " * (indent + 2)
    body = "".join(f"\n{pad}{k}={_pp_param(v, names, indent + 2)}" for k, v in items)
    return f"{head}[{body}\n{' ' * indent}] {rhs}".rstrip()


def pp_jaxpr(jaxpr: Jaxpr, indent: int = 0, names: _Names | None = None, start: int = 0,
             suffix: str = "") -> str:
    """Print like JAX: on one line when it is short, else one equation per line. The text
    begins ``start`` columns after ``indent`` and ``suffix`` follows it on its line."""
    names = names or _Names()
    consts = " ".join(names.binder(v) for v in jaxpr.constvars)
    ins = " ".join(names.binder(v) for v in jaxpr.invars)
    head = f"{{ lambda {consts}; {ins}. let" if consts else f"{{ lambda ; {ins}. let"
    eqn_strs = [pp_eqn(e, names, indent + 4) for e in jaxpr.eqns]
    outs = ", ".join(names(v) for v in jaxpr.outvars)
    tail = f"in ({outs}{',' if len(jaxpr.outvars) == 1 else ''}) }}"
    one_line = f"{head} {'; '.join(eqn_strs)} {tail}"
    if indent + start + len(one_line) + len(suffix) <= 80 and \
            not any("\n" in s for s in eqn_strs):
        return one_line
    pad = " " * (indent + 4)
    body = "".join(f"\n{pad}{s}" for s in eqn_strs)
    return f"{head}{body}\n{' ' * (indent + 2)}{tail}"


def jaxprs_in_params(params: dict):
    """The jaxprs among equation params (ClosedJaxprs' inner jaxprs included)."""
    for v in params.values():
        for x in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(x, ClosedJaxpr):
                yield x.jaxpr
            elif isinstance(x, Jaxpr):
                yield x


def pp_toplevel_jaxpr(jaxpr: Jaxpr) -> str:
    """``jaxpr`` printed as jax prints a jaxpr: results of its equations that nothing
    uses show as ``_``, and sub-jaxprs met more than once (or of more than 10
    equations) print first, as ``let <name> = { ... } in``, and by name where used."""
    names = _Names()
    used = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            if id(v) not in used:
                names.names[id(v)] = "_"
        used.update(id(a) for a in eqn.invars if isinstance(a, Var))
    counts: dict[int, list] = {}  # id -> [jaxpr, uses, name]; first met first
    queue = [jaxpr]
    while queue:
        j = queue.pop(0)
        entry = counts.setdefault(id(j), [j, 0, "jaxpr"])
        entry[1] += 1 if j is jaxpr or len(j.eqns) <= 10 else 2
        for eqn in j.eqns:
            name = eqn.params.get("name")
            for sub in jaxprs_in_params(eqn.params):
                queue.append(sub)
                if isinstance(name, str) and id(sub) not in counts:
                    counts[id(sub)] = [sub, 0, name.strip("<>")]
    taken: dict[str, int] = {}
    shared = []
    for j, uses, name in counts.values():
        if uses < 2:
            continue
        n = taken.get(name, 0)
        taken[name] = n + 1
        if n:
            name += str(n)
            taken[name] = taken.get(name, 0) + 1
        names.shared[id(j)] = name
        names.shared_names.add(name)
        shared.append((name, j))
    out = []
    for name, j in shared:
        text = pp_jaxpr(j, names=names, start=len(f"let {name} = "), suffix=" in")
        out.append(f"let {name} = {text} in\n")
    return "".join(out) + pp_jaxpr(jaxpr, names=names)
