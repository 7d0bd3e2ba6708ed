"""qr: QR decompositions, from LAPACK's Householder kernels.

Three primitives, as in jax:

- ``geqrf_p``: ``a -> (r_and_reflectors, taus)``, LAPACK's ``geqrf``: ``R`` in the
  upper triangle, the Householder vectors below it and their scales in ``taus``;
- ``geqp3_p``: the same with column pivoting (``geqp3``), also returning the
  column order ``jpvt`` (1-based, as LAPACK writes it);
- ``householder_product_p``: ``(a, taus) -> Q``, the product of the reflectors
  (``orgqr``/``ungqr``);
- ``ormqr_p``: ``(a, taus, c) -> Q c`` (or ``Q^H c``, ``c Q``, ``c Q^H``) without
  forming ``Q`` (``ormqr``/``unmqr``); linear in ``c``;
- ``qr_p``: ``a -> (q, r)`` (and the column permutation with ``pivoting``),
  lowered inline as geqrf (or geqp3) then householder_product, with jax's jvp
  (including the full-matrices case of tall inputs).

All of them take leading batch dimensions, so a stack or a vmapped axis is one
kernel call.
"""

from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax import binary as _b
from minijax.lax import shape as _shape
from minijax.lax.linalg._common import (H, T, batch_dims, block, check_dtype, conj,
                                        def_batch_leading, eye, lapack_call, lapack_target,
                                        lower_fun, matmul, permute_rows, tril, triu)
from minijax.lax.linalg.lu import lu, lu_solve
from minijax.lax.linalg.triangular_solve import triangular_solve
from minijax.lax.unary import real
from minijax.lax.convert import convert_element_type
from minijax.transforms.ad import Zero, tangent_aval


# ---- geqrf --------------------------------------------------------------------------------------

geqrf_p = Primitive("geqrf", multiple_results=True)


@geqrf_p.def_abstract_eval
def _geqrf_abstract(a):
    batch = batch_dims("geqrf", [a], [2])
    check_dtype("geqrf", a)
    m, n = a.shape[-2:]
    return [a, ShapedArray(batch + (min(m, n),), a.dtype)]


@geqrf_p.def_lowering
def _geqrf_lower(ctx, a):
    return lapack_call(ctx, lapack_target("geqrf_ffi", a.aval.dtype), [a], ctx.avals_out,
                       aliases={0: 0})


def geqrf(a):
    """Householder QR of ``a`` ``[..., m, n]``: ``(r_and_reflectors, taus)`` as LAPACK's
    ``geqrf`` returns them."""
    out, taus = geqrf_p.bind(a)
    return out, taus


def_batch_leading(geqrf_p)


# ---- geqp3 --------------------------------------------------------------------------------------

geqp3_p = Primitive("geqp3", multiple_results=True)


@geqp3_p.def_abstract_eval
def _geqp3_abstract(a, jpvt):
    batch = batch_dims("geqp3", [a, jpvt], [2, 1])
    check_dtype("geqp3", a)
    if jpvt.dtype != np.int32:
        raise TypeError(f"geqp3 does not accept dtype {jpvt.dtype.name} for jpvt; it must be "
                        f"int32")
    if jpvt.shape[-1] != a.shape[-1]:
        raise ValueError(f"geqp3: jpvt must have shape [..., n] for a of shape [..., m, n]; "
                         f"got {jpvt.shape} and {a.shape}")
    m, n = a.shape[-2:]
    return [a, jpvt, ShapedArray(batch + (min(m, n),), a.dtype)]


@geqp3_p.def_lowering
def _geqp3_lower(ctx, a, jpvt):
    return lapack_call(ctx, lapack_target("geqp3_ffi", a.aval.dtype), [a, jpvt],
                       ctx.avals_out, aliases={0: 0, 1: 1})


def geqp3(a, jpvt):
    """Column-pivoted Householder QR: ``(r_and_reflectors, jpvt, taus)``; ``jpvt`` (int32
    ``[..., n]``, zeros for free columns) comes back as the 1-based column order."""
    out, jpvt, taus = geqp3_p.bind(a, jpvt)
    return out, jpvt, taus


def_batch_leading(geqp3_p)


# ---- householder_product ------------------------------------------------------------------------

householder_product_p = Primitive("householder_product")


@householder_product_p.def_abstract_eval
def _householder_product_abstract(a, taus):
    batch_dims("householder_product", [a, taus], [2, 1])
    check_dtype("householder_product", a, taus)
    m, n = a.shape[-2:]
    if m < n:
        raise ValueError(f"The first argument to householder_product must have at least as "
                         f"many rows as columns, got shape {a.shape[-2:]}")
    if taus.shape[-1] > min(m, n):
        raise ValueError("The second argument to householder_product must not have more rows "
                         "than the minimum of the first argument's rows and columns.")
    return a


@householder_product_p.def_lowering
def _householder_product_lower(ctx, a, taus):
    dt = a.aval.dtype
    base = "ungqr_ffi" if dtypes.is_complex(dt) else "orgqr_ffi"
    out, = lapack_call(ctx, lapack_target(base, dt), [a, taus], ctx.avals_out, aliases={0: 0})
    return out


def householder_product(a, taus):
    """The product of the Householder reflectors stored in ``a`` (below the diagonal)
    with scales ``taus``: the first ``n`` columns of ``Q`` (``[..., m, n]``)."""
    return householder_product_p.bind(a, taus)


def_batch_leading(householder_product_p)


# ---- ormqr ------------------------------------------------------------------------------------

ormqr_p = Primitive("ormqr")


@ormqr_p.def_abstract_eval
def _ormqr_abstract(a, taus, c, *, left, transpose):
    batch_dims("ormqr", [a, taus, c], [2, 1, 2])
    check_dtype("ormqr", a, taus, c)
    m = a.shape[-2]
    if left and c.shape[-2] != m:
        raise ValueError(f"ormqr with left=True expects c to have the same number of rows as "
                         f"the Householder matrix a. Got a shape {a.shape[-2:]} and c shape "
                         f"{c.shape[-2:]}.")
    if not left and c.shape[-1] != m:
        raise ValueError(f"ormqr with left=False expects c to have the same number of columns "
                         f"as the Householder matrix a has rows. Got a shape {a.shape[-2:]} "
                         f"and c shape {c.shape[-2:]}.")
    return c


@ormqr_p.def_lowering
def _ormqr_lower(ctx, a, taus, c, *, left, transpose):
    dt = a.aval.dtype
    base = "unmqr_ffi" if dtypes.is_complex(dt) else "ormqr_ffi"
    out, = lapack_call(ctx, lapack_target(base, dt), [a, taus, c], [c.aval],
                       config={"left": bool(left), "transpose": bool(transpose)},
                       aliases={0: 2})
    return out


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """``Q @ c`` (``left``) or ``c @ Q``, with ``Q^H`` instead of ``Q`` if ``transpose``,
    for the ``Q`` of Householder reflectors ``(a, taus)`` as ``geqrf`` returns them,
    without forming ``Q``."""
    return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


def _ormqr_jvp(primals, tangents, *, left, transpose):
    a, taus, c = primals
    da, dtaus, dc = tangents
    out = ormqr_p.bind(a, taus, c, left=left, transpose=transpose)
    if type(da) is not Zero or type(dtaus) is not Zero:
        raise NotImplementedError("ormqr is differentiable in c only (jax has no derivative "
                                  "rule for it)")
    if type(dc) is Zero:
        return out, Zero(tangent_aval(get_aval(out)))
    return out, ormqr_p.bind(a, taus, dc, left=left, transpose=transpose)


def _ormqr_transpose(ct, a, taus, c, *, left, transpose):
    # c -> Q c is transposed by ct -> Q^T ct = conj(Q^H conj(ct)) (likewise on the right).
    if type(ct) is Zero:
        return [None, None, Zero(c.aval)]
    flip = not transpose
    if dtypes.is_complex(get_aval(ct).dtype):
        out = conj(ormqr_p.bind(a, taus, conj(ct), left=left, transpose=flip))
    else:
        out = ormqr_p.bind(a, taus, ct, left=left, transpose=flip)
    return [None, None, out]


ormqr_p.def_jvp(_ormqr_jvp)
ormqr_p.def_transpose(_ormqr_transpose)
def_batch_leading(ormqr_p)


# ---- qr: abstract eval and lowering ---------------------------------------------------------

qr_p = Primitive("qr", multiple_results=True)


@qr_p.def_abstract_eval
def _qr_abstract(a, *, pivoting, full_matrices, use_magma=None):
    batch = batch_dims("qr", [a], [2])
    check_dtype("qr", a)
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    out = [ShapedArray(batch + (m, k), a.dtype), ShapedArray(batch + (k, n), a.dtype)]
    if pivoting:
        out.append(ShapedArray(batch + (n,), np.dtype(np.int32)))
    return out


def _qr_impl(a, *, pivoting, full_matrices):
    """qr from geqrf/geqp3 and householder_product (traced into the lowering)."""
    *batch, m, n = get_aval(a).shape
    nb = len(batch)
    dt = get_aval(a).dtype
    if m == 0 or n == 0:
        k = m if full_matrices else min(m, n)
        q = eye(dt, (*batch, m, k))
        r = _shape.broadcast_in_dim(np.zeros((), dt), (*batch, k, n), ())
        if pivoting:
            return [q, r, _shape.broadcast_in_dim(np.int32(0), (*batch, n), ())]
        return [q, r]
    p = None
    if pivoting:
        zeros = _shape.broadcast_in_dim(np.int32(0), (*batch, n), ())
        r, p, taus = geqp3(a, zeros)
        p = _b.sub(p, np.int32(1))  # 1-based -> 0-based
    else:
        r, taus = geqrf(a)
    if m < n:
        q = householder_product(block(r, (0, m), (0, m)), taus)
    elif full_matrices:
        q = _shape.pad(r, np.asarray(0, dt), [(0, 0, 0)] * (nb + 1) + [(0, m - n, 0)])
        q = householder_product(q, taus)
    else:
        q = householder_product(r, taus)
        r = block(r, (0, n), (0, n))
    r = triu(r)
    return [q, r, p] if pivoting else [q, r]


@qr_p.def_lowering
def _qr_lower(ctx, a, *, pivoting, full_matrices, use_magma=None):
    return lower_fun(ctx, lambda x: _qr_impl(x, pivoting=pivoting,
                                             full_matrices=full_matrices), a)


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition ``x = q @ r`` (``x[..., p] = q @ r`` with ``pivoting``).

    Parameters
    ----------
    x : array ``[..., m, n]``
    pivoting : bool
        Column pivoting (rank revealing): also returns the permutation ``p``.
    full_matrices : bool
        ``q`` ``[..., m, m]`` and ``r`` ``[..., m, n]`` (default); otherwise
        ``[..., m, k]`` and ``[..., k, n]`` with ``k = min(m, n)``.
    use_magma : ignored (GPU only in jax).

    Returns
    -------
    ``(q, r)`` or ``(q, r, p)``.
    """
    out = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices),
                    use_magma=use_magma)
    return tuple(out)


# ---- qr: differentiation ----------------------------------------------------------------------

def _thin_qr_jvp(q, r, dx):
    """(dq, dr) for x = q r with x ``[..., m, n]``, m >= n, q ``[..., m, n]``, r ``[..., n, n]``
    (J. Townsend's derivation: q^H dx r^-1 = do + dr r^-1 with do skew-Hermitian)."""
    dx_rinv = triangular_solve(r, dx)  # right side: dx r^-1
    qt_dx_rinv = matmul(H(q), dx_rinv)
    lower = tril(qt_dx_rinv, -1)
    do = _b.sub(lower, H(lower))
    dt = get_aval(do).dtype
    if dtypes.is_complex(dt):  # the diagonal's imaginary part belongs to do as well
        imag_part = _b.sub(qt_dx_rinv, convert_element_type(real(qt_dx_rinv), dt))
        shape = get_aval(do).shape
        do = _b.add(do, _b.mul(eye(dt, shape), imag_part))
    dq = _b.add(matmul(q, _b.sub(do, qt_dx_rinv)), dx_rinv)
    dr = matmul(_b.sub(qt_dx_rinv, do), r)
    return dq, dr


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma=None):
    x, = primals
    dx, = tangents
    out = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    q, r, *p = out
    zeros = [Zero(tangent_aval(get_aval(o))) for o in out]
    if type(dx) is Zero:
        return out, zeros
    *batch, m, n = get_aval(x).shape
    nb = len(batch)
    if pivoting:  # x[..., p] = q r: differentiate with the columns in the pivoted order
        x, dx = _permute_columns(x, p[0]), _permute_columns(dx, p[0])
    if m < n:
        # x = [x1 x2] = q [r1 r2]: (dq, dr1) from the square x1 = q r1; r2 = q^H x2.
        x2 = block(x, (0, m), (m, n))
        dq, dr1 = _thin_qr_jvp(q, block(r, (0, m), (0, m)), block(dx, (0, m), (0, m)))
        dr2 = _b.add(matmul(H(dq), x2), matmul(H(q), block(dx, (0, m), (m, n))))
        dr = _shape.concatenate([dr1, dr2], nb + 1)
        return out, [dq, dr] + zeros[2:]
    q_mn = block(q, (0, m), (0, n)) if full_matrices else q
    r_nn = block(r, (0, n), (0, n)) if full_matrices else r
    dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
    if not full_matrices or m == n:
        return out, [dq_mn, dr_nn] + zeros[2:]
    # Tall input, full q (arXiv:2409.13374, eqs. 32-33): with z = q_pn (q_nn - I)^-1,
    # dq_mp = dq_mn z^H - (q_mn + q_mp z) (dq_pn - z dq_nn)^H.
    dt = get_aval(q).dtype
    q_nn, q_pn = block(q_mn, (0, n), (0, n)), block(q_mn, (n, m), (0, n))
    q_mp = block(q, (0, m), (n, m))
    dq_nn, dq_pn = block(dq_mn, (0, n), (0, n)), block(dq_mn, (n, m), (0, n))
    lu_, _, perm = lu(_b.sub(q_nn, eye(dt, get_aval(q_nn).shape)))
    z_h = lu_solve(lu_, perm, H(q_pn), trans=2)  # (q_nn - I)^H z^H = q_pn^H
    z = H(z_h)
    dq_mp = _b.sub(matmul(dq_mn, z_h),
                   matmul(_b.add(q_mn, matmul(q_mp, z)),
                          H(_b.sub(dq_pn, matmul(z, dq_nn)))))
    dq = _shape.concatenate([dq_mn, dq_mp], nb + 1)
    zero_rows = _shape.broadcast_in_dim(np.zeros((), dt), (*batch, m - n, n), ())
    dr = _shape.concatenate([dr_nn, zero_rows], nb)
    return out, [dq, dr] + zeros[2:]


def _permute_columns(x, perm):
    """``x[..., :, perm]``."""
    return T(permute_rows(T(x), perm))


# ---- registration -----------------------------------------------------------------------------

qr_p.def_jvp(_qr_jvp)
def_batch_leading(qr_p)
