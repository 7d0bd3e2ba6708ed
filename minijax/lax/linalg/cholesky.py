"""cholesky: the lower Cholesky factor of Hermitian positive-definite matrices.

Lowered on CPU to LAPACK's ``potrf`` (jaxlib's ``lapack_?potrf_ffi``) on the
whole stack ``[..., n, n]`` at once. The kernel reads only the lower triangle
and leaves the upper one as it was, so ``cholesky`` (the function) zeroes it;
a matrix the kernel cannot factor (not positive definite) comes back as NaNs,
as in jax.
"""

from __future__ import annotations

import numpy as np

from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax import binary as _b
from minijax.lax.linalg._common import (batch_dims, char, check_dtype, def_batch_leading, eye,
                                        info_ok, lapack_call, lapack_target, matmul, nan_unless,
                                        symmetrize, tril)
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
