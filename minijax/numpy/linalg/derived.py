"""Functions built on the decompositions: matrix_power, matrix_rank, pinv, lstsq, the
norms and cond, and the products (outer, matmul, tensordot, vecdot, cross, multi_dot,
tensorinv, tensorsolve)."""

from __future__ import annotations

import operator

import numpy as np

from minijax import lax
from minijax.api.custom_derivatives import custom_jvp
from minijax.core import dtypes
from minijax.lax.linalg._common import H as _H, conj as _conj, eye as _eye, matmul as _matmul
from minijax.numpy import _linalg_ops, _reductions as red, _shape as _np_shape, _ufuncs as uf
from minijax.numpy._promote import (broadcast_shapes, broadcast_to_shape, ensure_array,
                                    promote_dtypes, promote_dtypes_inexact)
from minijax.numpy._reductions import _check_arraylike, canonicalize_axis, sum as _np_sum
from minijax.numpy.linalg._common import (_dtype, _full, _ndim, _real, _select, _shape,
                                          promote_inexact_args)
from minijax.numpy.linalg.decompositions import inv, matrix_transpose, solve, svd, svdvals
from minijax.stages.jit import jit


# ---- built on the decompositions ---------------------------------------------------------------

@jit(static_argnames=("n",))
def matrix_power(a, n: int):
    """``a`` raised to the integer power ``n`` (``inv(a)`` powers for ``n < 0``), by
    repeated squaring."""
    a = _check_arraylike("jnp.linalg.matrix_power", a)
    shape = _shape(a)
    if len(shape) < 2:
        raise TypeError(f"{len(shape)}-dimensional array given. Array must be at least "
                        f"two-dimensional")
    if shape[-2] != shape[-1]:
        raise TypeError("Last 2 dimensions of the array must be square")
    try:
        n = operator.index(n)
    except TypeError as err:
        raise TypeError(f"exponent must be an integer, got {n}") from err
    if n == 0:
        return _eye(_dtype(a), shape)
    if n < 0:
        a = inv(a)
        n = -n
    result = z = None
    while n > 0:
        z = a if z is None else _linalg_ops.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else _linalg_ops.matmul(result, z)
    return result


@jit(static_argnames=("hermitian",))
def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):  # noqa: N803
    """Number of singular values above ``rtol * largest`` (default
    ``max(m, n) * eps``) for each matrix of ``M``; ``tol`` is an alias of ``rtol``."""
    M = _check_arraylike("jnp.linalg.matrix_rank", M)
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
        rtol = tol
    M, = promote_dtypes_inexact(M)
    if _ndim(M) < 2:
        return lax.convert_element_type(red.any(lax.ne(M, np.zeros((), _dtype(M)))), np.int32)
    S = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
    sdt = _dtype(S)
    if rtol is None:
        top = lax.reduce_max(S, (_ndim(S) - 1,))
        rtol = lax.mul(top, np.asarray(max(_shape(M)[-2:]) * np.finfo(sdt).eps, sdt))
    rtol = ensure_array(rtol)
    return _np_sum(uf.greater(S, _np_shape.expand_dims(rtol, _ndim(rtol))), axis=-1)


def _pinv_values(a, rtol, hermitian):
    m, n = _shape(a)[-2:]
    dt = _dtype(a)
    if m == 0 or n == 0:
        return _full(_shape(a)[:-2] + (n, m), 0, dt)
    a = _conj(a)
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    sdt = _dtype(s)
    if rtol is None:
        rtol = np.asarray(10.0 * max(m, n) * np.finfo(sdt).eps, sdt)
    # rtol [...] applies to the matrices of the trailing batch dims.
    rtol = lax.convert_element_type(rtol, sdt)
    nd, nr = _ndim(s), _ndim(rtol)
    rtol = lax.broadcast_in_dim(rtol, _shape(s), tuple(range(nd - 1 - nr, nd - 1)))
    last = _ndim(s) - 1
    s0 = lax.broadcast_in_dim(lax.slice_in_dim(s, 0, 1, axis=last), _shape(s),
                              tuple(range(_ndim(s))))
    cutoff = lax.mul(rtol, s0)
    s = _select(lax.gt(s, cutoff), s, _full(_shape(s), np.inf, sdt))
    s_c = lax.convert_element_type(s, dt)
    ut = matrix_transpose(u)  # [..., k, m]
    ut_scaled = lax.div(ut, lax.broadcast_in_dim(s_c, _shape(ut),
                                                 (*range(_ndim(ut) - 2), _ndim(ut) - 2)))
    return _matmul(matrix_transpose(vh), ut_scaled)


def _pinv_jvp(a, a_dot, rtol, hermitian):
    # Golub and Pereyra (1973): dp = -p da p + p p^H da^H (I - a p) + (I - p a) da^H p^H p.
    p = _pinv_values(a, rtol, hermitian)
    if hermitian:
        a = _symmetrize(a)
        a_dot = _symmetrize(a_dot)
    m, n = _shape(a)[-2:]
    mm = _matmul
    if m >= n:
        s = mm(mm(p, _H(p)), _H(a_dot))
        t = mm(mm(_H(a_dot), _H(p)), p)
        p_dot = lax.add(lax.sub(lax.add(lax.neg(mm(mm(p, a_dot), p)), s), mm(mm(s, a), p)),
                        lax.sub(t, mm(mm(p, a), t)))
    else:
        s = mm(p, mm(_H(p), _H(a_dot)))
        t = mm(_H(a_dot), mm(_H(p), p))
        p_dot = lax.add(lax.sub(lax.add(lax.neg(mm(p, mm(a_dot, p))), s), mm(s, mm(a, p))),
                        lax.sub(t, mm(p, mm(a, t))))
    return p, p_dot


def _symmetrize(x):
    return lax.div(lax.add(x, _H(x)), np.asarray(2, _dtype(x)))


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """Moore-Penrose pseudo-inverse of ``[..., m, n]`` (via the SVD): singular values
    at or below ``rtol * largest`` (default ``10 * max(m, n) * eps``) are dropped;
    ``rcond`` is an alias of ``rtol``."""
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: only one of rtol and rcond may be specified.")
        rtol = rcond
    a, = promote_inexact_args("jnp.linalg.pinv", a)
    return _pinv(a, rtol, hermitian=bool(hermitian))


@jit(static_argnames=("hermitian",))
def _pinv(a, rtol, hermitian: bool):
    # rtol (an array or None) and hermitian are not differentiated: the custom_jvp
    # function closes over them.
    @custom_jvp
    def pinv_of(x):
        return _pinv_values(x, rtol, hermitian)

    @pinv_of.defjvp
    def _pinv_of_jvp(primals, tangents):
        return _pinv_jvp(primals[0], tangents[0], rtol, hermitian)

    return pinv_of(a)


def _lstsq(a, b, rcond, *, numpy_resid: bool = False):
    a, b = promote_dtypes_inexact(a, b)
    if _shape(a)[0] != _shape(b)[0]:
        raise ValueError("Leading dimensions of input arrays must match")
    b_orig_ndim = _ndim(b)
    if b_orig_ndim == 1:
        b = lax.expand_dims(b, (1,))
    if _ndim(a) != 2:
        raise TypeError(f"{_ndim(a)}-dimensional array given. Array must be two-dimensional")
    if _ndim(b) != 2:
        raise TypeError(f"{_ndim(b)}-dimensional array given. Array must be one or "
                        f"two-dimensional")
    m, n = _shape(a)
    dt = _dtype(a)
    rdt = _dtype(_real(_full((), 0, dt)))
    if m * n == 0:
        s = _full((0,), 0, rdt)
        rank = _full((), 0, dtypes.default_int())
        x = _full((n, _shape(b)[1]), 0, dt)
    else:
        eps = float(np.finfo(rdt).eps)
        if rcond is None:
            rcond = np.asarray(eps * max(n, m), rdt)
        else:
            rcond = lax.convert_element_type(rcond, rdt) if hasattr(rcond, "aval") else \
                np.asarray(rcond, rdt)
            rcond = _select(lax.lt(rcond, np.asarray(0, rdt)), np.asarray(eps, rdt), rcond) \
                if hasattr(rcond, "aval") else (np.asarray(eps, rdt) if rcond < 0 else rcond)
        u, s, vt = svd(a, full_matrices=False)
        k = _shape(s)[0]
        s0 = lax.broadcast_in_dim(lax.slice(s, (0,), (1,)), (k,), (0,))
        mask = lax.bitwise_and(lax.gt(s, _full((k,), 0, rdt)),
                               lax.ge(s, lax.mul(lax.broadcast_in_dim(rcond, (k,), ()), s0)))
        rank = _np_sum(mask)
        safe_s = lax.convert_element_type(_select(mask, s, _full((k,), 1, rdt)), dt)
        s_inv = _select(mask, lax.div(_full((k,), 1, dt), safe_s), _full((k,), 0, dt))
        utb = _matmul(_H(u), b)
        x = _matmul(_H(vt), lax.mul(lax.broadcast_in_dim(s_inv, _shape(utb), (0,)), utb))
    if numpy_resid and (int(rank) < n or m <= n):
        resid = _full((0,), 0, rdt)
    else:
        r = lax.sub(b, _matmul(a, x))
        resid = lax.reduce_sum(_real(lax.mul(r, _conj(r))), (0,))
    if b_orig_ndim == 1:
        x = lax.reshape(x, (_shape(x)[0],))
    return x, resid, rank, s


_jit_lstsq = jit(_lstsq)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least-squares solution ``x`` of ``a @ x = b`` via the SVD of ``a`` ``[m, n]``.

    Returns ``(x, residues, rank, s)``; residues are always the squared norms of the
    columns of ``b - a @ x`` unless ``numpy_resid`` (then empty where NumPy's are).
    """
    a = _check_arraylike("jnp.linalg.lstsq", a)
    b = _check_arraylike("jnp.linalg.lstsq", b)
    if numpy_resid:
        return _lstsq(a, b, rcond, numpy_resid=True)
    return _jit_lstsq(a, b, rcond)


# ---- norms and condition numbers ----------------------------------------------------------------

def _canon_axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        return tuple(canonicalize_axis(a, ndim) for a in axis)
    return (canonicalize_axis(axis, ndim),)


def _abs_sum_sq(x, axis, keepdims):
    return _np_sum(_real(lax.mul(x, _conj(x))), axis=axis, keepdims=keepdims)


@jit(static_argnames=("ord", "axis", "keepdims"))
def norm(x, ord=None, axis=None, keepdims: bool = False):  # noqa: A002 (numpy's name)
    """Vector norm (one axis) or matrix norm (two axes) of ``x``.

    ``ord`` for vectors: None/2, inf, -inf, 0, 1 or any number; for matrices: None or
    'fro', 'nuc', 1, -1, 2, -2, inf, -inf. With ``axis=None`` and ``ord=None`` the
    2-norm of the flattened array.
    """
    x, = promote_inexact_args("jnp.linalg.norm", x)
    ndim = _ndim(x)
    if axis is None:
        if ord is None:
            return uf.sqrt(_abs_sum_sq(x, None, keepdims))
        axis = tuple(range(ndim))
    else:
        axis = _canon_axes(axis, ndim)
    if len(axis) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
    if len(axis) != 2:
        raise ValueError(f"Improper number of axes for norm: axis={axis}. Pass one axis to "
                         f"compute a vector-norm, or two axes to compute a matrix-norm.")
    row_axis, col_axis = axis
    if ord is None or ord in ("f", "fro"):
        return uf.sqrt(_abs_sum_sq(x, axis, keepdims))
    if isinstance(ord, str) and ord != "nuc":
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    if ord in (1, -1):
        if not keepdims and col_axis > row_axis:
            col_axis -= 1
        sums = red.sum(lax.abs(x), axis=row_axis, keepdims=keepdims)
        return red.max(sums, axis=col_axis, keepdims=keepdims, initial=0) if ord == 1 else \
            red.min(sums, axis=col_axis, keepdims=keepdims)
    if ord in (np.inf, -np.inf):
        if not keepdims and row_axis > col_axis:
            row_axis -= 1
        sums = red.sum(lax.abs(x), axis=col_axis, keepdims=keepdims)
        return red.max(sums, axis=row_axis, keepdims=keepdims, initial=0) if ord > 0 else \
            red.min(sums, axis=row_axis, keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        y = _np_shape.moveaxis(x, axis, (-2, -1))
        s = svd(y, compute_uv=False)
        if ord == 2:
            out = red.max(s, axis=-1, initial=0)
        elif ord == -2:
            out = red.min(s, axis=-1)
        else:
            out = red.sum(s, axis=-1)
        return _np_shape.expand_dims(out, axis) if keepdims else out
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):  # noqa: A002
    """Vector ``ord``-norm of ``x`` over ``axis`` (all axes by default)."""
    x = _check_arraylike("jnp.linalg.vector_norm", x)
    if ord is None or (not isinstance(ord, str) and ord == 2):
        return uf.sqrt(_abs_sum_sq(x, axis, keepdims))
    if isinstance(ord, str):
        msg = f"Invalid order '{ord}' for vector norm."
        if ord == "inf":
            msg += "Use 'jax.numpy.inf' instead."
        if ord == "-inf":
            msg += "Use '-jax.numpy.inf' instead."
        raise ValueError(msg)
    if ord == np.inf:
        return red.max(lax.abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return red.min(lax.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        x, = promote_dtypes_inexact(x)
        rdt = np.finfo(_dtype(x)).dtype
        return red.sum(lax.ne(x, np.zeros((), _dtype(x))), dtype=rdt, axis=axis,
                       keepdims=keepdims)
    if ord == 1:
        return red.sum(lax.abs(x), axis=axis, keepdims=keepdims)
    abs_x = lax.abs(x)
    dt = _dtype(abs_x)
    if not dtypes.is_inexact(dt):
        abs_x, = promote_dtypes_inexact(abs_x)
        dt = _dtype(abs_x)
    out = red.sum(uf.power(abs_x, np.asarray(ord, dt)), axis=axis, keepdims=keepdims)
    return uf.power(out, np.asarray(1.0 / ord, dt))


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):  # noqa: A002
    """Matrix norm over the last two axes (see ``norm``)."""
    x = _check_arraylike("jnp.linalg.matrix_norm", x)
    return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


@jit(static_argnames=("p",))
def cond(x, p=None):
    """Condition number of ``[..., m, n]`` in the ``p`` norm (default 2: the ratio of
    the extreme singular values); ``inf`` for singular matrices."""
    x = _check_arraylike("cond", x)
    shape = _shape(x)
    if len(shape) < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got "
                         f"arr.shape={shape}")
    if shape[-1] == 0 or shape[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got "
                         f"arr.shape={shape}")
    if p is None or p == 2:
        s = svdvals(x)
        last = _ndim(s) - 1
        return lax.div(lax.index_in_dim(s, 0, last, keepdims=False),
                       lax.index_in_dim(s, _shape(s)[-1] - 1, last, keepdims=False))
    if p == -2:
        s = svdvals(x)
        last = _ndim(s) - 1
        r = lax.div(lax.index_in_dim(s, _shape(s)[-1] - 1, last, keepdims=False),
                    lax.index_in_dim(s, 0, last, keepdims=False))
    else:
        if shape[-2] != shape[-1]:
            raise ValueError(f"jnp.linalg.cond: for p={p}, array must be square; got "
                             f"arr.shape={shape}")
        r = lax.mul(norm(x, ord=p, axis=(-2, -1)), norm(inv(x), ord=p, axis=(-2, -1)))
    # NaN (a singular matrix) reads as infinity where x itself has no NaN.
    fix = uf.logical_and(uf.isnan(r), uf.logical_not(red.any(uf.isnan(x), axis=(-2, -1))))
    return uf.where_(fix, np.inf, r)


# ---- products and tensor functions ------------------------------------------------------------

def outer(x1, x2, /):
    """Outer product of two vectors."""
    x1 = _check_arraylike("jnp.linalg.outer", x1)
    x2 = _check_arraylike("jnp.linalg.outer", x2)
    if _ndim(x1) != 1 or _ndim(x2) != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={_ndim(x1)} x2.ndim={_ndim(x2)}")
    return _linalg_ops.outer(x1, x2)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
    """Matrix product (``jnp.matmul``)."""
    x1 = _check_arraylike("jnp.linalg.matmul", x1)
    x2 = _check_arraylike("jnp.linalg.matmul", x2)
    return _linalg_ops.matmul(x1, x2, precision=precision,
                      preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None,
              out_sharding=None):
    """``jnp.tensordot`` with the array API's keyword-only ``axes``."""
    del out_sharding  # one device
    x1 = _check_arraylike("jnp.linalg.tensordot", x1)
    x2 = _check_arraylike("jnp.linalg.tensordot", x2)
    return _linalg_ops.tensordot(x1, x2, axes, precision=precision,
                         preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """Conjugated vector dot product of ``x1`` and ``x2`` along ``axis`` (other axes
    broadcast): ``sum(conj(x1) * x2, axis)``."""
    x1 = _check_arraylike("jnp.linalg.vecdot", x1)
    x2 = _check_arraylike("jnp.linalg.vecdot", x2)
    n1, n2 = _ndim(x1), _ndim(x2)
    ax1, ax2 = canonicalize_axis(axis, n1), canonicalize_axis(axis, n2)
    if _shape(x1)[ax1] != _shape(x2)[ax2]:
        raise ValueError(f"axes must match; got shapes {_shape(x1)} and {_shape(x2)} with "
                         f"axis={axis}")
    dtype, weak = _linalg_ops._result_dtype(preferred_element_type, x1, x2)
    x1 = _np_shape.moveaxis(x1, ax1, -1)
    x2 = _np_shape.moveaxis(x2, ax2, -1)
    batch = broadcast_shapes(_shape(x1)[:-1], _shape(x2)[:-1])
    k = _shape(x1)[-1]
    x1 = broadcast_to_shape(_conj(x1), batch + (k,))
    x2 = broadcast_to_shape(x2, batch + (k,))
    nb = len(batch)
    dims = (((nb,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    return _linalg_ops._dot_general(x1, x2, dims, precision, dtype, weak)


def cross(x1, x2, /, *, axis: int = -1):
    """Cross product of (stacks of) 3-vectors along ``axis``."""
    x1 = _check_arraylike("jnp.linalg.outer", x1)
    x2 = _check_arraylike("jnp.linalg.outer", x2)
    s1, s2 = _shape(x1), _shape(x2)
    a1, a2 = canonicalize_axis(axis, len(s1)), canonicalize_axis(axis, len(s2))
    if s1[a1] != 3 or s2[a2] != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but "
                         f"they have x1.shape[axis]={s1[a1]} and x2.shape[axis]={s2[a2]}")
    x1, x2 = promote_dtypes(x1, x2)
    a = _np_shape.moveaxis(x1, a1, -1)
    b = _np_shape.moveaxis(x2, a2, -1)
    batch = broadcast_shapes(_shape(a)[:-1], _shape(b)[:-1])
    a = broadcast_to_shape(a, batch + (3,))
    b = broadcast_to_shape(b, batch + (3,))
    nb = len(batch)

    def comp(v, i):
        return lax.reshape(lax.slice_in_dim(v, i, i + 1, axis=nb), batch)

    a0, a1_, a2_ = (comp(a, i) for i in range(3))
    b0, b1, b2 = (comp(b, i) for i in range(3))
    out = [lax.sub(lax.mul(a1_, b2), lax.mul(a2_, b1)),
           lax.sub(lax.mul(a2_, b0), lax.mul(a0, b2)),
           lax.sub(lax.mul(a0, b1), lax.mul(a1_, b0))]
    out = lax.concatenate([lax.reshape(c, batch + (1,)) for c in out], nb)
    return _np_shape.moveaxis(out, -1, axis)


def multi_dot(arrays, *, precision=None):
    """Product of a chain of matrices, multiplied in the cheapest order (the first and
    last may be vectors)."""
    arrs = [_check_arraylike("jnp.linalg.multi_dot", a) for a in arrays]
    if len(arrs) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)}")
    if not (_ndim(arrs[0]) in (1, 2) and _ndim(arrs[-1]) in (1, 2)
            and all(_ndim(a) == 2 for a in arrs[1:-1])):
        raise ValueError(f"multi_dot: input arrays must all be two-dimensional, except for "
                         f"the first and last array which may be 1 or 2 dimensional. Got "
                         f"array shapes {[_shape(a) for a in arrs]}")
    if any(_shape(a)[-1] != _shape(b)[0] for a, b in zip(arrs[:-1], arrs[1:])):
        raise ValueError(f"multi_dot: last dimension of each array must match first "
                         f"dimension of following array. Got array shapes "
                         f"{[_shape(a) for a in arrs]}")
    first_vec, last_vec = _ndim(arrs[0]) == 1, _ndim(arrs[-1]) == 1
    if first_vec:
        arrs[0] = lax.reshape(arrs[0], (1, _shape(arrs[0])[0]))
    if last_vec:
        arrs[-1] = lax.reshape(arrs[-1], (_shape(arrs[-1])[0], 1))
    dims = [_shape(a)[0] for a in arrs] + [_shape(arrs[-1])[1]]
    # Matrix-chain order: cost[i][j] = cheapest product of arrs[i..j].
    n = len(arrs)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i, j):
        if i == j:
            return arrs[i]
        k = split[i][j]
        return _linalg_ops.matmul(product(i, k), product(k + 1, j), precision=precision)

    out = product(0, n - 1)
    if first_vec and last_vec:
        return lax.reshape(out, ())
    if first_vec:
        return lax.reshape(out, (_shape(out)[1],))
    if last_vec:
        return lax.reshape(out, (_shape(out)[0],))
    return out


def tensorinv(a, ind: int = 2):
    """Inverse of ``a`` seen as a linear map from its first ``ind`` axes to the rest."""
    a = _check_arraylike("tensorinv", a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    shape = _shape(a)
    contracting, batch = shape[:ind], shape[ind:]
    flat = (int(np.prod(contracting)), int(np.prod(batch)))
    if flat[0] != flat[1]:
        raise ValueError(f"tensorinv is only possible when the product of the first `ind` "
                         f"dimensions equals that of the remaining dimensions. got "
                         f"arr.shape={shape} with ind={ind}.")
    return lax.reshape(inv(lax.reshape(a, flat)), batch + contracting)


def tensorsolve(a, b, axes: tuple[int, ...] | None = None):
    """Solve ``tensordot(a, x, x.ndim) = b`` for ``x``."""
    a = _check_arraylike("tensorsolve", a)
    b = _check_arraylike("tensorsolve", b)
    if axes is not None:
        a = _np_shape.moveaxis(a, axes, len(axes) * (_ndim(a) - 1,))
    b_ndim = _ndim(b)
    out_shape = _shape(a)[b_ndim:]
    if _shape(a)[:b_ndim] != _shape(b):
        raise ValueError(f"After moving axes to end, leading shape of a must match shape of "
                         f"b. got a.shape={_shape(a)}, b.shape={_shape(b)}")
    size_b = int(np.prod(_shape(b)))
    if size_b != int(np.prod(out_shape)):
        raise ValueError(f"Input arrays must have prod(a.shape[:b.ndim]) == "
                         f"prod(a.shape[b.ndim:]); got a.shape={_shape(a)}, b.ndim={b_ndim}.")
    a = lax.reshape(a, (size_b, int(np.prod(out_shape))))
    return lax.reshape(solve(a, lax.reshape(b, (size_b,))), out_shape)
