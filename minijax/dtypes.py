"""``minijax.dtypes``: dtype utilities with jax.dtypes' names.

>>> minijax.dtypes.canonicalize_dtype(np.float64)   # x64 off
dtype('float32')
>>> minijax.dtypes.result_type(1.0, np.float16, return_weak_type_flag=True)
(dtype('float16'), False)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from minijax.core import dtypes as _dt
from minijax.core.dtypes import (ExtendedDType, extended,  # noqa: F401 (re-export)
                                 float0, prng_key)
from minijax.core.errors import TypePromotionError
from minijax.numpy._dtypes_api import _typed, finfo, iinfo
from minijax.numpy._dtypes_api import issubdtype as _issubdtype
from minijax.random._keys import KeyTy

# the scalar type, as jax.dtypes.bfloat16 (``isinstance(x, bfloat16)`` works; it compares
# equal to the dtype)
bfloat16 = _dt.bfloat16.type

__all__ = ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo",
           "float0", "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type",
           "scalar_type_of"]


def supports_inf(dtype) -> bool:
    """Whether ``dtype`` can hold infinities (float8 variants without them cannot)."""
    dt = np.dtype(dtype)
    if dt.kind not in "fc":
        return False
    with np.errstate(all="ignore"):
        return bool(np.isinf(np.array(np.inf).astype(dt)))


def issubdtype(a: Any, b: Any) -> bool:
    """``numpy.issubdtype`` extended to minijax: bfloat16 and the other ml_dtypes are
    floating/integer, and key dtypes are ``prng_key`` and ``extended``."""
    if isinstance(a, KeyTy) or a in (extended, prng_key):
        a_types = {prng_key, extended} if a is not extended else {extended}
        return b in a_types or (isinstance(b, KeyTy) and a == b)
    if b in (extended, prng_key) or isinstance(b, KeyTy):
        return False
    return _issubdtype(a, b)


def canonicalize_dtype(dtype: Any, allow_extended_dtype: bool = False):
    """The dtype minijax uses for ``dtype`` under the current 64-bit setting
    (``float64`` is ``float32`` with x64 off)."""
    if isinstance(dtype, KeyTy):
        if allow_extended_dtype:
            return dtype
        raise ValueError(f"Internal: canonicalize_dtype called on extended dtype {dtype} "
                         f"with allow_extended_dtype=False")
    return _dt.canonicalize(np.dtype(dtype))


def result_type(*args: Any, return_weak_type_flag: bool = False):
    """The dtype of an operation combining ``args`` (arrays, scalars, dtypes), with
    jax's promotion lattice; with ``return_weak_type_flag``, ``(dtype, weak_type)``."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    dt, weak = _dt.result_type(*(_typed(x) for x in args))
    return (dt, weak) if return_weak_type_flag else dt


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (bool, int, float or complex) of ``x``'s dtype."""
    dt = np.dtype(_typed(x)[0])
    for kind, typ in ((np.bool_, bool), (np.integer, int), (np.floating, float),
                      (np.complexfloating, complex)):
        if _issubdtype(dt, kind):
            return typ
    raise TypeError(f"Invalid scalar value {x!r}")


def itemsize_bits(dtype: Any) -> int:
    """The size of one element of ``dtype`` in bits (4 for int4, 8 for bool)."""
    dt = np.dtype(dtype)
    if _issubdtype(dt, np.integer):
        return int(iinfo(dt).bits)
    if _issubdtype(dt, np.floating):
        return int(finfo(dt).bits)
    return dt.itemsize * 8
