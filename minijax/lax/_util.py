"""Helpers shared by primitive files: type checks and standard rule makers."""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray, no_sharding_constraint
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.trace import Primitive, trace_to_jaxpr
from minijax.transforms.ad import defjvp_linear
from minijax.transforms.batching import def_elementwise_batch


def const_like(x, value):
    """``value`` as a rank-0 constant of ``x``'s dtype for a rule's arithmetic (binary
    primitives broadcast it); weakly typed when ``x`` is a weakly typed scalar, as in jax,
    so weak types survive jvp rules (``grad(tan)(0.3)`` is weak)."""
    from minijax.core.trace import get_aval
    aval = get_aval(x)
    return dtypes.scalar_const(value, aval.dtype, aval.weak_type and not aval.shape)


def type_error(prim: str, msg: str, *avals: ShapedArray) -> TypeError:
    """A TypeError naming the primitive and its operand types."""
    types = ", ".join(a.str_short() for a in avals)
    return TypeError(f"{prim}: {msg} (operand types: {types})")


def static_ints(values, what: str) -> tuple[int, ...]:
    """``values`` (dimension numbers, paddings, ...) as a tuple of Python ints.

    Raises TypeError naming ``what`` and the values when one is not an integer
    (``int(2.5)`` would silently truncate).
    """
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of integers, got {values!r}") from None


def static_dims(values, what: str) -> tuple:
    """As ``static_ints``, also keeping symbolic dimensions (shape polymorphism)."""
    from minijax.core.shape_poly import DimExpr
    try:
        return tuple(v if type(v) is DimExpr else operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of integers, got {values!r}") from None


def static_int(value, what: str) -> int:
    """``value`` as a Python int; TypeError naming ``what`` when it is not an integer."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {value!r}") from None


def check_nonnegative_shape(prim: str, what: str, shape: tuple, *avals: ShapedArray) -> None:
    """TypeError (as jax's) when a shape given to ``prim`` has a negative dimension."""
    if any(d < 0 for d in shape):
        raise TypeError(f"{prim} {what} must have every element be nonnegative, got {shape}."
                        + (f" (operand types: {', '.join(a.str_short() for a in avals)})"
                           if avals else ""))


_KIND_NAMES = {"f": "floating-point", "c": "complex", "i": "signed integer",
               "u": "unsigned integer", "b": "boolean"}


def _kind(dt: np.dtype) -> str:
    if dt == dtypes.bool_:
        return "b"
    if dt == dtypes.bfloat16:
        return "f"
    return dt.kind


def check_dtype(prim: str, aval: ShapedArray, kinds: str) -> None:
    """Raise unless ``aval.dtype``'s kind is one of ``kinds`` (letters of 'fciub')."""
    if _kind(aval.dtype) not in kinds:
        wanted = " or ".join(_KIND_NAMES[k] for k in kinds)
        raise type_error(prim, f"expected {wanted} operands, got {aval.dtype.name}", aval)


def broadcast_shapes_scalar(prim: str, avals: Sequence[ShapedArray]) -> tuple:
    """Operand shapes must be equal, except rank-0 operands which broadcast."""
    shape = None
    for a in avals:
        if a.shape == ():
            continue
        if shape is None:
            shape = a.shape
        elif a.shape != shape:
            raise type_error(prim, "operands must have equal shapes (or be scalars)", *avals)
    return () if shape is None else shape


def same_dtypes(prim: str, avals: Sequence[ShapedArray]) -> np.dtype:
    dt = avals[0].dtype
    for a in avals[1:]:
        if a.dtype != dt:
            raise type_error(prim, "operands must have the same dtype", *avals)
    return dt


def all_weak(avals: Sequence[ShapedArray]) -> bool:
    return all(a.weak_type for a in avals)


def unary_primitive(name: str, hlo_op: str, kinds: str = "fc") -> Primitive:
    """An elementwise one-operand primitive lowered to ``hlo_op``."""
    p = Primitive(name)

    def abstract_eval(x, **params):
        check_dtype(name, x, kinds)
        return x

    def lowering(ctx, x, **params):
        return ctx.op(hlo_op, [x], ctx.avals_out[0])

    p.def_abstract_eval(abstract_eval)
    p.def_lowering(lowering)
    def_elementwise_batch(p)
    return p


def broadcast_operand(ctx, x, shape: tuple):
    """Broadcast a rank-0 value to ``shape`` (for ops that allow scalar operands)."""
    if x.aval.shape == shape:
        return x
    return ctx.broadcast_in_dim(x, ShapedArray(shape, x.aval.dtype), ())


def binary_primitive(name: str, hlo_op: str, kinds: str = "fciu") -> Primitive:
    """An elementwise two-operand primitive (same dtypes; scalars broadcast)."""
    p = Primitive(name)

    def abstract_eval(x, y, **params):
        check_dtype(name, x, kinds)
        dt = same_dtypes(name, [x, y])
        shape = broadcast_shapes_scalar(name, [x, y])
        return ShapedArray(shape, dt, x.weak_type and y.weak_type)

    def lowering(ctx, x, y, **params):
        out = ctx.avals_out[0]
        shape = out.shape
        if x.aval.shape != shape:
            x = broadcast_operand(ctx, x, shape)
        if y.aval.shape != shape:
            y = broadcast_operand(ctx, y, shape)
        return ctx.op(hlo_op, [x, y], out)

    p.def_abstract_eval(abstract_eval)
    p.def_lowering(lowering)
    def_elementwise_batch(p)
    return p


def identity_primitive(name: str) -> Primitive:
    """A primitive that returns its operand: lowered to nothing, linear and its own
    transpose, batched where its operand is (``copy``, ``stage``)."""
    p = Primitive(name)
    p.def_abstract_eval(lambda x: x)
    p.def_lowering(lambda ctx, x: x)
    defjvp_linear(p)
    p.def_transpose(lambda ct, x: [p.bind(ct)])
    def_elementwise_batch(p)
    return p


def check_out_sharding(what: str, out_sharding) -> None:
    """jax's ``out_sharding=`` keyword: only None is supported (NotImplementedError)."""
    if not no_sharding_constraint(out_sharding):
        raise NotImplementedError(f"{what}: out_sharding is not supported in minijax; use "
                                  f"lax.with_sharding_constraint on the result")


def lower_fun(ctx, fun, *args) -> list:
    """Lower ``fun`` (lax operations on tracers; returns a list) inline on ``args``: a
    lowering rule written as lax code."""
    avals = [a.aval for a in args]
    jaxpr, consts, _ = trace_to_jaxpr(lambda *xs: (list(fun(*xs)), None), avals)
    return ctx.lower_jaxpr(ClosedJaxpr(jaxpr, consts), args)
