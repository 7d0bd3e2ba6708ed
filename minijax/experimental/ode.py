"""Adaptive Runge-Kutta ODE integration (mirrors ``jax.experimental.ode``).

``odeint`` integrates ``dy/dt = func(y, t, *args)`` with the Dormand-Prince 5(4)
pair (Dormand & Prince 1980; Shampine 1986 for the dense output), choosing each
step from the embedded error estimate, and reads the solution at the requested
times from a quartic interpolant of the step that covers them. Its gradient is the
adjoint method (Chen et al. 2018, appendix C): the VJP integrates the augmented
system backwards in time between consecutive output times, instead of
differentiating through the solver's loops. The step rules follow jax's, so both
take the same steps on the same problem.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax.api import ad as _ad
from minijax.api.vmap import vmap
from minijax.custom_derivatives import closure_convert, custom_vjp
from minijax.flatten_util import ravel_pytree
from minijax.stages.jit import jit
from minijax._pytree import tree_leaves, tree_map

__all__ = ["odeint"]

# ---- the Dormand-Prince tableau ------------------------------------------------------------
# Stage i (1..6) is evaluated at t + _NODES[i-1] * dt, from y + dt * _A[i-1] @ k.
_NODES = (1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = (
    (1 / 5, 0, 0, 0, 0, 0, 0),
    (3 / 40, 9 / 40, 0, 0, 0, 0, 0),
    (44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0),
    (35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0),
)
# 5th-order weights (the last stage row: first-same-as-last), and those minus the
# embedded lower-order weights (jax's choice of them), the local error estimate.
_B5 = (35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0)
_B4 = (1951 / 21600, 0, 22642 / 50085, 451 / 720, -12231 / 42400, 649 / 6300, 1 / 60)
_B_ERR = tuple(a - b for a, b in zip(_B5, _B4, strict=True))
# weights of the midpoint value y(t + dt/2) of Shampine's dense output
_MID = (6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
        -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
        -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2)


def _dopri_step(rhs, y, f, t, dt):
    """One step from ``(t, y)`` with ``f = rhs(y, t)``: the new value, its slope, the
    error estimate, and the seven stage slopes (rows of ``k``)."""
    dty = dt.astype(f.dtype)
    nodes = jnp.array(_NODES, dtype=dt.dtype)
    a = jnp.array(_A, dtype=f.dtype)

    def stage(i, k):
        yi = y + dty * jnp.dot(a[i - 1], k)
        return k.at[i].set(rhs(yi, t + dt * nodes[i - 1]))

    k = jnp.zeros((7, f.shape[0]), f.dtype).at[0].set(f)
    k = lax.fori_loop(1, 7, stage, k)
    y_new = dty * jnp.dot(jnp.array(_B5, dtype=f.dtype), k) + y
    err = dty * jnp.dot(jnp.array(_B_ERR, dtype=f.dtype), k)
    return y_new, k[-1], err, k


def _interpolant(y0, y1, k, dt):
    """Coefficients (highest power first) of the quartic in ``s`` in [0, 1] through the
    step: it matches ``y0``, ``y1``, their slopes and the dense-output midpoint."""
    h = dt.astype(y0.dtype)
    ymid = y0 + h * jnp.dot(jnp.array(_MID, dtype=y0.dtype), k)
    s0, s1 = h * k[0], h * k[-1]  # slopes with respect to s
    c4 = -2. * s0 + 2. * s1 - 8. * y0 - 8. * y1 + 16. * ymid
    c3 = 5. * s0 - 3. * s1 + 18. * y0 + 14. * y1 - 32. * ymid
    c2 = -4. * s0 + s1 - 11. * y0 - 5. * y1 + 16. * ymid
    return jnp.stack([c4, c3, c2, s0, y0])


def _inexact(*xs):
    dtype = jnp.result_type(*xs)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.result_type(float)
    return [jnp.asarray(x, dtype) for x in xs]


def _first_step(rhs, t0, y0, f0, order, rtol, atol):
    """Hairer, Norsett & Wanner's starting step size (Solving ODEs I, II.4)."""
    y0, f0 = _inexact(y0, f0)
    scale = (atol + jnp.abs(y0) * rtol).astype(y0.dtype)
    d0 = jnp.linalg.norm(y0 / scale)
    d1 = jnp.linalg.norm(f0 / scale)
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = rhs(y0 + h0.astype(y0.dtype) * f0, t0 + h0)
    d2 = jnp.linalg.norm((f1 - f0) / scale) / h0
    flat = (d1 <= 1e-15) & (d2 <= 1e-15)
    h1 = jnp.where(flat, jnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / jnp.maximum(d1, d2)) ** (1. / (order + 1.)))
    return jnp.minimum(100. * h0, h1)


def _error_ratio(err, rtol, atol, y0, y1):
    """RMS of the error estimate over the mixed tolerance (<= 1: accept the step)."""
    tol = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
    r = err / tol.astype(err.dtype)
    sq = r.real ** 2 + r.imag ** 2 if jnp.iscomplexobj(r) else r ** 2
    return jnp.sqrt(jnp.mean(sq))


def _next_step(dt, ratio, safety=0.9, grow=10.0, shrink=0.2, order=5.0):
    """The step after one of size ``dt`` with error ratio ``ratio``: at most ``grow``
    times larger; after a rejection at least ``shrink`` times as large."""
    floor = jnp.where(ratio < 1, 1.0, shrink)
    factor = jnp.minimum(grow, jnp.maximum(safety * ratio ** (-1.0 / order), floor))
    return jnp.where(ratio == 0, dt * grow, dt * factor)


def odeint(func: Callable, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=math.inf,
           hmax=math.inf):
    """Solve ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0`` with adaptive
    Dormand-Prince steps; returns ``y`` at each time in ``t``.

    Args:
      func: the time derivative, ``func(y, t, *args)``, of the same structure as ``y``.
      y0: the initial state: an array or a pytree of arrays.
      t: strictly increasing float times (an array); ``t[0]`` is the initial time.
      *args: extra arguments of ``func``: arrays, scalars or pytrees of them.
        Gradients flow to ``y0``, ``t``, ``args`` and to arrays ``func`` closes over.
      rtol, atol: relative and absolute local error tolerances.
      mxstep: the most steps taken to reach each time in ``t``.
      hmax: the largest step size.

    Returns:
      A pytree like ``y0`` whose leaves have a new leading axis of length ``len(t)``.

    Raises:
      TypeError: an entry of ``args`` is not an array or scalar, or ``t`` is not of a
        floating dtype.
    """
    from minijax.core import valid_jaxtype
    for leaf in tree_leaves(args):
        if not valid_jaxtype(leaf):
            raise TypeError(f"The contents of odeint *args must be arrays or scalars, but "
                            f"got {leaf}.")
    if not jnp.issubdtype(t.dtype, jnp.floating):
        raise TypeError(f"t must be an array of floats, but got {t}.")
    closed, consts = closure_convert(func, y0, t[0], *args)
    return _solve(closed, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


@functools.partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _solve(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    flat_y0, unravel = ravel_pytree(y0)

    def flat_func(y, t, *a):
        return ravel_pytree(func(unravel(y), t, *a))[0]

    # (jax sets the "highest" matmul precision here; that flag has no effect in minijax)
    ys = _integrate(flat_func, rtol, atol, mxstep, hmax, flat_y0, ts, *args)
    return vmap(unravel)(ys)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _integrate(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    """The solution (a flat state) at each of ``ts``."""
    def rhs(y, t):
        return func(y, t, *args)

    def advance_to(carry, target):
        # carry: state y, its slope f, time t, next step dt, start of the last accepted
        # step, and that step's interpolant
        def more(s):
            n, _, _, t, dt, _, _ = s
            return (t < target) & (n < mxstep) & (dt > 0)

        def attempt(s):
            n, y, f, t, dt, t_prev, poly = s
            y1, f1, err, k = _dopri_step(rhs, y, f, t, dt)
            ratio = _error_ratio(err, rtol, atol, y, y1)
            dt_next = jnp.clip(_next_step(dt, ratio), min=0., max=hmax)
            accept = ratio <= 1.
            taken = (y1, f1, t + dt, t, _interpolant(y, y1, k, dt))
            kept = (y, f, t, t_prev, poly)
            y, f, t, t_prev, poly = (jnp.where(accept, a, b) for a, b in zip(taken, kept,
                                                                                strict=True))
            return (n + 1, y, f, t, dt_next, t_prev, poly)

        state = lax.while_loop(more, attempt, (0, *carry))
        carry = state[1:]
        _, _, t, _, t_prev, poly = carry
        s = (target - t_prev) / (t - t_prev)
        return carry, jnp.polyval(poly, s.astype(poly.dtype))

    f0 = rhs(y0, ts[0])
    dt0 = jnp.clip(_first_step(rhs, ts[0], y0, f0, 4, rtol, atol), min=0., max=hmax)
    poly0 = jnp.stack([y0] * 5)
    _, ys = lax.scan(advance_to, (y0, f0, ts[0], dt0, ts[0], poly0), ts[1:])
    return jnp.concatenate([y0[None], ys])


def _integrate_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _integrate(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _integrate_bwd(func, rtol, atol, mxstep, hmax, residuals, ct):
    ys, ts, args = residuals

    def adjoint_rhs(aug, minus_t, *a):
        # the augmented state (y, y_bar, t0_bar, args_bar) in reversed time s = -t
        y, y_bar = aug[0], aug[1]
        y_dot, pullback = _ad.vjp(func, y, -minus_t, *a)
        return (-y_dot, *pullback(y_bar))

    def back_one_interval(carry, i):
        y_bar, t0_bar, args_bar = carry
        # moving the output time ts[i] changes the output along the solution's slope
        t_bar = jnp.dot(func(ys[i], ts[i], *args), ct[i]).real
        t0_bar = t0_bar - t_bar
        sol = odeint(adjoint_rhs, (ys[i], y_bar, t0_bar, args_bar),
                     jnp.stack([-ts[i], -ts[i - 1]]), *args, rtol=rtol, atol=atol,
                     mxstep=mxstep, hmax=hmax)
        _, y_bar, t0_bar, args_bar = tree_map(lambda x: x[1], sol)
        return (y_bar + ct[i - 1], t0_bar, args_bar), t_bar

    start = (ct[-1], 0., tree_map(jnp.zeros_like, args))
    (y_bar, t0_bar, args_bar), ts_bar_rev = lax.scan(
        back_one_interval, start, np.arange(len(ts) - 1, 0, -1))
    ts_bar = jnp.concatenate([jnp.array([t0_bar]), ts_bar_rev[::-1]])
    return (y_bar, ts_bar, *args_bar)


_integrate.defvjp(_integrate_fwd, _integrate_bwd)
