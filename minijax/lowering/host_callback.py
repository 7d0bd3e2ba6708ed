"""The custom call that runs a Python function on the host during an XLA program.

``emit_python_callback`` writes ``stablehlo.custom_call @xla_ffi_python_cpu_callback``
whose ``index`` (in ``mhlo.backend_config``) picks the callable in the module's
``host_callbacks`` (the runtime hands them to XLA, see ``runtime/callback.py``). The
lowerings of ``pure_callback``, ``io_callback`` and the debug callbacks
(``lax/callback.py``), and rules written against ``jax.interpreters.mlir``, emit it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from minijax.lowering.lower import HostCallback
from minijax.lowering.tokens import TOKEN, get_token, set_token
from minijax.lowering.types import string_attr

__all__ = ["emit_python_callback", "num_devices"]


def _layout(ndim: int) -> str:
    if ndim == 0:
        return "dense<> : tensor<0xindex>"
    dims = list(range(ndim - 1, -1, -1))
    body = str(dims[0]) if ndim == 1 else "[" + ", ".join(map(str, dims)) + "]"
    return f"dense<{body}> : tensor<{ndim}xindex>"


def num_devices(module) -> int:
    def count(name):
        return int(module.attrs.get(name, "1 : i32").split(":")[0].strip())
    return count("mhlo.num_partitions") * count("mhlo.num_replicas")


def _sharding_attrs(ctx, sharding, n_results: int) -> dict:
    """Where the custom call runs in a program partitioned over several devices, as
    jax places it: in a ``shard_map`` body (manual over every mesh axis) on every device,
    with that device's block; elsewhere on one device (the first, or ``sharding``'s
    single device), with the whole (gathered) operands. Nothing for one device or for
    pmap's replicas (each replica calls it with its own values)."""
    module = ctx.module
    parts = int(module.attrs.get("mhlo.num_partitions", "1 : i32").split(":")[0].strip())
    if parts <= 1:
        return {}
    manual = getattr(module, "spmd_manual", False)
    sdy = module.sdy
    n = max(1, n_results)
    if manual is not False:
        if manual is not True or getattr(module, "sdy_auto", None) is not None:
            raise NotImplementedError(
                "callbacks are only supported in spmd computations when all mesh axes are "
                "partitioned manually (no partial automatic sharding).")
        if sharding is not None:
            raise NotImplementedError("callbacks do not support specifying sharding inside "
                                      "spmd computations")
        if sdy is not None:
            return {"_sdy_empty": sdy.ref(_EmptyMesh)}
        text = "{manual}" if n == 1 else "{" + ", ".join(["{manual}"] * n) + "}"
        return {"mhlo.sharding": string_attr(text)}
    index = 0
    if sharding is not None:
        mesh = getattr(sharding, "mesh", None)
        scalar_mesh = mesh is not None and not tuple(getattr(mesh, "axis_names", ())) and \
            getattr(mesh, "size", 0) == 1
        if not scalar_mesh and type(sharding).__name__ != "SingleDeviceSharding":
            raise NotImplementedError(
                f"pure_callback only supports SingleDeviceSharding, but got {type(sharding)}")
        device = next(iter(sharding.device_set))
        devices = getattr(sdy, "devices", None) or getattr(module, "devices", None)
        if devices:
            ids = [d.id for d in devices]
            if device.id not in ids:
                raise ValueError(f"Sharding provided to pure_callback specifies a device "
                                 f"{device} that is not in the device assignment "
                                 f"({list(devices)})")
            index = ids.index(device.id)
    if sdy is not None:
        ref = sdy.maximal(index)
        return {"sdy.sharding": "#sdy.sharding_per_value<[" +
                ", ".join([f"<{ref}, []>"] * n) + "]>"}
    one = f"{{maximal device={index}}}"
    return {"mhlo.sharding": string_attr(one if n == 1 else "{" + ", ".join([one] * n) + "}")}


class _EmptyMesh:  # the mesh of no axes (``sdy.mesh @empty_mesh = <[]>``)
    axis_names = ()
    shape: dict = {}
    _flat_devices = None


def emit_python_callback(ctx, fn: Callable, operands: Sequence, result_avals, *,
                         has_side_effect: bool, ordered: bool, what: str,
                         sharding: Any = None) -> list:
    """Emit the custom call that runs ``fn(*host arrays) -> arrays`` on the host
    (placed on the devices of a partitioned program as ``_sharding_attrs`` says)."""
    module = ctx.module
    module.host_callbacks.append(HostCallback(fn, tuple(result_avals), ordered, what))
    index = len(module.host_callbacks) - 1
    operands = list(operands)
    results: list = list(result_avals)
    op_layouts = [_layout(v.aval.ndim) for v in operands]
    res_layouts = [_layout(a.ndim) for a in result_avals]
    if ordered:
        module.ordered_effects = True
        operands.insert(0, get_token(ctx))
        results.insert(0, TOKEN)
        op_layouts.insert(0, _layout(0))
        res_layouts.insert(0, _layout(0))
    attrs = {  # as jax writes it: typed FFI, the index in mhlo.backend_config
        "api_version": "1 : i32",
        "backend_config": '""',
        "call_target_name": '"xla_ffi_python_cpu_callback"',
        "called_computations": "[]",
        "has_side_effect": "true" if has_side_effect else "false",
        "operand_layouts": "[" + ", ".join(op_layouts) + "]",
        "result_layouts": "[" + ", ".join(res_layouts) + "]",
        "mhlo.backend_config": "{index = " + str(index) + " : ui64}",
    }
    placed = _sharding_attrs(ctx, sharding, len(results))
    empty = placed.pop("_sdy_empty", None)
    if empty is not None:  # shard_map body: every device, its own block
        ref = empty
        per = [f"<{ref}, [{', '.join(['{}'] * getattr(a, 'ndim', 0))}]>" for a in results]
        placed["sdy.sharding"] = "#sdy.sharding_per_value<[" + ", ".join(
            per or [f"<{ref}, []>"]) + "]>"
    attrs.update(placed)
    outs = ctx.op("stablehlo.custom_call", operands, results, attrs)
    if ordered:
        set_token(ctx, outs[0])
        outs = outs[1:]
    return list(outs)
