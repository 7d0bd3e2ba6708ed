"""Building a StableHLO module as text.

Lowering rules emit operations through a ``RuleContext``; each operation is
kept as a small ``Op`` record (so later passes, e.g. XLA metadata tagging, can
still add attributes) and rendered in MLIR's generic form. Most ops (one array
result or none, no regions, no frontend attributes) get their line when they are
emitted, and an op with one array result is also that result (``OpValue``); a
change afterwards drops the line and the op is rendered from its fields at the
end. The text is then parsed by MLIR (``lowering.mlir.parse``), which checks it.

Why text rather than the Python op builders: building a few thousand ops as
strings is several times faster than through the bindings, and the rules read
like the StableHLO they produce.
"""

from __future__ import annotations

from collections.abc import Sequence

from minijax.core.aval import ShapedArray
from minijax.core.lru import MemoCache
from minijax.core.shape_poly import DimExpr
from minijax.lowering.types import _type_cache as _types
from minijax.lowering.types import string_attr, tensor_type, type_of


class Value:
    """An SSA value: its name in the function (``%3``, ``%7#1``) and its aval."""

    __slots__ = ("name", "aval", "op", "type")

    def __init__(self, name: str, aval: ShapedArray, op: Op | None = None,
                 type: str | None = None):
        self.name = name
        self.aval = aval
        self.op = op  # the defining op (None for block arguments)
        # its MLIR type (``tensor<3xf32>``; an aval that is a string is its own type)
        self.type = type or type_of(aval)

    def __repr__(self) -> str:
        return f"{self.name}: {self.type}"


class Region:
    __slots__ = ("args", "ops")

    def __init__(self, args: list[Value]):
        self.args = args
        self.ops: list[Op] = []


class Op:
    """One operation (``opname``: ``"stablehlo.add"``). Its fields stay editable until
    the module is rendered; ``line`` is its text (without indentation) when made at once
    by ``FunctionBuilder.op``, dropped by any change."""

    __slots__ = ("results", "opname", "operands", "attrs", "result_types", "loc", "regions",
                 "frontend", "line")

    def __init__(self, opname, operands, result_types, attrs, loc, regions, frontend=None,
                 line=None):
        self.frontend = frontend  # XLA frontend attributes: {key: value string}
        self.opname = opname
        self.operands = operands
        self.result_types = result_types
        self.attrs = attrs
        self.loc = loc
        self.regions = regions
        self.results: Sequence[Value] = ()
        self.line: str | None = line

    def set_attr(self, key: str, value: str) -> None:
        self.attrs = dict(self.attrs or {})
        self.attrs[key] = value
        self.line = None

    def add_frontend_attributes(self, metadata: dict) -> None:
        """Merge XLA frontend attributes into this op (later values win)."""
        self.frontend = {**(self.frontend or {}), **metadata}
        self.line = None

    def render(self, out: list[str], indent: str, tagged: list) -> None:
        """Append this op's lines to ``out``, and its frontend attributes, if it has
        any, to ``tagged``."""
        if self.line is not None:
            out.append(indent + self.line)
            return
        res = self.results
        operands = self.operands
        n = len(operands)
        if n == 1:
            o = operands[0]
            names, in_types = o.name, o.type
        elif n == 2:
            o, o2 = operands
            names, in_types = f"{o.name}, {o2.name}", f"{o.type}, {o2.type}"
        else:
            names = ", ".join([v.name for v in operands])
            in_types = ", ".join([v.type for v in operands])
        if len(res) == 1:
            head = f'{indent}{res[0].name} = "{self.opname}"({names})'
            out_types = res[0].type
        else:
            lhs = f"{res[0].name.split('#')[0]}:{len(res)} = " if res else ""
            head = f'{indent}{lhs}"{self.opname}"({names})'
            rt = self.result_types
            out_types = rt[0] if len(rt) == 1 else "(" + ", ".join(rt) + ")"
        if self.regions:
            out.append(head + " ({")
            for i, r in enumerate(self.regions):
                if i:
                    out.append(f"{indent}}}, {{")
                args = ", ".join([f"{a.name}: {a.type}" for a in r.args])
                out.append(f"{indent}^bb0({args}):")
                render_ops(r.ops, out, indent + "  ", tagged)
            head = f"{indent}}})"
        attrs = self.attrs
        if self.frontend:
            tagged.append(self.frontend)
            fe = ", ".join([f"{string_attr(k)} = {string_attr(v)}"
                            for k, v in self.frontend.items()])
            attrs = {**(attrs or {}), "mhlo.frontend_attributes": "{" + fe + "}"}
        if attrs:
            if len(attrs) == 1:
                (k, v), = attrs.items()
                head = f"{head} {{{k} = {v}}}"
            else:
                head = f"{head} {{{', '.join([f'{k} = {v}' for k, v in attrs.items()])}}}"
        out.append(f"{head} : ({in_types}) -> {out_types} loc({self.loc or 'unknown'})")


def render_ops(ops: Sequence[Op], out: list[str], indent: str, tagged: list) -> None:
    """Append the lines of ``ops`` (a block) to ``out``."""
    append = out.append
    for op in ops:
        line = op.line
        if line is None:
            op.render(out, indent, tagged)
        else:
            append(indent + line)


class OpValue(Op):
    """An op with one array result that is also that result: one object stands for both
    (``v.op is v``), for the ops ``FunctionBuilder.op`` renders at once (most of them)."""

    __slots__ = ("name", "aval", "type")

    def __init__(self, opname, operands, attrs, loc, line, name, aval, type):
        self.opname = opname
        self.operands = operands
        self.attrs = attrs
        self.loc = loc
        self.line = line
        self.name = name
        self.aval = aval
        self.type = type
        self.regions = ()
        self.frontend = None

    @property
    def op(self) -> OpValue:
        return self

    @property
    def results(self) -> tuple:
        return (self,)

    @property
    def result_types(self) -> tuple:
        return (self.type,)

    def __repr__(self) -> str:
        return f"{self.name}: {self.type}"


def _operand_text(operands: Sequence[Value]) -> tuple[str, str]:
    """``("%1, %2", "tensor<f32>, tensor<f32>")``: the operands' names and types."""
    k = len(operands)
    if k == 0:  # constants
        return "", ""
    if k == 1:
        o = operands[0]
        return o.name, o.type
    if k == 2:
        o, o2 = operands
        return f"{o.name}, {o2.name}", f"{o.type}, {o2.type}"
    return ", ".join([o.name for o in operands]), ", ".join([o.type for o in operands])


def _attr_text(attrs: dict | None) -> str:
    """`` {k = v, ...}`` (empty without attributes)."""
    if not attrs:
        return ""
    return " {" + ", ".join([f"{k} = {a}" for k, a in attrs.items()]) + "}"


class FunctionBuilder:
    """One ``func.func`` being built: value numbering and the current block."""

    def __init__(self, module: ModuleBuilder, name: str, visibility: str = "private"):
        self.module = module
        self.name = name
        self.visibility = visibility
        self._count = 0
        self.args: list[Value] = []
        self.arg_attrs: list[str] = []
        self.body = Region([])
        self.block = self.body
        self.results: list[Value] = []
        self.result_attrs: list[str] = []
        self.loc: str | None = None         # location for ops emitted now
        self.frontend: dict[str, str] | None = None  # XLA metadata for ops emitted now
        self.name_prefix = ""
        self.outer_metadata: tuple = ()  # XLA metadata applied from the caller
        self.open_regions: list[Region] = []  # regions being emitted into, innermost last
        # The ordered-effect token and the block it belongs to (lowering/tokens.py).
        self.effect_token: tuple | None = None
        # Constants re-emitted in another form (a splat at full shape): each is dropped
        # when rendered if nothing uses it.
        self.replaced: list[Op] = []
        # With symbolic dimensions (shape polymorphism): the value (a tensor<i32>) of each
        # dimension variable in this function, and how many leading arguments carry them.
        self.dim_values: dict | None = None
        self.n_dim_args = 0

    @property
    def ref(self) -> str:
        """``@name`` as the symbol appears in the text (quoted unless an identifier)."""
        return "@" + _sym(self.name)

    def fresh(self) -> str:
        self._count += 1
        return f"%{self._count}"

    def add_arg(self, aval, attrs: str = "", loc: str | None = None) -> Value:
        v = Value(self.fresh(), aval)
        self.args.append(v)
        self.arg_attrs.append((attrs, loc))
        return v

    def op(self, name: str, operands: Sequence[Value], results, attrs=None,
           regions: Sequence[Region] = ()):
        """Emit ``name`` with operands; ``results`` is an aval, a list of avals, or []."""
        # XLA's StableHLO->HLO conversion drops frontend attributes of constants, so they
        # are not attached there (the metadata check would report them as lost).
        frontend = self.frontend
        if frontend is not None and name == "stablehlo.constant":
            frontend = None
        if type(operands) is not list:
            operands = list(operands)
        kind = type(results)
        if kind is ShapedArray:  # one array result: the op is its result (OpValue)
            if self.dim_values is not None and name in _DYNAMIC and \
                    not _static(results.shape):
                return _dynamic_op(self, name, operands, results, attrs)
            t = _types.get((results.shape, results.dtype)) or tensor_type(results)
            self._count = n = self._count + 1
            vname = f"%{n}"
            if regions or frontend is not None:  # rendered from its fields at the end
                v = OpValue(name, operands, attrs, self.loc, None, vname, results, t)
                v.regions = regions
                v.frontend = frontend
            else:  # the common case: the text is made now
                names, in_types = _operand_text(operands)
                at = _attr_text(attrs) if attrs else ""
                loc = self.loc
                v = OpValue(name, operands, attrs, loc,
                            f'{vname} = "{name}"({names}){at} : ({in_types}) -> {t} '
                            f'loc({loc or "unknown"})', vname, results, t)
            self.block.ops.append(v)
            return v
        if kind is list and not results and not regions and frontend is None:
            # no results (a terminator): the text is made now
            names, in_types = _operand_text(operands)
            loc = self.loc
            op = Op(name, operands, (), attrs, loc, regions, None,
                    f'"{name}"({names}){_attr_text(attrs)} : ({in_types}) -> () '
                    f'loc({loc or "unknown"})')
            self.block.ops.append(op)
            return op.results
        single = isinstance(results, (ShapedArray, str))
        avals = [results] if single else list(results)
        types = [type_of(a) for a in avals]
        op = Op(name, operands, types, attrs, self.loc, regions, frontend)
        if len(avals) == 1:
            op.results = [Value(self.fresh(), avals[0], op, types[0])]
        elif avals:
            base = self.fresh()
            op.results = [Value(f"{base}#{i}", a, op, t)
                          for i, (a, t) in enumerate(zip(avals, types))]
        self.block.ops.append(op)
        return op.results[0] if single else op.results

    def new_region(self, arg_avals: Sequence) -> Region:
        return Region([Value(self.fresh(), a) for a in arg_avals])

    class _InRegion:
        __slots__ = ("fn", "region", "prev")

        def __init__(self, fn, region):
            self.fn = fn
            self.region = region

        def __enter__(self):
            self.prev = self.fn.block
            self.fn.block = self.region
            self.fn.open_regions.append(self.region)
            return self.region

        def __exit__(self, *exc):
            self.fn.block = self.prev
            self.fn.open_regions.pop()

    def in_region(self, region: Region) -> _InRegion:
        """``with fn.in_region(r):`` emits into region ``r``."""
        return FunctionBuilder._InRegion(self, region)

    def _drop_unused_replaced(self) -> None:
        blocks, used = [], {id(v) for v in self.results}
        todo = [self.body]
        while todo:
            region = todo.pop()
            blocks.append(region)
            for op in region.ops:
                used.update(map(id, op.operands))
                todo.extend(op.regions or ())
        dead = {id(op) for op in self.replaced if id(op) not in used}
        self.replaced = []
        if dead:
            for region in blocks:
                region.ops[:] = [op for op in region.ops if id(op) not in dead]

    def render(self, out: list[str], tagged: list) -> None:
        args = [f"{v.name}: {v.type}{f' {{{attrs}}}' if attrs else ''} loc({loc or 'unknown'})"
                for v, (attrs, loc) in zip(self.args, self.arg_attrs)]
        res = [f"{v.type} {{{attrs}}}" if attrs else v.type
               for v, attrs in zip(self.results, self.result_attrs or [""] * len(self.results))]
        res_s = "(" + ", ".join(res) + ")"
        if self.replaced:
            self._drop_unused_replaced()
        out.append(f"  func.func {self.visibility} {self.ref}({', '.join(args)}) -> {res_s} {{")
        render_ops(self.body.ops, out, "    ", tagged)
        ret_types = ", ".join([v.type for v in self.results])
        ret_ops = ", ".join([v.name for v in self.results])
        out.append(f'    "func.return"({ret_ops}) : ({ret_types}) -> () loc(unknown)')
        out.append("  } loc(unknown)")


# ---- symbolic dimensions ----------------------------------------------------------------

_I32 = ShapedArray((), "int32")
_DYNAMIC = frozenset(("stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.iota",
                      "stablehlo.constant"))


def _static(shape) -> bool:
    for d in shape:
        if type(d) is DimExpr:
            return False
    return True


class _MlirDimOps:
    """Dimension arithmetic emitted as ops on ``tensor<i32>`` (for ``evaluate``)."""

    def __init__(self, fn: FunctionBuilder):
        self.fn = fn

    def const(self, c: int) -> Value:
        return self.fn.op("stablehlo.constant", [], _I32,
                          {"value": f"dense<{int(c)}> : tensor<i32>"})

    def _bin(self, name, a, b) -> Value:
        return self.fn.op(name, [a, b], _I32)

    def add(self, a, b):
        return self._bin("stablehlo.add", a, b)

    def mul(self, a, b):
        return self._bin("stablehlo.multiply", a, b)

    def max(self, a, b):
        return self._bin("stablehlo.maximum", a, b)

    def min(self, a, b):
        return self._bin("stablehlo.minimum", a, b)

    def _cmp(self, a, b, direction) -> Value:
        return self.fn.op("stablehlo.compare", [a, b], ShapedArray((), "bool"), {
            "comparison_direction": f"#stablehlo<comparison_direction {direction}>",
            "compare_type": "#stablehlo<comparison_type SIGNED>"})

    def _round_toward_neg(self, a, b):
        """(truncated quotient, remainder, whether to round the quotient down)."""
        q = self._bin("stablehlo.divide", a, b)
        r = self._bin("stablehlo.remainder", a, b)
        zero = self.const(0)
        signs_differ = self.fn.op("stablehlo.compare", [self._cmp(r, zero, "LT"),
                                                        self._cmp(b, zero, "LT")],
                                  ShapedArray((), "bool"), {
            "comparison_direction": "#stablehlo<comparison_direction NE>"})
        adjust = self.fn.op("stablehlo.and", [self._cmp(r, zero, "NE"), signs_differ],
                            ShapedArray((), "bool"))
        return q, r, adjust

    def floordiv(self, a, b):
        q, _, adjust = self._round_toward_neg(a, b)
        q1 = self._bin("stablehlo.subtract", q, self.const(1))
        return self.fn.op("stablehlo.select", [adjust, q1, q], _I32)

    def mod(self, a, b):
        _, r, adjust = self._round_toward_neg(a, b)
        rb = self._bin("stablehlo.add", r, b)
        return self.fn.op("stablehlo.select", [adjust, rb, r], _I32)


def dim_value(fn: FunctionBuilder, d) -> Value:
    """The value (``tensor<i32>``) of dimension ``d`` (an int or expression) in ``fn``."""
    from minijax.core.shape_poly import evaluate
    if fn.dim_values is None and type(d) is DimExpr:
        raise ValueError(f"symbolic dimension '{d}' outside a shape-polymorphic lowering")
    return evaluate(d, fn.dim_values or {}, _MlirDimOps(fn))


def shape_tensor(fn: FunctionBuilder, shape) -> Value:
    """``tensor<Nxi32>`` holding the sizes of ``shape`` (ints and expressions)."""
    one = ShapedArray((1,), "int32")
    if _static(shape):
        dims = ", ".join(str(int(d)) for d in shape)
        return fn.op("stablehlo.constant", [], ShapedArray((len(shape),), "int32"),
                     {"value": f"dense<[{dims}]> : tensor<{len(shape)}xi32>"})
    parts = [fn.op("stablehlo.reshape", [dim_value(fn, d)], one) if type(d) is DimExpr
             else fn.op("stablehlo.constant", [], one,
                        {"value": f"dense<{int(d)}> : tensor<1xi32>"})
             for d in shape]
    if len(parts) == 1:
        return parts[0]
    return fn.op("stablehlo.concatenate", parts, ShapedArray((len(shape),), "int32"),
                 {"dimension": "0 : i64"})


def _dynamic_op(fn: FunctionBuilder, name: str, operands, aval, attrs):
    """The dynamic-shape form of an op whose result has symbolic dimensions."""
    if name == "stablehlo.constant":
        value = attrs["value"]
        if '"0x' in value or not value.startswith("dense<") or value.startswith("dense<["):
            raise NotImplementedError("a non-splat constant of symbolic shape "
                                      f"{aval.str_short()}")
        literal = value.rsplit(" : ", 1)[0]
        scalar = ShapedArray((), aval.dtype)
        from minijax.lowering.types import tensor_type as _tt
        x = fn.op("stablehlo.constant", [], scalar, {"value": f"{literal} : {_tt(scalar)}"})
        return fn.op("stablehlo.dynamic_broadcast_in_dim", [x, shape_tensor(fn, aval.shape)],
                     aval, {"broadcast_dimensions": "array<i64>"})
    shape = shape_tensor(fn, aval.shape)
    if name == "stablehlo.broadcast_in_dim":
        return fn.op("stablehlo.dynamic_broadcast_in_dim", [operands[0], shape], aval, attrs)
    if name == "stablehlo.reshape":
        return fn.op("stablehlo.dynamic_reshape", [operands[0], shape], aval, attrs)
    if name == "stablehlo.iota":
        return fn.op("stablehlo.dynamic_iota", [shape], aval, attrs)
    raise AssertionError(name)


class ModuleBuilder:
    def __init__(self, name: str, attrs: dict[str, str] | None = None):
        self.name = name
        self.attrs = attrs or {}
        self.functions: list[FunctionBuilder] = []
        self._names: set[str] = set()
        self._renames = 0  # suffix of the next renamed duplicate, shared by all names
        self.cache: dict = {}  # for rules that emit shared private functions
        self.axis_env: tuple = ()  # ((name, size), ...) bound for collectives
        # Python callables that custom calls of this module call back, by index, and
        # whether any has ordered effects (runtime/callback.py, lax/callback.py).
        self.host_callbacks: list = []
        self.ordered_effects = False
        self.tagged: list[dict] = []  # the frontend attributes of the ops rendered
        # Top-level ops spliced in as text (the functions of an imported module:
        # ``minijax.export``), rendered after the functions built here.
        self.raw: list[str] = []
        # For a module partitioned by Shardy: its mesh declarations (lowering/sdy.py),
        # rendered before the functions; None for GSPMD (``mhlo.sharding``) or no sharding.
        self.sdy = None
        # The dimension variables of a shape-polymorphic module (sorted names), or ().
        self.dim_vars: tuple = ()

    def new_function(self, name: str, visibility: str = "private") -> FunctionBuilder:
        # A taken name gets the suffix _N from one counter per module (as jax's symbol table
        # renames): f, g, f_0, g_1, f_2.
        base = name
        while name in self._names:
            name = f"{base}_{self._renames}"
            self._renames += 1
        self._names.add(name)
        fn = FunctionBuilder(self, name, visibility)
        self.functions.append(fn)
        return fn

    def render(self) -> str:
        attrs = ""
        if self.attrs:
            attrs = " attributes {" + ", ".join(f"{k} = {v}" for k, v in self.attrs.items()) + "}"
        out = [f"module @{_sym(self.name)}{attrs} {{"]
        self.tagged = []
        body = []
        for fn in self.functions:
            fn.render(body, self.tagged)
        if self.sdy is not None:  # declared while the functions were built
            out.extend(self.sdy.lines())
        out.extend(body)
        out.extend(self.raw)
        out.append("} loc(unknown)")
        return "\n".join(out) + "\n"


def _sym(name: str) -> str:
    """A symbol name as MLIR prints it: bare when an identifier, else quoted with escapes."""
    ok = (name and (name[0].isascii() and (name[0].isalpha() or name[0] == "_"))
          and all(c.isascii() and (c.isalnum() or c in "_$.") for c in name))
    if ok:
        return name
    out = []
    for b in name.encode("utf-8"):
        if b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b < 0x7F and b != 0x22:
            out.append(chr(b))
        else:
            out.append(f"\\{b:02X}")
    return '"' + "".join(out) + '"'


_loc_cache = MemoCache("minijax_memo_cache_size")  # (name, source) -> location


def name_loc(name: str, source) -> str:
    """``"jit(f)/sin"("file.py":3:0)`` — op name around the user's file:line."""
    key = (name, source)
    loc = _loc_cache.get(key)
    if loc is None:
        if source is None:
            loc = string_attr(name)
        else:
            loc = f"{string_attr(name)}({string_attr(source.file)}:{source.line}:0)"
        _loc_cache[key] = loc
    return loc
