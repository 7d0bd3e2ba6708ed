"""symmetric_product: ``alpha * a @ a^T + beta * c`` for symmetric ``c``.

jax lowers it to a ``syrk`` kernel on GPU; on CPU (here) it is lowered inline as
a batched matrix product at the highest precision, so the whole output is
valid (jax only guarantees the lower triangle).
"""

from __future__ import annotations

import numpy as np

from minijax.core import dtypes
from minijax.core.trace import Primitive, get_aval
from minijax.lax import binary as _b
from minijax.lax.linalg._common import (T, batch_dims, def_batch_leading, lower_fun, matmul,
                                        tril)
from minijax.transforms.ad import Zero, add_tangents, tangent_aval

symmetric_product_p = Primitive("symmetric_product")


@symmetric_product_p.def_abstract_eval
def _symmetric_product_abstract(a, c, *, alpha, beta):
    batch_dims("symmetric_product", [a, c], [2, 2])
    for x in (a, c):
        if not dtypes.is_inexact(x.dtype) or dtypes.is_complex(x.dtype):
            raise TypeError(f"symmetric_product does not accept dtype {x.dtype.name}. "
                            f"Accepted dtypes are subtypes of floating.")
    if a.dtype != c.dtype:
        raise TypeError(f"symmetric_product requires arguments to have the same dtypes, got "
                        f"{a.dtype.name}, {c.dtype.name}.")
    if a.shape[-2] != c.shape[-1] or c.shape[-2] != c.shape[-1]:
        raise ValueError(f"symmetric_update expects a rectangular matrix of shape (m, n) and "
                         f"a square matrix of shape (n, n). Got shapes {a.shape[-2:]} and "
                         f"{c.shape[-2:]}.")
    return c


def _product(a, c, alpha, beta):
    dt = get_aval(c).dtype
    return _b.add(_b.mul(np.asarray(alpha, dt), matmul(a, T(a))),
                  _b.mul(np.asarray(beta, dt), c))


@symmetric_product_p.def_lowering
def _symmetric_product_lower(ctx, a, c, *, alpha, beta):
    out, = lower_fun(ctx, lambda x, y: [_product(x, y, alpha, beta)], a, c)
    return out


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False):
    """``alpha * a @ a^T + beta * c`` for ``a`` ``[..., m, n]`` and symmetric ``c``
    ``[..., m, m]``; ``symmetrize_output`` copies the lower triangle to the upper one."""
    out = symmetric_product_p.bind(a_matrix, c_matrix, alpha=float(alpha), beta=float(beta))
    if symmetrize_output:
        out = _b.add(tril(out), T(tril(out, -1)))
    return out


def _symmetric_product_jvp(primals, tangents, *, alpha, beta):
    # d(alpha a a^T + beta c) = alpha (da a^T + a da^T) + beta dc
    a, c = primals
    da, dc = tangents
    out = symmetric_product_p.bind(a, c, alpha=alpha, beta=beta)
    dt = get_aval(out).dtype
    t = Zero(tangent_aval(get_aval(out)))
    if type(da) is not Zero:
        t = _b.mul(np.asarray(alpha, dt), _b.add(matmul(da, T(a)), matmul(a, T(da))))
    if type(dc) is not Zero:
        t = add_tangents(t, _b.mul(np.asarray(beta, dt), dc))
    return out, t


symmetric_product_p.def_jvp(_symmetric_product_jvp)
def_batch_leading(symmetric_product_p)
