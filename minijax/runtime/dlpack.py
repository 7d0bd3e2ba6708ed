"""Importing arrays from other libraries through DLPack, without a copy where possible.

jaxlib's ``dlpack_managed_tensor_to_buffer`` turns a producer's DLPack capsule into a
device buffer; on CPU it aliases the producer's memory when the data is row-major and
64-byte aligned, and copies otherwise (or raises when ``copy=False``). The buffer is
then re-wrapped with minijax's own aval and sharding (reading the jaxlib array's
``aval`` would import jax).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from jaxlib import _jax

from minijax.config import config
from minijax.core import dtypes
from minijax.runtime import backend as _backend
from minijax.runtime.array import Array
from minijax.runtime.executable import JaxRuntimeError
from minijax.runtime.transfer import _aval, _canonical, _copy_array, _target, put_numpy

__all__ = ["from_dlpack"]

_KDLCPU = 1
_KDLCUDA = 2
_PLATFORM_OF = {_KDLCPU: "cpu", _KDLCUDA: "gpu"}


def _source_device(dl_type: int, dev_id: int) -> Any:
    platform = _PLATFORM_OF.get(dl_type)
    if platform is None:
        raise TypeError(f"Array passed to from_dlpack is on unsupported device type "
                        f"(DLDeviceType: {dl_type})")
    for d in _backend.local_devices(platform):
        if d.local_hardware_id == dev_id or (dl_type == _KDLCPU and dev_id == 0):
            return d
    raise TypeError(f"from_dlpack: no local {platform} device with hardware id {dev_id}")


def from_dlpack(x: Any, device: Any = None, copy: bool | None = None) -> Array:
    """A minijax Array with the data of ``x`` (an object with ``__dlpack__`` and
    ``__dlpack_device__``).

    ``copy=None`` shares the producer's memory when it can (CPU, row-major, aligned
    and already of a canonical dtype) and copies otherwise; ``copy=True`` always
    copies; ``copy=False`` never copies and raises ``ValueError`` when it would have to.
    """
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise TypeError(f"The array passed to from_dlpack must have __dlpack__ and "
                        f"__dlpack_device__ methods; got {type(x).__name__}")
    dl_type, dev_id = x.__dlpack_device__()
    src = _source_device(int(dl_type), int(dev_id))
    if device is not None and device != src and copy is False:
        raise ValueError(f"Specified device={device} which requires a copy since the "
                         f"source device is {src}, however copy=False. Set copy=True or "
                         f"copy=None to perform the requested operation.")
    if isinstance(x, Array):
        out = x
    else:
        out = _import(x, src, False if copy is False else None)
    if device is not None and device != out.device:
        return _copy_array(out, device, force=True)
    return _copy_array(out, out.device, force=True) if copy else out


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


# DLManagedTensor starts with its DLTensor (manager_ctx and deleter follow)
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype, _capsule_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

# (type code, bits) -> dtype; codes from dlpack.h: 0 int, 1 uint, 2 float, 4 bfloat,
# 5 complex, 6 bool
_DTYPES = {(0, 8): np.int8, (0, 16): np.int16, (0, 32): np.int32, (0, 64): np.int64,
           (1, 8): np.uint8, (1, 16): np.uint16, (1, 32): np.uint32, (1, 64): np.uint64,
           (2, 16): np.float16, (2, 32): np.float32, (2, 64): np.float64,
           (4, 16): dtypes.bfloat16, (5, 64): np.complex64, (5, 128): np.complex128,
           (6, 8): np.bool_}
_MAX_NDIM = 64
_MAX_BYTES = 1 << 62


def _bad(kind: str, msg: str) -> Exception:
    return JaxRuntimeError(f"{kind}: {msg}")


def _header(capsule: Any, dl_type: int) -> tuple[tuple, np.dtype, int, int]:
    """Reads and checks the DLTensor of a ``dltensor`` capsule, touching no data:
    ``(shape, dtype, address of the first element, size in bytes)``. Refuses what
    jaxlib refuses (non-compact strides, lanes, unknown types) and what it would
    read out of bounds with (negative sizes, misaligned offsets, sizes that overflow).
    """
    if type(capsule).__name__ != "PyCapsule" or not _capsule_valid(capsule, b"dltensor"):
        raise TypeError("from_dlpack: __dlpack__ must return an unconsumed 'dltensor' "
                        f"capsule; got {capsule!r}")
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    ndim = t.ndim
    if not 0 <= ndim <= _MAX_NDIM:
        raise _bad("INVALID_ARGUMENT", f"Number of dimensions in DLManagedTensor must be "
                   f"between 0 and {_MAX_NDIM}, got {ndim}")
    if t.device.device_type != dl_type:
        raise _bad("INVALID_ARGUMENT", f"DLPack capsule is on device type "
                   f"{t.device.device_type}, but __dlpack_device__ said {dl_type}")
    dt = t.dtype
    if dt.lanes != 1:
        raise _bad("UNIMPLEMENTED", f"DLPack types with lanes != 1 not implemented, "
                   f"got {dt.lanes}")
    npdt = _DTYPES.get((dt.code, dt.bits))
    if npdt is None:
        raise _bad("UNIMPLEMENTED", f"Invalid or unsupported DLPack type: code {dt.code}, "
                   f"{dt.bits} bits")
    npdt = np.dtype(npdt)
    if ndim and not t.shape:
        raise _bad("INVALID_ARGUMENT", "DLPack tensor has a null shape pointer")
    shape = tuple(int(t.shape[i]) for i in range(ndim))
    if any(d < 0 for d in shape):
        raise _bad("INVALID_ARGUMENT", f"DLPack tensor has a negative dimension: {shape}")
    size = 1
    for d in shape:
        size *= d
    nbytes = size * npdt.itemsize
    if nbytes > _MAX_BYTES:
        raise _bad("INVALID_ARGUMENT", f"DLPack tensor of shape {shape} and dtype {npdt} "
                   f"is implausibly large ({nbytes} bytes)")
    if t.strides and size:
        strides = tuple(int(t.strides[i]) for i in range(ndim))
        if not _compact(shape, strides):
            raise _bad("UNIMPLEMENTED", f"Only DLPack tensors with trivial (compact) "
                       f"striding are supported; i.e., tensors whose striding represents a "
                       f"transposition of the underlying buffer but not broadcasting. "
                       f"Dimensions were: {list(shape)}, strides were {list(strides)}.")
    offset = int(t.byte_offset)
    if offset % npdt.itemsize or offset > _MAX_BYTES:
        raise _bad("INVALID_ARGUMENT", f"DLPack byte_offset {offset} is not a multiple of "
                   f"the element size {npdt.itemsize} of {npdt}")
    if size and not t.data:
        raise _bad("INVALID_ARGUMENT", f"DLPack tensor of shape {shape} has no data")
    return shape, npdt, (t.data or 0) + offset, nbytes


def _compact(shape: tuple, strides: tuple) -> bool:
    """Whether ``strides`` (in elements) are a permutation of a row-major layout of
    ``shape``: every element at a distinct place inside ``prod(shape)`` elements.
    Dimensions of size 1 may carry any stride (they are never stepped along)."""
    dims = sorted((s, d) for s, d in zip(strides, shape) if d != 1)
    expect = 1
    for s, d in dims:
        if s != expect:
            return False
        expect *= d
    return True


def _extent_of(x: Any) -> tuple[int, int] | None:
    """``(address, size in bytes)`` of the memory ``x`` says it owns, when it says so
    (NumPy arrays, the array interface, the buffer protocol); None otherwise."""
    try:
        if isinstance(x, np.ndarray):
            if not (x.flags.c_contiguous or x.flags.f_contiguous):
                return None
            return x.ctypes.data, x.nbytes
        iface = getattr(x, "__array_interface__", None)
        if isinstance(iface, dict) and iface.get("strides") is None:
            n = int(np.prod(iface["shape"])) * np.dtype(iface["typestr"]).itemsize
            return int(iface["data"][0]), n
        m = memoryview(x)
    except Exception:  # noqa: BLE001 - no extent to check against
        return None
    with m:
        if not m.contiguous:
            return None
        return int(np.frombuffer(m.cast("B"), np.uint8).ctypes.data), m.nbytes


def _import(x: Any, src: Any, copy: bool | None) -> Array:
    dl_type = _KDLCPU if src.platform == "cpu" else _KDLCUDA
    # one call: a second could hand back another dtype or another buffer
    capsule = x.__dlpack__(stream=None) if src.platform == "cpu" else x.__dlpack__()
    shape, dt, addr, nbytes = _header(capsule, dl_type)
    if nbytes and src.platform == "cpu":
        extent = _extent_of(x)
        if extent is not None and not (extent[0] <= addr
                                       and addr + nbytes <= extent[0] + extent[1]):
            raise _bad("INVALID_ARGUMENT", f"DLPack tensor of shape {shape} and dtype "
                       f"{dt} ({nbytes} bytes at {addr:#x}) lies outside the producer's "
                       f"buffer ({extent[1]} bytes at {extent[0]:#x})")
    cdt = _canonical(dt, config.enable_x64)
    if cdt != dt:  # narrowed (x64 off): a converting copy
        if copy is False:
            raise ValueError(f"from_dlpack(copy=False): {dt} data must be converted "
                             f"to {cdt} (enable x64 to keep it), which copies")
        if src.platform == "cpu":  # the checked header, read through numpy
            view = _host_view(capsule, shape, dt, addr)
            out = put_numpy(view, device=src)
            del view
            return out
    try:
        with _backend.no_jax_import():  # jaxlib would otherwise import jax for an aval
            buf = _jax.dlpack_managed_tensor_to_buffer(capsule, src, None, copy, dl_type)
    except Exception as e:  # noqa: BLE001 - jaxlib's runtime error, re-raised as jax does
        if "is not aligned to" in str(e):
            raise ValueError("from_dlpack(copy=False): the source data buffer is not "
                             "aligned to 64 bytes, so it must be copied. Set copy=True or "
                             "copy=None.") from None
        raise
    device, sharding = _target(src)
    if cdt != dt:  # a GPU buffer to narrow
        wide = Array._from_buffer(_alias_into(buf, _aval(shape, dt, False, device),
                                              sharding), _aval(shape, dt, False, device))
        return put_numpy(np.asarray(wide), device=src)
    aval = _aval(shape, dt, False, device)
    return Array._from_buffer(_alias_into(buf, aval, sharding), aval)


def _host_view(capsule: Any, shape: tuple, dt: np.dtype, addr: int) -> np.ndarray:
    """A NumPy view of the (checked, compact) host data of ``capsule``, in its
    element order, kept alive by the capsule."""
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0:
        return np.zeros(shape, dt)
    if t.strides:
        strides = tuple(int(t.strides[i]) for i in range(len(shape)))
    else:
        strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64))
                        for i in range(len(shape)))
    raw = (ctypes.c_char * (size * dt.itemsize)).from_address(addr)
    flat = np.frombuffer(raw, dt)
    return np.lib.stride_tricks.as_strided(
        flat, shape, tuple(s * dt.itemsize for s in strides), writeable=False)


def _alias_into(buf: Any, aval, sharding) -> Any:
    """``buf`` as a jaxlib array carrying minijax's aval and sharding object."""
    return _jax.array_result_handler(aval, sharding, True, _skip_checks=True)(buf)
