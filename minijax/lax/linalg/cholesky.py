"""cholesky: the lower Cholesky factor of Hermitian positive-definite matrices.

Lowered on CPU to LAPACK's ``potrf`` (jaxlib's ``lapack_?potrf_ffi``) on the
whole stack ``[..., n, n]`` at once. The kernel reads only the lower triangle
and leaves the upper one as it was, so ``cholesky`` (the function) zeroes it;
a matrix the kernel cannot factor (not positive definite) comes back as NaNs,
as in jax.

``cholesky_update_p`` updates an upper Cholesky factor for a rank-1 change,
``R^T R + w w^T``, with Givens rotations (an unrolled loop over the rows, as in
jax; no derivatives there either).
"""

from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax import binary as _b
from minijax.lax import shape as _shape
from minijax.lax.linalg._common import (batch_dims, char, check_dtype, def_batch_leading, eye,
                                        info_ok, lapack_call, lapack_target, lower_fun, matmul,
                                        nan_unless, symmetrize, tril)
from minijax.lax.select import select
from minijax.lax.slicing import slice as lax_slice
from minijax.lax.unary import abs as lax_abs
from minijax.lax.unary import neg, rsqrt
from minijax.lax.linalg.triangular_solve import triangular_solve
from minijax.transforms.ad import Zero, tangent_aval

cholesky_p = Primitive("cholesky")


# ---- abstract eval -----------------------------------------------------------------------------

@cholesky_p.def_abstract_eval
def _cholesky_abstract(x):
    batch_dims("cholesky", [x], [2])
    check_dtype("cholesky", x)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"The input to cholesky must be a square matrix. Got shape "
                         f"{x.shape[-2:]}.")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


# ---- lowering ----------------------------------------------------------------------------------

@cholesky_p.def_lowering
def _cholesky_lower(ctx, x):
    aval = x.aval
    info_aval = ShapedArray(aval.shape[:-2], np.dtype(np.int32))
    factor, info = lapack_call(ctx, lapack_target("potrf_ffi", aval.dtype), [x],
                               [aval, info_aval], config={"uplo": char("L")}, aliases={0: 0})
    return nan_unless(ctx, info_ok(ctx, info), factor)


# ---- the lax-level function -----------------------------------------------------------------

def cholesky(x, *, symmetrize_input: bool = True):
    """The Cholesky factor ``L`` (lower triangular) of ``x = L @ L^H``.

    Parameters
    ----------
    x : array ``[..., n, n]``, Hermitian (symmetric if real) positive definite.
    symmetrize_input : bool
        Use ``(x + x^H) / 2`` (default); otherwise only the lower triangle is read.

    Returns
    -------
    ``L`` with the shape and dtype of ``x``; NaNs for a matrix that is not positive
    definite.
    """
    if symmetrize_input:
        x = symmetrize(x)
    return tril(cholesky_p.bind(x))


# ---- differentiation ------------------------------------------------------------------------

def _cholesky_jvp(primals, tangents):
    # From L L^H = A: dL = L phi(L^-1 dA L^-H), with phi taking the lower triangle
    # and halving the diagonal (Murray 2016, arXiv:1602.07527).
    x, = primals
    sigma_dot, = tangents
    L = tril(cholesky_p.bind(x))
    if type(sigma_dot) is Zero:
        return L, Zero(tangent_aval(get_aval(L)))
    tmp = triangular_solve(L, sigma_dot, left_side=False, transpose_a=True, conjugate_a=True,
                           lower=True)
    inner = triangular_solve(L, tmp, left_side=True, transpose_a=False, lower=True)
    aval = get_aval(inner)
    halve = _b.add(np.asarray(1, aval.dtype), eye(aval.dtype, aval.shape))
    phi = _b.div(tril(inner), halve)
    return L, matmul(L, phi)


# ---- registration -----------------------------------------------------------------------------

cholesky_p.def_jvp(_cholesky_jvp)
def_batch_leading(cholesky_p)


# ---- cholesky_update ----------------------------------------------------------------------------

cholesky_update_p = Primitive("cholesky_update")


@cholesky_update_p.def_abstract_eval
def _cholesky_update_abstract(r, w):
    batch_dims("cholesky_update", [r, w], [2, 1])
    for x in (r, w):
        if not dtypes.is_inexact(x.dtype) or dtypes.is_complex(x.dtype):
            raise TypeError(f"cholesky_update does not accept dtype {x.dtype.name}. Accepted "
                            f"dtypes are subtypes of floating.")
    if r.dtype != w.dtype:
        raise TypeError(f"cholesky_update requires arguments to have the same dtypes, got "
                        f"{r.dtype.name}, {w.dtype.name}.")
    if r.shape[-1] != r.shape[-2] or w.shape[-1] != r.shape[-1]:
        raise ValueError(f"Rank-1 update to Cholesky decomposition takes a square matrix and a "
                         f"vector of the same size as input. Got shapes {r.shape} and "
                         f"{w.shape} instead")
    return r


def _givens(x, y):
    """(c, s) rotating (x, y) onto the x axis, computed without overflow; (1, 0) where
    y == 0."""
    dt = get_aval(x).dtype
    zero = np.asarray(0, dt)
    no_turn = _b.eq(y, _shape.broadcast_in_dim(zero, get_aval(y).shape, ()))
    scale = _b.max(lax_abs(x), lax_abs(y))
    scale = select(no_turn, _shape.broadcast_in_dim(np.asarray(1, dt), get_aval(y).shape, ()),
                   scale)
    xs, ys = _b.div(x, scale), _b.div(y, scale)
    rh = rsqrt(_b.add(_b.mul(xs, xs), _b.mul(ys, ys)))
    one = _shape.broadcast_in_dim(np.asarray(1, dt), get_aval(y).shape, ())
    zeros = _shape.broadcast_in_dim(zero, get_aval(y).shape, ())
    return (select(no_turn, one, _b.mul(xs, rh)),
            select(no_turn, zeros, neg(_b.mul(ys, rh))))


def _cholesky_update_impl(r, z):
    shape = get_aval(r).shape
    nb, n = len(shape) - 2, shape[-1]
    rows = _shape.broadcasted_iota(np.int32, shape, nb)

    def spread(v):  # [..., n] -> [..., n, n], the same row everywhere
        return _shape.broadcast_in_dim(v, shape, tuple(range(nb)) + (nb + 1,))

    def col(v, k):  # v[..., k] of a [..., n] array, as [..., n] (broadcast)
        e = _shape.reshape(lax_slice(v, (0,) * nb + (k,), (*shape[:-2], k + 1)), shape[:-2])
        return _shape.broadcast_in_dim(e, shape[:-1], tuple(range(nb)))

    for k in range(n):
        row = _shape.reshape(lax_slice(r, (0,) * nb + (k, 0), (*shape[:-2], k + 1, n)),
                             shape[:-1])
        c, s = _givens(col(row, k), col(z, k))
        new_row = _b.sub(_b.mul(c, row), _b.mul(s, z))
        z = _b.add(_b.mul(c, z), _b.mul(s, row))
        r = select(_row_mask(rows, k), spread(new_row), r)
    return r


def _row_mask(rows, k: int):
    return _b.eq(rows, _shape.broadcast_in_dim(np.int32(k), get_aval(rows).shape, ()))


@cholesky_update_p.def_lowering
def _cholesky_update_lower(ctx, r, w):
    out, = lower_fun(ctx, lambda x, y: [_cholesky_update_impl(x, y)], r, w)
    return out


def cholesky_update(r_matrix, w_vector):
    """The upper Cholesky factor of ``R^T R + w w^T`` given the factor ``R`` (upper
    triangular, ``[..., n, n]``) of ``R^T R`` and ``w`` ``[..., n]``, in O(n^2)."""
    return cholesky_update_p.bind(r_matrix, w_vector)


def_batch_leading(cholesky_update_p)
