"""The result types and argument helpers shared by ``minijax.numpy.linalg``."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.numpy._promote import promote_dtypes_inexact
from minijax.numpy._reductions import _check_arraylike


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class EigResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    Q: object
    R: object


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object




# ---- helpers ---------------------------------------------------------------------------------

def promote_inexact_args(name: str, *args):
    """Check array-likes (lists are a TypeError, as in jax) and promote them to a common
    inexact dtype."""
    for a in args:
        _check_arraylike(name, a)
    return promote_dtypes_inexact(*args)


def _shape(x) -> tuple:
    return get_aval(x).shape


def _ndim(x) -> int:
    return get_aval(x).ndim


def _dtype(x) -> np.dtype:
    return get_aval(x).dtype


def _sum_last(x):
    return lax.reduce_sum(x, (_ndim(x) - 1,))


def _count_last(pred):
    """Number of true entries along the last axis, as int32."""
    return _sum_last(lax.convert_element_type(pred, np.int32))


def _full(shape, value, dtype):
    return lax.broadcast_in_dim(np.asarray(value, dtype), tuple(shape), ())


def _select(pred, x, y):
    """``lax.select`` that also works under ``vmap`` when the operands are rank 0 per
    example: they are given a trailing axis of size 1 for the select (vmap of a
    select whose rank-0 case is unmapped while the others are mapped is not handled
    by select_n's batching rule)."""
    if _shape(x) != ():
        return lax.select(pred, x, y)
    lift = [lax.reshape(v, (1,)) for v in (pred, x, y)]
    return lax.reshape(lax.select(*lift), ())


def _real(x):
    return lax.real(x) if dtypes.is_complex(_dtype(x)) else x
