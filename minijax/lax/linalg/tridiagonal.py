"""tridiagonal: reduce a Hermitian (real symmetric) matrix to tridiagonal form.

``tridiagonal_p`` maps ``[..., n, n]`` to ``(a, d, e, taus)`` as LAPACK's
``sytrd``/``hetrd`` (jaxlib's ``lapack_?sytrd_ffi``/``lapack_?hetrd_ffi``)
returns them: the tridiagonal matrix in ``a`` (its diagonal also in ``d``,
its off-diagonal in ``e``, both real), the Householder reflectors beyond it
and their scales in ``taus``. Matrices the kernel fails on give NaNs. No
derivatives (none in jax either).
"""

from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive
from minijax.lax.linalg._common import (batch_dims, char, check_dtype, def_batch_leading,
                                        info_ok, lapack_call, lapack_target, nan_unless,
                                        real_dtype)

tridiagonal_p = Primitive("tridiagonal", multiple_results=True)


@tridiagonal_p.def_abstract_eval
def _tridiagonal_abstract(a, *, lower):
    batch = batch_dims("tridiagonal", [a], [2])
    check_dtype("tridiagonal", a)
    n = a.shape[-1]
    if a.shape[-2] != n or n == 0:
        raise ValueError(f"The input to tridiagonal must be a square matrix. Got shape "
                         f"{a.shape[-2:]}.")
    rdt = real_dtype(a.dtype)
    return [a, ShapedArray(batch + (n,), rdt), ShapedArray(batch + (n - 1,), rdt),
            ShapedArray(batch + (n - 1,), a.dtype)]


@tridiagonal_p.def_lowering
def _tridiagonal_lower(ctx, a, *, lower):
    dt = a.aval.dtype
    base = "hetrd_ffi" if dtypes.is_complex(dt) else "sytrd_ffi"
    info_aval = ShapedArray(a.aval.shape[:-2], np.dtype(np.int32))
    *outs, info = lapack_call(ctx, lapack_target(base, dt), [a], [*ctx.avals_out, info_aval],
                              config={"uplo": char("L" if lower else "U")}, aliases={0: 0})
    ok = info_ok(ctx, info)
    return [nan_unless(ctx, ok, o) for o in outs]


def tridiagonal(a, *, lower: bool = True):
    """Reduce Hermitian matrices ``[..., n, n]`` to tridiagonal form (reading the
    ``lower`` or upper triangle): returns ``(a, d, e, taus)``, see the module."""
    arr, d, e, taus = tridiagonal_p.bind(a, lower=bool(lower))
    return arr, d, e, taus


def_batch_leading(tridiagonal_p)
