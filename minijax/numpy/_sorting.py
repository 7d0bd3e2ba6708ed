"""sort and argsort of minijax.numpy (jax.numpy semantics).

NaNs sort to the end, ``-0.0`` and ``0.0`` are equal; ``argsort`` sorts
(value, index) pairs, so a stable sort keeps equal values in index order.
"""

from __future__ import annotations

from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.numpy._reductions import arraylike, canonicalize_axis


def _prepare(name: str, a, axis, kind, order):
    a = arraylike(name, a)
    if kind is not None:
        raise TypeError(f"'kind' argument to {name} is not supported. Use stable=True or "
                        f"stable=False to specify sort stability.")
    if order is not None:
        raise TypeError(f"'order' argument to {name} is not supported.")
    aval = get_aval(a)
    if axis is None:
        return lax.reshape(a, (aval.size,)), 0
    if aval.ndim == 0:
        raise ValueError(f"{name} of a 0-d array needs axis=None")
    return a, canonicalize_axis(axis, aval.ndim)


def sort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True,
         descending: bool = False):
    """A sorted copy of ``a`` along ``axis`` (flattened when ``axis`` is None)."""
    arr, dim = _prepare("sort", a, axis, kind, order)
    result = lax.sort(arr, dimension=dim, is_stable=stable)
    return lax.rev(result, (dim,)) if descending else result


def argsort(a, axis: int | None = -1, *, kind=None, order=None, stable: bool = True,
            descending: bool = False, dtype=None):
    """Indices that sort ``a`` along ``axis`` (of the default integer dtype unless ``dtype``)."""
    arr, dim = _prepare("argsort", a, axis, kind, order)
    idx_dtype = dtypes.default_int() if dtype is None else dtypes.canonicalize(dtype)
    shape = get_aval(arr).shape
    iota = lax.broadcasted_iota(idx_dtype, shape, dim)
    if descending and stable:
        # Reverse first so that, once the result is reversed, equal values keep index order.
        arr, iota = lax.rev(arr, (dim,)), lax.rev(iota, (dim,))
    _, perm = lax.sort((arr, iota), dimension=dim, is_stable=stable, num_keys=1)
    return lax.rev(perm, (dim,)) if descending else perm
