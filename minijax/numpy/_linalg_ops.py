"""Products of minijax.numpy: matmul, dot, vdot, inner, outer, tensordot, einsum.

All of them reduce to ``lax.dot_general`` (plus transposes, reshapes and
reductions). As in jax.numpy, operands keep their dtypes and the result dtype
(the promoted dtype of the operands) is passed as ``preferred_element_type``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from minijax.core.sharding_rules import aval_out_sharding, spec_entries, with_entries
from minijax import lax
from minijax.core import dtypes
from minijax.core.errors import IncompatibleShapesError
from minijax.core.trace import get_aval
from minijax.numpy._promote import (
    broadcast_shapes,
    broadcast_to_shape,
    promote_dtypes,
    result_type_of,
)
from minijax.numpy._reductions import arraylike, canonicalize_axis
from minijax.stages.eager import fused  # one jitted program when called eagerly


def _result_dtype(preferred_element_type, *args) -> tuple[np.dtype, bool]:
    if preferred_element_type is None:
        return result_type_of(*args)
    return dtypes.canonicalize(preferred_element_type), False


def _as_array(x, dtype=None):
    """A Python scalar as a 0-d numpy array of its (canonical) dtype, else ``x``."""
    if isinstance(x, (bool, int, float, complex)):
        return np.asarray(x, dtype=dtype or get_aval(x).dtype)
    return x


def _dot_general(a, b, dims, precision, dtype: np.dtype, weak: bool, out_sharding=None):
    """``dims`` (int tuples built here) and ``dtype`` (canonical) need no checking:
    without ``precision`` the primitive is bound directly, as lax.dot_general would."""
    if out_sharding is not None:
        out = lax.dot_general(_as_array(a), _as_array(b), dims, precision=precision,
                              preferred_element_type=dtype, out_sharding=out_sharding)
    elif precision is None:
        out = lax.dot_general_p.bind(_as_array(a), _as_array(b), dimension_numbers=dims,
                                     precision=None, preferred_element_type=dtype)
    else:
        out = lax.dot_general(_as_array(a), _as_array(b), dims, precision=precision,
                              preferred_element_type=dtype)
    aval = out.aval
    if aval.dtype == dtype and aval.weak_type == weak:
        return out
    return lax.convert_element_type(out, dtype, weak)


def _conj(x):
    """Complex conjugate (identity for real dtypes)."""
    dt = get_aval(x).dtype
    if not dtypes.is_complex(dt):
        return x
    # x - 2i*imag(x): the conjugate, spelled with the primitives lax has.
    im = lax.convert_element_type(lax.imag(x), dt)
    return lax.sub(x, lax.mul(im, np.asarray(2j, dt)))


@fused(max_args=2)
def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """NumPy's ``dot``: scalar product, vector/matrix products, and for N-D arrays a sum
    over the last axis of ``a`` and the second-to-last of ``b``."""
    a = arraylike("dot", a)
    b = arraylike("dot", b)
    dtype, weak = _result_dtype(preferred_element_type, a, b)
    a_ndim, b_ndim = get_aval(a).ndim, get_aval(b).ndim
    if a_ndim == 0 or b_ndim == 0:
        contract = ((), ())
    elif b_ndim == 1:
        contract = ((a_ndim - 1,), (0,))
    else:
        contract = ((a_ndim - 1,), (b_ndim - 2,))
    return _dot_general(a, b, (contract, ((), ())), precision, dtype, weak, out_sharding)


@fused(max_args=2)
def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """NumPy's ``matmul`` (the ``@`` operator): batched matrix product; leading (batch)
    dimensions broadcast, 1-D operands act as a row/column vector."""
    a = arraylike("matmul", a)
    b = arraylike("matmul", b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    for i, s in enumerate((a_shape, b_shape)):
        if len(s) < 1:
            raise ValueError(f"matmul input operand {i} must have ndim at least 1, "
                             f"but it has ndim {len(s)}")
    dtype, weak = _result_dtype(preferred_element_type, a, b)
    a_mat, b_mat = len(a_shape) > 1, len(b_shape) > 1
    k_a = a_shape[-1]
    k_b = b_shape[-2] if b_mat else b_shape[0]
    if k_a != k_b:
        raise IncompatibleShapesError(f"matmul: contracting dimensions differ: operand shapes "
                                      f"{a_shape} and {b_shape} (size {k_a} vs {k_b})")
    a_batch, b_batch = a_shape[:-2], b_shape[:-2]
    if a_batch and b_batch:
        # Both batched: broadcast the batch dims, then a batched dot_general.
        try:
            batch = broadcast_shapes(a_batch, b_batch)
        except ValueError:
            raise ValueError(f"matmul: incompatible batch dimensions of operand shapes "
                             f"{a_shape} and {b_shape}") from None
        a = broadcast_to_shape(a, batch + a_shape[-2:])
        b = broadcast_to_shape(b, batch + b_shape[-2:])
        nb = len(batch)
        dims = (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
        return _dot_general(a, b, dims, precision, dtype, weak, out_sharding)
    rc = len(b_shape) - 2 if b_mat else 0
    moved = bool(b_batch) and a_mat
    out = _dot_general(a, b, (((len(a_shape) - 1,), (rc,)), ((), ())), precision, dtype, weak,
                       None if moved else out_sharding)
    if moved:
        # Output is (M, *b_batch, N); move M after the batch dims.
        nb = len(b_batch)
        out = lax.transpose(out, tuple(range(1, nb + 1)) + (0, nb + 1))
        if out_sharding is not None:
            from minijax.sharding import reshard
            out = reshard(out, out_sharding)
    return out


@fused(max_args=2)
def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays, conjugating ``a`` when complex."""
    a = arraylike("vdot", a)
    b = arraylike("vdot", b)
    a = _conj(a)
    a = lax.reshape(a, (get_aval(a).size,))
    b = lax.reshape(b, (get_aval(b).size,))
    return dot(a, b, precision=precision, preferred_element_type=preferred_element_type)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None, out_sharding=None):
    """Sum over the last ``axes`` axes of ``a`` and the first of ``b``, or over the given
    pair of axis lists ``(a_axes, b_axes)``."""
    a = arraylike("tensordot", a)
    b = arraylike("tensordot", b)
    a_ndim, b_ndim = get_aval(a).ndim, get_aval(b).ndim
    dtype, weak = _result_dtype(preferred_element_type, a, b)
    if type(axes) is int:
        if axes > min(a_ndim, b_ndim) or axes < 0:
            raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                            f"({get_aval(a).shape} and {get_aval(b).shape})")
        contract = (tuple(range(a_ndim - axes, a_ndim)), tuple(range(axes)))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax1, ax2 = axes
        if isinstance(ax1, int) and isinstance(ax2, int):
            contract = ((canonicalize_axis(ax1, a_ndim),), (canonicalize_axis(ax2, b_ndim),))
        elif isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list)):
            if len(ax1) != len(ax2):
                raise TypeError(f"tensordot requires axes lists to have equal length, got "
                                f"{ax1} and {ax2}.")
            contract = (tuple(canonicalize_axis(i, a_ndim) for i in ax1),
                        tuple(canonicalize_axis(i, b_ndim) for i in ax2))
        else:
            raise TypeError(f"tensordot requires both axes lists to be either ints, tuples or "
                            f"lists, got {ax1} and {ax2}")
    else:
        raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair "
                        "of lists/tuples of ints.")
    return _dot_general(a, b, (contract, ((), ())), precision, dtype, weak, out_sharding)


@fused(max_args=2)
def inner(a, b, *, precision=None, preferred_element_type=None):
    """Sum over the last axes of ``a`` and ``b`` (a product when either is a scalar)."""
    a = arraylike("inner", a)
    b = arraylike("inner", b)
    if get_aval(a).ndim == 0 or get_aval(b).ndim == 0:
        return dot(a, b, precision=precision, preferred_element_type=preferred_element_type)
    return tensordot(a, b, (-1, -1), precision=precision,
                     preferred_element_type=preferred_element_type)


@fused(max_args=2)
def outer(a, b, out=None):
    """Outer product of the flattened arrays: shape ``(a.size, b.size)``."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
    a = arraylike("outer", a)
    b = arraylike("outer", b)
    a, b = promote_dtypes(a, b)
    a = lax.reshape(a, (get_aval(a).size, 1))
    b = lax.reshape(b, (1, get_aval(b).size))
    from minijax.numpy._ufuncs import multiply
    return multiply(a, b)


# ---- einsum --------------------------------------------------------------------------------


def _parse_einsum(subscripts: str, shapes: Sequence[tuple]) -> tuple[list[list[str]], list[str]]:
    """Input label lists and the output label list, with '...' expanded to named labels."""
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        lhs, out_spec = spec.split("->")
        explicit = True
    else:
        lhs, out_spec, explicit = spec, "", False
    inputs = lhs.split(",")
    if len(inputs) != len(shapes):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(inputs)} operands but "
                         f"{len(shapes)} were given")
    used = set(spec) - set(".,->")  # any other character is a label (digits too, as jax)
    # Names for the dims covered by '...': characters no subscript uses.
    spare = (chr(c) for c in range(0x100, 0x10000) if chr(c) not in used)
    n_ell = 0
    for term, shape in zip(inputs, shapes):
        if "..." in term:
            n_ell = max(n_ell, len(shape) - (len(term) - 3))
    ell = [next(spare) for _ in range(n_ell)]

    def expand(term: str, ndim: int | None) -> list[str]:
        if term.count("...") > 1 or (term.replace("...", "").count(".")):
            raise ValueError(f"einsum: invalid ellipsis in {term!r}")
        if "..." not in term:
            return list(term)
        pre, post = term.split("...")
        k = n_ell if ndim is None else ndim - len(pre) - len(post)
        if k < 0:
            raise ValueError(f"einsum: operand has too few dimensions for {term!r}")
        return list(pre) + ell[len(ell) - k:] + list(post)

    in_labels = []
    for term, shape in zip(inputs, shapes):
        labels = expand(term, len(shape))
        if len(labels) != len(shape):
            raise ValueError(f"einsum: subscripts {term!r} do not match an operand of rank "
                             f"{len(shape)} (shape {shape})")
        in_labels.append(labels)
    if explicit:
        out_labels = expand(out_spec, None)
        if len(set(out_labels)) != len(out_labels):
            raise ValueError(f"einsum: output subscript {out_spec!r} repeats a label")
        all_in = {lab for labels in in_labels for lab in labels}
        for lab in out_labels:
            if lab not in all_in:
                raise ValueError(f"einsum: output label {lab!r} does not appear in the inputs")
    else:
        counts: dict[str, int] = {}
        for labels in in_labels:
            for lab in labels:
                counts[lab] = counts.get(lab, 0) + 1
        out_labels = ell + sorted(lab for lab, c in counts.items() if c == 1 and lab not in ell)
    return in_labels, out_labels


def _take_diagonals(x, labels: list[str]):
    """Collapse repeated labels of one operand to their diagonal."""
    while len(set(labels)) != len(labels):
        shape = get_aval(x).shape
        seen: dict[str, int] = {}
        for q, lab in enumerate(labels):
            if lab in seen:
                p = seen[lab]
                break
            seen[lab] = q
        if shape[p] != shape[q]:
            raise ValueError(f"einsum: repeated label {lab!r} has sizes {shape[p]} and "
                             f"{shape[q]}")
        mask = lax.eq(lax.broadcasted_iota(dtypes.int32, shape, p),
                      lax.broadcasted_iota(dtypes.int32, shape, q))
        zero = np.zeros((), get_aval(x).dtype)
        x = lax.select(mask, x, lax.broadcast_in_dim(zero, shape, ()))
        x = lax.reduce_sum(x, (q,)) if get_aval(x).dtype != dtypes.bool_ else \
            lax.reduce_or(x, (q,))
        labels = labels[:q] + labels[q + 1:]
    return x, labels


def _sum_labels(x, labels: list[str], drop: set[str]):
    axes = tuple(i for i, lab in enumerate(labels) if lab in drop)
    if not axes:
        return x, labels
    reduce = lax.reduce_or if get_aval(x).dtype == dtypes.bool_ else lax.reduce_sum
    return reduce(x, axes), [lab for lab in labels if lab not in drop]


def einsum(subscripts: str, *operands, out=None, optimize=None, precision=None,
           preferred_element_type=None, out_sharding=None, _dot_general=None):
    """Einstein summation: ``einsum('ij,jk->ik', a, b)``; supports ``...`` and the implicit
    output form. ``optimize`` is ignored (operands are contracted left to right).
    ``_dot_general`` (as jax's) replaces ``lax.dot_general`` for the contractions: it is
    called as ``_dot_general(lhs, rhs, dimension_numbers, precision,
    preferred_element_type=...)`` (and ``out_sharding=`` when one is asked for)."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
    if not isinstance(subscripts, str):
        raise TypeError("einsum: only the string form of subscripts is supported")
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    operands = [_as_array(arraylike("einsum", x)) for x in operands]
    dtype, weak = _result_dtype(preferred_element_type, *operands)
    operands = [lax.convert_element_type(x, dtype) for x in operands]
    in_labels, out_labels = _parse_einsum(subscripts, [get_aval(x).shape for x in operands])

    # Sizes of every label; size-1 dims broadcast against the others.
    sizes: dict[str, int] = {}
    for x, labels in zip(operands, in_labels):
        for lab, d in zip(labels, get_aval(x).shape):
            if sizes.get(lab, 1) == 1:
                sizes[lab] = d
            elif d not in (1, sizes[lab]):
                raise ValueError(f"einsum: label {lab!r} has incompatible sizes {sizes[lab]} "
                                 f"and {d} in {subscripts!r}")
    ops = []
    for x, labels in zip(operands, in_labels):
        x, labels = _take_diagonals(x, labels)
        shape = tuple(sizes[lab] for lab in labels)
        if get_aval(x).shape != shape:
            x = broadcast_to_shape(x, shape)
        ops.append((x, labels))

    def needed_later(k: int) -> set[str]:
        s = set(out_labels)
        for _, labels in ops[k:]:
            s.update(labels)
        return s

    # Sum out labels only one operand has, then contract left to right.
    dot_sharding = None
    x, labels = ops[0]
    x, labels = _sum_labels(x, labels, set(labels) - needed_later(1))
    for k in range(1, len(ops)):
        y, ylabels = ops[k]
        keep = needed_later(k + 1)
        y, ylabels = _sum_labels(y, ylabels, set(ylabels) - keep - set(labels))
        shared = [lab for lab in labels if lab in ylabels]
        batch = [lab for lab in shared if lab in keep]
        contract = [lab for lab in shared if lab not in keep]
        dims = ((tuple(labels.index(lab) for lab in contract),
                 tuple(ylabels.index(lab) for lab in contract)),
                (tuple(labels.index(lab) for lab in batch),
                 tuple(ylabels.index(lab) for lab in batch)))
        new_labels = (batch + [lab for lab in labels if lab not in shared]
                      + [lab for lab in ylabels if lab not in shared])
        dot_sharding = None
        if out_sharding is not None and k == len(ops) - 1 and \
                sorted(new_labels) == sorted(out_labels):
            # The last product gives the result: laid out as asked (in its label order).
            s = aval_out_sharding("einsum", out_sharding, len(out_labels))
            if s is not None:
                entries = spec_entries(s, len(out_labels))
                dot_sharding = with_entries(s, [entries[out_labels.index(lab)]
                                                for lab in new_labels])
        if _dot_general is None:
            x = lax.dot_general(x, y, dims, precision=precision, out_sharding=dot_sharding)
        else:
            extra = {} if dot_sharding is None else {"out_sharding": dot_sharding}
            x = _dot_general(x, y, dims, precision, preferred_element_type=dtype, **extra)
        labels = new_labels
    x, labels = _sum_labels(x, labels, set(labels) - set(out_labels))
    x = lax.transpose(x, [labels.index(lab) for lab in out_labels])
    if out_sharding is not None and dot_sharding is None:
        from minijax.sharding import reshard
        x = reshard(x, out_sharding)
    return lax.convert_element_type(x, dtype, weak)
