"""Argument checks and helpers on key words shared by the samplers."""

from __future__ import annotations


import numpy as np

import minijax.numpy as jnp
from minijax import lax
from minijax.core import dtypes
from minijax.core.trace import Tracer, get_aval
from minijax.random._keys import _split_impl, canonicalize_shape, check_prng_key
from minijax.runtime.array import Array
from minijax.core.aval import no_sharding_constraint


class TypePromotionError(ValueError):
    """An argument cannot be cast safely to the requested dtype (as jax's)."""


# ---- argument checking --------------------------------------------------------------------------

def _float_dtype(name: str, dtype, kinds: str = "float"):
    """The canonical dtype asked for (default: the default float); ValueError unless it is a
    float dtype (``kinds="inexact"``: float or complex)."""
    dt = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype, name)
    ok = dtypes.is_float(dt) if kinds == "float" else dtypes.is_inexact(dt)
    if not ok:
        what = "a float" if kinds == "float" else "a float or complex"
        raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dt}")
    return dt


def _int_dtype(name: str, dtype):
    return dtypes.default_int() if dtype is None else dtypes.check_user_dtype(dtype, name)


def _broadcast_shapes(*shapes) -> tuple[int, ...]:
    """numpy's broadcasting of ``shapes``; ValueError when they are incompatible."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for dims in zip(*[(1,) * (ndim - len(s)) + tuple(s) for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _check_shape(name: str, shape: tuple, *param_shapes) -> None:
    """The parameter shapes must broadcast to exactly ``shape``."""
    if param_shapes:
        got = _broadcast_shapes(shape, *param_shapes)
        if got != shape:
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                             f"argument, and the result of broadcasting the shapes must equal the "
                             f"shape argument, but got result {got} for shape argument {shape}.")


def _check_broadcast_shapes(name: str, shape, *args) -> tuple:
    arg_shapes = [np.shape(a) for a in args]
    if shape is None:
        return _broadcast_shapes(*arg_shapes) if arg_shapes else ()
    shape = canonicalize_shape(shape)
    _check_shape(name, shape, *arg_shapes)
    return shape


def _check_all_safe_to_cast(name: str, dtype, *args) -> None:
    for a in args:
        in_dt, weak = get_aval(a).dtype, get_aval(a).weak_type
        if in_dt != dtype and dtypes.result_type((in_dt, weak), (dtype, False))[0] != dtype:
            raise TypePromotionError(f"In arguments to {name}, cannot safely cast argument of "
                                     f"type {in_dt} to {dtype}")


def _check_sampler_args(name: str, *args) -> None:
    for i, a in enumerate(args):
        if not isinstance(a, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(a)} at "
                            f"position {i}.")


def _no_sharding(out_sharding) -> None:
    if not no_sharding_constraint(out_sharding):
        raise NotImplementedError("minijax.random: out_sharding is not supported")


def _float_sampler_args(name: str, key, params: tuple, shape, dtype, out_sharding,
                        kinds: str = "float") -> tuple:
    """``(key words, shape, dtype)`` after the checks a float sampler with broadcasting
    parameters makes, in jax's order: the key, ``out_sharding``, the dtype, the shapes,
    then that each parameter casts safely to the dtype."""
    words, _ = check_prng_key(name, key)
    _no_sharding(out_sharding)
    dtype = _float_dtype(name, dtype, kinds)
    shape = _check_broadcast_shapes(name, shape, *params)
    _check_all_safe_to_cast(name, dtype, *params)
    return words, shape, dtype


# ---- helpers on key words -----------------------------------------------------------------------

def _split_n(key, n: int) -> list:
    """``n`` new keys (each uint32[2]) from one."""
    keys = _split_impl(key, (n,))
    return [lax.reshape(lax.slice(keys, (i, 0), (i + 1, 2)), (2,)) for i in range(n)]


def _bcast(x, shape: tuple):
    """``x`` broadcast to ``shape`` (rank-0 values are left to broadcast in the op)."""
    aval = get_aval(x)
    if aval.shape == shape or aval.ndim == 0:
        return x
    return jnp.broadcast_to(x, shape)


def _isnan(x):
    return lax.ne(x, x)
