"""minijax's array type: a thin wrapper around one jaxlib single-device buffer.

``Array`` objects are made by the runtime only (``device_put``, executable
results); arithmetic, indexing and methods like ``.sum`` are installed on the
class later by ``minijax.numpy``.

Example::

    >>> from minijax.runtime import device_put
    >>> device_put([1.0, 2.0])
    Array([1., 2.], dtype=float32)
    >>> device_put(1.0)
    Array(1., dtype=float32, weak_type=True)
"""

from __future__ import annotations

import ctypes
import operator
import threading
from typing import Any

import numpy as np
from jaxlib import _jax

from minijax.core.aval import ShapedArray, mem_kind_to_space
from minijax.runtime import backend as _backend
from minijax.runtime import sharding as _sharding
from minijax.runtime.memory_kinds import memory_of_aval
from minijax.runtime._native import speedups

_DLPACK_DEVICE_TYPES = {"cpu": 1, "gpu": 2, "cuda": 2, "rocm": 10}

# The fields of an Array live in a small C base type (``_speedups.c``) when that
# optional extension is built: it exports the wrapped buffer through the buffer
# protocol, so ``np.asarray(x)`` and ``memoryview(x)`` read CPU arrays without a
# Python call, and it builds result arrays quickly. Without it (no C compiler at
# install time, or MINIJAX_NO_C_EXTENSION=1) the same fields are Python slots and
# NumPy goes through ``Array.__array__``; behaviour is otherwise identical.
#
# Safety rules both share: ``aval`` and ``_buf`` are read-only (host reads and
# executables trust them); every copy out of a device buffer first checks that the
# buffer holds exactly the bytes the aval describes (``_check_exported``); and every
# host operation on the buffer (reads, waits, DLPack, ``delete``) holds the array's
# host lock (``_host_acquire``/``_host_release``, reentrant, per array), because jaxlib
# crashes when a buffer is deleted while another thread is using it. The C type also
# refuses ill-typed ``_npy``/``_donated`` values; the Python fallback checks ``_npy``
# where it is used.
if speedups is not None:
    _ArrayBase: Any = speedups.ArrayBase
else:
    class _ArrayBase:  # type: ignore[no-redef]
        """The pure-Python equivalent of ``_speedups.ArrayBase`` (fields and host lock)."""

        __slots__ = ("__weakref__", "_aval", "_buffer", "_donated", "_npy", "_lock")

        @property
        def aval(self) -> ShapedArray:
            """The array's ``ShapedArray`` (read-only)."""
            return self._aval

        @property
        def _buf(self) -> Any:
            return self._buffer

        def _host_acquire(self) -> None:
            self._lock.acquire()

        def _host_release(self) -> None:
            self._lock.release()


class Array(_ArrayBase):
    """An immutable array stored on one device.

    Attributes:
      aval: the array's ``ShapedArray`` (shape, dtype, weak_type).
    """

    __slots__ = ()  # the fields are the base's

    __array_priority__ = 100
    __hash__ = None  # type: ignore[assignment]  # unhashable, like numpy and jax arrays

    def __init__(self, *args, **kwargs):
        raise TypeError(
            "minijax.Array cannot be constructed directly; use minijax.numpy.asarray "
            "or minijax.device_put")

    @classmethod
    def _from_buffer(cls, buf: Any, aval: ShapedArray) -> Array:
        """Wrap a jaxlib single-device array whose type is ``aval``.

        Raises ``ValueError`` when the buffer's shape or dtype is not the aval's
        (the runtime's own hot paths build arrays with ``_wrap``, unchecked).
        """
        if not isinstance(aval, ShapedArray):
            raise TypeError(f"Array._from_buffer: aval must be a ShapedArray, got {aval!r}")
        own = getattr(buf, "aval", None)  # what jaxlib recorded when the buffer was made
        nbytes = aval.size * aval.dtype.itemsize
        if (own is None or tuple(own.shape) != aval.shape or own.dtype != aval.dtype
                or buf.on_device_size_in_bytes() != nbytes):
            raise ValueError(f"Array._from_buffer: the buffer ({own}, "
                             f"{buf.on_device_size_in_bytes()} bytes) is not a "
                             f"{aval.str_short()} ({nbytes} bytes)")
        return _wrap(buf, aval)

    # ---- metadata (valid even after deletion) ----------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def nbytes(self) -> int:
        return self.aval.size * self.aval.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.aval.dtype.itemsize

    # ---- device and lifetime ----------------------------------------------------

    def _check_alive(self) -> None:
        if self._buf.is_deleted():
            raise RuntimeError(self._deleted_message())

    def _deleted_message(self) -> str:
        donated = self._donated
        if type(donated) is tuple:  # (name, code, last instruction), from the C dispatcher
            donated = donation_site_text(*donated)
        if isinstance(donated, str):  # where: "to jit(f) at file.py:12"
            how = f"donated {donated} (its buffer was reused for an output)"
        elif donated:
            how = "donated to a jit-compiled computation (its buffer was reused)"
        else:
            how = "deleted"
        return (f"Array has been {how}, so it can no longer be used "
                f"(it was {self.aval.str_short()}).")

    @property
    def device(self) -> _backend.Device:
        """The device holding this array (its sharding, for an array over several)."""
        self._check_alive()
        s = _sharding_of_aval.get(id(self.aval))
        return self._buf._sharding._device if s is None else s

    def devices(self) -> set[_backend.Device]:
        """The set of devices holding a part of this array."""
        s = _sharding_of_aval.get(id(self.aval))
        if s is not None:
            return set(s.device_set)
        return {self.device}

    @property
    def sharding(self):
        """How the array is laid out: a ``minijax.sharding.NamedSharding`` (or another
        multi-device sharding) for a sharded array, else the ``SingleDeviceSharding``
        of its device."""
        s = _sharding_of_aval.get(id(self.aval))
        return self._buf._sharding if s is None else s

    @property
    def committed(self) -> bool:
        """Whether the array is committed to where it is (as jax's ``committed``): laid out
        over several devices, or on a device other than the default one. An array on the
        default device alone follows the computations it is used in, as jax's
        uncommitted arrays do (``stages.common.call_device``)."""
        if _sharding_of_aval.get(id(self.aval)) is not None:
            return True
        return self._buf._sharding._device != _backend.get_backend().default_device

    @property
    def is_fully_addressable(self) -> bool:
        """Whether this process holds every shard."""
        s = _sharding_of_aval.get(id(self.aval))
        return True if s is None else s.is_fully_addressable

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array."""
        s = _sharding_of_aval.get(id(self.aval))
        return True if s is None else s.is_fully_replicated

    @property
    def addressable_shards(self) -> list[Shard]:
        """This process's shards, in the sharding's device order: each a ``Shard`` with
        ``device``, ``index`` (the slice of the global array it holds), ``replica_id``
        and ``data`` (a single-device Array)."""
        s = _sharding_of_aval.get(id(self.aval))
        if s is None:
            self._check_alive()
            return [Shard(self.device, tuple(slice(None) for _ in self.aval.shape), 0, self)]
        return _shards(self, s)

    @property
    def global_shards(self) -> list[Shard]:
        """Every shard (those of other processes have ``data=None``)."""
        s = _sharding_of_aval.get(id(self.aval))
        if s is None:
            return self.addressable_shards
        local = {sh.device: sh for sh in _shards(self, s)}
        out = []
        for d, index, rep in _indices_with_replicas(s, self.aval.shape):
            out.append(local.get(d) or Shard(d, index, rep, None))
        return out

    def addressable_data(self, index: int) -> Array:
        """The single-device Array of this process's ``index``-th shard."""
        return self.addressable_shards[index].data

    def block_until_ready(self) -> Array:
        """Wait until the value is computed; returns ``self``."""
        with _Locked(self):
            self._check_alive()
            self._buf.block_until_ready()
        return self

    def is_ready(self) -> bool:
        """Whether the value has been computed."""
        with _Locked(self):
            self._check_alive()
            return self._buf.is_ready()

    def delete(self) -> None:
        """Free the device buffer now. Using the array afterwards raises RuntimeError.

        Waits for host reads of the array that other threads have under way.
        """
        with _Locked(self):
            self._npy = None
            buf = self._buf
            if not buf.is_deleted():
                # Delete through a second jaxlib array object for the same buffer:
                # deleting a jaxlib array clears its reference to the buffer, which
                # an execution in another thread may be reading with the GIL released
                # (a use after free). ``self._buf`` keeps its reference, the buffer is
                # marked deleted for every holder, and XLA's own usage holds keep the
                # memory alive until running executions finish; a later use of it
                # raises "Array has been deleted".
                _alias(buf, self.aval).delete()

    def is_deleted(self) -> bool:
        """Whether the buffer was deleted (explicitly or by donation)."""
        return self._buf.is_deleted()

    def copy_to_host_async(self) -> None:
        """Start copying the value to host memory (a later ``np.asarray`` is then fast)."""
        self._check_alive()
        if (self._npy is not None or id(self.aval) in _sharding_of_aval
                or _host_addressable(self)):
            return
        with _Locked(self), _backend.no_jax_import():
            self._check_alive()
            self._buf._copy_single_device_array_to_host_async()

    def unsafe_buffer_pointer(self) -> int:
        """Address of the device buffer (for interop; the array must stay alive)."""
        with _Locked(self):
            self._check_alive()
            return self._buf.unsafe_buffer_pointer()

    # ---- conversion to host values ---------------------------------------------

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        value = to_numpy(self)
        if copy is None and dtype is None:
            return value
        if copy is False and dtype is not None and np.dtype(dtype) != value.dtype:
            raise ValueError("Unable to avoid copy while converting a minijax Array "
                             f"of dtype {value.dtype} to {np.dtype(dtype)}")
        return np.array(value, dtype=dtype, copy=copy)

    def __dlpack__(self, *, stream: int | None = None, max_version=None,
                   dl_device=None, copy: bool | None = None):
        self._check_alive()
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"minijax.Array.__dlpack__: cannot export to DLPack device "
                              f"{tuple(dl_device)}; the array is on "
                              f"{self.__dlpack_device__()}")
        if copy:  # a fresh buffer that nobody else holds
            return _rebuild(np.array(to_numpy(self)), self.aval.weak_type).__dlpack__(
                stream=stream)
        if id(self.aval) in _sharding_of_aval:
            raise BufferError("DLPack exports single-device arrays only; this Array is "
                              "sharded (export one of its addressable_shards' data)")
        # Export from an alias: jaxlib aborts if the exported PyArray itself is
        # deleted while the capsule lives; deleting ``self`` is then harmless.
        with _Locked(self):
            self._check_alive()
            return _jax.buffer_to_dlpack_managed_tensor(_alias(self._buf, self.aval),
                                                        stream=stream)

    def __dlpack_device__(self) -> tuple[int, int]:
        dev = self.device
        kind = _DLPACK_DEVICE_TYPES.get(dev.platform)
        if kind is None:
            raise BufferError(f"no DLPack device type for platform {dev.platform!r}")
        return kind, dev.local_hardware_id if kind != 1 else 0

    def item(self, *args) -> bool | int | float | complex:
        """The value as a Python scalar (``args`` index into the flattened array)."""
        return to_numpy(self).item(*args)

    def tolist(self) -> Any:
        """The value as nested Python lists of Python scalars."""
        return to_numpy(self).tolist()

    def tobytes(self, order: str = "C") -> bytes:
        return to_numpy(self).tobytes(order)

    def _scalar(self) -> np.ndarray:
        if self.aval.shape:
            raise TypeError("Only scalar arrays can be converted to Python scalars; "
                            f"got arr.ndim={self.ndim}")
        return to_numpy(self)

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def __index__(self) -> int:
        if self.aval.shape or self.aval.dtype.kind not in "iu":
            raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
        return operator.index(to_numpy(self)[()])

    def __bool__(self) -> bool:
        size = self.aval.size
        if size == 0:
            raise ValueError("The truth value of an empty array is ambiguous. Use "
                             "`array.size > 0` to check that an array is not empty.")
        if size > 1:
            raise ValueError("The truth value of an array with more than one element "
                             "is ambiguous. Use a.any() or a.all()")
        return bool(to_numpy(self))

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        from minijax.runtime.transfer import _put_rows
        return iter(_put_rows(self))

    def __reduce__(self):
        return (_rebuild, (np.array(to_numpy(self)), self.aval.weak_type))

    # ---- printing ------------------------------------------------------------------

    def __repr__(self) -> str:
        if self._buf.is_deleted():
            return f"Array(<deleted>, shape={self.shape}, dtype={self.dtype.name})"
        prefix = "Array("
        if self.aval.weak_type:
            dtype_str = f"dtype={self.dtype.name}, weak_type=True"
        else:
            dtype_str = f"dtype={self.dtype.name}"
        sharding = _sharding_of_aval.get(id(self.aval))
        if sharding is not None:  # a sharded array names its layout
            dtype_str += f", sharding={_sharding_str(sharding)}"
        line_width = np.get_printoptions()["linewidth"]
        if self.aval.size == 0:
            s = f"[], shape={self.shape}"
        else:
            s = np.array2string(to_numpy(self), prefix=prefix, suffix=",",
                                separator=", ", max_line_width=line_width)
        last_line_len = len(s) - s.rfind("\n") + 1
        sep = " "
        if last_line_len + len(dtype_str) + 2 > line_width:
            sep = " " * len(prefix)
        return f"{prefix}{s},{sep}{dtype_str})"

    def __str__(self) -> str:
        if self._buf.is_deleted():
            return repr(self)
        return str(to_numpy(self))

    def __format__(self, format_spec: str) -> str:
        value = to_numpy(self)
        return format(value if self.ndim else value[()], format_spec)


_new = object.__new__

# One ShapedArray object per distinct type and device among runtime arrays: the avals
# of transferred arrays and of the outputs of executables come from here. The tables
# are never cleared, so an interned aval lives as long as the process and its ``id``
# is a safe dictionary key: the dispatch paths key on the ids of their arguments'
# avals (ints hash in C; ShapedArray's hash is Python code). Arrays on a device other
# than the default one get their own (equal, but distinct) objects, so those ids also
# tell which device an array is on, at no cost.
_interned: dict[ShapedArray, ShapedArray] = {}
_interned_elsewhere: dict[tuple[ShapedArray, Any], ShapedArray] = {}


def donation_site_text(name: str, code: Any, lasti: int) -> str:
    """``"to jit(f) at file.py:12"`` from the donation record the C dispatcher keeps:
    the jitted function's name and the caller's code object and last instruction."""
    line = next((ln for start, end, ln in code.co_lines() if start <= lasti < end), None)
    return f"to jit({name}) at {code.co_filename}:{line}"


def intern_aval(aval: ShapedArray, device: Any = None) -> ShapedArray:
    """The canonical, immortal object equal to ``aval`` for arrays on ``device``
    (the default device if None), or laid out as ``device`` when it is a multi-device
    sharding (``minijax.sharding.NamedSharding``...)."""
    if aval._memory_space is not None:  # the placement says where it is
        aval = ShapedArray(aval.shape, aval.dtype, aval.weak_type, aval._sharding)
    if type(device) is _jax.SingleDeviceSharding:  # in a memory of one device
        if device.memory_kind == "device":
            device = device._device
    if device is not None and device != _backend.get_backend().default_device:
        key = (aval, device)
        a = _interned_elsewhere.get(key)
        if a is None:
            a = _interned_elsewhere.setdefault(
                key, ShapedArray(aval.shape, aval.dtype, aval.weak_type,
                                 _sharding.aval_sharding(device, len(aval.shape)),
                                 mem_kind_to_space(getattr(device, "memory_kind", None))))
            if isinstance(device, _sharding.Sharding):
                _sharding_of_aval[id(a)] = device
            elif type(device) is _jax.SingleDeviceSharding and \
                    device.memory_kind != "device":
                memory_of_aval[id(a)] = device
        return a
    a = _interned.get(aval)
    if a is None:
        a = _interned.setdefault(aval, aval)
    return a


class _Locked:
    """``with _Locked(arr):`` holds ``arr``'s host lock (see the top of this module)."""

    __slots__ = ("arr",)

    def __init__(self, arr: Array):
        self.arr = arr

    def __enter__(self) -> None:
        self.arr._host_acquire()

    def __exit__(self, *exc) -> None:
        self.arr._host_release()


_RLock = threading.RLock
_wrapped = [0]  # arrays built since jaxlib's release queue was last drained


def wrap_buffer(buf: Any, aval: ShapedArray) -> Array:
    """A new ``Array`` around the jaxlib buffer ``buf``, which must hold an ``aval``
    (on its device); the buffer may be another Array's (a jit output forwarded from
    its input: deleting or donating either invalidates both, as in jax)."""
    return _wrap(buf, aval)


def _wrap(buf: Any, aval: ShapedArray) -> Array:
    """Make an ``Array`` around ``buf`` without running ``__init__`` (hot path; the
    caller guarantees that ``buf`` holds an ``aval``).

    Every ``backend.COLLECT_EVERY`` arrays it drains jaxlib's queue of released Python
    objects (see ``backend.collect_jaxlib_garbage``): each execution and transfer
    builds at least one array, so the queue stays short without a garbage collection.
    """
    n = _wrapped[0] + 1
    if n >= _backend.COLLECT_EVERY:
        n = 0
        _backend.collect_jaxlib_garbage()
    _wrapped[0] = n
    a = _new(Array)
    a._buffer = buf
    a._aval = aval
    a._npy = None
    a._donated = False
    a._lock = _RLock()
    return a


if speedups is not None:
    speedups.register(Array)
    speedups.set_collector(_backend.collect_jaxlib_garbage, _backend.COLLECT_EVERY)
    _wrap = speedups.wrap  # noqa: F811 - the same function, in C


def _host_addressable(arr: Array) -> bool:
    return arr._buf._sharding._device.platform == "cpu"


# ---- sharded arrays -----------------------------------------------------------------
#
# A sharded Array wraps one jaxlib array holding one buffer per device (jaxlib's
# ``GSPMDSharding`` tells it which device holds which buffer). Its minijax sharding
# (``NamedSharding``...) is found through its aval: sharded arrays get interned avals of
# their own per sharding (``intern_aval(aval, sharding)``), so the dispatch paths, which
# key on aval ids, tell shardings apart at no cost, and ``_sharding_of_aval`` maps such an
# aval's id to its sharding.

_sharding_of_aval: dict[int, Any] = {}


class Shard:
    """One device's part of an Array: ``device``, ``index`` (a tuple of slices into the
    global array), ``replica_id`` (0 for the first copy of that slice) and ``data`` (a
    single-device Array, or None for another process's shard)."""

    __slots__ = ("data", "device", "index", "replica_id")

    def __init__(self, device, index: tuple, replica_id: int, data: Array | None):
        self.device = device
        self.index = index
        self.replica_id = replica_id
        self.data = data

    def __repr__(self) -> str:
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data!r})")


def _sharding_str(sharding) -> str:
    spec = getattr(sharding, "spec", None)
    if spec is None:
        return repr(sharding)
    return f"NamedSharding(spec={spec!r}, mesh={sharding.mesh.shape})"


def _indices_with_replicas(sharding, shape: tuple) -> list[tuple[Any, tuple, int]]:
    seen: dict[tuple, int] = {}
    out = []
    for d, index in sharding.devices_indices_map(shape).items():
        key = tuple((i.start, i.stop) for i in index)
        rep = seen.get(key, 0)
        seen[key] = rep + 1
        out.append((d, index, rep))
    return out


def _shard_buffers(arr: Array) -> dict:
    """device -> jaxlib single-device array, for this process's shards of ``arr``."""
    with _Locked(arr):
        arr._check_alive()
        with _backend.no_jax_import():  # jaxlib's C++ looks for jax's sharding classes
            bufs = arr._buf._arrays
    return {_buffer_device(b): b for b in bufs}


def _buffer_device(b: Any) -> Any:
    s = b._sharding
    if type(s) is _jax.SingleDeviceSharding:
        return s._device
    return s._devices[0]  # a one-device GSPMDSharding (a shard moved between memories)


def _shards(arr: Array, sharding) -> list[Shard]:
    bufs = _shard_buffers(arr)
    aval = arr.aval
    kind = getattr(sharding, "memory_kind", None) or "device"
    out = []
    for d, index, rep in _indices_with_replicas(sharding, aval.shape):
        b = bufs.get(d)
        if b is None:
            continue
        shape = tuple(len(range(*i.indices(n))) for i, n in zip(index, aval.shape))
        shard_aval = intern_aval(ShapedArray(shape, aval.dtype, aval.weak_type),
                                 d if kind == "device" else
                                 _jax.SingleDeviceSharding(d, memory_kind=kind))
        out.append(Shard(d, index, rep, _wrap(b, shard_aval)))
    return out


def _gather(arr: Array, sharding) -> np.ndarray:
    """The whole value of a sharded array, assembled on the host (read-only)."""
    if not sharding.is_fully_addressable:
        if sharding.is_fully_replicated:  # every process holds all of it
            return to_numpy(_shards(arr, sharding)[0].data)
        raise RuntimeError(
            "this Array is spread over several processes; only its addressable_shards "
            "can be read here (gather it first, e.g. with a jit whose out_shardings "
            "replicate it)")
    aval = arr.aval
    out = np.empty(aval.shape, aval.dtype)
    for shard in _shards(arr, sharding):
        if shard.replica_id == 0:
            out[shard.index] = to_numpy(shard.data)
    out.flags.writeable = False
    return out


def to_numpy(arr: Array) -> np.ndarray:
    """The value of ``arr`` as a read-only numpy array.

    On CPU this is a zero-copy view of the device buffer (~1-2 µs) through the
    buffer protocol. The view holds an external reference that keeps the memory
    alive (even through ``delete``); it is not cached, so that the array can
    still be donated once the view is gone. bfloat16 (which the buffer protocol
    lacks) and other platforms copy the value to the host once and cache it.

    Raises ``RuntimeError`` for a deleted array and ``BufferError`` when the buffer
    does not hold what ``arr.aval`` describes (nothing is read then).
    """
    npy = arr._npy
    if npy is not None:
        if type(npy) is not np.ndarray:  # the C type refuses such values; the slots cannot
            raise TypeError(f"minijax.Array._npy must be None or a numpy array, "
                            f"not {type(npy).__name__}")
        return npy
    buf, aval = arr._buf, arr.aval
    with _Locked(arr):  # delete() in another thread waits until the export is done
        if buf.is_deleted():
            raise RuntimeError(arr._deleted_message())
        try:
            view = memoryview(buf)
        except BufferError:
            view = None
    if view is not None:
        _check_exported(aval, view.shape, view.itemsize)
        return np.asarray(view)
    sharding = _sharding_of_aval.get(id(aval))
    if sharding is not None:  # several shards: assembled once, then cached
        npy = _gather(arr, sharding)
        with _Locked(arr):
            if buf.is_deleted():
                raise RuntimeError(arr._deleted_message())
            arr._npy = npy
        return npy
    if _host_addressable(arr):
        npy = _cpu_copy_via_dlpack(arr)
        if npy is not None:
            arr._npy = npy
            return npy
    # Accelerator memory: jaxlib's host copy. It tries to import jax from C++,
    # which we refuse for the duration of the call (it copes without).
    with _Locked(arr), _backend.no_jax_import():
        if buf.is_deleted():
            raise RuntimeError(arr._deleted_message())
        npy, did_copy = buf._single_device_array_to_np_array_did_copy()
    _check_exported(aval, npy.shape, npy.dtype.itemsize)
    if npy.dtype != aval.dtype:
        npy = npy.view(aval.dtype)
    npy.flags.writeable = False
    if did_copy:
        arr._npy = npy
    return npy


def _check_exported(aval: ShapedArray, shape: tuple, itemsize: int) -> None:
    """``BufferError`` unless a buffer exported with ``shape`` and ``itemsize`` holds
    exactly an ``aval`` (same shape, same bytes per element)."""
    if tuple(shape) != aval.shape or itemsize != aval.dtype.itemsize:
        got = itemsize * int(np.prod(shape, dtype=object))
        raise BufferError(
            f"minijax.Array: the device buffer holds {got} bytes as {list(shape)} of "
            f"{itemsize}-byte elements, but the array's type is {aval.str_short()} "
            f"({aval.size * aval.dtype.itemsize} bytes); refusing to read it")


# ---- bfloat16 on CPU: a copy read through DLPack --------------------------------------
#
# The buffer protocol does not do bfloat16. DLPack does, but a DLPack export that
# outlives the call must not come from the PyArray that ``delete()`` is later
# called on (jaxlib then aborts the process), so we copy the bytes out while the
# capsule is alive (with the GIL held) and drop the capsule before returning.

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):  # the head of DLManagedTensor
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _is_row_major(tensor: _DLTensor, shape: tuple, itemsize: int) -> bool:
    if not tensor.strides:
        return True
    expected = 1
    for axis in range(len(shape) - 1, -1, -1):
        if shape[axis] != 1 and tensor.strides[axis] != expected:
            return False
        expected *= shape[axis]
    return True


def _cpu_copy_via_dlpack(arr: Array) -> np.ndarray | None:
    """A read-only host copy of a CPU buffer, or None if it is not laid out row-major."""
    buf, aval = arr._buf, arr.aval
    dtype, shape = aval.dtype, aval.shape
    raw = None
    with _Locked(arr):
        if buf.is_deleted():
            raise RuntimeError(arr._deleted_message())
        if aval.size == 0:
            if buf.on_device_size_in_bytes() != 0:
                raise BufferError(f"minijax.Array: the device buffer is not empty but the "
                                  f"array's type is {aval.str_short()}; refusing to read it")
            out = np.zeros(shape, dtype)
            out.flags.writeable = False
            return out
        buf.block_until_ready()
        capsule = _jax.buffer_to_dlpack_managed_tensor(buf)
        try:
            tensor = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
            dims = tuple(tensor.shape[i] for i in range(tensor.ndim))
            itemsize = tensor.dtype.bits * tensor.dtype.lanes // 8
            if (dims == shape and itemsize == dtype.itemsize
                    and _is_row_major(tensor, shape, dtype.itemsize)):
                raw = ctypes.string_at(tensor.data + tensor.byte_offset,
                                       aval.size * dtype.itemsize)
        finally:
            tensor = capsule = None  # releases jaxlib's hold on the buffer, even on errors
    _check_exported(aval, dims, itemsize)
    if raw is None:
        return None
    return np.frombuffer(raw, dtype).reshape(shape)  # read-only (backed by bytes)


def _alias(buf: Any, aval) -> Any:
    """A second jaxlib array object for the same device buffer."""
    return _jax.array_result_handler(aval, buf._sharding, True, _skip_checks=True)(buf)


def _rebuild(value: np.ndarray, weak_type: bool) -> Array:
    from minijax.runtime.transfer import put_numpy
    return put_numpy(value, weak_type)
