"""Control flow: ``cond``/``switch``, ``while_loop``/``fori_loop`` and ``scan``/``map``.

Three primitives, named and parameterized as in jax::

    cond[branches=(f0, f1, ...)] index *consts *operands
    while[cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts] *cond_consts *body_consts *carry
    scan[jaxpr, length, reverse, unroll, num_consts, num_carry] *consts *carry *xs

The user's functions are traced to jaxprs on the avals of their flattened
(pytree) arguments. Values a function closes over (outer tracers or concrete
arrays) become leading operands of the primitive: the jaxprs in the params
close over nothing (closure conversion, as jax does).

Lowering: ``cond`` is a ``stablehlo.case`` with one region per branch;
``while`` a ``stablehlo.while`` whose consts travel as loop-carried values;
``scan`` a ``stablehlo.while`` over an int32 step counter that reads ``xs`` with
``dynamic_slice`` and writes the stacked ``ys`` (preallocated zeros) with
``dynamic_update_slice``. ``scan``'s ``unroll=k`` runs ``k`` steps per loop
iteration, the ``length % k`` remaining steps after the loop.

Traced jaxprs are cached per (functions, argument types) while no closed-over
value is a tracer, so calling e.g. ``lax.cond`` eagerly with the same functions
reuses the compiled executable.
"""

from __future__ import annotations

import inspect
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from minijax.config import config
from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var
from minijax.core.trace import DebugInfo, Primitive, Tracer, current_ctx, get_aval, trace_to_jaxpr
from minijax.lax._util import type_error
from minijax.lax.binary import add, lt, ne
from minijax.lax.convert import convert_element_type, convert_element_type_p
from minijax.lax.select import clamp
from minijax.lowering.types import i64_array
from minijax.tree_util import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path

cond_p = Primitive("cond", multiple_results=True)
while_p = Primitive("while", multiple_results=True)
scan_p = Primitive("scan", multiple_results=True)

_INT32 = dtypes.int32
_NO_OPERAND = object()


# ---- tracing user functions ------------------------------------------------------------

class _Traced(NamedTuple):
    """A user function traced to a jaxpr; outputs grouped in ``parts`` (trees and paths)."""

    jaxpr: Jaxpr
    consts: list
    trees: list          # one PyTreeDef per output part
    paths: list          # one list of key paths per output part

    def out_avals(self, part: int | None = None) -> list[ShapedArray]:
        avals = [v.aval for v in self.jaxpr.outvars]
        if part is None:
            return avals
        start = sum(t.num_leaves for t in self.trees[:part])
        return avals[start:start + self.trees[part].num_leaves]


def _fun_name(fun: Callable) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def _arg_names(fun: Callable, args: tuple) -> list[str]:
    """``x``, ``carry[0]['w']``... for the leaves of ``fun(*args)``."""
    try:
        params = [p.name for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = []
    for path, _ in tree_flatten_with_path(args)[0]:
        i = path[0].idx
        names.append((params[i] if i < len(params) else f"args[{i}]") + keystr(path[1:]))
    return names


def _trace(api: str, label: str, fun: Callable, call: Callable[[list], list],
           in_avals: Sequence[ShapedArray], args: tuple) -> _Traced:
    """Trace ``call(leaves) -> [part, ...]`` (which calls the user's ``fun``) to a jaxpr."""
    info: list = []

    def flat_fun(*tracers):
        parts = call(list(tracers))
        leaves, trees, paths = [], [], []
        for part in parts:
            pairs, tree = tree_flatten_with_path(part)
            for p, x in pairs:
                _check_output(api, label, x, p)
                leaves.append(x)
            trees.append(tree)
            paths.append([p for p, _ in pairs])
        info.append((trees, paths))
        return leaves, None

    debug = DebugInfo(api, _fun_name(fun), _arg_names(fun, args))
    jaxpr, consts, _ = trace_to_jaxpr(flat_fun, in_avals, debug)
    trees, paths = info[0]
    return _Traced(jaxpr, consts, trees, paths)


def _check_output(api: str, label: str, x: Any, path: tuple) -> None:
    try:
        get_aval(x)
    except TypeError:
        raise TypeError(f"{api}: {label} returned a value of type {type(x).__name__} at output "
                        f"path {keystr(path) or '(root)'}, which is not a valid minijax array "
                        "type (return arrays, scalars, or pytrees of them).") from None


def _closure_convert(jaxpr: Jaxpr) -> ClosedJaxpr:
    """``jaxpr`` with its constvars turned into leading inputs (it closes over nothing)."""
    return ClosedJaxpr(Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns,
                             jaxpr.debug_info), [])


# ---- caching traced jaxprs -------------------------------------------------------------

class _Plan(NamedTuple):
    """What tracing produced: the primitive's params, its leading consts, output trees."""

    params: dict
    consts: list
    out_tree: Any
    promote: tuple = ()   # per carry leaf: dtype to convert the initial value to, or None


_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 512


def _cached(kind: str, funs: Sequence[Callable], key: tuple, build: Callable[[], _Plan]) -> _Plan:
    """``build()``, reused for the same functions, argument types and config."""
    try:
        k = (kind, tuple(weakref.ref(f) for f in funs), key, current_ctx(), config.trace_key)
        plan = _CACHE.get(k)
    except TypeError:  # a function that cannot be weakly referenced (e.g. a NumPy ufunc)
        return build()
    if plan is not None:
        _CACHE.move_to_end(k)
        return plan
    plan = build()
    if not any(isinstance(c, Tracer) for c in plan.consts):
        _CACHE[k] = plan
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return plan


def _wrapper(cache: weakref.WeakKeyDictionary, fun: Callable, make: Callable) -> Callable:
    """``make(get_fun)``, one per ``fun`` (so a wrapped function hits the trace cache)."""
    try:
        w = cache.get(fun)
    except TypeError:
        return make(lambda: fun)
    if w is None:
        w = cache[fun] = make(weakref.ref(fun))  # a weak ref: the value must not keep the key
    return w


# ---- type checks and messages ------------------------------------------------------------

class _TypeStr(str):
    def __repr__(self) -> str:
        return str(self)


def _tree_str(tree: PyTreeDef, avals: Sequence[ShapedArray]) -> str:
    """The output tree with types at the leaves: ``(f32[3], {'a': i32[]})``."""
    return repr(tree.unflatten([_TypeStr(a.str_short()) for a in avals]))


def _typematch(a: ShapedArray, b: ShapedArray) -> bool:
    """Equal types up to weak typing."""
    return a.shape == b.shape and a.dtype == b.dtype


def _types_match(xs: Sequence[ShapedArray], ys: Sequence[ShapedArray]) -> bool:
    return len(xs) == len(ys) and all(_typematch(a, b) for a, b in zip(xs, ys))


def _short(avals: Sequence[ShapedArray]) -> str:
    return ", ".join(a.str_short() for a in avals)


def _check_branch_outputs(api: str, name1: str, name2: str, t1: _Traced, t2: _Traced) -> None:
    tree1, tree2 = t1.trees[0], t2.trees[0]
    avals1, avals2 = t1.out_avals(), t2.out_avals()
    if tree1 != tree2:
        raise TypeError(
            f"{api}: {name1} and {name2} output must have the same pytree structure, got\n"
            f"  {_tree_str(tree1, avals1)} and\n  {_tree_str(tree2, avals2)}\n"
            f"Revise {name1} and/or {name2} so that they return the same structure.")
    diffs = [f"the output of {name1}{_at(p)} has type {a.str_short()} but the corresponding "
             f"output of {name2} has type {b.str_short()}"
             for p, a, b in zip(t1.paths[0], avals1, avals2) if not _typematch(a, b)]
    if diffs:
        raise TypeError(
            f"{api}: {name1} and {name2} output must have identical types, got\n"
            f"  {_tree_str(tree1, avals1)} and\n  {_tree_str(tree2, avals2)}\n"
            + "".join(f"  * {d}\n" for d in diffs)
            + f"Revise {name1} and/or {name2} so that all output types match.")


def _at(path: tuple) -> str:
    return f" at path {keystr(path)}" if path else ""


def _check_carry(api: str, fun: Callable, in_tree: PyTreeDef, in_paths: list,
                 in_avals: Sequence[ShapedArray], out_tree: PyTreeDef,
                 out_avals: Sequence[ShapedArray]) -> None:
    """The carry output of ``fun`` must have the carry input's structure and types."""
    if in_tree != out_tree:
        raise TypeError(
            f"{api} function carry input and carry output must have the same pytree "
            f"structure, got\n  input:  {_tree_str(in_tree, in_avals)} and\n"
            f"  output: {_tree_str(out_tree, out_avals)}\n"
            "Revise the function so that the carry output has the same pytree structure as "
            "the carry input.")
    if _types_match(in_avals, out_avals):
        return
    try:
        carry_name = next(iter(inspect.signature(fun).parameters))
    except (TypeError, ValueError, StopIteration):
        carry_name = "carry"
    diffs = [f"the input carry component {carry_name}{keystr(p)} has type {a.str_short()} but "
             f"the corresponding output carry component has type {b.str_short()}"
             for p, a, b in zip(in_paths, in_avals, out_avals) if not _typematch(a, b)]
    raise TypeError(
        f"{api} function carry input and carry output must have identical types, got\n"
        f"  input:  {_tree_str(in_tree, in_avals)} and\n"
        f"  output: {_tree_str(out_tree, out_avals)}\n"
        + "".join(f"  * {d}\n" for d in diffs)
        + "Revise the function so that all output types match the corresponding input types.")


def _weak_promotions(in_avals: Sequence[ShapedArray],
                     out_avals: Sequence[ShapedArray]) -> tuple:
    """Dtypes to convert weakly typed initial carry values to (as jax), or None per leaf.

    A weak input (e.g. a Python scalar) whose output has the same shape but another dtype
    is converted to the promoted dtype, and the function retraced.
    """
    if len(in_avals) != len(out_avals):
        return ()
    out = []
    for a, b in zip(in_avals, out_avals):
        if a.weak_type and a.shape == b.shape and a.dtype != b.dtype:
            out.append(dtypes.result_type((a.dtype, True), (b.dtype, b.weak_type))[0])
        else:
            out.append(None)
    return tuple(out) if any(d is not None for d in out) else ()


def _convert(x: Any, dtype: np.dtype) -> Any:
    """``x`` as ``dtype`` (not weak); Python and NumPy values stay concrete."""
    if type(x) in (bool, int, float, complex) or isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x, dtype)
    return convert_element_type(x, dtype)


def _promote(leaves: list, promote: tuple) -> list:
    if not promote:
        return leaves
    return [x if d is None else _convert(x, d) for x, d in zip(leaves, promote)]


def _strong_outputs(jaxpr: Jaxpr, weak: Sequence[bool]) -> tuple:
    """Outputs and equations of ``jaxpr`` with weak outputs made strong where ``weak`` is False."""
    outvars, eqns = list(jaxpr.outvars), list(jaxpr.eqns)
    for i, (v, w) in enumerate(zip(jaxpr.outvars, weak)):
        if v.aval.weak_type and not w:
            new = Var(v.aval.strip_weak_type())
            eqns.append(JaxprEqn(convert_element_type_p, [v], [new],
                                 {"new_dtype": v.aval.dtype, "weak_type": False}))
            outvars[i] = new
    return outvars, eqns


# ---- cond / switch ---------------------------------------------------------------------------

def _operands(operands: tuple, operand: Any, api: str) -> tuple:
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(f"{api}: if 'operand' keyword is passed then no positional operands can "
                        f"be passed, got operand={operand!r} and positional operands {operands}")
    return (operand,)


def _is_concrete_scalar(x: Any) -> bool:
    return type(x) in (bool, int, float, complex) or isinstance(x, (np.ndarray, np.generic))


def _scalar_aval(api: str, what: str, x: Any) -> ShapedArray:
    try:
        aval = None if x is None or isinstance(x, (list, tuple)) else get_aval(x)
    except TypeError:
        aval = None
    if aval is None:
        raise TypeError(f"{api}: {what} must be a scalar, got a value of type "
                        f"{type(x).__name__}: {x!r}")
    if aval.shape != ():
        raise TypeError(f"{api}: {what} must be a scalar, got an array of type "
                        f"{aval.str_short()} (shape {aval.shape}); use jnp.where or lax.select "
                        "to select elementwise")
    return aval


def _pred_index(pred: Any):
    """``pred`` as the int32 branch index of ``cond`` (nonzero -> 1)."""
    aval = _scalar_aval("cond", "pred", pred)
    dt = aval.dtype
    if not (dtypes.is_bool(dt) or dtypes.is_int(dt) or dtypes.is_float(dt)):
        raise TypeError(f"cond: pred must be a boolean or number, got a value of type "
                        f"{aval.str_short()}")
    if _is_concrete_scalar(pred):
        return np.asarray(np.asarray(pred) != 0, _INT32)
    if not dtypes.is_bool(dt):
        pred = ne(pred, np.zeros((), dt))
    return convert_element_type(pred, _INT32)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_NO_OPERAND):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``; both are traced.

    ``pred`` is a scalar boolean or number (nonzero means true). Both functions must
    return the same pytree structure and types (a weak type in one branch gives way to
    the other branch's type).
    """
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _operands(operands, operand, "cond")
    index = _pred_index(pred)
    return _cond_bind("cond", index, (false_fun, true_fun), ("false_fun", "true_fun"),
                      (1, 0), operands)


def switch(index, branches: Sequence[Callable], *operands, operand=_NO_OPERAND):
    """``branches[clamp(0, index, len(branches) - 1)](*operands)``; all branches are traced."""
    branches = tuple(branches)
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    operands = _operands(operands, operand, "switch")
    aval = _scalar_aval("switch", "the branch index", index)
    if not dtypes.is_int(aval.dtype):
        raise TypeError(f"switch: the branch index must be an integer, got a value of type "
                        f"{aval.str_short()}")
    if not branches:
        raise ValueError("switch: empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    if _is_concrete_scalar(index):
        index = np.asarray(index, _INT32)
    else:
        index = convert_element_type(index, _INT32)
    index = clamp(np.asarray(0, _INT32), index, np.asarray(len(branches) - 1, _INT32))
    labels = tuple(f"branch {i}" for i in range(len(branches)))
    return _cond_bind("switch", index, branches, labels, tuple(range(len(branches))), operands)


def _cond_bind(api: str, index, branches: tuple, labels: tuple, order: tuple, operands: tuple):
    leaves, tree = tree_flatten(operands)
    avals = tuple(get_aval(x) for x in leaves)

    def build() -> _Plan:
        def call_branch(fun):
            return lambda xs: [fun(*tree.unflatten(xs))]
        traced = [_trace(api, label, fun, call_branch(fun), avals, operands)
                  for fun, label in zip(branches, labels)]
        first = order[0]
        for i in order[1:]:
            _check_branch_outputs(api, labels[first], labels[i], traced[first], traced[i])
        # A weak output type gives way to a strong one in another branch.
        weak = [all(ws) for ws in zip(*[[a.weak_type for a in t.out_avals()] for t in traced])]
        jaxprs, consts = _merge_consts(traced, weak, order)
        return _Plan({"branches": tuple(jaxprs)}, consts, traced[first].trees[0])

    plan = _cached(api, branches, (tree, avals), build)
    outs = cond_p.bind(index, *plan.consts, *leaves, **plan.params)
    return plan.out_tree.unflatten(outs)


def _merge_consts(traced: list[_Traced], weak: Sequence[bool],
                  order: Sequence[int]) -> tuple[list, list]:
    """Closure-convert each branch over the union of all branches' consts (taken in ``order``)."""
    consts: list = []
    position: dict[int, int] = {}
    for i in order:
        for c in traced[i].consts:
            if id(c) not in position:
                position[id(c)] = len(consts)
                consts.append(c)
    const_avals = [get_aval(c) for c in consts]
    jaxprs = []
    for t in traced:
        j = t.jaxpr
        constvars = [Var(a) for a in const_avals]
        for v, c in zip(j.constvars, t.consts):
            constvars[position[id(c)]] = v
        outvars, eqns = _strong_outputs(j, weak)
        jaxprs.append(ClosedJaxpr(Jaxpr([], [*constvars, *j.invars], outvars, eqns,
                                        j.debug_info), []))
    return jaxprs, consts


@cond_p.def_abstract_eval
def _cond_abstract(index, *args, branches):
    if index.shape != () or index.dtype != _INT32:
        raise type_error("cond", "the branch index must be an int32 scalar", index)
    out0 = branches[0].out_avals
    for b in branches:
        if not _types_match(b.in_avals, args):
            raise type_error("cond", f"operands do not match the branch inputs "
                             f"({_short(b.in_avals)})", index, *args)
        if not _types_match(b.out_avals, out0):
            raise type_error("cond", f"branches have different output types: "
                             f"({_short(out0)}) and ({_short(b.out_avals)})", index, *args)
    return [a.update(weak_type=all(b.out_avals[i].weak_type for b in branches))
            for i, a in enumerate(out0)]


@cond_p.def_lowering
def _cond_lower(ctx, index, *args, branches):
    regions = []
    for i, branch in enumerate(branches):
        region = ctx.new_region([])
        with ctx.in_region(region):
            ctx.ret(ctx.lower_jaxpr(branch, args, name=f"cond/branch_{i}_fun"))
        regions.append(region)
    return ctx.op("stablehlo.case", [index], list(ctx.avals_out), regions=regions)


# ---- while_loop / fori_loop ----------------------------------------------------------------

def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """``val = init_val; while cond_fun(val): val = body_fun(val)``, as one XLA loop.

    ``cond_fun`` must return a boolean scalar; ``body_fun`` must return a value of the
    same pytree structure and types as ``init_val``.
    """
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be callable.")
    leaves, tree = tree_flatten(init_val)
    avals = tuple(get_aval(x) for x in leaves)

    def build() -> _Plan:
        in_paths = [p for p, _ in tree_flatten_with_path(init_val)[0]]

        def trace_both(in_avals):
            ct = _trace("while_loop", "cond_fun", cond_fun,
                        lambda xs: [cond_fun(tree.unflatten(xs))], in_avals, (init_val,))
            pred = ct.out_avals()
            if len(pred) != 1 or ct.trees[0].num_nodes != 1 or \
                    pred[0].shape != () or pred[0].dtype != dtypes.bool_:
                raise TypeError(f"while_loop: cond_fun must return a boolean scalar, but got "
                                f"{_tree_str(ct.trees[0], pred)}")
            bt = _trace("while_loop", "body_fun", body_fun,
                        lambda xs: [body_fun(tree.unflatten(xs))], in_avals, (init_val,))
            return ct, bt

        ct, bt = trace_both(avals)
        promote = _weak_promotions(avals, bt.out_avals())
        in_avals = avals
        if promote:
            in_avals = tuple(a if d is None else ShapedArray(a.shape, d)
                             for a, d in zip(avals, promote))
            ct, bt = trace_both(in_avals)
        _check_carry("while_loop body", body_fun, tree, in_paths, in_avals, bt.trees[0],
                     bt.out_avals())
        # (params in jax's printing order)
        params = {"body_jaxpr": _closure_convert(bt.jaxpr), "body_nconsts": len(bt.consts),
                  "cond_jaxpr": _closure_convert(ct.jaxpr), "cond_nconsts": len(ct.consts)}
        return _Plan(params, [*ct.consts, *bt.consts], tree, promote)

    plan = _cached("while", (cond_fun, body_fun), (tree, avals), build)
    outs = while_p.bind(*plan.consts, *_promote(leaves, plan.promote), **plan.params)
    return tree.unflatten(outs)


@while_p.def_abstract_eval
def _while_abstract(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cconsts, bconsts = args[:cond_nconsts], args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = args[cond_nconsts + body_nconsts:]
    if not _types_match(cond_jaxpr.in_avals, [*cconsts, *carry]):
        raise type_error("while", f"operands do not match the cond_jaxpr inputs "
                         f"({_short(cond_jaxpr.in_avals)})", *args)
    if not _types_match(body_jaxpr.in_avals, [*bconsts, *carry]):
        raise type_error("while", f"operands do not match the body_jaxpr inputs "
                         f"({_short(body_jaxpr.in_avals)})", *args)
    if not _types_match(cond_jaxpr.out_avals, [ShapedArray((), dtypes.bool_)]):
        raise type_error("while", f"cond_jaxpr must return a boolean scalar, got "
                         f"({_short(cond_jaxpr.out_avals)})", *args)
    if not _types_match(body_jaxpr.out_avals, carry):
        raise type_error("while", f"body_jaxpr output types ({_short(body_jaxpr.out_avals)}) "
                         f"differ from the carry types", *args)
    return body_jaxpr.out_avals


@while_p.def_lowering
def _while_lower(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    # The consts travel as loop-carried values (returned unchanged by the body).
    nc = cond_nconsts + body_nconsts
    avals = [a.aval for a in args]
    cond_region = ctx.new_region(avals)
    with ctx.in_region(cond_region):
        xs = cond_region.args
        ctx.ret(ctx.lower_jaxpr(cond_jaxpr, [*xs[:cond_nconsts], *xs[nc:]], name="while/cond"))
    body_region = ctx.new_region(avals)
    with ctx.in_region(body_region):
        xs = body_region.args
        new = ctx.lower_jaxpr(body_jaxpr, xs[cond_nconsts:], name="while/body")
        ctx.ret([*xs[:nc], *new])
    outs = ctx.op("stablehlo.while", list(args), avals, regions=[cond_region, body_region])
    return outs[nc:]


_fori_scan_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_fori_while_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _make_fori_scan_body(get_fun: Callable) -> Callable:
    def scanned_fun(loop_carry, _):
        i, x = loop_carry
        return (add(i, 1), get_fun()(i, x)), None
    return scanned_fun


def _make_fori_while_body(get_fun: Callable) -> Callable:
    def while_body_fun(loop_carry):
        i, upper, x = loop_carry
        return add(i, np.ones((), i.dtype)), upper, get_fun()(i, x)
    return while_body_fun


def _fori_cond_fun(loop_carry):
    i, upper, _ = loop_carry
    return lt(i, upper)


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
    """``val = init_val; for i in range(lower, upper): val = body_fun(i, val)``.

    With concrete bounds (Python/NumPy integers or concrete arrays) this is a ``scan``
    of ``upper - lower`` steps whose index is a weakly typed default integer (as jax);
    otherwise a ``while_loop`` whose index has the bounds' dtype.
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    la, ua = get_aval(lower), get_aval(upper)
    if la.dtype == ua.dtype:
        dtype = la.dtype
    else:
        # A weakly typed bound (a Python int) takes the other bound's signed integer type.
        dtype = None
        if dtypes.is_signed(la.dtype) and dtypes.is_signed(ua.dtype):
            if la.weak_type and not ua.weak_type:
                dtype = ua.dtype
            elif ua.weak_type and not la.weak_type:
                dtype = la.dtype
        if dtype is None:
            raise TypeError("lower and upper arguments to fori_loop must have equal types, "
                            f"got {la.dtype.name} and {ua.dtype.name}")
    use_scan = False
    if not isinstance(lower, Tracer) and not isinstance(upper, Tracer):
        try:
            lower_, upper_ = int(lower), int(upper)
            use_scan = True
        except TypeError:
            pass
    if use_scan:
        body = _wrapper(_fori_scan_bodies, body_fun, _make_fori_scan_body)
        (_, result), _ = scan(body, (lower_, init_val), None, length=max(upper_ - lower_, 0),
                              unroll=1 if unroll is None else unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                         "statically known.")
    if la.dtype != dtype:
        lower = _convert(lower, dtype)
    if ua.dtype != dtype:
        upper = _convert(upper, dtype)
    body = _wrapper(_fori_while_bodies, body_fun, _make_fori_while_body)
    _, _, result = while_loop(_fori_cond_fun, body, (lower, upper, init_val))
    return result


# ---- scan / map ------------------------------------------------------------------------------

def _scan_length(xs, xs_avals: Sequence[ShapedArray], length) -> int:
    paths = None
    if any(a.ndim == 0 for a in xs_avals):
        paths = [p for p, _ in tree_flatten_with_path(xs)[0]]
        bad = [f"xs{keystr(p)} of type {a.str_short()}"
               for p, a in zip(paths, xs_avals) if a.ndim == 0]
        raise ValueError(f"scan got value with no leading axis to scan over: {', '.join(bad)}")
    lengths = [a.shape[0] for a in xs_avals]

    def sizes() -> str:
        ps = paths or [p for p, _ in tree_flatten_with_path(xs)[0]]
        return ", ".join(f"xs{keystr(p)}: {n}" for p, n in zip(ps, lengths))

    if length is not None:
        length = int(length)
        if any(n != length for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"the leading axis sizes of xs ({sizes()})")
        return length
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    if len(set(lengths)) > 1:
        raise ValueError(f"scan got values with different leading axis sizes: {sizes()}")
    return lengths[0]


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1, _split_transpose: bool = False):
    """Scan ``f: (carry, x) -> (carry, y)`` over the leading axis of ``xs``.

    Returns ``(final_carry, stacked_ys)``; with ``reverse=True`` the steps run from the
    last index to the first. ``unroll=k`` runs ``k`` steps per iteration of the
    underlying loop (``True``: all of them).
    """
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    init_leaves, carry_tree = tree_flatten(init)
    xs_leaves, xs_tree = tree_flatten(xs)
    carry_avals = tuple(get_aval(x) for x in init_leaves)
    xs_avals = [get_aval(x) for x in xs_leaves]
    length = _scan_length(xs, xs_avals, length)
    if isinstance(unroll, bool):
        unroll = max(length, 1) if unroll else 1
    if not isinstance(unroll, (int, np.integer)) or unroll < 0:
        raise ValueError(f"scan: `unroll` must be a bool or a non-negative int, got {unroll!r}")
    x_avals = tuple(ShapedArray(a.shape[1:], a.dtype, a.weak_type) for a in xs_avals)
    num_carry = len(init_leaves)

    def build() -> _Plan:
        in_paths = [p for p, _ in tree_flatten_with_path(init)[0]]

        def call(leaves):
            out = f(carry_tree.unflatten(leaves[:num_carry]), xs_tree.unflatten(leaves[num_carry:]))
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"scan: the body function {_fun_name(f)} must return a pair "
                                f"(carry, y), got a value of type {type(out).__name__}")
            return list(out)

        def trace_body(c_avals):
            return _trace("scan", "the body function", f, call, [*c_avals, *x_avals],
                          (init, xs_tree.unflatten(x_avals)))

        t = trace_body(carry_avals)
        promote = _weak_promotions(carry_avals, t.out_avals(0))
        in_avals = carry_avals
        if promote:
            in_avals = tuple(a if d is None else ShapedArray(a.shape, d)
                             for a, d in zip(carry_avals, promote))
            t = trace_body(in_avals)
        _check_carry("scan body", f, carry_tree, in_paths, in_avals, t.trees[0], t.out_avals(0))
        return _Plan({"jaxpr": _closure_convert(t.jaxpr)}, t.consts, t.trees[1], promote)

    plan = _cached("scan", (f,), (carry_tree, xs_tree, carry_avals, x_avals), build)
    outs = scan_p.bind(*plan.consts, *_promote(init_leaves, plan.promote), *xs_leaves,
                       jaxpr=plan.params["jaxpr"], length=length, num_carry=num_carry,
                       num_consts=len(plan.consts), reverse=bool(reverse), unroll=int(unroll))
    return carry_tree.unflatten(outs[:num_carry]), plan.out_tree.unflatten(outs[num_carry:])


_map_bodies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _make_map_body(get_fun: Callable) -> Callable:
    def map_body(_, x):
        return (), get_fun()(x)
    return map_body


def map(f: Callable, xs, *, batch_size: int | None = None):
    """``stack([f(x) for x in xs])`` over the leading axis of the pytree ``xs``, as a scan."""
    if batch_size is not None:
        raise NotImplementedError("lax.map: batch_size is not supported yet (needs vmap)")
    _, ys = scan(_wrapper(_map_bodies, f, _make_map_body), (), xs)
    return ys


@scan_p.def_abstract_eval
def _scan_abstract(*args, reverse, length, jaxpr, num_consts, num_carry, unroll):
    consts, carry = args[:num_consts], args[num_consts:num_consts + num_carry]
    xs = args[num_consts + num_carry:]
    if any(x.ndim == 0 or x.shape[0] != length for x in xs):
        raise type_error("scan", f"every xs operand must have leading dimension {length}", *xs)
    x_avals = [ShapedArray(x.shape[1:], x.dtype) for x in xs]
    if not _types_match(jaxpr.in_avals, [*consts, *carry, *x_avals]):
        raise type_error("scan", f"operands do not match the jaxpr inputs "
                         f"({_short(jaxpr.in_avals)})", *args)
    out = jaxpr.out_avals
    if not _types_match(out[:num_carry], carry):
        raise type_error("scan", f"the jaxpr's carry outputs ({_short(out[:num_carry])}) "
                         f"differ from the carry types", *carry)
    ys = [ShapedArray((length, *a.shape), a.dtype, a.weak_type) for a in out[num_carry:]]
    return [*out[:num_carry], *ys]


_LT = {"comparison_direction": "#stablehlo<comparison_direction LT>",
       "compare_type": "#stablehlo<comparison_type SIGNED>"}


@scan_p.def_lowering
def _scan_lower(ctx, *args, reverse, length, jaxpr, num_consts, num_carry, unroll):
    consts = list(args[:num_consts])
    carry = list(args[num_consts:num_consts + num_carry])
    xs = list(args[num_consts + num_carry:])
    ys = [ctx.constant(0, a.dtype, a.shape) for a in ctx.avals_out[num_carry:]]
    if length == 0:
        return [*carry, *ys]
    i32 = ShapedArray((), _INT32)

    def step(t, consts, carry, xs, ys):
        """One scan step at step number ``t`` (an int32 scalar Value)."""
        idx = ctx.op("stablehlo.subtract", [ctx.constant(length - 1, _INT32), t], i32) \
            if reverse else t
        zero = ctx.constant(0, _INT32) if any(v.aval.ndim > 1 for v in [*xs, *ys]) else None
        x_t = [_index_leading(ctx, x, idx, zero) for x in xs]
        outs = ctx.lower_jaxpr(jaxpr, [*consts, *carry, *x_t], name="scan/body")
        new_ys = [_update_leading(ctx, y, y_t, idx, zero)
                  for y, y_t in zip(ys, outs[num_carry:])]
        return outs[:num_carry], new_ys

    per_trip = length if unroll == 0 else min(unroll, length)
    trips, remainder = divmod(length, per_trip)
    if per_trip > 1 and trips == 1 and remainder == 0:  # fully unrolled: no loop
        trips, remainder = 0, length
    if trips:
        operands = [ctx.constant(0, _INT32), *consts, *carry, *xs, *ys]
        avals = [v.aval for v in operands]
        nc, nk, nx = len(consts), len(carry), len(xs)
        cond_region = ctx.new_region(avals)
        with ctx.in_region(cond_region):
            bound = ctx.constant(trips * per_trip, _INT32)
            ctx.ret([ctx.op("stablehlo.compare", [cond_region.args[0], bound],
                            ShapedArray((), dtypes.bool_), _LT)])
        body_region = ctx.new_region(avals)
        with ctx.in_region(body_region):
            t, *rest = body_region.args
            c, k, x, y = (rest[:nc], rest[nc:nc + nk], rest[nc + nk:nc + nk + nx],
                          rest[nc + nk + nx:])
            for j in range(per_trip):
                tj = t if j == 0 else ctx.op("stablehlo.add", [t, ctx.constant(j, _INT32)], i32)
                k, y = step(tj, c, k, x, y)
            t_next = ctx.op("stablehlo.add", [t, ctx.constant(per_trip, _INT32)], i32)
            ctx.ret([t_next, *c, *k, *x, *y])
        outs = ctx.op("stablehlo.while", operands, avals, regions=[cond_region, body_region])
        carry, ys = outs[1 + nc:1 + nc + nk], outs[1 + nc + nk + nx:]
    for j in range(remainder):
        carry, ys = step(ctx.constant(trips * per_trip + j, _INT32), consts, carry, xs, ys)
    return [*carry, *ys]


def _index_leading(ctx, x, idx, zero):
    """``x[idx]`` along the leading axis."""
    a = x.aval
    sizes = (1, *a.shape[1:])
    s = ctx.op("stablehlo.dynamic_slice", [x, idx, *[zero] * (a.ndim - 1)],
               ShapedArray(sizes, a.dtype), {"slice_sizes": i64_array(sizes)})
    return ctx.op("stablehlo.reshape", [s], ShapedArray(a.shape[1:], a.dtype))


def _update_leading(ctx, ys, y, idx, zero):
    """``ys`` with ``ys[idx] = y`` along the leading axis."""
    a = ys.aval
    y1 = ctx.op("stablehlo.reshape", [y], ShapedArray((1, *a.shape[1:]), a.dtype))
    return ctx.op("stablehlo.dynamic_update_slice", [ys, y1, idx, *[zero] * (a.ndim - 1)],
                  ShapedArray(a.shape, a.dtype))
