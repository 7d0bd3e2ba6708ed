"""Symbolic dimensions (shape polymorphism), as ``jax.export``'s dimension expressions.

A ``DimExpr`` is a polynomial with integer coefficients over *factors*: dimension
variables (``b``) and the operations ``floordiv``, ``mod``, ``max`` and ``min`` of other
expressions. Arithmetic with ints and other expressions (``+ - *``, ``//``, ``%``,
``divmod``) gives a new expression, or an ``int`` where the result is constant.

Comparisons follow jax: ``==`` is True only where the difference normalizes to 0 (and
False otherwise: ``b == 1`` is False); ``>=``, ``>``, ``<=`` and ``<`` decide from
bounds (each variable is ``>= 1``, narrowed by the scope's constraints) and raise
``InconclusiveDimensionOperation`` where the bounds cannot tell.

    >>> b, n = symbolic_shape("b, n")
    >>> str(2 * b + n - 1), (b * n) // b, b >= 1
    ('2*b + n - 1', n, True)
"""

from __future__ import annotations

import io
import math
import operator
import tokenize
from collections.abc import Callable, Sequence
from typing import Any

from minijax.core import errors as _errors

__all__ = ["DimExpr", "InconclusiveDimensionOperation", "SymbolicScope", "is_symbolic_dim",
           "is_constant_dim", "symbolic_shape", "max_dim", "min_dim", "evaluate",
           "dim_vars_of"]

_FLOORDIV, _MOD, _MAX, _MIN = "floordiv", "mod", "max", "min"
_INF = math.inf


class InconclusiveDimensionOperation(_errors.InconclusiveDimensionOperation):
    """Raised when we cannot conclusively compute with symbolic dimensions."""

    _help_msg = """
This error arises for comparison operations with shapes that
are non-constant, and the result of the operation cannot be represented as
a boolean value for all values of the symbolic dimensions involved.

Please see https://docs.jax.dev/en/latest/export/shape_poly.html#comparison-of-symbolic-dimensions-is-partially-supported
for more details.
"""

    def __init__(self, message: str):
        super().__init__(f"{message}{InconclusiveDimensionOperation._help_msg}")


# ---- representation ------------------------------------------------------------------------
# A factor is ("var", name) or (operation, operand, operand) with DimSize operands.
# A term is a tuple of (factor, exponent >= 1) sorted by _factor_key; () is the constant 1.
# An expression is a tuple of (term, coefficient != 0), largest term first, constant last.

def _size_key(x) -> tuple:
    if isinstance(x, DimExpr):
        return (1, x._key)
    return (0, x)


def _factor_key(f) -> tuple:
    if f[0] == "var":
        return (1, 0, f[1])
    return (2 + sum(len(str(o)) for o in f[1:]), 1, f[0], tuple(_size_key(o) for o in f[1:]))


def _term_key(t) -> tuple:
    size = sum(1 + e * _factor_key(f)[0] for f, e in t)
    return (size, tuple((_factor_key(f), e) for f, e in t))


def _factor_str(f) -> str:
    if f[0] == "var":
        return f[1]
    return f"{f[0]}({', '.join(str(o) for o in f[1:])})"


def _term_str(t) -> str:
    return "*".join(_factor_str(f) if e == 1 else f"{_factor_str(f)}^{e}" for f, e in t)


def _term_mul(t1, t2):
    acc: dict = {}
    for f, e in (*t1, *t2):
        acc[f] = acc.get(f, 0) + e
    return tuple(sorted(acc.items(), key=lambda fe: _factor_key(fe[0])))


def _term_div(t, d):
    """``t / d`` as a term, or None where ``d`` does not divide ``t``."""
    acc = dict(t)
    for f, e in d:
        have = acc.get(f, 0)
        if have < e:
            return None
        if have == e:
            del acc[f]
        else:
            acc[f] = have - e
    return tuple(sorted(acc.items(), key=lambda fe: _factor_key(fe[0])))


class DimExpr:
    """A symbolic dimension size (jax's ``_DimExpr``): see the module docstring."""

    __slots__ = ("_terms", "_scope", "_hash", "_key_cache")

    def __init__(self, terms, scope: SymbolicScope):
        self._terms = tuple(terms)
        self._scope = scope
        self._hash = None
        self._key_cache = None

    # -- construction and normalization
    @staticmethod
    def _normalize(coeffs: dict, scope: SymbolicScope) -> DimSize:
        rules = scope._rules
        if rules:
            changed = True
            while changed:
                changed = False
                for t, c in list(coeffs.items()):
                    rule = rules.get(t)
                    if rule is not None and c % rule[1] == 0:
                        del coeffs[t]
                        _add_into(coeffs, rule[0], c // rule[1])
                        changed = True
        items = [(t, c) for t, c in coeffs.items() if c != 0]
        if not items:
            return 0
        if len(items) == 1 and items[0][0] == ():
            return items[0][1]
        items.sort(key=lambda tc: _term_key(tc[0]), reverse=True)
        return DimExpr(items, scope)

    @staticmethod
    def _from_var(name: str, scope: SymbolicScope) -> DimSize:
        return DimExpr._normalize({((("var", name), 1),): 1}, scope)

    @staticmethod
    def _from_operation(op: str, a, b, scope: SymbolicScope) -> DimSize:
        return DimExpr._normalize({(((op, a, b), 1),): 1}, scope)

    @property
    def scope(self) -> SymbolicScope:
        return self._scope

    @property
    def _key(self) -> tuple:
        k = self._key_cache
        if k is None:
            k = self._key_cache = tuple((_term_key(t), c) for t, c in self._terms)
        return k

    def _coeffs(self) -> dict:
        return dict(self._terms)

    @property
    def _leading(self):
        return self._terms[0]

    def _is_constant(self) -> bool:
        return False

    def _get_vars(self) -> set[str]:
        out: set = set()
        for t, _ in self._terms:
            for f, _e in t:
                if f[0] == "var":
                    out.add(f[1])
                else:
                    for o in f[1:]:
                        if isinstance(o, DimExpr):
                            out |= o._get_vars()
        return out

    get_vars = _get_vars

    def _to_var(self) -> str | None:
        """The variable's name where this expression is one variable."""
        if len(self._terms) == 1:
            t, c = self._terms[0]
            if c == 1 and len(t) == 1 and t[0][1] == 1 and t[0][0][0] == "var":
                return t[0][0][1]
        return None

    # -- printing and hashing
    def __str__(self) -> str:
        parts = []
        for t, c in self._terms:
            sign = "+" if c > 0 else "-"
            if t == ():
                parts.append(f"{sign} {abs(c)}")
            elif abs(c) == 1:
                parts.append(f"{sign} {_term_str(t)}")
            else:
                parts.append(f"{sign} {abs(c)}*{_term_str(t)}")
        s = " ".join(parts)
        return s[2:] if s.startswith("+ ") else s

    __repr__ = __str__

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self._terms, id(self._scope)))
        return self._hash

    def __copy__(self):
        return self  # immutable, and its scope is shared by identity

    def __deepcopy__(self, memo):
        return self

    # -- arithmetic
    def _lin(self, other, k_self: int, k_other: int) -> DimSize:
        other = _ensure(other, self._scope, "arithmetic")
        acc: dict = {}
        _add_into(acc, self, k_self)
        _add_into(acc, other, k_other)
        return DimExpr._normalize(acc, self._scope)

    def __add__(self, other):
        if not _convertible(other):
            return _as_array(self).__add__(other)
        return self._lin(other, 1, 1)

    def __radd__(self, other):
        if not _convertible(other):
            return _as_array(self).__radd__(other)
        return self._lin(other, 1, 1)

    def __sub__(self, other):
        if not _convertible(other):
            return _as_array(self).__sub__(other)
        return self._lin(other, 1, -1)

    def __rsub__(self, other):
        if not _convertible(other):
            return _as_array(self).__rsub__(other)
        return self._lin(other, -1, 1)

    def __neg__(self):
        return self._lin(0, -1, 0)

    def __pos__(self):
        return self

    def __mul__(self, other):
        if not _convertible(other):
            return _as_array(self).__mul__(other)
        other = _ensure(other, self._scope, "mul")
        acc: dict = {}
        o_terms = other._terms if isinstance(other, DimExpr) else (((), other),)
        for t1, c1 in self._terms:
            for t2, c2 in o_terms:
                t = _term_mul(t1, t2)
                acc[t] = acc.get(t, 0) + c1 * c2
        return DimExpr._normalize(acc, self._scope)

    def __rmul__(self, other):
        if not _convertible(other):
            return _as_array(self).__rmul__(other)
        return self.__mul__(other)

    def __pow__(self, power, modulo=None):
        if modulo is not None:
            raise NotImplementedError("__pow__ modulo not implemented")
        if isinstance(power, DimExpr):
            return _as_array(self).__pow__(power)
        if power != int(power):
            raise ValueError("Symbolic dimension cannot be raised to non-integer powers: "
                             f"'{self}' ** '{power}'")
        if power < 0:
            raise ValueError("Symbolic dimension cannot be raised to negative powers: "
                             f"'{self}' ** '{power}'")
        acc: DimSize = 1
        for _ in range(int(power)):
            acc = acc * self
        return acc

    def __rpow__(self, other, modulo=None):
        return _as_array(self).__rpow__(other)

    def __floordiv__(self, divisor):
        if not _convertible(divisor):
            return _as_array(self).__floordiv__(divisor)
        return self._divmod(divisor)[0]

    def __rfloordiv__(self, other):
        if not _convertible(other):
            return _as_array(self).__rfloordiv__(other)
        return _divmod_any(other, self)[0]

    def __mod__(self, divisor):
        if not _convertible(divisor):
            return _as_array(self).__mod__(divisor)
        return self._divmod(divisor)[1]

    def __rmod__(self, other):
        if not _convertible(other):
            return _as_array(self).__rmod__(other)
        return _divmod_any(other, self)[1]

    def __divmod__(self, divisor):
        if not _convertible(divisor):
            return _as_array(self).__divmod__(divisor)
        return self._divmod(divisor)

    def __rdivmod__(self, other):
        if not _convertible(other):
            return _as_array(self).__rdivmod__(other)
        return _divmod_any(other, self)

    def __truediv__(self, divisor):
        return _as_array(self).__truediv__(divisor)

    def __rtruediv__(self, dividend):
        return _as_array(self).__rtruediv__(dividend)

    def _divmod(self, divisor) -> tuple:
        """Polynomial division: exact where the leading terms divide; else the
        ``floordiv`` and ``mod`` operations."""
        divisor = _ensure(divisor, self._scope, "divmod")
        if isinstance(divisor, int) and divisor == 0:
            raise ZeroDivisionError(f"Symbolic dimension '{self}' divided by 0")
        dividend: DimSize = self
        quotient: DimSize = 0
        try:
            while isinstance(dividend, DimExpr):
                term, count = dividend._leading
                if isinstance(divisor, DimExpr):
                    dterm, dcount = divisor._leading
                    qterm = _term_div(term, dterm)
                    if qterm is None:
                        raise InconclusiveDimensionOperation("")
                else:
                    qterm, dcount = term, divisor
                qcount, rcount = divmod(count, dcount)
                if rcount:
                    raise InconclusiveDimensionOperation("")
                q = DimExpr._normalize({qterm: qcount}, self._scope)
                quotient = quotient + q
                dividend = dividend - q * divisor
            if isinstance(divisor, DimExpr):
                if dividend != 0:
                    raise InconclusiveDimensionOperation("")
                return quotient, 0
            q, r = divmod(dividend, divisor)
            return quotient + q, r
        except InconclusiveDimensionOperation:
            return (DimExpr._from_operation(_FLOORDIV, self, divisor, self._scope),
                    DimExpr._from_operation(_MOD, self, divisor, self._scope))

    def __int__(self):
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension '{self}' used in a context that requires a constant")

    def __bool__(self):
        return True  # a dimension is >= 1 (as jax: nonzero)

    # -- comparisons
    def __eq__(self, other: Any) -> bool:
        if isinstance(other, DimExpr):
            if other._scope is not self._scope:
                return False
        elif not is_constant_dim(other):
            return False
        diff = self - other
        return not isinstance(diff, DimExpr) and diff == 0

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    def __ge__(self, other) -> bool:
        return _geq(self, other, lambda: f"'{self}' >= '{other}'")

    def __le__(self, other) -> bool:
        return _geq(other, self, lambda: f"'{self}' <= '{other}'")

    def __gt__(self, other) -> bool:
        return not _geq(other, self, lambda: f"'{self}' > '{other}'")

    def __lt__(self, other) -> bool:
        return not _geq(self, other, lambda: f"'{self}' < '{other}'")

    # -- max / min
    def max(self, other) -> DimSize:
        lb, ub = bounds(self - other)
        if lb >= 0:
            return self
        if ub <= 0:
            return other
        return DimExpr._from_operation(_MAX, self, other, self._scope)

    def rmax(self, other) -> DimSize:
        lb, ub = bounds(self - other)
        if lb >= 0:
            return self
        if ub <= 0:
            return other
        return DimExpr._from_operation(_MAX, other, self, self._scope)

    def min(self, other) -> DimSize:
        lb, ub = bounds(self - other)
        if lb >= 0:
            return other
        if ub <= 0:
            return self
        return DimExpr._from_operation(_MIN, self, other, self._scope)

    def rmin(self, other) -> DimSize:
        lb, ub = bounds(self - other)
        if lb >= 0:
            return other
        if ub <= 0:
            return self
        return DimExpr._from_operation(_MIN, other, self, self._scope)

    # -- as a value
    def dimension_as_value(self):
        return _as_array(self)

    def __jax_array__(self):
        return _as_array(self)

    def evaluate(self, env: dict, ops=None):
        """The value of this expression where each variable has the value ``env[name]``
        (ints by default; ``ops`` gives ``add``, ``mul``, ``floordiv``, ``mod``, ``max``,
        ``min`` and ``const`` for other values)."""
        return evaluate(self, env, ops)


DimSize = int | DimExpr


def _add_into(acc: dict, e, k: int) -> None:
    if isinstance(e, DimExpr):
        for t, c in e._terms:
            acc[t] = acc.get(t, 0) + c * k
    else:
        acc[()] = acc.get((), 0) + operator.index(e) * k


def _convertible(x) -> bool:
    if isinstance(x, DimExpr):
        return True
    if isinstance(x, bool) or hasattr(x, "aval") or getattr(x, "ndim", 0):
        return False
    try:
        operator.index(x)
        return True
    except TypeError:
        return False


def _ensure(x, scope: SymbolicScope, what: str) -> DimSize:
    if isinstance(x, DimExpr):
        if x._scope is not scope:
            scope._check_same_scope(x, when=f"for {what}")
        return x
    return operator.index(x)


def _divmod_any(a, b) -> tuple:
    if isinstance(a, DimExpr):
        return a._divmod(b)
    # an int divided by an expression
    return (DimExpr._from_operation(_FLOORDIV, operator.index(a), b, b._scope),
            DimExpr._from_operation(_MOD, operator.index(a), b, b._scope))


def _as_array(e: DimExpr):
    """``e`` as a traced integer scalar (``dimension_as_value``)."""
    if _dim_as_value_fn is None:
        raise TypeError(f"Symbolic dimension '{e}' cannot be used as a value here")
    return _dim_as_value_fn(e)


_dim_as_value_fn: Callable | None = None  # set by minijax.lax (the primitive lives there)


def set_dim_as_value(fn: Callable) -> None:
    global _dim_as_value_fn
    _dim_as_value_fn = fn


def is_symbolic_dim(d) -> bool:
    return isinstance(d, DimExpr)


def is_constant_dim(d) -> bool:
    if isinstance(d, DimExpr):
        return False
    try:
        operator.index(d)
        return True
    except TypeError:
        return False


def max_dim(d1, d2) -> DimSize:
    if isinstance(d1, DimExpr):
        return d1.max(d2)
    if isinstance(d2, DimExpr):
        return d2.rmax(d1)
    return max(d1, d2)


def min_dim(d1, d2) -> DimSize:
    if isinstance(d1, DimExpr):
        return d1.min(d2)
    if isinstance(d2, DimExpr):
        return d2.rmin(d1)
    return min(d1, d2)


# ---- bounds and decisions ------------------------------------------------------------------

def _imul(a, b):
    prods = [x * y if not ((x == 0 and abs(y) == _INF) or (y == 0 and abs(x) == _INF)) else 0
             for x in a for y in b]
    return min(prods), max(prods)


def _ipow(iv, e: int):
    lo, hi = iv
    if e % 2 == 0 and lo < 0 < hi:
        return 0, max(lo ** e, hi ** e)
    vals = (lo ** e if abs(lo) != _INF else lo if e % 2 else _INF,
            hi ** e if abs(hi) != _INF else hi if e % 2 else _INF)
    return min(vals), max(vals)


def _factor_bounds(f, scope) -> tuple:
    if f[0] == "var":
        return scope._var_bounds(f[1])
    op, a, b = f
    la, ua = bounds(a)
    lb, ub = bounds(b)
    if op == _MAX:
        return max(la, lb), max(ua, ub)
    if op == _MIN:
        return min(la, lb), min(ua, ub)
    if op == _MOD:
        if lb > 0:
            if la >= 0 and ua < lb:
                return la, ua
            return 0, ub - 1
        return -_INF, _INF
    if op == _FLOORDIV:
        if lb > 0 and ub == lb:
            return (math.floor(la / lb) if la != -_INF else -_INF,
                    math.floor(ua / lb) if ua != _INF else _INF)
        if lb > 0 and la >= 0:
            return 0, ua
        return -_INF, _INF
    return -_INF, _INF


def _interval(e) -> tuple:
    if not isinstance(e, DimExpr):
        return e, e
    lo = hi = 0
    for t, c in e._terms:
        iv = (1, 1)
        for f, ex in t:
            iv = _imul(iv, _ipow(_factor_bounds(f, e._scope), ex))
        tl, th = _imul(iv, (c, c))
        lo, hi = lo + tl, hi + th
    return lo, hi


def bounds(e) -> tuple:
    """Lower and upper bounds of ``e`` (floats, possibly infinite)."""
    if not isinstance(e, DimExpr):
        return e, e
    lo, hi = _interval(e)
    for diff in e._scope._geq:  # diff >= 0: e = (e - diff) + diff, e = (e + diff) - diff
        rest = e - diff
        lo = max(lo, _interval(rest)[0])
        rest2 = e + diff
        hi = min(hi, _interval(rest2)[1])
    return lo, hi


def _geq(e1, e2, describe: Callable[[], str]) -> bool:
    if isinstance(e1, DimExpr):
        scope = e1._scope
        if isinstance(e2, DimExpr) and e2._scope is not scope:
            scope._check_same_scope(e2, f"when comparing {describe()}")
    elif isinstance(e2, DimExpr):
        scope = e2._scope
    else:
        return int(e1) >= int(e2)
    lb, ub = bounds(e1 - e2)
    if lb >= 0:
        return True
    if ub < 0:
        return False
    extra = f"\nUsing symbolic scope {scope}" if scope._constraints else ""
    raise InconclusiveDimensionOperation(
        f"Symbolic dimension comparison {describe()} is inconclusive.{extra}")


# ---- scopes and parsing --------------------------------------------------------------------

class SymbolicScope:
    """The constraints that the symbolic dimensions made in it share (as jax's).

    ``constraints``: strings ``e1 >= e2``, ``e1 <= e2`` or ``e1 == e2``; an equality's
    left side must be one term (``k*t == e`` rewrites ``t`` where it appears)."""

    def __init__(self, constraints_str: Sequence[str] = ()):
        if isinstance(constraints_str, str):
            raise ValueError("The symbolic constraints should be a sequence of strings. "
                             f"Got {constraints_str!r}")
        self._constraints: list[str] = []
        self._geq: list = []  # expressions known >= 0
        self._rules: dict = {}  # term -> (expression, coefficient)
        for c in constraints_str:
            self._add_constraint(c)

    def __str__(self) -> str:
        extras = "".join(f"\n  {c}" for c in self._constraints)
        return f"{id(self)}" + (" with constraints:" + extras if extras else "")

    __repr__ = __str__

    def _add_constraint(self, c: str) -> None:
        if not isinstance(c, str):
            raise ValueError(f"SymbolicScope constraint must be a string: got {c!r}")
        for cmp in ("==", ">=", "<="):
            pos = c.find(cmp)
            if pos >= 0:
                break
        else:
            raise ValueError("Constraint parsing error: must contain one of '==' or '>=' "
                             "or '<='")
        e1, = _Parser(c[:pos], None, repr(c[:pos]), self).parse()
        e2, = _Parser(c[pos + 2:], None, repr(c[pos + 2:]), self).parse()
        if cmp == "<=":
            e1, e2 = e2, e1
        diff = e1 - e2
        if not isinstance(diff, DimExpr):
            if (cmp == "==" and diff != 0) or (cmp != "==" and diff < 0):
                raise ValueError(f"Unsatisfiable explicit constraint: {c}")
            return
        if cmp == "==":
            if not isinstance(e1, DimExpr) or len(e1._terms) != 1:
                raise ValueError(f"Invalid equality constraint: {e1} == {e2}. "
                                 "The left-hand-side must be of the form "
                                 "`term * coefficient`.")
            (term, k), = e1._terms
            if term in self._rules:
                raise NotImplementedError("Found multiple equality constraints with the "
                                          f"same left-hand-side: {_term_str(term)}")
            self._rules[term] = (e2, k)
        else:
            self._geq.append(diff)
        self._constraints.append(c)

    def _var_bounds(self, name: str) -> tuple:
        return 1, _INF

    def _check_same_scope(self, other: DimExpr, when: str = "", self_descr: str = " ",
                          other_descr: str = "unknown"):
        if self is not other._scope:
            raise ValueError(
                f"Invalid mixing of symbolic scopes {when}.\n"
                f"Expected {self_descr}scope {self}\n"
                f"and found for '{other}' ({other_descr}) scope {other._scope}\n"
                "See https://docs.jax.dev/en/latest/export/shape_poly.html"
                "#user-specified-symbolic-constraints.")


class _Parser:
    """``"(b, 2*n + 1, ...)"`` as dimensions (over Python's tokenizer)."""

    def __init__(self, spec: str, like, spec_repr: str, scope: SymbolicScope):
        self.spec = spec
        self.spec_repr = spec_repr
        self.like = like
        self.scope = scope
        self.dims: list = []

    def parse(self) -> tuple:
        try:
            self.toks = [t for t in tokenize.tokenize(io.BytesIO(self.spec.encode()).readline)
                         if t.exact_type not in (tokenize.NEWLINE, tokenize.NL,
                                                 tokenize.INDENT, tokenize.DEDENT,
                                                 tokenize.ENCODING)]
        except (tokenize.TokenError, IndentationError, SyntaxError) as e:
            raise self.err(None, f"cannot tokenize ({e})") from None
        self.i = 0
        shape = self.shape()
        self.expect(tokenize.ENDMARKER)
        return shape

    @property
    def tok(self):
        return self.toks[min(self.i, len(self.toks) - 1)]

    def next(self):
        self.i += 1

    def err(self, tok, detail: str) -> ValueError:
        msg = (f"syntax error in symbolic shape {self.spec_repr} in dimension "
               f"{len(self.dims)}: {detail}. ")
        if tok is not None:
            msg += (f"Parsed '{tok.line[:tok.start[1]]}', remaining "
                    f"'{tok.line[tok.start[1]:]}'.")
        return ValueError(msg)

    def expect(self, *types) -> None:
        t = self.tok
        if t.exact_type not in types:
            raise self.err(t, "expecting one of {" + ", ".join(tokenize.tok_name[x]
                                                              for x in types)
                           + "} but found " + tokenize.tok_name[t.exact_type])

    def add_dim(self, e) -> None:
        if e is None:
            raise self.err(self.tok, "unexpected placeholder for unknown dimension; "
                                     f"like={self.like}")
        if self.like is not None and not isinstance(e, DimExpr):
            if len(self.like) > len(self.dims):
                want = self.like[len(self.dims)]
                if want is not None and e != want:
                    raise self.err(self.tok, f"different size {e} for known dimension; "
                                             f"like={self.like}")
        self.dims.append(e)

    _END = (tokenize.ENDMARKER, tokenize.RPAR)

    def shape(self) -> tuple:
        if self.tok.exact_type == tokenize.LPAR:
            self.next()
            res = self.shape()
            self.expect(tokenize.RPAR)
            self.next()
            return res
        while self.tok.exact_type not in self._END:
            t = self.tok
            placeholder = t.exact_type == tokenize.ELLIPSIS or (
                t.exact_type == tokenize.NAME and t.string == "_")
            if placeholder:
                if self.like is None:
                    raise self.err(t, "spec contains ... but no 'like' shape was given")
                need = len(self.dims) + (0 if t.exact_type == tokenize.ELLIPSIS else 1)
                if len(self.like) < need:
                    raise self.err(t, f"cannot resolve placeholder '{t.string}' because we "
                                      f"parsed {len(self.dims)} already and 'like' shape "
                                      f"has only {len(self.like)} dimensions")
            if t.exact_type == tokenize.ELLIPSIS:
                for d in self.like[len(self.dims):]:
                    self.add_dim(d)
                self.next()
                break
            if placeholder:
                e = self.like[len(self.dims)]
                self.next()
            else:
                e = self.expr()
            self.add_dim(e)
            if self.tok.exact_type in self._END:
                break
            self.expect(tokenize.COMMA)
            self.next()
        return tuple(self.dims)

    def expr(self):
        neg = self.tok.exact_type == tokenize.MINUS
        if self.tok.exact_type in (tokenize.MINUS, tokenize.PLUS):
            self.next()
        acc = None
        while True:
            t = self.term()
            t = -t if neg else t
            acc = t if acc is None else acc + t
            if self.tok.exact_type in (*self._END, tokenize.COMMA):
                return acc
            self.expect(tokenize.PLUS, tokenize.MINUS)
            neg = self.tok.exact_type == tokenize.MINUS
            self.next()

    def term(self):
        acc = None
        while True:
            f = self.factor()
            if self.tok.exact_type == tokenize.CIRCUMFLEX:
                self.next()
                self.expect(tokenize.NUMBER)
                f = f ** self.integer()
            acc = f if acc is None else acc * f
            if self.tok.exact_type in (*self._END, tokenize.COMMA, tokenize.PLUS,
                                       tokenize.MINUS):
                return acc
            self.expect(tokenize.STAR)
            self.next()

    def integer(self) -> int:
        t = self.tok
        try:
            v = int(t.string)
        except ValueError:
            raise self.err(t, f"expecting integer, found {t.string}") from None
        self.next()
        return v

    def factor(self):
        t = self.tok
        if t.exact_type == tokenize.NAME:
            self.next()
            if t.string in (_MOD, _FLOORDIV, _MAX, _MIN):
                self.expect(tokenize.LPAR)
                self.next()
                e1 = self.expr()
                self.expect(tokenize.COMMA)
                self.next()
                e2 = self.expr()
                self.expect(tokenize.RPAR)
                self.next()
                if t.string == _MAX:
                    return max_dim(e1, e2)
                if t.string == _MIN:
                    return min_dim(e1, e2)
                if not isinstance(e1, DimExpr) and not isinstance(e2, DimExpr):
                    return divmod(e1, e2)[0 if t.string == _FLOORDIV else 1]
                scope_e = e1 if isinstance(e1, DimExpr) else e2
                return DimExpr._from_operation(t.string, e1, e2, scope_e._scope)
            return DimExpr._from_var(t.string, self.scope)
        sign = 1
        if t.exact_type == tokenize.MINUS:
            sign = -1
            self.next()
            self.expect(tokenize.NUMBER)
        if self.tok.exact_type == tokenize.NUMBER:
            return sign * self.integer()
        self.expect(tokenize.NAME, tokenize.MINUS, tokenize.NUMBER)
        raise AssertionError


def symbolic_shape(shape_spec: str | None, *, constraints: Sequence[str] = (),
                   scope: SymbolicScope | None = None, like=None) -> tuple:
    """A shape of ints and dimension expressions from ``"b, 2*n"`` (as jax's)."""
    spec_repr = repr(shape_spec)
    if shape_spec is None:
        shape_spec = "..."
    elif not isinstance(shape_spec, str):
        raise ValueError("polymorphic shape spec should be None or a string. "
                         f"Found {spec_repr}.")
    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    return _Parser(shape_spec, like, spec_repr, scope).parse()


# ---- evaluation ----------------------------------------------------------------------------

class _IntOps:
    @staticmethod
    def const(c):
        return c

    add = staticmethod(operator.add)
    mul = staticmethod(operator.mul)

    @staticmethod
    def floordiv(a, b):
        return a // b

    @staticmethod
    def mod(a, b):
        return a % b

    max = staticmethod(max_dim)
    min = staticmethod(min_dim)


def evaluate(e, env: dict, ops=None):
    """The value of ``e`` (an int or DimExpr) with variables from ``env``."""
    ops = ops or _IntOps
    if not isinstance(e, DimExpr):
        return ops.const(operator.index(e))
    acc = None
    for t, c in e._terms:
        v = None
        for f, ex in t:
            if f[0] == "var":
                try:
                    fv = env[f[1]]
                except KeyError:
                    raise KeyError(
                        f"Encountered dimension variable '{f[1]}' that is not appearing in "
                        "the shapes of the function arguments.\nThe following dimension "
                        "variables are appearing in the shapes of the function arguments: "
                        f"{list(env)}.") from None
            else:
                a, b = (evaluate(o, env, ops) for o in f[1:])
                fv = getattr(ops, f[0])(a, b)
            for _ in range(ex):
                v = fv if v is None else ops.mul(v, fv)
        if v is None:
            v = ops.const(c)
        elif c != 1:
            v = ops.mul(v, ops.const(c))
        acc = v if acc is None else ops.add(acc, v)
    return acc


def dim_vars_of(shapes) -> list[str]:
    """The variables in ``shapes`` (sorted)."""
    out: set = set()
    for sh in shapes:
        for d in sh:
            if isinstance(d, DimExpr):
                out |= d._get_vars()
    return sorted(out)


def solve_dim_vars(sym_shapes, shapes) -> dict:
    """The variables' values where the symbolic shapes ``sym_shapes`` take the ``shapes``
    (of ints, or of other symbolic dimensions), each variable from a dimension ``k*v + c``
    that holds it alone; raises ValueError where the dimensions do not match."""
    env: dict = {}
    pending = []
    for i, (ss, sh) in enumerate(zip(sym_shapes, shapes)):
        for j, (s, d) in enumerate(zip(ss, sh)):
            if isinstance(s, DimExpr):
                pending.append((i, j, s, d))
    progress = True
    while pending and progress:
        progress = False
        rest = []
        for i, j, s, d in pending:
            unknown = [v for v in s._get_vars() if v not in env]
            if len(unknown) == 1 and _linear_in(s, unknown[0]):
                v = unknown[0]
                k, c = _lin_coeffs(s, v, env)
                q, r = divmod(d - c, k)
                if type(r) is DimExpr or r != 0 or (type(q) is not DimExpr and q < 1):
                    raise ValueError(_solve_err(s, d, i, j))
                env[v] = q
                progress = True
            else:
                rest.append((i, j, s, d))
        pending = rest
    for i, j, s, _d in pending:
        if any(v not in env for v in s._get_vars()):
            raise ValueError(f"Cannot solve for values of dimension variables "
                             f"{sorted(v for v in s._get_vars() if v not in env)} "
                             f"from the dimension '{s}' of args[{i}].shape[{j}]")
    for ss, sh in zip(sym_shapes, shapes):
        for s, d in zip(ss, sh):
            if evaluate(s, env) != d:
                raise ValueError(_solve_err(s, d, None, None))
    return env


def _solve_err(s, d, i, j) -> str:
    where = f" for args[{i}].shape[{j}]" if i is not None else ""
    return f"Dimension '{s}'{where} cannot be {d} for integer dimension variables >= 1"


def _linear_in(s: DimExpr, v: str) -> bool:
    for t, _c in s._terms:
        for f, ex in t:
            if f[0] != "var" and v in DimExpr([(((f, 1),), 1)], s._scope)._get_vars():
                return False
            if f[0] == "var" and f[1] == v and (ex != 1 or len(t) != 1):
                return False
    return True


def _lin_coeffs(s: DimExpr, v: str, env: dict) -> tuple:
    k, c = 0, 0
    for t, co in s._terms:
        if len(t) == 1 and t[0][0] == ("var", v):
            k += co
        else:
            c += evaluate(DimExpr._normalize({t: co}, s._scope), env)
    return k, c
