"""custom_root: a root of ``f`` found by a user ``solve``, differentiated implicitly.

``custom_root_p`` carries three closed jaxprs, each with its closed-over traced values
hoisted to leading operands (``const_lengths`` of each, in this order):

- ``f``: ``(consts, x) -> f(x)`` (the vector has ``initial_guess``'s leaves);
- ``solve``: ``(consts, guess) -> root`` (then ``solve``'s auxiliary values with
  ``has_aux``), inlined when lowered;
- ``tangent_solve``: ``(consts, x, b) -> v`` solving the linear ``J(x) v = b``, ``J``
  the Jacobian of ``f`` at ``x`` (``tangent_solve(jvp of f at x, b)``).

jvp (jax's rule, never differentiating ``solve``): at the root ``x*`` the tangent is
``-J(x*)^-1 (df/dconsts) consts'``: ``f``'s jvp in its closed-over values, then the
tangent solve. The rule is built from ``x*`` (this primitive's own output) and the
jaxprs, so second derivatives differentiate it again. Batching batches every jaxpr
with the vector at axis 0. Not linear: no transpose (reverse mode transposes the
tangent solve).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.trace import (Primitive, eval_jaxpr, get_aval)
from minijax.lax.linear_solve import split_operands, trace_pytree_fn
from minijax.lax.unary import neg
from minijax.transforms.ad import Zero, instantiate, jvp_flat, tangent_aval
from minijax.transforms.batching import batch_jaxpr, bdim_at, moveaxis
from minijax._pytree import tree_flatten, tree_unflatten

custom_root_p = Primitive("custom_root", multiple_results=True)


class RootJaxprs(NamedTuple):
    f: ClosedJaxpr
    solve: ClosedJaxpr
    tangent_solve: ClosedJaxpr


def _custom_root_abstract(*args, const_lengths, jaxprs):
    _, guess = split_operands(args, const_lengths)
    outs = list(jaxprs.solve.out_avals)
    if [(a.shape, a.dtype) for a in outs[:len(guess)]] != [(a.shape, a.dtype) for a in guess]:
        raise TypeError(f"custom_root: solve must return a value of the shape and dtype of "
                        f"initial_guess, got {[a.str_short() for a in outs]} for "
                        f"{[a.str_short() for a in guess]}")
    return outs


def _custom_root_lower(ctx, *args, const_lengths, jaxprs):
    (_, solve_consts, _), guess = split_operands(args, const_lengths)
    return ctx.lower_jaxpr(jaxprs.solve, [*solve_consts, *guess], name="solve")


def _custom_root_jvp(primals, tangents, *, const_lengths, jaxprs):
    outs = custom_root_p.bind(*primals, const_lengths=const_lengths, jaxprs=jaxprs)
    (f_c, _, ts_c), guess = split_operands(primals, const_lengths)
    (f_t, _, _), _ = split_operands(tangents, const_lengths)
    root = outs[:len(guess)]
    zeros = [Zero(tangent_aval(get_aval(o))) for o in outs]
    if all(type(t) is Zero for t in f_t):
        return outs, zeros
    f = jaxprs.f
    _, rhs = jvp_flat(lambda *c: eval_jaxpr(f.jaxpr, f.consts, *c, *root), f_c, f_t)
    rhs = [instantiate(r) for r in rhs]
    ts = jaxprs.tangent_solve
    step = eval_jaxpr(ts.jaxpr, ts.consts, *ts_c, *root, *rhs)
    return outs, [neg(s) for s in step] + zeros[len(root):]


def _custom_root_batch(trace, vals, dims, *, const_lengths, jaxprs):
    size = trace.axis_size
    vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    dims = [None if d is None else 0 for d in dims]
    (f_c, s_c, ts_c), guess = split_operands(vals, const_lengths)
    (f_d, s_d, ts_d), _ = split_operands(dims, const_lengths)
    guess = [bdim_at(g, d, size, 0) for g, d in zip(guess, dims[sum(const_lengths):])]
    n = len(guess)

    def batched(closed, const_dims, n_vectors):
        out, _ = batch_jaxpr(closed, list(const_dims) + [0] * n_vectors, size, instantiate=True)
        return out

    new = RootJaxprs(batched(jaxprs.f, f_d, n), batched(jaxprs.solve, s_d, n),
                     batched(jaxprs.tangent_solve, ts_d, 2 * n))
    outs = custom_root_p.bind(*f_c, *s_c, *ts_c, *guess, const_lengths=const_lengths,
                              jaxprs=new)
    return outs, [0] * len(outs)


# Registration (not linear: no transpose).
custom_root_p.def_abstract_eval(_custom_root_abstract)
custom_root_p.def_lowering(_custom_root_lower)
custom_root_p.def_jvp(_custom_root_jvp)
custom_root_p.def_batch(_custom_root_batch)


def _trace(fn: Callable, in_trees: list, avals: list, what: str, out_tree=None,
           has_aux: bool = False):
    """``fn`` on pytrees as a closed jaxpr (see ``linear_solve.trace_pytree_fn``)."""
    return trace_pytree_fn(fn, in_trees, avals, what, api="custom_root", out_tree=out_tree,
                           structure_of="initial_guess", has_aux=has_aux)


def custom_root(f: Callable, initial_guess, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False):
    """A root of ``f`` found by ``solve(f, initial_guess)``, differentiated implicitly
    (mirrors ``jax.lax.custom_root``): derivatives in the values ``f`` closes over are
    ``-J^-1 (df/dparams) params'`` with ``J`` the Jacobian of ``f`` at the root, applied
    through ``tangent_solve(g, y)`` (which solves the linear ``g(x) = y``), never by
    differentiating ``solve``.

    With ``has_aux``, ``solve`` returns ``(root, aux)`` and so does ``custom_root``
    (``aux`` is not differentiated).
    """
    guess, tree = tree_flatten(initial_guess)
    avals = [get_aval(x) for x in guess]
    f_j, f_c, _ = _trace(f, [tree], avals, "f", out_tree=tree)
    s_j, s_c, aux_tree = _trace(lambda g: solve(f, g), [tree], avals, "solve", out_tree=tree,
                                has_aux=has_aux)

    def linearize_and_solve(x, b):
        x_leaves = tree_flatten(x)[0]

        def jac(v):
            _, t = jvp_flat(lambda *xs: tree_flatten(f(tree_unflatten(tree, list(xs))))[0],
                            x_leaves, tree_flatten(v)[0])
            return tree_unflatten(tree, [instantiate(u) for u in t])
        return tangent_solve(jac, b)

    ts_j, ts_c, _ = _trace(linearize_and_solve, [tree, tree], avals + avals, "tangent_solve",
                           out_tree=tree)
    outs = custom_root_p.bind(*f_c, *s_c, *ts_c, *guess,
                              const_lengths=(len(f_c), len(s_c), len(ts_c)),
                              jaxprs=RootJaxprs(f_j, s_j, ts_j))
    root = tree_unflatten(tree, list(outs[:len(guess)]))
    if has_aux:
        return root, tree_unflatten(aux_tree, list(outs[len(guess):]))
    return root
