"""XLA clients ("backends"), devices and shardings.

One PJRT client is created lazily per platform: ``'cpu'`` always, ``'gpu'``
when a CUDA PJRT plugin package (``jax-cuda12-pjrt`` / ``jax-cuda13-pjrt``)
is installed and loads. Nothing here imports ``jax``.

Example::

    >>> from minijax.runtime import backend
    >>> backend.default_backend()
    'cpu'
    >>> backend.devices()
    [CpuDevice(id=0)]
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import importlib
import importlib.util
import logging
import os
import sys
import threading
from collections.abc import Iterator

from jaxlib import _jax, xla_client

from minijax.config import config

logger = logging.getLogger(__name__)

Device = _jax.Device
Client = _jax.Client


# Python objects whose last reference jaxlib drops on its worker threads (which do not
# hold the GIL) wait in a queue that only ``_jax.collect_garbage()`` empties: about one
# object (~70 bytes) per execution or transfer. jax drains it after every garbage
# collection (jax issue #14882), and so do we, but a steady loop of calls allocates
# nothing that would trigger a collection, so the queue grew forever. ``Array``
# construction (``runtime/array.py``, C or Python) therefore also drains it every
# ``COLLECT_EVERY`` arrays: each execution and transfer builds at least one (executions
# with no outputs count themselves, ``note_release``), so the queue stays below a few
# thousand entries (well under 1 MB), at ~0.02 µs per call.
COLLECT_EVERY = 1000


def collect_jaxlib_garbage() -> None:
    """Release the Python objects jaxlib's worker threads have dropped since last time."""
    _jax.collect_garbage()


_unwrapped = [0]  # executions that built no Array since the last drain (note_release)


def note_release() -> None:
    """Count an execution that builds no Array (zero outputs) toward the drain."""
    n = _unwrapped[0] + 1
    if n >= COLLECT_EVERY:
        n = 0
        _jax.collect_garbage()
    _unwrapped[0] = n


def _collect_jaxlib_garbage(phase: str, _info: dict) -> None:
    if phase == "stop":
        _jax.collect_garbage()


gc.callbacks.append(_collect_jaxlib_garbage)

# Platform aliases accepted in ``minijax_platforms`` and ``get_backend``.
_ALIASES = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu"}


# ---- jaxlib's x64 state -------------------------------------------------------
#
# Some jaxlib entry points read a process-wide "enable_x64" config object that
# the host library must create and register. minijax passes ``enable_x64``
# explicitly wherever jaxlib accepts it, so this object is only a fallback;
# we register it only when jax is not loaded, so that we never replace jax's
# own registration (jax re-registers its own if it is imported later).

_x64_state = _jax.config.Config(
    "minijax_enable_x64", bool(config.minijax_enable_x64),
    include_in_jit_key=True, include_in_trace_context=True)
if "jax" not in sys.modules:
    _jax.jax_jit.set_enable_x64_state(_x64_state)


def _on_x64_change(value: bool) -> None:
    _x64_state.set_global(bool(value))


config.on_change("minijax_enable_x64", _on_x64_change)


# ---- SingleDeviceSharding members jaxlib's C++ expects ------------------------
#
# jaxlib's C++ ``SingleDeviceSharding`` calls back into a few Python-level
# members that jax normally defines. We *add* them (never replace ``__init__``,
# which crashes), and only where they are missing, so jax's own definitions win
# when jax shares the process.

_REPLICATED = xla_client.HloSharding.replicate()  # jaxlib asks at every device_put


def _to_xla_hlo_sharding(self, num_dimensions: int) -> xla_client.HloSharding:
    del num_dimensions
    return _REPLICATED


def _device_assignment(self) -> tuple:
    return (self._device,)


def _device_set(self) -> set:
    return {self._device}


_SHARDING_MEMBERS = {
    "_to_xla_hlo_sharding": _to_xla_hlo_sharding,
    "_device_assignment": property(_device_assignment),
    "_addressable_device_assignment": property(_device_assignment),
    "device_set": property(_device_set),
    "is_fully_replicated": True,
    "is_fully_addressable": True,
    "num_devices": 1,
}
for _name, _member in _SHARDING_MEMBERS.items():
    if not hasattr(_jax.SingleDeviceSharding, _name):
        setattr(_jax.SingleDeviceSharding, _name, _member)


def _sharding_repr(self) -> str:
    """As jax prints it: ``SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)``."""
    return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"


if "__repr__" not in _jax.SingleDeviceSharding.__dict__:  # object's repr: jax's not there
    _jax.SingleDeviceSharding.__repr__ = _sharding_repr

_shardings: dict[Device, _jax.SingleDeviceSharding] = {}


def sharding_for(device: Device) -> _jax.SingleDeviceSharding:
    """The (cached) single-device sharding of ``device``."""
    s = _shardings.get(device)
    if s is None:
        s = _shardings.setdefault(device, _jax.SingleDeviceSharding(device))
    return s


# ---- keeping jaxlib from importing jax -----------------------------------------
#
# A few jaxlib array methods (``_single_device_array_to_np_array_did_copy``,
# ``_copy_single_device_array_to_host_async``) build a helper array from C++ and
# try ``import jax.core`` / ``import jax._src.sharding_impls`` for its aval and
# sharding. With jax installed that silently imports all of jax (~0.7 s); without
# it each call pays a failed sys.path search. The C++ code tolerates the
# ImportError, so while such a call runs we make jax imports fail immediately.

class _BlockJaxImport:
    """A ``sys.meta_path`` finder that refuses ``jax``/``jax.*`` in one thread."""

    __slots__ = ("thread",)

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name, path=None, target=None):
        if (name == "jax" or name.startswith("jax.")) and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"minijax: jax import blocked ({name})", name=name)


@contextlib.contextmanager
def no_jax_import() -> Iterator[None]:
    """Within the block, jaxlib's C++ cannot import jax (unless already imported)."""
    if "jax" in sys.modules:
        yield
        return
    finder = _BlockJaxImport()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


# ---- backends --------------------------------------------------------------------

class Backend:
    """A PJRT client together with its platform name and devices."""

    __slots__ = ("client", "default_device", "devices", "num_cpu_devices", "platform")

    def __init__(self, client: Client, platform: str, num_cpu_devices: int | None = None):
        self.client = client
        self.platform = platform
        self.devices: list[Device] = list(client.local_devices())
        chosen = config.minijax_default_device  # minijax.default_device(...) in force
        self.default_device: Device = chosen if chosen in self.devices else self.devices[0]
        self.num_cpu_devices = num_cpu_devices

    def __repr__(self) -> str:
        return f"Backend(platform={self.platform!r}, devices={self.devices})"


_lock = threading.RLock()
_backends: dict[str, Backend] = {}
_backend_errors: dict[str, str] = {}
_default: Backend | None = None


def _quiet_xla_logs() -> None:
    """XLA logs INFO lines (device counts) to stderr; keep warnings and errors only,
    unless the user chose a level with TF_CPP_MIN_LOG_LEVEL."""
    if "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
        import jaxlib.utils
        jaxlib.utils.absl_set_min_log_level(1)


def _make_cpu() -> Backend:
    _quiet_xla_logs()
    from minijax.runtime import distributed
    n = config.minijax_num_cpu_devices
    if n is not None and n < 1:
        raise ValueError(f"minijax_num_cpu_devices must be >= 1, got {n}")
    if distributed.state.local_device_ids is not None:
        n = len(distributed.state.local_device_ids)
    # After minijax.distributed.initialize: one client over every process's devices
    client = xla_client.make_cpu_client(asynchronous=True, num_devices=n,
                                        **distributed.cpu_client_kwargs())
    return Backend(client, "cpu", n)


def _find_cuda_plugin() -> str | None:
    """Path of an installed CUDA PJRT plugin library, found without importing it."""
    try:
        spec = importlib.util.find_spec("jax_plugins")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        for pkg in ("xla_cuda13", "xla_cuda12", "cuda"):
            path = os.path.join(root, pkg, "xla_cuda_plugin.so")
            if os.path.exists(path):
                return path
    return None


_NVIDIA_LIBS = (
    ("cuda_runtime", ("libcudart.so.12",)), ("cu13", ("libcudart.so.13",)),
    ("cuda_nvrtc", ("libnvrtc.so.12",)), ("cu13", ("libnvrtc.so.13",)),
    ("cublas", ("libcublas.so.12", "libcublasLt.so.12")),
    ("cu13", ("libcublas.so.13", "libcublasLt.so.13")),
    ("nccl", ("libnccl.so.2",)), ("cuda_cupti", ("libcupti.so.12",)),
    ("cu13", ("libcupti.so.13",)), ("cusparse", ("libcusparse.so.12",)),
    ("cusolver", ("libcusolver.so.11",)), ("cu13", ("libcusolver.so.12",)),
    ("cufft", ("libcufft.so.11",)), ("cu13", ("libcufft.so.12",)),
    ("nvshmem", ("libnvshmem_host.so.3",)), ("cudnn", ("libcudnn.so.9",)),
)


def _preload_nvidia_libraries() -> None:
    # The pip CUDA wheels ship their libraries under nvidia/<pkg>/lib; the
    # plugin finds them only if they are already loaded.
    for pkg, libs in _NVIDIA_LIBS:
        try:
            spec = importlib.util.find_spec(f"nvidia.{pkg}")
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        for lib in libs:
            path = os.path.join(next(iter(spec.submodule_search_locations)), "lib", lib)
            with contextlib.suppress(OSError):
                ctypes.cdll.LoadLibrary(path)


def _register_cuda_custom_calls(c_api) -> None:
    """Register the CUDA plugin's FFI targets (linalg, prng, ...) if its package is there."""
    for pkg in ("jax_cuda13_plugin", "jax_cuda12_plugin"):
        try:
            with no_jax_import():
                ext = importlib.import_module(f"{pkg}.cuda_plugin_extension")
        except ImportError:
            continue
        xla_client.register_custom_type_handler(
            "CUDA", functools.partial(ext.register_custom_type, c_api))
        xla_client.register_custom_call_handler(
            "CUDA", functools.partial(ext.register_custom_call_target, c_api))
        for name, value in ext.ffi_types().items():
            xla_client.register_custom_type(name, value, platform="CUDA")
        for name, value in ext.ffi_handlers().items():
            xla_client.register_custom_call_target(name, value, platform="CUDA", api_version=1)
        return


def _make_gpu() -> Backend:
    path = _find_cuda_plugin()
    if path is None:
        raise RuntimeError("no CUDA PJRT plugin installed (pip install jax-cuda12-pjrt)")
    _preload_nvidia_libraries()
    if not xla_client.pjrt_plugin_loaded("cuda"):
        c_api = xla_client.load_pjrt_plugin_dynamically("cuda", path)
        with contextlib.suppress(Exception):
            _register_cuda_custom_calls(c_api)
    options = xla_client.generate_pjrt_gpu_plugin_options()
    client = xla_client.make_c_api_client("cuda", options)
    if not client.local_devices():
        raise RuntimeError("the CUDA plugin found no GPU")
    return Backend(client, "gpu")


_FACTORIES = {"cpu": _make_cpu, "gpu": _make_gpu}


def _canonical_platform(name: str) -> str:
    p = _ALIASES.get(name.strip().lower())
    if p is None:
        raise ValueError(f"unknown platform {name!r}; known: {sorted(_ALIASES)}")
    return p


def _create(platform: str) -> Backend:
    with _lock:
        b = _backends.get(platform)
        if b is None:
            if platform in _backend_errors:
                raise RuntimeError(
                    f"Backend {platform!r} failed to initialize: {_backend_errors[platform]}")
            try:
                b = _FACTORIES[platform]()
            except Exception as e:
                _backend_errors[platform] = f"{type(e).__name__}: {e}"
                raise RuntimeError(
                    f"Backend {platform!r} failed to initialize: {_backend_errors[platform]}"
                ) from e
            _backends[platform] = b
        return b


def _choose_default() -> Backend:
    requested = config.minijax_platforms
    if requested:
        names = [_canonical_platform(p) for p in requested.split(",") if p.strip()]
        errors = []
        for p in names:
            try:
                return _create(p)
            except RuntimeError as e:
                errors.append(str(e))
        raise RuntimeError(
            f"none of the platforms in minijax_platforms={requested!r} could be "
            f"initialized: {'; '.join(errors)}")
    if _find_cuda_plugin() is not None:
        try:
            return _create("gpu")
        except RuntimeError as e:
            logger.warning("CUDA plugin found but unusable, falling back to CPU: %s", e)
    return _create("cpu")


def get_backend(platform: str | Backend | None = None) -> Backend:
    """The backend for ``platform`` ('cpu', 'gpu'/'cuda'), or the default one."""
    global _default
    if platform is None:
        b = _default
        if b is None:
            with _lock:
                if _default is None:
                    _default = _choose_default()
                b = _default
        return b
    if isinstance(platform, Backend):
        return platform
    b = _backends.get(platform)
    if b is not None:
        return b
    canonical = _ALIASES.get(platform.strip().lower())
    if canonical is None:  # jax raises RuntimeError for a platform it has no backend for
        get_backend()
        raise RuntimeError(f"Unknown backend {platform}. Available backends are "
                           f"{sorted(_backends)}")
    return _create(canonical)


def default_backend() -> str:
    """The platform name of the default backend: 'cpu' or 'gpu'."""
    return get_backend().platform


def devices(backend: str | Backend | None = None) -> list[Device]:
    """The devices of ``backend`` (default backend if None), of every process."""
    b = get_backend(backend)
    return list(b.client.devices())


def local_devices(backend: str | Backend | None = None) -> list[Device]:
    """The devices addressable from this process."""
    return list(get_backend(backend).client.local_devices())


def device_count(backend: str | Backend | None = None) -> int:
    """Number of devices of ``backend`` (default backend if None), of every process."""
    return len(get_backend(backend).client.devices())


def local_device_count(backend: str | Backend | None = None) -> int:
    """Number of devices of this process."""
    return len(get_backend(backend).devices)


def process_index(backend: str | Backend | None = None) -> int:
    """This process's index among the processes of a distributed computation (0 alone)."""
    return get_backend(backend).client.process_index()


def process_count(backend: str | Backend | None = None) -> int:
    """How many processes take part (1 unless ``minijax.distributed.initialize``)."""
    return 1 + max(d.process_index for d in get_backend(backend).client.devices())


def default_device() -> Device:
    """The first device of the default backend."""
    return get_backend().default_device


def backend_of(device: Device) -> Backend:
    """The backend that owns ``device``."""
    client = device.client
    for b in _backends.values():
        if b.client == client:
            return b
    raise ValueError(f"{device} does not belong to any minijax backend")


def _on_num_cpu_devices_change(value) -> None:
    b = _backends.get("cpu")
    if b is not None and value != b.num_cpu_devices and value != len(b.devices):
        raise RuntimeError(
            "minijax_num_cpu_devices must be set before the CPU backend is first used; "
            f"the CPU client already exists with {len(b.devices)} device(s) "
            f"(requested {value}).")


def _on_platforms_change(value) -> None:
    global _default
    with _lock:
        _default = None


def _on_default_device_change(value) -> None:
    """``minijax.default_device(d)`` / ``jax_default_device``: computations and transfers
    without a device of their own go to ``d`` (a Device, or a platform name for its first
    device); None restores each backend's first device."""
    if isinstance(value, str):
        value = get_backend(value).devices[0]
    elif value is not None and not isinstance(value, Device):
        raise TypeError(f"jax_default_device must be a Device, a platform name or None, "
                        f"got {value!r}")
    for b in list(_backends.values()) + ([_default] if _default is not None else []):
        b.default_device = value if value in b.devices else b.devices[0]


config.on_change("minijax_num_cpu_devices", _on_num_cpu_devices_change)
config.on_change("minijax_platforms", _on_platforms_change)
config.on_change("minijax_default_device", _on_default_device_change)
