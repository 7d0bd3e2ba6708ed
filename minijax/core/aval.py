"""Abstract values: what a tracer knows about the value it stands for."""

from __future__ import annotations

import math
import operator

import numpy as np

from minijax.core import dtypes
from minijax.core.shape_poly import DimExpr


def canonicalize_dim(d, context: str = "") -> int:
    """A user-given dimension size as a Python int; TypeError unless it is an integer.

    Anything with ``__index__`` is accepted (Python and NumPy integers, 0-d integer
    arrays); floats, strings, None and traced values are not, as in jax:
    ``zeros(2.5)`` does not silently become ``zeros(2)``. The sign is not checked
    here: each caller knows what a negative size means (``reshape``'s -1) and
    rejects it where it is an error.
    """
    if type(d) is DimExpr:
        return d
    try:
        return operator.index(d)
    except TypeError:
        raise _invalid_shape_error((d,), context) from None


def canonicalize_shape(shape, context: str = "") -> tuple[int, ...]:
    """A user-given shape (an integer or a sequence of them) as a tuple of Python ints.

    Raises TypeError naming the shape when it is not a 1D sequence of concrete
    integers (see :func:`canonicalize_dim`).

    >>> canonicalize_shape((2, np.int64(3)))
    (2, 3)
    >>> canonicalize_shape((2.5,))
    Traceback (most recent call last):
    TypeError: Shapes must be 1D sequences of concrete values of integer type, got (2.5,).
    """
    if isinstance(shape, (int, np.integer, DimExpr)) or getattr(shape, "ndim", None) == 0:
        shape = (shape,)  # one size (a 0-d array or traced value too)
    if not isinstance(shape, (str, bytes)):  # iterable, but not a shape ("" would be ())
        try:
            return tuple(d if type(d) is DimExpr else operator.index(d) for d in shape)
        except TypeError:
            pass
    raise _invalid_shape_error(shape, context)


def check_nonnegative_shape(shape: tuple[int, ...], context: str) -> tuple[int, ...]:
    """``shape`` (a tuple of ints) if no dimension is negative; else TypeError naming it.

    ``ShapeDtypeStruct`` accepts any integers (as jax's does); this is the check where
    such a struct becomes an array type (``lower``, ``eval_shape``, callback results).

    >>> check_nonnegative_shape((2, -3), "argument")
    Traceback (most recent call last):
    TypeError: argument: shape must have every element be nonnegative, got (2, -3).
    """
    for d in shape:
        if type(d) is not DimExpr and d < 0:
            raise TypeError(f"{context}: shape must have every element be nonnegative, "
                            f"got {shape}.")
    return shape


def _invalid_shape_error(shape, context: str) -> TypeError:
    msg = f"Shapes must be 1D sequences of concrete values of integer type, got {shape!r}"
    msg += f" for the {context}." if context else "."
    from minijax.core.trace import Tracer  # trace imports this module
    if isinstance(shape, (tuple, list)) and any(isinstance(d, Tracer) for d in shape):
        msg += ("\nA traced value cannot be a size: if using `jit`, make it static "
                "(`static_argnums`) or apply `jit` to a smaller function.")
    return TypeError(msg)


class AbstractValue:
    """The base class of abstract values (jax.core.AbstractValue): ``ShapedArray``."""

    __slots__ = ()


class ShapedArray(AbstractValue):
    """An array's type: shape, dtype, and whether the dtype is *weak*.

    A weak type comes from a Python scalar; it gives way to the other operand's
    dtype in promotion (``x_f16 * 2.0`` stays float16).
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash", "_sharding")
    array_abstraction_level = 1

    def __init__(self, shape, dtype, weak_type: bool = False, sharding=None):
        # Fields are set once, through the slot descriptors: a ShapedArray is immutable
        # (avals are shared and interned, so changing one in place would change the type
        # of every array and tracer holding it).
        shape, dtype, weak_type = tuple(shape), dtypes.aval_dtype(dtype), bool(weak_type)
        _set_shape(self, shape)
        _set_dtype(self, dtype)
        _set_weak_type(self, weak_type)
        if sharding is not None and _normalize_sharding is not None:
            sharding = _normalize_sharding(sharding, len(shape))
        _set_sharding(self, sharding)
        _set_hash(self, hash((shape, dtype, weak_type)) if sharding is None
                  else hash((shape, dtype, weak_type, sharding)))

    def __setattr__(self, name, value):
        raise AttributeError(f"ShapedArray is immutable: cannot set {name!r}; "
                             f"use .update({name}=...) for a changed copy")

    def __delattr__(self, name):
        raise AttributeError(f"ShapedArray is immutable: cannot delete {name!r}")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def sharding(self):
        """The layout in the type (sharding in types): for a value laid out over the
        *explicit* axes of a mesh, ``NamedSharding(abstract_mesh, spec)`` naming those
        axes; otherwise jax's sharding of a value outside any mesh,
        ``NamedSharding(AbstractMesh((), ()), P(None, ...))`` (one ``None`` per
        dimension)."""
        if self._sharding is not None:
            return self._sharding
        if _unsharded is None:
            raise AttributeError("ShapedArray.sharding needs minijax.runtime.sharding")
        return _unsharded(len(self.shape))

    def update(self, shape=None, dtype=None, weak_type=None, sharding=None) -> ShapedArray:
        """A copy with the given fields changed. The sharding is kept when the shape
        is (and dropped with a new shape unless given)."""
        if sharding is None:
            sharding = self._sharding if shape is None else None
        elif no_sharding_constraint(sharding):
            sharding = None
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type, sharding)

    def strip_weak_type(self) -> ShapedArray:
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False,
                                                           self._sharding)

    def to_tangent_aval(self) -> ShapedArray:
        """The type of this value's tangents (jax's ``to_tangent_aval``): itself for
        floating and complex dtypes; float0 of the same shape (strong) otherwise."""
        if dtypes.is_inexact(self.dtype):
            return self
        return ShapedArray(self.shape, dtypes.float0, False)

    def __eq__(self, other) -> bool:
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type
                and self._sharding == other._sharding)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"

    def str_short(self, short_dtypes: bool = False) -> str:
        """``f32[3,4]`` as in jaxprs; ``f32[8@x,4]`` for a dimension split over the
        explicit mesh axis ``x`` (as jax writes sharded types)."""
        sh = self._sharding
        if sh is None:
            return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"
        dims = []
        for d, n in enumerate(self.shape):
            axes = sh.spec.axes_of(d)
            if not axes:
                dims.append(str(n))
            elif len(axes) == 1:
                dims.append(f"{n}@{axes[0]}")
            else:
                dims.append(f"{n}@({','.join(axes)})")
        return f"{dtypes.short_name(self.dtype)}[{','.join(dims)}]"

    __str__ = str_short


# The unsharded NamedSharding of an ndim-d value; set by minijax.runtime.sharding (the
# sharding classes live in the runtime layer, above this one).
_unsharded = None
# (sharding, ndim) -> the sharding an aval keeps (None when it names no explicit axis):
# set by minijax.runtime.sharding.
_normalize_sharding = None


def no_sharding_constraint(sharding) -> bool:
    """Whether an ``out_sharding=`` argument asks for nothing: None, or the sharding of a
    value outside any mesh (over the empty abstract mesh, as ``typeof(x).sharding``)."""
    return sharding is None or getattr(getattr(sharding, "mesh", None), "empty", False) is True


def set_unsharded_factory(fn, normalize=None) -> None:
    global _unsharded, _normalize_sharding
    _unsharded = fn
    if normalize is not None:
        _normalize_sharding = normalize


_set_shape = ShapedArray.shape.__set__
_set_dtype = ShapedArray.dtype.__set__
_set_weak_type = ShapedArray.weak_type.__set__
_set_hash = ShapedArray._hash.__set__
_set_sharding = ShapedArray._sharding.__set__


class ShapeDtypeStruct:
    """A shape and dtype standing in for an argument, for ``lower`` and ``eval_shape``."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, *, weak_type: bool = False, sharding=None):
        self.shape = canonicalize_shape(shape, "shape of ShapeDtypeStruct")
        self.dtype = dtypes.aval_dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @classmethod
    def like(cls, x) -> ShapeDtypeStruct:
        """The struct of ``x``: an array, tracer, scalar or another struct.

        >>> ShapeDtypeStruct.like(np.ones((2, 3), np.float32))
        ShapeDtypeStruct(shape=(2, 3), dtype=float32)
        """
        if isinstance(x, ShapeDtypeStruct):
            return cls(x.shape, x.dtype, weak_type=x.weak_type, sharding=x.sharding)
        from minijax.core.trace import get_aval  # trace imports this module
        aval = get_aval(x)
        return cls(aval.shape, aval.dtype, weak_type=aval.weak_type)

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))
