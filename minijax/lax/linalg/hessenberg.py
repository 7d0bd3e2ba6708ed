"""hessenberg: reduce a square matrix to upper Hessenberg form (CPU).

``hessenberg_p`` maps ``[..., n, n]`` to ``(a, taus)`` as LAPACK's ``gehrd``
(jaxlib's ``lapack_?gehrd_ffi``) returns them: the Hessenberg matrix in the
upper triangle and first subdiagonal of ``a``, the Householder reflectors
below, their scales in ``taus`` (``[..., n-1]``). Matrices the kernel fails on
give NaNs. No derivatives (none in jax either).
"""

from __future__ import annotations

import numpy as np

from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive
from minijax.lax.linalg._common import (batch_dims, check_dtype, def_batch_leading, info_ok,
                                        lapack_call, lapack_target, nan_unless)

hessenberg_p = Primitive("hessenberg", multiple_results=True)


@hessenberg_p.def_abstract_eval
def _hessenberg_abstract(a):
    batch = batch_dims("hessenberg", [a], [2])
    check_dtype("hessenberg", a)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to Hessenberg reduction must have shape [..., n, n], got "
                         f"shape {a.shape[-2:]}")
    return [a, ShapedArray(batch + (a.shape[-1] - 1,), a.dtype)]


@hessenberg_p.def_lowering
def _hessenberg_lower(ctx, a):
    n = a.aval.shape[-1]
    info_aval = ShapedArray(a.aval.shape[:-2], np.dtype(np.int32))
    # gehrd's ilo/ihi: the whole matrix (1-based).
    h, taus, info = lapack_call(ctx, lapack_target("gehrd_ffi", a.aval.dtype), [a],
                                [*ctx.avals_out, info_aval],
                                config={"low": np.int32(1), "high": np.int32(n)},
                                aliases={0: 0})
    ok = info_ok(ctx, info)
    return [nan_unless(ctx, ok, h), nan_unless(ctx, ok, taus)]


def hessenberg(a):
    """Reduce square matrices ``[..., n, n]`` to upper Hessenberg form: ``(a, taus)``,
    see the module."""
    h, taus = hessenberg_p.bind(a)
    return h, taus


def_batch_leading(hessenberg_p)
