"""``jax.interpreters.mlir``: lowering rules of primitives, registered on minijax's.

minijax builds StableHLO as text (``minijax.lowering``), not with jaxlib's MLIR op
builders, so the rules it runs are those written in jax's portable form,
``mlir.lower_fun(fun, multiple_results)``: ``fun`` is traced at the operands' avals and
its jaxpr lowered in place, under ``jit``, ``grad``, ``vmap``, ``scan`` and in AOT
lowering alike. A rule that calls jaxlib's op builders itself (``hlo.AddOp(...)``) on the
values it is given cannot run: lowering raises NotImplementedError naming the primitive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.trace import DebugInfo, Primitive, trace_to_jaxpr
from minijax.lowering.builder import Value
from minijax.lowering.host_callback import emit_python_callback as _emit_python_callback
from minijax.lowering.lower import RuleContext

__all__ = ["LoweringRuleContext", "ModuleContext", "Value", "emit_python_callback",
           "ir_constant", "lower_fun", "register_lowering"]


class ModuleContext:
    """The module a jax-style lowering rule adds to (``ctx.module_context``)."""

    platforms = ("cpu",)

    def __init__(self, module):
        self.module = module

    def add_keepalive(self, keepalive: Any) -> None:
        """Nothing to do: the module's ``host_callbacks`` keep the callables that
        ``emit_python_callback`` emits alive with its executable (its keepalive is None)."""
        del keepalive


class LoweringRuleContext:
    """What a jax-style lowering rule is given: ``avals_in``, ``avals_out``,
    ``module_context`` (and minijax's own rule context as ``minijax_ctx``)."""

    def __init__(self, ctx: RuleContext):
        self.minijax_ctx = ctx
        self.avals_in = list(ctx.avals_in)
        self.avals_out = list(ctx.avals_out)
        self.platforms = ("cpu",)
        self.tokens_in = self.tokens_out = None
        self.module_context = ModuleContext(ctx.module)

    def set_tokens_out(self, tokens) -> None:
        self.tokens_out = tokens

    def replace(self, **kw) -> LoweringRuleContext:
        new = LoweringRuleContext(self.minijax_ctx)
        for k, v in kw.items():
            setattr(new, k, v)
        return new


def _minijax_ctx(ctx) -> RuleContext:
    return ctx.minijax_ctx if isinstance(ctx, LoweringRuleContext) else ctx


def lower_fun(fun: Callable, multiple_results: bool = True) -> Callable:
    """A lowering rule that lowers ``fun(*operands, **params)`` (written with minijax's
    numpy/lax), traced at the operands' avals. Returns a list of values (as in jax)."""

    def rule(ctx, *args, **params):
        mctx = _minijax_ctx(ctx)
        avals_in = list(getattr(ctx, "avals_in", None) or mctx.avals_in)

        def traced(*xs):
            out = fun(*xs, **params)
            return (list(out) if multiple_results else [out]), None

        jaxpr, consts, _ = trace_to_jaxpr(traced, avals_in,
                                          DebugInfo("lower_fun", _name(fun), None))
        return mctx.lower_jaxpr(ClosedJaxpr(jaxpr, consts), list(args))

    rule._minijax_lower_fun = True
    return rule


def _name(fun) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def register_lowering(prim: Primitive, rule: Callable, platform: str | None = None,
                      inline: bool = True, cacheable: bool = True) -> Callable:
    """Register ``rule(ctx, *operands, **params)`` (jax's convention: it returns a list of
    values) as ``prim``'s lowering. ``platform`` other than cpu registers nothing here
    (minijax lowers for XLA:CPU)."""
    if platform not in (None, "cpu"):
        return rule

    def lowering(ctx, *args, **params):
        jctx = LoweringRuleContext(ctx)
        try:
            out = rule(jctx, *args, **params)
        except (TypeError, AttributeError) as e:
            if getattr(rule, "_minijax_lower_fun", False):
                raise
            raise NotImplementedError(
                f"the lowering rule of '{prim.name}' builds MLIR with jaxlib's op builders, "
                f"which minijax (it writes StableHLO as text) cannot run; write it with "
                f"jax.interpreters.mlir.lower_fun instead ({type(e).__name__}: {e})") from e
        if prim.multiple_results:
            return list(out)
        if isinstance(out, (list, tuple)):
            (out,) = out
        return out

    prim.def_lowering(lowering)
    prim.__dict__["_jax_lowering"] = (lowering, rule)
    return rule


def emit_python_callback(ctx, callback: Callable, token: Any, operands: Sequence,
                         operand_avals: Sequence, result_avals: Sequence, *,
                         has_side_effect: bool, returns_token: bool = True,
                         partitioned: bool = False, sharding: Any = None):
    """Emit a call of ``callback(*host arrays) -> arrays`` on the host, as jax's (the
    custom call of ``pure_callback``): ``(results, token, keepalive)``. With a ``token``
    (an ordered effect) the calls are ordered by minijax's own token, which is returned
    as it was given."""
    del operand_avals, returns_token, partitioned
    results = _emit_python_callback(
        _minijax_ctx(ctx), callback, list(operands), list(result_avals),
        has_side_effect=has_side_effect, ordered=token is not None,
        what=_name(callback), sharding=sharding)
    return results, token, None


def ir_constant(val: Any) -> Any:
    """A constant for a lowering rule written with ``lower_fun``: the value itself (it
    becomes a literal of the traced jaxpr)."""
    return np.asarray(val)


def flatten_ir_values(xs: Sequence) -> list:
    out: list = []
    for x in xs:
        if isinstance(x, (list, tuple)):
            out.extend(flatten_ir_values(x))
        else:
            out.append(x)
    return out
