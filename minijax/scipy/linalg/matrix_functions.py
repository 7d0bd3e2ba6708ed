"""Matrix functions built from the decompositions: expm (and expm_frechet), sqrtm,
funm, rsf2csf, solve_sylvester."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from minijax import lax, numpy as jnp
from minijax.api.ad import jvp
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.numpy._promote import promote_dtypes_inexact
from minijax.numpy._reductions import _check_arraylike
from minijax.numpy.linalg._common import promote_inexact_args
from minijax.scipy.linalg._common import _complex_dtype, _mH, _mm, _shape
from minijax.scipy.linalg.decompositions import _schur, _tri_solve, schur, solve_triangular
from minijax.stages.jit import jit


# ---- matrix functions -------------------------------------------------------------------------

# Pade approximants of exp of degrees 3..13 (Higham 2005): coefficients b_0..b_m.
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}
# Largest 1-norms for which each degree is accurate enough, and the norm that scaling
# brings the matrix under (Higham 2005, Table 2.3; single precision from the same
# analysis at unit roundoff 2^-24).
_PADE_LIMITS = {
    "double": ((3, 5, 7, 9, 13),
               (1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1,
                2.097847961257068e0), 5.371920351148152),
    "single": ((3, 5, 7), (4.258730016922831e-1, 1.880152677804762e0), 3.925724783138660),
}


def _pade(m: int, a):
    """``(u, v)``: the odd and even parts of the degree-``m`` Pade numerator of ``exp(a)``;
    numerator ``v + u``, denominator ``v - u``."""
    b = _PADE[m]
    ident = jnp.eye(_shape(a)[0], dtype=a.dtype)
    a2 = _mm(a, a)
    if m == 13:
        a4 = _mm(a2, a2)
        a6 = _mm(a4, a2)
        u = _mm(a, _mm(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
                + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
        v = (_mm(a6, b[12] * a6 + b[10] * a4 + b[8] * a2)
             + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident)
        return u, v
    powers = [ident, a2]
    while len(powers) <= m // 2:
        powers.append(_mm(powers[-1], a2))
    odd = sum(b[2 * k + 1] * p for k, p in enumerate(powers))
    even = sum(b[2 * k] * p for k, p in enumerate(powers))
    return _mm(a, odd), even


def _expm_2d(a, upper_triangular: bool, max_squarings: int):
    kind = "double" if a.dtype in (np.float64, np.complex128) else "single"
    degrees, limits, maxnorm = _PADE_LIMITS[kind]
    norm1 = jnp.linalg.norm(a, 1)
    n_squarings = jnp.maximum(0, jnp.floor(jnp.log2(norm1 / maxnorm)))
    a = a / (2 ** n_squarings).astype(a.dtype)
    idx = jnp.digitize(norm1, jnp.array(limits, dtype=norm1.dtype))
    u, v = lax.switch(idx, [partial(_pade, m) for m in degrees], a)
    p, q = v + u, v - u
    r = (solve_triangular(q, p) if upper_triangular else jnp.linalg.solve(q, p))

    def square(carry, i):
        return lax.cond(i < n_squarings, lambda x: _mm(x, x), lambda x: x, carry), None

    r, _ = lax.scan(square, r, jnp.arange(max_squarings, dtype=n_squarings.dtype))
    return jnp.where(n_squarings > max_squarings, jnp.full_like(r, np.nan), r)


@jit(static_argnames=("upper_triangular", "max_squarings"))
def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """Matrix exponential of square matrices ``[..., n, n]`` by scaling and squaring with
    Pade approximants (degrees up to 13 in double precision, 7 in single). NaN when more
    than ``max_squarings`` squarings would be needed. ``upper_triangular`` solves the
    Pade system by back substitution."""
    A, = promote_inexact_args("expm", A)
    if get_aval(A).ndim < 2 or _shape(A)[-1] != _shape(A)[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={_shape(A)}.")
    fun = partial(_expm_2d, upper_triangular=upper_triangular, max_squarings=max_squarings)
    return jnp.vectorize(fun, signature="(n,n)->(n,n)")(A)


@jit(static_argnames=("method", "compute_expm"))
def expm_frechet(A, E, *, method: str | None = None, compute_expm: bool = True):
    """Frechet derivative of ``expm`` at ``A`` in direction ``E`` (forward-mode
    derivative): ``(expm(A), L(A, E))``, or ``L(A, E)`` alone without ``compute_expm``."""
    del method
    A, E = jnp.asarray(A), jnp.asarray(E)
    if A.ndim < 2 or _shape(A)[-2] != _shape(A)[-1]:
        raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={_shape(A)}")
    if E.ndim < 2 or _shape(E)[-2] != _shape(E)[-1]:
        raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={_shape(E)}")
    if _shape(A) != _shape(E):
        raise ValueError(f"expected A and E to be the same shape, got A.shape={_shape(A)} "
                         f"E.shape={_shape(E)}")
    A, E = promote_dtypes_inexact(A, E)
    value, deriv = jvp(partial(expm, upper_triangular=False, max_squarings=16), (A,), (E,))
    return (value, deriv) if compute_expm else deriv


def _superdiagonal_mask(n: int, d):
    idx = jnp.arange(n)
    return (idx[None, :] - idx[:, None]) == d


def _sqrtm_triu(t):
    """Square root ``u`` of upper-triangular ``t`` (``u @ u = t``) by Bjorck and
    Hammarling's recurrence, column by column and upwards within a column:
    ``u[i, j] = (t[i, j] - sum_{i<k<j} u[i, k] u[k, j]) / (u[i, i] + u[j, j])``.

    Written with scalar reads and writes only, so that XLA:CPU compiles the whole loop
    nest into one small kernel (its loops over whole-matrix operations would each cost
    a dispatch per step)."""
    n = _shape(t)[0]
    diag = jnp.sqrt(jnp.diagonal(t))
    zero = jnp.zeros((), t.dtype)

    def at(x, i, j):
        return lax.dynamic_slice(x, (i, j), (1, 1))[0, 0]

    def entry(j, i, u):
        s = lax.fori_loop(i + 1, j, lambda k, acc: acc + at(u, i, k) * at(u, k, j), zero)
        tij = at(t, i, j)
        value = jnp.where(tij == s, zero, (tij - s) / (diag[i] + diag[j]))
        return lax.dynamic_update_slice(u, value.reshape(1, 1), (i, j))

    def column(j, u):
        return lax.fori_loop(0, j, lambda step, u: entry(j, j - 1 - step, u), u)

    return lax.fori_loop(0, n, column, jnp.diag(diag))


@jit
def _sqrtm(a):
    t, z = _schur(a, "complex")
    return _mm(_mm(z, _sqrtm_triu(t)), _mH(z))


def sqrtm(A, blocksize: int = 1):
    """Principal square root of a square matrix (complex result), from its complex Schur
    form."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    _check_arraylike("sqrtm", A)
    A = jnp.asarray(A)
    if A.ndim != 2 or _shape(A)[0] != _shape(A)[1]:
        raise ValueError(f"sqrtm: expected a square matrix, got shape {_shape(A)}")
    return _sqrtm(A)


def _rsf2csf_2d(t, z):
    t, z = (x.astype(_complex_dtype(jnp.result_type(t, z))) for x in (t, z))
    n = _shape(t)[0]
    if n == 1:
        return t, z
    eps = dtypes.finfo(t.dtype).eps
    idx = jnp.arange(n)

    def rotate(m, t, z):
        # A Givens rotation in the plane (m-1, m) that zeroes t[m, m-1].
        block = lax.dynamic_slice(t, (m - 1, m - 1), (2, 2))
        mu = jnp.linalg.eigvals(block) - t[m, m]
        r = jnp.sqrt(jnp.abs(mu[0]) ** 2 + jnp.abs(t[m, m - 1]) ** 2).astype(t.dtype)
        c, s = mu[0] / r, t[m, m - 1] / r
        g = jnp.eye(n, dtype=t.dtype)
        g = jnp.where((idx[:, None] == m - 1) & (idx[None, :] == m - 1), jnp.conj(c), g)
        g = jnp.where((idx[:, None] == m - 1) & (idx[None, :] == m), s, g)
        g = jnp.where((idx[:, None] == m) & (idx[None, :] == m - 1), -s, g)
        g = jnp.where((idx[:, None] == m) & (idx[None, :] == m), c, g)
        return _mm(_mm(g, t), _mH(g)), _mm(z, _mH(g))

    def step(i, tz):
        t, z = tz
        m = n - i
        big = jnp.abs(t[m, m - 1]) > eps * (jnp.abs(t[m - 1, m - 1]) + jnp.abs(t[m, m]))
        t, z = lax.cond(big, rotate, lambda m, t, z: (t, z), m, t, z)
        return t.at[m, m - 1].set(0), z

    return lax.fori_loop(1, n, step, (t, z))


@jit
def _rsf2csf(t, z):
    return jnp.vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(t, z)


def rsf2csf(T, Z, check_finite: bool = True):
    """Convert a real Schur form ``(T, Z)`` to the complex one: upper-triangular ``T``
    with the same ``Z @ T @ Z^H``."""
    del check_finite
    _check_arraylike("rsf2csf", T)
    _check_arraylike("rsf2csf", Z)
    T, Z = jnp.asarray(T), jnp.asarray(Z)
    if T.ndim < 2 or _shape(T)[-1] != _shape(T)[-2]:
        raise ValueError("Input 'T' must be square.")
    if Z.ndim < 2 or _shape(Z)[-1] != _shape(Z)[-2]:
        raise ValueError("Input 'Z' must be square.")
    if _shape(T)[-1] != _shape(Z)[-1]:
        raise ValueError(f"Input array shapes must match: Z: {_shape(Z)} vs. T: {_shape(T)}")
    return _rsf2csf(T, Z)


def _parlett(f, t):
    """Parlett's recurrence for ``f(t)`` of upper-triangular ``t`` given its diagonal in
    ``f``, one superdiagonal at a time: with diagonals below ``d`` filled,
    ``(t @ f - f @ t)[i, i+d]`` is exactly the recurrence's numerator. Also returns the
    smallest ``|t[j, j] - t[i, i]|`` divided by."""
    n = _shape(t)[0]
    diag = jnp.diagonal(t)
    den = diag[None, :] - diag[:, None]
    real = dtypes.finfo(t.dtype).dtype

    def body(d, carry):
        f, minden = carry
        mask = _superdiagonal_mask(n, d)
        num = _mm(t, f) - _mm(f, t)
        safe = jnp.where(den != 0, den, jnp.ones_like(den))
        f = f + jnp.where(mask, jnp.where(den != 0, num / safe, num), 0)
        minden = jnp.minimum(minden, jnp.min(jnp.where(mask, jnp.abs(den), np.inf)))
        return f, minden

    return lax.fori_loop(1, n, body, (f, jnp.abs(diag[0]).astype(real)))


def funm(A, func: Callable, disp: bool = True):
    """``func`` applied to square matrix ``A`` (a function of a matrix), via its complex
    Schur form and Parlett's recurrence; ``func`` maps an array of eigenvalues
    elementwise. ``disp=False`` also returns an estimate of the relative error."""
    _check_arraylike("funm", A)
    A = jnp.asarray(A)
    if A.ndim != 2 or _shape(A)[0] != _shape(A)[1]:
        raise ValueError("expected square array_like input")
    t, z = schur(A)
    t, z = rsf2csf(t, z)
    f = jnp.diag(func(jnp.diagonal(t))).astype(t.dtype)
    f, minden = _parlett(f, t)
    f = _mm(_mm(z, f), _mH(z))
    if disp:
        return f
    tol = float(dtypes.finfo(np.float32 if f.dtype == np.complex64 else np.float64).eps)
    minden = jnp.where(minden == 0, tol, minden)
    err = jnp.minimum(1, jnp.maximum(tol, tol / minden * jnp.linalg.norm(jnp.triu(t, 1), 1)))
    return f, jnp.where(jnp.any(jnp.isinf(f)), np.inf, err)


def _sylvester_triangular(r, s, f):
    """Solve ``r y + y s = f`` for upper-triangular ``r`` ``[m, m]`` and ``s`` ``[n, n]``,
    column by column: ``(r + s[k, k] I) y_k = f_k - sum_{j<k} y_j s[j, k]``."""
    m, n = _shape(f)
    ident = jnp.eye(m, dtype=r.dtype)

    def body(k, y):
        rhs = f[:, k] - _mm(y, s[:, k])  # columns >= k of y are still zero
        col = _tri_solve(r + s[k, k] * ident, rhs[:, None], lower=False, transpose_a=False,
                         conjugate_a=False)
        return lax.dynamic_update_slice(y, col, (0, k))

    return lax.fori_loop(0, n, body, jnp.zeros_like(f))


def _solve_sylvester_2d(a, b, c, method: str, tol: float):
    ctype = _complex_dtype(c.dtype)
    if method == "schur":
        r, u = _schur(a, "complex")
        s, v = _schur(b, "complex")
        f = _mm(_mm(_mH(u), c.astype(ctype)), v)
        x = _mm(_mm(u, _sylvester_triangular(r, s, f)), _mH(v))
    else:
        wa, ua = jnp.linalg.eig(a)
        wb, ub = jnp.linalg.eig(b)
        f = jnp.linalg.solve(ua, _mm(c.astype(wa.dtype), ub))
        x = _mm(_mm(ua, f / (wa[:, None] + wb[None, :])), jnp.linalg.inv(ub))
    if not dtypes.is_complex(c.dtype):
        x = jnp.real(x)
    close = jnp.abs(jnp.linalg.eigvals(a)[:, None] + jnp.linalg.eigvals(b)[None, :]) < tol
    return jnp.where(jnp.any(close), jnp.full_like(x, np.nan), x)


@jit(static_argnames=("method",))
def _solve_sylvester(A, B, C, method: str, tol):
    fun = partial(_solve_sylvester_2d, method=method, tol=tol)
    return jnp.vectorize(fun, signature="(m,m),(n,n),(m,n)->(m,n)")(A, B, C)


def solve_sylvester(A, B, C, *, method: str = "schur", tol: float = 1e-8):
    """Solve the Sylvester equation ``A X + X B = C`` for ``A`` ``[..., m, m]``, ``B``
    ``[..., n, n]``, ``C`` ``[..., m, n]``: Bartels-Stewart on the complex Schur forms
    (``method='schur'``) or by eigendecomposition (``'eigen'``). NaN when an eigenvalue
    of ``A`` plus one of ``B`` is within ``tol`` of zero."""
    A, B, C = promote_inexact_args("solve_sylvester", A, B, C)
    m, n = _shape(C)[-2:]
    if _shape(A)[-2:] != (m, m) or _shape(B)[-2:] != (n, n):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {_shape(A)}\n"
                         f"B: {_shape(B)}\nC: {_shape(C)}")
    if method not in ("schur", "eigen"):
        raise ValueError(f"Unrecognized method {method}. The two valid methods are either "
                         f"\"schur\" or \"eigen\".")
    return _solve_sylvester(A, B, C, method, tol)
