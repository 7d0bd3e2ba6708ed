"""dce_sink: mark values as used, so that dead-code elimination keeps what computes them.

``dce_sink_p`` has one operand and no results. It is linear (nothing flows back),
batched as it is, and lowers to nothing; ``prevent_mlir_dce`` is accepted and has no
further effect on XLA:CPU here.
"""

from __future__ import annotations

from minijax.core.trace import Primitive
from minijax._pytree import tree_leaves

dce_sink_p = Primitive("dce_sink", multiple_results=True)


def _dce_sink_abstract(x, *, prevent_mlir_dce):
    return []


def _dce_sink_lower(ctx, x, *, prevent_mlir_dce):
    return []


def _dce_sink_jvp(primals, tangents, *, prevent_mlir_dce):
    dce_sink_p.bind(*primals, prevent_mlir_dce=prevent_mlir_dce)
    return [], []


def _dce_sink_transpose(cts, x, *, prevent_mlir_dce):
    return [None]


def _dce_sink_batch(trace, vals, dims, *, prevent_mlir_dce):
    dce_sink_p.bind(*vals, prevent_mlir_dce=prevent_mlir_dce)
    return [], []


# Registration.
dce_sink_p.def_abstract_eval(_dce_sink_abstract)
dce_sink_p.def_lowering(_dce_sink_lower)
dce_sink_p.def_jvp(_dce_sink_jvp)
dce_sink_p.def_transpose(_dce_sink_transpose)
dce_sink_p.def_batch(_dce_sink_batch)


def dce_sink(val, *, prevent_mlir_dce: bool = False) -> None:
    """Mark every leaf of ``val`` as used (mirrors ``jax.lax.dce_sink``); returns None."""
    for leaf in tree_leaves(val):
        dce_sink_p.bind(leaf, prevent_mlir_dce=bool(prevent_mlir_dce))
