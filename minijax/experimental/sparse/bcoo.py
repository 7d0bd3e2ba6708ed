"""BCOO: a sparse array as coordinates and values (mirrors
``jax.experimental.sparse.BCOO`` for unbatched arrays with no dense dimensions).

A ``BCOO`` of shape ``shape`` holds ``data`` (``(nse,)``: the stored values) and
``indices`` (``(nse, ndim)``, integer: the coordinates of each value). Entries may
repeat (their values add up) and may be padding: a padding entry has value 0 and
coordinates equal to ``shape`` (out of bounds), so it is dropped when densified, as
in jax. Every operation here is written with ordinary ``minijax.numpy`` gathers and
scatter-adds, so ``jit``, ``grad`` (with respect to ``data`` and dense operands) and
``vmap`` over dense operands or ``data`` apply as to any function.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from minijax import numpy as jnp
from minijax._pytree import register_pytree_node

__all__ = ["BCOO", "bcoo_dot_general", "bcoo_fromdense", "bcoo_reduce_sum",
           "bcoo_sort_indices", "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose"]


def _unsupported_layout(n_batch: int, n_dense: int) -> None:
    if n_batch or n_dense:
        raise NotImplementedError(
            f"minijax's BCOO has no batch or dense dimensions (got n_batch={n_batch}, "
            f"n_dense={n_dense}); use n_batch=0 and n_dense=0, or vmap over a BCOO")


class BCOO:
    """A sparse array in coordinate format: ``BCOO((data, indices), shape=shape)``."""

    __array_priority__ = 100  # numpy operands defer to our operators

    def __init__(self, args: tuple, *, shape: Sequence[int], indices_sorted: bool = False,
                 unique_indices: bool = False):
        data, indices = args
        self.data = jnp.asarray(data)
        self.indices = jnp.asarray(indices)
        self.shape = tuple(operator.index(d) for d in shape)
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)
        if self.indices.ndim != 2 or self.data.ndim != 1:
            _unsupported_layout(max(self.indices.ndim - 2, 0), max(self.data.ndim - 1, 0))
        if self.indices.shape != (self.data.shape[0], len(self.shape)):
            raise ValueError(f"BCOO: indices of shape {self.indices.shape} do not match data "
                             f"of shape {self.data.shape} and shape {self.shape}")

    @classmethod
    def _from_parts(cls, data, indices, shape, indices_sorted=False, unique_indices=False):
        out = object.__new__(cls)
        out.data, out.indices, out.shape = data, indices, tuple(shape)
        out.indices_sorted, out.unique_indices = indices_sorted, unique_indices
        return out

    # ---- description ---------------------------------------------------------------------
    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nse(self) -> int:
        return self.indices.shape[-2]

    @property
    def n_batch(self) -> int:
        return self.indices.ndim - 2

    @property
    def n_sparse(self) -> int:
        return self.indices.shape[-1]

    @property
    def n_dense(self) -> int:
        return self.data.ndim - 1 - self.n_batch

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        dims = ", ".join(map(str, self.shape))
        try:
            dtype = np.dtype(self.dtype).name
        except TypeError:
            dtype = str(self.dtype)
        return f"{type(self).__name__}({dtype}[{dims}], nse={self.nse})"

    # ---- conversions ---------------------------------------------------------------------
    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        """The BCOO of ``mat``'s nonzeros in row-major order (``nse`` entries: the count of
        nonzeros by default, which needs a concrete ``mat``; extra entries are padding)."""
        return bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                              index_dtype=index_dtype)

    def todense(self):
        return bcoo_todense(self)

    def sort_indices(self) -> BCOO:
        """The same array with its entries in row-major order of their coordinates."""
        return bcoo_sort_indices(self)

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCOO:
        """The same array with repeated coordinates summed into one sorted entry each (and,
        with ``remove_zeros``, entries whose value is 0 dropped). ``nse``: the entries
        of the result (padded or cut); by default the count needed, which needs concrete
        values."""
        return bcoo_sum_duplicates(self._zeros_to_padding() if remove_zeros else self, nse)

    def _zeros_to_padding(self) -> BCOO:
        fill = jnp.array(self.shape, self.indices.dtype)
        indices = jnp.where((self.data == 0)[:, None], fill[None, :], self.indices)
        return BCOO._from_parts(self.data, indices, self.shape)

    def astype(self, dtype):
        return self._with_data(self.data.astype(dtype))

    def _with_data(self, data):
        return BCOO._from_parts(data, self.indices, self.shape, self.indices_sorted,
                                self.unique_indices)

    # ---- operations ----------------------------------------------------------------------
    def transpose(self, axes: Sequence[int] | None = None) -> BCOO:
        perm = tuple(range(self.ndim))[::-1] if axes is None else tuple(axes)
        return bcoo_transpose(self, permutation=perm)

    @property
    def T(self) -> BCOO:
        return self.transpose()

    def sum(self, axis=None, keepdims=False):
        """The sum over ``axis`` (all axes: a dense scalar; otherwise a BCOO)."""
        if keepdims:
            raise NotImplementedError("BCOO.sum(keepdims=True) is not implemented")
        if axis is None:
            return jnp.sum(self.data)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        return bcoo_reduce_sum(self, axes=axes)

    def __neg__(self):
        return self._with_data(-self.data)

    def __pos__(self):
        return self

    def __mul__(self, other):
        return _multiply(self, other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, BCOO) or np.ndim(other) != 0:
            raise NotImplementedError("BCOO division is only by scalars")
        return self._with_data(self.data / other)

    def __add__(self, other):
        return _add(self, other)

    __radd__ = __add__

    def __sub__(self, other):
        return _add(self, -other)

    def __rsub__(self, other):
        return _add(-self, other)

    def __matmul__(self, other):
        if isinstance(other, BCOO):
            raise NotImplementedError("minijax: a product of two BCOO arrays is not "
                                      "implemented; densify one of them")
        other = jnp.asarray(other)
        if self.ndim > 2 or other.ndim > 2 or 0 in (self.ndim, other.ndim):
            raise NotImplementedError("BCOO @ is implemented for 1-D and 2-D operands")
        rc = 0
        return bcoo_dot_general(self, other,
                                dimension_numbers=(((self.ndim - 1,), (rc,)), ((), ())))

    def __rmatmul__(self, other):
        other = jnp.asarray(other)
        if self.ndim > 2 or other.ndim > 2 or 0 in (self.ndim, other.ndim):
            raise NotImplementedError("BCOO @ is implemented for 1-D and 2-D operands")
        return bcoo_dot_general(other, self,
                                dimension_numbers=(((other.ndim - 1,), (0,)), ((), ())))


def _flatten(m: BCOO):
    return (m.data, m.indices), (m.shape, m.indices_sorted, m.unique_indices)


def _unflatten(aux, children):
    shape, indices_sorted, unique_indices = aux
    return BCOO._from_parts(children[0], children[1], shape, indices_sorted, unique_indices)


register_pytree_node(BCOO, _flatten, _unflatten)


# ---- conversions -------------------------------------------------------------------------

def _columns(indices, dims) -> tuple:
    return tuple(indices[:, d] for d in dims)


def bcoo_todense(mat: BCOO):
    """The dense array of ``mat`` (repeated entries add up; padding is dropped)."""
    out = jnp.zeros(mat.shape, mat.dtype)
    if mat.ndim == 0:
        return out + jnp.sum(mat.data)
    return out.at[_columns(mat.indices, range(mat.ndim))].add(mat.data, mode="drop")


def bcoo_fromdense(mat, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype=np.int32) -> BCOO:
    """``BCOO.fromdense``: the nonzeros of ``mat`` in row-major order."""
    _unsupported_layout(n_batch, n_dense)
    mat = jnp.asarray(mat)
    if nse is None:
        from minijax.core.errors import ConcretizationTypeError
        try:
            nse = int(np.count_nonzero(np.asarray(mat)))
        except (ConcretizationTypeError, TypeError) as e:
            raise ConcretizationTypeError(
                "the nse argument of bcoo_fromdense: to use BCOO.fromdense() in "
                "traced/compiled code, pass a concrete value to the nse (number of "
                "stored elements) argument") from e
    nse = operator.index(nse)
    if mat.ndim == 0:
        raise ValueError("BCOO.fromdense needs an array of at least one dimension")
    coords = jnp.nonzero(mat, size=nse, fill_value=mat.shape)
    data = mat.at[coords].get(mode="fill", fill_value=0)
    indices = jnp.stack(coords, axis=1).astype(index_dtype)
    return BCOO._from_parts(data, indices, mat.shape, True, True)


# ---- structural operations ---------------------------------------------------------------

def _canonical_padding(mat: BCOO):
    """``mat.indices`` with every entry that has an out-of-bounds coordinate moved to
    ``shape`` (so that padding entries are equal, and sort last); and ``shape``."""
    fill = jnp.array(mat.shape, mat.indices.dtype)[None, :]
    outside = jnp.any(mat.indices >= fill, axis=1, keepdims=True)
    return jnp.where(outside, fill, mat.indices), fill


def bcoo_sort_indices(mat: BCOO) -> BCOO:
    """``mat`` with its entries sorted by coordinates (row-major), duplicates kept."""
    if mat.ndim == 0 or mat.nse == 0:
        return mat
    indices, _ = _canonical_padding(mat)
    order = jnp.lexsort(tuple(indices[:, d] for d in reversed(range(mat.ndim))))
    return BCOO._from_parts(mat.data[order], indices[order], mat.shape, True,
                            mat.unique_indices)


def bcoo_sum_duplicates(mat: BCOO, nse: int | None = None) -> BCOO:
    """``mat`` with one entry per distinct coordinate (values summed), sorted; ``nse``
    entries (default: as many as needed, which needs concrete indices)."""
    if mat.ndim == 0 or mat.nse == 0:
        return mat
    indices, fill = _canonical_padding(mat)
    uniq, where = jnp.unique(indices, axis=0, return_inverse=True, size=mat.nse,
                             fill_value=fill[0])
    where = where.reshape(-1)
    if nse is None:
        from minijax.core.errors import ConcretizationTypeError
        try:
            rows = np.asarray(uniq)
            nse = int(len(np.unique(rows, axis=0)) - np.any(np.all(rows == np.asarray(fill),
                                                                     axis=1)))
        except (ConcretizationTypeError, TypeError) as e:
            raise ConcretizationTypeError(
                "the nse argument of bcoo_sum_duplicates: pass a concrete nse to use it in "
                "traced/compiled code") from e
    nse = operator.index(nse)
    if nse <= mat.nse:
        uniq = uniq[:nse]
    else:
        uniq = jnp.concatenate([uniq, jnp.broadcast_to(fill, (nse - mat.nse, mat.ndim))])
    data = jnp.zeros((nse,), mat.dtype).at[where].add(mat.data, mode="drop")
    return BCOO._from_parts(data, uniq, mat.shape, True, True)


def bcoo_transpose(mat: BCOO, *, permutation: Sequence[int]) -> BCOO:
    perm = tuple(operator.index(p) for p in permutation)
    if sorted(perm) != list(range(mat.ndim)):
        raise ValueError(f"transpose permutation {perm} is not a permutation of the "
                         f"dimensions of an array of shape {mat.shape}")
    indices = mat.indices[:, np.array(perm, dtype=np.int32)] if perm else mat.indices
    identity = perm == tuple(range(mat.ndim))
    return BCOO._from_parts(mat.data, indices, tuple(mat.shape[p] for p in perm),
                            mat.indices_sorted and identity, mat.unique_indices)


def bcoo_reduce_sum(mat: BCOO, *, axes: Sequence[int]) -> BCOO:
    """The sum over ``axes``: the remaining coordinates of each entry (a BCOO)."""
    axes = {operator.index(a) % mat.ndim if mat.ndim else a for a in axes}
    keep = [d for d in range(mat.ndim) if d not in axes]
    indices = mat.indices[:, np.array(keep, dtype=np.int32)]  # padding stays out of bounds
    return BCOO._from_parts(mat.data, indices, tuple(mat.shape[d] for d in keep))


def _gather(dense, indices, dims):
    """``dense`` at each entry's coordinates (0 for padding)."""
    return dense.at[_columns(indices, dims)].get(mode="fill", fill_value=0)


def _multiply(sp: BCOO, other):
    if isinstance(other, BCOO):
        raise NotImplementedError("minijax: elementwise products of two BCOO arrays are "
                                  "not implemented; densify one of them")
    other = jnp.asarray(other)
    if other.ndim == 0:
        return sp._with_data(sp.data * other)
    full = jnp.broadcast_to(other, sp.shape) if other.shape != sp.shape else other
    if full.shape != sp.shape:
        raise ValueError(f"cannot multiply a BCOO of shape {sp.shape} by an array of shape "
                         f"{other.shape} (the result would not be sparse)")
    return sp._with_data(sp.data * _gather(full, sp.indices, range(sp.ndim)))


def _add(a, b):
    if isinstance(a, BCOO) and isinstance(b, BCOO):
        if a.shape != b.shape:
            raise ValueError(f"cannot add BCOO arrays of shapes {a.shape} and {b.shape}")
        dtype = jnp.result_type(a.dtype, b.dtype)
        data = jnp.concatenate([a.data.astype(dtype), b.data.astype(dtype)])
        indices = jnp.concatenate([a.indices, b.indices.astype(a.indices.dtype)])
        return BCOO._from_parts(data, indices, a.shape)
    raise NotImplementedError("minijax: adding a dense array to a BCOO is not implemented "
                              "(the result would be dense); use .todense()")


# ---- products ----------------------------------------------------------------------------

def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
    """``lax.dot_general`` with one BCOO operand and one dense one (a dense result).

    Each stored entry of the sparse operand picks the slice of the dense operand at its
    contracting (and batch) coordinates, scales it, and adds it into the result at its
    free (and batch) coordinates.
    """
    del precision, out_sharding
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = (tuple(operator.index(d) for d in x) for x in (lc, rc, lb, rb))
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        raise NotImplementedError("minijax: bcoo_dot_general of two BCOO operands is not "
                                  "implemented; densify one of them")
    if isinstance(lhs, BCOO):
        return _sparse_dense(lhs, jnp.asarray(rhs), lc, rc, lb, rb, preferred_element_type)
    if isinstance(rhs, BCOO):
        lhs = jnp.asarray(lhs)
        out = _sparse_dense(rhs, lhs, rc, lc, rb, lb, preferred_element_type)
        # out is (batch, rhs free, lhs free): put lhs free before rhs free
        nb = len(lb)
        n_rfree = rhs.ndim - len(rc) - nb
        n_lfree = lhs.ndim - len(lc) - nb
        perm = (*range(nb), *range(nb + n_rfree, nb + n_rfree + n_lfree),
                *range(nb, nb + n_rfree))
        return jnp.transpose(out, perm)
    from minijax import lax
    return lax.dot_general(lhs, rhs, dimension_numbers,
                           preferred_element_type=preferred_element_type)


def _sparse_dense(sp: BCOO, dense, sc, dc, sb, db, preferred_element_type):
    if sb:  # as in jax: batch dimensions must be the BCOO's own (there are none here)
        raise NotImplementedError(
            f"bcoo_dot_general batch dimensions must be among the batch dimensions in the "
            f"sparse representation.\ngot lhs_batch={tuple(sb)}, n_batch={sp.n_batch}")
    if len(sc) != len(dc) or len(sb) != len(db):
        raise TypeError("dot_general requires equal numbers of contracting and of batch "
                        "dimensions on the two sides")
    for a, b in (*zip(sc, dc, strict=True), *zip(sb, db, strict=True)):
        if sp.shape[a] != dense.shape[b]:
            raise TypeError(f"dot_general requires contracting and batch dimensions of "
                            f"equal size, got {sp.shape} and {dense.shape}")
    s_free = [d for d in range(sp.ndim) if d not in sc and d not in sb]
    d_free = [d for d in range(dense.ndim) if d not in dc and d not in db]
    dense_t = jnp.transpose(dense, (*db, *dc, *d_free))
    picked = _gather(dense_t, sp.indices, (*sb, *sc))  # (nse, *dense free)
    dtype = preferred_element_type or jnp.result_type(sp.dtype, dense.dtype)
    terms = (sp.data.astype(dtype).reshape((-1,) + (1,) * len(d_free)) *
             picked.astype(dtype))
    out_dims = (*sb, *s_free)
    out_shape = (*(sp.shape[d] for d in out_dims), *(dense.shape[d] for d in d_free))
    if not out_dims:
        return jnp.sum(terms, axis=0)
    out = jnp.zeros(out_shape, dtype)
    return out.at[_columns(sp.indices, out_dims)].add(terms, mode="drop")
