"""``jax.ffi``: call compiled C/C++ code (XLA FFI handlers) from minijax programs.

Compile a handler against the XLA FFI headers jaxlib ships (``include_dir()``), load
it with ``ctypes``, register it under a target name, then call it with ``ffi_call``::

    lib = ctypes.cdll.LoadLibrary("./librms_norm.so")
    minijax.ffi.register_ffi_target("rms_norm", minijax.ffi.pycapsule(lib.RmsNorm))
    y = minijax.ffi.ffi_call("rms_norm", minijax.ShapeDtypeStruct(x.shape, x.dtype),
                             vmap_method="broadcast_all")(x, eps=np.float32(1e-5))

The call is the ``ffi_call`` primitive (``minijax/lax/ffi_call.py``): it runs eagerly,
under ``jit`` and ``vmap`` (by ``vmap_method``), and has no derivatives. ``ffi_lowering``
builds the lowering rule of a primitive of one's own on an FFI target.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from minijax.core.aval import ShapedArray
from minijax.core.trace import get_aval
from minijax.lax.ffi_call import (VMAP_METHODS, default_layout, emit_custom_call, ffi_call_p,
                                  wrap_attributes)
from minijax.runtime import ffi as _runtime_ffi

__all__ = ["build_ffi_lowering_function", "ffi_call", "ffi_lowering", "include_dir",
           "pycapsule", "register_ffi_target", "register_ffi_target_as_batch_partitionable",
           "register_ffi_type", "register_ffi_type_id"]

FfiLayoutOptions = Any  # None, a Layout, or a sequence of ints


def register_ffi_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1,
                        **kwargs: Any) -> None:
    """Register a foreign function target.

    Args:
      name: the target's name (what ``ffi_call`` names).
      fn: a ``PyCapsule`` holding the handler's function pointer (see ``pycapsule``), or
        a dict from FFI stage names (``"instantiate"``, ``"prepare"``, ``"initialize"``,
        ``"execute"``) to such capsules.
      platform: the platform it runs on (``"cpu"``; ``"gpu"``/``"CUDA"`` for a CUDA
        handler).
      api_version: 1 (default) for the typed FFI, 0 for XLA's legacy custom-call API.
      kwargs: passed on to XLA's registration (``traits``).
    """
    _runtime_ffi.register_custom_call_target(name, fn, platform, api_version, **kwargs)


def register_ffi_type_id(name: str, obj: Any, platform: str = "cpu") -> None:
    """Not supported with this jaxlib (as in jax): use ``register_ffi_type``."""
    raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


def register_ffi_type(name: str, type_registration: Mapping[str, Any],
                      platform: str = "cpu") -> None:
    """Register a user type for FFI handlers: ``type_registration`` is
    ``{"type_id": capsule}`` plus optionally ``"type_info"`` (a capsule of the
    ``XLA_FFI_TypeInfo``)."""
    _runtime_ffi.register_custom_type(name, type_registration, platform)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
    """Mark the target ``name`` as partitionable along its leading batch dimensions."""
    _runtime_ffi.register_custom_call_as_batch_partitionable(name)


def pycapsule(funcptr) -> Any:
    """Wrap a ctypes function pointer (``ctypes.cdll.LoadLibrary(path).Handler``) in an
    unnamed ``PyCapsule``, the form ``register_ffi_target`` takes.

    >>> lib = ctypes.cdll.LoadLibrary("./libkernels.so")  # doctest: +SKIP
    >>> minijax.ffi.register_ffi_target(  # doctest: +SKIP
    ...     "my_target", minijax.ffi.pycapsule(lib.MyHandler))
    """
    destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, destructor)
    return new(funcptr, None, destructor(0))


def include_dir() -> str:
    """The directory of the C/C++ headers bundled with jaxlib (``-I`` it to compile a
    handler against ``xla/ffi/api/ffi.h``)."""
    return _runtime_ffi.include_dir()


# ---- layouts -------------------------------------------------------------------------------

def _minor_to_major(aval, layout) -> tuple[int, ...]:
    """A lowering's layout (minor-to-major): None is row-major; a ``Layout`` gives its
    ``major_to_minor`` reversed; a sequence is taken as it is."""
    if layout is None:
        return default_layout(aval)
    if hasattr(layout, "major_to_minor"):
        if getattr(layout, "tiling", None):
            raise ValueError("The FFI does not support layouts with tiling")
        return tuple(int(d) for d in layout.major_to_minor[::-1])
    return tuple(int(d) for d in layout)


def _call_layouts(avals, layouts) -> tuple[tuple[int, ...], ...]:
    """``ffi_call``'s layouts, given major-to-minor, as minor-to-major."""
    return tuple(_minor_to_major(a, layout if layout is None or hasattr(layout, "major_to_minor")
                                 else tuple(layout)[::-1])
                 for a, layout in zip(avals, layouts))


# ---- lowering rules on an FFI target -------------------------------------------------------

class CustomCallOp:
    """What ``build_ffi_lowering_function``'s op builder returns: the op's ``results``."""

    __slots__ = ("results",)

    def __init__(self, results: Sequence):
        self.results = list(results)

    def __repr__(self) -> str:
        return f"CustomCallOp(results={self.results!r})"


_CUSTOM_CALL_ARGS = ("api_version", "has_side_effect", "operand_output_aliases")


def build_ffi_lowering_function(call_target_name: str, *,
                                operand_layouts: Sequence[FfiLayoutOptions] | None = None,
                                result_layouts: Sequence[FfiLayoutOptions] | None = None,
                                backend_config: Mapping[str, Any] | str | None = None,
                                skip_ffi_layout_processing: bool = False,
                                **lowering_args: Any) -> Callable[..., CustomCallOp]:
    """An op builder ``(ctx, *operands, **attributes) -> op`` emitting a custom call of
    ``call_target_name`` (the op's ``results`` are its values).

    Layouts are minor-to-major, as XLA spells them (None: row-major). With the default
    ``api_version=4`` the attributes given when it is called are added to the
    ``backend_config`` dictionary; ``lowering_args`` may also set ``has_side_effect``
    and ``operand_output_aliases`` (``{operand: result}``).
    """
    unknown = sorted(set(lowering_args) - set(_CUSTOM_CALL_ARGS))
    if unknown:
        raise TypeError(f"build_ffi_lowering_function: unsupported custom call arguments "
                        f"{unknown} in minijax (supported: {list(_CUSTOM_CALL_ARGS)})")

    def lowering_op(ctx, *operands, **params) -> CustomCallOp:
        mctx = getattr(ctx, "minijax_ctx", ctx)  # a jax-style rule context, or minijax's
        avals_in, avals_out = list(ctx.avals_in), list(ctx.avals_out)
        kwargs = dict(lowering_args)
        api_version = kwargs.pop("api_version", 4)
        if api_version >= 4:
            if backend_config is not None and not isinstance(backend_config, dict):
                raise ValueError("When api_version > 4, backend_config must be a dictionary.")
        elif params:
            raise ValueError("The use of ffi_call attributes requires a custom call API "
                             f"version of at least 4; got api_version={api_version}.")
        in_layouts = out_layouts = None
        if not skip_ffi_layout_processing:
            in_layouts = [_minor_to_major(a, lay) for a, lay in
                          zip(avals_in, operand_layouts or [None] * len(avals_in))]
            out_layouts = [_minor_to_major(a, lay) for a, lay in
                           zip(avals_out, result_layouts or [None] * len(avals_out))]
        outs = emit_custom_call(mctx, call_target_name, operands, avals_out,
                                api_version=api_version, backend_config=backend_config,
                                attributes=params, operand_layouts=in_layouts,
                                result_layouts=out_layouts, **kwargs)
        return CustomCallOp(outs)

    return lowering_op


def ffi_lowering(call_target_name: str, *,
                 operand_layouts: Sequence[FfiLayoutOptions] | None = None,
                 result_layouts: Sequence[FfiLayoutOptions] | None = None,
                 backend_config: Mapping[str, Any] | str | None = None,
                 skip_ffi_layout_processing: bool = False, **lowering_args: Any) -> Callable:
    """A lowering rule ``(ctx, *operands, **params) -> results`` calling the FFI target
    ``call_target_name``; the primitive's params become the handler's attributes.

    Register it with ``minijax.interpreters.mlir.register_lowering(prim, rule)`` (or
    ``prim.def_lowering``). Arguments as for ``build_ffi_lowering_function``.
    """
    build = build_ffi_lowering_function(
        call_target_name, operand_layouts=operand_layouts, result_layouts=result_layouts,
        backend_config=backend_config, skip_ffi_layout_processing=skip_ffi_layout_processing,
        **lowering_args)

    def rule(ctx, *operands, **params):
        return build(ctx, *operands, **params).results

    rule._minijax_lower_fun = True  # its own errors are the user's, not jaxlib op builders'
    return rule


# ---- ffi_call ------------------------------------------------------------------------------

class _ResultShapeDtypeError(ValueError, TypeError):
    """A leaf of ``result_shape_dtypes`` without ``shape`` and ``dtype`` (jax raises
    ValueError; it is a TypeError too, the kind of mistake it is)."""


def _result_avals(results: Sequence) -> tuple[ShapedArray, ...]:
    avals = []
    for i, r in enumerate(results):
        if not hasattr(r, "shape") or not hasattr(r, "dtype"):
            raise _ResultShapeDtypeError(
                "All elements of result_shape_dtypes must have 'shape' and 'dtype' "
                f"attributes. Got {r} at position {i}.")
        try:
            shape = tuple(int(d) for d in r.shape)
            dtype = np.dtype(r.dtype)
        except TypeError as e:
            raise TypeError(f"ffi_call: result_shape_dtypes[{i}] = {r!r} has no valid shape "
                            f"and dtype ({e})") from None
        avals.append(ShapedArray(shape, dtype, weak_type=bool(getattr(r, "weak_type", False))))
    return tuple(avals)


def _same_type(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def ffi_call(target_name: str, result_shape_dtypes: Any, *, has_side_effect: bool = False,
             vmap_method: str | None = None,
             input_layouts: Sequence[FfiLayoutOptions] | None = None,
             output_layouts: FfiLayoutOptions | Sequence[FfiLayoutOptions] | None = None,
             input_output_aliases: dict[int, int] | None = None,
             custom_call_api_version: int = 4,
             legacy_backend_config: str | None = None) -> Callable[..., Any]:
    """Call the XLA FFI target ``target_name`` (registered with ``register_ffi_target``).

    Returns a function taking the input arrays as positional arguments and the
    handler's attributes as keyword arguments (NumPy scalars keep their dtype, Python
    ints are i64, floats f64, NumPy arrays dense arrays; strings, dicts, tuples).

    Args:
      target_name: the registered target.
      result_shape_dtypes: an object with ``shape`` and ``dtype`` (e.g.
        ``ShapeDtypeStruct``), or a list/tuple of them: the results.
      has_side_effect: the call is kept even when its results are unused.
      vmap_method: how ``vmap`` maps it, as for ``pure_callback``: ``"sequential"``,
        ``"sequential_unrolled"``, ``"expand_dims"``, ``"broadcast_all"`` or
        ``"legacy_vectorized"``; None makes ``vmap`` of it an error.
      input_layouts, output_layouts: per input/output, None (row-major), a ``Layout`` or
        a sequence of axes in major-to-minor order.
      input_output_aliases: ``{input index: output index}`` for outputs written in place
        of an input (same shape, dtype and layout).
      custom_call_api_version: 4 (the typed FFI); earlier versions call legacy targets.
      legacy_backend_config: the opaque string of a legacy target (version < 4 only).

    >>> rms_norm = minijax.ffi.ffi_call(  # doctest: +SKIP
    ...     "rms_norm", minijax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="broadcast_all")
    >>> y = minijax.jit(lambda x: rms_norm(x, eps=np.float32(1e-5)))(x)  # doctest: +SKIP
    """
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                         f"but got: {vmap_method}")
    if isinstance(result_shape_dtypes, Sequence):
        multiple_results = True
        result_avals = _result_avals(result_shape_dtypes)
        out_layouts = output_layouts
    else:
        multiple_results = False
        result_avals = _result_avals([result_shape_dtypes])
        out_layouts = (output_layouts,)
    if custom_call_api_version >= 4 and legacy_backend_config is not None:
        raise ValueError("The use of the legacy_backend_config parameter requires "
                         f"custom_call_api_version < 4; got {custom_call_api_version}.")

    def wrapped(*args: Any, **kwargs: Any):
        in_avals = [get_aval(x) for x in args]
        if input_layouts is None:
            static_in = tuple(map(default_layout, in_avals))
        else:
            if len(input_layouts) != len(in_avals):
                raise ValueError(f"The number of input arguments ({len(in_avals)}) must equal "
                                 f"the number of input layouts ({len(input_layouts)}).")
            static_in = _call_layouts(in_avals, input_layouts)
        if out_layouts is None:
            static_out = tuple(map(default_layout, result_avals))
        else:
            if len(out_layouts) != len(result_avals):
                raise ValueError(f"The number of outputs ({len(result_avals)}) must equal the "
                                 f"number of output layouts ({len(out_layouts)}).")
            static_out = _call_layouts(result_avals, out_layouts)
        aliases = []
        for i, o in sorted((input_output_aliases or {}).items()):
            i, o = int(i), int(o)
            if i >= len(args):
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with "
                                 f"input index {i} outside the range [0, {len(args)}).")
            if o >= len(result_avals):
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with "
                                 f"output index {o} outside the range [0, "
                                 f"{len(result_avals)}).")
            if not _same_type(in_avals[i], result_avals[o]):
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' "
                                 f"referring to an input with abstract value {in_avals[i]} "
                                 f"and an output with a different abstract value "
                                 f"{result_avals[o]}.")
            if static_in[i] != static_out[o]:
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' "
                                 f"referring to an input with layout {static_in[i]} and an "
                                 f"output with a different layout {static_out[o]}.")
            aliases.append((i, o))
        results = ffi_call_p.bind(  # params in jax's order (jaxprs print the same)
            *args, attributes=wrap_attributes(kwargs),
            custom_call_api_version=int(custom_call_api_version),
            has_side_effect=bool(has_side_effect), input_layouts=static_in,
            input_output_aliases=tuple(aliases), legacy_backend_config=legacy_backend_config,
            output_layouts=static_out, result_avals=result_avals, target_name=target_name,
            vmap_method=vmap_method)
        if multiple_results:
            return tuple(results) if isinstance(result_shape_dtypes, tuple) else list(results)
        return results[0]

    return wrapped
