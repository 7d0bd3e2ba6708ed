"""``ffi_call``: a call of a compiled XLA FFI handler (``minijax.ffi.ffi_call``).

The primitive carries the target's name, the result avals, the operand and result
layouts (minor-to-major, as XLA spells them), input/output aliases, the custom-call
API version and the handler's attributes (``attributes``: sorted ``(name, value)``
pairs, arrays and dicts wrapped to be hashable). It lowers to one
``stablehlo.custom_call @target``; with API version 4 (the typed FFI) the attributes
go in the op's ``mhlo.backend_config`` dictionary, typed as jax types them: Python
ints are ``i64``, floats ``f64``, bools ``i1``, NumPy scalars keep their dtype, NumPy
arrays are dense elements, strings strings, dicts dictionaries, tuples arrays,
dtypes types. Eagerly it runs as a one-equation program, like every primitive.

Under ``vmap`` it follows ``vmap_method`` as jax's does (``sequential`` loops in a
scan, ``expand_dims``/``broadcast_all`` give unbatched operands a leading axis of size
1 or of the batch size, ``legacy_vectorized`` passes them as they are), and it has no
derivatives: jvp and transpose raise, as in jax.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.effects import Effect
from minijax.core.trace import Primitive
from minijax.lax import control_flow
from minijax.lax.shape import broadcast
from minijax.lowering.types import dense_elements, elem_type, scalar_literal, string_attr
from minijax.transforms.batching import moveaxis

__all__ = ["FrozenDict", "HashableArray", "VMAP_METHODS", "attribute_text", "default_layout",
           "emit_custom_call", "ffi_call_p", "ffi_effect", "unwrap_attributes",
           "wrap_attributes"]

ffi_call_p = Primitive("ffi_call", multiple_results=True)

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)


class FfiEffect(Effect):
    """The effect of an FFI call made with ``has_side_effect=True``: it is never dropped."""

    def __str__(self) -> str:
        return "FFI"


ffi_effect = FfiEffect("FFI")


# ---- attributes: hashable in params, spelled as MLIR attributes when lowered ----------------

class HashableArray:
    """A NumPy array compared and hashed by value (an attribute in a primitive's params)."""

    __slots__ = ("val",)

    def __init__(self, val: np.ndarray):
        self.val = np.array(val, copy=True)
        self.val.setflags(write=False)

    def __eq__(self, other) -> bool:
        return (isinstance(other, HashableArray) and self.val.dtype == other.val.dtype
                and self.val.shape == other.val.shape
                and bool(np.array_equal(self.val, other.val)))

    def __hash__(self) -> int:
        return hash((self.val.shape, self.val.dtype, self.val.tobytes()))

    def __repr__(self) -> str:
        return f"HashableArray({self.val!r})"


class FrozenDict(Mapping):
    """A read-only dict, hashed by its items (a dictionary attribute in params)."""

    __slots__ = ("_d",)

    def __init__(self, d: Mapping):
        self._d = dict(d)

    def __getitem__(self, key):
        return self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._d.items(), key=lambda kv: kv[0])))

    def __eq__(self, other) -> bool:
        return isinstance(other, FrozenDict) and self._d == other._d

    def __repr__(self) -> str:
        return f"FrozenDict({self._d!r})"


class _Typed:
    """A scalar attribute compared with its type: ``eps=1.0`` (f64) and
    ``eps=np.float32(1)`` (f32) are different calls, although ``1.0 == np.float32(1)``
    (so the eager cache does not run one's executable for the other). Prints as the
    value."""

    __slots__ = ("val",)

    def __init__(self, val):
        self.val = val

    def __eq__(self, other) -> bool:
        return (isinstance(other, _Typed) and type(self.val) is type(other.val)
                and self.val == other.val)

    def __hash__(self) -> int:
        return hash((type(self.val), self.val))

    def __repr__(self) -> str:
        return repr(self.val)


def _hashable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return HashableArray(v)
    if isinstance(v, dict):
        return FrozenDict({k: _hashable(x) for k, x in v.items()})
    if isinstance(v, tuple):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, (bool, int, float, complex, np.generic)):
        return _Typed(v)
    return v


def wrap_attributes(kwargs: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """``kwargs`` as sorted ``(name, value)`` pairs with hashable values (TypeError for a
    value that cannot be made hashable, as jax)."""
    out = []
    for k, v in sorted(kwargs.items()):
        v = _hashable(v)
        try:
            hash(v)
        except TypeError as e:
            raise TypeError(f"Non-hashable keyword argument to ffi_call {k}: {v}") from e
        out.append((k, v))
    return tuple(out)


def _unwrap(v: Any) -> Any:
    if isinstance(v, (HashableArray, _Typed)):
        return v.val
    if isinstance(v, FrozenDict):
        return {k: _unwrap(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return tuple(_unwrap(x) for x in v)
    return v


def unwrap_attributes(attributes: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    return {k: _unwrap(v) for k, v in attributes}


_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")


def _key(k: str) -> str:
    if not isinstance(k, str):
        raise TypeError(f"FFI attribute names must be strings, got {k!r}")
    return k if _BARE_KEY.match(k) else string_attr(k)


def _bytes_attr(b: bytes) -> str:
    return '"' + "".join(chr(c) if 0x20 <= c < 0x7F and c not in (0x22, 0x5C) else
                         f"\\{c:02X}" for c in b) + '"'


def _scalar_attr(x: np.generic) -> str:
    dt = np.dtype(x.dtype)
    if dt == dtypes.bool_:
        return "true" if bool(x) else "false"
    if not (dtypes.is_int(dt) or dtypes.is_float(dt)):
        raise TypeError(f"Unsupported scalar attribute type: {type(x)}")
    try:
        ty = elem_type(dt)
    except KeyError:
        raise TypeError(f"Unsupported scalar attribute type: {type(x)}") from None
    return f"{scalar_literal(x, dt)} : {ty}"


def _array_attr(x: np.ndarray) -> str:
    if 0 in x.strides and x.size > 0:
        raise ValueError("NumPy arrays with zero strides are not supported as MLIR attributes")
    try:
        elem_type(x.dtype)
    except KeyError:
        raise TypeError(f"Unsupported array attribute dtype: {x.dtype}") from None
    return dense_elements(x, ShapedArray(x.shape, x.dtype))


_PY_SCALAR_DTYPES = ((bool, np.dtype(np.bool_)), (int, np.dtype(np.int64)),
                     (float, np.dtype(np.float64)), (complex, np.dtype(np.complex128)))


def attribute_text(v: Any) -> str:
    """The MLIR attribute for the value of a handler attribute (jax's typing of it)."""
    if isinstance(v, (HashableArray, FrozenDict, _Typed)):
        v = _unwrap(v)
    if isinstance(v, np.ndarray):
        return _array_attr(v)
    if isinstance(v, np.generic):
        if isinstance(v, (np.number, np.bool_)) or np.dtype(v.dtype) == dtypes.bfloat16:
            return _scalar_attr(v)
        return _type_attr(np.dtype(type(v)))
    if isinstance(v, np.dtype):
        return _type_attr(v)
    if isinstance(v, str):
        return string_attr(v)
    if isinstance(v, bytes):
        return _bytes_attr(v)
    for ptype, dt in _PY_SCALAR_DTYPES:
        if isinstance(v, ptype):
            if ptype is int and not np.iinfo(np.int64).min <= v <= np.iinfo(np.int64).max:
                raise OverflowError(f"Python int {v} too large to convert to int64")
            return _scalar_attr(np.array(v, dt)[()])
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {attribute_text(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(attribute_text(x) for x in v) + "]"
    if _is_mlir_attribute(v):  # jaxlib's ir.Attribute (jax's spelling of a lowering's
        return str(v)          # backend_config entries): its MLIR text
    jax_array = getattr(v, "__jax_array__", None)
    if jax_array is not None:
        return attribute_text(np.asarray(jax_array()))
    raise TypeError(f"No attribute handler defined for type: {type(v)}")


def _type_attr(dt: np.dtype) -> str:
    try:
        return elem_type(dt)
    except KeyError:
        raise TypeError(f"No attribute handler defined for dtype: {dt}") from None


def _is_mlir_attribute(v: Any) -> bool:
    return any(c.__name__ in ("Attribute", "Type") and c.__module__.startswith("jaxlib.mlir")
               for c in type(v).__mro__)


# ---- lowering ------------------------------------------------------------------------------

def _layout_attr(layout: Sequence[int]) -> str:
    layout = [int(d) for d in layout]
    if not layout:
        return "dense<> : tensor<0xindex>"
    body = str(layout[0]) if len(layout) == 1 else "[" + ", ".join(map(str, layout)) + "]"
    return f"dense<{body}> : tensor<{len(layout)}xindex>"


def default_layout(aval) -> tuple[int, ...]:
    """Row-major, minor-to-major: ``(ndim-1, ..., 0)``."""
    return tuple(range(len(aval.shape) - 1, -1, -1))


def emit_custom_call(ctx, target_name: str, operands: Sequence, result_avals: Sequence, *,
                     api_version: int = 4, backend_config: Any = None,
                     attributes: Mapping[str, Any] | None = None,
                     has_side_effect: bool = False,
                     operand_layouts: Sequence[Sequence[int]] | None = None,
                     result_layouts: Sequence[Sequence[int]] | None = None,
                     operand_output_aliases: Mapping[int, int] | None = None) -> list:
    """Emit ``stablehlo.custom_call @target_name`` (the results as a list).

    With ``api_version >= 4`` (the typed FFI) ``backend_config`` (a dict or None) and
    ``attributes`` become the ``mhlo.backend_config`` dictionary and the op's
    ``api_version`` is 1, as jax writes it; below 4 ``backend_config`` is the opaque
    string and attributes are an error. Layouts are minor-to-major (None: none given).
    """
    attributes = dict(attributes or {})
    attrs: dict[str, str] = {}
    if api_version >= 4:
        if backend_config is not None and not isinstance(backend_config, Mapping):
            raise ValueError("When api_version > 4, backend_config must be a dictionary.")
        config = dict(backend_config or {}, **attributes)
        attrs["api_version"] = "1 : i32"
        attrs["backend_config"] = '""'
    else:
        if attributes:
            raise ValueError("The use of ffi_call attributes requires a custom call API "
                             f"version of at least 4; got api_version={api_version}.")
        config = None
        if backend_config is None:
            backend_config = ""
        if not isinstance(backend_config, (str, bytes)):
            raise ValueError(f"custom_call backend_config unexpected type: {backend_config}")
        attrs["api_version"] = f"{int(api_version)} : i32"
        attrs["backend_config"] = (_bytes_attr(backend_config) if isinstance(backend_config, bytes)
                                   else string_attr(backend_config))
    attrs["call_target_name"] = string_attr(target_name)
    attrs["called_computations"] = "[]"
    attrs["has_side_effect"] = "true" if has_side_effect else "false"
    operands = list(operands)
    if operand_layouts is not None:
        if len(operand_layouts) != len(operands):
            raise ValueError(f"custom call {target_name}: {len(operand_layouts)} operand "
                             f"layouts for {len(operands)} operands")
        attrs["operand_layouts"] = "[" + ", ".join(map(_layout_attr, operand_layouts)) + "]"
    if result_layouts is not None:
        if len(result_layouts) != len(result_avals):
            raise ValueError(f"custom call {target_name}: {len(result_layouts)} result "
                             f"layouts for {len(result_avals)} results")
        attrs["result_layouts"] = "[" + ", ".join(map(_layout_attr, result_layouts)) + "]"
    if operand_output_aliases:
        attrs["output_operand_aliases"] = "[" + ", ".join(
            f"#stablehlo.output_operand_alias<output_tuple_indices = "
            f"{[int(o)] if len(result_avals) > 1 else []}, operand_index = {int(i)}, "
            f"operand_tuple_indices = []>"
            for i, o in operand_output_aliases.items()) + "]"
    if config is not None:
        attrs["mhlo.backend_config"] = "{" + ", ".join(
            f"{_key(k)} = {attribute_text(v)}" for k, v in config.items()) + "}"
    results = list(result_avals)
    if len(results) == 1:
        return [ctx.op("stablehlo.custom_call", operands, results[0], attrs)]
    outs = ctx.op("stablehlo.custom_call", operands, results, attrs)
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


# ---- the primitive's rules -----------------------------------------------------------------

def _abstract_eval(*avals, result_avals, **params):
    return list(result_avals)


def _effects(params) -> frozenset:
    return frozenset((ffi_effect,)) if params["has_side_effect"] else frozenset()


def _lower(ctx, *args, result_avals, vmap_method, target_name, has_side_effect,
           input_layouts, output_layouts, input_output_aliases, custom_call_api_version,
           legacy_backend_config, attributes):
    return emit_custom_call(
        ctx, target_name, args, ctx.avals_out, api_version=custom_call_api_version,
        backend_config=legacy_backend_config, attributes=unwrap_attributes(attributes),
        has_side_effect=has_side_effect, operand_layouts=input_layouts,
        result_layouts=output_layouts, operand_output_aliases=dict(input_output_aliases))


def _no_derivative(*args, target_name, **params):
    raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. "
                     "You can use `jax.custom_jvp` or `jax.custom_jvp` to add support.")


def _jvp(primals, tangents, **params):
    _no_derivative(**params)


def _transpose(ct, *args, **params):
    _no_derivative(**params)


def _batch_layout(layout):
    """A layout (minor-to-major) of an operand that got a leading batch axis."""
    return None if layout is None else tuple(int(n) + 1 for n in layout) + (0,)


def _batch(trace, vals, dims, *, vmap_method, result_avals, **params):
    size = trace.axis_size
    moved = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    batched_avals = tuple(ShapedArray((size, *a.shape), a.dtype) for a in result_avals)
    if vmap_method in ("sequential", "sequential_unrolled"):
        batched = [d is not None for d in dims]
        xs = [v for v, b in zip(moved, batched) if b]
        fixed = [v for v, b in zip(moved, batched) if not b]

        def body(carry, x):
            it_x, it_f = iter(x), iter(fixed)
            args = [next(it_x) if b else next(it_f) for b in batched]
            return carry, ffi_call_p.bind(*args, vmap_method=vmap_method,
                                          result_avals=result_avals, **params)

        _, outs = control_flow.scan(body, (), xs, length=size,
                                    unroll=vmap_method == "sequential_unrolled")
        return list(outs), [0] * len(outs)
    if vmap_method not in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        raise NotImplementedError(
            "vmap is only supported for the ffi_call primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    params["output_layouts"] = tuple(map(_batch_layout, params["output_layouts"]))
    if vmap_method == "legacy_vectorized":
        params["input_layouts"] = tuple(
            layout if d is None else _batch_layout(layout)
            for layout, d in zip(params["input_layouts"], dims))
        args = moved
    else:
        n = size if vmap_method == "broadcast_all" else 1
        args = [broadcast(v, (n,)) if d is None else v for v, d in zip(moved, dims)]
        params["input_layouts"] = tuple(map(_batch_layout, params["input_layouts"]))
    outs = ffi_call_p.bind(*args, vmap_method=vmap_method, result_avals=batched_avals,
                           **params)
    return list(outs), [0] * len(outs)


ffi_call_p.def_abstract_eval(_abstract_eval)
ffi_call_p.def_lowering(_lower)
ffi_call_p.def_jvp(_jvp)
ffi_call_p.def_transpose(_transpose)
ffi_call_p.def_batch(_batch)
ffi_call_p.def_rule("effects")(_effects)

