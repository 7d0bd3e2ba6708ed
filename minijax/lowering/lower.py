"""Lowering jaxprs to StableHLO modules.

``lower_module`` builds ``module @jit_<name>`` with a public ``@main``;
``lower_jaxpr_into`` lowers a jaxpr's equations into the current block of a
function (used for ``@main``, private functions of nested ``jit`` and the
regions of control flow). Each equation is lowered by its primitive's
``lowering`` rule, called as ``rule(ctx, *operands, **params)`` with a
``RuleContext`` that knows the equation's avals and emits ops at its location.
"""

from __future__ import annotations

import gc
from typing import Any, NamedTuple
from collections.abc import Callable, Sequence

import numpy as np

from minijax.config import config
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal
from minijax.core.lru import MemoCache
from minijax.core.traceback_util import add_equation_source
from minijax.core.shape_poly import DimExpr, dim_vars_of
from minijax.lowering.builder import (FunctionBuilder, ModuleBuilder, Region, Value, _static,
                                      dim_value, name_loc, shape_tensor)
from minijax.lowering.types import dense_elements, i64_array, string_attr, tensor_type


class LoweringError(Exception):
    pass


class HostCallback(NamedTuple):
    """A Python function a module calls back (``lax/callback.py``): ``fn(*host arrays)``
    returns arrays of ``result_avals``; ``token``: its custom call threads a token."""

    fn: Callable
    result_avals: tuple
    token: bool
    what: str


class LoweringInfo(NamedTuple):
    """What the checks after compiling a lowered module need, noted while it was
    rendered (``lower_module(..., with_info=True)``), and the module's builder, from
    which its pretty text is printed without parsing (``pretty_text``)."""

    has_metadata: bool  # some op carries XLA frontend attributes (xla_metadata)
    must_fuse_groups: frozenset  # the MUST_FUSE identifiers of must_fuse_call groups
    module: ModuleBuilder | None = None

    def pretty_text(self) -> str | None:
        """The module as MLIR prints it without locations, or None where only MLIR
        can print it (``lowering/pretty.py``)."""
        if self.module is None:
            return None
        from minijax.lowering.pretty import pretty_text
        return pretty_text(self.module)


NO_METADATA = LoweringInfo(False, frozenset())


class ModuleText(str):
    """StableHLO module text that calls back into Python: the text, plus the callables
    its custom calls name by index (``host_callbacks``) and whether any of them has
    ordered effects. Everything that takes module text takes this; compilation hands
    the callables to XLA."""

    host_callbacks: tuple = ()
    ordered: bool = False
    # With minijax_debug_nans/_infs on: the jaxpr lowered, run op by op when a result
    # holds an invalid value (runtime/debug_nans.py).
    debug_jaxpr: ClosedJaxpr | None = None

    def __new__(cls, text: str, host_callbacks: Sequence[Callable], ordered: bool = False,
                debug_jaxpr: ClosedJaxpr | None = None):
        self = super().__new__(cls, text)
        self.host_callbacks = tuple(host_callbacks)
        self.ordered = ordered
        self.debug_jaxpr = debug_jaxpr
        return self


class RuleContext:
    """What a lowering rule sees: the function being built and the equation's avals."""

    __slots__ = ("fn", "eqn", "name_prefix", "_avals_in", "avals_out", "op")

    def __init__(self, fn: FunctionBuilder, eqn: JaxprEqn | None, avals_in, avals_out,
                 name_prefix: str):
        self.fn = fn
        self.eqn = eqn
        self._avals_in = avals_in  # None: read from the equation if a rule asks
        self.avals_out = avals_out
        self.name_prefix = name_prefix
        # ``ctx.op(name, operands, results, attrs=None, regions=())`` emits an op
        # (``FunctionBuilder.op``)
        self.op = fn.op

    @property
    def avals_in(self) -> list[ShapedArray]:
        avals = self._avals_in
        if avals is None:
            avals = self._avals_in = [a.aval for a in self.eqn.invars]
        return avals

    @property
    def module(self) -> ModuleBuilder:
        return self.fn.module

    def constant(self, value, dtype=None, shape=()) -> Value:
        """A ``stablehlo.constant`` of ``value`` with ``dtype`` broadcast to ``shape``."""
        arr = np.asarray(value)
        if dtype is not None:
            arr = arr.astype(dtype, copy=False)
        if self.fn.dim_values is not None and not _static(shape):
            if arr.size != 1:
                raise NotImplementedError(f"a non-scalar constant of symbolic shape {shape}")
            scalar = self.constant(arr.reshape(()))
            return self.broadcast_in_dim(scalar, ShapedArray(shape, arr.dtype), ())
        if not arr.ndim and type(shape) is tuple and arr.dtype.kind != "O":
            # a scalar (its bytes are its value): its aval and text made once
            key = (arr.dtype, arr.tobytes(), shape)
            made = _scalar_constants.get(key)
            if made is None:
                aval = ShapedArray(shape, arr.dtype)
                made = _scalar_constants[key] = (aval, {"value": dense_elements(arr, aval)})
            return self.fn.op("stablehlo.constant", [], made[0], made[1])
        aval = ShapedArray(shape if shape != () else arr.shape, arr.dtype)
        if aval.shape != arr.shape and arr.size != 1:
            arr = np.ascontiguousarray(np.broadcast_to(arr, aval.shape))
        return self.fn.op("stablehlo.constant", [], aval, {"value": dense_elements(arr, aval)})

    def broadcast_in_dim(self, x: Value, aval: ShapedArray, dims: Sequence[int]) -> Value:
        """``stablehlo.broadcast_in_dim``; a splat constant is re-emitted at full shape
        instead (XLA's HLO converter folds constant broadcasts and drops their metadata).
        The scalar constant it replaces is dropped if nothing else uses it."""
        op = x.op
        if op is not None and op.opname == "stablehlo.constant" and not x.aval.shape:
            value = op.attrs["value"]
            if '"0x' not in value:  # a splat literal
                key = (value, aval.shape, aval.dtype)
                attrs = _splats.get(key)
                if attrs is None:
                    literal = value.rsplit(" : ", 1)[0]
                    attrs = _splats[key] = {"value": f"{literal} : {tensor_type(aval)}"}
                self.fn.replaced.append(op)
                return self.fn.op("stablehlo.constant", [], aval, attrs)
        return self.fn.op("stablehlo.broadcast_in_dim", [x], aval,
                          {"broadcast_dimensions": i64_array(dims)})

    def dim_value(self, d) -> Value:
        """The ``tensor<i32>`` value of a dimension (an int or a symbolic expression)."""
        return dim_value(self.fn, d)

    def shape_tensor(self, shape) -> Value:
        """The ``tensor<Nxi32>`` of a shape's sizes (for dynamic-shape ops)."""
        return shape_tensor(self.fn, shape)

    def new_region(self, arg_avals: Sequence[ShapedArray]) -> Region:
        return self.fn.new_region(arg_avals)

    def in_region(self, region: Region):
        return self.fn.in_region(region)

    def lower_jaxpr(self, closed: ClosedJaxpr | Jaxpr, args: Sequence[Value],
                    name: str | None = None) -> list[Value]:
        """Lower a sub-jaxpr inline into the current block (e.g. a region body)."""
        if isinstance(closed, ClosedJaxpr):
            jaxpr, consts = closed.jaxpr, closed.consts
        else:
            jaxpr, consts = closed, []
        prefix = f"{self.name_prefix}/{name}" if name else self.name_prefix
        return lower_jaxpr_into(self.fn, jaxpr, consts, args, prefix, self.metadata)

    @property
    def metadata(self) -> tuple:
        """The XLA metadata in force for this equation (the caller's, then its own)."""
        md = self.eqn.ctx.metadata if self.eqn is not None else ()
        outer = self.fn.outer_metadata
        if not outer:
            return md
        if not md:
            return outer
        merged = dict(outer)
        merged.update(md)
        return tuple(merged.items())

    def lower_function(self, closed: ClosedJaxpr, name: str,
                       loc_name: str | None = None) -> FunctionBuilder:
        """Lower ``closed`` as a private function ``@name`` of the module (cached per jaxpr
        and per the metadata in force, which its ops inherit).

        Ops inside are named ``<prefix>/<loc_name>/<primitive>``.
        """
        metadata = self.metadata
        key = ("func", id(closed.jaxpr), name, loc_name, metadata)
        fn = self.module.cache.get(key)
        if fn is None:
            fn = self.module.new_function(name)
            if self.fn.dim_values is not None:  # the dimension variables come first
                _add_dim_args(fn, self.module.dim_vars)
            for a in closed.in_avals:
                fn.add_arg(a)
            loc_name = loc_name or name
            prefix = f"{self.name_prefix}/{loc_name}" if self.name_prefix else loc_name
            outs = lower_jaxpr_into(fn, closed.jaxpr, closed.consts, fn.args[fn.n_dim_args:],
                                    prefix, metadata)
            fn.results = outs
            self.module.cache[key] = (fn, closed)  # keep closed alive so id() stays unique
        else:
            fn = fn[0]
        return fn

    def call(self, fn: FunctionBuilder, args: Sequence[Value], attrs=None,
             frontend: dict | None = None) -> list[Value]:
        a = {"callee": fn.ref}
        if fn.n_dim_args:
            args = [self.fn.dim_values[v] for v in self.module.dim_vars] + list(args)
        if attrs:
            a.update(attrs)
        outs = self.fn.op("func.call", args, [v.aval for v in fn.results], a)
        if frontend:
            op = self.fn.block.ops[-1]
            op.add_frontend_attributes({k: v for k, v in frontend.items() if v is not None})
        return outs

    def ret(self, values: Sequence[Value], op: str = "stablehlo.return") -> None:
        self.fn.op(op, values, [])


# Scalar constants: (dtype, bytes, shape) -> (aval, attributes) for RuleContext.constant;
# (shape, dtype, value's dtype, bytes) -> attributes for literals. Ops share the
# attribute dicts (an op's attributes are never changed in place).
_scalar_constants = MemoCache("minijax_memo_cache_size")
_splats = MemoCache("minijax_memo_cache_size")  # (scalar's value, shape, dtype) -> attributes


def _const_value(ctx_fn: FunctionBuilder, x: Any, aval: ShapedArray) -> Value:
    arr = np.asarray(x)
    if arr.ndim or arr.dtype.kind == "O":  # (an object's bytes are not its value)
        return ctx_fn.op("stablehlo.constant", [], aval, {"value": dense_elements(arr, aval)})
    key = (aval.shape, aval.dtype, arr.dtype, arr.tobytes())
    attrs = _scalar_constants.get(key)
    if attrs is None:
        attrs = _scalar_constants[key] = {"value": dense_elements(arr, aval)}
    return ctx_fn.op("stablehlo.constant", [], aval, attrs)


def frontend_attributes(outer: tuple, inner: tuple) -> dict[str, str] | None:
    """Metadata pairs merged (inner wins; a value of None removes the key)."""
    if not outer and not inner:
        return None
    md = dict(outer)
    md.update(inner)
    out = {k: v for k, v in md.items() if v is not None}
    return out or None


def lower_jaxpr_into(fn: FunctionBuilder, jaxpr: Jaxpr, consts: Sequence[Any],
                     args: Sequence[Value], name_prefix: str,
                     outer_metadata: tuple = ()) -> list[Value]:
    """Lower the equations of ``jaxpr`` into ``fn``'s current block; returns the outputs.

    ``outer_metadata`` is the XLA metadata in force where this jaxpr is used (from
    the caller); each equation's own metadata is applied on top of it.
    """
    env: dict = {}  # Var -> Value
    saved_loc, saved_fe, saved_md = fn.loc, fn.frontend, fn.outer_metadata
    fn.outer_metadata = outer_metadata
    prefix_loc = string_attr(name_prefix) if name_prefix else None
    fn.loc = prefix_loc
    for v, c in zip(jaxpr.constvars, consts):
        env[v] = _const_value(fn, c, v.aval)
    for v, a in zip(jaxpr.invars, args):
        env[v] = a

    def read(atom) -> Value:
        if type(atom) is Literal:
            fn.loc = prefix_loc
            return _const_value(fn, atom.val, atom.aval)
        return env[atom]

    # The location of each (primitive, source line, name stack), made once per jaxpr.
    locs: dict = {}
    ctx = RuleContext(fn, None, None, None, name_prefix)
    eqn = None
    try:
        for eqn in jaxpr.eqns:
            prim = eqn.primitive
            rule = prim.lowering
            if rule is None:
                raise LoweringError(f"primitive {prim.name} has no lowering rule")
            invars = eqn.invars
            try:
                if len(invars) == 1:
                    ins = (env[invars[0]],)
                elif len(invars) == 2:
                    ins = (env[invars[0]], env[invars[1]])
                else:
                    ins = [env[a] for a in invars]
            except KeyError:  # literals: each becomes a constant, in operand order
                ins = [read(a) for a in invars]
            ectx = eqn.ctx
            key = (prim, eqn.source, ectx.name_stack)
            loc = locs.get(key) if prim.loc_name is None else None
            if loc is None:
                short = prim.loc_name(eqn.params) if prim.loc_name else prim.name
                stack = ectx.name_stack  # named_scope / named_call names
                if stack:
                    short = "/".join((*stack, short))
                opname = f"{name_prefix}/{short}" if name_prefix else short
                loc = locs[key] = name_loc(opname, eqn.source)
            fn.loc = loc
            md = ectx.metadata
            fn.frontend = frontend_attributes(outer_metadata, md) if (md or outer_metadata) \
                else None
            # One context serves every equation of this jaxpr (rules use it only while
            # they run).
            ctx.eqn = eqn
            ctx._avals_in = None
            outvars = eqn.outvars
            if prim.multiple_results:
                ctx.avals_out = [v.aval for v in outvars]
                outs = rule(ctx, *ins, **eqn.params)
                for v, o in zip(outvars, outs):
                    env[v] = o
            else:
                out = outvars[0]
                ctx.avals_out = [out.aval]
                env[out] = rule(ctx, *ins, **eqn.params)
        eqn = None
        fn.loc = prefix_loc
        fn.frontend = None
        return [read(a) for a in jaxpr.outvars]
    except Exception as e:
        if eqn is not None:  # the user's line that made the equation that failed
            add_equation_source(e, eqn)
        raise
    finally:
        fn.loc, fn.frontend, fn.outer_metadata = saved_loc, saved_fe, saved_md


def lower_module(closed: ClosedJaxpr, *, module_name: str, name_prefix: str,
                 arg_names: Sequence[str] | None = None,
                 result_names: Sequence[str] | None = None,
                 arg_attrs: Sequence[str] | None = None,
                 num_replicas: int = 1, num_partitions: int = 1,
                 outer_metadata: tuple = (), axis_env: tuple = (),
                 result_attrs: Sequence[str] | None = None, with_info: bool = False,
                 sdy=None, result_placements: Sequence[str | None] | None = None):
    """The StableHLO text of ``module @<module_name>`` whose ``@main`` computes ``closed``.

    ``axis_env`` (``((name, size), ...)``) binds named axes: collectives lower to
    cross-replica ops whose replica groups come from it. ``arg_attrs`` and
    ``result_attrs`` are per-argument/per-result attribute text (e.g.
    ``mhlo.sharding = "{replicated}"``, ``tf.aliasing_output = 0 : i32``).
    With ``with_info`` the result is ``(text, LoweringInfo)``. ``sdy``: for a module
    partitioned by Shardy, its mesh table (``lowering.sdy.Meshes``, already holding the
    meshes that ``arg_attrs``/``result_attrs`` name). ``result_placements``: per result,
    a memory kind it must be placed in (``annotate_device_placement``, as jax writes a
    result sharding's memory kind) or None.
    """
    # The builder makes many small objects and no cycles worth collecting mid-way: the
    # collector's passes over them grew lowering superlinearly (0.125 s instead of
    # 0.079 s for 28,000 ops).
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        return _lower_module(closed, module_name=module_name, name_prefix=name_prefix,
                             arg_names=arg_names, result_names=result_names,
                             arg_attrs=arg_attrs, num_replicas=num_replicas,
                             num_partitions=num_partitions, outer_metadata=outer_metadata,
                             axis_env=axis_env, result_attrs=result_attrs,
                             with_info=with_info, sdy=sdy,
                             result_placements=result_placements)
    finally:
        if gc_was_on:
            gc.enable()


def _lower_module(closed, *, module_name, name_prefix, arg_names, result_names, arg_attrs,
                  num_replicas, num_partitions, outer_metadata, axis_env, result_attrs,
                  with_info, sdy=None, result_placements=None):
    mod = ModuleBuilder(module_name, {
        "mhlo.num_partitions": f"{num_partitions} : i32",
        "mhlo.num_replicas": f"{num_replicas} : i32",
    })
    mod.sdy = sdy
    mod.axis_env = tuple(axis_env)  # named axes for collectives (pmap/xla_computation)
    fn = mod.new_function("main", "public")
    for i, aval in enumerate(closed.in_avals):
        name = arg_names[i] if arg_names and i < len(arg_names) else None
        attrs = arg_attrs[i] if arg_attrs else ""
        fn.add_arg(aval, attrs, string_attr(name) if name else None)
    dim_vars = tuple(dim_vars_of(a.shape for a in closed.in_avals))
    if dim_vars:  # shape polymorphism: main computes the dimension variables, as jax's
        outs = _lower_polymorphic(mod, fn, closed, dim_vars, name_prefix, outer_metadata)
    else:
        outs = lower_jaxpr_into(fn, closed.jaxpr, closed.consts, fn.args, name_prefix,
                                outer_metadata)
    if result_placements is not None:
        outs = [o if kind is None else _annotate_placement(fn, o, kind)
                for o, kind in zip(outs, result_placements)]
    fn.results = outs
    if result_names is not None or result_attrs is not None:
        fn.result_attrs = []
        for i in range(len(outs)):
            parts = []
            if result_names is not None:
                parts.append(f"jax.result_info = {string_attr(result_names[i])}")
            if result_attrs is not None and result_attrs[i]:
                parts.append(result_attrs[i])
            fn.result_attrs.append(", ".join(parts))
    text = mod.render()
    checked = config.minijax_debug_nans or config.minijax_debug_infs
    if mod.host_callbacks or checked:  # the text with what running it needs
        text = ModuleText(text, mod.host_callbacks, mod.ordered_effects,
                          closed if checked else None)
    if not with_info:
        return text
    if not mod.tagged:
        return text, LoweringInfo(False, frozenset(), mod)
    return text, LoweringInfo(True, frozenset(
        fe["MUST_FUSE"] for fe in mod.tagged if "MUST_FUSE" in fe), mod)



_I32 = ShapedArray((), np.int32)


def _annotate_placement(fn: FunctionBuilder, x: Value, kind: str) -> Value:
    """``x`` marked to be placed in memory ``kind`` (XLA's ``annotate_device_placement``
    custom call, which places a result in that memory)."""
    return fn.op("stablehlo.custom_call", [x], x.aval, {
        "backend_config": '""',
        "call_target_name": '"annotate_device_placement"',
        "has_side_effect": "true",
        "mhlo.frontend_attributes": f'{{_xla_buffer_placement = "{kind}"}}',
    })


def _add_dim_args(fn: FunctionBuilder, dim_vars: Sequence[str]) -> None:
    for v in dim_vars:
        fn.add_arg(_I32, f"jax.global_constant = {string_attr(v)}")
    fn.n_dim_args = len(dim_vars)
    fn.dim_values = dict(zip(dim_vars, fn.args))


def _lower_polymorphic(mod: ModuleBuilder, main: FunctionBuilder, closed: ClosedJaxpr,
                       dim_vars: tuple, name_prefix: str, outer_metadata: tuple) -> list:
    """``@main`` of dynamic-shaped arguments: derives each dimension variable from an
    argument's size (``stablehlo.get_dimension_size``) and calls
    ``@_wrapped_jax_export_main(dimension variables..., arguments...)``, which computes
    the function (jax's calling convention for shape polymorphism)."""
    mod.dim_vars = dim_vars
    main.dim_values = {}
    avals = closed.in_avals
    for v in dim_vars:
        main.dim_values[v] = _solve_dim_var(main, avals, v)
    inner = mod.new_function("_wrapped_jax_export_main")
    _add_dim_args(inner, dim_vars)
    for a, (_attrs, loc) in zip(main.args, main.arg_attrs):
        inner.add_arg(a.aval, "", loc)
    outs = lower_jaxpr_into(inner, closed.jaxpr, closed.consts, inner.args[len(dim_vars):],
                            name_prefix, outer_metadata)
    inner.results = outs
    operands = [main.dim_values[v] for v in dim_vars] + list(main.args)
    res = main.op("func.call", operands, [o.aval for o in outs], {"callee": inner.ref})
    return list(res)


def _solve_dim_var(fn: FunctionBuilder, avals, v: str) -> Value:
    """``v``'s value from the first argument dimension ``k*v + c`` (``c`` constant)."""
    for i, a in enumerate(avals):
        for j, d in enumerate(a.shape):
            if type(d) is not DimExpr or d._get_vars() != {v}:
                continue
            terms = dict(d._terms)
            k = terms.pop(((("var", v), 1),), None)
            c = terms.pop((), 0)
            if k is None or terms:
                continue
            size = fn.op("stablehlo.get_dimension_size", [fn.args[i]], _I32,
                         {"dimension": f"{j} : i64"})
            ops = [size]
            if c:
                cst = fn.op("stablehlo.constant", [], _I32,
                            {"value": f"dense<{-c}> : tensor<i32>"})
                size = fn.op("stablehlo.add", [size, cst], _I32)
            if k != 1:
                cst = fn.op("stablehlo.constant", [], _I32,
                            {"value": f"dense<{k}> : tensor<i32>"})
                size = fn.op("stablehlo.divide", [size, cst], _I32)
            del ops
            return size
    raise ValueError(
        f"Cannot solve for values of dimension variables {[v]}: each dimension variable "
        "must appear alone (as `k*v + c`) in some dimension of the argument shapes. "
        f"The argument shapes are {[a.str_short() for a in avals]}")
