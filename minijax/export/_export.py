"""``Exported``: a jitted function lowered to StableHLO in jax's calling convention.

``export(jit(f))(*specs)`` lowers ``f`` and rewrites the module the way ``jax.export``
does (calling convention version 10): ``@main`` takes the array arguments that the
function uses (``module_kept_var_idx``), preceded by a ``tensor<i32>`` platform index
(attribute ``jax.global_constant = "_platform_index"``) when more than one platform is
targeted; the module carries ``jax.uses_shape_polymorphism``. The module is kept as a
StableHLO portable artifact (``mlir_module_serialized``), which is what jax stores.

``Exported.call`` binds ``call_exported``: its lowering splices the artifact's functions
into the caller's module and calls its ``main`` (so it works under ``jit``), it runs
eagerly through the generic one-equation path, ``vmap`` runs it once per element in a
loop, and reverse-mode AD calls the exported vjp (``Exported.vjp()``).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray, ShapeDtypeStruct
from minijax.core.shape_poly import DimExpr, dim_vars_of, evaluate, solve_dim_vars
from minijax.core.trace import Primitive, eval_jaxpr, get_aval
from minijax.lowering.lower import ModuleText
from minijax.lowering.types import type_of
from minijax.runtime import backend as _backend
from minijax.runtime import portable
from minijax.stages.jit import Wrapped
from minijax._pytree import tree_flatten, tree_unflatten

__all__ = ["DisabledSafetyCheck", "Exported", "call", "call_exported",
           "default_export_platform", "export", "maximum_supported_calling_convention_version",
           "minimum_supported_calling_convention_version"]

minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
CALLING_CONVENTION_VERSION = 10


class DisabledSafetyCheck:
    """A safety check not to run when exporting or calling (as jax's)."""

    __slots__ = ("_impl",)

    @classmethod
    def platform(cls) -> DisabledSafetyCheck:
        """Allow calling on a platform the function was not exported for."""
        return DisabledSafetyCheck("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
        """Allow a custom call whose target has no compatibility guarantee."""
        return DisabledSafetyCheck(f"custom_call:{target_name}")

    @classmethod
    def shape_assertions(cls) -> DisabledSafetyCheck:
        """(Deprecated in jax, a no-op.)"""
        return DisabledSafetyCheck("shape_assertions")

    def is_custom_call(self) -> str | None:
        """The target name, if this disables the check of one custom call."""
        return self._impl[len("custom_call:"):] if self._impl.startswith("custom_call:") \
            else None

    def __init__(self, _impl: str):
        self._impl = _impl

    def __str__(self) -> str:
        return self._impl

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self) -> int:
        return hash(self._impl)


@dataclasses.dataclass(frozen=True, eq=False)
class Exported:
    """A function lowered to StableHLO for one set of argument types (as ``jax.export``'s).

    Attributes: ``fun_name``, ``in_tree`` (of ``(args, kwargs)``), ``in_avals``,
    ``out_tree``, ``out_avals``, ``in_shardings_hlo`` / ``out_shardings_hlo`` (None:
    unspecified), ``nr_devices``, ``platforms``, ``ordered_effects``,
    ``unordered_effects``, ``disabled_safety_checks``, ``mlir_module_serialized`` (the
    portable artifact), ``calling_convention_version``, ``module_kept_var_idx`` (the
    arguments ``@main`` takes), ``uses_global_constants`` (the module needs shape
    refinement: symbolic shapes or a platform index).
    """

    fun_name: str
    in_tree: Any
    in_avals: tuple
    out_tree: Any
    out_avals: tuple
    _has_named_shardings: bool
    _in_named_shardings: tuple
    _out_named_shardings: tuple
    in_shardings_hlo: tuple
    out_shardings_hlo: tuple
    nr_devices: int
    platforms: tuple
    ordered_effects: tuple
    unordered_effects: tuple
    disabled_safety_checks: Sequence[DisabledSafetyCheck]
    mlir_module_serialized: bytes
    calling_convention_version: int
    module_kept_var_idx: tuple
    uses_global_constants: bool
    _get_vjp: Callable[[Exported], Exported] | None

    def mlir_module(self, serialized: bool = True):
        """The module as text (or, with ``serialized=False``, as an ``ir.Module``)."""
        module = portable.deserialize(self.mlir_module_serialized)
        return portable.to_text(module) if serialized else module

    def __str__(self) -> str:
        return f"Exported(fun_name={self.fun_name}, ...)"

    __repr__ = __str__

    def has_vjp(self) -> bool:
        """Whether this Exported can give its vjp (``vjp()``)."""
        return self._get_vjp is not None

    def vjp(self) -> Exported:
        """The exported vjp: takes the primal arguments then one cotangent per primal
        output (flat), returns the cotangents of the flat primal inputs."""
        if self._get_vjp is None:
            raise ValueError("No VJP is available")
        cached = _vjp_cache.get(self)
        if cached is None:
            cached = _vjp_cache[self] = self._get_vjp(self)
        return cached

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """The bytes of this Exported in jax's format; ``vjp_order=n`` also stores ``n``
        orders of vjp (for ``grad`` of order ``n`` of the deserialized function)."""
        from minijax.export._serialization import serialize
        return serialize(self, vjp_order=vjp_order)

    def call(self, *args, **kwargs):
        """Call the exported function (under ``jit``, ``grad``, ``vmap`` or eagerly)."""
        return call_exported(self)(*args, **kwargs)

    def in_shardings_jax(self, mesh) -> tuple:
        """Shardings for the arguments on ``mesh`` (a ``Mesh`` or ``AbstractMesh`` with
        the axes of the mesh the function was exported for; None where unspecified)."""
        return tuple(_named_on_mesh(s, mesh, self._has_named_shardings, h, a) for s, h, a in
                     zip(self._in_named_shardings, self.in_shardings_hlo, self.in_avals))

    def out_shardings_jax(self, mesh) -> tuple:
        """Shardings for the results on ``mesh`` (as ``in_shardings_jax``)."""
        return tuple(_named_on_mesh(s, mesh, self._has_named_shardings, h, a) for s, h, a in
                     zip(self._out_named_shardings, self.out_shardings_hlo, self.out_avals))


def _named_on_mesh(s, mesh, has_named: bool = True, hlo=None, aval=None):
    if not has_named:  # an HloSharding (jax's exports before 1/2026): its spec on mesh
        if hlo is None:
            return None
        from minijax.sharding import NamedSharding
        from minijax.runtime.sharding import spec_of_hlo
        spec = spec_of_hlo(mesh, hlo, len(aval.shape))
        if spec is None:
            raise ValueError(f"the HloSharding {hlo} is not a PartitionSpec over {mesh}")
        return NamedSharding(mesh, spec, memory_kind="device")
    if s is None:
        return None
    from minijax.sharding import NamedSharding
    am = mesh.abstract_mesh
    if (tuple(am.axis_sizes) != tuple(s.mesh.axis_sizes)
            or tuple(am.axis_names) != tuple(s.mesh.axis_names)
            or tuple(am.axis_types) != tuple(s.mesh.axis_types)):
        raise ValueError(f"NamedSharding new mesh {mesh} does not match the mesh used for "
                         f"export {s.mesh}.")
    return NamedSharding(mesh, s.spec, memory_kind=s.memory_kind)


_vjp_cache: dict = {}


def default_export_platform() -> str:
    """The platform exports target by default: the default backend's (``"cpu"``,
    ``"cuda"``, ...)."""
    return _canonical_platform(_backend.default_backend())


def _canonical_platform(p: str) -> str:
    p = p.lower()
    return {"gpu": "cuda", "host": "cpu"}.get(p, p)


# ---- export --------------------------------------------------------------------------------

# Custom call targets whose compatibility jax guarantees (its _export.py list).
_LAPACK = [f"lapack_{t}{op}_ffi" for op in ("potrf", "geqrf", "getrf", "gesdd", "trsm", "gtsv",
                                            "syevd", "geev", "sytrd", "gehrd", "gees")
           for t in "sdcz"]
_LAPACK += [f"lapack_{t}orgqr_ffi" for t in "sd"] + [f"lapack_{t}ungqr_ffi" for t in "cz"]
_LAPACK += [f"lapack_{t}heevd_ffi" for t in "cz"] + [f"lapack_{t}hetrd_ffi" for t in "cz"]
_STABLE_TARGETS = frozenset(_LAPACK + [
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
    "cu_threefry2x32_ffi", "hip_threefry2x32_ffi", "Eigh", "Qr",
    "ProductOfElementaryHouseholderReflectors", "LuDecomposition", "ApproxTopK",
    "stablehlo.dynamic_approx_top_k", "tf.call_tf_function", "tpu_custom_call",
    "AllocateBuffer", "mosaic_gpu_v2", "stablehlo.dynamic_reduce_window",
    "stablehlo.dynamic_rng_bit_generator", "stablehlo.dynamic_top_k", "shape_assertion",
    "cu_lu_pivots_to_permutation", "cusolver_getrf_ffi", "cusolver_geqrf_ffi",
    "cusolver_orgqr_ffi", "cusolver_potrf_ffi", "cusolver_syevd_ffi", "cusolver_gesvd_ffi",
    "cusolver_gesvdj_ffi", "cusolver_sytrd_ffi", "cusparse_gtsv2_ffi"])
_TARGET_RE = re.compile(r'call_target_name = "((?:[^"\\]|\\.)*)"')


def _check_custom_calls(text: str, disabled: Sequence[DisabledSafetyCheck]) -> None:
    allowed = set(_STABLE_TARGETS)
    for dc in disabled:
        t = dc.is_custom_call()
        if t is not None:
            allowed.add(t)
    if "ALL" in allowed:
        return
    bad = sorted({m for m in _TARGET_RE.findall(text) if m not in allowed})
    if bad:
        raise ValueError(
            "Cannot serialize code with custom calls whose targets have no compatibility "
            "guarantees. See https://docs.jax.dev/en/latest/export/export.html"
            "#compatibility-guarantees-for-custom-calls. Examples are:\n"
            + "\n".join(f"stablehlo.custom_call @{t}" for t in bad) + ".\n")


_MAIN_RE = re.compile(r"func\.func public @main\(")


def _to_calling_convention(text: str, multi_platform: bool, poly: bool = False) -> str:
    """minijax's module text in jax's convention: the module attribute
    ``jax.uses_shape_polymorphism`` and, for several platforms, the platform index as
    ``@main``'s first argument."""
    flag = "true" if multi_platform or poly else "false"
    head, sep, rest = text.partition(" attributes {")
    if sep and "\n" not in head:
        text = f"{head} attributes {{jax.uses_shape_polymorphism = {flag}, {rest}"
    else:
        first, nl, rest = text.partition(" {\n")
        text = f"{first} attributes {{jax.uses_shape_polymorphism = {flag}}} {{\n{rest}"
    if multi_platform:
        m = _MAIN_RE.search(text)
        arg = '%_platform_index: tensor<i32> {jax.global_constant = "_platform_index"} ' \
              'loc(unknown)'
        after = text[m.end():]
        sep = "" if after.startswith(")") else ", "
        text = text[:m.end()] + arg + sep + after
    return text


def _tangent_aval(a: ShapedArray) -> ShapedArray:
    if dtypes.is_inexact(a.dtype):
        return ShapedArray(a.shape, a.dtype)
    return ShapedArray(a.shape, dtypes.float0)


def export(fun_jit: Wrapped, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Callable[..., Exported]:
    """Export ``fun_jit`` (a ``minijax.jit`` function) for serialization, as ``jax.export``.

    Returns a function of argument specs (``ShapeDtypeStruct`` or arrays, as pytrees
    like the function's arguments) that returns an ``Exported``.

    >>> import numpy as np, minijax, minijax.numpy as jnp
    >>> from minijax import export
    >>> exp = export.export(minijax.jit(jnp.sin))(np.arange(4, dtype=np.float32))
    >>> [(a.shape, a.dtype.name) for a in exp.in_avals]
    [((4,), 'float32')]
    >>> export.deserialize(exp.serialize()).call(np.float32([0.5]*4)).shape
    (4,)
    """
    if not isinstance(fun_jit, Wrapped):
        raise ValueError(
            f"Function to be exported must be the result of `jit` but is: {fun_jit}")
    plats = tuple(_canonical_platform(p) for p in platforms) if platforms is not None \
        else (default_export_platform(),)
    checks = tuple(disabled_checks)

    def do_export(*args_specs, **kwargs_specs) -> Exported:
        lowered = fun_jit.lower(*args_specs, **kwargs_specs)
        return _export_lowered(lowered, plats, checks)
    return do_export


def _export_lowered(lowered, platforms: tuple, disabled: tuple) -> Exported:
    entry = lowered._entry
    text = lowered._text
    if isinstance(text, ModuleText) and text.host_callbacks:
        raise NotImplementedError("serialization of host_callbacks is not yet implemented")
    device = lowered._device
    nr_devices = len(getattr(device, "devices", ())) or 1
    _check_custom_calls(text, disabled)
    multi = len(platforms) > 1
    in_avals = tuple(entry.in_avals)
    in_named, out_named = _named_shardings(device, in_avals, tuple(entry.out_avals))
    poly = bool(dim_vars_of(a.shape for a in in_avals))
    module_text = _to_calling_convention(text, multi, poly)
    blob = portable.serialize(module_text)
    out_avals = tuple(entry.out_avals)
    kept = tuple(range(len(in_avals))) if entry.kept is None else tuple(sorted(entry.kept))
    closed = entry.closed
    unordered = tuple(sorted({e for e in _effects_of(closed) if not e.ordered}, key=repr))

    def get_vjp(primal: Exported) -> Exported:
        return _export_vjp(closed, primal, device)

    return Exported(
        fun_name=entry.name, in_tree=entry.in_tree, in_avals=in_avals,
        out_tree=entry.out_tree, out_avals=out_avals, _has_named_shardings=True,
        _in_named_shardings=in_named, _out_named_shardings=out_named,
        in_shardings_hlo=(None,) * len(in_avals), out_shardings_hlo=(None,) * len(out_avals),
        nr_devices=nr_devices, platforms=platforms, ordered_effects=(),
        unordered_effects=unordered, disabled_safety_checks=disabled,
        mlir_module_serialized=blob, calling_convention_version=CALLING_CONVENTION_VERSION,
        module_kept_var_idx=kept, uses_global_constants=multi or poly, _get_vjp=get_vjp)


def _named_shardings(device, in_avals: tuple, out_avals: tuple) -> tuple[tuple, tuple]:
    """The shardings an Exported records, as jax's: per argument and result, the
    ``NamedSharding`` asked for, over its mesh's ``AbstractMesh``, or None where none was
    (unspecified: the partitioner chooses)."""
    from minijax.runtime.sharding import Placement
    if not isinstance(device, Placement):
        return (None,) * len(in_avals), (None,) * len(out_avals)
    if len(device.in_shardings) != len(in_avals):
        raise NotImplementedError(
            f"exporting a sharded function: {len(device.in_shardings)} argument shardings "
            f"for {len(in_avals)} arguments")
    specified = device.in_specified or (True,) * len(in_avals)
    ins = tuple(_abstract_named(s, a) if given else None
                for s, a, given in zip(device.in_shardings, in_avals, specified))
    outs = device.out_shardings or (None,) * len(out_avals)
    return ins, tuple(_abstract_named(s, a) for s, a in zip(outs, out_avals))


def _abstract_named(s, aval):
    from minijax.runtime.sharding import NamedSharding
    if s is None:
        return None
    if not isinstance(s, NamedSharding):
        raise NotImplementedError(f"exporting a function whose values are laid out as {s} "
                                  "(only NamedShardings are recorded)")
    return NamedSharding(s.mesh.abstract_mesh, s.spec, memory_kind=s.memory_kind)


def _effects_of(closed) -> frozenset:
    from minijax.core.effects import jaxpr_effects
    return jaxpr_effects(closed.jaxpr)


def _flat_spec(avals) -> list:
    return [ShapeDtypeStruct(a.shape, a.dtype) for a in avals]


def _export_vjp(closed, primal: Exported, device=None) -> Exported:
    """The Exported of ``(primals..., out cotangents...) -> input cotangents`` of the flat
    function ``closed`` computes; for a sharded primal (``device`` its Placement), laid
    out as jax's: the primals and cotangents as the primal's arguments and results, the
    input cotangents as its arguments."""
    from minijax.api.ad import vjp
    from minijax.stages.jit import jit
    n_in = len(primal.in_avals)

    def fun(*args):
        return list(eval_jaxpr(closed.jaxpr, closed.consts, *args))

    def fun_vjp(*args_and_cts):
        args, cts = args_and_cts[:n_in], args_and_cts[n_in:]
        _, pullback = vjp(fun, *args)
        return list(pullback(list(cts)))

    fun_vjp.__name__ = f"vjp_{primal.fun_name}"
    specs = _flat_spec(primal.in_avals) + _flat_spec(_tangent_aval(a) for a in primal.out_avals)
    from minijax.runtime.sharding import Placement
    if isinstance(device, Placement):
        specified = device.in_specified or (True,) * n_in
        ins = [s if given else None for s, given in zip(device.in_shardings, specified)]
        outs = list(device.out_shardings or (None,) * len(primal.out_avals))
        wrapped = jit(fun_vjp, in_shardings=tuple(ins + outs), out_shardings=list(ins))
    else:
        wrapped = jit(fun_vjp)
    return export(wrapped, platforms=primal.platforms,
                  disabled_checks=primal.disabled_safety_checks)(*specs)


# ---- calling -------------------------------------------------------------------------------

def call(exported: Exported) -> Callable:
    """A function that calls ``exported`` with arguments like those it was exported for."""
    if not isinstance(exported, Exported):
        raise ValueError(f"The exported argument must be an export.Exported. Found {exported}.")
    from minijax.api.custom_derivatives import custom_vjp

    @custom_vjp
    def f_flat(*args_flat):
        return call_exported_p.bind(*args_flat, exported=exported)

    def f_fwd(*args_flat):
        return f_flat(*args_flat), args_flat

    def f_bwd(residual, cts):
        exp_vjp = exported.vjp()
        n = len(residual)
        fixed = []
        for ct, aval in zip(cts, exp_vjp.in_avals[n:]):
            if aval.dtype == dtypes.float0:
                ct = np.zeros(aval.shape, dtypes.float0)
            fixed.append(ct)
        # through the vjp's own tree: jax's takes typed PRNG keys where the primal has them
        args, kwargs = tree_unflatten(exp_vjp.in_tree, [*residual, *fixed])
        out = tree_flatten(call_exported(exp_vjp)(*args, **kwargs))[0]
        # the cotangent of a key (or integer) argument is float0 of the primal's shape (a
        # key's vjp gives it in the key's shape)
        return tuple(np.zeros(a.shape, dtypes.float0)
                     if not dtypes.is_inexact(a.dtype) else ct
                     for ct, a in zip(out, exported.in_avals))

    f_flat.defvjp(f_fwd, f_bwd)

    def f_imported(*args, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs))
        if in_tree != exported.in_tree:
            raise ValueError(
                "The invocation args and kwargs must have the same pytree structure as when "
                f"the function '{exported.fun_name}' was exported, but they have the "
                f"structure {in_tree} instead of {exported.in_tree}")
        return tree_unflatten(exported.out_tree, f_flat(*leaves))
    return f_imported


call_exported = call


def _arg_descr(exported: Exported, i: int, dim: int | None = None) -> str:
    """``args[0]['w']`` (or ``kwargs['scale']``), with ``.shape[dim]``: flat argument ``i``
    by its path in ``(args, kwargs)``, as jax names it in call errors."""
    from minijax._pytree import SequenceKey, keystr, tree_flatten_with_path
    try:
        tree = exported.in_tree
        path = tree_flatten_with_path(tree_unflatten(tree, [0] * tree.num_leaves))[0][i][0]
        head = {SequenceKey(0): "args", SequenceKey(1): "kwargs"}[path[0]]
        descr = head + keystr(path[1:])
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        descr = f"args[{i}]"
    return descr if dim is None else f"{descr}.shape[{dim}]"


def _abstract_eval(*avals, exported: Exported):
    if len(avals) != len(exported.in_avals):
        raise ValueError(f"{exported.fun_name} takes {len(exported.in_avals)} arguments, "
                         f"got {len(avals)}")
    poly = any(type(d) is DimExpr for a in exported.in_avals for d in a.shape)
    if poly:
        return _poly_abstract_eval(avals, exported)
    for i, (want, got) in enumerate(zip(exported.in_avals, avals)):
        if len(want.shape) != len(got.shape):
            raise ValueError(f"Rank mismatch for {_arg_descr(exported, i)}: expected "
                             f"{want.shape} and called with {got.shape}")
        if want.dtype != got.dtype:
            raise ValueError(f"Dtype mismatch for {_arg_descr(exported, i)}: expected "
                             f"{want.dtype} and called with {got.dtype}")
        for d, (w, g) in enumerate(zip(want.shape, got.shape)):
            if w != g:
                raise ValueError(f"Shape mismatch for {_arg_descr(exported, i, d)} (expected "
                                 f"same constant): expected {want.shape} and called with "
                                 f"{got.shape}")
    return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in exported.out_avals]


def _poly_abstract_eval(avals, exported: Exported) -> list:
    """The result types of a call of a shape-polymorphic Exported: the dimension
    variables solved from the arguments' shapes, then put into the result shapes."""
    for i, (want, got) in enumerate(zip(exported.in_avals, avals)):
        if len(want.shape) != len(got.shape):
            raise ValueError(f"Rank mismatch for {_arg_descr(exported, i)}: expected "
                             f"{want.shape} and called with {got.shape}")
        if want.dtype != got.dtype:
            raise ValueError(f"Dtype mismatch for {_arg_descr(exported, i)}: expected "
                             f"{want.dtype} and called with {got.dtype}")
    if all(want.shape == got.shape for want, got in zip(exported.in_avals, avals)):
        # called with the same symbolic shapes (under another polymorphic trace)
        return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in exported.out_avals]
    for i, (want, got) in enumerate(zip(exported.in_avals, avals)):
        for d, (w, g) in enumerate(zip(want.shape, got.shape)):
            if type(w) is not DimExpr and w != g:
                raise ValueError(f"Shape mismatch for {_arg_descr(exported, i, d)} (expected "
                                 f"same constant): expected {want.shape} and called with "
                                 f"{got.shape}")
    try:
        env = solve_dim_vars([a.shape for a in exported.in_avals], [a.shape for a in avals])
    except ValueError as e:
        raise ValueError(f"Input shapes do not match the polymorphic shapes specification "
                         f"of {exported.fun_name}: {e}") from None
    return [ShapedArray(tuple(evaluate(d, env) for d in a.shape), a.dtype, a.weak_type)
            for a in exported.out_avals]


def _compatible(t_static: str, t_dyn: str) -> bool:
    """Whether tensor type ``t_static`` refines ``t_dyn`` (``?`` matches any size)."""
    if t_static == t_dyn:
        return True
    a, b = _TYPE_RE.match(t_static), _TYPE_RE.match(t_dyn)
    if a is None or b is None or a.group(2) != b.group(2):
        return False
    da, db = a.group(1).split("x")[:-1], b.group(1).split("x")[:-1]
    return len(da) == len(db) and all(y == "?" or x == y for x, y in zip(da, db))


_TYPE_RE = re.compile(r"tensor<((?:(?:[0-9]+|\?)x)*)(.*)>$")


_serial = itertools.count()
_imported: dict = {}  # Exported -> (functions text, main symbol, input types, result types)


def _imported_functions(exported: Exported):
    got = _imported.get(exported)
    if got is None:
        prefix = f"_exported{next(_serial)}_{_safe(exported.fun_name)}_"
        text, ins, outs = portable.import_functions(exported.mlir_module_serialized, prefix)
        got = _imported[exported] = (text, prefix + "main", ins, outs)
    return got


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)[:40]


def _lowering(ctx, *args, exported: Exported):
    if exported.ordered_effects:
        raise NotImplementedError("calling an Exported with ordered effects")
    platform = default_export_platform()
    if len(exported.platforms) > 1 or platform not in exported.platforms:
        if platform in exported.platforms:
            index = exported.platforms.index(platform)
        elif DisabledSafetyCheck.platform() in exported.disabled_safety_checks:
            index = 0
        else:
            raise ValueError(f"Function '{exported.fun_name}' was exported for platforms "
                             f"'{exported.platforms}' but it is used on '{(platform,)}'.")
    else:
        index = None
    mod = ctx.module
    num_devices = _context_devices(mod)
    if num_devices != exported.nr_devices and exported.nr_devices != 1:
        raise ValueError(
            f"Function {exported.fun_name} was exported for {exported.nr_devices} devices "
            f"and is called in a context with {num_devices} devices, which is not allowed.")
    text, main, ins, outs = _imported_functions(exported)
    key = ("call_exported", id(exported))
    if key not in mod.cache:
        mod.raw.append(text)
        mod.cache[key] = exported  # keeps it alive so id() stays unique
    operands = []
    if len(exported.platforms) > 1:
        operands.append(ctx.constant(np.int32(index)))
    operands.extend(args[i] for i in exported.module_kept_var_idx)
    if len(operands) != len(ins):
        raise ValueError(f"the module of {exported.fun_name} takes {len(ins)} arguments; "
                         f"its Exported says {len(operands)}")
    converted = []
    for v, t in zip(operands, ins):
        if v.type != t:
            if not _compatible(v.type, t):
                raise ValueError(f"the module of {exported.fun_name} takes {t} where its "
                                 f"Exported says {v.type}")
            # a shape-polymorphic module: refined to the call's shapes when compiled
            v = ctx.op("stablehlo.convert", [v], t)
        converted.append(v)
    out_avals = list(ctx.avals_out)
    out_types = [type_of(a) for a in out_avals]
    if len(outs) != len(out_types) or not all(map(_compatible, out_types, outs)):
        raise ValueError(f"the module of {exported.fun_name} returns {outs}; its Exported "
                         f"says {out_types}")
    if out_types == outs:
        res = ctx.op("func.call", converted, out_avals, {"callee": "@" + main})
        return list(res) if isinstance(res, (list, tuple)) else [res]
    res = ctx.op("func.call", converted, list(outs), {"callee": "@" + main})
    res = list(res) if isinstance(res, (list, tuple)) else [res]
    return [r if r.type == t else ctx.op("stablehlo.convert", [r], a)
            for r, t, a in zip(res, out_types, out_avals)]


def _context_devices(mod) -> int:
    """The number of devices the module being lowered is partitioned over."""
    text = mod.attrs.get("mhlo.num_partitions", "1 : i32")
    try:
        return int(str(text).split(":")[0])
    except ValueError:
        return 1


def _batch(trace, vals, dims, *, exported: Exported):
    """One call per element of the mapped axis, in a loop (the module is compiled for
    one argument shape)."""
    from minijax.lax import control_flow
    from minijax.transforms.batching import moveaxis
    batched = [d is not None for d in dims]
    moved = [moveaxis(v, d, 0) for v, d in zip(vals, dims) if d is not None]
    fixed = [v for v, d in zip(vals, dims) if d is None]

    def body(carry, xs):
        it_x, it_f = iter(xs), iter(fixed)
        args = [next(it_x) if b else next(it_f) for b in batched]
        return carry, call_exported_p.bind(*args, exported=exported)

    _, outs = control_flow.scan(body, (), moved, length=trace.axis_size)
    return list(outs), [0] * len(outs)


def _effects(params) -> frozenset:
    exp = params["exported"]
    return frozenset(exp.ordered_effects) | frozenset(exp.unordered_effects)


call_exported_p = Primitive("call_exported", multiple_results=True)
call_exported_p.def_abstract_eval(_abstract_eval)
call_exported_p.def_lowering(_lowering)
call_exported_p.def_batch(_batch)
call_exported_p.def_rule("effects")(_effects)


def shape_and_dtype(a) -> tuple:
    if isinstance(a, ShapeDtypeStruct):
        return a.shape, a.dtype
    aval = get_aval(a)
    return aval.shape, aval.dtype
