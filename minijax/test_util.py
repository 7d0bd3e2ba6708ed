"""Gradient checking: ``check_grads`` compares autodiff against finite differences.

- forward mode: ``jvp(f, x, t)`` against the central difference
  ``(f(x + eps t) - f(x - eps t)) / (2 eps)``;
- reverse mode: the transpose identity ``<vjp(ct), t> == <ct, jvp(t)>``, with jax's pairing
  ``<a, b> = Re(sum(a * b))`` (no conjugation) for complex values;
- ``order=2`` repeats both checks on the directional derivative of ``f``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minijax.core import dtypes
from minijax.api.ad import jvp, vjp
from minijax._pytree import tree_flatten, tree_map

_EPS = {np.dtype(np.float16): 2 ** -4, dtypes.bfloat16: 2 ** -4, np.dtype(np.float32): 2 ** -9,
        np.dtype(np.float64): 1e-6, np.dtype(np.complex64): 2 ** -9,
        np.dtype(np.complex128): 1e-6}
_TOL = {np.dtype(np.float16): 1e-1, dtypes.bfloat16: 1e-1, np.dtype(np.float32): 2e-2,
        np.dtype(np.float64): 1e-5, np.dtype(np.complex64): 2e-2, np.dtype(np.complex128): 1e-5}


def _dtype(x) -> np.dtype:
    return np.dtype(getattr(x, "dtype", np.asarray(x).dtype))


def _np(x) -> np.ndarray:
    dt = _dtype(x)
    if dt == dtypes.float0:
        return np.zeros(())
    return np.asarray(x, dtype=np.complex128 if dtypes.is_complex(dt) else np.float64)


def _rand_like(rng, x):
    dt = _dtype(x)
    if not dtypes.is_inexact(dt):
        return np.zeros(np.shape(x), dtypes.float0)
    if dtypes.is_complex(dt):
        return (rng.standard_normal(np.shape(x)) + 1j * rng.standard_normal(np.shape(x))) \
            .astype(dt)
    return rng.standard_normal(np.shape(x)).astype(dt)


def _axpy(a, x, y):
    return tree_map(lambda xi, yi: yi if _dtype(xi) == dtypes.float0 else
                    (_np(yi) + a * _np(xi)).astype(_dtype(yi)), x, y)


def _vdot(x, y) -> float:
    """``Re(sum(x * y))`` over the leaves: the pairing under which vjp transposes jvp."""
    xs, ys = tree_flatten(x)[0], tree_flatten(y)[0]
    return float(sum(np.real(np.sum(_np(a) * _np(b))) for a, b in zip(xs, ys)
                     if _dtype(a) != dtypes.float0 and _dtype(b) != dtypes.float0))


def _default(table, args, atol, default):
    if atol is not None:
        return atol
    dts = [_dtype(a) for a in tree_flatten(args)[0] if dtypes.is_inexact(_dtype(a))]
    return max((table.get(np.dtype(d), default) for d in dts), default=default)


def _close(name, got, want, atol, rtol) -> None:
    for g, w in zip(tree_flatten(got)[0], tree_flatten(want)[0]):
        if _dtype(w) == dtypes.float0:
            continue
        np.testing.assert_allclose(_np(g), _np(w), atol=atol, rtol=rtol,
                                   err_msg=f"{name} mismatch")


def check_jvp(f: Callable, args: Sequence, *, atol=None, rtol=None, eps=None, seed=0) -> None:
    rng = np.random.default_rng(seed)
    args = tuple(args)
    tangents = tree_map(lambda x: _rand_like(rng, x), args)
    eps = _default(_EPS, args, eps, 1e-4)
    atol = _default(_TOL, args, atol, 1e-2)
    rtol = atol if rtol is None else rtol
    _, t_out = jvp(f, args, tangents)
    plus = f(*_axpy(eps, tangents, args))
    minus = f(*_axpy(-eps, tangents, args))
    numeric = tree_map(lambda p, m: (_np(p) - _np(m)) / (2 * eps), plus, minus)
    _close("JVP vs finite differences", t_out, numeric, atol, rtol)


def check_vjp(f: Callable, args: Sequence, *, atol=None, rtol=None, seed=0) -> None:
    rng = np.random.default_rng(seed)
    args = tuple(args)
    tangents = tree_map(lambda x: _rand_like(rng, x), args)
    out, t_out = jvp(f, args, tangents)
    ct = tree_map(lambda o: _rand_like(rng, o), out)
    _, pullback = vjp(f, *args)
    ct_in = pullback(ct)
    atol = _default(_TOL, args, atol, 1e-2)
    rtol = atol if rtol is None else rtol
    lhs, rhs = _vdot(ct_in, tangents), _vdot(ct, t_out)
    np.testing.assert_allclose(lhs, rhs, atol=atol * max(1.0, abs(rhs)), rtol=rtol,
                               err_msg="VJP does not match JVP (<vjp(ct), t> != <ct, jvp(t)>)")


def check_grads(f: Callable, args: Sequence, order: int, modes: Sequence[str] = ("fwd", "rev"),
                atol=None, rtol=None, eps=None) -> None:
    """Check ``f``'s derivatives at ``args`` up to ``order`` in the given modes; raises
    ``AssertionError`` naming the mode and order that disagree (mirrors
    ``jax.test_util.check_grads``)."""
    args = tuple(args)
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"unknown mode {mode!r}; use 'fwd' and/or 'rev'")

    def check(fun, order_left, level):
        try:
            if "fwd" in modes:
                check_jvp(fun, args, atol=atol, rtol=rtol, eps=eps, seed=level)
            if "rev" in modes:
                check_vjp(fun, args, atol=atol, rtol=rtol, seed=level)
        except AssertionError as e:
            raise AssertionError(f"check_grads failed at order {level}: {e}") from None
        if order_left > 1:
            rng = np.random.default_rng(100 + level)
            t = tree_map(lambda x: _rand_like(rng, x), args)

            def directional(*xs):
                return jvp(fun, xs, t)[1]

            check(directional, order_left - 1, level + 1)

    check(f, order, 1)


__all__ = ["check_grads", "check_jvp", "check_vjp"]
