"""BCSR: a sparse matrix in compressed-row form (mirrors
``jax.experimental.sparse.BCSR`` for 2-D arrays without batch or dense dimensions).

``data`` (``(nse,)``) holds the stored values row by row, ``indices`` (``(nse,)``)
their columns, and ``indptr`` (``(rows + 1,)``) where each row's entries start:
row ``r`` is ``data[indptr[r]:indptr[r + 1]]``. Entries after ``indptr[-1]`` are
padding (value 0, column out of bounds). Products go through the equivalent BCOO.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from minijax import numpy as jnp
from minijax.experimental.sparse.bcoo import BCOO, _unsupported_layout, bcoo_fromdense
from minijax._pytree import register_pytree_node

__all__ = ["BCSR", "bcsr_fromdense", "bcsr_todense"]


class BCSR:
    """A sparse matrix in compressed-row format: ``BCSR((data, indices, indptr), shape=)``."""

    __array_priority__ = 100

    def __init__(self, args: tuple, *, shape: Sequence[int], indices_sorted: bool = False,
                 unique_indices: bool = False):
        data, indices, indptr = args
        self.data, self.indices, self.indptr = map(jnp.asarray, (data, indices, indptr))
        self.shape = tuple(operator.index(d) for d in shape)
        self.indices_sorted, self.unique_indices = bool(indices_sorted), bool(unique_indices)
        if len(self.shape) != 2 or self.data.ndim != 1 or self.indices.ndim != 1:
            raise NotImplementedError("minijax's BCSR is 2-D, without batch or dense "
                                      "dimensions")
        if self.indptr.shape != (self.shape[0] + 1,):
            raise ValueError(f"BCSR: indptr of shape {self.indptr.shape} for a matrix with "
                             f"{self.shape[0]} rows")

    @classmethod
    def _from_parts(cls, data, indices, indptr, shape, indices_sorted, unique_indices):
        out = object.__new__(cls)
        out.data, out.indices, out.indptr, out.shape = data, indices, indptr, tuple(shape)
        out.indices_sorted, out.unique_indices = indices_sorted, unique_indices
        return out

    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    nse = property(lambda self: self.indices.shape[-1])
    n_batch = property(lambda self: self.indices.ndim - 1)
    n_sparse = property(lambda self: 2)
    n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)

    def __repr__(self) -> str:
        dims = ", ".join(map(str, self.shape))
        return f"BCSR({np.dtype(self.dtype).name}[{dims}], nse={self.nse})"

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        return bcsr_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                              index_dtype=index_dtype)

    @classmethod
    def from_bcoo(cls, arr: BCOO) -> BCSR:
        """The BCSR of a 2-D BCOO whose entries are sorted by row (as ``fromdense`` makes)."""
        if arr.ndim != 2:
            raise ValueError(f"BCSR.from_bcoo needs a 2-D BCOO, got shape {arr.shape}")
        rows = arr.indices[:, 0]
        bounds = jnp.arange(arr.shape[0] + 1, dtype=rows.dtype)
        indptr = jnp.searchsorted(rows, bounds, side="left").astype(arr.indices.dtype)
        return cls._from_parts(arr.data, arr.indices[:, 1], indptr, arr.shape,
                               arr.indices_sorted, arr.unique_indices)

    def to_bcoo(self) -> BCOO:
        positions = jnp.arange(self.nse, dtype=self.indptr.dtype)
        rows = jnp.searchsorted(self.indptr, positions, side="right") - 1
        rows = rows.astype(self.indices.dtype)
        return BCOO._from_parts(self.data, jnp.stack([rows, self.indices], axis=1),
                                self.shape, self.indices_sorted, self.unique_indices)

    def todense(self):
        return bcsr_todense(self)

    def transpose(self, *args, **kwargs):
        raise NotImplementedError("Tranpose is not implemented.")

    @property
    def T(self):
        return self.transpose()

    def __neg__(self):
        return BCSR._from_parts(-self.data, self.indices, self.indptr, self.shape,
                                self.indices_sorted, self.unique_indices)

    def __mul__(self, other):
        if np.ndim(other) != 0:
            raise NotImplementedError("BCSR is multiplied by scalars only")
        return BCSR._from_parts(self.data * other, self.indices, self.indptr, self.shape,
                                self.indices_sorted, self.unique_indices)

    __rmul__ = __mul__

    def __matmul__(self, other):
        return self.to_bcoo() @ other

    def __rmatmul__(self, other):
        return other @ self.to_bcoo()


register_pytree_node(
    BCSR, lambda m: ((m.data, m.indices, m.indptr), (m.shape, m.indices_sorted,
                                                     m.unique_indices)),
    lambda aux, c: BCSR._from_parts(c[0], c[1], c[2], *aux))


def bcsr_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32) -> BCSR:
    """``BCSR.fromdense``: the nonzeros of the 2-D ``mat`` row by row."""
    _unsupported_layout(n_batch, n_dense)
    mat = jnp.asarray(mat)
    if mat.ndim != 2:
        raise ValueError(f"BCSR.fromdense needs a 2-D array, got shape {mat.shape}")
    return BCSR.from_bcoo(bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype))


def bcsr_todense(mat: BCSR):
    return mat.to_bcoo().todense()
