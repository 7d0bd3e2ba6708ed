"""minijax: a small JAX-style tracing compiler on XLA.

>>> import minijax, minijax.numpy as jnp
>>> f = minijax.jit(lambda x: jnp.sin(x) * 2.0)
>>> print(f.lower(1.0).as_text("hlo"))
"""

from minijax.config import config
from minijax.core.aval import ShapedArray, ShapeDtypeStruct
from minijax.core.errors import (ConcretizationTypeError, TracerArrayConversionError,
                                 TracerBoolConversionError, TracerIntegerConversionError,
                                 UnexpectedTracerError)
from minijax.core.trace import Tracer
from minijax.runtime.array import Array as _ArrayImpl
from minijax.runtime.basearray import Array
from minijax.runtime.backend import (Device, default_backend, device_count, devices,
                                     local_device_count, local_devices, process_count,
                                     process_index)
from minijax.runtime.transfer import block_until_ready, device_get
from minijax.runtime.transfer import device_put_tree as device_put
from minijax.runtime.make_array import (make_array_from_callback,
                                        make_array_from_process_local_data,
                                        make_array_from_single_device_arrays)
from minijax.runtime.sharding import PartitionSpec as P, make_mesh
from minijax.stages.api import (clear_caches, copy_to_host_async, disable_jit,
                                ensure_compile_time_eval, eval_shape, host_count, host_id,
                                host_ids, live_arrays, make_jaxpr, named_call, named_scope,
                                print_environment_info, process_indices, typeof)
from minijax.stages.jit import jit
from minijax.api.pmap import pmap
from minijax.stages.xla_computation import xla_computation
from minijax.api.ad import (fwd_and_bwd, grad, jvp, linear_transpose, linearize,
                            value_and_grad, vjp)
from minijax.api.vmap import vmap
from minijax.api.jacobians import hessian, jacfwd, jacobian, jacrev
from minijax.api.custom_derivatives import (checkpoint, closure_convert, custom_gradient,
                                            custom_jvp, custom_vjp, remat)
from minijax.api import checkpoint_policies  # noqa: F401
from minijax import stages  # noqa: F401
from minijax.stages import eager as _eager  # noqa: F401  (registers eager execution)
from minijax import lax, numpy, tree_util  # noqa: F401
from minijax import errors  # noqa: F401  (after numpy: it names jnp's NonConcreteBooleanIndexError)
from minijax import random  # noqa: F401
from minijax import nn  # noqa: F401  (after random: its initializers draw from it)
from minijax import debug, distributed, sharding  # noqa: F401
from minijax import example_libraries, image, ops  # noqa: F401
from minijax._callback import effects_barrier, io_callback, pure_callback
from minijax.config import debug_infs, debug_nans
from minijax.experimental.shard_map import shard_map, smap
from minijax import (custom_batching, custom_derivatives, dlpack, dtypes, profiler,  # noqa: F401
                     tree, typing, version)
from minijax.config import (allow_f16_reductions, array_garbage_collection_guard, auto_pcast,
                            check_tracer_leaks, checking_leaks, debug_key_reuse,
                            default_device, default_matmul_precision, default_prng_impl,
                            enable_checks, enable_custom_prng, enable_x64,
                            explain_cache_misses, jax2tf_associative_scan_reductions,
                            legacy_prng_key, log_compiles, make_user_context, no_execution,
                            no_tracing, numpy_dtype_promotion, numpy_rank_promotion,
                            remove_size_one_mesh_axis_from_type, softmax_custom_jvp,
                            thread_guard, threefry_partitionable, transfer_guard,
                            transfer_guard_device_to_device, transfer_guard_device_to_host,
                            transfer_guard_host_to_device)
from minijax.core.dtypes import float0
from minijax.sharding import NamedSharding, Shard, reshard, set_mesh  # noqa: F401
from minijax import memory  # noqa: F401
from minijax._unsupported import (lib,  # noqa: F401
                                 cloud_tpu_init, collect_profile, tools)
from minijax import ffi  # noqa: F401
from minijax import export  # noqa: F401
from minijax import ad, api_util, monitoring  # noqa: F401
from minijax import extend, interpreters  # noqa: F401
from minijax import ad_checkpoint, flatten_util, test_util  # noqa: F401
from minijax.lax.state import Ref, empty_ref, free_ref, freeze, new_ref  # noqa: F401
from minijax import ref  # noqa: F401
from minijax.experimental.pallas import ds  # noqa: F401  (jax.ds: Pallas' dynamic slice)
from minijax.numpy import array_methods as _array_methods

_array_methods.install(_ArrayImpl)
_array_methods.install(Tracer)
for _cls in (_ArrayImpl, Tracer):  # the Array API standard's namespace hooks
    _cls.__array_namespace__ = numpy._array_api.__array_namespace__
    _cls.to_device = numpy._array_api.to_device

__version__ = version.__version__
__version_info__ = version.__version_info__

__all__ = [
    "Array", "ConcretizationTypeError", "ShapeDtypeStruct", "ShapedArray",
    "TracerArrayConversionError", "TracerBoolConversionError", "TracerIntegerConversionError",
    "UnexpectedTracerError", "block_until_ready", "config", "default_backend", "device_count",
    "device_get", "device_put", "devices", "errors", "eval_shape", "grad", "jit", "jvp", "lax",
    "linearize",
    "value_and_grad", "vjp", "vmap", "jacfwd", "jacrev", "hessian", "checkpoint",
    "custom_jvp", "custom_vjp", "remat",
    "local_devices", "make_jaxpr", "numpy", "pmap", "xla_computation",
    "P", "debug", "distributed", "local_device_count", "process_count", "process_index",
    "make_array_from_callback", "make_array_from_process_local_data",
    "make_array_from_single_device_arrays", "make_mesh", "shard_map", "sharding",
    "random", "tree_util", "effects_barrier", "io_callback", "pure_callback",
    "debug_infs", "debug_nans",
    "example_libraries", "image", "ops",
]
