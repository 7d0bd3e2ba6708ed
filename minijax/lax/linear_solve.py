"""custom_linear_solve: a linear solve differentiated implicitly.

``linear_solve_p`` computes ``x = solve(matvec, b)`` for a linear ``matvec`` (the
matrix ``A``) and a user ``solve`` that inverts it. Its derivatives never look inside
``solve`` (which may iterate, as conjugate gradients do):

- jvp: ``x' = A^-1 (b' - A' x)``, another ``linear_solve_p`` on the right-hand side
  tangent minus ``matvec``'s jvp in its closed-over values at ``x``;
- transpose (in ``b``): ``b_ct = A^-T x_ct``, a ``linear_solve_p`` with the roles of
  ``matvec``/``vecmat`` and ``solve``/``transpose_solve`` swapped; ``vecmat`` is
  ``matvec`` transposed (or ``matvec`` itself when ``symmetric``), so reverse mode
  needs ``transpose_solve`` or ``symmetric=True``, as in jax;
- batching: every jaxpr batched with ``b`` (and ``x``) mapped at axis 0.

Operands: the closed-over values of the four jaxprs (``const_lengths`` of each, in the
order matvec, vecmat, solve, transpose_solve), then the leaves of ``b``. Each jaxpr
takes its constants and the leaves of a vector and returns the leaves of a vector.
The lowering inlines ``solve``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.trace import (DebugInfo, Primitive, eval_jaxpr, get_aval,
                                split_tracer_consts, trace_to_jaxpr)
from minijax.lax.binary import sub
from minijax.transforms.ad import (UndefinedPrimal, Zero, instantiate, jvp_flat, tangent_aval,
                                   transpose_jaxpr)
from minijax.transforms.batching import batch_jaxpr, bdim_at, moveaxis
from minijax._pytree import tree_flatten, tree_unflatten

linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)


class LinearSolveJaxprs(NamedTuple):
    """The four functions of a linear solve (vecmat and transpose_solve may be None)."""

    matvec: ClosedJaxpr
    vecmat: ClosedJaxpr | None
    solve: ClosedJaxpr
    transpose_solve: ClosedJaxpr | None

    def transpose(self) -> LinearSolveJaxprs:
        return LinearSolveJaxprs(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def split_operands(args, const_lengths):
    """``args`` cut into the constants of each jaxpr (``const_lengths``) and the vector."""
    parts, i = [], 0
    for n in const_lengths:
        parts.append(list(args[i:i + n]))
        i += n
    return parts, list(args[i:])


def _linear_solve_abstract(*args, const_lengths, jaxprs):
    _, b = split_operands(args, const_lengths)
    outs = list(jaxprs.solve.out_avals)  # x, then solve's auxiliary values (has_aux)
    x = outs[:len(b)]
    if [(a.shape, a.dtype) for a in x] != [(a.shape, a.dtype) for a in b]:
        raise TypeError(f"custom_linear_solve: solve must return a value of the shape and "
                        f"dtype of b, got {[a.str_short() for a in x]} for b "
                        f"{[a.str_short() for a in b]}")
    return list(b) + outs[len(b):]


def _linear_solve_lower(ctx, *args, const_lengths, jaxprs):
    (_, _, solve_consts, _), b = split_operands(args, const_lengths)
    return ctx.lower_jaxpr(jaxprs.solve, [*solve_consts, *b], name="solve")


def _linear_solve_jvp(primals, tangents, *, const_lengths, jaxprs):
    params = {"const_lengths": const_lengths, "jaxprs": jaxprs}
    outs = linear_solve_p.bind(*primals, **params)
    (mv_c, _, _, _), b = split_operands(primals, const_lengths)
    (mv_t, _, _, _), b_t = split_operands(tangents, const_lengths)
    x, aux = outs[:len(b)], outs[len(b):]
    aux_t = [Zero(tangent_aval(get_aval(a))) for a in aux]
    if all(type(t) is Zero for t in (*mv_t, *b_t)):
        return outs, [Zero(tangent_aval(get_aval(o))) for o in x] + aux_t
    rhs = [instantiate(t) for t in b_t]
    if any(type(t) is not Zero for t in mv_t):
        # b' - A' x: matvec's jvp in its constants, at the solution.
        mv = jaxprs.matvec
        _, a_dot_x = jvp_flat(lambda *c: eval_jaxpr(mv.jaxpr, mv.consts, *c, *x), mv_c, mv_t)
        rhs = [r if type(d) is Zero else sub(r, d) for r, d in zip(rhs, a_dot_x)]
    consts = primals[:sum(const_lengths)]
    x_t = linear_solve_p.bind(*consts, *rhs, **params)[:len(b)]
    return outs, list(x_t) + aux_t


def _linear_solve_transpose(cts, *args, const_lengths, jaxprs):
    if jaxprs.transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic "
                        "differentiation of custom_linear_solve")
    (mv_c, vm_c, s_c, ts_c), b = split_operands(args, const_lengths)
    if any(type(c) is UndefinedPrimal for c in (*mv_c, *vm_c, *s_c, *ts_c)):
        raise NotImplementedError("custom_linear_solve is linear only in b; its matvec and "
                                  "solve cannot be transposed")
    n1, n2, n3, n4 = const_lengths
    x_cts = [instantiate(c) for c in cts[:len(b)]]  # auxiliary outputs take no part
    cts_b = linear_solve_p.bind(*vm_c, *mv_c, *ts_c, *s_c, *x_cts,
                                const_lengths=(n2, n1, n4, n3), jaxprs=jaxprs.transpose())
    return [None] * sum(const_lengths) + list(cts_b[:len(b)])


def _batch_one(closed: ClosedJaxpr | None, const_dims, n_vec: int, size: int):
    if closed is None:
        return None
    batched, _ = batch_jaxpr(closed, list(const_dims) + [0] * n_vec, size, instantiate=True)
    return batched


def _linear_solve_batch(trace, vals, dims, *, const_lengths, jaxprs):
    size = trace.axis_size
    vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    dims = [None if d is None else 0 for d in dims]
    const_parts, b = split_operands(vals, const_lengths)
    dim_parts, b_dims = split_operands(dims, const_lengths)
    b = [bdim_at(v, d, size, 0) for v, d in zip(b, b_dims)]
    new = LinearSolveJaxprs(*(_batch_one(j, ds, len(b), size)
                              for j, ds in zip(jaxprs, dim_parts)))
    consts = [c for part in const_parts for c in part]
    outs = linear_solve_p.bind(*consts, *b, const_lengths=const_lengths, jaxprs=new)
    return outs, [0] * len(outs)


# Registration (linear in b; the transpose raises for a solve without transpose_solve).
linear_solve_p.def_abstract_eval(_linear_solve_abstract)
linear_solve_p.def_lowering(_linear_solve_lower)
linear_solve_p.def_jvp(_linear_solve_jvp)
linear_solve_p.def_transpose(_linear_solve_transpose)
linear_solve_p.def_batch(_linear_solve_batch)


# ---- the user-facing functions --------------------------------------------------------------

def trace_pytree_fn(fn: Callable, in_trees: list, avals: list, what: str, *, api: str,
                    out_tree=None, structure_of: str = "", debug_name: str | None = None,
                    has_aux: bool = False):
    """``fn`` on pytrees (``in_trees``, leaves of ``avals``) as a closed jaxpr on leaves (the
    aux leaves after the output's, with ``has_aux``), with the traced values it closes over
    hoisted to leading inputs; returns (jaxpr, consts, aux tree). An output whose structure
    is not ``out_tree`` raises ``api``'s TypeError naming ``structure_of``. Shared by
    ``custom_linear_solve`` and ``custom_root``."""
    aux_tree = []
    sizes = [t.num_leaves for t in in_trees]

    def flat(*leaves):
        args, i = [], 0
        for t, k in zip(in_trees, sizes):
            args.append(tree_unflatten(t, list(leaves[i:i + k])))
            i += k
        out = fn(*args)
        aux_leaves = []
        if has_aux:
            out, aux = out
            aux_leaves, t = tree_flatten(aux)
            aux_tree.append(t)
        out_leaves, got = tree_flatten(out)
        if out_tree is not None and got != out_tree:
            raise TypeError(f"{api}: {what} must return a value with the structure of "
                            f"{structure_of} {out_tree}, got {got}")
        return out_leaves + aux_leaves, None

    debug = DebugInfo(debug_name or api, what, None)
    jaxpr, consts, _ = trace_to_jaxpr(flat, avals, debug)
    closed, hoisted = split_tracer_consts(jaxpr, consts)
    return closed, hoisted, (aux_tree[0] if aux_tree else None)


def _trace_vector_fn(fn: Callable, tree, avals, what: str, has_aux: bool = False):
    """``fn`` (a pytree of ``tree`` -> pytree of the same structure) as a closed jaxpr."""
    return trace_pytree_fn(fn, [tree], avals, what, api="custom_linear_solve", out_tree=tree,
                           structure_of="its input", debug_name=what, has_aux=has_aux)


def custom_linear_solve(matvec: Callable, b, solve: Callable,
                        transpose_solve: Callable | None = None, symmetric: bool = False,
                        has_aux: bool = False):
    """``solve(matvec, b)``, differentiated implicitly (mirrors
    ``jax.lax.custom_linear_solve``): derivatives solve again with ``solve`` (forward) or
    ``transpose_solve`` (reverse; ``symmetric=True`` reuses ``solve``) instead of
    differentiating through ``solve``.

    ``matvec`` is linear; ``solve(matvec, b)`` and ``transpose_solve(vecmat, b)`` return
    ``x`` with ``matvec(x) == b`` (``vecmat(x) == b``), of ``b``'s structure. With
    ``has_aux`` they return ``(x, aux)`` and so does ``custom_linear_solve`` (``aux``,
    solver diagnostics say, is not differentiated).
    """
    b_leaves, tree = tree_flatten(b)
    avals = [get_aval(x) for x in b_leaves]
    mv, mv_c, _ = _trace_vector_fn(matvec, tree, avals, "matvec")
    s, s_c, aux_tree = _trace_vector_fn(lambda v: solve(matvec, v), tree, avals, "solve",
                                        has_aux)
    vm = ts = None
    vm_c, ts_c = [], []
    if symmetric:
        vm, vm_c, ts, ts_c = mv, mv_c, s, s_c
    elif transpose_solve is not None:
        def vecmat(y):
            # matvec transposed: A^T y, from matvec's jaxpr.
            lin = [UndefinedPrimal(a) for a in avals]
            y_leaves = tree_flatten(y)[0]
            t = transpose_jaxpr(mv, [*mv_c, *lin], y_leaves, "vecmat")
            return tree_unflatten(tree, eval_jaxpr(t.jaxpr, t.consts, *mv_c, *y_leaves))

        vm, vm_c, _ = _trace_vector_fn(vecmat, tree, avals, "vecmat")
        ts, ts_c, _ = _trace_vector_fn(lambda v: transpose_solve(vecmat, v), tree, avals,
                                       "transpose_solve", has_aux)
    jaxprs = LinearSolveJaxprs(mv, vm, s, ts)
    lengths = (len(mv_c), len(vm_c), len(s_c), len(ts_c))
    outs = linear_solve_p.bind(*mv_c, *vm_c, *s_c, *ts_c, *b_leaves, const_lengths=lengths,
                               jaxprs=jaxprs)
    x = tree_unflatten(tree, list(outs[:len(b_leaves)]))
    if has_aux:
        return x, tree_unflatten(aux_tree, list(outs[len(b_leaves):]))
    return x
