"""custom_jvp, custom_vjp and checkpoint (remat).

Each is a primitive carrying the traced primal function as a jaxpr plus the
user's rule functions:

- ``custom_jvp_call``: evaluates/lowers the primal jaxpr; its jvp calls the
  user's jvp function.
- ``custom_vjp_call``: its jvp runs the user's ``fwd`` and emits the tangent as
  ``custom_lin``, a primitive linear in the tangents whose transpose calls the
  user's ``bwd``. (So forward-mode jvp of a custom_vjp function is an error, as
  in jax.)
- ``checkpoint``: partial evaluation keeps only the inputs as residuals and
  recomputes the forward pass inside the backward pass.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from minijax.core import dtypes
from minijax.core.aval import ShapedArray, mem_kind_to_space
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var, dce_jaxpr
from minijax.core.primitives import jit_p
from minijax.core.trace import (DebugInfo, EvalTrace, Primitive, Tracer, trace_state,
                                eval_jaxpr, get_aval, trace_to_jaxpr, use_trace)
from minijax.core.traceback_util import api_boundary
from minijax.lax.convert import convert_element_type
from minijax.lax.device_put_op import device_put_p
from minijax.api.checkpoint_policies import Offloadable
from minijax.runtime.memory_kinds import ALWAYS_COPY
from minijax.api.vmap import vmap
from minijax.api.naming import wraps
from minijax.stages.common import fun_name
from minijax.transforms.ad import (JVPTrace, PartialEvalTrace, Zero, instantiate,
                                   is_undefined, jvp_jaxpr, maybe_jvp_tracer,
                                   partial_eval_jaxpr, tangent_aval, transpose_jaxpr,
                                   zeros_like_aval)
from minijax.transforms.batching import BatchTrace, batch_jaxpr, bdim_at
from minijax._pytree import (PrefixMismatchError, broadcast_prefix, register_pytree_node,
                             tree_flatten, tree_unflatten, treedef_children)


class _Traced(NamedTuple):
    closed: ClosedJaxpr  # consts (tracers too) hoisted to leading inputs
    consts: list         # values for those leading inputs
    flat: list           # the differentiable arguments, flattened
    in_tree: Any
    nondiff: tuple       # the non-differentiable (static) arguments, as given
    out_tree: Any


def _trace_fun(fun: Callable, args: tuple, nondiff_argnums: tuple) -> _Traced:
    """Trace ``fun(*args)`` with the ``nondiff_argnums`` arguments held as Python values."""
    nondiff, diff = _split_nondiff(args, nondiff_argnums)
    flat, in_tree = tree_flatten(diff)
    out_box = []

    def flat_fun(*xs):
        full = _merge_nondiff(nondiff, tree_unflatten(in_tree, xs), nondiff_argnums)
        leaves, tree = tree_flatten(fun(*full))
        out_box.append(tree)
        return leaves, None

    name = getattr(fun, "__name__", "f")
    jaxpr, consts, _ = trace_to_jaxpr(flat_fun, [get_aval(x) for x in flat],
                                      DebugInfo("custom", name, None))
    hoisted = Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.outvars, jaxpr.eqns,
                    jaxpr.debug_info)
    return _Traced(ClosedJaxpr(hoisted, []), consts, flat, in_tree, nondiff, out_box[0])


def _split_nondiff(args, nondiff_argnums):
    nondiff = tuple(args[i] for i in nondiff_argnums)
    diff = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)
    return nondiff, diff


def _merge_nondiff(nondiff, diff, nondiff_argnums):
    out, it_n, it_d = [], iter(nondiff), iter(diff)
    for i in range(len(nondiff) + len(diff)):
        out.append(next(it_n) if i in nondiff_argnums else next(it_d))
    return out


def _custom_call_trace(args: tuple, nondiff_argnums: tuple):
    """``(nondiff, flat, in_tree, trace)`` for a custom_jvp/custom_vjp call: the
    non-differentiable arguments, the others flattened, and the trace the call is handed to.

    Transform traces (jvp, linearize, vmap) that own none of the arguments are
    skipped, as their primitives would be. So the call runs eagerly at the top level
    (the function sees concrete values, as in jax), and under ``jvp``/``grad`` the
    user's rule runs on the primal values without the function itself being called.
    """
    nondiff, diff = _split_nondiff(args, nondiff_argnums)
    flat, in_tree = tree_flatten(diff)
    t = trace_state.trace
    while isinstance(t, (JVPTrace, PartialEvalTrace, BatchTrace)) and not any(
            isinstance(x, Tracer) and x._trace is t for x in flat):
        t = t.parent
    return nondiff, flat, in_tree, t


def _lower_inline(ctx, *args, call_jaxpr, **_):
    return ctx.lower_jaxpr(call_jaxpr, args)


# ---- custom_jvp ----------------------------------------------------------------------------

class _JaxprFun:
    """A closed jaxpr as a function (``fun(*args)`` or jax's ``fun.call_wrapped(*args)``)."""

    def __init__(self, closed):
        self.closed = closed

    def call_wrapped(self, *args):
        return eval_jaxpr(self.closed.jaxpr, self.closed.consts, *args)

    __call__ = call_wrapped


class _CustomJVPCallPrimitive(Primitive):
    """``custom_jvp_call``: as jax's, ``get_bind_params`` gives an interpreter of jaxprs the
    call as ``subfuns=(fun, jvp)`` (``fun.call_wrapped(*args)`` runs it); binding with
    them uses the params as they were."""

    def get_bind_params(self, params: dict) -> dict:
        jvp = params["jvp"]
        return dict(params, subfuns=(_JaxprFun(params["call_jaxpr"]), jvp))

    def bind(self, *args, subfuns=None, **params):
        return super().bind(*args, **params)


custom_jvp_call_p = _CustomJVPCallPrimitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)
custom_jvp_call_p.def_lowering(_lower_inline)


def _rule_pp(params: dict, rules: tuple[str, ...]) -> dict:
    """Params as jax prints a custom_jvp/custom_vjp call: ``name``, then sorted, the jaxpr,
    the rules by their functions' names, ``num_consts`` when nonzero and
    ``symbolic_zeros``."""
    shown = {"call_jaxpr": params["call_jaxpr"]}
    for k in rules:
        shown[k] = fun_name(params[k])
    if params.get("num_consts"):
        shown["num_consts"] = params["num_consts"]
    shown["symbolic_zeros"] = getattr(params[rules[0]], "symbolic_zeros", False)
    return {"name": params["name"], **dict(sorted(shown.items()))}


custom_jvp_call_p.pp_params = lambda p: _rule_pp(p, ("jvp",))


class SymbolicZero:
    """A tangent or cotangent known to be zero, of type ``aval`` (its ``shape`` and
    ``dtype`` are the aval's): what a rule defined with ``symbolic_zeros=True`` gets for
    an input that is not perturbed, and may return for an output."""

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)

    def __repr__(self) -> str:
        return "SymbolicZero"

    def instantiate(self):
        """The zeros this stands for, as an array."""
        return zeros_like_aval(self.aval)


def _rule_tangent_in(t, symbolic_zeros: bool):
    """A tangent as a custom_jvp rule sees it (as jax): a symbolic zero is a
    ``SymbolicZero`` for a rule defined with ``symbolic_zeros=True``, else zeros."""
    if type(t) is Zero:
        return SymbolicZero(t.aval) if symbolic_zeros else _array_ct(instantiate(t), t.aval)
    return t


def _array_ct(t, aval):
    """A scalar tangent or cotangent that is a Python number (a jaxpr literal: minijax
    keeps scalar zeros and grad's seed so) as an array of ``aval``'s type, as a rule
    sees it in jax."""
    if type(t) in (bool, int, float, complex) and aval.dtype != dtypes.float0:
        return convert_element_type(t, aval.dtype, weak_type=aval.weak_type)
    return t


def _rule_tangent_out(t, primal):
    """A tangent a rule returned: a ``SymbolicZero`` becomes a symbolic zero again, and so
    does a float0 tangent (of an integer or boolean output), as in jax, where such an
    output is not perturbed."""
    if type(t) is SymbolicZero:
        return Zero(tangent_aval(get_aval(primal)))
    if type(t) is not Zero and getattr(t, "dtype", None) == dtypes.float0:
        return Zero(get_aval(t))
    return t


class custom_jvp:
    """A function with a user-defined jvp (and, by transposition, vjp); mirrors
    ``jax.custom_jvp``."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """``jvp(primals, tangents) -> (primal_out, tangent_out)``."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One function per argument: ``jvp_i(t_i, primal_out, *primals)``."""
        def jvp(primals, tangents):
            out = self(*primals)
            acc = None
            for fn, t in zip(jvps, tangents):
                if fn is None:
                    continue
                contrib = fn(t, out, *primals)
                acc = contrib if acc is None else _tree_add(acc, contrib)
            if acc is None:
                from minijax._pytree import tree_map
                acc = tree_map(lambda o: instantiate(Zero(tangent_aval(get_aval(o)))), out)
            return out, acc
        self.jvp = jvp

    @api_boundary
    def __call__(self, *args):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function "
                                 f"{getattr(self.fun, '__name__', self.fun)} using defjvp.")
        nums = self.nondiff_argnums
        nondiff, flat, in_tree, trace = _custom_call_trace(args, nums)
        with use_trace(trace):
            if isinstance(trace, EvalTrace):
                return self.fun(*args)  # as jax: the function itself, on concrete values
            if isinstance(trace, JVPTrace):  # as jax: the rule only, on the primal values
                pairs = [trace.split(x) for x in flat]
                if all(type(t) is Zero for _, t in pairs):
                    # as jax: no tangent flows in (say, through stop_gradient), so the
                    # function itself runs below the jvp and the rule is not called
                    diff = tree_unflatten(in_tree, [p for p, _ in pairs])
                    with use_trace(trace.parent):
                        return self(*_merge_nondiff(nondiff, diff, nums))
                jvp_flat = self._flat_jvp(nondiff, in_tree, None)
                with use_trace(trace.parent):
                    out, tout = jvp_flat([p for p, _ in pairs], [t for _, t in pairs])
                return tree_unflatten(jvp_flat.out_tree[0],
                                      [maybe_jvp_tracer(trace, o, t) for o, t in zip(out, tout)])
            tr = _trace_fun(self.fun, args, nums)
            outs = custom_jvp_call_p.bind(*tr.consts, *tr.flat, call_jaxpr=tr.closed,
                                          jvp=self._flat_jvp(nondiff, in_tree, tr.out_tree),
                                          num_consts=len(tr.consts),
                                          name=getattr(self.fun, "__name__", "f"))
        return tree_unflatten(tr.out_tree, outs)

    def _flat_jvp(self, nondiff: tuple, in_tree, out_tree) -> Callable:
        """The user's rule on flat primals and tangents, its outputs checked as jax does.
        ``.out_tree[0]`` is the structure of the primal output: ``out_tree`` when given
        (the traced function's), else that of the rule's first result."""
        user_jvp, nums, fun, sz = self.jvp, self.nondiff_argnums, self.fun, self.symbolic_zeros
        box = [out_tree]

        def jvp_flat(primals, tangents):
            """Tangents may be symbolic zeros (``Zero``); so may the tangents out."""
            p = tuple(tree_unflatten(in_tree, primals))
            t = tuple(tree_unflatten(in_tree, [_rule_tangent_in(x, sz)
                                               for x in tangents]))
            pair = user_jvp(*nondiff, p, t) if nums else user_jvp(p, t)
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise TypeError(f"Custom JVP rule {_name(user_jvp)} for function "
                                f"{_name(fun)} must produce a pair (list or tuple of "
                                f"length two) of primal and tangent outputs, got "
                                f"{type(pair).__name__}")
            out, tout = pair
            out_flat, got_tree = tree_flatten(out)
            tout_flat, tout_tree = tree_flatten(tout)
            want = got_tree if box[0] is None else box[0]
            if got_tree != want or tout_tree != want:
                raise TypeError(f"Custom JVP rule must produce primal and tangent outputs with "
                                f"the structure of the primal output {want}; got "
                                f"{got_tree} and {tout_tree}")
            tout_flat = [_rule_tangent_out(x, o) for x, o in zip(tout_flat, out_flat)]
            _check_jvp_tangents(out_flat, tout_flat)
            box[0] = want
            return out_flat, tout_flat

        jvp_flat.out_tree = box
        jvp_flat.__name__ = fun_name(user_jvp)  # jaxprs show the user's rule
        jvp_flat.symbolic_zeros = sz
        return jvp_flat


def _name(f) -> str:
    return getattr(f, "__name__", repr(f))


def _check_jvp_tangents(out_flat: list, tout_flat: list) -> None:
    """TypeError (as jax's) unless each tangent output has the tangent type of its primal
    output: same shape, and the same dtype (float0 for integer outputs); weak types aside."""
    for o, t in zip(out_flat, tout_flat):
        primal = get_aval(o)
        expected, got = tangent_aval(primal), t.aval if type(t) is Zero else get_aval(t)
        if got.shape != expected.shape or got.dtype != expected.dtype:
            raise TypeError(f"Custom JVP rule must produce primal and tangent outputs with "
                            f"corresponding shapes and dtypes. Expected "
                            f"{expected.strip_weak_type().str_short()} (tangent type of "
                            f"{primal.strip_weak_type().str_short()}) but got "
                            f"{got.strip_weak_type().str_short()}.")


def _tree_add(a, b):
    from minijax._pytree import tree_map
    from minijax.transforms.ad import add_tangents
    return tree_map(add_tangents, a, b)


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, name):
    args = _typed_args(primals[num_consts:], call_jaxpr, num_consts)
    ts = list(tangents[num_consts:])  # symbolic zeros stay so (the rule may see them)
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise TypeError(f"custom_jvp function {name} closes over a value that is being "
                        "differentiated; pass it as an explicit argument instead")
    out, tout = jvp(list(args), ts)
    return out, tout


def _custom_jvp_call_batch(trace, vals, dims, *, call_jaxpr, jvp, num_consts, name):
    # The batched operands at axis 0, the others left unbatched (as jax: a value the
    # function closes over, a predicate made unbatched, stays so inside); the outputs and
    # the user's jvp, vmapped over the same axes, batched at 0.
    size = trace.axis_size
    axes = [None if d is None else 0 for d in dims]
    vals = [v if d is None else bdim_at(v, d, size, 0) for v, d in zip(vals, dims)]
    batched, _ = batch_jaxpr(call_jaxpr, axes, size, trace.axis_name, instantiate=True)

    arg_axes = axes[num_consts:]  # the rule sees the operands after the consts

    def batched_jvp(primals, tangents):
        # symbolic zero tangents stay symbolic (unbatched) for the rule; its tangents out
        # are instantiated to come out of the vmap
        axes = arg_axes
        nz = [type(t) is not Zero for t in tangents]
        zeros = [None if n else Zero(t.aval if ax is None else
                                     t.aval.update(shape=t.aval.shape[1:]))
                 for n, t, ax in zip(nz, tangents, axes)]

        def one(p, t_nz):
            it = iter(t_nz)
            out, tout = jvp(list(p), [next(it) if n else z for n, z in zip(nz, zeros)])
            return tuple(out), tuple(instantiate(t) for t in tout)

        t_axes = [ax for ax, n in zip(axes, nz) if n]
        return vmap(one, in_axes=(list(axes), t_axes), axis_size=size)(
            list(primals), [t for t in tangents if type(t) is not Zero])

    outs = custom_jvp_call_p.bind(*vals, call_jaxpr=batched, jvp=batched_jvp,
                                  num_consts=num_consts, name=name)
    return outs, [0] * len(outs)


custom_jvp_call_p.def_jvp(_custom_jvp_call_jvp)
custom_jvp_call_p.def_batch(_custom_jvp_call_batch)
custom_jvp_call_p.def_impl(lambda *args, call_jaxpr, **_: _run(call_jaxpr, args))


def _run(closed, args):
    return jit_p.bind(*args, jaxpr=closed, name="custom", donated_invars=(False,) * len(args),
                      inline=True)


# ---- custom_vjp ----------------------------------------------------------------------------

custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)
custom_vjp_call_p.def_lowering(_lower_inline)
custom_vjp_call_p.def_impl(lambda *args, call_jaxpr, **_: _run(call_jaxpr, args))
custom_vjp_call_p.pp_params = lambda p: _rule_pp(p, ("fwd", "bwd"))

custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))


def _custom_lin_impl(*args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


custom_lin_p.def_impl(_custom_lin_impl)
custom_lin_p.def_lowering(lambda ctx, *a, **p: _custom_lin_impl())


class custom_vjp:
    """A function with a user-defined vjp; mirrors ``jax.custom_vjp``."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        """``fwd(*args) -> (out, residuals)``; ``bwd(residuals, ct_out) -> tuple of cts``."""
        self.fwd = fwd
        self.bwd = bwd
        self.symbolic_zeros = symbolic_zeros

    @api_boundary
    def __call__(self, *args):
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function "
                                 f"{getattr(self.fun, '__name__', self.fun)} using defvjp.")
        nums, fun = self.nondiff_argnums, self.fun
        name = getattr(fun, "__name__", "f")
        nondiff, flat, in_tree, trace = _custom_call_trace(args, nums)
        with use_trace(trace):
            if isinstance(trace, EvalTrace):
                return fun(*args)  # as jax: the function itself, on concrete values
            if isinstance(trace, JVPTrace):  # as jax: fwd on the primals, bwd when transposed
                pairs = [trace.split(x) for x in flat]
                fwd_flat, bwd_flat, out_tree = self._flat_rules(nondiff, flat, in_tree, None)
                with use_trace(trace.parent):
                    out, tout = _custom_vjp_call_jvp([p for p, _ in pairs], [t for _, t in pairs],
                                                     call_jaxpr=None, fwd=fwd_flat, bwd=bwd_flat,
                                                     num_consts=0, name=name)
                return tree_unflatten(out_tree[0],
                                      [maybe_jvp_tracer(trace, o, t) for o, t in zip(out, tout)])
            tr = _trace_fun(fun, args, nums)
            fwd_flat, bwd_flat, _ = self._flat_rules(nondiff, flat, in_tree, tr.out_tree)
            outs = custom_vjp_call_p.bind(*tr.consts, *tr.flat, call_jaxpr=tr.closed,
                                          fwd=fwd_flat, bwd=bwd_flat, num_consts=len(tr.consts),
                                          name=name)
        return tree_unflatten(tr.out_tree, outs)

    def _flat_rules(self, nondiff: tuple, flat: list, in_tree, out_tree):
        """``(fwd_flat, bwd_flat, box)``: the user's rules on flat values, their results
        checked as jax does; ``box[0]`` is the structure of the primal output
        (``out_tree`` when given, the traced function's; else that of fwd's output)."""
        nums, fwd, bwd = self.nondiff_argnums, self.fwd, self.bwd
        name = getattr(self.fun, "__name__", "f")
        n_diff = len(treedef_children(in_tree))
        in_avals = [get_aval(x) for x in flat]
        box = [out_tree]

        def fwd_flat(primals):
            res = fwd(*_merge_nondiff(nondiff, tree_unflatten(in_tree, primals), nums))
            if not (isinstance(res, tuple) and len(res) == 2):
                raise TypeError(f"Custom VJP fwd rule for {name} must return a pair "
                                f"(output, residuals), got {type(res).__name__}")
            out, residuals = res
            out_flat, got_tree = tree_flatten(out)
            if box[0] is None:
                box[0] = got_tree
            elif got_tree != box[0]:
                raise TypeError(f"Custom VJP fwd rule for {name} must produce an output with "
                                f"the structure of the primal function's output "
                                f"{box[0]}; got {got_tree}")
            return out_flat, residuals

        sz = self.symbolic_zeros

        def bwd_flat(residuals, cts):
            """Cotangents may be symbolic zeros (``Zero``): a rule defined with
            ``symbolic_zeros=True`` sees them as ``SymbolicZero``s (as jax), others as
            zeros."""
            ct = tree_unflatten(box[0], [_rule_tangent_in(c, sz) for c in cts])
            res = bwd(*nondiff, residuals, ct) if nums else bwd(residuals, ct)
            if not isinstance(res, (tuple, list)):
                raise TypeError(f"Custom VJP bwd rule for {name} must return a tuple of "
                                f"cotangents, one per differentiable argument; got "
                                f"{type(res).__name__}")
            if len(res) != n_diff:
                raise TypeError(f"Custom VJP bwd rule for {name} must return a tuple of length "
                                f"{n_diff} (one per differentiable argument); got {len(res)}")
            return _bwd_cotangents(name, res, in_avals, in_tree)

        fwd_flat.__name__, bwd_flat.__name__ = fun_name(fwd), fun_name(bwd)  # for jaxprs
        fwd_flat.symbolic_zeros = bwd_flat.symbolic_zeros = self.symbolic_zeros
        return fwd_flat, bwd_flat, box


def _bwd_cotangents(name: str, res: Sequence, in_avals: list, in_tree) -> list:
    """The flat cotangents of the differentiable inputs from a bwd rule's tuple ``res``.

    As in jax: each entry is None (zeros) or a pytree with its argument's structure
    (else TypeError), and each leaf has its input's shape (else ValueError); integer
    inputs get zero (float0) cotangents whatever the rule returned.
    """
    out = []
    leaves = iter(in_avals)
    for i, (c, arg_tree) in enumerate(zip(res, treedef_children(in_tree))):
        primals = [next(leaves) for _ in range(arg_tree.num_leaves)]
        if c is None:
            out.extend(Zero(tangent_aval(p)) for p in primals)
            continue
        c_flat, c_tree = tree_flatten(c, is_leaf=lambda x: type(x) is SymbolicZero)
        if c_tree != arg_tree:
            # as jax: the cotangent may be a prefix of its argument's structure, a leaf (or
            # None: zeros) standing for each leaf of that subtree (flax's nnx.custom_vjp
            # gives a State of arrays for one of Variables)
            try:
                c_flat = broadcast_prefix(
                    c, tree_unflatten(arg_tree, [_Slot()] * arg_tree.num_leaves),
                    is_leaf=lambda x: x is None or type(x) is SymbolicZero or
                    hasattr(x, "shape") or type(x) in (bool, int, float, complex))
            except (PrefixMismatchError, ValueError):
                raise TypeError(f"Custom VJP bwd rule for {name} must produce an output "
                                f"with the same container (pytree) structure as the args "
                                f"tuple of the primal function: cotangent {i} has structure "
                                f"{c_tree}, its argument {arg_tree}") from None
        for p, ct in zip(primals, c_flat):
            a = tangent_aval(p)
            if ct is None:
                out.append(Zero(a))
                continue
            if type(ct) is SymbolicZero:  # as jax: a zero cotangent, of the rule's type
                ca = ct.aval
                ct = Zero(a)
            else:
                ca = get_aval(ct)
            if a.dtype == dtypes.float0:
                out.append(Zero(a))
                continue
            if ca.shape != a.shape:
                raise ValueError(f"Custom VJP bwd rule for {name} must produce an output with "
                                 f"the same shape as the args tuple of the primal function, "
                                 f"but cotangent {i} has type {ca.str_short()} for an input "
                                 f"of type {p.str_short()}")
            out.append(ct)
    return out


class _Slot:
    """A placeholder leaf (not a pytree node) for matching a prefix tree."""


class CustomVJPPrimal:
    """A primal input of a custom_vjp ``fwd`` rule defined with ``symbolic_zeros=True``:
    its ``value`` and whether it is ``perturbed`` (has a nonzero tangent). A pytree leaf,
    as jax's (not a node: ``tree_map`` over the inputs hands these over whole)."""

    __slots__ = ("value", "perturbed")

    def __init__(self, value: Any, perturbed: bool):
        self.value, self.perturbed = value, perturbed

    def __repr__(self) -> str:
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def _typed_args(args, call_jaxpr, num_consts):
    """The primal arguments a user's rule sees: a Python number (a jaxpr literal read by
    eval_jaxpr) becomes an array of the literal's type (from the traced function's input
    types, when known), so that the rule can read ``x.shape`` and ``x.dtype`` (jax
    traces the rule on abstract values there, so its arguments are always typed)."""
    avals = (call_jaxpr.in_avals[num_consts:] if call_jaxpr is not None
             else [None] * len(args))
    out = []
    for x, a in zip(args, avals):
        if type(x) in (bool, int, float, complex):
            a = get_aval(x) if a is None else a
            x = convert_element_type(x, a.dtype, weak_type=a.weak_type)
        out.append(x)
    return out


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts, name):
    args = _typed_args(primals[num_consts:], call_jaxpr, num_consts)
    ts = tangents[num_consts:]
    if getattr(fwd, "symbolic_zeros", False):  # fwd sees which inputs are perturbed
        out, residuals = fwd([CustomVJPPrimal(a, type(t) is not Zero)
                              for a, t in zip(args, ts)])
    else:
        out, residuals = fwd(list(args))
    res_flat, res_tree = tree_flatten(residuals)
    if all(type(t) is Zero for t in ts):
        return out, [Zero(tangent_aval(get_aval(o))) for o in out]
    touts = custom_lin_p.bind(*res_flat, *[instantiate(t) for t in ts], num_res=len(res_flat),
                              res_tree=res_tree, bwd=bwd,
                              out_avals=tuple(tangent_aval(get_aval(o)) for o in out))
    return out, touts


def _custom_lin_transpose(cts, *args, num_res, res_tree, bwd, out_avals):
    res = tree_unflatten(res_tree, args[:num_res])
    # symbolic zeros stay so (the rule may see them); numbers become arrays
    cts = [c if type(c) is Zero else _array_ct(c, a) for c, a in zip(cts, out_avals)]
    cts_in = bwd(res, cts)
    return [None] * num_res + list(cts_in)


def _custom_vjp_call_batch(trace, vals, dims, *, call_jaxpr, fwd, bwd, num_consts, name):
    # Batch everything at axis 0; fwd and bwd are vmapped over the same axis.
    size = trace.axis_size
    vals = [bdim_at(v, d, size, 0) for v, d in zip(vals, dims)]
    batched, _ = batch_jaxpr(call_jaxpr, [0] * len(vals), size, trace.axis_name,
                             instantiate=True)

    def bfwd(primals):
        if bfwd.symbolic_zeros:  # the perturbed flags are static: vmap the values only
            flags = [p.perturbed for p in primals]
            return vmap(lambda vs: fwd([CustomVJPPrimal(v, f) for v, f in zip(vs, flags)]))(
                [p.value for p in primals])
        return vmap(lambda p: fwd(list(p)))(primals)
    bfwd.symbolic_zeros = getattr(fwd, "symbolic_zeros", False)

    def bbwd(residuals, cts):
        # symbolic zero cotangents stay symbolic (unbatched) for the rule; the
        # cotangents it gives are instantiated to come out of the vmap
        nz = [type(c) is not Zero for c in cts]
        zeros = [None if n else Zero(c.aval.update(shape=c.aval.shape[1:]))
                 for n, c in zip(nz, cts)]

        def one(r, c_nz):
            it = iter(c_nz)
            out = bwd(r, [next(it) if n else z for n, z in zip(nz, zeros)])
            return tuple(instantiate(c) for c in out)

        return vmap(one)(residuals, [c for c in cts if type(c) is not Zero])

    outs = custom_vjp_call_p.bind(*vals, call_jaxpr=batched, fwd=bfwd, bwd=bbwd,
                                  num_consts=num_consts, name=name)
    return outs, [0] * len(outs)


custom_vjp_call_p.def_jvp(_custom_vjp_call_jvp)
custom_vjp_call_p.def_batch(_custom_vjp_call_batch)
custom_lin_p.def_transpose(_custom_lin_transpose)



# ---- checkify: the call checkified; its rules pass the error through (as jax, they are not
# checked: checkify a jvp or grad to check what it computes) -------------------------------


def _checkified_call(error, enabled, args, num_consts, call_jaxpr):
    """The error (with every kind the call can raise) and the checkified call_jaxpr, which
    takes the error's leaves after the consts."""
    from minijax.lax.checkify import checkify_closed
    avals = [get_aval(x) for x in args]

    def check(err):
        err_vals, err_tree = tree_flatten(err)
        in_avals = [*avals[:num_consts], *(get_aval(e) for e in err_vals), *avals[num_consts:]]
        return err_vals, checkify_closed(call_jaxpr, enabled, err_tree, in_avals, num_consts)

    error = error.add_placeholder_effects(check(error)[1][2])
    err_vals, (checked, out_tree, _) = check(error)
    return err_vals, checked, out_tree


def _custom_jvp_call_checkify(error, enabled, *args, call_jaxpr, jvp, num_consts, name):
    err_vals, checked, out_tree = _checkified_call(error, enabled, args, num_consts, call_jaxpr)
    n = len(err_vals)

    def checked_jvp(primals, tangents):
        out, tout = jvp(list(primals[n:]), list(tangents[n:]))
        return [*primals[:n], *out], [*tangents[:n], *tout]

    checked_jvp.__name__ = getattr(jvp, "__name__", "jvp")
    outs = custom_jvp_call_p.bind(*args[:num_consts], *err_vals, *args[num_consts:],
                                  call_jaxpr=checked, jvp=checked_jvp, num_consts=num_consts,
                                  name=name)
    return tree_unflatten(out_tree, outs)


def _custom_vjp_call_checkify(error, enabled, *args, call_jaxpr, fwd, bwd, num_consts, name):
    err_vals, checked, out_tree = _checkified_call(error, enabled, args, num_consts, call_jaxpr)
    n = len(err_vals)
    err_avals = [get_aval(e) for e in err_vals]

    def checked_fwd(primals):
        out, res = fwd(list(primals[n:]))
        return [*primals[:n], *out], res

    def checked_bwd(res, cts):
        return [*(Zero(tangent_aval(a)) for a in err_avals), *bwd(res, list(cts[n:]))]

    checked_fwd.__name__ = getattr(fwd, "__name__", "fwd")
    checked_bwd.__name__ = getattr(bwd, "__name__", "bwd")
    checked_fwd.symbolic_zeros = getattr(fwd, "symbolic_zeros", False)
    outs = custom_vjp_call_p.bind(*args[:num_consts], *err_vals, *args[num_consts:],
                                  call_jaxpr=checked, fwd=checked_fwd, bwd=checked_bwd,
                                  num_consts=num_consts, name=name)
    return tree_unflatten(out_tree, outs)


custom_jvp_call_p.def_rule("checkify")(_custom_jvp_call_checkify)
custom_vjp_call_p.def_rule("checkify")(_custom_vjp_call_checkify)


# ---- checkpoint (remat) ---------------------------------------------------------------------

checkpoint_p = Primitive("checkpoint", multiple_results=True)
checkpoint_p.def_abstract_eval(lambda *avals, jaxpr, **_: jaxpr.out_avals)
checkpoint_p.def_impl(lambda *args, jaxpr, **_: _run(jaxpr, args))
checkpoint_p.pp_params = lambda p: {"jaxpr": p["jaxpr"], "policy": p["policy"],
                                    "prevent_cse": p["prevent_cse"]}  # sorted, as jax


@checkpoint_p.def_lowering
def _checkpoint_lower(ctx, *args, jaxpr, prevent_cse=True, policy=None):
    if prevent_cse and args:
        # An optimization barrier keeps XLA from merging the recomputation with the
        # forward pass (which would undo the rematerialization).
        args = ctx.op("stablehlo.optimization_barrier", list(args), [a.aval for a in args])
    return ctx.lower_jaxpr(jaxpr, args)


def _checkpoint_jvp(primals, tangents, *, jaxpr, prevent_cse, policy):
    nonzero = [type(t) is not Zero for t in tangents]
    jvp_closed, out_nz = jvp_jaxpr(jaxpr, nonzero, instantiate_out=False)
    nz = [t for t in tangents if type(t) is not Zero]
    outs = checkpoint_p.bind(*primals, *nz, jaxpr=jvp_closed, prevent_cse=prevent_cse,
                             policy=policy)
    n = len(jaxpr.out_avals)
    it = iter(outs[n:])
    return outs[:n], [next(it) if z else Zero(tangent_aval(a))
                      for a, z in zip(jaxpr.out_avals, out_nz)]


def _checkpoint_partial_eval(eqn, unknowns):
    """Known side: the primal outputs, plus the intermediates the policy saves. Unknown
    side: recompute the other residuals from the known inputs and the saved values, then
    the unknown computation. Without a policy nothing is saved (jax's default)."""
    p = eqn.params
    closed = p["jaxpr"]
    pe = partial_eval_jaxpr(closed.jaxpr, unknowns)
    n_known_out = len(pe.known.outvars) - pe.num_res
    saved, offloads = _saved_by_policy(pe.known, n_known_out, p["policy"])
    # offloaded values: saved in their memory (device_put), brought back to recompute
    kept, moves = list(saved), []
    for i, v in enumerate(saved):
        how = offloads.get(id(v))
        if how is not None:
            kept[i] = Var(v.aval.update(memory_space=mem_kind_to_space(how.dst)))
            moves.append(JaxprEqn(device_put_p, [v], [kept[i]], _offload_params(how.dst),
                                  eqn.ctx, eqn.source))
    known_only = dce_jaxpr(Jaxpr(pe.known.constvars, pe.known.invars,
                                 pe.known.outvars[:n_known_out] + kept,
                                 pe.known.eqns + moves, pe.known.debug_info))
    known_in = [a for a, u in zip(eqn.invars, unknowns) if not u]
    unknown_in = [a for a, u in zip(eqn.invars, unknowns) if u]
    known_outvars = [v for v, u in zip(eqn.outvars, pe.out_unknown) if not u]
    unknown_outvars = [v for v, u in zip(eqn.outvars, pe.out_unknown) if u]
    saved_outer = [Var(v.aval) for v in kept]
    known = JaxprEqn(checkpoint_p, known_in, known_outvars + saved_outer,
                     dict(p, jaxpr=ClosedJaxpr(known_only, closed.consts)), eqn.ctx, eqn.source)
    # Recompute: (known inputs, saved values, unknown inputs) -> unknown outputs.
    k_avals = [get_aval(a) if not isinstance(a, Var) else a.aval for a in known_in]
    u_avals = [a.aval for a in unknown_in]
    nk, ns = len(known_in), len(saved)

    def recompute(*xs):
        back = [x if offloads.get(id(v)) is None else
                device_put_p.bind(x, **_offload_params(offloads[id(v)].src))[0]
                for v, x in zip(saved, xs[nk:nk + ns])]
        given = {id(v): x for v, x in zip(saved, back)}
        known_outs = _eval_reusing(pe.known, closed.consts, xs[:nk], given)
        res = known_outs[n_known_out:]
        return eval_jaxpr(pe.unknown, [], *res, *xs[nk + ns:]), None

    rj, rconsts, _ = trace_to_jaxpr(recompute, k_avals + [v.aval for v in kept] + u_avals,
                                    DebugInfo("checkpoint", "recompute", None))
    res_vars = [a for a in known_in if isinstance(a, Var)] + saved_outer
    unknown = JaxprEqn(checkpoint_p, known_in + saved_outer + unknown_in, unknown_outvars,
                       dict(p, jaxpr=ClosedJaxpr(dce_jaxpr(rj), rconsts)), eqn.ctx, eqn.source)
    return [known], [unknown], res_vars


def _saved_by_policy(known: Jaxpr, n_out: int, policy) -> tuple[list, dict]:
    """The outputs of ``known``'s equations that ``policy(prim, *in_avals, **params)``
    saves and that the residuals (outputs from ``n_out`` on) depend on; and, for those
    it offloads (an ``Offloadable``), id of the var -> that decision."""
    if policy is None:
        return [], {}
    needed = {id(v) for v in known.outvars[n_out:] if isinstance(v, Var)}
    saved, offloads = [], {}
    for e in reversed(known.eqns):
        if not any(id(v) in needed for v in e.outvars):
            continue
        how = policy(e.primitive, *[a.aval for a in e.invars], **e.params)
        if how:
            outs = [v for v in e.outvars if id(v) in needed]
            saved.extend(outs)
            if isinstance(how, Offloadable):
                offloads.update((id(v), how) for v in outs)
        else:
            needed.update(id(a) for a in e.invars if isinstance(a, Var))
    return saved[::-1], offloads


_ALWAYS_COPY = ALWAYS_COPY


def _offload_params(kind: str) -> dict:
    """``device_put_p``'s parameters moving one value to memory ``kind``, as jax's remat."""
    return {"copy_semantics": (_ALWAYS_COPY,), "devices": (mem_kind_to_space(kind),),
            "srcs": (None,)}


def _eval_reusing(jaxpr: Jaxpr, consts, args, given: dict) -> list:
    """``eval_jaxpr``, but equations whose outputs are all in ``given`` (id of var ->
    value) are not run: their outputs are the given values."""
    env = dict(given)
    env.update((id(v), x) for v, x in zip(jaxpr.constvars, consts))
    env.update((id(v), x) for v, x in zip(jaxpr.invars, args))
    eqns = [e for e in jaxpr.eqns if not all(id(v) in given for v in e.outvars)]
    made = {id(v) for e in eqns for v in e.outvars}
    used = [a for e in eqns for a in e.invars] + list(jaxpr.outvars)
    inputs = list({id(a): a for a in used if isinstance(a, Var) and id(a) not in made}.values())
    sub = Jaxpr([], inputs, jaxpr.outvars, eqns, jaxpr.debug_info)
    return eval_jaxpr(sub, [], *[env[id(a)] for a in inputs])


def _checkpoint_transpose(cts, *args, jaxpr, prevent_cse, policy):
    # The backward pass (with its recomputation) is itself a checkpoint call.
    nonlin = [a for a in args if not is_undefined(a)]
    cts = [instantiate(c) for c in cts]
    outs = checkpoint_p.bind(*nonlin, *cts, jaxpr=transpose_jaxpr(jaxpr, args, cts, "checkpoint"),
                             prevent_cse=prevent_cse, policy=policy)
    it = iter(outs)
    return [next(it) if is_undefined(a) else None for a in args]


def _checkpoint_batch(trace, vals, dims, *, jaxpr, prevent_cse, policy):
    batched, out_dims = batch_jaxpr(jaxpr, dims, trace.axis_size, trace.axis_name)
    outs = checkpoint_p.bind(*vals, jaxpr=batched, prevent_cse=prevent_cse, policy=policy)
    return outs, out_dims


checkpoint_p.def_jvp(_checkpoint_jvp)
checkpoint_p.def_transpose(_checkpoint_transpose)
checkpoint_p.def_batch(_checkpoint_batch)
checkpoint_p.def_rule("partial_eval")(_checkpoint_partial_eval)


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy=None,
               static_argnums: Sequence[int] = ()) -> Callable:
    """Recompute ``fun``'s intermediates in the backward pass instead of storing them
    (``jax.checkpoint`` / ``jax.remat``)."""
    static = tuple(static_argnums)

    @wraps(fun)
    @api_boundary
    def wrapped(*args):
        tr = _trace_fun(fun, args, static)  # static arguments stay Python values
        outs = checkpoint_p.bind(*tr.consts, *tr.flat, jaxpr=tr.closed, prevent_cse=prevent_cse,
                                 policy=policy)
        return tree_unflatten(tr.out_tree, outs)
    return wrapped


remat = checkpoint


# ---- closure_convert and custom_gradient -------------------------------------------------------

def _maybe_perturbed(x) -> bool:
    """Whether ``x`` may carry a tangent: a tracer whose values are differentiable."""
    return isinstance(x, Tracer) and tangent_aval(get_aval(x)).dtype != dtypes.float0


def closure_convert(fun: Callable, *example_args) -> tuple[Callable, list]:
    """``(converted, consts)``: ``converted(*args, *consts)`` computes ``fun(*args)``, with the
    values ``fun`` closes over that may be differentiated (tracers of inexact dtype)
    hoisted out as the explicit arguments ``consts``, as jax's ``closure_convert``: so
    ``fun`` can be passed to a custom_vjp/custom_jvp function, or as a primitive's
    parameter, without closing over tracers."""
    flat, in_tree = tree_flatten(example_args)
    out_box = []

    def flat_fun(*xs):
        leaves, tree = tree_flatten(fun(*tree_unflatten(in_tree, xs)))
        out_box.append(tree)
        return leaves, None

    jaxpr, consts, _ = trace_to_jaxpr(flat_fun, [get_aval(x) for x in flat],
                                      DebugInfo("closure_convert", _name(fun), None))
    hoisted = [_maybe_perturbed(c) for c in consts]
    const_args = [c for c, h in zip(consts, hoisted) if h]
    n_hoisted = len(const_args)

    def converted_fun(*args_and_consts):
        n_args = len(args_and_consts) - n_hoisted
        args, given = args_and_consts[:n_args], iter(args_and_consts[n_args:])
        all_consts = [next(given) if h else c for c, h in zip(consts, hoisted)]
        xs, tree = tree_flatten(tuple(args))
        if tree != in_tree:
            raise TypeError(f"The inputs to the closure produced by closure_convert must have "
                            f"the same Pytree structure as the example arguments passed when "
                            f"closure_convert was called. Expected {in_tree}, but got {tree}")
        return tree_unflatten(out_box[0], eval_jaxpr(jaxpr, all_consts, *xs))

    return converted_fun, const_args


class _GradientRule:
    """A ``custom_gradient`` function's vjp, traced: a pytree whose leaves are the values
    the rule closes over (so it can be a custom_vjp residual)."""

    def __init__(self, jaxpr, consts, in_tree, out_tree):
        self.jaxpr, self.consts, self.in_tree, self.out_tree = jaxpr, consts, in_tree, out_tree


register_pytree_node(
    _GradientRule,
    lambda r: (r.consts, (r.jaxpr, r.in_tree, r.out_tree)),
    lambda aux, consts: _GradientRule(aux[0], list(consts), aux[1], aux[2]),
)


def custom_gradient(fun: Callable) -> Callable:
    """A function with a custom gradient, in jax's ``custom_gradient`` form: ``fun(*args)``
    returns ``(out, vjp)`` where ``vjp(ct_out)`` gives the cotangents of the arguments
    (one value, or a tuple of one per argument).

    >>> @minijax.custom_gradient
    ... def f(x):
    ...     return x ** 2, lambda g: (g * x * 10.0,)
    """
    @custom_vjp
    def wrapped(*args):
        return fun(*args)[0]

    def fwd(*args):
        ans, rule = fun(*args)
        ans_flat, out_tree = tree_flatten((ans,))
        ct_avals = [tangent_aval(get_aval(a)) for a in ans_flat]
        box = []

        def flat_rule(*cts):
            res = rule(*tree_unflatten(out_tree, cts))
            leaves, tree = tree_flatten(res)
            box.append(tree)
            return leaves, None

        jaxpr, consts, _ = trace_to_jaxpr(flat_rule, ct_avals,
                                          DebugInfo("custom_gradient", _name(fun), None))
        return ans, _GradientRule(jaxpr, consts, box[0], out_tree)

    def bwd(res, ct):
        cts_flat, tree = tree_flatten((ct,))
        if tree != res.out_tree:
            raise TypeError(f"{res.out_tree}\n!=\n{tree}")
        out = tree_unflatten(res.in_tree, eval_jaxpr(res.jaxpr, res.consts, *cts_flat))
        return (out,) if res.in_tree.num_nodes == 1 else tuple(out)

    wrapped.defvjp(fwd, bwd)
    return functools.wraps(fun)(wrapped)


def _checkpoint_checkify(error, enabled, *args, jaxpr, prevent_cse, policy):
    from minijax.lax.checkify import checkify_closed, hoist_consts
    err_vals, err_tree = tree_flatten(error)
    in_avals = [get_aval(x) for x in (*err_vals, *args)]
    checked, out_tree, _ = checkify_closed(jaxpr, enabled, err_tree, in_avals)
    body, hoisted = hoist_consts(checked)
    outs = checkpoint_p.bind(*hoisted, *err_vals, *args, jaxpr=body, prevent_cse=prevent_cse,
                             policy=policy)
    return tree_unflatten(out_tree, outs)


checkpoint_p.def_rule("checkify")(_checkpoint_checkify)
