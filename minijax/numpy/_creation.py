"""Array creation: asarray, zeros, ones, full, ..."""

from __future__ import annotations

import numpy as np

from minijax import lax
from minijax.core import dtypes
from minijax.core.aval import canonicalize_shape
from minijax.core.shape_poly import DimExpr
from minijax.core.trace import Tracer, get_aval, is_python_scalar, made_in_trace
from minijax.core.aval import no_sharding_constraint


def _canon(dtype, fun_name: str = "asarray"):
    if dtype is None or isinstance(dtype, dtypes.ExtendedDType):
        return dtype
    return dtypes.check_user_dtype(dtype, fun_name)


def place(out, device=None, out_sharding=None):
    """``out`` (an array or a pytree of them) on ``device`` (or ``out_sharding``) when
    one is given; tracers stay as they are (their placement is the computation's)."""
    target = device if device is not None else out_sharding
    if no_sharding_constraint(target):
        return out
    if isinstance(out, Tracer):
        if device is not None:
            return out  # a traced value's placement is the computation's
        # out_sharding under a trace: a sharding constraint (over explicit mesh axes it
        # is the result's type, as jax's sharding in types)
        from minijax.core.sharding_rules import resolve
        return lax.with_sharding_constraint(out, resolve("out_sharding", out_sharding))
    from minijax.runtime.transfer import device_put_tree
    return device_put_tree(out, target)


def asarray(a, dtype=None, order=None, *, copy=None, device=None, out_sharding=None):
    """Convert to a minijax array (a no-op for arrays and tracers of the right dtype,
    unless ``copy=True``)."""
    if copy:
        return array(a, dtype=dtype, copy=True, device=device, out_sharding=out_sharding)
    return place(_asarray(a, dtype), device, out_sharding)


def _asarray(a, dtype):
    from minijax.runtime.array import Array
    from minijax.runtime.transfer import device_put
    dtype = _canon(dtype)
    if type(a) is DimExpr:
        a = a.dimension_as_value()
    if isinstance(a, (Tracer, Array)):
        return a if dtype is None or a.dtype == dtype else lax.convert_element_type(a, dtype)
    if hasattr(type(a), "__jax_array__"):  # an array-like object: its array, as jax
        a = a.__jax_array__()
    if isinstance(a, (Tracer, Array)):
        return a if dtype is None or a.dtype == dtype else lax.convert_element_type(a, dtype)
    if _is_extended(a):  # typed PRNG keys: the key array itself, as jax
        if dtype is None or a.dtype == dtype:
            return a
        raise ValueError(f"Cannot convert_element_type from {a.dtype} to {dtype}")
    if isinstance(a, (list, tuple)):
        leaves = _leaves(a)
        if any(isinstance(x, (Tracer, Array)) or _is_extended(x) or
               hasattr(type(x), "__jax_array__") for x in leaves):
            return _stack_nested(a, dtype)
    if is_python_scalar(a) and dtype is None:
        return made_in_trace(device_put(a), a)
    arr = np.asarray(a)
    if arr.dtype == object:
        raise TypeError(f"cannot convert {a!r} to a minijax array")
    if dtype is None:
        dtype = dtypes.canonicalize(arr.dtype)
    arr = np.asarray(arr, dtype=dtype)
    out = device_put(arr)
    return made_in_trace(out, arr.copy()) if not arr.ndim else out


def _is_extended(a) -> bool:
    return isinstance(getattr(a, "dtype", None), dtypes.ExtendedDType)


def _leaves(a):
    out = []
    for x in a:
        if isinstance(x, (list, tuple)):
            out.extend(_leaves(x))
        else:
            out.append(x)
    return out


def _stack_nested(a, dtype):
    from minijax.numpy._promote import promote_dtypes
    items = [(_stack_nested(x, None) if isinstance(x, (list, tuple)) else
              x.__jax_array__() if hasattr(type(x), "__jax_array__") else x) for x in a]
    if any(_is_extended(x) for x in items):  # typed keys join with stack's key rule
        import minijax.numpy as jnp
        return asarray(jnp.stack(items), dtype)
    items = promote_dtypes(*items) if len(items) > 1 else items
    items = [asarray(x) if not isinstance(x, Tracer) and not hasattr(x, "aval") else x
             for x in items]
    shape = get_aval(items[0]).shape
    rows = [lax.reshape(x, (1,) + shape) for x in items]
    out = _concat(rows)
    return out if dtype is None else lax.convert_element_type(out, dtype)


def _concat(rows):
    import minijax.numpy as jnp
    return jnp.concatenate(rows, axis=0)


def array(object, dtype=None, copy=True, order="K", ndmin=0, *,  # noqa: A002
          device=None, out_sharding=None):
    out = asarray(object, dtype=dtype)
    if copy and out is object:  # an array (or tracer) already: a distinct one, as jax
        if _is_extended(out):
            out = out.dtype.from_physical(lax.copy_p.bind(out.dtype.to_physical(out)))
        else:
            out = lax.copy_p.bind(out)
    if ndmin > out.ndim:
        shape = (1,) * (ndmin - out.ndim) + tuple(out.shape)
        out = out.reshape(shape) if _is_extended(out) else lax.reshape(out, shape)
    return place(out, device, out_sharding)


def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
    if dtype is None:  # a weakly typed scalar fill keeps its weak type, as jax's lax.full
        aval = get_aval(fill_value)
        if aval.weak_type and aval.ndim == 0:  # (broadcast_in_dim keeps the weak type)
            return place(lax.broadcast_in_dim(fill_value, _shape_tuple(shape), ()), device,
                         out_sharding)
    return place(_full(shape, fill_value, dtype), device, out_sharding)


def _full(shape, fill_value, dtype):
    shape = _shape_tuple(shape)
    if dtype is None:
        dt = get_aval(fill_value).dtype
    else:
        dt = dtypes.check_user_dtype(dtype, "full")
    if isinstance(fill_value, Tracer) or hasattr(fill_value, "aval"):
        v = lax.convert_element_type(fill_value, dt)
        import minijax.numpy as jnp
        return jnp.broadcast_to(v, shape)
    value = np.asarray(fill_value, dtype=dt)
    if value.ndim:  # an array fill broadcasts to the shape, as numpy's
        import minijax.numpy as jnp
        return jnp.broadcast_to(value, shape)
    return lax.broadcast_in_dim(value, shape, ())


def _shape_tuple(shape) -> tuple:
    return canonicalize_shape(shape, "shape of an array creation function")


def zeros(shape, dtype=None, *, device=None, out_sharding=None):
    dtype = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype, "zeros")
    return place(_full(shape, 0, dtype), device, out_sharding)


def ones(shape, dtype=None, *, device=None, out_sharding=None):
    dtype = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype, "ones")
    return place(_full(shape, 1, dtype), device, out_sharding)


def empty(shape, dtype=None, *, device=None, out_sharding=None):
    return zeros(shape, dtype, device=device, out_sharding=out_sharding)
