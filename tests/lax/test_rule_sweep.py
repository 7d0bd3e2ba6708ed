"""The rule sweep: every registered primitive's rules, checked on generated cases.

Primitives are discovered from the registry (``core.trace.registered_primitives``), so a
new primitive is checked as soon as its module is imported. Each case applies one
primitive through the API jax and minijax share (``fn(L, *args)`` with ``L`` either
library), on operands drawn from a table of shapes, dtypes and value domains, and checks:

- abstract eval against lowering: the avals traced for the case against the result types
  of the HLO entry computation of ``jit(f).lower(...)`` and against the arrays the compiled
  executable returns; shapes, dtypes, weak types and values against jax;
- jvp against central finite differences (where the function is smooth at the operands)
  and against ``jax.jvp``;
- transposes through the identity ``<vjp(ct), t> == <ct, jvp(t)>``, taking jax's
  pairing ``Re(sum(a * b))`` (no conjugation) for complex values: reverse mode runs the
  transpose rule of every linear primitive the jvp emits, the primitive itself when it is
  linear;
- batching against a Python loop: ``vmap`` with operands batched at a leading axis, at a
  middle axis, or not at all, against stacked per-example results.

Collectives run all of the above inside ``vmap(axis_name="i")`` (the operands' leading
axis is the named one), and their lowering with ``xla_computation(axis_env=...)``.

The listing tests fail when a primitive lacks a rule it should have (a jvp and a batching
rule for every primitive, a transpose for the linear ones) or has no case here, unless it
is in ``EXCLUDED`` with the reason.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import zlib
from collections.abc import Callable
from typing import NamedTuple

import jax
import numpy as np
import pytest
from jax import ad_checkpoint as _jax_ad_checkpoint  # noqa: F401  (jax.ad_checkpoint)
from jax.experimental import pallas as jax_pallas

import minijax
import minijax.experimental.pallas as mini_pallas
from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import extend_axis_env, registered_primitives
from minijax.experimental.xla_metadata import set_xla_metadata
from minijax.lax.ad_util import add_any

B = 3      # vmap batch size
NAMED = 4  # size of the named axis "i" of collective cases


def _import_all_primitive_modules() -> None:
    """Import every minijax module, so every primitive is registered."""
    for info in pkgutil.walk_packages(minijax.__path__, "minijax."):
        if info.name.endswith("__main__") or info.name == "minijax.demo":
            continue
        importlib.import_module(info.name)


_import_all_primitive_modules()


# ---- the two libraries ------------------------------------------------------------------------

class _Lib:
    """``jax.lax`` or ``minijax.lax`` functions as attributes, plus the other functions the
    cases need (jit, checkpoint, custom_jvp, ...) under the same names in both."""

    def __init__(self, lax_module, **extra):
        self._lax = lax_module
        self.__dict__.update(extra)

    def __getattr__(self, name):
        return getattr(self._lax, name)


MJ = _Lib(lax, jit=minijax.jit, checkpoint=minijax.checkpoint, custom_jvp=minijax.custom_jvp,
          custom_vjp=minijax.custom_vjp, pl=mini_pallas, Shape=minijax.ShapeDtypeStruct,
          custom_vmap=minijax.custom_batching.custom_vmap,
          checkpoint_name=minijax.ad_checkpoint.checkpoint_name)
JX = _Lib(jax.lax, jit=jax.jit, checkpoint=jax.checkpoint, custom_jvp=jax.custom_jvp,
          custom_vjp=jax.custom_vjp, pl=jax_pallas, Shape=jax.ShapeDtypeStruct,
          custom_vmap=jax.custom_batching.custom_vmap,
          checkpoint_name=jax.ad_checkpoint.checkpoint_name)


# ---- operands ---------------------------------------------------------------------------------

class Arg(NamedTuple):
    """An operand: shape, dtype and the domain its values are drawn from.

    Domains: ``any`` (normal; small integers), ``pos`` (in [0.5, 2)), ``away`` (away from
    zero), ``frac`` (away from integers), ``small`` (in [-1, 1)), ``distinct`` (no ties),
    ``bits`` (shift amounts 0..7), ``("int", lo, hi)`` and ``("perm", n)`` (distinct
    integers below n).
    """

    shape: tuple
    dtype: np.dtype = np.dtype(np.float32)
    domain: object = "any"


def _real_values(rng, shape, domain) -> np.ndarray:
    if domain == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if domain == "away":
        return rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    if domain == "frac":
        return rng.integers(-3, 3, shape) + rng.uniform(0.2, 0.8, shape)
    if domain == "small":
        return rng.uniform(-1.0, 1.0, shape)
    if domain == "distinct":
        n = int(np.prod(shape, dtype=np.int64))
        return (rng.permutation(n) * 0.37 - n * 0.15).reshape(shape)
    return rng.standard_normal(shape)


def draw(arg: Arg, rng) -> np.ndarray:
    shape, dt, dom = arg.shape, np.dtype(arg.dtype), arg.domain
    if isinstance(dom, tuple) and dom[0] == "int":
        return rng.integers(dom[1], dom[2], shape).astype(dt)
    if isinstance(dom, tuple) and dom[0] == "perm":
        n = int(np.prod(shape, dtype=np.int64))
        return rng.permutation(dom[1])[:n].reshape(shape).astype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtypes.is_int(dt):
        if dom == "bits":
            return rng.integers(0, 8, shape).astype(dt)
        lo = 1 if dom in ("pos", "away") or dtypes.is_unsigned(dt) else -5
        vals = rng.integers(lo, 6, shape)
        if dom == "away":
            vals = vals * rng.choice([-1, 1], shape)
        return vals.astype(dt)
    vals = _real_values(rng, shape, dom)
    if dtypes.is_complex(dt):
        imag = rng.uniform(-0.5, 0.5, shape) if dom in ("pos", "away") else \
            _real_values(rng, shape, dom)
        vals = vals + 1j * imag
    return np.asarray(vals).astype(dt)


def _inexact(x) -> bool:
    return dtypes.is_inexact(np.dtype(x.dtype))


# ---- cases --------------------------------------------------------------------------------------

class Case(NamedTuple):
    """One application of ``prim``: ``fn(L, *operands)`` with operands drawn from ``args``.

    ``jax``: jax computes the same function (values, types and jvp are compared);
    ``jax_ad``: jax differentiates it too; ``smooth``: finite differences are meaningful at
    the operands; ``rev``: reverse mode is supported (False for while loops, as in jax);
    ``fwd``: forward mode is supported (without it the transpose check uses finite
    differences);
    ``named``: run inside ``vmap(axis_name="i")`` over the operands' leading axis;
    ``tol``: relative tolerance of the comparisons with jax and finite differences.
    """

    prim: str
    fn: Callable
    args: tuple
    label: str = ""
    jax: bool = True
    jax_ad: bool = True
    smooth: bool = True
    rev: bool = True
    fwd: bool = True
    named: bool = False
    tol: float = 1e-4

    @property
    def id(self) -> str:
        return f"{self.prim}[{self.label}]" if self.label else self.prim


F32, C64, I32, U8 = (np.dtype(t) for t in (np.float32, np.complex64, np.int32, np.uint8))
F16, BOOL = np.dtype(np.float16), np.dtype(np.bool_)
_KIND = {F32: "f", F16: "f", C64: "c", I32: "i", U8: "u", BOOL: "b"}
# The default operand shape: square and as long as the vmap batch, so that batching at a
# leading and at a middle axis gives the same batched shape, compiled once (values still
# tell the axes apart).
SHAPE = (B, B)
# Operand dtypes minijax's lax accepts where jax's does not (no comparison with jax).
JAX_REJECTS = {("abs", U8), ("add", BOOL), ("mul", BOOL)}

CASES: list[Case] = []


def case(prim, fn, *args, **kw) -> None:
    CASES.append(Case(prim, fn, tuple(args), **kw))


# Elementwise one-operand primitives: (primitive, lax function, dtype kinds, domain, smooth).
# (sign's derivative is taken as zero, as in jax, also where it is smooth: complex operands)
UNARY = [
    ("neg", "neg", "fciu", "any", True), ("sin", "sin", "fc", "any", True),
    ("cos", "cos", "fc", "any", True), ("tan", "tan", "fc", "small", True),
    ("tanh", "tanh", "fc", "any", True), ("exp", "exp", "fc", "any", True),
    ("exp2", "exp2", "fc", "any", True), ("log", "log", "fc", "pos", True),
    ("log1p", "log1p", "fc", "pos", True), ("expm1", "expm1", "fc", "any", True),
    ("sqrt", "sqrt", "fc", "pos", True), ("rsqrt", "rsqrt", "fc", "pos", True),
    ("cbrt", "cbrt", "f", "pos", True), ("logistic", "logistic", "fc", "any", True),
    ("sign", "sign", "fciu", "away", False), ("floor", "floor", "f", "frac", True),
    ("ceil", "ceil", "f", "frac", True), ("not", "bitwise_not", "biu", "any", True),
    ("is_finite", "is_finite", "f", "any", True), ("abs", "abs", "fciu", "away", True),
    ("erf", "erf", "f", "any", True), ("square", "square", "fciu", "any", True),
    ("real", "real", "c", "any", True), ("imag", "imag", "c", "any", True),
]
for _prim, _fn, _kinds, _dom, _smooth in UNARY:
    for _dt in (F32, C64, I32, U8, BOOL):
        if _KIND[_dt] in _kinds:
            case(_prim, lambda L, x, f=_fn: getattr(L, f)(x), Arg(SHAPE, _dt, _dom),
                 label=_dt.name, smooth=_smooth or _dt != C64,
                 jax=(_prim, _dt) not in JAX_REJECTS)
# Inverse trigonometric and hyperbolic functions (operands kept inside their domains and
# away from the singular points of their derivatives).
for _fn, _shift in (("asin", 0.0), ("acos", 0.0), ("atan", 0.0), ("sinh", 0.0),
                    ("cosh", 0.0), ("asinh", 0.0), ("acosh", 2.0), ("atanh", 0.0)):
    for _dt in (F32, C64):
        case(_fn, lambda L, x, f=_fn, s=_shift: getattr(L, f)(x * 0.8 + s),
             Arg(SHAPE, _dt, "small"), label=_dt.name)
case("complex", lambda L, x, y: L.complex(x, y), Arg(SHAPE), Arg(SHAPE))
case("complex", lambda L, x, y: L.complex(x, y), Arg(SHAPE), Arg((), F32), label="scalar_rhs")
case("conj", lambda L, x: L.conj(x), Arg(SHAPE, C64), label="complex64")
case("conj", lambda L, x: L.conj(x), Arg(SHAPE, F32), label="float32")
case("round", lambda L, x: L.round(x, 0), Arg(SHAPE, F32, "frac"), label="away_from_zero")
case("round", lambda L, x: L.round(x, 1), Arg(SHAPE, F32, "frac"), label="to_even")
for _y, _dt, _dom in ((3, F32, "any"), (-2, F32, "pos"), (0, F32, "any"), (1, C64, "any"),
                      (2, C64, "any"), (3, I32, "any")):
    case("integer_pow", lambda L, x, y=_y: L.integer_pow(x, y), Arg(SHAPE, _dt, _dom),
         label=f"{_dt.name}^{_y}")

# Elementwise two-operand primitives: (primitive, lax function, kinds, x domain, y domain).
BINARY = [
    ("add", "add", "fciub", "any", "any"), ("sub", "sub", "fciu", "any", "any"),
    ("mul", "mul", "fciub", "any", "any"), ("div", "div", "fciu", "any", "away"),
    ("rem", "rem", "fiu", "pos", ("int", 3, 6)), ("pow", "pow", "fc", "pos", "any"),
    ("max", "max", "fciub", "any", "any"), ("min", "min", "fciub", "any", "any"),
    ("atan2", "atan2", "fc", "away", "away"), ("and", "bitwise_and", "biu", "any", "any"),
    ("or", "bitwise_or", "biu", "any", "any"), ("xor", "bitwise_xor", "biu", "any", "any"),
    ("shift_left", "shift_left", "iu", "any", "bits"),
    ("shift_right_arithmetic", "shift_right_arithmetic", "iu", "any", "bits"),
    ("shift_right_logical", "shift_right_logical", "iu", "any", "bits"),
    ("eq", "eq", "fciub", "any", "any"), ("ne", "ne", "fciub", "any", "any"),
    ("lt", "lt", "fiub", "any", "any"), ("le", "le", "fiub", "any", "any"),
    ("gt", "gt", "fiub", "any", "any"), ("ge", "ge", "fiub", "any", "any"),
]
for _prim, _fn, _kinds, _dx, _dy in BINARY:
    for _dt in (F32, C64, I32, BOOL):
        if _KIND[_dt] in _kinds:
            _ydom = _dy if _dt != F32 or not isinstance(_dy, tuple) else "pos"
            case(_prim, lambda L, x, y, f=_fn: getattr(L, f)(x, y), Arg(SHAPE, _dt, _dx),
                 Arg(SHAPE, _dt, _ydom), label=_dt.name, jax=(_prim, _dt) not in JAX_REJECTS)
for _prim in ("add", "sub", "mul", "div", "max", "pow", "atan2", "lt"):
    _, _fn, _, _dx, _dy = next(b for b in BINARY if b[0] == _prim)
    case(_prim, lambda L, x, y, f=_fn: getattr(L, f)(x, y), Arg(SHAPE, F32, _dx),
         Arg((), F32, _dy), label="scalar_rhs")
# (minijax takes nextafter's derivative as zero; jax has no rule)
case("nextafter", lambda L, x, y: L.nextafter(x, y), Arg(SHAPE), Arg(SHAPE), smooth=False,
     jax_ad=False)
case("add_any", lambda L, x, y: add_any(x, y), Arg(SHAPE), Arg(SHAPE), jax=False)
case("add_any", lambda L, x, y: add_any(x, y), Arg(SHAPE, C64), Arg(SHAPE, C64), jax=False,
     label="complex64")

for _src, _dst, _dom in ((F32, C64, "any"), (C64, F32, "any"), (F32, I32, "frac"),
                         (I32, F32, "any"), (F32, F16, "small"), (F32, BOOL, "away"),
                         (BOOL, F32, "any"), (C64, I32, "frac")):
    case("convert_element_type", lambda L, x, d=_dst: L.convert_element_type(x, d),
         Arg(SHAPE, _src, _dom), label=f"{_src.name}_to_{_dst.name}",
         tol=1e-2 if _dst == F16 else 1e-4)
case("stop_gradient", lambda L, x: L.stop_gradient(x) * x, Arg(SHAPE), smooth=False)

# select_n and clamp
case("select_n", lambda L, p, a, b: L.select_n(p, a, b), Arg(SHAPE, BOOL), Arg(SHAPE),
     Arg(SHAPE), label="bool")
case("select_n", lambda L, p, a, b, c: L.select_n(p, a, b, c), Arg(SHAPE, I32, ("int", 0, 3)),
     Arg(SHAPE, C64), Arg(SHAPE, C64), Arg(SHAPE, C64), label="int32_complex64")
case("select_n", lambda L, p, a, b: L.select_n(p, a, b), Arg((), BOOL), Arg(SHAPE), Arg(SHAPE),
     label="scalar_predicate")
# (jax's clamp jvp fails for tangents of scalar bounds)
case("clamp", lambda L, lo, x, hi: L.clamp(lo, x, hi), Arg((), F32, ("int", -1, 0)),
     Arg(SHAPE, F32, "frac"), Arg((), F32, ("int", 1, 2)), label="scalar_bounds", jax_ad=False)
case("clamp", lambda L, lo, x, hi: L.clamp(lo, x, hi), Arg(SHAPE, F32, ("int", -2, 0)),
     Arg(SHAPE, F32, "frac"), Arg(SHAPE, F32, ("int", 1, 3)), label="array_bounds")

# reductions
for _dt, _axes in ((F32, (1,)), (F32, (0, 2)), (C64, (0,)), (I32, (1,))):
    case("reduce_sum", lambda L, x, a=_axes: L.reduce_sum(x, a), Arg((2, 3, 4), _dt),
         label=f"{_dt.name}{list(_axes)}")
case("reduce_prod", lambda L, x: L.reduce_prod(x, (1,)), Arg((2, 3, 4)))
case("reduce_prod", lambda L, x: L.reduce_prod(x, (0,)), Arg((3, 2), C64), label="complex64")
for _prim in ("reduce_max", "reduce_min"):
    case(_prim, lambda L, x, f=_prim: getattr(L, f)(x, (0, 2)), Arg((2, 3, 4), F32, "distinct"))
    case(_prim, lambda L, x, f=_prim: getattr(L, f)(x, (1,)), Arg(SHAPE, I32), label="int32")
    # complex operands order lexicographically (real part, then imaginary part), as jax's
    case(_prim, lambda L, x, f=_prim: getattr(L, f)(x, (1,)), Arg(SHAPE, C64, "distinct"),
         label="complex64")
for _prim in ("reduce_and", "reduce_or"):
    case(_prim, lambda L, x, f=_prim: getattr(L, f)(x, (1,)), Arg((2, 3), BOOL))
    case(_prim, lambda L, x, f=_prim: getattr(L, f)(x, (0,)), Arg((2, 3), I32), label="int32")
for _prim in ("argmax", "argmin"):
    case(_prim, lambda L, x, f=_prim: getattr(L, f)(x, 1, np.int32), Arg((2, 3, 4)))
for _prim in ("cumsum", "cumprod", "cummax", "cummin"):
    case(_prim, lambda L, x, f=_prim: getattr(L, f)(x, 1), Arg((2, 4), F32, "distinct"))
    case(_prim, lambda L, x, f=_prim: getattr(L, f)(x, 0, reverse=True),
         Arg((3, 2), F32, "distinct"), label="reverse")
case("cumsum", lambda L, x: L.cumsum(x, 1), Arg(SHAPE, C64), label="complex64")
case("cummax", lambda L, x: L.cummax(x, 1), Arg(SHAPE, C64, "distinct"), label="complex64")
case("cumlogsumexp", lambda L, x: L.cumlogsumexp(x, 1, reverse=True), Arg((2, 5)))

# dot_general
_MATMUL = (((1,), (0,)), ((), ()))
case("dot_general", lambda L, a, b: L.dot_general(a, b, _MATMUL), Arg((2, 3)), Arg((3, 4)))
case("dot_general", lambda L, a, b: L.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
     Arg((2, 3, 4)), Arg((2, 4, 2)), label="batch_dims")
case("dot_general", lambda L, a, b: L.dot_general(a, b, _MATMUL), Arg((2, 3), C64),
     Arg((3, 2), C64), label="complex64")
case("dot_general", lambda L, a, b: L.dot_general(a, b, _MATMUL), Arg((2, 3), I32),
     Arg((3, 2), I32), label="int32")

# fft: the four transform types; rfft/irfft are linear over the reals (jax's transposes)
case("fft", lambda L, x: L.fft(x, L.FftType.FFT, (4,)), Arg((3, 4), C64))
case("fft", lambda L, x: L.fft(x, L.FftType.IFFT, (3, 4)), Arg((3, 4), C64), label="ifft2")
case("fft", lambda L, x: L.fft(x, L.FftType.RFFT, (4,)), Arg((3, 4)), label="rfft")
case("fft", lambda L, x: L.fft(x, L.FftType.IRFFT, (4,)), Arg((3, 3), C64), label="irfft")

# linear algebra (minijax.lax.linalg; LAPACK on CPU). Decompositions of matrices built
# inside the case so that they are well conditioned: _spd(L, x) = x x^T + 3 I.
_EYE3 = np.eye(3, dtype=np.float32)


def _spd(L, x):
    return L.add(L.dot_general(x, x, (((1,), (1,)), ((), ()))), 3 * _EYE3)


def _linalg(L):
    """lax.linalg, with jax's private geqrf/geqp3 (not exported by jax.lax.linalg)."""
    from jax._src.lax import linalg as jax_linalg
    return L.linalg if L is MJ else jax_linalg


case("cholesky", lambda L, x: L.linalg.cholesky(_spd(L, x)), Arg((3, 3)))
case("triangular_solve", lambda L, a, b: L.linalg.triangular_solve(
    L.add(a, 4 * _EYE3), b, left_side=True, lower=True), Arg((3, 3)), Arg((3, 2)))
case("triangular_solve", lambda L, a, b: L.linalg.triangular_solve(
    L.add(a, 4 * _EYE3), b, left_side=False, lower=False, transpose_a=True,
    unit_diagonal=True), Arg((3, 3)), Arg((2, 3)), label="right_transposed")
case("lu", lambda L, x: L.linalg.lu(x), Arg((3, 3)))
case("lu", lambda L, x: L.linalg.lu(x), Arg((4, 3)), label="tall")
case("lu_pivots_to_permutation", lambda L, p: L.linalg.lu_pivots_to_permutation(p, 4),
     Arg((3,), I32, ("int", 0, 4)))
# (geqrf, geqp3 and householder_product have no derivatives, in jax either: qr has them)
case("geqrf", lambda L, x: _linalg(L).geqrf(x), Arg((4, 3)), fwd=False, rev=False)
case("geqp3", lambda L, x, p: _linalg(L).geqp3(x, p), Arg((4, 3)),
     Arg((3,), I32, ("int", 0, 1)), fwd=False, rev=False)
case("householder_product", lambda L, a, t: L.linalg.householder_product(a, t), Arg((4, 3)),
     Arg((3,), F32, "small"), fwd=False, rev=False)
case("qr", lambda L, x: L.linalg.qr(x, full_matrices=False), Arg((4, 3)))
case("qr", lambda L, x: L.linalg.qr(x), Arg((3, 4)), label="wide_full")
case("qr", lambda L, x: L.linalg.qr(x, pivoting=True), Arg((3, 3)), label="pivoting")
case("eigh", lambda L, x: L.linalg.eigh(x), Arg((3, 3)))
case("svd", lambda L, x: L.linalg.svd(x, full_matrices=False), Arg((4, 3)))
case("svd", lambda L, x: L.linalg.svd(x, compute_uv=False), Arg((3, 4)), label="values")
case("eig", lambda L, x: L.linalg.eig(x, compute_left_eigenvectors=False,
                                      compute_right_eigenvectors=False), Arg((3, 3)))
case("eig", lambda L, x: L.linalg.eig(x, enable_eigvec_derivs=True), Arg((3, 3)),
     label="vectors", tol=1e-3)
# (the Householder reductions, schur and cholesky_update have no derivatives, in jax either)
case("hessenberg", lambda L, x: L.linalg.hessenberg(x), Arg((4, 4)), fwd=False, rev=False)
case("schur", lambda L, x: L.linalg.schur(x), Arg((3, 3)), fwd=False, rev=False)
case("tridiagonal", lambda L, x: L.linalg.tridiagonal(x), Arg((4, 4)), fwd=False, rev=False)
_TRIU3 = np.triu(np.ones((3, 3), np.float32))
case("cholesky_update", lambda L, r, w: L.linalg.cholesky_update(
    L.add(L.mul(r, _TRIU3), 3 * _EYE3), w), Arg((3, 3)), Arg((3,)), fwd=False, rev=False)
_FOUR4 = np.full((4,), 4, np.float32)
case("tridiagonal_solve", lambda L, dl, d, du, b: L.linalg.tridiagonal_solve(
    dl, L.add(d, _FOUR4), du, b), Arg((4,)), Arg((4,)), Arg((4,)), Arg((4, 2)))
# (jax has no derivative rules for ormqr and symmetric_product; minijax's: ormqr is
# linear in c, symmetric_product a quadratic form)
_QR_H, _QR_TAUS = (np.asarray(v) for v in np.linalg.qr(np.eye(4, 3, dtype=np.float32) +
                                                          np.arange(12.).reshape(4, 3) / 7,
                                                          mode="raw"))
case("ormqr", lambda L, c: L.linalg.ormqr(_QR_H.T.astype(np.float32),
                                          _QR_TAUS.astype(np.float32), c),
     Arg((4, 2)), jax_ad=False)
case("symmetric_product", lambda L, a, c: L.linalg.symmetric_product(a, c, alpha=2.0, beta=0.5),
     Arg((3, 2)), Arg((3, 3)), jax_ad=False)

# convolutions and windowed reductions
_NHWC = ("NHWC", "HWIO", "NHWC")
case("conv_general_dilated", lambda L, x, w: L.conv_general_dilated(
    x, w, (2, 1), "SAME", rhs_dilation=(1, 2), dimension_numbers=_NHWC),
    Arg((2, 5, 4, 3)), Arg((3, 2, 3, 4)))
case("conv_general_dilated", lambda L, x, w: L.conv_general_dilated(
    x, w, (1, 2), ((1, 0), (0, 1)), lhs_dilation=(2, 1), feature_group_count=2),
    Arg((2, 4, 3, 4)), Arg((6, 2, 2, 2)), label="feature_groups")
case("conv_general_dilated", lambda L, x, w: L.conv_general_dilated(
    x, w, (1,), "VALID", batch_group_count=2), Arg((4, 3, 5)), Arg((4, 3, 2)),
    label="batch_groups")
case("conv_general_dilated", lambda L, x, w: L.conv_general_dilated(x, w, (1,), "SAME"),
     Arg((2, 2, 4), C64), Arg((2, 2, 3), C64), label="complex64")
_WINDOW = dict(window_dimensions=(2, 2), window_strides=(1, 2), padding=((1, 0), (0, 1)))
case("reduce_window_sum", lambda L, x: L.reduce_window(x, 0.0, L.add, **_WINDOW), Arg((3, 5)))
case("reduce_window_max", lambda L, x: L.reduce_window(x, -np.inf, L.max, **_WINDOW),
     Arg((3, 5), F32, "distinct"))
case("reduce_window_min", lambda L, x: L.reduce_window(x, np.inf, L.min, **_WINDOW),
     Arg((3, 5), F32, "distinct"))
case("reduce_window_max", lambda L, x: L.reduce_window(x, np.int32(-2**31), L.max, **_WINDOW),
     Arg((3, 5), I32), label="int32")
# (jax has no reverse mode for the generic reduce_window)
case("reduce_window", lambda L, x: L.reduce_window(x, 1.0, L.mul, **_WINDOW), Arg((3, 5)),
     rev=False)


def _select_window(L, ge: bool) -> dict:
    prims = jax.lax if L is JX else lax.binary
    return dict(select_prim=prims.ge_p if ge else prims.le_p, window_dimensions=(2, 3),
                window_strides=(2, 1), padding=((0, 1), (1, 0)))


case("select_and_gather_add", lambda L, t, x: L.select_and_gather_add_p.bind(
    t, x, base_dilation=(1, 1), window_dilation=(1, 1), **_select_window(L, True)),
    Arg((3, 4)), Arg((3, 4), F32, "distinct"))
case("select_and_scatter_add", lambda L, s, x: L.select_and_scatter_add_p.bind(
    s, x, **_select_window(L, False)), Arg((2, 3)), Arg((3, 4), F32, "distinct"))

# shapes
case("broadcast_in_dim", lambda L, x: L.broadcast_in_dim(x, (2, 3, 4), (1, 2)), Arg((3, 1)))
case("broadcast_in_dim", lambda L, x: L.broadcast_in_dim(x, (2, 3), ()), Arg(()),
     label="scalar")
case("reshape", lambda L, x: L.reshape(x, (6, 4)), Arg((2, 3, 4)))
case("reshape", lambda L, x: L.reshape(x, (4, 6), (2, 0, 1)), Arg((2, 3, 4)),
     label="dimensions")
case("transpose", lambda L, x: L.transpose(x, (2, 0, 1)), Arg((2, 3, 4)))
case("squeeze", lambda L, x: L.squeeze(x, (1, 3)), Arg((2, 1, 3, 1)))
case("concatenate", lambda L, a, b, c: L.concatenate([a, b, c], 1), Arg((2, 3)), Arg((2, 1)),
     Arg((2, 2)))
case("pad", lambda L, x, v: L.pad(x, v, ((1, 2, 0), (-1, 1, 2))), Arg((3, 4)), Arg(()))
case("pad", lambda L, x, v: L.pad(x, v, ((0, 1, 1),)), Arg((3,), C64), Arg((), C64),
     label="complex64")
case("rev", lambda L, x: L.rev(x, (0, 2)), Arg((2, 3, 4)))
case("iota", lambda L: L.iota(np.int32, 5))
case("iota", lambda L: L.broadcasted_iota(np.float32, (2, 3), 1), label="broadcasted")

# slicing
case("slice", lambda L, x: L.slice(x, (1, 0), (5, 7), (2, 3)), Arg((5, 7)))
case("dynamic_slice", lambda L, x, i, j: L.dynamic_slice(x, (i, j), (2, 3)), Arg((5, 6)),
     Arg((), I32, ("int", -2, 6)), Arg((), I32, ("int", 0, 6)))
case("dynamic_update_slice", lambda L, x, u, i, j: L.dynamic_update_slice(x, u, (i, j)),
     Arg((5, 6)), Arg((2, 3)), Arg((), I32, ("int", 0, 5)), Arg((), I32, ("int", 0, 6)))


def _gdn(L, offset, collapsed, start_map, obd=(), sibd=()):
    return L.GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=collapsed,
                                    start_index_map=start_map, operand_batching_dims=obd,
                                    start_indices_batching_dims=sibd)


def _sdn(L):
    return L.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))


case("gather", lambda L, x, i: L.gather(x, i, _gdn(L, (1,), (0,), (0,)), (1, 4), mode="clip"),
     Arg((5, 4)), Arg((3, 1), I32, ("int", 0, 5)), label="rows")
case("gather", lambda L, x, i: L.gather(x, i, _gdn(L, (0, 2), (), (0, 1)), (2, 3),
                                        mode="fill", fill_value=0.5),
     Arg((5, 6)), Arg((2, 2), I32, ("int", -1, 5)), label="windows_fill")
case("scatter", lambda L, x, i, u: L.scatter(x, i, u, _sdn(L), unique_indices=True),
     Arg((5, 4)), Arg((3, 1), I32, ("perm", 5)), Arg((3, 4)))
# (jax differentiates scatter-mul only with unique indices)
for _prim, _fn, _dom in (("scatter-add", "scatter_add", "any"),
                         ("scatter-mul", "scatter_mul", "any"),
                         ("scatter-min", "scatter_min", "distinct"),
                         ("scatter-max", "scatter_max", "distinct")):
    case(_prim, lambda L, x, i, u, f=_fn: getattr(L, f)(x, i, u, _sdn(L)),
         Arg((5, 4), F32, _dom), Arg((3, 1), I32, ("int", 0, 5)), Arg((3, 4), F32, _dom),
         jax_ad=_prim != "scatter-mul")
case("scatter-add", lambda L, x, i, u: L.scatter_add(x, i, u, _sdn(L)), Arg((5, 4), C64),
     Arg((3, 1), I32, ("int", 0, 5)), Arg((3, 4), C64), label="complex64")

# sort
case("sort", lambda L, x: L.sort(x, 0), Arg((4, 3), F32, "distinct"))
case("sort", lambda L, k, v: L.sort_key_val(k, v, 1), Arg((2, 5), F32, "distinct"),
     Arg((2, 5)), label="key_val")


# control flow and calls
def _cond(L, p, x):
    return L.cond(p, lambda y: L.sin(y) * 2.0, lambda y: L.cos(y), x)


def _while(L, x, n):
    return L.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, L.sin(c[1]) * 1.5), (0, x))[1]


def _scan(L, c, xs):
    return L.scan(lambda c, x: (c * L.sin(x) + x, c * x), c, xs)


def _custom_jvp(L, x):
    @L.custom_jvp
    def f(y):
        return L.sin(y)

    f.defjvp(lambda p, t: (L.sin(p[0]), L.cos(p[0]) * t[0]))
    return f(x)


def _custom_vjp(L, x):
    @L.custom_vjp
    def f(y):
        return L.sin(y)

    f.defvjp(lambda y: (L.sin(y), L.cos(y)), lambda res, ct: (res * ct,))
    return f(x)


def _custom_vmap(L, x):
    @L.custom_vmap
    def f(y):
        return L.sin(y)

    f.def_vmap(lambda n, batched, y: (L.sin(y), batched[0]))  # the rule, under vmap
    return f(x)


def _pallas(L, x):
    def kernel(x_ref, o_ref):
        o_ref[...] = L.sin(x_ref[...]) * 2.0
    return L.pl.pallas_call(kernel, out_shape=L.Shape(x.shape, x.dtype), interpret=True)(x)


case("cond", _cond, Arg((), BOOL), Arg(SHAPE))
case("while", _while, Arg(SHAPE), Arg((), I32, ("int", 0, 4)), rev=False)
case("scan", _scan, Arg((3,)), Arg((4, 3)))
case("jit", lambda L, x: L.jit(lambda y: L.sin(y) * y)(x), Arg(SHAPE))
case("checkpoint", lambda L, x: L.checkpoint(lambda y: L.sin(L.sin(y)))(x), Arg(SHAPE))
case("custom_jvp_call", _custom_jvp, Arg(SHAPE))
case("custom_vjp_call", _custom_vjp, Arg(SHAPE), fwd=False)  # (jvp raises, as in jax)
case("custom_vmap_call", _custom_vmap, Arg(SHAPE), rev=False)  # (jax: no reverse mode)
case("name", lambda L, x: L.checkpoint_name(L.sin(x), "a") * x, Arg(SHAPE))
case("pallas_call", _pallas, Arg((8, 128)), fwd=False, rev=False)
case("xla_metadata_value", lambda L, x: set_xla_metadata(L.sin(x), tag="a") * x, Arg(SHAPE),
     jax=False)

# collectives over the named axis "i" (operands have a leading axis of size NAMED)
_N = (NAMED,)
case("psum", lambda L, x: L.psum(x, "i"), Arg(_N + SHAPE), named=True)
case("psum", lambda L, x: L.psum(x, "i"), Arg(_N + SHAPE, C64), label="complex64", named=True)
# (jax has no jvp of pmax and pmin)
case("pmax", lambda L, x: L.pmax(x, "i"), Arg(_N + SHAPE, F32, "distinct"), named=True,
     jax_ad=False)
case("pmin", lambda L, x: L.pmin(x, "i"), Arg(_N + SHAPE, F32, "distinct"), named=True,
     jax_ad=False)
case("all_gather", lambda L, x: L.all_gather(x, "i"), Arg(_N + SHAPE), named=True)
case("all_gather", lambda L, x: L.all_gather(x, "i", axis=1, tiled=True), Arg(_N + SHAPE),
     label="tiled", named=True)
case("axis_index", lambda L, x: x * L.convert_element_type(L.axis_index("i"), np.float32),
     Arg(_N + SHAPE), named=True)
case("ppermute", lambda L, x: L.ppermute(x, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
     Arg(_N + SHAPE), named=True)
# (jax's vmap of ppermute takes full permutations only)
case("ppermute", lambda L, x: L.ppermute(x, "i", [(0, 2), (3, 1)]), Arg(_N + SHAPE),
     label="partial", named=True, jax=False)
case("psum_scatter", lambda L, x: L.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
     Arg(_N + (3, 4)), named=True)
case("all_to_all", lambda L, x: L.all_to_all(x, "i", 0, 1, tiled=True), Arg(_N + (4, 3)),
     named=True)
case("all_to_all", lambda L, x: L.all_to_all(x, "i", 0, 1), Arg(_N + (4, 3)),
     label="untiled", named=True)


# random bits (jax has these in jax.extend.random and its prng module, not in jax.lax)
U32 = np.dtype(np.uint32)


def _threefry2x32(L, k1, k2, x1, x2):
    if L is MJ:
        return minijax.lax.prng.threefry2x32(k1, k2, x1, x2)
    from jax.extend.random import threefry2x32_p
    return tuple(threefry2x32_p.bind(k1, k2, x1, x2))


def _iota_2x32_shape(L, shape):
    if L is MJ:
        return minijax.lax.prng.iota_2x32_shape(shape)
    from jax._src.random.prng import iota_2x32_shape
    return tuple(iota_2x32_shape(shape))


_WORD = ("int", 0, 2 ** 32)
case("threefry2x32", _threefry2x32, Arg((), U32, _WORD), Arg((), U32, _WORD),
     Arg(SHAPE, U32, _WORD), Arg(SHAPE, U32, _WORD), label="scalar_key")
case("threefry2x32", _threefry2x32, *[Arg(SHAPE, U32, _WORD)] * 4, label="arrays")
case("iota_2x32_shape", lambda L: _iota_2x32_shape(L, (2, 3, 4)))

# bit-level
case("bitcast_convert_type", lambda L, x: L.bitcast_convert_type(x, np.int32), Arg(SHAPE))
case("bitcast_convert_type", lambda L, x: L.bitcast_convert_type(x, np.uint8), Arg(SHAPE),
     label="narrower")
case("bitcast_convert_type", lambda L, x: L.bitcast_convert_type(x, np.float32),
     Arg((4, 2), np.dtype(np.uint16)), label="wider")
case("clz", lambda L, x: L.clz(x), Arg(SHAPE, I32))
case("population_count", lambda L, x: L.population_count(x), Arg(SHAPE, U8))
case("top_k", lambda L, x: L.top_k(x, 3), Arg((2, 5), F32, "distinct"))
case("top_k", lambda L, x: L.top_k(x, 2, axis=0), Arg((4, 3), F32, "distinct"), label="axis0")

# the rest of jax.lax (minijax/lax/{mulhi,reduce_precision,...}.py)
case("mulhi", lambda L, x, y: L.mulhi(x, y), Arg(SHAPE, I32, ("int", -2 ** 31, 2 ** 31 - 1)),
     Arg(SHAPE, I32, ("int", -2 ** 31, 2 ** 31 - 1)))
case("mulhi", lambda L, x, y: L.mulhi(x, y), Arg(SHAPE, U8), Arg(SHAPE, U8), label="uint8")
case("reduce_precision", lambda L, x: L.reduce_precision(x, 5, 10), Arg(SHAPE), smooth=False)
case("optimization_barrier", lambda L, x, y: L.optimization_barrier((x * x, y)), Arg(SHAPE),
     Arg((2,)))
case("reduce_xor", lambda L, x: L.reduce_xor(x, (1,)), Arg((2, 3), I32))
case("reduce_xor", lambda L, x: L.reduce_xor(x, (0,)), Arg((3, 2), BOOL), label="bool")
case("copy", lambda L, x: L.copy_p.bind(x), Arg(SHAPE))
case("stage", lambda L, x: L.stage(x), Arg(SHAPE))
for _name in ("eq_to", "le_to", "lt_to"):
    case(_name, lambda L, x, y, n=_name: getattr(L, f"{n}_p").bind(x, y), Arg(SHAPE),
         Arg(SHAPE))
case("split", lambda L, x: L.split(x, (1, 3), axis=1), Arg((2, 4)))
case("stack", lambda L, x, y: L.stack([x, y], axis=1), Arg(SHAPE), Arg(SHAPE))
case("unstack", lambda L, x: L.unstack(x, axis=1), Arg((2, 3)))
case("tile", lambda L, x: L.tile(x, (2, 3)), Arg((2, 2)))
case("approx_top_k", lambda L, x: L.approx_max_k(x, 2), Arg((2, 5), F32, "distinct"))
case("approx_top_k", lambda L, x: L.approx_min_k(x, 2, reduction_dimension=0),
     Arg((4, 3), F32, "distinct"), label="min_axis0")
case("rng_bit_generator", lambda L, k: L.rng_bit_generator(k, (2, 3)), Arg((4,), U32, _WORD))
case("rng_bit_generator", lambda L, k: L.rng_bit_generator(k, (5,), np.uint8),
     Arg((4,), U32, _WORD), label="uint8")
case("custom_linear_solve", lambda L, d, b: L.custom_linear_solve(
    lambda x: L.mul(d, x), b, lambda mv, x: L.div(x, d), symmetric=True),
    Arg(SHAPE, F32, "pos"), Arg(SHAPE))
case("custom_linear_solve", lambda L, d, b, c: L.custom_linear_solve(
    lambda x: (L.mul(d, x[0]), x[1]), (b, c), lambda mv, x: (L.div(x[0], d), x[1]),
    transpose_solve=lambda vm, x: (L.div(x[0], d), x[1])),
    Arg(SHAPE, F32, "pos"), Arg(SHAPE), Arg((2,)), label="pytree_transpose_solve")
case("reduce", lambda L, x: L.reduce(x, np.float32(0), lambda a, b: L.add(a, b), (1,)),
     Arg((2, 3, 4)))
case("reduce", lambda L, x: L.reduce((x, x), (np.float32(-np.inf), np.float32(0)),
                                     lambda a, b: (L.max(a[0], b[0]), L.add(a[1], b[1])), (0, 2)),
     Arg((2, 3, 4), F32, "distinct"), label="variadic")
# (jax has no jvp, transpose nor batching rule for composite; minijax batches it)
case("composite", lambda L, x: L.composite(lambda v, *, k=2.0: L.sin(v) * k, name="my.op")(
    x, k=3.0), Arg(SHAPE), jax_ad=False, fwd=False, rev=False)
case("device_put", lambda L, x: minijax.lax.device_put_p.bind(
    x, devices=(None,), srcs=(None,), copy_semantics=(None,))[0], Arg(SHAPE), jax=False)
case("scatter-sub", lambda L, x, u: L.scatter_sub(
    x, np.array([[1], [1], [0]], np.int32), u, L.ScatterDimensionNumbers((1,), (0,), (0,))),
    Arg(SHAPE), Arg(SHAPE))
def _sqrt_root(L, c):
    def solve(f, x0):
        return L.fori_loop(0, 12, lambda i, x: L.sub(x, L.div(f(x), L.mul(x, 2.0))), x0)
    ones = np.ones(c.shape, np.float32)
    return L.custom_root(lambda x: L.sub(L.mul(x, x), c), ones, solve,
                         lambda g, y: L.div(y, g(ones)))


case("custom_root", _sqrt_root, Arg(SHAPE, F32, "pos"))
# end of the rest of jax.lax

# special functions (the igamma family's derivatives in a run through while loops: forward
# mode only, as in jax; jax has no jvp of igamma_grad_a)
case("erf_inv", lambda L, x: L.erf_inv(x), Arg(SHAPE, F32, "small"))
case("erfc", lambda L, x: L.erfc(x), Arg(SHAPE))
case("lgamma", lambda L, x: L.lgamma(x), Arg(SHAPE, F32, "pos"))
case("digamma", lambda L, x: L.digamma(x), Arg(SHAPE, F32, "pos"))
case("polygamma", lambda L, x: L.polygamma(np.ones(x.shape, x.dtype), x), Arg(SHAPE, F32, "pos"))
case("igamma", lambda L, a, x: L.igamma(a, x), Arg(SHAPE, F32, "pos"), Arg(SHAPE, F32, "pos"))
case("igammac", lambda L, a, x: L.igammac(a, x), Arg(SHAPE, F32, "pos"),
     Arg(SHAPE, F32, "pos"))
case("igamma_grad_a", lambda L, a, x: L.igamma_grad_a(a, x), Arg(SHAPE, F32, "pos"),
     Arg(SHAPE, F32, "pos"), jax_ad=False, rev=False)
case("random_gamma_grad", lambda L, a, x: L.random_gamma_grad(a, x), Arg(SHAPE, F32, "pos"),
     Arg(SHAPE, F32, "pos"), rev=False, tol=1e-3)
case("zeta", lambda L, q: L.zeta(np.full(q.shape, 2.5, q.dtype), q), Arg(SHAPE, F32, "pos"),
     jax_ad=False)
case("regularized_incomplete_beta",
     lambda L, x: L.betainc(np.float32(1.5), np.float32(2.5), L.mul(x, np.float32(0.4))),
     Arg(SHAPE, F32, "pos"))
case("bessel_i0e", lambda L, x: L.bessel_i0e(x), Arg(SHAPE))
case("bessel_i1e", lambda L, x: L.bessel_i1e(x), Arg(SHAPE, F32, "away"))


def _random_gamma(L, a, log_space):
    words = np.array([0, 1], np.uint32)
    if L is MJ:
        return minijax.random.random_gamma_p.bind(words, a, log_space=log_space)
    return jax.random.random_gamma_p.bind(jax.random.wrap_key_data(words), a,
                                          log_space=log_space)


# (a sample is piecewise smooth in a: its jvp is the implicit-reparameterization one)
case("random_gamma", lambda L, a: _random_gamma(L, a, False), Arg(SHAPE, F32, "pos"),
     smooth=False)
case("random_gamma", lambda L, a: _random_gamma(L, a, True), Arg(SHAPE, F32, "pos"),
     smooth=False, label="log_space")

# Host callbacks: pure_callback calls NumPy on the host, batched each of jax's ways (it has
# no derivatives, as in jax; io_callback and debug_callback are in tests/test_callbacks.py).
def _host_sin(L, x, vmap_method):
    api = minijax if L is MJ else jax
    return api.pure_callback(lambda a: np.sin(np.asarray(a)), L.Shape(x.shape, x.dtype), x,
                             vmap_method=vmap_method)


for _method in ("sequential", "expand_dims", "broadcast_all", "legacy_vectorized"):
    case("pure_callback", lambda L, x, m=_method: _host_sin(L, x, m), Arg(SHAPE, F32),
         label=_method, fwd=False, rev=False)

# ---- which rules each primitive must have --------------------------------------------------

# Primitives linear in some of their operands (for the others held fixed): they need a
# transpose rule for reverse mode.
LINEAR = {
    "neg", "add", "sub", "mul", "div", "add_any", "real", "imag", "convert_element_type",
    "complex", "conj",
    "select_n", "reduce_sum", "cumsum", "dot_general", "broadcast_in_dim", "reshape",
    "transpose", "squeeze", "concatenate", "pad", "rev", "slice", "dynamic_slice",
    "dynamic_update_slice", "gather", "scatter", "scatter-add", "scatter-mul", "sort", "cond",
    "scan", "jit", "checkpoint", "custom_lin", "xla_metadata_value", "psum", "all_gather",
    "ppermute", "triangular_solve", "tridiagonal_solve", "ormqr", "conv_general_dilated",
    "reduce_window_sum", "select_and_gather_add", "select_and_scatter_add", "fft",
    # lax rest: linear
    "reduce_precision", "optimization_barrier", "copy", "stage", "split", "stack", "unstack",
    "tile", "custom_linear_solve", "device_put", "scatter-sub",
    # end lax rest: linear
}

# Rules a primitive may lack, each with the reason.
EXCLUDED: dict[str, dict[str, str]] = {
    # No operands: jvp and vmap bind it as it is (there is nothing to differentiate or
    # batch), so no rule is ever called.
    "iota": {"batch": "no operands"},
    "dim_as_value": {"jvp": "no operands", "batch": "no operands",
                     "case": "only inside a shape-polymorphic trace (tests/export/"
                              "test_shape_poly.py)"},
    "iota_2x32_shape": {"jvp": "no operands", "batch": "no operands"},
    "axis_index": {"jvp": "no operands"},
    # Only inside a linear jaxpr built by reverse mode of a custom_vjp function, which is
    # transposed (calling the user's bwd), never differentiated or batched itself;
    # forward mode of a custom_vjp function is an error, as in jax.
    "custom_lin": {"jvp": "only in linear jaxprs, which are transposed",
                   "batch": "only in linear jaxprs, which are transposed",
                   "case": "exercised by the custom_vjp_call case's reverse mode"},
    # LAPACK's Householder pieces: qr, built from them, carries the derivatives (as in jax).
    "geqrf": {"jvp": "differentiated through qr, as in jax"},
    "geqp3": {"jvp": "differentiated through qr, as in jax"},
    "householder_product": {"jvp": "differentiated through qr, as in jax"},
    "hessenberg": {"jvp": "none in jax either"},
    "schur": {"jvp": "none in jax either"},
    "tridiagonal": {"jvp": "none in jax either"},
    "cholesky_update": {"jvp": "none in jax either"},
    # Pallas kernel-body primitives: they only exist inside a kernel's jaxpr, which
    # pallas_call interprets or lowers as a whole (its batching rule adds a grid axis).
    "get": {"jvp": "pallas kernel body only", "batch": "pallas kernel body only",
            "case": "exercised by the pallas_call case"},
    "swap": {"jvp": "pallas kernel body only", "batch": "pallas kernel body only",
             "case": "exercised by the pallas_call case"},
    "program_id": {"jvp": "pallas kernel body only", "batch": "pallas kernel body only",
                   "case": "pallas kernel body only; tests/experimental/test_pallas.py"},
    # Sharding: these need a mesh of several devices, so they are checked in
    # tests/sharding/test_sharding.py's 8-device subprocess (against jax.shard_map, vmap
    # and pmap, with gradients) rather than here, where one device is available.
    "pbroadcast": {"case": "shard_map body only (replication tracking); tests/sharding"},
    "psum_invariant": {"case": "shard_map body only (replication tracking); tests/sharding"},
    "shard_map": {"case": "needs a mesh of several devices; tests/sharding"},
    "sharding_constraint": {"case": "needs a mesh of several devices; tests/sharding"},
    # lax rest: exclusions
    # Stateful random numbers: every run differs (tests/lax/test_lax_names.py checks them).
    "rng_uniform": {"case": "nondeterministic; tests/lax/test_lax_names.py"},
    "dce_sink": {"case": "no outputs; tests/lax/test_lax_names.py"},
    # Names that exist so that jax programs import; binding them raises NotImplementedError.
    "create_token": {"jvp": "no token type in minijax", "batch": "no token type in minijax",
                     "case": "no token type in minijax"},
    "after_all": {"jvp": "no token type in minijax", "batch": "no token type in minijax",
                  "case": "no token type in minijax"},
    "ragged_all_to_all": {"jvp": "not supported in minijax", "batch": "not supported",
                          "case": "not supported in minijax"},
    # end lax rest: exclusions
    # Side effects only (no outputs to compare, or outputs that come from a side effect):
    # tests/test_callbacks.py checks their calls, order, vmap and grad against jax.
    "io_callback": {"case": "side effects; tests/test_callbacks.py"},
    # A call of compiled C++: tests/test_ffi.py builds a kernel and checks it eagerly,
    # under jit and under each vmap_method, against NumPy and jax.
    "ffi_call": {"case": "needs a compiled FFI kernel; tests/test_ffi.py"},
    "debug_callback": {"case": "no outputs; tests/test_callbacks.py"},
    "debug_print": {"case": "no outputs; tests/test_callbacks.py"},
    "check": {"case": "no outputs (raises); tests/experimental/test_checkify.py"},
    # An exported artifact: Exported.call wraps it in a custom_vjp whose backward pass calls
    # the artifact's own exported vjp (as jax), so the primitive is never differentiated.
    "call_exported": {"jvp": "differentiated through Exported.call's custom_vjp, as in jax",
                      "case": "needs an exported artifact; tests/export/test_export.py"},
}

def _names() -> set[str]:
    return {p.name for p in registered_primitives()}


def _missing_rules() -> list[str]:
    missing = []
    for p in sorted(registered_primitives(), key=lambda p: p.name):
        wanted = ["jvp", "batch"] + (["transpose"] if p.name in LINEAR else [])
        for rule in wanted:
            if getattr(p, rule) is None and rule not in EXCLUDED.get(p.name, {}):
                missing.append(f"{p.name}: no {rule} rule")
    return missing


def test_every_primitive_has_its_rules():
    missing = _missing_rules()
    assert not missing, "\n".join(missing)


def test_every_primitive_has_a_sweep_case():
    covered = {c.prim for c in CASES}
    missing = [n for n in sorted(_names()) if n not in covered and
               "case" not in EXCLUDED.get(n, {})]
    assert not missing, f"add a case (or an EXCLUDED entry with the reason) for {missing}"


def test_exclusions_and_declarations_name_real_primitives():
    assert set(EXCLUDED) <= _names()
    assert LINEAR <= _names()
    # an exclusion of a rule the primitive has is stale
    for p in registered_primitives():
        for rule in EXCLUDED.get(p.name, {}):
            if rule != "case":
                assert getattr(p, rule) is None, f"{p.name} has a {rule} rule: drop the exclusion"


# ---- helpers ------------------------------------------------------------------------------

def _rng(c: Case, salt: str = ""):
    return np.random.default_rng(zlib.crc32((c.id + salt).encode()))


def _operands(c: Case, salt: str = "") -> list:
    rng = _rng(c, salt)
    return [draw(a, rng) for a in c.args]


def _flat(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _mini(c: Case) -> Callable:
    return lambda *xs: c.fn(MJ, *xs)


def _jax(c: Case) -> Callable:
    return lambda *xs: c.fn(JX, *xs)


def _wrap(c: Case, h: Callable, lib=minijax) -> Callable:
    """``h``, for a collective's case mapped over the named axis. (Both libraries run it
    eagerly: each primitive's executable is compiled once for all the cases that share it,
    much cheaper than a compile per case.)"""
    return lib.vmap(h, axis_name="i") if c.named else h


def _close(got, want, tol, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if got.dtype == dtypes.float0:
        return
    if not _inexact(want):
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    np.testing.assert_allclose(got.astype(np.complex128), want.astype(np.complex128),
                               rtol=tol, atol=tol, err_msg=what)


def _pair(a, b) -> tuple[float, float]:
    """jax's pairing of (co)tangents, ``Re(sum(a * b))``, and the sum of ``|a * b|``."""
    p = np.asarray(a).astype(np.complex128) * np.asarray(b).astype(np.complex128)
    return float(np.sum(p).real), float(np.sum(np.abs(p)))


def _diff_args(c: Case, args: list):
    """(positions of inexact operands, g(*all operands, *their tangents) -> jvp outputs)."""
    pos = [k for k, a in enumerate(args) if _inexact(a)]
    n = len(args)

    def run_jvp(L, api):
        def h(*xs):
            ops, ts = list(xs[:n]), xs[n:]

            def g(*fargs):
                full = list(ops)
                for k, v in zip(pos, fargs):
                    full[k] = v
                return c.fn(L, *full)
            return api.jvp(g, tuple(ops[k] for k in pos), tuple(ts))
        return h
    return pos, run_jvp


def _tangents(c: Case, args: list, pos: list) -> list:
    rng = _rng(c, "tangent")
    return [draw(Arg(args[k].shape, args[k].dtype), rng) for k in pos]


DIFF_CASES = [c for c in CASES if any(np.dtype(a.dtype).kind in "fc" for a in c.args)]


# ---- abstract eval vs lowering ----------------------------------------------------------------

_HLO_DTYPES = {"pred": "bool", "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64",
               "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
               "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
               "c64": "complex64", "c128": "complex128"}


def _hlo_result_types(hlo: str) -> list[tuple]:
    """(shape, dtype name) of each result, from the entry computation layout."""
    layout = re.search(r"entry_computation_layout=\{\((.*)\)->(.*)\}", hlo).group(2)
    return [(tuple(int(d) for d in dims.split(",") if d), _HLO_DTYPES[t])
            for t, dims in re.findall(r"(pred|[suf]\d+|bf16|c\d+)\[([\d,]*)\]", layout)]


def _traced(c: Case, args: list):
    """The case's jaxpr (for a collective: one member's, with the axis bound)."""
    f = _mini(c)
    if c.named:
        with extend_axis_env([("i", NAMED)]):
            return minijax.make_jaxpr(f)(*[a[0] for a in args])
    return minijax.make_jaxpr(f)(*args)


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.id)
def test_abstract_eval_matches_lowering_and_jax(c):
    args = _operands(c)
    jaxpr = _traced(c, args)
    assert c.prim in {e.primitive.name for e in jaxpr.jaxpr.eqns}, str(jaxpr)
    avals = jaxpr.out_avals
    want = [(a.shape, a.dtype.name) for a in avals]
    if c.named:
        comp = minijax.xla_computation(_mini(c), axis_env=[("i", NAMED)])(*[a[0] for a in args])
        assert _hlo_result_types(comp.as_hlo_text()) == want
    else:
        assert _hlo_result_types(minijax.jit(_mini(c)).lower(*args).as_text("hlo")) == want
    # what XLA's executables return (eagerly, each primitive runs its own executable)
    outs = _flat(_wrap(c, _mini(c))(*args))
    lead = (NAMED,) if c.named else ()
    assert [(np.asarray(o).shape, np.asarray(o).dtype.name) for o in outs] == \
        [(lead + s, d) for s, d in want]
    if not c.jax:
        return
    jouts = _flat(_wrap(c, _jax(c), jax)(*args))
    jtypes = jax.eval_shape(_wrap(c, _jax(c), jax), *args)
    for o, jo, a, jt in zip(outs, jouts, avals, _flat(jtypes)):
        assert a.weak_type == jt.weak_type, f"weak type: {a} vs jax's {jt}"
        _close(o, jo, c.tol, "values vs jax")


# ---- jvp ---------------------------------------------------------------------------------------

def _eps_tol(arrays: list) -> tuple[float, float]:
    """Finite-difference step and tolerance for operands and results of these dtypes."""
    low = any(np.dtype(a.dtype) == F16 for a in arrays)
    return (2 ** -4, 1e-1) if low else (2 ** -9, 2e-2)


def _shifted(args: list, pos: list, ts: list, step: float) -> list:
    out = list(args)
    for k, t in zip(pos, ts):
        out[k] = (args[k] + step * t).astype(args[k].dtype)
    return out


def _finite_differences(c: Case, args: list, pos: list, ts: list) -> tuple[list, list, float]:
    """(outputs, central differences along ts of the inexact ones, tolerance)."""
    f = _wrap(c, _mini(c))
    out = _flat(f(*args))
    eps, tol = _eps_tol([args[k] for k in pos] + out)
    plus = _flat(f(*_shifted(args, pos, ts, eps)))
    minus = _flat(f(*_shifted(args, pos, ts, -eps)))
    fd = [(np.asarray(p, np.complex128) - np.asarray(m, np.complex128)) / (2 * eps)
          if _inexact(p) else None for p, m in zip(plus, minus)]
    return out, fd, tol


@pytest.mark.parametrize("c", [c for c in DIFF_CASES if c.fwd], ids=lambda c: c.id)
def test_jvp_matches_finite_differences_and_jax(c):
    args = _operands(c)
    pos, run_jvp = _diff_args(c, args)
    ts = _tangents(c, args, pos)
    out, t_out = _wrap(c, run_jvp(MJ, minijax))(*args, *ts)
    for o, t in zip(_flat(out), _flat(t_out)):
        want = o.dtype if _inexact(o) else dtypes.float0
        assert np.asarray(t).dtype == want and np.shape(t) == np.shape(o)
    if c.smooth:
        _, fd, tol = _finite_differences(c, args, pos, ts)
        for t, d in zip(_flat(t_out), fd):
            if d is not None:
                _close(np.asarray(t).astype(np.complex128), d, tol, "jvp vs finite differences")
    # Where the function is smooth the finite differences pin the jvp down; elsewhere the
    # derivative is a convention (ties, zero derivatives): jax's.
    if c.jax and c.jax_ad and not c.smooth:
        _, jt_out = _wrap(c, run_jvp(JX, jax), jax)(*args, *ts)
        for t, jt in zip(_flat(t_out), _flat(jt_out)):
            _close(t, jt, c.tol, "jvp vs jax")


# ---- transpose: <vjp(ct), t> == <ct, jvp(t)> ----------------------------------------------------

def _run_vjp(c: Case, args: list, pos: list, ct_zero: dict):
    """h(*operands, *cts of inexact outputs) -> cotangents of the inexact operands."""
    n = len(args)

    def h(*xs):
        ops, cts = list(xs[:n]), iter(xs[n:])

        def g(*fargs):
            full = list(ops)
            for k, v in zip(pos, fargs):
                full[k] = v
            return c.fn(MJ, *full)
        out, pullback = minijax.vjp(g, *[ops[k] for k in pos])
        flat = _flat(out)
        ct = [ct_zero[i] if i in ct_zero else next(cts) for i in range(len(flat))]
        return pullback(type(out)(ct) if isinstance(out, (tuple, list)) else ct[0])
    return h


@pytest.mark.parametrize("c", [c for c in DIFF_CASES if c.rev], ids=lambda c: c.id)
def test_vjp_is_the_transpose_of_jvp(c):
    args = _operands(c)
    pos, run_jvp = _diff_args(c, args)
    ts = _tangents(c, args, pos)
    rel = 1e-4
    if c.fwd:
        out, t_out = _wrap(c, run_jvp(MJ, minijax))(*args, *ts)
        out, t_out = _flat(out), _flat(t_out)
    else:
        out, t_out, rel = _finite_differences(c, args, pos, ts)
    rng = _rng(c, "cotangent")
    cts = [draw(Arg(o.shape, o.dtype), rng) if _inexact(o) else None for o in out]
    # float0 cotangents of integer outputs (one member's, for a collective's case)
    ct_zero = {i: np.zeros(o.shape[1:] if c.named else o.shape, dtypes.float0)
               for i, o in enumerate(out) if not _inexact(o)}
    ct_in = _wrap(c, _run_vjp(c, args, pos, ct_zero))(*args, *[x for x in cts if x is not None])
    lhs = [_pair(g, t) for g, t in zip(ct_in, ts)]
    rhs = [_pair(ct, t) for ct, t in zip(cts, t_out) if ct is not None]
    for g, k in zip(ct_in, pos):
        assert np.asarray(g).dtype == args[k].dtype and np.shape(g) == args[k].shape
    got, want = sum(v for v, _ in lhs), sum(v for v, _ in rhs)
    scale = sum(s for _, s in lhs) + sum(s for _, s in rhs)
    assert abs(got - want) <= rel * scale + 1e-6, \
        f"<vjp(ct), t> = {got} but <ct, jvp(t)> = {want}"


# ---- batching --------------------------------------------------------------------------------

def _in_axes_variants(args: list, named: bool) -> list[tuple]:
    """Every operand batched at a leading or a middle axis, alternately, and the other way
    round; then (for several operands) every other operand batched and the rest not, and
    the other way round. So each operand is batched at axis 0 and at a middle axis, and
    unbatched beside batched operands."""
    ranks = [a.ndim - (1 if named else 0) for a in args]
    mid = [(r + 1) // 2 for r in ranks]
    even = [k % 2 == 0 for k in range(len(args))]
    out = [tuple(0 if e else m for e, m in zip(even, mid)),
           tuple(m if e else 0 for e, m in zip(even, mid))]
    if len(args) > 1:
        out += [tuple(m if e else None for e, m in zip(even, mid)),
                tuple(None if e else 0 for e in even)]
    return list(dict.fromkeys(out))


BATCH_CASES = [c for c in CASES if c.args]


@pytest.mark.parametrize("c", BATCH_CASES, ids=lambda c: c.id)
def test_vmap_matches_a_loop(c):
    examples = [_operands(c, f"example{k}") for k in range(B)]
    f = _wrap(c, _mini(c))
    lead = 1 if c.named else 0
    for in_axes in _in_axes_variants(examples[0], c.named):
        batched = [np.stack([ex[k] for ex in examples], ax + lead) if ax is not None
                   else examples[0][k] for k, ax in enumerate(in_axes)]
        got = _flat(_wrap(c, minijax.vmap(_mini(c), in_axes=in_axes))(*batched))
        for i, o in enumerate(got):
            # unbatched operands are example 0's: the loop uses them for every example
            want = [_flat(f(*[ex[k] if ax is not None else examples[0][k]
                              for k, ax in enumerate(in_axes)]))[i] for ex in examples]
            _close(o, np.stack(want, lead), 1e-5, f"vmap in_axes={in_axes} vs a loop")


# ---- jax's convention for complex values ----------------------------------------------------

@pytest.mark.parametrize("part", ["real", "imag"])
def test_grad_through_real_and_imag_matches_jax(part):
    """The issue's example, ``grad(lambda x: lax.real(x * (1 + 2j)).sum())``, for a real and
    a complex input (``tests/transforms/test_complex_ad.py`` checks more functions)."""
    def f(L, v):
        return getattr(L, part)(v * (1 + 2j)).sum()

    x = np.array([0.5, -1.0, 2.0], np.float32)
    z = (x + 1j * x[::-1]).astype(np.complex64)
    _close(minijax.grad(lambda v: f(lax, v))(x), jax.grad(lambda v: f(jax.lax, v))(x), 1e-6,
           "grad")
    _close(minijax.grad(lambda v: f(lax, v))(z), jax.grad(lambda v: f(jax.lax, v))(z), 1e-6,
           "grad of a complex input")


def test_rules_table_lists_every_primitive_and_its_rules():
    # `python -m minijax.lax.rules` prints what the listing tests above inspect.
    import subprocess
    import sys

    from minijax.lax import rules
    out = subprocess.run([sys.executable, "-m", "minijax.lax.rules"], capture_output=True,
                         text=True, timeout=240, check=True).stdout.splitlines()
    assert out[0].split()[:2] == ["primitive", "abstract"] and out[-1].startswith("total")
    printed = {line.split()[0]: line.split() for line in out[2:-1]}
    assert set(printed) == _names()
    for p in registered_primitives():
        row = dict(zip(["name"] + [attr for _, attr in rules.COLUMNS],
                       next(r for r in rules.rows() if r[0] == p.name)))
        for _, attr in rules.COLUMNS:
            assert row[attr].startswith("yes") == (getattr(p, attr) is not None), (p.name, attr)
    assert printed["add"][1:6] == ["yes", "yes", "+mosaic", "yes", "yes"] and \
        printed["add"][-1] == "minijax.lax.binary"
    assert printed["exp"][-2:] == ["yes", "minijax.lax.unary"]
