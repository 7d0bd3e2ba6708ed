"""dtype rules: canonicalization (the x64 flag), weak types and promotion.

The promotion rules are JAX's lattice: a result dtype is the least upper bound
of the inputs' dtypes in the graph below, where ``i*``, ``f*`` and ``c*`` are
the *weak* types of Python ``int``, ``float`` and ``complex`` scalars::

    b1 -> i* -> u8 -> u16 -> u32 -> u64 -> f*
          i* -> i8 -> i16 -> i32 -> i64 -> f*
                u8 -> i16, u16 -> i32, u32 -> i64
    f* -> bf16 -> f32,  f* -> f16 -> f32,  f32 -> f64 -> c128
    f* -> c*  -> c64 -> c128,  f32 -> c64

With 64-bit mode off (the default) every 64-bit result is narrowed to 32 bits.
"""

from __future__ import annotations

import functools
import warnings

import ml_dtypes
import numpy as np

from minijax.config import config
from minijax.core.traceback_util import user_stacklevel

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = np.dtype(ml_dtypes.bfloat16)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

# float0: the dtype of tangents of integer/boolean values (no data).
float0 = np.dtype([("float0", np.void, 0)])

SUPPORTED = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
             bfloat16, float16, float32, float64, complex64, complex128)

_NARROW = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}
_INEXACT = {dt: dt.kind in "fc" or dt == bfloat16 for dt in SUPPORTED}


def x64_enabled() -> bool:
    return config.enable_x64


_canon_cache: dict = {}


def canonicalize(dtype) -> np.dtype:
    """The dtype minijax actually uses for ``dtype`` under the current x64 flag."""
    try:
        return _canon_cache[(dtype, config.enable_x64)]
    except (KeyError, TypeError):
        pass
    out = _canonicalize(dtype)
    try:
        _canon_cache[(dtype, config.enable_x64)] = out
    except TypeError:
        pass
    return out


def _canonicalize(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in SUPPORTED and dt != float0:
        raise TypeError(f"minijax does not support dtype {dt}")
    if not config.enable_x64:
        return _NARROW.get(dt, dt)
    return dt


def check_user_dtype(dtype, fun_name: str) -> np.dtype:
    """``canonicalize(dtype)`` for a dtype the user asked ``fun_name`` for, with jax's
    warning (at the user's line) when 64-bit mode is off and it is narrowed to 32 bits.
    Python's ``int``, ``float`` and ``complex`` mean the default types: no warning."""
    x64 = config.enable_x64
    try:
        out, narrowed = _user_dtype_cache[(dtype, x64)]
    except (KeyError, TypeError):
        out = canonicalize(dtype)
        narrowed = (not x64 and dtype not in (int, float, complex)
                    and np.dtype(dtype) in _NARROW)
        try:
            _user_dtype_cache[(dtype, x64)] = (out, narrowed)
        except TypeError:
            pass
    if narrowed:
        warnings.warn(f"Explicitly requested dtype {np.dtype(dtype).name} requested in "
                      f"{fun_name} is not available, and will be truncated to dtype "
                      f"{out.name}. To enable more dtypes, set the minijax_enable_x64 "
                      f"configuration option or the MINIJAX_ENABLE_X64 shell environment "
                      f"variable.", UserWarning, stacklevel=user_stacklevel())
    return out


_user_dtype_cache: dict = {}  # (dtype, x64) -> (canonical dtype, whether narrowed)


def default_int() -> np.dtype:
    return int64 if config.enable_x64 else int32


def default_uint() -> np.dtype:
    return uint64 if config.enable_x64 else uint32


def default_float() -> np.dtype:
    return float64 if config.enable_x64 else float32


def default_complex() -> np.dtype:
    return complex128 if config.enable_x64 else complex64


def is_float(dt) -> bool:
    dt = np.dtype(dt)
    return dt.kind == "f" or dt == bfloat16


def is_complex(dt) -> bool:
    return np.dtype(dt).kind == "c"


def is_inexact(dt) -> bool:
    try:
        return _INEXACT[dt]  # the supported dtypes (asked on every traced jvp)
    except (KeyError, TypeError):
        return is_float(dt) or is_complex(dt)


def is_int(dt) -> bool:
    return np.dtype(dt).kind in "iu"


def is_signed(dt) -> bool:
    return np.dtype(dt).kind == "i"


def is_unsigned(dt) -> bool:
    return np.dtype(dt).kind == "u"


def is_bool(dt) -> bool:
    return np.dtype(dt) == bool_


def finfo(dt):
    return ml_dtypes.finfo(dt)


def iinfo(dt):
    return np.iinfo(dt)


# ---- promotion lattice -------------------------------------------------------

_I, _F, _C = "i*", "f*", "c*"  # weak-type nodes

_EDGES: dict = {
    bool_: [_I],
    _I: [uint8, int8],
    uint8: [int16, uint16],
    uint16: [int32, uint32],
    uint32: [int64, uint64],
    uint64: [_F],
    int8: [int16],
    int16: [int32],
    int32: [int64],
    int64: [_F],
    _F: [bfloat16, float16, _C],
    bfloat16: [float32],
    float16: [float32],
    float32: [float64, complex64],
    float64: [complex128],
    _C: [complex64],
    complex64: [complex128],
    complex128: [],
}


def _upper_bounds(node) -> frozenset:
    seen = {node}
    todo = [node]
    while todo:
        for nxt in _EDGES[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return frozenset(seen)


_UB = {n: _upper_bounds(n) for n in _EDGES}


def _node(dtype, weak: bool):
    dtype = np.dtype(dtype)
    if weak:
        if dtype.kind in "iu":
            return _I
        if is_float(dtype):
            return _F
        if dtype.kind == "c":
            return _C
    return dtype


@functools.lru_cache(maxsize=4096)
def _lub(nodes: tuple):
    common = frozenset.intersection(*(_UB[n] for n in nodes))
    # The least upper bound is the element of `common` below all others.
    for cand in common:
        if all(other in _UB[cand] for other in common):
            return cand
    raise TypeError(f"no common dtype for {nodes}")  # unreachable for this lattice


_result_cache: dict = {}


def result_type(*typed: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """Promote ``(dtype, weak_type)`` pairs; returns the ``(dtype, weak_type)`` result."""
    key = (typed, config.enable_x64, config.numpy_dtype_promotion)
    out = _result_cache.get(key)
    if out is None:
        ext = next((dt for dt, _ in typed if isinstance(dt, ExtendedDType)), None)
        if ext is not None:  # typed keys: only with their own dtype, as jax
            bad = next((dt for dt, _ in typed if dt != ext), None)
            if bad is not None:
                raise ValueError(f"dtype={ext if not isinstance(bad, ExtendedDType) else bad} "
                                 f"is not a valid dtype for JAX type promotion.")
            return ext, False
        if key[2] == "strict":
            _check_strict(typed)
        out = _result_cache[key] = _result_type(typed)
    return out


_KIND_ORDER = {"b": 0, "i": 1, "u": 1, "f": 2, "V": 2, "c": 3}  # V: bfloat16 & co.


def _check_strict(typed) -> None:
    """jax_numpy_dtype_promotion='strict': operands of two different (strong) dtypes
    do not promote, nor a weakly typed one into a lower kind (a Python float with an
    integer array); TypePromotionError as jax's."""
    strong = {dt for dt, weak in typed if not weak}
    ok = len(strong) <= 1
    if ok and strong:
        (target,) = strong
        rank = _KIND_ORDER.get(np.dtype(target).kind, 2)
        if is_float(target):
            rank = 2
        # (a weakly typed bool is just bool: jax's lattice has no weak bool)
        ok = all(_KIND_ORDER.get(np.dtype(dt).kind, 2) <= rank and
                 (rank > 0 or not weak or np.dtype(dt) == np.dtype(target))
                 for dt, weak in typed if weak)
    if not ok:
        from minijax.core.errors import TypePromotionError
        names = sorted(repr(str({"b": bool, "i": int, "u": int, "f": float, "c": complex}[
            np.dtype(dt).kind])) if weak else repr(np.dtype(dt).name) for dt, weak in typed)
        raise TypePromotionError(
            f"Input dtypes ({', '.join(dict.fromkeys(names))}) have no available implicit "
            f"dtype promotion path when jax_numpy_dtype_promotion=strict. Try explicitly "
            f"casting inputs to the desired output type, or set "
            f"jax_numpy_dtype_promotion=standard.")


def _result_type(typed) -> tuple[np.dtype, bool]:
    nodes = tuple(_node(dt, weak) for dt, weak in typed)
    if len(set(nodes)) == 1:
        n = nodes[0]
    else:
        n = _lub(nodes)
    # A weak result takes the default dtype of its kind.
    if n == _I:
        return default_int(), True
    if n == _F:
        return default_float(), True
    if n == _C:
        return default_complex(), True
    return canonicalize(n), False


def scalar_const(value, dtype, weak: bool = False):
    """``value`` as a rank-0 constant of ``dtype``: a Python scalar (so weakly typed) when
    ``weak`` and ``dtype`` is that Python scalar's dtype, as jax's rules build their
    constants (it keeps the weak type of what they compute); else a numpy scalar."""
    dtype = np.dtype(dtype)
    if weak:
        kind = dtype.kind
        py = (complex(value) if kind == "c" else float(value) if kind == "f"
              else int(value) if kind in "iu" else None)
        if py is not None and python_scalar_dtype(py) == dtype:
            return py
    return np.asarray(value, dtype)


def python_scalar_dtype(x) -> np.dtype:
    """The (weak) dtype of a Python scalar under the current x64 flag."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int()
    if isinstance(x, float):
        return default_float()
    if isinstance(x, complex):
        return default_complex()
    raise TypeError(f"not a Python scalar: {x!r}")


def dtype_of(x) -> np.dtype:
    """The canonical dtype of a value (array, scalar, or anything with ``.dtype``)."""
    if isinstance(x, (bool, int, float, complex)):
        return python_scalar_dtype(x)
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = np.asarray(x).dtype
    return canonicalize(dt)


def short_name(dt) -> str:
    """JAX's short dtype name used in jaxprs and error messages: f32, i32, bool, bf16...
    (an extended dtype's own name, e.g. ``key<fry>``)."""
    if isinstance(dt, ExtendedDType):
        return dt.name
    return _SHORT.get(np.dtype(dt), str(np.dtype(dt)))


_SHORT = {bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
          uint8: "u8", uint16: "u16", uint32: "u32", uint64: "u64",
          bfloat16: "bf16", float16: "f16", float32: "f32", float64: "f64",
          complex64: "c64", complex128: "c128", float0: "float0"}


class extended(np.generic):
    """The abstract scalar type of extended dtypes (those that are not NumPy's): use with
    ``issubdtype``, e.g. ``issubdtype(key.dtype, minijax.dtypes.extended)``."""


class prng_key(extended):
    """The abstract scalar type of the dtypes of typed PRNG key arrays
    (``minijax.random.key``): their dtype's ``type``, as in jax."""


class ExtendedDType:
    """The base class of extended dtype objects (jax's ``dtypes.ExtendedDType``): a
    library's dtype outside NumPy's names its scalar ``type`` (a subclass of
    ``extended``) and its ``name``. ``ShapedArray`` keeps such a dtype as it is
    (``typeof(minijax.random.key(0))`` is ``ShapedArray(key<fry>[])``)."""

    __slots__ = ()
    type: type = extended
    name: str = "extended"

    def __repr__(self) -> str:
        return self.name

    # The physical form, for the jnp functions that only move elements (concatenate,
    # stack, where): an array of this dtype is ``from_physical(data)`` over ``data`` of
    # shape ``shape + element_shape``.
    element_shape: tuple[int, ...] = ()

    def to_physical(self, x):
        raise TypeError(f"arrays of dtype {self.name} have no physical form in minijax")

    def from_physical(self, data):
        raise TypeError(f"arrays of dtype {self.name} have no physical form in minijax")


def extended_operands(name: str, operands):
    """``(dtype, physical operands)`` when any operand has an extended dtype (typed PRNG
    keys), all of one dtype as jax requires; None when none has."""
    found = [getattr(x, "dtype", None) for x in operands]
    ext = next((d for d in found if isinstance(d, ExtendedDType)), None)
    if ext is None:
        return None
    if any(d != ext for d in found):
        raise TypeError(f"{name}: cannot combine arrays of dtype {ext.name} with arrays of "
                        f"other dtypes ({', '.join(sorted({str(d) for d in found}))})")
    return ext, [ext.to_physical(x) for x in operands]


def aval_dtype(dtype):
    """``dtype`` as an aval holds it: a NumPy dtype, or an extended dtype as is."""
    return dtype if isinstance(dtype, ExtendedDType) else np.dtype(dtype)
