"""What ``cond``, ``while_loop`` and ``scan`` share: tracing the user's functions to
closed jaxprs on the avals of their flattened arguments (closure conversion: values a function
closes over become leading operands), caching traced jaxprs per (functions, argument types),
type checks with jax's messages, weak-type promotion of carries, and the helpers their
transformation rules use to derive sub-jaxprs (memoized per sub-jaxpr, weakly, so repeated
transformation of the same control flow yields the same jaxprs and hits the eager cache).
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
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, dce_jaxpr
from minijax.core.trace import DebugInfo, Tracer, current_ctx, eval_jaxpr, get_aval, trace_to_jaxpr
from minijax.lax.convert import convert_element_type, convert_element_type_p
from minijax.lax.shape import broadcast_in_dim
from minijax.transforms.ad import Zero, jvp_jaxpr, partial_eval_jaxpr
from minijax.transforms.batching import batch_jaxpr, broadcast_batch
from minijax._pytree import PyTreeDef, keystr, tree_flatten_with_path

_INT32 = dtypes.int32


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


def _fun_source(fun: Callable) -> str:
    """``name at file:line``: where a user function passed to control flow is defined
    (the user's function for the internal wrappers of fori_loop and map)."""
    get_user_fun = getattr(fun, "_user_fun", None)
    if get_user_fun is not None:
        fun = get_user_fun() or fun
    code = getattr(inspect.unwrap(fun), "__code__", None)
    where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
    return f"{_fun_name(fun)}{where}"


def _funs_line(labels: Sequence[str], funs: Sequence[Callable]) -> str:
    """``true_fun is <lambda> at f.py:7, false_fun is g at f.py:9``."""
    return ", ".join(f"{label} is {_fun_source(fun)}" for label, fun in zip(labels, funs))


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
    from minijax.lax.state import Ref, returned_ref_error
    if isinstance(x, Ref):
        raise returned_ref_error(api, label, x, "")
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
    forward: tuple = ()   # per output: the operand it is in every branch (cond), or None


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


def _check_branch_outputs(api: str, name1: str, name2: str, t1: _Traced, t2: _Traced,
                          funs: Sequence[Callable] = ()) -> None:
    tree1, tree2 = t1.trees[0], t2.trees[0]
    avals1, avals2 = t1.out_avals(), t2.out_avals()
    which = f"\n({_funs_line((name1, name2), funs)})" if funs else ""
    if tree1 != tree2:
        raise TypeError(
            f"{api}: {name1} and {name2} output must have the same pytree structure, got\n"
            f"  {_tree_str(tree1, avals1)} and\n  {_tree_str(tree2, avals2)}\n"
            f"Revise {name1} and/or {name2} so that they return the same structure.{which}")
    diffs = [f"the output of {name1}{_at(p)} has type {a.str_short()} but the corresponding "
             f"output of {name2} has type {b.str_short()}"
             for p, a, b in zip(t1.paths[0], avals1, avals2) if not _typematch(a, b)]
    if diffs:
        raise TypeError(
            f"{api}: {name1} and {name2} output must have identical types, got\n"
            f"  {_tree_str(tree1, avals1)} and\n  {_tree_str(tree2, avals2)}\n"
            + "".join(f"  * {d}\n" for d in diffs)
            + f"Revise {name1} and/or {name2} so that all output types match.{which}")


def _at(path: tuple) -> str:
    return f" at path {keystr(path)}" if path else ""


def _check_carry(api: str, fun: Callable, in_tree: PyTreeDef, in_paths: list,
                 in_avals: Sequence[ShapedArray], out_tree: PyTreeDef,
                 out_avals: Sequence[ShapedArray]) -> None:
    """The carry output of ``fun`` must have the carry input's structure and types."""
    which = f"\n(the function is {_fun_source(fun)})"
    if in_tree != out_tree:
        raise TypeError(
            f"{api} function carry input and carry output must have the same pytree "
            f"structure, got\n  input:  {_tree_str(in_tree, in_avals)} and\n"
            f"  output: {_tree_str(out_tree, out_avals)}\n"
            "Revise the function so that the carry output has the same pytree structure as "
            f"the carry input.{which}")
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
        + f"Revise the function so that all output types match the corresponding input "
        f"types.{which}")


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




# jvp, partial evaluation (the known/unknown split reverse mode uses), transposition and
# batching of cond, while and scan. Each rule derives new sub-jaxprs from the primitive's
# params; those are memoized per sub-jaxpr (weakly) so that repeated transformation of the
# same control flow (e.g. eager ``grad`` in a loop) yields the same jaxpr objects and hits the
# eager executable cache.

_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _memo(closed: ClosedJaxpr, key: tuple, build: Callable[[], Any]) -> Any:
    """``build()``, cached per ``closed`` (weakly), ``key``, metadata context and config."""
    try:
        table = _MEMO.get(closed)
        if table is None:
            table = _MEMO[closed] = {}
        k = (key, current_ctx(), config.trace_key)
        hit = table.get(k)
    except TypeError:  # an unhashable key part (e.g. an exotic axis name)
        return build()
    if hit is None:
        hit = table[k] = build()
    return hit


def _split(xs: Sequence, *sizes: int) -> list[list]:
    """``xs`` cut into consecutive pieces of ``sizes`` and the rest."""
    out, start = [], 0
    for n in sizes:
        out.append(list(xs[start:start + n]))
        start += n
    out.append(list(xs[start:]))
    return out


def _inexact(aval: ShapedArray) -> bool:
    return dtypes.is_inexact(aval.dtype)


def _nonzero(t: Any, aval: ShapedArray) -> bool:
    """Whether tangent ``t`` of a value of type ``aval`` is a real (not symbolic-zero) one."""
    return type(t) is not Zero and _inexact(aval)


def _is_var(a: Any) -> bool:
    return type(a) is not Literal


def _trace_closed(fun: Callable[..., list], in_avals: Sequence[ShapedArray],
                  what: str) -> ClosedJaxpr:
    """``fun`` (flat in, flat list out) traced to a closed jaxpr over ``in_avals``."""
    jaxpr, consts, _ = trace_to_jaxpr(lambda *xs: (fun(*xs), None), list(in_avals),
                                      DebugInfo(what, "jaxpr", None))
    if any(isinstance(c, Tracer) for c in consts):
        raise AssertionError(f"internal: {what} jaxpr closed over a tracer")
    return ClosedJaxpr(jaxpr, consts)


def _permuted(closed: ClosedJaxpr, in_order: Sequence[int],
              out_order: Sequence[int] | None = None) -> ClosedJaxpr:
    """``closed`` with its inputs (and outputs) taken in the given order."""
    j = closed.jaxpr
    outs = j.outvars if out_order is None else [j.outvars[i] for i in out_order]
    return ClosedJaxpr(Jaxpr(j.constvars, [j.invars[i] for i in in_order], outs, j.eqns,
                             j.debug_info), closed.consts)


def _drop_unused_inputs(closed: ClosedJaxpr, drop: Sequence[bool]) -> ClosedJaxpr:
    """``closed`` without the inputs flagged in ``drop`` (which must be dead)."""
    j = dce_jaxpr(closed.jaxpr)
    used = {id(a) for e in j.eqns for a in e.invars} | {id(a) for a in j.outvars}
    if any(d and id(v) in used for v, d in zip(j.invars, drop)):
        raise AssertionError("internal: dropping a live input of a control-flow jaxpr")
    return ClosedJaxpr(Jaxpr(j.constvars, [v for v, d in zip(j.invars, drop) if not d],
                             j.outvars, j.eqns, j.debug_info), closed.consts)


def _jvp(closed: ClosedJaxpr, nonzero: Sequence[bool],
         inst: Sequence[bool]) -> tuple[ClosedJaxpr, list[bool]]:
    """Memoized ``jvp_jaxpr``: inputs (primals, nonzero tangents), outputs (outs, tangents)."""
    return _memo(closed, ("jvp", tuple(nonzero), tuple(inst)),
                 lambda: jvp_jaxpr(closed, list(nonzero), list(inst)))


def _partial_eval(closed: ClosedJaxpr, unknown: Sequence[bool],
                  force: Sequence[bool] | None = None):
    """Memoized ``partial_eval_jaxpr`` of a closed jaxpr (its consts are known)."""
    key = ("pe", tuple(unknown), None if force is None else tuple(force))
    return _memo(closed, key, lambda: partial_eval_jaxpr(
        closed.jaxpr, list(unknown), None if force is None else list(force)))


class _Split(NamedTuple):
    """A partial evaluation with only the residuals the unknown side really reads."""

    known: Jaxpr        # known inputs -> known outputs, residuals
    unknown: Jaxpr      # residuals, unknown inputs -> unknown outputs
    out_unknown: list
    residuals: list     # the residual Vars (outputs of `known`, first inputs of `unknown`)


def _split_jaxpr(closed: ClosedJaxpr, unknown: Sequence[bool],
                 force: Sequence[bool] | None = None) -> _Split:
    """``partial_eval_jaxpr`` minus residuals that only dead unknown equations used."""
    def build() -> _Split:
        pe = _partial_eval(closed, unknown, force)
        n_known_out = len(pe.known.outvars) - pe.num_res
        res = pe.unknown.invars[:pe.num_res]
        live = {id(a) for e in pe.unknown.eqns for a in e.invars} | \
            {id(a) for a in pe.unknown.outvars}
        keep = [id(r) in live for r in res]
        kept = [r for r, k in zip(res, keep) if k]
        known_res = [v for v, k in zip(pe.known.outvars[n_known_out:], keep) if k]
        k = pe.known
        known = dce_jaxpr(Jaxpr(k.constvars, k.invars, k.outvars[:n_known_out] + known_res,
                                k.eqns, k.debug_info))
        u = pe.unknown
        unk = Jaxpr([], kept + u.invars[pe.num_res:], u.outvars, u.eqns, u.debug_info)
        return _Split(known, unk, list(pe.out_unknown), kept)
    return _memo(closed, ("split", tuple(unknown), None if force is None else tuple(force)),
                 build)


def _batch(closed: ClosedJaxpr, in_batched: Sequence[bool], size: int, name: Any,
           force_out: Sequence[bool] | bool = False) -> tuple[ClosedJaxpr, list[bool]]:
    """``closed`` batched along axis 0 of the flagged inputs; outputs batched at axis 0.

    Outputs flagged in ``force_out`` are batched even when they do not depend on a
    batched input. Returns the jaxpr and which outputs are batched.
    """
    n_out = len(closed.out_avals)
    force = (force_out,) * n_out if isinstance(force_out, bool) else tuple(force_out)

    def build():
        batched, out_dims = batch_jaxpr(closed, [0 if b else None for b in in_batched],
                                        size, name)
        out_bat = [d is not None for d in out_dims]
        widen = [f and not b for f, b in zip(force, out_bat)]
        if not any(widen):
            return batched, out_bat

        def fun(*args):
            outs = eval_jaxpr(batched.jaxpr, batched.consts, *args)
            return [broadcast_batch(o, size, 0) if w else o for o, w in zip(outs, widen)]
        return (_trace_closed(fun, batched.in_avals, "vmap"),
                [b or f for b, f in zip(out_bat, force)])
    return _memo(closed, ("batch", tuple(in_batched), size, name, force), build)


def _bcast_to(pred, like):
    """A batched (leading-axis) predicate broadcast to the shape of ``like``."""
    shape = get_aval(like).shape
    if get_aval(pred).shape == shape:
        return pred
    return broadcast_in_dim(pred, shape, (0,))


