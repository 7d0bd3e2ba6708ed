"""Moving values between host and devices.

Example::

    >>> import numpy as np
    >>> from minijax.runtime import device_put, to_numpy
    >>> x = device_put(np.arange(3.0))      # float64 -> float32 unless x64 is on
    >>> x
    Array([0., 1., 2.], dtype=float32)
    >>> to_numpy(x)
    array([0., 1., 2.], dtype=float32)
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib import _jax

from minijax.config import config
from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.lru import MemoCache
from minijax.core.trace import Tracer
from minijax.runtime import backend as _backend
from minijax.runtime import sharded_executable as _sharded
from minijax.runtime import sharding as _sharding
from minijax.runtime.pytree import transform_registry as registry
from minijax.runtime.array import (Array, _Locked, _sharding_of_aval, _wrap, intern_aval,
                                   to_numpy)

__all__ = ["block_until_ready", "device_get", "device_put", "device_put_tree", "put_numpy",
           "to_numpy"]

_batched_device_put = _jax.batched_device_put
_ZERO_COPY = _jax.HostBufferSemantics.ZERO_COPY
_COPY = _jax.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL
_sharding_for = _backend.sharding_for
_shardings = _backend._shardings

# (dtype, x64) -> canonical dtype; (shape, dtype, weak, device) -> interned ShapedArray
_canon_cache: dict[tuple[np.dtype, bool], np.dtype] = {}
_aval_cache = MemoCache("minijax_memo_cache_size")


def _canonical(dt: np.dtype, x64: bool) -> np.dtype:
    out = _canon_cache.get((dt, x64))
    if out is None:
        native = dt if dt.isnative else dt.newbyteorder("=")
        out = _canon_cache[dt, x64] = dtypes.canonicalize(native)
    return out


def _aval(shape: tuple, dt: np.dtype, weak: bool, device) -> ShapedArray:
    key = (shape, dt, weak, device)
    a = _aval_cache.get(key)
    if a is None:
        a = _aval_cache[key] = intern_aval(ShapedArray(shape, dt, weak), device)
    return a


def _target(device) -> tuple[Any, Any]:
    if device is None:
        device = _backend.get_backend().default_device
    s = _shardings.get(device)
    if s is None:
        if not isinstance(device, _backend.Device):
            raise TypeError(f"device_put: expected a device, got {device!r}")
        s = _sharding_for(device)
    return device, s


def put_numpy(x: np.ndarray, weak_type: bool = False, device=None, *,
              owned: bool = False) -> Array:
    """Copy the numpy array ``x`` to ``device`` (default device if None).

    The dtype is canonicalized (64-bit types narrow to 32 bits unless x64 is
    on). ``owned=True`` says nobody else holds ``x``, so the device buffer may
    alias its memory instead of copying it.
    """
    x64 = config.enable_x64
    dt = x.dtype
    cdt = _canonical(dt, x64)
    if cdt is not dt and cdt != dt:
        x = x.astype(cdt)
        owned = True
    if dt.kind == "V" and dt == dtypes.float0:
        x = np.zeros(x.shape, np.bool_)
        cdt, owned = x.dtype, True
    committed = device is not None
    device, s = _target(device)
    aval = _aval(x.shape, cdt, weak_type, device)
    buf = _batched_device_put(aval, s, [x], [device], committed, False,
                              _ZERO_COPY if owned else _COPY, x64)
    return _wrap(buf, aval)


_scalar_cache: dict[tuple[type, bool], tuple[np.dtype, int, int]] = {}


def _put_python_scalar(x: bool | complex, device) -> Array:
    x64 = config.enable_x64
    key = (type(x), x64)
    info = _scalar_cache.get(key)
    if info is None:
        dt = dtypes.python_scalar_dtype(x)
        lo, hi = (int(np.iinfo(dt).min), int(np.iinfo(dt).max)) if dt.kind in "iu" else (0, 0)
        info = _scalar_cache[key] = (dt, lo, hi)
    dt, lo, hi = info
    if lo != hi and not lo <= x <= hi:
        raise OverflowError(
            f"Python int {x} too large to convert to {dt.name}"
            + ("" if x64 else " (enable 64-bit mode with minijax_enable_x64 for int64)"))
    # A bool is strongly typed; int/float/complex scalars are weakly typed.
    return put_numpy(np.array(x, dtype=dt), x.__class__ is not bool, device, owned=True)


_PY_SCALARS = (bool, int, float, complex)


# ---- device constants for scalars (dispatch) -----------------------------------------
#
# ``x * 2.0`` run eagerly, or ``f(x, 2.0)`` for a jitted ``f``, needs ``2.0`` on the
# device at each call. The dispatchers keep one device buffer per (type, value) in
# ``CONSTANTS`` instead of transferring it again: key -> (id of the interned aval, buffer).
# The buffers never reach users (no Array wraps them) and only go to executables that
# donate nothing, so nothing can delete them. Keys tell 0.0 from -0.0 and NaN payloads
# apart; the table holds at most minijax_memo_cache_size constants (those made longest
# ago dropped first) and is emptied when the x64 flag changes. jit's C
# dispatch (runtime/_speedups.c) reads this dict with the same keys for Python scalars.

CONSTANTS: dict[tuple, tuple[int, Any]] = MemoCache("minijax_memo_cache_size")
_pack_double = struct.Struct("<d").pack  # the layout PyFloat_Pack8(x, p, le=1) writes
PY_SCALAR_TYPES = (float, int, bool)


def constant_key(x: Any) -> tuple | None:
    """The ``CONSTANTS`` key of a Python bool/int/float or NumPy scalar, else None."""
    t = type(x)
    if t is float:  # 0.0 vs -0.0, and NaNs (equal to nothing): keyed by their 8 bytes
        return (t, x) if x and x == x else (t, _pack_double(x))
    if t is int or t is bool:
        return (t, x)
    if (t is np.ndarray and x.ndim == 0) or isinstance(x, np.generic):
        return (x.dtype, x.tobytes())
    return None


def scalar_constant(x: Any) -> tuple[int, Any] | None:
    """``(id of its interned aval, device buffer)`` for a Python bool/int/float or a
    NumPy scalar or 0-d array (what promotion turns Python scalars into), made on
    first use; None for anything else or a value that does not fit its dtype."""
    key = constant_key(x)
    if key is None:
        return None
    c = CONSTANTS.get(key)
    if c is None:
        try:
            arr = device_put(x)
        except (OverflowError, TypeError, ValueError):
            return None  # the generic path reports it
        c = CONSTANTS[key] = (id(arr.aval), arr._buf)
    return c


# What jit's dispatchers need to put a Python scalar that has no device constant (a
# value that changes at every call) straight on the default device, without caching
# it: type -> (id of the interned aval, put, aval, sharding, [device], semantics, x64),
# the arguments of ``put(aval, sharding, [x], [device], False, False, semantics, x64)``.
# Filled by ``scalar_specs()``, emptied with ``CONSTANTS``.
SCALAR_SPECS: dict[type, tuple] = {}


def scalar_specs() -> dict[type, tuple]:
    """``SCALAR_SPECS``, filled for bool, int and float under the current x64 flag."""
    if not SCALAR_SPECS:
        x64 = config.enable_x64
        device, s = _target(None)
        for t in PY_SCALAR_TYPES:
            aval = _aval((), _canonical(dtypes.python_scalar_dtype(t(0)), x64), t is not bool,
                         device)
            SCALAR_SPECS[t] = (id(aval), _batched_device_put, aval, s, [device], _COPY, x64)
    return SCALAR_SPECS


def put_scalar(x: Any) -> tuple[int, Any] | None:
    """``(id of its aval, a fresh device buffer)`` for a Python bool/int/float from
    ``SCALAR_SPECS``; None when there is no spec or the value does not fit its dtype
    (the dispatchers then take the full path, which reports it)."""
    return _put_with_spec(SCALAR_SPECS.get(type(x)), x)


def _put_with_spec(spec: tuple | None, x: Any) -> tuple[int, Any] | None:
    """``(aval id, fresh buffer)`` for ``x`` put as a ``SCALAR_SPECS``/``NUMPY_SPECS``
    value says; None without a spec or when the put fails."""
    if spec is None:
        return None
    aval_id, put, aval, s, devices, semantics, x64 = spec
    try:
        return aval_id, put(aval, s, [x], devices, False, False, semantics, x64)
    except Exception:
        return None


# The same for NumPy array and scalar arguments: (dtype, shape) -> (id of the interned
# aval, put, aval, sharding, [device], semantics, x64), recorded by ``record_numpy_specs``
# once the full path has put an argument of that dtype and shape on the default device
# (so only dtypes jaxlib takes, in native byte order). jaxlib's put copies any strides;
# a dtype that canonicalizes to another (float64 with x64 off) gets a put that converts
# with NumPy first, as ``put_numpy`` does, so the values are the full path's.
NUMPY_SPECS: dict[tuple, tuple] = MemoCache("minijax_memo_cache_size")
NUMPY_TYPES = (np.ndarray, np.generic)


def _converting_put(dt: np.dtype) -> Any:
    def put(aval, sharding, xs, devices, committed, force_copy, semantics, x64):
        return _batched_device_put(aval, sharding, [np.asarray(xs[0], dt)], devices,
                                   committed, force_copy, _ZERO_COPY, x64)
    return put


def record_numpy_specs(leaves: Sequence[Any]) -> None:
    """Record ``NUMPY_SPECS`` entries for the NumPy arrays and scalars among ``leaves``
    (arguments the full path has just put on the default device)."""
    for x in leaves:
        if not isinstance(x, NUMPY_TYPES):
            continue
        dt = x.dtype
        if (dt, x.shape) in NUMPY_SPECS or not dt.isnative or dt.fields is not None \
                or dt.kind in "OSUMm":
            continue
        x64 = config.enable_x64
        cdt = _canonical(dt, x64)
        device, s = _target(None)
        aval = _aval(x.shape, cdt, False, device)
        put = _batched_device_put if cdt == dt else _converting_put(cdt)
        NUMPY_SPECS[dt, x.shape] = (id(aval), put, aval, s, [device], _COPY, x64)


def put_numpy_arg(x: Any) -> tuple[int, Any] | None:
    """``(id of its aval, a fresh device buffer)`` for a NumPy array or scalar with a
    ``NUMPY_SPECS`` entry, else None (what the C dispatcher does)."""
    return _put_with_spec(NUMPY_SPECS.get((x.dtype, x.shape)), x)


def _drop_constants(_value) -> None:
    CONSTANTS.clear()
    SCALAR_SPECS.clear()
    NUMPY_SPECS.clear()


config.on_change("minijax_enable_x64", _drop_constants)
config.on_change("minijax_default_device", _drop_constants)  # they live on that device


def device_put(x: Any, device: _backend.Device | None = None) -> Array:
    """Put ``x`` on ``device`` (the default device if None) as a minijax ``Array``.

    Accepts numpy arrays and scalars, Python scalars (``int``/``float``/``complex``
    become weakly typed), nested lists/tuples of numbers, objects with
    ``__array__``, and ``Array`` (returned as is when already on ``device``,
    else copied). ``device`` may also be a sharding: a ``SingleDeviceSharding``
    means its device; a ``NamedSharding`` puts one buffer per device holding that
    device's slice (see ``put_sharded``); a ``PartitionSpec`` is one over the mesh
    ``set_mesh`` set.
    """
    if device is not None and not isinstance(device, _backend.Device):
        if isinstance(device, _sharding.PartitionSpec):  # over the mesh set_mesh set
            device = _sharding.named_from_spec(device, "device_put")
        _sharding.check_device_memory(device, "device_put")
        if isinstance(device, _sharding.Sharding):
            return put_sharded(x, device)
        if isinstance(device, _jax.SingleDeviceSharding):
            device = device._device
    t = type(x)
    if t is Array:
        if device is None:
            x._check_alive()
            return x
        return _copy_array(x, device)
    if t is np.ndarray:
        return put_numpy(x, False, device)
    if t in _PY_SCALARS:
        return _put_python_scalar(x, device)
    if isinstance(x, np.generic):
        return put_numpy(np.asarray(x), False, device, owned=True)
    if isinstance(x, _PY_SCALARS):  # subclasses such as IntEnum
        base = next(b for b in _PY_SCALARS if isinstance(x, b))
        return _put_python_scalar(base(x), device)
    if isinstance(x, np.ndarray):
        return put_numpy(np.asarray(x), False, device)
    if isinstance(x, (list, tuple)):
        arr = np.asarray(x)
        if arr.dtype == object:
            raise TypeError(f"device_put: cannot convert a {t.__name__} of mixed or "
                            f"non-numeric values to an array: {x!r}")
        return put_numpy(arr, False, device, owned=True)
    if hasattr(x, "__array__"):
        return put_numpy(np.asarray(x), False, device)
    raise TypeError(f"device_put: a value of type {t.__name__} is not a valid minijax "
                    f"array value: {x!r}")


def _host_value(x: Any) -> tuple[np.ndarray, bool]:
    """``x`` as a host array of its canonical dtype, and whether it is weakly typed."""
    if type(x) is Array:
        return to_numpy(x), x.aval.weak_type
    if type(x) in _PY_SCALARS or (isinstance(x, _PY_SCALARS) and not isinstance(x, np.generic)):
        return np.asarray(to_numpy(device_put(x))), type(x) is not bool
    value = np.asarray(x)
    if value.dtype == object:
        raise TypeError(f"device_put: a value of type {type(x).__name__} is not a valid "
                        f"minijax array value: {x!r}")
    cdt = _canonical(value.dtype, config.enable_x64)
    return (value if value.dtype == cdt else value.astype(cdt)), False


def put_sharded(x: Any, sharding: Any) -> Array:
    """Lay ``x`` out over the devices of ``sharding``: each device of this process gets
    one buffer holding its slice (``sharding.devices_indices_map``), not a copy of the
    whole value (unless the sharding replicates it). An Array already laid out so is
    returned as it is; others go through the host.

    Raises ``ValueError`` when the sharding does not fit the value's shape.
    """
    if type(x) is Array:
        x._check_alive()
        src = _sharding_of_aval.get(id(x.aval))
        if src == sharding:
            return x
        if src is not None and _sharded.can_reshard(src, sharding):
            return _sharded.reshard(x, src, sharding)  # on the devices, by XLA
        if (src is not None and src.is_fully_addressable
                and sharding.is_fully_addressable):
            return _move_sharded(x, src, sharding)  # other devices or another order
        if src is None and sharding.is_fully_addressable:
            return _spread(x, sharding)
    value, weak = _host_value(x)
    return put_shards(value, weak, sharding)


def put_shards(value: np.ndarray, weak: bool, sharding: Any) -> Array:
    """The sharded Array of the host array ``value`` (canonical dtype) under ``sharding``."""
    shape = value.shape
    _sharding.check_sharding_shape(sharding, shape, "device_put: an array")
    index_map = sharding.addressable_devices_indices_map(shape)
    devices = list(index_map)
    slices = [np.ascontiguousarray(value[i]) if i else value for i in index_map.values()]
    return from_shards(slices, devices, ShapedArray(shape, value.dtype, weak), sharding)


def from_shards(shards: list, devices: list, aval: ShapedArray, sharding: Any) -> Array:
    """The sharded Array whose buffer on ``devices[i]`` is ``shards[i]``: host arrays, or
    jaxlib single-device arrays on that device whose shape the caller checked."""
    expected = sharding.shard_shape(aval.shape)
    for d, sh in zip(devices, shards):
        shape = tuple(sh.shape) if isinstance(sh, np.ndarray) else expected
        if shape != expected:
            raise ValueError(f"the shard for {d} has shape {shape}, but {sharding} lays out "
                             f"{aval.str_short()} in shards of shape {expected}")
    interned = intern_aval(aval, sharding)
    jsharding = _sharding.jaxlib_sharding(sharding, len(aval.shape))
    # One transfer per device, then one jaxlib array over all of them (jaxlib's batched
    # put of several shards fails on partially replicated layouts).
    x64 = config.enable_x64
    shard_aval = ShapedArray(expected, aval.dtype, aval.weak_type)
    bufs = [sh if isinstance(sh, _jax.ArrayImpl) else
            _batched_device_put(shard_aval, _sharding_for(d), [sh], [d], True, False, _COPY,
                                x64)
            for d, sh in zip(devices, shards)]
    buf = _jax.ArrayImpl(interned, jsharding, bufs, True, _skip_checks=True)
    return _wrap(buf, interned)


def _copy_array(x: Array, device, force: bool = False) -> Array:
    """``x`` on ``device``: ``x`` itself when it is there already, unless ``force``."""
    device, s = _target(device)
    src = _sharding_of_aval.get(id(x.aval))
    if src is not None:  # from a sharded layout to one device
        return _gather_on(x, src, device)
    buf = x._buf
    with _Locked(x):  # a delete() in another thread waits for the copy
        if buf.is_deleted():
            raise RuntimeError(x._deleted_message())
        if buf._sharding._device == device and not force:
            return x
        try:
            out = _batched_device_put(x.aval, s, [buf], [device], True, True, _COPY,
                                      config.enable_x64)
        except Exception:  # noqa: BLE001 - e.g. across clients: go through the host
            out = None
    if out is None:
        return put_numpy(np.array(to_numpy(x)), x.aval.weak_type, device, owned=True)
    return _wrap(out, intern_aval(x.aval, device))


def _spread(x: Array, sharding: Any) -> Array:
    """The single-device Array ``x`` laid out as ``sharding`` without the host: copied
    whole to each device (device to device), then sliced there by XLA."""
    rep = _sharding.replicated_like(sharding)
    aval = x.aval
    _sharding.check_sharding_shape(sharding, aval.shape, "device_put: an array")
    devices = list(rep.addressable_devices_indices_map(aval.shape))
    # the copy on x's own device is a new buffer when the result would hold it
    bufs = [_copy_array(x, d, force=rep == sharding)._buf for d in devices]
    whole = from_shards(bufs, devices, ShapedArray(aval.shape, aval.dtype, aval.weak_type), rep)
    return whole if rep == sharding else _sharded.reshard(whole, rep, sharding)


def _index_key(index: tuple, shape: tuple) -> tuple:
    """A hashable form of a shard's index (a tuple of slices) over ``shape``."""
    return tuple(sl.indices(n) for sl, n in zip(index, shape))


def _move_sharded(x: Array, src: Any, sharding: Any) -> Array:
    """The sharded ``x`` (laid out as ``src``) laid out as ``sharding`` over other
    devices, or the same devices in another order, without the host: when every shard
    ``sharding`` wants is one that ``src`` holds, each is copied device to device;
    otherwise ``x`` is gathered whole on one destination device (by XLA), copied to
    the others and sliced there (``_spread``)."""
    shape = x.aval.shape
    held: dict = {}
    for sh in x.addressable_shards:
        held.setdefault(_index_key(sh.index, shape), []).append(sh)
    _sharding.check_sharding_shape(sharding, shape, "device_put: an array")
    wanted = sharding.addressable_devices_indices_map(shape)
    keys = [_index_key(i, shape) for i in wanted.values()]
    if all(k in held for k in keys):
        bufs = []
        for d, k in zip(wanted, keys):
            sh = next((s for s in held[k] if s.device == d), held[k][0])
            bufs.append(_copy_array(sh.data, d, force=True)._buf)
        return from_shards(bufs, list(wanted), ShapedArray(shape, x.aval.dtype,
                                                           x.aval.weak_type), sharding)
    whole = _gather_on(x, src, next(iter(wanted)))
    return _spread(whole, sharding)


def _gather_on(x: Array, src: Any, device) -> Array:
    """The sharded ``x`` whole on ``device``: XLA replicates it over its devices, then
    the copy on ``device`` (or the first one, copied device to device) is the result.
    Through the host only when ``src`` spans several processes."""
    if not src.is_fully_addressable:
        return put_numpy(np.array(to_numpy(x)), x.aval.weak_type, device, owned=True)
    whole = x
    if not src.is_fully_replicated:
        whole = _sharded.reshard(x, src, _sharding.replicated_like(src))
    shards = whole.addressable_shards
    data = next((sh.data for sh in shards if sh.device == device), shards[0].data)
    # a shard of ``x`` itself is copied: deleting ``x`` must not delete the result
    return _copy_array(data, device, force=whole is x)


def _put_rows(x: Array) -> list[Array]:
    """The rows of ``x`` (along axis 0) as Arrays on the same device."""
    host = to_numpy(x)
    aval = x.aval
    device = x._buf._sharding._device
    row = _aval(aval.shape[1:], aval.dtype, aval.weak_type, device)
    s = _sharding_for(device)
    x64 = config.enable_x64
    return [_wrap(_batched_device_put(row, s, [host[i]], [device], True, False, _COPY, x64), row)
            for i in range(aval.shape[0])]


_flatten = registry.flatten


def block_until_ready(x: Any) -> Any:
    """Wait for every ``Array`` in the pytree ``x``; returns ``x``."""
    if type(x) is Array:
        return x.block_until_ready()
    leaves, _ = _flatten(x)
    arrays = sorted([leaf for leaf in leaves if type(leaf) is Array], key=id)
    if arrays:  # one wait for all, under their host locks (taken in one order; reentrant)
        held = []
        try:
            for a in arrays:
                a._host_acquire()
                held.append(a)
            try:
                _jax.batched_block_until_ready([a._buf for a in held])
            except Exception:  # a deleted or donated array: say which, as one wait would
                for a in held:
                    a._check_alive()
                raise
        finally:
            for a in reversed(held):
                a._host_release()
    for leaf in leaves:
        if type(leaf) is not Array and hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def _is_placement(d: Any) -> bool:
    return d is None or isinstance(d, (_backend.Device, _sharding.Sharding,
                                       _jax.SingleDeviceSharding, _sharding.PartitionSpec))


_SINGLE_LEAF = frozenset((Array, np.ndarray) + _PY_SCALARS)


def device_put_tree(x: Any, device: Any = None, *, donate: Any = False,
                    may_alias: Any = None) -> Any:
    """``minijax.device_put``: put every leaf of the pytree ``x`` on a device, as jax.

    Parameters
    ----------
    x : pytree
        Arrays, scalars, or (nested) containers of them; each leaf goes through
        ``device_put`` (so a list is a container of leaves here, not one array).
    device : Device, sharding, pytree of them, or None
        Where each leaf goes: one device or sharding for all, or a pytree prefix of ``x``
        whose leaves (devices, shardings, or None for the default device) apply to the
        leaves of ``x`` under them.
    donate : bool or pytree prefix of bools
        Whether the caller gives up the input arrays. As in jax this is best effort; on
        CPU the input stays valid and the result is a new array.
    may_alias : bool, None, or pytree prefix of them
        False: always return new arrays. True: an array already in place is returned
        as it is. None (default): ``not donate``. True together with ``donate`` is a
        ValueError.

    Returns
    -------
    pytree
        ``x``'s structure with ``Array`` leaves. Under a trace (inside ``jit``, ``grad``,
        ...) traced leaves are returned unchanged, as jax's ``device_put`` is then the
        identity on values.

    Raises
    ------
    ValueError
        When ``device``, ``donate`` or ``may_alias`` is a pytree that is not a prefix of
        ``x``, a ``device`` leaf is not a device, sharding, PartitionSpec or None (a
        string such as ``'cpu'``, as in jax), or both ``donate`` and ``may_alias`` are
        True for a leaf.
    TypeError
        When a leaf is not an array value.
    """
    if (type(x) in _SINGLE_LEAF and _is_placement(device) and donate is False
            and may_alias is None):
        return device_put(x, device)
    leaves, treedef = registry.flatten(x)
    targets = _per_leaf("device", device, _is_placement, x, treedef)
    donates = _per_leaf("donate", donate, lambda d: isinstance(d, bool), x, treedef)
    aliases = _per_leaf("may_alias", may_alias, lambda m: m is None or isinstance(m, bool),
                        x, treedef)
    for d in targets:
        if not _is_placement(d):
            raise ValueError(
                "`minijax.device_put` only accepts `None`, `minijax.sharding.Sharding`, "
                "`minijax.Device`, `minijax.sharding.PartitionSpec` or a pytree of these "
                f"values. Received invalid value: {d!r}")
        _sharding.check_device_memory(d, "device_put")
    out = []
    for leaf, d, dn, m in zip(leaves, targets, donates, aliases):
        if m and dn:
            raise ValueError("may_alias and donate cannot be True at the same time.")
        if isinstance(leaf, Tracer):
            out.append(leaf)
        elif type(leaf) is Array and not (not dn if m is None else m):
            out.append(_fresh_copy(leaf, leaf.device if d is None else d))
        else:
            out.append(device_put(leaf, d))
    return treedef.unflatten(out)


def _per_leaf(name: str, spec: Any, is_leaf, x: Any, treedef) -> list:
    """``spec`` (one value, or a pytree prefix of ``x`` whose leaves pass ``is_leaf``)
    broadcast to one entry per leaf of ``x``."""
    if is_leaf(spec):
        return [spec] * treedef.num_leaves
    s_leaves, s_tree = registry.flatten(spec, is_leaf)
    try:
        subtrees = s_tree.flatten_up_to(x)
    except (ValueError, TypeError) as e:
        raise ValueError(f"device_put {name} specification must be a tree prefix of the "
                         f"corresponding value, got specification {spec!r} for value tree "
                         f"{treedef}.") from e
    return [v for v, sub in zip(s_leaves, subtrees)
            for _ in range(registry.flatten(sub)[1].num_leaves)]


def _fresh_copy(x: Array, target: Any) -> Array:
    """A new Array holding ``x``'s value on ``target`` (a device or a sharding)."""
    if isinstance(target, _jax.SingleDeviceSharding):
        target = target._device
    if isinstance(target, _backend.Device):
        return _copy_array(x, target, force=True)
    value, weak = _host_value(x)
    return put_shards(value, weak, target)


def device_get(x: Any) -> Any:
    """Copy the arrays of the pytree ``x`` to the host, as ``jax.device_get``.

    Every leaf with ``__array__`` (minijax ``Array``s, NumPy scalars) becomes a NumPy
    array; other leaves (Python scalars, and traced values under a trace) are returned
    unchanged. The device-to-host copies of all arrays are started before any is waited on.
    """
    leaves, treedef = registry.flatten(x)
    for leaf in leaves:
        if type(leaf) is Array:
            leaf.copy_to_host_async()
    out = [leaf if isinstance(leaf, Tracer) or not hasattr(leaf, "__array__")
           else leaf.__array__() for leaf in leaves]
    return treedef.unflatten(out)
