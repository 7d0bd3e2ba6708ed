"""minijax.experimental.sparse: sparse arrays (mirrors ``jax.experimental.sparse``).

``BCOO`` (coordinates and values) and ``BCSR`` (compressed rows) for arrays without
batch or dense dimensions: conversion from and to dense arrays, products with dense
arrays, transposes, sums, scaling, all under ``jit``, ``grad`` and ``vmap``;
``sparsify``, which runs a function written for dense arrays on sparse arguments;
and ``grad``/``value_and_grad``, which differentiate sparse arguments by their values.
"""

from minijax.experimental.sparse.ad import grad, value_and_grad
from minijax.experimental.sparse.bcoo import (BCOO, bcoo_dot_general, bcoo_fromdense,
                                              bcoo_reduce_sum, bcoo_sort_indices,
                                              bcoo_sum_duplicates, bcoo_todense, bcoo_transpose)
from minijax.experimental.sparse.bcsr import BCSR, bcsr_fromdense, bcsr_todense
from minijax.experimental.sparse.transform import sparsify

__all__ = ["BCOO", "BCSR", "bcoo_dot_general", "bcoo_fromdense", "bcoo_reduce_sum",
           "bcoo_sort_indices", "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose",
           "bcsr_fromdense", "bcsr_todense", "grad", "sparsify", "todense",
           "value_and_grad"]


def todense(arr):
    """The dense array of a ``BCOO``/``BCSR``; a dense array as it is."""
    if isinstance(arr, BCOO | BCSR):
        return arr.todense()
    return arr
