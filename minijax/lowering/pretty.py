"""MLIR's pretty form of a built module, printed in Python (no parse, no MLIR print).

``Lowered.as_text()`` and the compilation cache's key need the module as MLIR prints
it without locations. Parsing the builder's generic text and printing it again costs
about as much as lowering itself (0.06 s + 0.05 s for 28,000 ops); this module prints
the same bytes straight from the builder's op records instead.

It knows the custom assembly format of the common ops only (elementwise ops, splat
constants, broadcasts, reshapes, transposes, converts, dot_general, compare,
single-input reductions with one combiner, while loops, calls and returns) and
MLIR's value naming (``%0``, ``%arg0``, ``%cst_3``, ``%iterArg_0``; numbering scoped
per region). For anything else (another op, an attribute it does not spell, a float
it cannot print exactly as MLIR does, XLA frontend attributes) ``pretty_text``
returns None and the caller parses and prints through MLIR, so the text is always
MLIR's. ``tests/lowering/test_pretty.py`` checks the two agree, byte for byte.
"""

from __future__ import annotations

import re
from decimal import Decimal

import numpy as np

from minijax.lowering.builder import FunctionBuilder, ModuleBuilder, Op, Region


class _Unsupported(Exception):
    """The module holds something this printer does not spell (MLIR prints it)."""


# Ops printed ``%r = stablehlo.X %a, %b : T`` when every operand has the result's type.
_SAME_TYPE = frozenset("stablehlo." + n for n in (
    "abs add and atan2 cbrt ceil cosine count_leading_zeros divide exponential "
    "exponential_minus_one floor log log_plus_one logistic maximum minimum multiply negate "
    "not or popcnt power remainder round_nearest_afz round_nearest_even rsqrt "
    "shift_left shift_right_arithmetic shift_right_logical sign sine sqrt subtract tan "
    "tanh xor").split())
# Combiners a reduction prints compactly (``applies stablehlo.add``): commutative binary ops.
_COMMUTATIVE = frozenset("stablehlo." + n for n in
                         "add multiply maximum minimum and or xor".split())

_I64_ARRAY = re.compile(r"array<i64(?:: ([-\d, ]*))?>\Z")
_DENSE = re.compile(r"dense<([^<>\"]*)> : (tensor<[^<>]*>)\Z")
_CMP_DIR = re.compile(r"#stablehlo<comparison_direction (\w+)>\Z")
_CMP_TYPE = re.compile(r"#stablehlo<comparison_type (\w+)>\Z")
_DOT = re.compile(r"#stablehlo\.dot<(.*)>\Z")
_DOT_FIELD = re.compile(r"(\w+) = \[([-\d, ]*)\]")
_PRECISION = re.compile(r"\[((?:#stablehlo<precision \w+>(?:, )?)*)\]\Z")
_STRING = r'"(?:[^"\\]|\\.)*"'
_RESULT_INFO = re.compile(r"jax\.result_info = " + _STRING + r"\Z")
_ALIASING = re.compile(r"tf\.aliasing_output = \d+ : i32\Z")
_MODULE_ATTRS = ("mhlo.num_partitions", "mhlo.num_replicas")

_float_text: dict = {}  # (literal, element type) -> MLIR's spelling (or None: unsupported)


def pretty_text(mod: ModuleBuilder) -> str | None:
    """``mod`` (already rendered) as ``module.operation.get_asm()`` prints it, or None
    when it holds something this printer does not know."""
    try:
        return _Printer().module(mod)
    except _Unsupported:
        return None


def _i64s(attr: str | None) -> str:
    """``[0, 1]`` for ``array<i64: 0, 1>``."""
    m = _I64_ARRAY.match(attr or "")
    if m is None:
        raise _Unsupported(attr)
    return f"[{m.group(1) or ''}]"


def _apfloat_string(x: float, precision: int, max_padding: int, truncate_zero: bool) -> str:
    """LLVM's ``APFloat::toString`` of a finite ``x`` (exact in a double): at most
    ``precision`` significant digits, rounded half up from the exact binary value."""
    sign, digits, exp = Decimal(x).as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:  # trailing zeros carry no precision
        digits.pop()
        exp += 1
    if digits == [0]:
        exp = 0
    if len(digits) > precision:
        drop = len(digits) - precision
        up = digits[precision] >= 5
        digits = digits[:precision]
        exp += drop
        if up:
            i = precision - 1
            while i >= 0 and digits[i] == 9:
                digits[i] = 0
                i -= 1
            if i < 0:  # carried through every digit: APFloat's spelling is not known here
                raise _Unsupported(repr(x))
            else:
                digits[i] += 1
        while len(digits) > 1 and digits[-1] == 0:
            digits.pop()
            exp += 1
    nd = len(digits)
    text = "".join(map(str, digits))
    neg = "-" if sign else ""
    if not max_padding:
        scientific = True
    elif exp >= 0:
        scientific = exp > max_padding or nd + exp > precision
    else:
        msd = exp + nd - 1
        scientific = msd < 0 and -msd > max_padding
    if scientific:
        e = exp + nd - 1
        mant = text[0] + "." + ("0" if nd == 1 and truncate_zero else text[1:])
        if not truncate_zero and precision > nd - 1:
            mant += "0" * (precision - nd + 1)
        es = str(abs(e))
        if not truncate_zero and len(es) < 2:
            es = "0" + es
        return f"{neg}{mant}{'E' if truncate_zero else 'e'}{'+' if e >= 0 else '-'}{es}"
    if exp >= 0:
        return neg + text + "0" * exp
    whole = exp + nd
    if whole > 0:
        return f"{neg}{text[:whole]}.{text[whole:]}"
    return f"{neg}0.{'0' * -whole}{text}"


def _mlir_float(literal: str, elem: str) -> str:
    """A float literal as MLIR prints an f32/f64 element (``printFloatValue``):
    ``1.010000e+00`` when six digits read back exactly; the bit pattern in hex for
    inf and nan; unsupported otherwise (MLIR's default spelling is not reproduced)."""
    key = (literal, elem)
    out = _float_text.get(key)
    if out is None:
        dtype = np.float32 if elem == "f32" else np.float64
        if literal.startswith("0x"):  # non-finite: the bit pattern, as MLIR prints it
            if len(literal) != (10 if elem == "f32" else 18) or literal != literal.upper() \
                    .replace("0X", "0x"):
                raise _Unsupported(literal)
            out = literal
        else:
            x = dtype(float(literal))
            if not np.isfinite(x):
                raise _Unsupported(literal)
            out = _apfloat_string(float(x), 6, 0, False)
            if dtype(float(out)) != x or np.signbit(dtype(float(out))) != np.signbit(x):
                # MLIR then prints APFloat's default spelling, whose digits are not
                # reproduced here (they are not those of correct rounding)
                raise _Unsupported(literal)
        _float_text[key] = out
    return out


_constant_text: dict = {}  # (attribute, result type) -> the constant's pretty value


def _constant_value(attr: str | None, result_type: str) -> str:
    key = (attr, result_type)
    out = _constant_text.get(key)
    if out is None:
        out = _constant_text[key] = _make_constant_value(attr, result_type)
        if len(_constant_text) > 4096:  # bounded: the oldest half is dropped
            for k in list(_constant_text)[:2048]:
                del _constant_text[k]
    return out


def _make_constant_value(attr: str | None, result_type: str) -> str:
    m = _DENSE.match(attr or "")
    if m is None or m.group(2) != result_type:
        raise _Unsupported(attr)
    lit = m.group(1)
    elem = result_type[result_type.rfind("x") + 1:-1] if "x" in result_type \
        else result_type[7:-1]
    if elem in ("f32", "f64"):
        lit = _mlir_float(lit, elem)
    elif elem in ("i1",):
        if lit not in ("true", "false"):
            raise _Unsupported(attr)
    elif elem[:1] in ("i", "u") and elem.lstrip("ui").isdigit():
        if not lit.lstrip("-").isdigit():
            raise _Unsupported(attr)
    else:
        raise _Unsupported(attr)
    return f"dense<{lit}> : {result_type}"


class _Scope:
    """MLIR's naming state (``SSANameState``): carried into nested regions, restored after."""

    __slots__ = ("value_id", "arg_id", "conflict", "used")

    def __init__(self, value_id=0, arg_id=0, conflict=0, used=None):
        self.value_id = value_id
        self.arg_id = arg_id
        self.conflict = conflict
        self.used = set() if used is None else used

    def copy(self) -> _Scope:
        return _Scope(self.value_id, self.arg_id, self.conflict, set(self.used))

    def unique(self, name: str) -> str:
        if name in self.used:
            while True:
                probe = f"{name}_{self.conflict}"
                self.conflict += 1
                if probe not in self.used:
                    name = probe
                    break
        self.used.add(name)
        return name


class _Printer:
    def __init__(self):
        self.names: dict[int, str] = {}  # id(value) -> its printed name

    # ---- naming --------------------------------------------------------------------

    def _number_region(self, region: Region, scope: _Scope, arg_name: str | None) -> None:
        names = self.names
        for a in region.args:
            if arg_name is None:
                names[id(a)] = f"%arg{scope.arg_id}"
                scope.arg_id += 1
            else:
                names[id(a)] = "%" + scope.unique(arg_name)
        for op in region.ops:
            res = op.results
            if not res:
                continue
            if op.opname == "stablehlo.constant":
                elem = res[0].type
                kind = "cst" if ("xf" in elem or "<f" in elem or "bf16" in elem
                                 or "complex" in elem) else "c"
                names[id(res[0])] = "%" + scope.unique(kind)
                continue
            n = scope.value_id
            scope.value_id += 1
            if len(res) == 1:
                names[id(res[0])] = f"%{n}"
            else:
                for i, v in enumerate(res):
                    names[id(v)] = f"%{n}#{i}"
        for op in region.ops:
            if op.regions:
                block_args = "iterArg" if op.opname == "stablehlo.while" else None
                for r in op.regions:
                    self._number_region(r, scope.copy(), block_args)

    # ---- printing ------------------------------------------------------------------

    def module(self, mod: ModuleBuilder) -> str:
        from minijax.lowering.builder import _sym
        attrs = mod.attrs
        if mod.sdy is not None:
            raise _Unsupported("sdy meshes")
        if tuple(attrs) != _MODULE_ATTRS[:len(attrs)] or len(attrs) not in (0, 2):
            raise _Unsupported("module attributes")
        head = f"module @{_sym(mod.name)}"
        if attrs:
            head += " attributes {" + ", ".join(f"{k} = {v}" for k, v in attrs.items()) + "}"
        out = [head + " {"]
        for fn in mod.functions:
            self.function(fn, out)
        out.append("}")
        return "\n".join(out) + "\n"

    def function(self, fn: FunctionBuilder, out: list[str]) -> None:
        scope = _Scope()
        self.names = names = {}
        body = fn.body
        for v in fn.args:
            names[id(v)] = f"%arg{scope.arg_id}"
            scope.arg_id += 1
        self._number_region(body, scope, None)
        args = []
        for v, (attrs, _loc) in zip(fn.args, fn.arg_attrs):
            if attrs:
                if not _ALIASING.match(attrs):
                    raise _Unsupported(attrs)
                args.append(f"{names[id(v)]}: {v.type} {{{attrs}}}")
            else:
                args.append(f"{names[id(v)]}: {v.type}")
        res_attrs = fn.result_attrs or [""] * len(fn.results)
        results = []
        for v, attrs in zip(fn.results, res_attrs):
            if attrs:
                if not _RESULT_INFO.match(attrs):
                    raise _Unsupported(attrs)
                results.append(f"{v.type} {{{attrs}}}")
            else:
                results.append(v.type)
        if not results:
            sig = ""
        elif len(results) == 1 and not res_attrs[0]:
            sig = " -> " + results[0]
        else:
            sig = " -> (" + ", ".join(results) + ")"
        out.append(f"  func.func {fn.visibility} {fn.ref}({', '.join(args)}){sig} {{")
        self.block(body.ops, out, "    ")
        if fn.results:
            out.append(f"    return {', '.join(names[id(v)] for v in fn.results)} : "
                       f"{', '.join(v.type for v in fn.results)}")
        else:
            out.append("    return")
        out.append("  }")

    def block(self, ops, out: list[str], indent: str) -> None:
        # The common op inline: an elementwise one of _SAME_TYPE with one result, no
        # attributes, regions or metadata, and one or two operands of its result type
        # (the text ``op`` makes for it); anything else goes through ``op``.
        names = self.names
        append = out.append
        same = _SAME_TYPE
        for op in ops:
            if op.opname in same and not op.attrs and not op.frontend and not op.regions:
                res = op.results
                operands = op.operands
                if len(res) == 1 and 0 < len(operands) <= 2:
                    r = res[0]
                    t = r.type
                    x = operands[0]
                    if len(operands) == 1:
                        if x.type == t:
                            xn = names.get(id(x))
                            if xn is not None:
                                append(f"{indent}{names[id(r)]} = {op.opname} {xn} : {t}")
                                continue
                    else:
                        y = operands[1]
                        if x.type == t and y.type == t:
                            xn = names.get(id(x))
                            yn = names.get(id(y))
                            if xn is not None and yn is not None:
                                append(f"{indent}{names[id(r)]} = {op.opname} {xn}, {yn} : {t}")
                                continue
            self.op(op, out, indent)

    def op(self, op: Op, out: list[str], indent: str) -> None:
        if op.frontend:
            raise _Unsupported("frontend attributes")
        names = self.names
        name = op.opname
        attrs = op.attrs or {}
        operands = op.operands
        res = op.results
        try:
            ins = [names[id(v)] for v in operands]
        except KeyError:
            raise _Unsupported("operand from outside the region") from None
        if len(res) == 1:
            lhs = names[id(res[0])] + " = "
            rtype = res[0].type
        elif res:
            lhs = f"{names[id(res[0])].split('#')[0]}:{len(res)} = "
            rtype = None
        else:
            lhs = ""
            rtype = None
        if op.regions and name not in ("stablehlo.while", "stablehlo.reduce"):
            raise _Unsupported(name)
        if name in _SAME_TYPE:
            if attrs or rtype is None or any(v.type != rtype for v in operands):
                raise _Unsupported(name)
            out.append(f"{indent}{lhs}{name} {', '.join(ins)} : {rtype}")
        elif name == "stablehlo.constant":
            if len(attrs) != 1:
                raise _Unsupported(name)
            out.append(f"{indent}{lhs}{name} {_constant_value(attrs.get('value'), rtype)}")
        elif name == "stablehlo.return":
            if attrs:
                raise _Unsupported(name)
            types = ", ".join(v.type for v in operands)
            out.append(f"{indent}{name} {', '.join(ins)} : {types}" if ins
                       else f"{indent}{name}")
        elif name == "stablehlo.broadcast_in_dim":
            if len(attrs) != 1 or len(ins) != 1:
                raise _Unsupported(name)
            dims = _i64s(attrs.get("broadcast_dimensions"))
            out.append(f"{indent}{lhs}{name} {ins[0]}, dims = {dims} : "
                       f"({operands[0].type}) -> {rtype}")
        elif name == "stablehlo.transpose":
            if len(attrs) != 1 or len(ins) != 1:
                raise _Unsupported(name)
            dims = _i64s(attrs.get("permutation"))
            out.append(f"{indent}{lhs}{name} {ins[0]}, dims = {dims} : "
                       f"({operands[0].type}) -> {rtype}")
        elif name in ("stablehlo.reshape", "stablehlo.convert"):
            if attrs or len(ins) != 1 or rtype is None:
                raise _Unsupported(name)
            t = operands[0].type
            sig = t if (t == rtype and name == "stablehlo.convert") else f"({t}) -> {rtype}"
            out.append(f"{indent}{lhs}{name} {ins[0]} : {sig}")
        elif name == "stablehlo.select":
            if attrs or len(ins) != 3 or rtype is None or any(
                    v.type != rtype for v in operands[1:]):
                raise _Unsupported(name)
            out.append(f"{indent}{lhs}{name} {', '.join(ins)} : {operands[0].type}, {rtype}")
        elif name == "stablehlo.compare":
            self._compare(op, attrs, ins, lhs, rtype, out, indent)
        elif name == "stablehlo.dot_general":
            self._dot(attrs, ins, operands, lhs, rtype, out, indent)
        elif name == "stablehlo.reduce":
            self._reduce(op, attrs, ins, lhs, rtype, out, indent)
        elif name == "stablehlo.while":
            self._while(op, attrs, ins, lhs, out, indent)
        elif name == "func.call":
            callee = attrs.get("callee")
            if len(attrs) != 1 or callee is None:
                raise _Unsupported(name)
            in_types = ", ".join(v.type for v in operands)
            rts = [v.type for v in res]
            out_types = rts[0] if len(rts) == 1 else "(" + ", ".join(rts) + ")"
            out.append(f"{indent}{lhs}call {callee}({', '.join(ins)}) : "
                       f"({in_types}) -> {out_types}")
        else:
            raise _Unsupported(name)

    def _compare(self, op, attrs, ins, lhs, rtype, out, indent) -> None:
        if set(attrs) - {"comparison_direction", "compare_type"} or len(ins) != 2:
            raise _Unsupported("compare")
        m = _CMP_DIR.match(attrs.get("comparison_direction", ""))
        if m is None:
            raise _Unsupported("compare")
        kind = ""
        if "compare_type" in attrs:
            t = _CMP_TYPE.match(attrs["compare_type"])
            if t is None:
                raise _Unsupported("compare")
            kind = f", {t.group(1)}"
        a, b = op.operands
        out.append(f"{indent}{lhs}stablehlo.compare {m.group(1)}, {ins[0]}, {ins[1]}{kind} : "
                   f"({a.type}, {b.type}) -> {rtype}")

    def _dot(self, attrs, ins, operands, lhs, rtype, out, indent) -> None:
        if set(attrs) - {"dot_dimension_numbers", "precision_config"} or len(ins) != 2:
            raise _Unsupported("dot_general")
        m = _DOT.match(attrs.get("dot_dimension_numbers", ""))
        if m is None:
            raise _Unsupported("dot_general")
        fields = dict(_DOT_FIELD.findall(m.group(1)))
        known = {"lhs_batching_dimensions", "rhs_batching_dimensions",
                 "lhs_contracting_dimensions", "rhs_contracting_dimensions"}
        if set(fields) - known or len(_DOT_FIELD.findall(m.group(1))) != len(fields):
            raise _Unsupported("dot_general")
        parts = []
        lb, rb = fields.get("lhs_batching_dimensions"), fields.get("rhs_batching_dimensions")
        if lb or rb:
            parts.append(f"batching_dims = [{lb or ''}] x [{rb or ''}]")
        lc, rc = fields.get("lhs_contracting_dimensions"), fields.get("rhs_contracting_dimensions")
        parts.append(f"contracting_dims = [{lc or ''}] x [{rc or ''}]")
        if "precision_config" in attrs:
            p = _PRECISION.match(attrs["precision_config"])
            if p is None:
                raise _Unsupported("dot_general")
            ps = re.findall(r"precision (\w+)", p.group(1))
            parts.append(f"precision = [{', '.join(ps)}]")
        out.append(f"{indent}{lhs}stablehlo.dot_general {', '.join(ins)}, {', '.join(parts)} : "
                   f"({operands[0].type}, {operands[1].type}) -> {rtype}")

    def _reduce(self, op, attrs, ins, lhs, rtype, out, indent) -> None:
        # Only the compact form: one input, one init, a body of one commutative op on the
        # block's arguments in order whose result is returned.
        if set(attrs) != {"dimensions"} or len(ins) != 2 or len(op.regions) != 1 \
                or rtype is None:
            raise _Unsupported("reduce")
        body = op.regions[0]
        if len(body.ops) != 2:
            raise _Unsupported("reduce")
        inner, ret = body.ops
        a0 = op.operands[0]
        scalar = "tensor<" + a0.type[a0.type.rfind("x") + 1:] if "x" in a0.type else a0.type
        if (inner.opname not in _COMMUTATIVE or inner.attrs or inner.frontend
                or len(inner.results) != 1 or list(map(id, inner.operands)) != list(
                    map(id, body.args)) or body.args[0].type != scalar
                or ret.opname != "stablehlo.return" or ret.attrs
                or list(map(id, ret.operands)) != [id(inner.results[0])]
                or inner.loc != op.loc or inner.loc != ret.loc):
            raise _Unsupported("reduce")
        dims = _i64s(attrs["dimensions"])
        a, b = op.operands
        out.append(f"{indent}{lhs}stablehlo.reduce({ins[0]} init: {ins[1]}) applies "
                   f"{inner.opname} across dimensions = {dims} : ({a.type}, {b.type}) -> {rtype}")

    def _while(self, op, attrs, ins, lhs, out, indent) -> None:
        if attrs or len(op.regions) != 2:
            raise _Unsupported("while")
        cond, body = op.regions
        names = self.names
        pairs = ", ".join(f"{names[id(a)]} = {v}" for a, v in zip(cond.args, ins))
        types = ", ".join(v.type for v in op.operands)
        out.append(f"{indent}{lhs}stablehlo.while({pairs}) : {types}")
        # the body region's arguments print under the cond region's names
        for a, b in zip(cond.args, body.args):
            if names[id(a)] != names[id(b)]:
                raise _Unsupported("while")
        out.append(f"{indent}cond {{")
        self.block(cond.ops, out, indent + "  ")
        out.append(f"{indent}}} do {{")
        self.block(body.ops, out, indent + "  ")
        out.append(f"{indent}}}")
