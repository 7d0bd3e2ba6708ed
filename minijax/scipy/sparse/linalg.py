"""minijax.scipy.sparse.linalg: matrix-free iterative solvers, mirroring
``jax.scipy.sparse.linalg``.

``cg``, ``bicgstab`` and ``gmres`` solve ``A(x) = b`` where ``A`` is a matrix or a linear
function, and ``b``/``x`` may be any pytree of arrays. They run as ``lax.while_loop``s
under ``jit`` and ``vmap``. Reverse-mode derivatives are implicit (as jax's
``custom_linear_solve``): the cotangent of ``b`` is one solve with the transposed
operator, and values the operator closes over (a matrix, parameters) receive
``-(dA/dθ x)^T b̄``. The second result, ``info``, is ``None`` for ``cg``/``bicgstab``
and ``0`` (``-1`` if the result is NaN) for ``gmres``, as in jax.

Example::

    >>> import minijax.numpy as jnp
    >>> from minijax.scipy.sparse.linalg import cg
    >>> x, _ = cg(jnp.array([[4., 1.], [1., 3.]]), jnp.array([1., 2.]))
    >>> x
    Array([0.09090909, 0.6363636 ], dtype=float32)
"""

from __future__ import annotations

import operator
from functools import partial

import numpy as np

from minijax.api.ad import vjp
from minijax.api.custom_derivatives import closure_convert, custom_vjp
from minijax import lax
from minijax import numpy as jnp
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax._pytree import tree_leaves, tree_map, tree_structure

__all__ = ["bicgstab", "cg", "gmres"]

_HIGHEST = lax.Precision.HIGHEST


# ---- pytree vector arithmetic ---------------------------------------------------------------

def _add(x, y):
    return tree_map(operator.add, x, y)


def _sub(x, y):
    return tree_map(operator.sub, x, y)


def _scale(a, x):
    return tree_map(lambda v: a * v, x)


def _vdot(x, y):
    """``sum(conj(x) * y)`` over all leaves."""
    return sum(jnp.vdot(a, b, precision=_HIGHEST) for a, b in zip(tree_leaves(x),
                                                                 tree_leaves(y)))


def _vdot_real(x, y):
    """``Re(sum(conj(x) * y))``."""
    return jnp.real(_vdot(x, y))


def _norm(x):
    return jnp.sqrt(_vdot_real(x, x))


def _dtype(tree) -> np.dtype:
    return jnp.result_type(*tree_leaves(tree))


def _as_operator(f):
    """A matvec function from a function, a square matrix or anything with ``@``."""
    if callable(f) and not hasattr(f, "shape"):
        return f
    if hasattr(f, "shape") or isinstance(f, np.ndarray):
        shape = np.shape(f) if isinstance(f, np.ndarray) else get_aval(f).shape
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(f"linear operator must be a square matrix, but has shape: {shape}")
        return partial(jnp.dot, f, precision=_HIGHEST)
    if hasattr(f, "__matmul__"):
        return partial(operator.matmul, f)
    raise TypeError(f"linear operator must be either a function or ndarray: {f}")


def _identity(x):
    return x


# ---- implicit differentiation -----------------------------------------------------------------

def _linear_solve(matvec, b, solve, symmetric: bool):
    """``solve(matvec, b)`` with implicit reverse-mode derivatives: ``b̄ = A^-T x̄`` (a
    second solve, with ``A^T`` from the transpose of ``matvec`` unless ``symmetric``) and,
    for the values ``matvec`` closes over, ``θ̄ = -(d(A_θ x)/dθ)^T b̄``."""
    converted, consts = closure_convert(matvec, b)

    def operator_of(cs):
        return lambda v: converted(v, *cs)

    def transposed(cs, x):
        a = operator_of(cs)
        if symmetric:
            return a
        return lambda v: vjp(a, x)[1](v)[0]

    @custom_vjp
    def run(cs, b):
        return solve(operator_of(cs), b)

    def run_fwd(cs, b):
        x = solve(operator_of(cs), b)
        return x, (cs, x)

    def run_bwd(res, x_bar):
        cs, x = res
        b_bar = solve(transposed(cs, x), x_bar)
        _, pull = vjp(lambda *c: converted(x, *c), *cs)
        cs_bar = tree_map(lambda v: -v, pull(b_bar))
        return list(cs_bar), b_bar

    run.defvjp(run_fwd, run_bwd)
    return run(list(consts), b)


def _prepare(A, b, x0, M, maxiter):
    if x0 is None:
        x0 = tree_map(jnp.zeros_like, b)
    b = tree_map(jnp.asarray, b)
    x0 = tree_map(jnp.asarray, x0)
    if tree_structure(x0) != tree_structure(b):
        raise ValueError(f"x0 and b must have matching tree structure: {tree_structure(x0)} vs "
                         f"{tree_structure(b)}")
    shapes_x0 = [np.shape(v) for v in tree_leaves(x0)]
    shapes_b = [np.shape(v) for v in tree_leaves(b)]
    if shapes_x0 != shapes_b:
        raise ValueError(f"arrays in x0 and b must have matching shapes: {shapes_x0} vs "
                         f"{shapes_b}")
    size = sum(int(np.prod(np.shape(v))) for v in tree_leaves(b))
    if maxiter is None:
        maxiter = 10 * size
    return _as_operator(A), b, x0, (_identity if M is None else _as_operator(M)), maxiter, size


# ---- conjugate gradients -------------------------------------------------------------------------

def _cg(A, b, *, x0, tol, atol, maxiter, M):
    dtype = _dtype(b)
    atol2 = jnp.maximum(tol ** 2 * _vdot_real(b, b), atol ** 2)
    r0 = _sub(b, A(x0))
    z0 = M(r0)
    gamma0 = _vdot_real(r0, z0).astype(dtype)

    def cond(state):
        _, r, gamma, _, k = state
        rs = jnp.real(gamma) if M is _identity else _vdot_real(r, r)
        return (rs > atol2) & (k < maxiter)

    def body(state):
        x, r, gamma, p, k = state
        ap = A(p)
        alpha = gamma / _vdot_real(p, ap).astype(dtype)
        x = _add(x, _scale(alpha, p))
        r = _sub(r, _scale(alpha, ap))
        z = M(r)
        gamma_new = _vdot_real(r, z).astype(dtype)
        p = _add(z, _scale(gamma_new / gamma, p))
        return x, r, gamma_new, p, k + 1

    return lax.while_loop(cond, body, (x0, r0, gamma0, z0, 0))[0]


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Conjugate gradients for ``A(x) = b`` with ``A`` Hermitian positive definite.
    Stops when ``|r| <= max(tol * |b|, atol)`` or after ``maxiter`` (default ``10 *
    size``) steps; ``M`` is a preconditioner approximating ``A^-1``. Returns ``(x, None)``."""
    A, b, x0, M, maxiter, _ = _prepare(A, b, x0, M, maxiter)
    solve = partial(_cg, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    symmetric = not any(dtypes.is_complex(get_aval(v).dtype) for v in tree_leaves(b))
    return _linear_solve(A, b, solve, symmetric), None


# ---- BiCGSTAB ------------------------------------------------------------------------------------

def _bicgstab(A, b, *, x0, tol, atol, maxiter, M):
    atol2 = jnp.maximum(tol ** 2 * _vdot_real(b, b), atol ** 2)
    r0 = _sub(b, A(x0))
    one = jnp.ones((), _dtype(b))

    def cond(state):
        _, r, *_, k = state
        return (_vdot_real(r, r) > atol2) & (k < maxiter) & (k >= 0)

    def body(state):
        x, r, rhat, alpha, omega, rho, p, q, k = state
        rho_new = _vdot(rhat, r)
        beta = rho_new / rho * alpha / omega
        p = _add(r, _scale(beta, _sub(p, _scale(omega, q))))
        phat = M(p)
        q = A(phat)
        alpha = rho_new / _vdot(rhat, q)
        s = _sub(r, _scale(alpha, q))
        done = _vdot_real(s, s) < atol2
        shat = M(s)
        t = A(shat)
        omega = _vdot(t, s) / _vdot(t, t)
        x_half = _add(x, _scale(alpha, phat))
        x = tree_map(partial(jnp.where, done), x_half, _add(x_half, _scale(omega, shat)))
        r = tree_map(partial(jnp.where, done), s, _sub(s, _scale(omega, t)))
        # Breakdown (rho, alpha or omega zero) stops the loop with a negative counter.
        k = jnp.where((omega == 0) | (alpha == 0), -11, k + 1)
        k = jnp.where(rho_new == 0, -10, k)
        return x, r, rhat, alpha, omega, rho_new, p, q, k

    init = (x0, r0, r0, one, one, one, r0, r0, 0)
    return lax.while_loop(cond, body, init)[0]


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Biconjugate gradient stabilized method for ``A(x) = b`` with general ``A``; the
    arguments are as for ``cg``. Returns ``(x, None)``."""
    A, b, x0, M, maxiter, _ = _prepare(A, b, x0, M, maxiter)
    solve = partial(_bicgstab, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    return _linear_solve(A, b, solve, symmetric=False), None


# ---- GMRES --------------------------------------------------------------------------------------

def _flatten(tree):
    return jnp.concatenate([jnp.ravel(v) for v in tree_leaves(tree)])


def _unflatten_like(vec, tree):
    leaves, out, start = tree_leaves(tree), [], 0
    for leaf in leaves:
        shape = np.shape(leaf) if isinstance(leaf, np.ndarray) else get_aval(leaf).shape
        n = int(np.prod(shape))
        out.append(vec[start:start + n].reshape(shape))
        start += n
    return tree_structure(tree).unflatten(out)


def _safe_normalize(v, thresh=None):
    """``(v / |v|, |v|)``, or zeros and 0 when ``|v| <= thresh`` (default: eps)."""
    norm = jnp.linalg.norm(v)
    if thresh is None:
        thresh = dtypes.finfo(get_aval(norm).dtype).eps
    big = norm > thresh
    safe = jnp.where(big, norm, jnp.ones_like(norm))
    return jnp.where(big, v / safe.astype(v.dtype), jnp.zeros_like(v)), jnp.where(big, norm, 0)


def _arnoldi_step(k, op, V, H):
    """Extend the Krylov basis ``V`` ``[n, restart+1]`` by column ``k + 1`` with two
    passes of classical Gram-Schmidt; row ``k`` of ``H`` gets the coefficients."""
    eps = dtypes.finfo(V.dtype).eps
    w = op(V[:, k])
    _, w_norm = _safe_normalize(w)
    h = jnp.zeros(get_aval(V).shape[1], V.dtype)
    for _ in range(2):
        coef = jnp.matmul(jnp.conj(V).T, w, precision=_HIGHEST)
        w = w - jnp.matmul(V, coef, precision=_HIGHEST)
        h = h + coef
    unit, w_norm1 = _safe_normalize(w, eps * w_norm)
    V = V.at[:, k + 1].set(unit)
    H = H.at[k, :].set(h.at[k + 1].set(w_norm1.astype(V.dtype)))
    return V, H, w_norm1 == 0


def _gmres_cycle(op, b, x, unit_res, res_norm, restart: int):
    """One restart cycle: ``restart`` Arnoldi steps (fewer on breakdown), then the
    small least-squares problem ``min |H^T y - |r| e_1|`` by its normal equations."""
    n = get_aval(b).shape[0]
    V = jnp.zeros((n, restart + 1), b.dtype).at[:, 0].set(unit_res)
    H = jnp.eye(restart, restart + 1, dtype=b.dtype)

    def cond(state):
        _, _, broke, k = state
        return (k < restart) & ~broke

    def body(state):
        V, H, _, k = state
        V, H, broke = _arnoldi_step(k, op, V, H)
        return V, H, broke, k + 1

    V, H, _, _ = lax.while_loop(cond, body, (V, H, False, 0))
    beta = jnp.zeros(restart + 1, b.dtype).at[0].set(res_norm.astype(b.dtype))
    Ht = H.T
    gram = jnp.matmul(jnp.conj(Ht).T, Ht, precision=_HIGHEST)
    rhs = jnp.matmul(jnp.conj(Ht).T, beta, precision=_HIGHEST)
    y = jnp.linalg.solve(gram, rhs)
    return x + jnp.matmul(V[:, :-1], y, precision=_HIGHEST)


def _gmres(A, b, *, x0, tol, atol, restart: int, maxiter: int, M):
    """GMRES on the flattened vector of the pytree ``b``."""
    tol_abs = jnp.maximum(tol * _norm(b), atol)
    def op(v):
        return _flatten(M(A(_unflatten_like(v, b))))

    def precond_residual(x):
        return _flatten(M(_sub(b, A(_unflatten_like(x, b)))))

    bf = _flatten(b)
    x0f = _flatten(x0)
    unit, norm = _safe_normalize(precond_residual(x0f))

    def cond(state):
        _, k, _, norm = state
        return (k < maxiter) & (norm > tol_abs)

    def body(state):
        x, k, unit, norm = state
        x = _gmres_cycle(op, bf, x, unit, norm, restart)
        unit, norm = _safe_normalize(precond_residual(x))
        return x, k + 1, unit, norm

    x, *_ = lax.while_loop(cond, body, (x0f, 0, unit, norm))
    return _unflatten_like(x, b)


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
    """Restarted GMRES for ``A(x) = b`` with general ``A``: at most ``maxiter`` cycles of
    ``restart`` Krylov steps, stopping when the (preconditioned) residual is below
    ``max(tol * |b|, atol)``. ``solve_method`` ``'batched'`` and ``'incremental'`` both
    solve each cycle's least-squares problem once at its end. Returns ``(x, info)``."""
    if solve_method not in ("incremental", "batched"):
        raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' "
                         f"or 'batched'")
    A, b, x0, M, maxiter, size = _prepare(A, b, x0, M, maxiter)
    restart = min(int(restart), size)
    solve = partial(_gmres, x0=x0, tol=tol, atol=atol, restart=restart, maxiter=maxiter, M=M)
    x = _linear_solve(A, b, solve, symmetric=False)
    info = jnp.where(jnp.isnan(_norm(x)), -1, 0)
    return x, info
