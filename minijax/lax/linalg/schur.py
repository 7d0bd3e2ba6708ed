"""schur: Schur decomposition ``x = q t q^H`` of square matrices (CPU).

``schur_p`` maps ``[..., n, n]`` to ``[t, q]`` (``[t]`` without
``compute_schur_vectors``): ``t`` quasi-upper-triangular (real input: 2x2
blocks for complex eigenvalue pairs) or upper triangular (complex input),
``q`` unitary. Lowered to LAPACK's ``gees`` (jaxlib's ``lapack_?gees_ffi``);
matrices the kernel fails on give NaNs. Sorting the eigenvalues is not
supported (as in jax); no derivatives (none in jax either).
"""

from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive
from minijax.lax.linalg._common import (batch_dims, char, check_dtype, def_batch_leading,
                                        info_ok, lapack_call, lapack_target, nan_unless)

schur_p = Primitive("schur", multiple_results=True)


@schur_p.def_abstract_eval
def _schur_abstract(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    batch_dims("schur", [x], [2])
    check_dtype("schur", x)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"The input to schur must be a square matrix. Got shape "
                         f"{x.shape[-2:]}.")
    return [x, x] if compute_schur_vectors else [x]


@schur_p.def_lowering
def _schur_lower(ctx, x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    if sort_eig_vals:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not "
                                  "implemented.")
    aval = x.aval
    batch = aval.shape[:-2]
    info_aval = ShapedArray(batch, np.dtype(np.int32))
    w_aval = ShapedArray(aval.shape[:-1], aval.dtype)
    # real input: eigenvalues as (real parts, imaginary parts); then sdim and info
    w_avals = [w_aval] if dtypes.is_complex(aval.dtype) else [w_aval, w_aval]
    t, q, *_, info = lapack_call(
        ctx, lapack_target("gees_ffi", aval.dtype), [x],
        [aval, aval, *w_avals, info_aval, info_aval],
        config={"mode": char("V" if compute_schur_vectors else "N"), "sort": char("N")},
        aliases={0: 0})
    ok = info_ok(ctx, info)
    out = [nan_unless(ctx, ok, t)]
    if compute_schur_vectors:
        out.append(nan_unless(ctx, ok, q))
    return out


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
    """Schur decomposition of square matrices ``[..., n, n]``: ``(t, q)`` with
    ``x = q @ t @ q^H``, or ``t`` alone without ``compute_schur_vectors``.
    ``sort_eig_vals`` is not supported; ``select_callable`` is unused (as in jax)."""
    out = schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                       sort_eig_vals=bool(sort_eig_vals), select_callable=select_callable)
    return (out[0], out[1]) if compute_schur_vectors else out[0]


def_batch_leading(schur_p)
