"""device_put as a primitive: the identity on arrays inside traced code.

jax binds ``device_put_p`` for ``jax.device_put`` under a trace; minijax's
``device_put`` moves data in the runtime, and this primitive (exported as
``lax.device_put_p``) is the identity on its operands with jax's parameters
(``devices``, ``srcs``, ``copy_semantics``, one entry per operand), lowered to
nothing. Linear and its own transpose; batched where its operands are.
"""

from __future__ import annotations

from minijax.core.aval import MemorySpace, ShapedArray, mem_kind_to_space
from minijax.core.trace import Primitive
from minijax.transforms.ad import defjvp_linear, instantiate

device_put_p = Primitive("device_put", multiple_results=True)


def _space_after(x, d):
    """The memory space of ``x`` put on ``d``: a memory space names it; a sharding with a
    memory kind its space (``pinned_host`` is ``Host``); anything else keeps ``x``'s."""
    if isinstance(d, MemorySpace):
        return d
    kind = getattr(d, "memory_kind", None)
    if kind is None or type(x) is not ShapedArray:
        return getattr(x, "memory_space", None)
    return mem_kind_to_space(kind)


def _device_put_abstract(*xs, devices, srcs, copy_semantics):
    return [x if type(x) is not ShapedArray or _space_after(x, d) is x.memory_space
            else x.update(memory_space=_space_after(x, d)) for x, d in zip(xs, devices)]


def _device_put_memory_space(*xs, devices, srcs, copy_semantics):
    return [_space_after(x, d) for x, d in zip(xs, devices)]


def _device_put_lower(ctx, *xs, devices, srcs, copy_semantics):
    return list(xs)


def _device_put_transpose(cts, *xs, devices, srcs, copy_semantics):
    spaces = [getattr(getattr(x, "aval", None), "memory_space", None) for x in xs]
    if all(not _names_memory(d) for d in devices) and MemorySpace.Host not in spaces:
        outs = device_put_p.bind(*[instantiate(c) for c in cts], devices=devices, srcs=srcs,
                                 copy_semantics=copy_semantics)
        return list(outs)
    # between memories: each cotangent goes back where its operand came from (its memory
    # space when that was the host), as jax transposes it
    back = tuple(sp if s is None and sp is MemorySpace.Host else s
                 for s, sp in zip(srcs, spaces))
    outs = device_put_p.bind(*[instantiate(c) for c in cts], devices=back, srcs=devices,
                             copy_semantics=copy_semantics)
    return list(outs)


def _names_memory(d) -> bool:
    if isinstance(d, MemorySpace):
        return True
    kind = getattr(d, "memory_kind", None)
    return kind is not None and kind != "device"


def _device_put_batch(trace, vals, dims, **params):
    return device_put_p.bind(*vals, **params), list(dims)


# Registration.
device_put_p.def_abstract_eval(_device_put_abstract)
device_put_p.def_rule("memory_space")(_device_put_memory_space)
device_put_p.def_lowering(_device_put_lower)
defjvp_linear(device_put_p)
device_put_p.def_transpose(_device_put_transpose)
device_put_p.def_batch(_device_put_batch)
