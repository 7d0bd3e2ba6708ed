"""dtype objects and dtype queries of minijax.numpy: the scalar types (``jnp.float32``),
``finfo``/``iinfo``, ``promote_types``, ``result_type``, ``can_cast``, ``issubdtype``,
``isdtype``, and the array-introspection helpers ``shape``/``ndim``/``size``,
``isscalar``, ``iscomplexobj``/``isrealobj``.

As in jax, a scalar type is not NumPy's: calling it makes a 0-d minijax array (also of a
traced value, which is how jitted code casts: ``jnp.float32(x)``), while it still works
anywhere a dtype is expected (``np.dtype(jnp.float32)``, ``x.dtype == jnp.float32``) and
``isinstance(np.float32(1), jnp.float32)`` holds.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from minijax.config import config
from minijax.core import dtypes
from minijax.core.trace import get_aval, is_python_scalar


class _ScalarMeta(type):
    """The metaclass of minijax.numpy's scalar types (``jnp.float32``, ...)."""

    dtype: np.dtype

    @property
    def __numpy_dtype__(cls) -> np.dtype:  # NumPy's dtype protocol (2.4+)
        return cls.dtype

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other) -> bool:
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other) -> bool:
        return not cls == other

    def __call__(cls, x):
        from minijax.numpy._creation import asarray
        return asarray(x, dtype=cls.dtype.type)

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, cls.dtype.type)


def _scalar_type(np_type) -> _ScalarMeta:
    t = _ScalarMeta(np.dtype(np_type).name, (object,), {"dtype": np.dtype(np_type)})
    t.__module__ = "minijax.numpy"
    t.__doc__ = (f"The {t.dtype.name} scalar type: ``{t.__name__}(x)`` is ``x`` as a 0-d "
                 f"(or n-d) minijax array of dtype {t.dtype.name}.")
    return t


bool_ = _scalar_type(np.bool_)
int8, int16, int32, int64 = (_scalar_type(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (_scalar_type(t)
                                 for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (_scalar_type(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = _scalar_type(ml_dtypes.bfloat16)
complex64, complex128 = _scalar_type(np.complex64), _scalar_type(np.complex128)
# Narrow and 8-bit types: they exist (as in jax) but minijax's arrays do not support them;
# making an array of one raises TypeError.
int1, int2, int4 = (_scalar_type(getattr(ml_dtypes, n)) for n in ("int1", "int2", "int4"))
uint1, uint2, uint4 = (_scalar_type(getattr(ml_dtypes, n)) for n in ("uint1", "uint2", "uint4"))
float4_e2m1fn = _scalar_type(ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _scalar_type(ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type(ml_dtypes.float6_e3m2fn)
float8_e3m4 = _scalar_type(ml_dtypes.float8_e3m4)
float8_e4m3 = _scalar_type(ml_dtypes.float8_e4m3)
float8_e4m3b11fnuz = _scalar_type(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = _scalar_type(ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = _scalar_type(ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = _scalar_type(ml_dtypes.float8_e5m2)
float8_e5m2fnuz = _scalar_type(ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = _scalar_type(ml_dtypes.float8_e8m0fnu)
single, double = float32, float64
csingle, cdouble = complex64, complex128
int_, uint, float_, complex_ = int64, uint64, float64, complex128

# NumPy's abstract scalar types, for issubdtype (``jnp.issubdtype(x.dtype, jnp.floating)``).
generic, number, inexact, floating = np.generic, np.number, np.inexact, np.floating
complexfloating, integer = np.complexfloating, np.integer
signedinteger, unsignedinteger = np.signedinteger, np.unsignedinteger
character, flexible, object_ = np.character, np.flexible, np.object_

finfo = ml_dtypes.finfo
iinfo = ml_dtypes.iinfo
can_cast = np.can_cast

_CUSTOM_FLOATS = frozenset(np.dtype(t) for t in (
    ml_dtypes.bfloat16, ml_dtypes.float4_e2m1fn, ml_dtypes.float6_e2m3fn,
    ml_dtypes.float6_e3m2fn, ml_dtypes.float8_e3m4, ml_dtypes.float8_e4m3,
    ml_dtypes.float8_e4m3b11fnuz, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz,
    ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e8m0fnu))
_CUSTOM_INTS = frozenset(np.dtype(getattr(ml_dtypes, n)) for n in ("int1", "int2", "int4"))
_CUSTOM_UINTS = frozenset(np.dtype(getattr(ml_dtypes, n)) for n in ("uint1", "uint2", "uint4"))


# ---- dtype queries ------------------------------------------------------------------------------

_ABSTRACT = frozenset((np.generic, np.number, np.inexact, np.floating, np.complexfloating,
                       np.integer, np.signedinteger, np.unsignedinteger, np.character,
                       np.flexible))


def _as_type(x):
    if isinstance(x, _ScalarMeta):
        return x.dtype.type
    if isinstance(x, np.dtype):
        return x.type
    t = getattr(x, "type", None)  # an extended dtype (a key's): its abstract scalar type
    if isinstance(t, type) and issubclass(t, dtypes.extended):
        return t
    return x


def issubdtype(arg1, arg2) -> bool:
    """Whether ``arg1`` is a type lower than or equal to ``arg2`` in NumPy's type hierarchy.

    Unlike ``np.issubdtype``, bfloat16 and the other ml_dtypes floats count as
    ``floating`` (and int4 and friends as ``signedinteger``/``unsignedinteger``).

    >>> issubdtype(bfloat16, floating)
    True
    """
    t1, t2 = _as_type(arg1), _as_type(arg2)
    if t2 in _ABSTRACT and t1 not in _ABSTRACT:
        try:
            dt = np.dtype(t1)
        except TypeError:
            dt = None
        if dt in _CUSTOM_FLOATS:
            return t2 in (np.floating, np.inexact, np.number, np.generic)
        if dt in _CUSTOM_INTS or dt in _CUSTOM_UINTS:
            kind = np.signedinteger if dt in _CUSTOM_INTS else np.unsignedinteger
            return t2 in (kind, np.integer, np.number, np.generic)
    return bool(np.issubdtype(t1, t2))


_KINDS = {
    "bool": {dtypes.bool_},
    "signed integer": {dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64} | _CUSTOM_INTS,
    "unsigned integer": {dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64}
    | _CUSTOM_UINTS,
    "real floating": {dtypes.float16, dtypes.float32, dtypes.float64} | _CUSTOM_FLOATS,
    "complex floating": {dtypes.complex64, dtypes.complex128},
}
_KINDS["integral"] = _KINDS["signed integer"] | _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] | _KINDS["real floating"] | _KINDS["complex floating"]


def isdtype(dtype, kind) -> bool:
    """The Array API's dtype test: whether ``dtype`` is of ``kind``, a kind name
    (``'bool'``, ``'signed integer'``, ``'unsigned integer'``, ``'integral'``,
    ``'real floating'``, ``'complex floating'``, ``'numeric'``), a dtype, or a tuple of them.
    """
    dt = np.dtype(dtype)
    options: set = set()
    for k in kind if isinstance(kind, tuple) else (kind,):
        if isinstance(k, str) and k in _KINDS:
            options |= _KINDS[k]
            continue
        try:
            options.add(np.dtype(k))
        except TypeError as e:
            if isinstance(k, str):
                raise ValueError(f"Unrecognized kind={k!r}: expected one of "
                                 f"{list(_KINDS)}, or a compatible input for jnp.dtype()") from e
            raise TypeError(f"Expected kind to be a dtype, string, or tuple; got {k!r}") from e
    return dt in options


# The promotion lattice without canonicalization, as promote_types sees it: with 64-bit
# mode off, uint32 and int32 meet at int32 so that no 64-bit type is formed from 32-bit
# ones (jax's rule).
_X32_EDGES = {**dtypes._EDGES, dtypes.uint32: [dtypes.int32, dtypes.uint64]}
_X32_UB = {}
for _n in _X32_EDGES:
    _seen, _todo = {_n}, [_n]
    while _todo:
        for _m in _X32_EDGES[_todo.pop()]:
            if _m not in _seen:
                _seen.add(_m)
                _todo.append(_m)
    _X32_UB[_n] = frozenset(_seen)
_WEAK_OF = {int: dtypes._I, float: dtypes._F, complex: dtypes._C}
_STRONG_OF = {dtypes._I: dtypes.int64, dtypes._F: dtypes.float64, dtypes._C: dtypes.complex128}


def _lattice_node(x):
    if x in _WEAK_OF and isinstance(x, type):
        return _WEAK_OF[x]
    dt = np.dtype(x)
    if dt not in dtypes.SUPPORTED:
        raise TypeError(f"{dt} is not a valid dtype for minijax type promotion")
    return dt


def promote_types(a, b) -> np.dtype:
    """The type both ``a`` and ``b`` promote to, by jax's promotion lattice.

    The result is not canonicalized for 64-bit mode (``promote_types(float64, float32)``
    is float64); Python's ``int``, ``float`` and ``complex`` are weak types.
    """
    nodes = {_lattice_node(a), _lattice_node(b)}
    ub = dtypes._UB if config.enable_x64 else _X32_UB
    common = frozenset.intersection(*(ub[n] for n in nodes))
    lub = (common & nodes) or {c for c in common if common <= ub[c]}
    (out,) = lub
    return np.dtype(_STRONG_OF.get(out, out))


def _typed(x) -> tuple[np.dtype, bool]:
    """(canonical dtype, weak type) of one argument of result_type."""
    if x is None:
        return dtypes.default_float(), False
    if isinstance(x, type) and x in (int, float, complex):
        return dtypes.python_scalar_dtype(x(0)), True
    if x is bool:
        return dtypes.bool_, False
    if isinstance(getattr(x, "dtype", None), dtypes.ExtendedDType) and hasattr(x, "shape"):
        return x.dtype, False  # a typed key array (a bare key dtype is refused, as jax)
    if is_python_scalar(x) or hasattr(x, "aval") or isinstance(x, (np.ndarray, np.generic)):
        return get_aval(x).dtype, get_aval(x).weak_type
    if hasattr(x, "shape") and isinstance(getattr(x, "dtype", None), np.dtype):
        # a duck-typed array such as a ShapeDtypeStruct: its dtype, strong (as jax's)
        return dtypes.canonicalize(x.dtype), False
    try:
        dt = np.dtype(x)
    except TypeError:
        raise TypeError(f"Cannot determine dtype of {x!r}") from None
    return dtypes.canonicalize(dt), False


def result_type(*args) -> np.dtype:
    """The dtype of an operation on ``args`` (arrays, scalars or dtypes), with jax's
    promotion and the 64-bit flag applied; Python scalars and types are weak."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    return dtypes.result_type(*(_typed(x) for x in args))[0]


# ---- array introspection -----------------------------------------------------------------------

def shape(a) -> tuple[int, ...]:
    """The shape of an array (or scalar)."""
    if hasattr(a, "shape"):
        return tuple(a.shape)
    return np.shape(a)


def ndim(a) -> int:
    """The number of dimensions of an array (or scalar)."""
    if hasattr(a, "ndim"):
        return a.ndim
    return np.ndim(a)


def size(a, axis=None) -> int:
    """The number of elements of an array, or along ``axis`` (an int or a tuple)."""
    if axis is None and hasattr(a, "size"):
        return a.size
    s = shape(a)
    if axis is None:
        return int(np.prod(s, dtype=np.int64))
    from minijax.numpy._reductions import _reduction_axes
    return int(np.prod([s[i] for i in _reduction_axes(len(s), axis)], dtype=np.int64))


def isscalar(element) -> bool:
    """Whether ``element`` is a scalar: a Python/NumPy scalar or a 0-d array (0-d arrays
    count, unlike ``np.isscalar``, so that the answer does not change under jit)."""
    if np.isscalar(element):
        return True
    if isinstance(element, np.ndarray) or hasattr(element, "aval"):
        return element.ndim == 0
    return False


def iscomplexobj(x) -> bool:
    """Whether ``x``'s dtype is complex (regardless of its values)."""
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if x is None or isinstance(x, (bool, int, float, str, np.generic)):
        return False
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = np.asarray(x).dtype
    return dtypes.is_complex(dt)


def isrealobj(x) -> bool:
    """Whether ``x``'s dtype is not complex."""
    return not iscomplexobj(x)


iterable = np.iterable
ComplexWarning = np.exceptions.ComplexWarning
euler_gamma = float(np.euler_gamma)
printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
