"""The lowering phase alone (jaxpr -> StableHLO module), minijax vs jax.

``mlp_lower`` and ``grad_mlp_lower`` in ``run.py`` time ``jit(f).lower(...)``: tracing
and lowering together. These rows trace untimed (``jit(f).trace(...)`` of a fresh
function each repeat, so neither library can reuse an earlier lowering) and time
``traced.lower()`` only:

- ``mlp_lower_only``: the 200-layer 64x64 tanh MLP of ``mlp_lower``;
- ``grad_mlp_lower_only``: its gradient, as in ``grad_mlp_lower``.
"""

from __future__ import annotations

from harness import Lib, OneShot, benchmark
from run import _make_mlp, _make_mlp_loss, _mlp_inputs


@benchmark("mlp_lower_only", "s")
def mlp_lower_only(lib: Lib) -> OneShot:
    """traced.lower() of jit(mlp200).trace(params, x) (tracing untimed)."""
    params, x = _mlp_inputs(lib)
    return OneShot(lambda: lib.mod.jit(_make_mlp(lib.jnp)).trace(params, x),
                   lambda traced: traced.lower())


@benchmark("grad_mlp_lower_only", "s")
def grad_mlp_lower_only(lib: Lib) -> OneShot:
    """traced.lower() of jit(grad(loss)).trace(params, x) (tracing untimed)."""
    params, x = _mlp_inputs(lib)
    return OneShot(
        lambda: lib.mod.jit(lib.mod.grad(_make_mlp_loss(lib.jnp))).trace(params, x),
        lambda traced: traced.lower())
