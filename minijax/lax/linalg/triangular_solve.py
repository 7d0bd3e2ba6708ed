"""triangular_solve: solve a triangular system ``op(a) x = b`` or ``x op(a) = b``.

Lowered on CPU to LAPACK's ``trsm`` (jaxlib's ``lapack_?trsm_ffi``), which takes
leading batch dimensions. The primitive is linear in ``b``: its jvp in ``b`` is
itself and its transpose solves with ``op(a)`` transposed.

Params: ``left_side`` (solve ``op(a) x = b`` rather than ``x op(a) = b``),
``lower`` (which triangle of ``a`` is read), ``transpose_a``, ``conjugate_a``
(only meaningful for complex ``a``) and ``unit_diagonal`` (the diagonal of
``a`` is taken to be 1 and not read).
"""

from __future__ import annotations

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax import shape as _shape
from minijax.lax.linalg._common import (T, batch_dims, char, check_dtype, conj, lapack_call,
                                        lapack_target, lower_fun, matmul, tril, triu)
from minijax.lax.unary import neg
from minijax.transforms.ad import Zero, defjvp2, is_undefined
from minijax.transforms.batching import bdim_at, moveaxis

triangular_solve_p = Primitive("triangular_solve")


# ---- abstract eval -----------------------------------------------------------------------------

@triangular_solve_p.def_abstract_eval
def _triangular_solve_abstract(a, b, *, left_side, lower, transpose_a, conjugate_a,
                               unit_diagonal):
    batch_dims("triangular_solve", [a, b], [2, 2])
    check_dtype("triangular_solve", a, b)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"The first input to triangular_solve must be a square matrix. Got "
                         f"shape {a.shape[-2:]}.")
    common = b.shape[-2] if left_side else b.shape[-1]
    if a.shape[-1] != common:
        raise ValueError(f"Incompatible shapes for arguments to triangular_solve: {a.shape} and "
                         f"{b.shape}.")
    return ShapedArray(b.shape, b.dtype, a.weak_type and b.weak_type)


# ---- lowering ----------------------------------------------------------------------------------

@triangular_solve_p.def_lowering
def _triangular_solve_lower(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
    if conjugate_a and not transpose_a:
        # trsm conjugates only together with a transpose ('C'): conjugate a itself.
        a, = lower_fun(ctx, lambda v: [conj(v)], a)
        conjugate_a = False
    trans = ("C" if conjugate_a else "T") if transpose_a else "N"
    out, = lapack_call(ctx, lapack_target("trsm_ffi", a.aval.dtype), [a, b], [b.aval],
                       config={"side": char("L" if left_side else "R"),
                               "uplo": char("L" if lower else "U"),
                               "trans_x": char(trans),
                               "diag": char("U" if unit_diagonal else "N")},
                       aliases={0: 1})
    return out


# ---- the lax-level function -----------------------------------------------------------------

def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for triangular ``a``.

    Parameters
    ----------
    a : array ``[..., m, m]``; only the triangle chosen by ``lower`` is read.
    b : array ``[..., m, n]`` (``left_side``) or ``[..., n, m]``; a ``b`` with one
        dimension less than ``a`` is a (batch of) vector(s).
    left_side, lower, transpose_a, conjugate_a, unit_diagonal : bool
        ``op(a)`` is ``a``, its transpose or its conjugate transpose.

    Returns
    -------
    ``x``, with the shape and dtype of ``b``.

    Examples
    --------
    >>> a = jnp.array([[2., 0.], [1., 4.]])
    >>> lax.linalg.triangular_solve(a, jnp.array([[2.], [9.]]), left_side=True, lower=True)
    Array([[1.],
           [2.]], dtype=float32)
    """
    conjugate_a = bool(conjugate_a) and dtypes.is_complex(get_aval(a).dtype)
    singleton = get_aval(b).ndim == get_aval(a).ndim - 1
    if singleton:
        b = _shape.expand_dims(b, (get_aval(b).ndim if left_side else get_aval(b).ndim - 1,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                  unit_diagonal=bool(unit_diagonal))
    if singleton:
        nd = get_aval(out).ndim
        out = _shape.squeeze(out, (nd - 1,) if left_side else (nd - 2,))
    return out


# ---- differentiation ------------------------------------------------------------------------

def _jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    # d(op(a)^-1 b) = -op(a)^-1 op(da) op(a)^-1 b = -op(a)^-1 op(da) ans (left side), with
    # da restricted to the triangle that is read. The products are ordered to keep
    # the cheaper one inside.
    m, n = get_aval(b).shape[-2:]
    k = 1 if unit_diagonal else 0
    g_a = tril(g_a, -k) if lower else triu(g_a, k)
    g_a = neg(g_a)
    g_a = T(g_a) if transpose_a else g_a
    g_a = conj(g_a) if conjugate_a else g_a
    params = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)

    def a_inverse(rhs):
        return triangular_solve_p.bind(a, rhs, **params)

    if left_side:
        return a_inverse(matmul(g_a, ans)) if m > n else matmul(a_inverse(g_a), ans)
    return a_inverse(matmul(ans, g_a)) if m < n else matmul(ans, a_inverse(g_a))


def _jvp_b(g_b, ans, a, b, **params):
    return triangular_solve_p.bind(a, g_b, **params)


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    if is_undefined(a):
        raise NotImplementedError("triangular_solve is not linear in its first operand")
    if type(ct) is Zero:
        return [None, Zero(b.aval)]
    ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                   transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                   unit_diagonal=unit_diagonal)
    return [None, ct_b]


# ---- batching ------------------------------------------------------------------------------

def _triangular_solve_batch(trace, vals, dims, **params):
    # With ``a`` unmapped, the mapped axis of ``b`` joins b's columns (left side) or rows
    # (right side): one solve with more right-hand sides and no copy of ``a``.
    # Otherwise the mapped axis becomes a leading batch dimension of both.
    (a, b), (da, db) = vals, dims
    if da is None:
        nd = get_aval(b).ndim
        at = nd - 1 if params["left_side"] else nd - 2  # (..., m, n, B) or (..., n, B, m)
        b = moveaxis(b, db, at)
        shape = get_aval(b).shape
        if params["left_side"]:
            flat = _shape.reshape(b, shape[:-2] + (shape[-2] * shape[-1],))
        else:
            flat = _shape.reshape(b, shape[:-3] + (shape[-3] * shape[-2], shape[-1]))
        out = triangular_solve_p.bind(a, flat, **params)
        return _shape.reshape(out, shape), at
    size = trace.axis_size
    out = triangular_solve_p.bind(bdim_at(a, da, size, 0), bdim_at(b, db, size, 0), **params)
    return out, 0


# ---- registration -----------------------------------------------------------------------------

defjvp2(triangular_solve_p, _jvp_a, _jvp_b)
triangular_solve_p.def_transpose(_triangular_solve_transpose)
triangular_solve_p.def_batch(_triangular_solve_batch)
