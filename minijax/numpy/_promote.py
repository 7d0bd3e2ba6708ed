"""Dtype promotion and broadcasting for minijax.numpy (jax.numpy's rules)."""

from __future__ import annotations

import warnings

import numpy as np

from minijax import lax
from minijax.config import TRACE_KEY, config
from minijax.core import dtypes
from minijax.core.errors import IncompatibleShapesError
from minijax.core.lru import MemoCache
from minijax.core.primitives import broadcast_in_dim_p
from minijax.core.shape_poly import DimExpr
from minijax.core.trace import Tracer, get_aval, is_python_scalar
from minijax.lax.convert import is_concrete_jvp
from minijax.transforms.ad import JVPTracer


def typed(x) -> tuple[np.dtype, bool]:
    aval = get_aval(x)
    return aval.dtype, aval.weak_type


def result_type_of(*args) -> tuple[np.dtype, bool]:
    return dtypes.result_type(*(typed(x) for x in args))


def convert(x, dtype: np.dtype, weak_type: bool = False):
    """``x`` as ``dtype``; Python scalars stay Python values (folded, not traced)."""
    if is_python_scalar(x):
        if weak_type:
            kind = np.dtype(dtype).kind
            py = bool if kind == "b" else int if kind in "iu" else complex if kind == "c" else float
            if py is not complex and isinstance(x, complex):
                x = x.real
            return py(x)
        return np.asarray(x, dtype=dtype)
    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x, dtype=dtype) if not weak_type else lax.convert_element_type(
            x, dtype, weak_type)
    return lax.convert_element_type(x, dtype, weak_type)


def promote_dtypes(*args):
    """Convert all args to their common dtype."""
    if len(args) < 2:
        return list(args)
    dt, weak = result_type_of(*args)
    return [convert(x, dt, weak) for x in args]


def promote_dtypes_inexact(*args):
    """Common dtype, then at least floating point (as jax: 64-bit integers become float64,
    narrower integers and bools float32, in 64-bit mode too)."""
    dt, weak = result_type_of(*args)
    dt = _to_inexact(dt)
    return [convert(x, dt, weak) for x in args]


def _to_inexact(dt: np.dtype) -> np.dtype:
    if dtypes.is_inexact(dt):
        return dt
    return dtypes.float64 if dt in (dtypes.int64, dtypes.uint64) else dtypes.float32


def promote_dtypes_numeric(*args):
    dt, weak = result_type_of(*args)
    if dt == dtypes.bool_:
        dt = dtypes.int32  # as jax: int32 even in 64-bit mode
    return [convert(x, dt, weak) for x in args]


def broadcast_shapes(*shapes) -> tuple:
    """numpy's broadcasting of shapes; ``IncompatibleShapesError`` (a ValueError and a
    TypeError, see ``minijax.errors``) naming them when incompatible."""
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, ndim - len(s)):
            o = out[i]
            if d != o:
                if o == 1:
                    out[i] = d
                elif d != 1:
                    raise IncompatibleShapesError(
                        "Incompatible shapes for broadcasting: "
                        + ", ".join(str(tuple(s)) for s in shapes))
    return tuple(out)


def broadcast_to_shape(x, shape: tuple):
    """Broadcast ``x`` to ``shape`` with numpy's rules (rank promotion on the left)."""
    aval = get_aval(x)
    if aval.shape == shape:
        return x
    nlead = len(shape) - aval.ndim
    if nlead < 0 or any(d not in (1, s) for d, s in zip(aval.shape, shape[nlead:])):
        raise ValueError(f"Incompatible shapes for broadcasting: {aval.shape} and {shape}")
    if is_python_scalar(x):
        x = np.asarray(x, dtype=aval.dtype) if not aval.weak_type else x
    # Squeeze size-1 dims that grow, then broadcast_in_dim into place.
    keep = [i for i, (d, s) in enumerate(zip(aval.shape, shape[nlead:])) if d == s]
    if len(keep) != aval.ndim:
        x = lax.reshape(x, tuple(aval.shape[i] for i in keep))
    return lax.broadcast_in_dim(x, shape, tuple(nlead + i for i in keep))


def broadcast_arrays(*args, fname: str | None = None, inputs=None):
    """Broadcast to a common shape; rank-0 operands stay rank-0 (lax broadcasts them).
    With ``fname``, operands of different ranks follow ``jax_numpy_rank_promotion``;
    ``inputs`` are the operands ``fname`` was called with (before dtype promotion)."""
    shapes = [get_aval(x).shape for x in args]
    nonscalar = [s for s in shapes if s]
    if not nonscalar or all(s == nonscalar[0] for s in nonscalar):
        return list(args)
    if fname is not None and len({len(s) for s in nonscalar}) > 1:
        _rank_promotion(fname, shapes, args if inputs is None else inputs)
    shape = broadcast_shapes(*shapes)
    return [x if s == () or s == shape else broadcast_to_shape(x, shape)
            for x, s in zip(args, shapes)]


# The (function, operand types) whose rank promotion has been warned about. jax warns
# when it traces a numpy function, and each function's traces are cached by operand
# types: one warning per combination (eager, under jit, vmap or grad alike) until
# ``clear_caches``.
_rank_warned = MemoCache("minijax_memo_cache_size")


def _rank_promotion(fname: str, shapes, inputs) -> None:
    """Implicit rank promotion: fine, a warning or a ValueError, as the
    ``jax_numpy_rank_promotion`` option says (``allow``, ``warn``, ``raise``)."""
    mode = config.minijax_numpy_rank_promotion
    if mode == "allow":
        return
    shown = " ".join(str(tuple(s)) for s in shapes)
    if mode == "raise":
        raise ValueError(f"Operands could not be broadcast together for {fname} on shapes "
                         f"{shown} and with the config option "
                         f"jax_numpy_rank_promotion='raise'.")
    avals = [get_aval(x) for x in inputs]
    key = (fname, *[(a.shape, a.dtype, a.weak_type) for a in avals])
    if key in _rank_warned:
        return
    _rank_warned[key] = True
    warnings.warn(f"Following NumPy automatic rank promotion for {fname} on shapes {shown}. "
                  f"Set the jax_numpy_rank_promotion config option to 'allow' to disable "
                  f"this warning.", stacklevel=3)


def promote_args(fname: str, *args):
    """Dtype promotion then broadcasting, for elementwise functions."""
    if len(args) == 1:
        x = args[0]
        if isinstance(getattr(x, "dtype", None), dtypes.ExtendedDType):
            return [x]
        return [ensure_array(check_args(fname, args)[0])]
    planned = _replay(_PROMOTE, fname, args)
    if planned is not None:
        return planned
    if (ext := promote_extended(fname, args)) is not None:
        return ext
    return broadcast_arrays(*promote_dtypes(*check_args(fname, args)), fname=fname, inputs=args)


def promote_extended(fname: str, args):
    """``args`` broadcast together when one has an extended dtype (typed PRNG keys), as
    jax's ``promote_args``: operands of one extended dtype pass (the primitive decides
    what it accepts), a mix with other dtypes is a TypeError. None when none has."""
    found = [getattr(x, "dtype", None) for x in args]
    if not any(isinstance(d, dtypes.ExtendedDType) for d in found):
        return None
    found = [d if isinstance(d, dtypes.ExtendedDType) else get_aval(x).dtype
             for d, x in zip(found, args)]
    if any(d != found[0] for d in found):
        raise TypeError(f"{fname} does not accept dtypes {', '.join(map(str, found))}.")
    dt = found[0]
    shape = broadcast_shapes(*[tuple(x.shape) for x in args])
    full = (*shape, *dt.element_shape)
    out = []
    for x in args:
        w = dt.to_physical(x)
        nd = get_aval(w).ndim
        if tuple(get_aval(w).shape) != full:
            x = dt.from_physical(lax.broadcast_in_dim(w, full, tuple(range(len(full) - nd,
                                                                             len(full)))))
        out.append(x)
    return out


def promote_args_inexact(fname: str, *args):
    if len(args) == 1:
        x = args[0]
        aval = getattr(x, "aval", None)
        if aval is not None and dtypes.is_inexact(aval.dtype) and _plain(type(x)):
            return [x]
    planned = _replay(_INEXACT, fname, args)
    if planned is not None:
        return planned
    return broadcast_arrays(*promote_dtypes_inexact(*check_args(fname, args)), fname=fname,
                            inputs=args)


def promote_args_numeric(fname: str, *args):
    planned = _replay(_NUMERIC, fname, args)
    if planned is not None:
        return planned
    return broadcast_arrays(*promote_dtypes_numeric(*check_args(fname, args)), fname=fname,
                            inputs=args)


# ---- promotion plans ------------------------------------------------------------------
# What promote_args* does to arrays and Python scalars depends only on their types (the
# avals; a scalar's Python type), so for each combination it is worked out once by the
# code above and then replayed: which operands are converted to which dtype, and which
# are broadcast where. Replaying binds exactly the equations the code above binds, in
# the same order. Flags that change the outcome (x64, dtype and rank promotion) clear
# the table; NumPy operands, lists and failures take the code above every time.

_PROMOTE, _INEXACT, _NUMERIC = 0, 1, 2
_plans = MemoCache("minijax_memo_cache_size")
config.on_change(TRACE_KEY, lambda _value: _plans.clear())
_SCALARS = (int, float, bool, complex)


_PLAIN: dict[type, bool] = {}


def _plain(tx: type) -> bool:
    """Whether values of type ``tx`` are arrays themselves, not array-like objects that
    convert with ``__jax_array__`` (flax's Variable forwards ``aval`` to its value)."""
    ok = _PLAIN.get(tx)
    if ok is None:
        ok = _PLAIN[tx] = not hasattr(tx, "__jax_array__")
    return ok


def _replay(kind: int, fname: str, args: tuple):
    """``args`` promoted and broadcast by the plan for their types (made on first use);
    None when they are not all arrays, tracers and Python scalars."""
    key = [kind]
    jvps = None  # jvp tracers of concrete values: converted even to their own dtype (jax)
    for i, x in enumerate(args):
        tx = type(x)
        if tx in _SCALARS:
            key.append(tx)
            continue
        aval = getattr(x, "aval", None)
        if aval is None or isinstance(x, (np.ndarray, np.generic)) or not _plain(tx):
            return None
        if tx is JVPTracer and is_concrete_jvp(x):
            jvps = (jvps or []) + [i]
        key.append(aval)
    key = tuple(key)
    plan = _plans.get(key)
    if plan is None:
        plan = _make_plan(kind, args)
        if plan is None:
            return None
        _plans[key] = plan
    dt, weak, converts, broadcasts = plan
    out = list(args)
    if jvps:
        converts = tuple(sorted(set(converts) | set(jvps)))
    if converts:
        for i in converts:
            x = out[i]
            out[i] = convert(x, dt, weak) if type(x) in _SCALARS else \
                lax.convert_element_type(x, dt, weak)
    if broadcasts:
        for i, reshape_to, shape, dims in broadcasts:
            x = out[i]
            if reshape_to is not None:
                x = lax.reshape(x, reshape_to)
            out[i] = broadcast_in_dim_p.bind(x, broadcast_dimensions=dims, shape=shape,
                                             sharding=None)
    return out


def _make_plan(kind: int, args: tuple):
    """The plan (see above) for operands like ``args``: ``(dtype, weak_type, indices of
    the operands to convert, (index, reshape_to, shape, broadcast_dimensions) of the
    operands to broadcast)``; None when it must not be replayed."""
    try:
        dt, weak = result_type_of(*args)
        if kind == _INEXACT:
            dt = _to_inexact(dt)
        elif kind == _NUMERIC and dt == dtypes.bool_:
            dt = dtypes.int32
    except Exception:  # noqa: BLE001 - the code above raises it again, where it belongs
        return None
    converts = []
    shapes = []
    for i, x in enumerate(args):
        aval = get_aval(x)
        shapes.append(aval.shape)
        if type(x) in _SCALARS or aval.dtype != dt or aval.weak_type != weak:
            converts.append(i)
    nonscalar = [s for s in shapes if s]
    broadcasts = []
    if nonscalar and any(s != nonscalar[0] for s in nonscalar):
        if (len({len(s) for s in nonscalar}) > 1
                and config.minijax_numpy_rank_promotion != "allow"):
            return None  # warns (once per operand types) or raises, naming the function
        try:
            shape = broadcast_shapes(*shapes)
        except ValueError:
            return None
        for i, s in enumerate(shapes):
            if s == () or s == shape:
                continue
            nlead = len(shape) - len(s)
            keep = [j for j, (d, t) in enumerate(zip(s, shape[nlead:])) if d == t]
            reshape_to = tuple(s[j] for j in keep) if len(keep) != len(s) else None
            broadcasts.append((i, reshape_to, shape, tuple(nlead + j for j in keep)))
    return dt, weak, tuple(converts), tuple(broadcasts)


def check_arraylike(fname: str, *args) -> None:
    """TypeError for a list or tuple among ``args``, as jax's functions refuse them where
    NumPy would convert them (the one check of its kind; ``fname`` names the function)."""
    for i, x in enumerate(args):
        if isinstance(x, (list, tuple)):
            raise TypeError(f"{fname} requires ndarray or scalar arguments, got {type(x).__name__} "
                            f"at position {i}. Use minijax.numpy.asarray(...) to convert it.")


def check_args(fname: str, args):
    """Reject lists (as jax does); NumPy inputs become minijax arrays."""
    check_arraylike(fname, *args)
    out = []
    for x in args:
        if isinstance(x, (np.ndarray, np.generic)):
            x = ensure_array(x)
        elif type(x) is DimExpr:
            x = x.dimension_as_value()
        elif hasattr(type(x), "__jax_array__") and not isinstance(x, Tracer):
            x = x.__jax_array__()  # an array-like object (flax's Variable), as jax
        out.append(x)
    return out


def ensure_array(x):
    """``x`` as a minijax array or tracer (Python scalars keep their weak type)."""
    if hasattr(x, "aval"):
        return x
    if type(x) is DimExpr:
        return x.dimension_as_value()
    from minijax.runtime.transfer import device_put
    if isinstance(x, (np.ndarray, np.generic)):
        return device_put(np.asarray(x, dtypes.canonicalize(x.dtype)))
    return device_put(x)
