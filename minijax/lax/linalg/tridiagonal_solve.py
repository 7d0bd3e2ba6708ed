"""tridiagonal_solve: solve ``A x = b`` for tridiagonal ``A``.

``A`` is given by its three diagonals ``dl`` (below, ``dl[..., 0]`` unused),
``d`` and ``du`` (above, ``du[..., m-1]`` unused), each ``[..., m]``; ``b`` is
``[..., m, n]``. Lowered on CPU to LAPACK's ``gtsv`` (jaxlib's
``lapack_?gtsv_ffi``; a singular system gives NaNs) or, with
``perturb_singular``, to jaxlib's ``tridiagonal_solve_perturbed_ffi``, which
perturbs tiny pivots to keep the result finite. Linear in ``b``: its transpose
solves with ``A^T`` (the off-diagonals swapped and shifted).
"""

from __future__ import annotations

import numpy as np

from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax import binary as _b
from minijax.lax import shape as _shape
from minijax.lax.linalg._common import check_dtype, info_ok, lapack_call, lapack_target, nan_unless
from minijax.lax.slicing import slice_in_dim
from minijax.transforms.ad import Zero, add_tangents, instantiate, is_undefined, tangent_aval
from minijax.transforms.batching import bdim_at, moveaxis

tridiagonal_solve_p = Primitive("tridiagonal_solve")


# ---- abstract eval -----------------------------------------------------------------------------

@tridiagonal_solve_p.def_abstract_eval
def _tridiagonal_solve_abstract(dl, d, du, b, *, perturb_singular):
    for i, (a, r) in enumerate(zip((dl, d, du, b), (1, 1, 1, 2))):
        if a.ndim < r:
            raise TypeError(f"Input {i} to tridiagonal_solve must have rank at least {r}, but "
                            f"got shape={a.shape}")
    check_dtype("tridiagonal_solve", dl, d, du, b)
    if dl.shape != d.shape or dl.shape != du.shape:
        raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same "
                        "shape.")
    if dl.shape != b.shape[:-1]:
        raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b "
                        "equal the dimensions of the diagonal arguments.")
    return ShapedArray(b.shape, b.dtype, b.weak_type)


# ---- lowering ----------------------------------------------------------------------------------

@tridiagonal_solve_p.def_lowering
def _tridiagonal_solve_lower(ctx, dl, d, du, b, *, perturb_singular):
    b_aval = b.aval
    if perturb_singular:
        out, = lapack_call(ctx, "tridiagonal_solve_perturbed_ffi", [dl, d, du, b], [b_aval])
        return out
    info_aval = ShapedArray(b_aval.shape[:-2], np.dtype(np.int32))
    *_, x, info = lapack_call(ctx, lapack_target("gtsv_ffi", b_aval.dtype), [dl, d, du, b],
                              [dl.aval, d.aval, du.aval, b_aval, info_aval],
                              aliases={0: 0, 1: 1, 2: 2, 3: 3})
    return nan_unless(ctx, info_ok(ctx, info), x)


# ---- the lax-level function -----------------------------------------------------------------

def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """Solve the tridiagonal system ``A x = b``.

    Parameters
    ----------
    dl, d, du : arrays ``[..., m]``: ``A[i, i-1] = dl[i]`` (``dl[0]`` unused),
        ``A[i, i] = d[i]``, ``A[i, i+1] = du[i]`` (``du[m-1]`` unused).
    b : array ``[..., m, n]``.
    perturb_singular : bool
        Perturb near-zero pivots so that singular systems give finite results.

    Returns
    -------
    ``x``, with the shape and dtype of ``b``.
    """
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))


# ---- differentiation ------------------------------------------------------------------------

def _tridiagonal_product(dl, d, du, x):
    """``A x`` for the tridiagonal ``A`` given by its diagonals: row ``i`` is
    ``dl[i] x[i-1] + d[i] x[i] + du[i] x[i+1]``."""
    shape = get_aval(x).shape
    nd = len(shape)

    def times(v, y):  # the diagonal v [..., m] scales the rows of y [..., m, n]
        return _b.mul(_shape.broadcast_in_dim(v, shape, tuple(range(nd - 1))), y)

    x_prev, x_next = _shift(x, up=False, axis=nd - 2), _shift(x, up=True, axis=nd - 2)
    return _b.add(_b.add(times(d, x), times(dl, x_prev)), times(du, x_next))


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
    # A x = b: A dx = db - dA x.
    dl, d, du, b = primals
    *diag_dots, b_dot = tangents
    ans = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
    if all(type(t) is Zero for t in tangents):
        return ans, Zero(tangent_aval(get_aval(ans)))
    rhs = b_dot
    if not all(type(t) is Zero for t in diag_dots):
        dl_dot, d_dot, du_dot = (instantiate(t) for t in diag_dots)
        rhs = add_tangents(rhs, _b.mul(np.asarray(-1, get_aval(ans).dtype),
                                       _tridiagonal_product(dl_dot, d_dot, du_dot, ans)))
    rhs = instantiate(rhs)
    return ans, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _shift(v, up: bool, axis: int = -1):
    """``v`` moved one place along ``axis`` (``out[i] = v[i + 1]`` if ``up``, else
    ``v[i - 1]``), a zero filling the gap."""
    nd = get_aval(v).ndim
    axis = axis % nd
    m = get_aval(v).shape[axis]
    zero = np.asarray(0, get_aval(v).dtype)
    pads = [(0, 0, 0)] * nd
    if up:
        pads[axis] = (0, 1, 0)
        return _shape.pad(slice_in_dim(v, 1, m, axis=axis), zero, pads)
    pads[axis] = (1, 0, 0)
    return _shape.pad(slice_in_dim(v, 0, m - 1, axis=axis), zero, pads)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
    if is_undefined(dl) or is_undefined(d) or is_undefined(du):
        raise NotImplementedError("tridiagonal_solve is linear in b only")
    if type(ct) is Zero:
        return [None, None, None, Zero(b.aval)]
    # A^T has A's upper diagonal below its diagonal and vice versa (shifted by one).
    dl_t, du_t = _shift(du, up=False), _shift(dl, up=True)
    return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, ct,
                                                       perturb_singular=perturb_singular)]


# ---- batching ----------------------------------------------------------------------------------

def _tridiagonal_solve_batch(trace, vals, dims, *, perturb_singular):
    # Unmapped diagonals: the mapped axis of b joins its columns (one solve with more
    # right-hand sides). Otherwise it becomes a leading batch dimension of all four.
    dl, d, du, b = vals
    if dims[0] is None and dims[1] is None and dims[2] is None:
        nd = get_aval(b).ndim
        b = moveaxis(b, dims[3], nd - 1)  # (..., m, n, B)
        shape = get_aval(b).shape
        flat = _shape.reshape(b, shape[:-2] + (shape[-2] * shape[-1],))
        out = tridiagonal_solve_p.bind(dl, d, du, flat, perturb_singular=perturb_singular)
        return _shape.reshape(out, shape), nd - 1
    size = trace.axis_size
    vals = [bdim_at(v, dim, size, 0) for v, dim in zip(vals, dims)]
    return tridiagonal_solve_p.bind(*vals, perturb_singular=perturb_singular), 0


# ---- registration -----------------------------------------------------------------------------

tridiagonal_solve_p.def_jvp(_tridiagonal_solve_jvp)
tridiagonal_solve_p.def_transpose(_tridiagonal_solve_transpose)
tridiagonal_solve_p.def_batch(_tridiagonal_solve_batch)
