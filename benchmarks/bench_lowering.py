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


# ---- growth with program size (issue 28): traced untimed, lower() + as_text() timed ----

def _chain(jnp, n: int):
    def f(x):
        for _ in range(n):
            x = jnp.sin(x) * 1.01 + 0.1
        return x
    return f


def _lower_text(lib: Lib, make) -> OneShot:
    import numpy as np
    x = lib.put(np.ones((8,), np.float32))
    return OneShot(lambda: lib.mod.jit(make()).trace(x),
                   lambda traced: traced.lower().as_text())


@benchmark("chain_1k_lower_text", "s")
def chain_1k_lower_text(lib: Lib) -> OneShot:
    """lower().as_text() of x = sin(x) * 1.01 + 0.1, 1,000 times (3,000 equations)."""
    return _lower_text(lib, lambda: _chain(lib.jnp, 1000))


@benchmark("chain_4k_lower_text", "s")
def chain_4k_lower_text(lib: Lib) -> OneShot:
    """The same chain, 4,000 steps (12,000 equations)."""
    return _lower_text(lib, lambda: _chain(lib.jnp, 4000))


@benchmark("chain_16k_lower_text", "s")
def chain_16k_lower_text(lib: Lib) -> OneShot:
    """The same chain, 16,000 steps (48,000 equations)."""
    return _lower_text(lib, lambda: _chain(lib.jnp, 16000))


@benchmark("grad_2k_lower_text", "s")
def grad_2k_lower_text(lib: Lib) -> OneShot:
    """lower().as_text() of the gradient of sum(chain of 333 steps): ~2,000 equations."""
    def make():
        chain = _chain(lib.jnp, 333)
        return lib.mod.grad(lambda x: lib.jnp.sum(chain(x)))
    return _lower_text(lib, make)


@benchmark("scan_1k_body_lower_text", "s")
def scan_1k_body_lower_text(lib: Lib) -> OneShot:
    """lower().as_text() of a scan whose body is a 333-step chain (999 equations)."""
    def make():
        chain = _chain(lib.jnp, 333)
        return lambda x: lib.mod.lax.scan(lambda c, _: (chain(c), None), x, None,
                                          length=10)[0]
    return _lower_text(lib, make)
