"""The MLIR context, module parsing/printing and the StableHLO -> HLO conversion.

This is the one place outside ``minijax/runtime`` allowed to touch jaxlib's
private MLIR extension (dialect registration) and the HLO converter.
"""

from __future__ import annotations

import threading

from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import chlo, sdy, stablehlo

_local = threading.local()


def context() -> ir.Context:
    """A per-thread MLIR context with StableHLO, CHLO, Shardy (``sdy``) and jaxlib's
    dialects loaded."""
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        ctx = ir.Context()
        reg = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(reg)
        ctx.append_dialect_registry(reg)
        ctx.load_all_available_dialects()
        sdy.register_dialect(ctx)
        stablehlo.register_dialect(ctx)
        chlo.register_dialect(ctx)
        _local.ctx = ctx
    return ctx


def parse(text: str) -> ir.Module:
    """Parse and verify module text; a failure here is a minijax bug, reported with the text."""
    with context():
        try:
            module = ir.Module.parse(text)
        except Exception as e:  # MLIRError
            raise RuntimeError(
                f"minijax produced invalid MLIR (please report):\n{e}\n{text}") from e
        if not module.operation.verify():
            raise RuntimeError(f"minijax produced MLIR that does not verify:\n{text}")
    return module


def to_text(module: ir.Module, debug_info: bool = False) -> str:
    with context():
        return module.operation.get_asm(enable_debug_info=debug_info, large_elements_limit=None)


def to_xla_computation(module_text: str, *, tuple_args: bool = False, return_tuple: bool = False):
    """An ``XlaComputation`` (HLO) for StableHLO module text."""
    return _jax.mlir.mlir_module_to_xla_computation(
        module_text, use_tuple_args=tuple_args, return_tuple=return_tuple)


def hlo_text(module_text: str) -> str:
    return to_xla_computation(module_text).as_hlo_text()


def cost_analysis(module_text: str, client) -> dict:
    """XLA's cost estimate of the unoptimized HLO of ``module_text``."""
    comp = to_xla_computation(module_text)
    costs = dict(_jax.hlo_module_cost_analysis(client, comp.as_hlo_module()))
    for key in ("flops", "bytes accessed", "transcendentals"):
        costs.setdefault(key, 0.0)
    return costs
