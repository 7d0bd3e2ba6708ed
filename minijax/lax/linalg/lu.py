"""lu: LU decomposition with partial pivoting, ``a[perm] = L @ U``.

``lu_p`` returns ``(lu, pivots, permutation)`` as jax does: ``lu`` holds ``U`` in
its upper triangle and the unit-diagonal ``L`` below it, ``pivots[i]`` is the
row swapped with row ``i`` (0-based, LAPACK's ``ipiv`` minus one) and
``permutation`` the row order those swaps produce. It is lowered on CPU to
LAPACK's ``getrf`` (jaxlib's ``lapack_?getrf_ffi``) on the whole stack; the
permutation is computed from the pivots by ``lu_pivots_to_permutation_p``, a
loop over the swaps lowered inline. Singular matrices are factored (a zero on
``U``'s diagonal); only an invalid argument (``info < 0``) gives NaNs.

``lu_solve`` solves ``a x = b`` (or with ``a`` transposed) from the factors.
"""

from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax import binary as _b
from minijax.lax import shape as _shape
from minijax.lax.control_flow import fori_loop
from minijax.lax.convert import convert_element_type
from minijax.lax.linalg._common import (batch_dims, check_dtype, def_batch_leading, eye,
                                        info_ok, lapack_call, lapack_target, lower_fun, matmul,
                                        nan_unless, permute_rows, tril, triu)
from minijax.lax.linalg.triangular_solve import triangular_solve
from minijax.lax.reduce import reduce_sum
from minijax.lax.select import select
from minijax.lax.slicing import dynamic_slice
from minijax.lax.slicing import slice as lax_slice
from minijax.lax.sort import sort_key_val
from minijax.transforms.ad import Zero, defjvp_zero, tangent_aval

lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")


# ---- lu_pivots_to_permutation -----------------------------------------------------------------

@lu_pivots_to_permutation_p.def_abstract_eval
def _pivots_abstract(pivots, *, permutation_size):
    batch = batch_dims("lu_pivots_to_permutation", [pivots], [1])
    if pivots.dtype != np.int32:
        raise TypeError(f"lu_pivots_to_permutation does not accept dtype {pivots.dtype.name}. "
                        f"Accepted dtypes are int32.")
    if permutation_size < pivots.shape[-1]:
        raise ValueError(f"Output permutation size {permutation_size} has to exceed the "
                         f"trailing dimension of the pivots. Got pivots size "
                         f"{pivots.shape[-1]}")
    return ShapedArray(batch + (permutation_size,), np.dtype(np.int32))


def _pivots_to_permutation(swaps, permutation_size: int):
    """Apply the row swaps ``i <-> swaps[..., i]`` in order to ``0..m-1``, all batch
    members at once: each step reads and writes the two entries through masks (the
    swapped-in values are picked out by a masked sum), so no gather or scatter."""
    *batch, k = get_aval(swaps).shape
    nb = len(batch)
    shape = (*batch, permutation_size)
    iota = _shape.broadcasted_iota(np.int32, shape, nb)
    if permutation_size == 0 or k == 0:
        return iota
    zeros = _shape.broadcast_in_dim(np.int32(0), shape, ())

    def entry(perm, mask):  # perm[..., j] where mask, as shape-(batch) values
        return reduce_sum(select(mask, perm, zeros), (nb,))

    def spread(v):  # batch-shaped -> shape
        return _shape.broadcast_in_dim(v, shape, tuple(range(nb)))

    def body(i, perm):
        i = convert_element_type(i, np.int32)  # the loop index is int64 under x64
        j = _shape.reshape(dynamic_slice(swaps, (0,) * nb + (i,), (*batch, 1)), tuple(batch))
        at_i = _b.eq(iota, _shape.broadcast_in_dim(i, shape, ()))
        at_j = _b.eq(iota, spread(j))
        x, y = entry(perm, at_i), entry(perm, at_j)
        perm = select(at_i, spread(y), perm)
        return select(at_j, spread(x), perm)

    return fori_loop(np.int32(0), np.int32(k), body, iota)


@lu_pivots_to_permutation_p.def_lowering
def _pivots_lower(ctx, pivots, *, permutation_size):
    out, = lower_fun(ctx, lambda p: [_pivots_to_permutation(p, permutation_size)], pivots)
    return out


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation ``perm`` (int32 ``[..., permutation_size]``) made by swapping row
    ``i`` with row ``pivots[..., i]`` for each ``i`` in turn."""
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


defjvp_zero(lu_pivots_to_permutation_p)
def_batch_leading(lu_pivots_to_permutation_p)


# ---- lu: abstract eval ------------------------------------------------------------------------

lu_p = Primitive("lu", multiple_results=True)


@lu_p.def_abstract_eval
def _lu_abstract(x):
    batch = batch_dims("lu", [x], [2])
    check_dtype("lu", x)
    m, n = x.shape[-2:]
    i32 = np.dtype(np.int32)
    return [ShapedArray(x.shape, x.dtype, x.weak_type), ShapedArray(batch + (min(m, n),), i32),
            ShapedArray(batch + (m,), i32)]


# ---- lu: lowering -----------------------------------------------------------------------------

@lu_p.def_lowering
def _lu_lower(ctx, x):
    aval, pivots_aval, perm_aval = ctx.avals_out
    info_aval = ShapedArray(aval.shape[:-2], np.dtype(np.int32))
    lu, pivots, info = lapack_call(ctx, lapack_target("getrf_ffi", aval.dtype), [x],
                                   [aval, pivots_aval, info_aval], aliases={0: 0})
    one = ctx.constant(1, np.int32, pivots_aval.shape)
    pivots = ctx.op("stablehlo.subtract", [pivots, one], pivots_aval)  # 1-based -> 0-based
    lu = nan_unless(ctx, info_ok(ctx, info, "GE"), lu)
    m = aval.shape[-2]
    perm, = lower_fun(ctx, lambda p: [lu_pivots_to_permutation(p, m)], pivots)
    return [lu, pivots, perm]


# ---- the lax-level functions ------------------------------------------------------------------

def lu(x):
    """LU decomposition with partial pivoting of ``x`` ``[..., m, n]``.

    Returns
    -------
    lu : ``[..., m, n]``, ``U`` in the upper triangle and ``L`` (unit diagonal) below.
    pivots : int32 ``[..., min(m, n)]``, row ``i`` was swapped with row ``pivots[i]``.
    permutation : int32 ``[..., m]``, so that ``x[..., permutation, :] == L @ U``.
    """
    lu_, pivots, perm = lu_p.bind(x)
    return lu_, pivots, perm


def inverse_permutation(perm):
    """``inv`` with ``inv[..., perm[..., i]] = i``."""
    aval = get_aval(perm)
    iota = _shape.broadcasted_iota(aval.dtype, aval.shape, aval.ndim - 1)
    return sort_key_val(perm, iota, dimension=aval.ndim - 1)[1]


def lu_solve(lu_, permutation, b, trans: int = 0):
    """Solve ``a x = b`` (``trans=0``), ``a^T x = b`` (1) or ``a^H x = b`` (2) given
    ``lu(a)``; ``lu_`` ``[..., m, m]``, ``permutation`` ``[..., m]`` and ``b``
    ``[..., m, k]`` share their batch dimensions."""
    if trans == 0:
        x = permute_rows(b, permutation)
        x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
        return triangular_solve(lu_, x, left_side=True, lower=False)
    if trans in (1, 2):
        conjugate = trans == 2
        x = triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True,
                             conjugate_a=conjugate)
        x = triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True,
                             transpose_a=True, conjugate_a=conjugate)
        return permute_rows(x, inverse_permutation(permutation))
    raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")


# ---- differentiation ------------------------------------------------------------------------

def _lu_jvp(primals, tangents):
    # With P a = L U: L^-1 P da U^-1 = L^-1 dL + dU U^-1, a strictly lower plus an upper
    # triangular part, so dL = L tril(X, -1) and dU = triu(X) U for X = L^-1 P da U^-1
    # (De Hoog, Anderssen and Lukas). Rectangular factors are padded to square ones.
    a, = primals
    a_dot, = tangents
    lu_, pivots, perm = lu_p.bind(a)
    i32_zero = Zero(ShapedArray(get_aval(pivots).shape, dtypes.float0))
    perm_zero = Zero(ShapedArray(get_aval(perm).shape, dtypes.float0))
    if type(a_dot) is Zero:
        return [lu_, pivots, perm], [Zero(tangent_aval(get_aval(lu_))), i32_zero, perm_zero]
    aval = get_aval(lu_)
    *batch, m, n = aval.shape
    nb = len(batch)
    k = min(m, n)
    dt = aval.dtype
    zero = np.asarray(0, dt)
    keep = [(0, 0, 0)] * nb
    l_part = tril(lax_slice(lu_, (0,) * (nb + 2), (*batch, m, k)), -1)
    l_mat = _b.add(_shape.pad(l_part, zero, keep + [(0, 0, 0), (0, m - k, 0)]),
                   eye(dt, (*batch, m, m)))
    u_part = triu(lax_slice(lu_, (0,) * (nb + 2), (*batch, k, n)))
    u_eye = _shape.pad(eye(dt, (*batch, n - k, n - k)), zero, keep + [(k, 0, 0), (k, 0, 0)])
    u_mat = _b.add(_shape.pad(u_part, zero, keep + [(0, n - k, 0), (0, 0, 0)]), u_eye)
    la = triangular_solve(l_mat, permute_rows(a_dot, perm), left_side=True, lower=True,
                          unit_diagonal=True)
    lau = triangular_solve(u_mat, la, left_side=False, lower=False)
    l_dot = matmul(l_mat, tril(lau, -1))
    u_dot = matmul(triu(lau), u_mat)
    return [lu_, pivots, perm], [_b.add(l_dot, u_dot), i32_zero, perm_zero]


# ---- registration -----------------------------------------------------------------------------

lu_p.def_jvp(_lu_jvp)
def_batch_leading(lu_p)
