"""The ``jit`` primitive: a call of a closed jaxpr, as nested ``jit`` appears in a trace.

Lowered to ``func.call`` of a private function (or inlined with ``inline=True``);
run eagerly by compiling the jaxpr once.
"""

from __future__ import annotations

import weakref

from minijax.core.jaxpr import ClosedJaxpr, FreshNames
from minijax.core.trace import Primitive
from minijax.lax._util import type_error

jit_p = Primitive("jit", multiple_results=True)


@jit_p.def_abstract_eval
def _jit_abstract(*avals, jaxpr: ClosedJaxpr, name: str, donated_invars=(), inline=False):
    expected = jaxpr.in_avals
    if len(avals) != len(expected) or any(
            a.shape != e.shape or a.dtype != e.dtype for a, e in zip(avals, expected)):
        raise type_error("jit", f"arguments do not match the jaxpr of {name} "
                         f"(expected {', '.join(e.str_short() for e in expected)})", *avals)
    return jaxpr.out_avals


# Printed like jax: jit[name=f jaxpr={...}] (the other params are internal).
jit_p.pp_params = lambda params: {"name": params["name"], "jaxpr": FreshNames(params["jaxpr"])}


def _symbol(name: str) -> str:
    s = "".join(c if (c.isalnum() or c == "_") else "_" for c in name) or "fn"
    return s if not s[0].isdigit() else "_" + s


@jit_p.def_lowering
def _jit_lower(ctx, *args, jaxpr: ClosedJaxpr, name: str, donated_invars=(), inline=False):
    if inline:
        return ctx.lower_jaxpr(jaxpr, args)
    fn = ctx.lower_function(jaxpr, _symbol(name), f"jit({name})")
    return ctx.call(fn, args)


_compiled: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@jit_p.def_impl
def _jit_impl(*args, jaxpr: ClosedJaxpr, name: str, donated_invars=(), inline=False):
    from minijax.stages.jit import compile_closed_jaxpr, execute
    exe = _compiled.get(jaxpr)
    if exe is None:
        exe = _compiled[jaxpr] = compile_closed_jaxpr(jaxpr, name)
    return execute(exe, args)
