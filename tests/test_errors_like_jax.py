"""Common mistakes raise the exception type jax raises, and name the user's line.

Each mistake runs against jax (the reference) and against minijax. The types match
when minijax's exception is an instance of a class named like jax's (jax's own
classes, e.g. ``ConcretizationTypeError``, are matched by name): ``except <jax's
type>`` catches minijax's error. minijax sometimes raises a subclass of jax's type
(``TracerIntegerConversionError`` where jax raises its base
``ConcretizationTypeError``; ``IncompatibleShapesError``, both a ValueError and a
TypeError, where jax raises one or the other depending on the operands' ranks; NumPy's
``AxisError``, a ValueError and an IndexError). The messages differ: minijax's own
stay. A mistake made in traced code must name this file and the mistake's line.

Bad sizes, negative dimensions, ``static_argnums``/``donate_argnums`` validation,
custom rule output shapes, integer division by zero and out-of-range indices are in
``tests/test_bad_input.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.experimental
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.experimental
import minijax.numpy as mjnp


def _api(lib, jnp) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        jit=lib.jit, grad=lib.grad, vmap=lib.vmap, jvp=lib.jvp, vjp=lib.vjp,
        jacfwd=lib.jacfwd, jacrev=lib.jacrev, hessian=lib.hessian,
        value_and_grad=lib.value_and_grad, make_jaxpr=lib.make_jaxpr,
        eval_shape=lib.eval_shape, custom_jvp=lib.custom_jvp, custom_vjp=lib.custom_vjp,
        device_put=lib.device_put, tree_map=lib.tree_util.tree_map, lax=lib.lax, jnp=jnp,
        SDS=lib.ShapeDtypeStruct, pure_callback=lib.pure_callback,
        io_callback=lib.experimental.io_callback,
        make_array_from_callback=lib.make_array_from_callback, sharding=lib.sharding,
        make_mesh=lib.make_mesh, devices=lib.devices)


MJ = _api(minijax, mjnp)
JX = _api(jax, jjnp)


def f32(*shape):
    return np.ones(shape, np.float32)


def i32(*shape):
    return np.ones(shape, np.int32)


class Mistake(NamedTuple):
    name: str
    run: Callable        # run(api) makes the mistake
    where: str | None    # "file:line" of the mistake when it is in traced code


def traced(name: str, body: Callable, *args) -> Mistake:
    """``body(api, *tracers)`` under ``jit``: the mistake is on ``body``'s (one) line."""
    code = body.__code__
    return Mistake(name, lambda m: m.jit(lambda *a: body(m, *a))(*args),
                   f"{code.co_filename}:{code.co_firstlineno}")


def direct(name: str, run: Callable) -> Mistake:
    """A mistake in how the API is called (the user's line is in the traceback)."""
    return Mistake(name, run, None)


# ---- custom rules, donation and Compiled mistakes (several lines each) -----------------

def _custom_jvp_bad_tree(m):
    f = m.custom_jvp(lambda x: x * 2)
    f.defjvp(lambda p, t: (p[0] * 2, (t[0], t[0])))
    return m.jvp(f, (np.float32(1.0),), (np.float32(1.0),))


def _custom_jvp_no_rule(m):
    return m.jvp(m.custom_jvp(lambda x: x * 2), (np.float32(1.0),), (np.float32(1.0),))


def _custom_vjp_bwd_too_few(m):
    f = m.custom_vjp(lambda x, y: x * y)
    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1],))
    return m.grad(f)(np.float32(1.0), np.float32(2.0))


def _custom_vjp_bwd_not_tuple(m):
    f = m.custom_vjp(lambda x: x * 2)
    f.defvjp(lambda x: (x * 2, x), lambda r, g: g * 2)
    return m.grad(f)(np.float32(1.0))


def _custom_vjp_fwd_not_pair(m):
    f = m.custom_vjp(lambda x: x * 2)
    f.defvjp(lambda x: x * 2, lambda r, g: (g * 2,))
    return m.grad(f)(np.float32(1.0))


def _custom_vjp_no_rule(m):
    return m.grad(m.custom_vjp(lambda x: x * 2))(np.float32(1.0))


# Shapes no other test uses: jax raises RuntimeError for a deleted array, but a
# ValueError from XLA when its dispatch cache already holds the operation's signature.

def _use_donated(m):
    x = m.device_put(f32(7, 3))
    m.jit(lambda a: a + 1, donate_argnums=0)(x)
    return x + 1


def _use_deleted(m):
    x = m.device_put(f32(5, 7))
    x.delete()
    return x + 1


def _compiled(m):
    return m.jit(lambda a: a + 1).lower(f32(3)).compile()


# Shapes, devices and shardings (issue 23): ShapeDtypeStructs with a negative dimension
# (jax fails late, in its MLIR type builder), big-endian NumPy arguments (refused, as
# jax does), make_array_from_callback's shape and sharding checks.

def _neg(m):
    return m.SDS((-3,), np.float32)


def _host_zeros(x):
    return np.zeros((3,), np.float32)


def _single(m):
    return m.sharding.SingleDeviceSharding(m.devices()[0])


def _from_callback(m, shape, sharding=_single, data=lambda i: np.ones(4, np.float32)):
    return m.make_array_from_callback(shape, sharding(m), data)


BIG_ENDIAN = np.arange(3, dtype=">f4")

MISTAKES = [
    # elementwise: shapes and dtypes
    traced("jnp add broadcast", lambda m, x, y: x + y, f32(2, 4), f32(5)),
    traced("jnp multiply equal ranks", lambda m, x, y: m.jnp.multiply(x, y), f32(3), f32(4)),
    traced("jnp where broadcast", lambda m, x, y: m.jnp.where(x > 0, x, y), f32(3), f32(4)),
    traced("lax add shapes", lambda m, x, y: m.lax.add(x, y), f32(3), f32(4)),
    traced("lax add dtypes", lambda m, x, y: m.lax.add(x, y), f32(3), i32(3)),
    traced("lax max dtypes", lambda m, x, y: m.lax.max(x, y), f32(3), i32(3)),
    traced("lax sin of int", lambda m, x: m.lax.sin(x), i32(3)),
    traced("bitwise_and of float", lambda m, x: m.jnp.bitwise_and(x, x), f32(3)),
    traced("left_shift of float", lambda m, x: m.jnp.left_shift(x, 1), f32(3)),
    traced("select pred shape", lambda m, x: m.lax.select(x[:2] > 0, x, x), f32(3)),
    traced("select pred dtype", lambda m, x: m.lax.select(x, x, x), f32(3)),
    traced("clamp bound shape", lambda m, x: m.lax.clamp(x[:2], x, x), f32(3)),
    traced("convert to bad dtype", lambda m, x: m.lax.convert_element_type(x, "foo"), f32(3)),
    traced("astype bad dtype", lambda m, x: x.astype("foo"), f32(3)),
    traced("integer_pow float exponent", lambda m, x: m.lax.integer_pow(x, 1.5), f32(3)),
    # dot and matmul
    traced("matmul contracting", lambda m, x, y: x @ y, f32(2, 3), f32(4, 5)),
    traced("jnp dot contracting", lambda m, x, y: m.jnp.dot(x, y), f32(2, 3), f32(4)),
    traced("matmul of a scalar", lambda m, x, y: m.jnp.matmul(x, y), f32(), f32(3)),
    traced("lax dot contracting", lambda m, x, y: m.lax.dot(x, y), f32(2, 3), f32(4, 5)),
    traced("dot_general batch sizes", lambda m, x, y: m.lax.dot_general(
        x, y, (((2,), (1,)), ((0,), (0,)))), f32(2, 3, 4), f32(3, 4, 5)),
    traced("einsum sizes", lambda m, x: m.jnp.einsum("ij,jk->ik", x, x), f32(2, 3)),
    traced("einsum operand count", lambda m, x: m.jnp.einsum("ij,jk->ik", x), f32(2, 3)),
    traced("tensordot sizes", lambda m, x: m.jnp.tensordot(x, x, axes=([0], [1])), f32(2, 3)),
    # reductions, sorting and axes
    traced("sum bad axis", lambda m, x: x.sum(axis=2), f32(2, 3)),
    traced("sum duplicate axis", lambda m, x: m.jnp.sum(x, axis=(0, 0)), f32(2, 3)),
    traced("argmax bad axis", lambda m, x: m.jnp.argmax(x, axis=3), f32(2, 3)),
    traced("argmax tuple axis", lambda m, x: m.jnp.argmax(x, axis=(0, 1)), f32(2, 3)),
    traced("mean bad axis", lambda m, x: m.jnp.mean(x, axis=-3), f32(2, 3)),
    traced("cumsum bad axis", lambda m, x: m.jnp.cumsum(x, axis=2), f32(2, 3)),
    traced("lax reduce_sum bad axes", lambda m, x: m.lax.reduce_sum(x, (2,)), f32(2, 3)),
    traced("sort bad axis", lambda m, x: m.jnp.sort(x, axis=1), f32(3)),
    traced("lax sort bad dimension", lambda m, x: m.lax.sort(x, dimension=2), f32(3)),
    # shapes: reshape, transpose, concatenate...
    traced("reshape bad size", lambda m, x: x.reshape(7), f32(2, 3)),
    traced("reshape two -1", lambda m, x: m.jnp.reshape(x, (-1, -1)), f32(2, 3)),
    traced("reshape to a traced size", lambda m, x, n: x.reshape((n, 3)), f32(2, 3), 2),
    traced("transpose bad perm", lambda m, x: m.jnp.transpose(x, (0, 0)), f32(2, 3)),
    traced("lax transpose bad perm", lambda m, x: m.lax.transpose(x, (0, 2)), f32(2, 3)),
    traced("squeeze a non-1 axis", lambda m, x: m.jnp.squeeze(x, 0), f32(2, 3)),
    traced("expand_dims bad axis", lambda m, x: m.jnp.expand_dims(x, 4), f32(2, 3)),
    traced("broadcast_to incompatible", lambda m, x: m.jnp.broadcast_to(x, (4, 5)), f32(2, 3)),
    traced("broadcast_in_dim bad dims", lambda m, x: m.lax.broadcast_in_dim(
        x, (2, 3), (1,)), f32(2)),
    traced("concatenate shapes", lambda m, x, y: m.jnp.concatenate([x, y]), f32(2, 3), f32(2, 4)),
    traced("concatenate ranks", lambda m, x, y: m.jnp.concatenate([x, y]), f32(2, 3), f32(3)),
    traced("concatenate bad axis", lambda m, x: m.jnp.concatenate([x, x], axis=2), f32(2, 3)),
    traced("lax concatenate dtypes", lambda m, x, y: m.lax.concatenate([x, y], 0), f32(3), i32(3)),
    traced("stack shapes", lambda m, x, y: m.jnp.stack([x, y]), f32(3), f32(4)),
    traced("split uneven", lambda m, x: m.jnp.split(x, 4), f32(6)),
    traced("moveaxis bad axis", lambda m, x: m.jnp.moveaxis(x, 0, 3), f32(2, 3)),
    traced("swapaxes bad axis", lambda m, x: m.jnp.swapaxes(x, 0, 5), f32(2, 3)),
    traced("lax pad config length", lambda m, x: m.lax.pad(x, 0.0, [(1, 1, 0)]), f32(2, 3)),
    traced("lax pad value dtype", lambda m, x: m.lax.pad(x, 0, [(1, 1, 0)]), f32(3)),
    traced("jnp pad width", lambda m, x: m.jnp.pad(x, ((1, 1), (1, 1), (1, 1))), f32(3)),
    traced("flip bad axis", lambda m, x: m.jnp.flip(x, 2), f32(3)),
    # indexing
    traced("too many indices", lambda m, x: x[0, 0, 0], f32(2, 3)),
    traced("float index", lambda m, x: x[1.5], f32(3)),
    traced("string index", lambda m, x: x["a"], f32(3)),
    traced("boolean mask of a tracer", lambda m, x: x[x > 0], f32(3)),
    traced("slice with traced bounds", lambda m, x, i: x[i:i + 2], f32(5), 1),
    traced("two ellipses", lambda m, x: x[..., ...], f32(2, 3)),
    traced("list of lists index", lambda m, x: x[[[0], [0, 1]]], f32(3)),
    traced("dynamic_slice index count", lambda m, x: m.lax.dynamic_slice(x, (0,), (1, 1)),
           f32(2, 3)),
    traced("dynamic_slice float index", lambda m, x: m.lax.dynamic_slice(x, (0.5,), (1,)), f32(3)),
    traced("dynamic_update_slice dtype", lambda m, x, y: m.lax.dynamic_update_slice(x, y, (0,)),
           f32(3), i32(2)),
    traced("at[].set shape", lambda m, x: x.at[0].set(m.jnp.ones(3)), f32(3)),
    traced("take bad axis", lambda m, x: m.jnp.take(x, m.jnp.array([0]), axis=2), f32(3)),
    traced("take float indices", lambda m, x: m.jnp.take(x, m.jnp.array([0.5])), f32(3)),
    traced("take_along_axis ranks", lambda m, x: m.jnp.take_along_axis(
        x, m.jnp.array([0]), axis=0), f32(2, 3)),
    # tracers where Python needs a value
    traced("bool of a tracer", lambda m, x: 1 if x[0] > 0 else 0, f32(3)),
    traced("int of a tracer", lambda m, x: int(x[0]), f32(3)),
    traced("float of a tracer", lambda m, x: float(x[0]), f32(3)),
    traced("complex of a tracer", lambda m, x: complex(x), f32()),
    traced("np.asarray of a tracer", lambda m, x: np.asarray(x), f32(3)),
    traced("range of a tracer", lambda m, n: list(range(n)), 3),
    traced("list index by a tracer", lambda m, i: [1, 2, 3][i], 1),
    traced("hash of a tracer", lambda m, x: {x: 1}, f32(3)),
    traced("item of a tracer", lambda m, x: x.item(), f32()),
    traced("len of a scalar tracer", lambda m, x: len(x), f32()),
    traced("zeros of a traced shape", lambda m, n: m.jnp.zeros(n), 3),
    traced("ones of a traced shape", lambda m, n: m.jnp.ones((n, 2)), 3),
    traced("arange of a traced stop", lambda m, n: m.jnp.arange(n), 3),
    traced("eye of a traced size", lambda m, n: m.jnp.eye(n), 3),
    traced("repeat traced repeats", lambda m, x, r: m.jnp.repeat(x, r), f32(3), 2),
    # pytrees and transformation arguments
    direct("grad of a non-scalar", lambda m: m.grad(lambda x: x * 2)(f32(3))),
    direct("grad of a tuple output", lambda m: m.grad(lambda x: (x.sum(), x.sum()))(f32(3))),
    direct("grad wrt an int", lambda m: m.grad(lambda x: x * 2)(3)),
    direct("grad wrt an int array", lambda m: m.grad(lambda x: x.sum())(i32(3))),
    direct("grad argnums out of range", lambda m: m.grad(lambda x: x.sum(), argnums=2)(f32(3))),
    direct("grad has_aux without a pair", lambda m: m.grad(lambda x: x.sum(),
                                                           has_aux=True)(f32(3))),
    direct("grad of a string", lambda m: m.grad(lambda x: 1.0)("a")),
    direct("value_and_grad of a non-scalar", lambda m: m.value_and_grad(lambda x: x)(f32(3))),
    direct("jit returns a string", lambda m: m.jit(lambda x: "a")(f32(3))),
    direct("jit of a string argument", lambda m: m.jit(lambda x: x)("a")),
    direct("jit of a non-callable", lambda m: m.jit(3)),
    direct("jit with too many arguments", lambda m: m.jit(lambda x: x)(f32(3), f32(3))),
    direct("jit with an unknown keyword", lambda m: m.jit(lambda x: x)(f32(3), y=1)),
    direct("jvp tree mismatch", lambda m: m.jvp(lambda x: x, (f32(3),), ([f32(3)],))),
    direct("jvp shape mismatch", lambda m: m.jvp(lambda x: x, (f32(3),), (f32(4),))),
    direct("jvp dtype mismatch", lambda m: m.jvp(lambda x: x, (f32(3),),
                                                 (np.ones(3, np.float16),))),
    direct("jvp primals not a tuple", lambda m: m.jvp(lambda x: x, f32(3), f32(3))),
    direct("vjp cotangent shape", lambda m: m.vjp(lambda x: x * 2, f32(3))[1](f32(4))),
    direct("vjp cotangent tree", lambda m: m.vjp(lambda x: x * 2, f32(3))[1]((f32(3), f32(3)))),
    direct("vjp cotangent dtype", lambda m: m.vjp(lambda x: x * 2, f32(3))[1](
        np.ones(3, np.float16))),
    direct("tree_map structure mismatch", lambda m: m.tree_map(lambda a, b: a, (1, 2), (1,))),
    direct("jacfwd wrt an int", lambda m: m.jacfwd(lambda x: x)(i32(3))),
    direct("jacrev wrt an int", lambda m: m.jacrev(lambda x: x)(i32(3))),
    direct("hessian argnums out of range", lambda m: m.hessian(lambda x: x.sum(),
                                                               argnums=1)(f32(3))),
    direct("eval_shape of a string", lambda m: m.eval_shape(lambda x: x, "a")),
    traced("while_loop under grad", lambda m, x: m.grad(lambda y: m.lax.while_loop(
        lambda c: c < 3.0, lambda c: c * y, 1.0))(x), np.float32(2.0)),
    # vmap in_axes / out_axes
    direct("vmap in_axes beyond the rank", lambda m: m.vmap(lambda x: x, in_axes=2)(f32(2, 3))),
    direct("vmap inconsistent sizes", lambda m: m.vmap(lambda x, y: x + y)(f32(2), f32(3))),
    direct("vmap in_axes length", lambda m: m.vmap(lambda x, y: x,
                                                   in_axes=(0, 0, 0))(f32(2), f32(2))),
    direct("vmap of a scalar", lambda m: m.vmap(lambda x: x)(1.0)),
    direct("vmap with nothing mapped", lambda m: m.vmap(lambda x: x, in_axes=None)(f32(2))),
    direct("vmap out_axes beyond the rank", lambda m: m.vmap(lambda x: x,
                                                             out_axes=2)(f32(2, 3))),
    direct("vmap out_axes None for a mapped output", lambda m: m.vmap(
        lambda x: x, out_axes=None)(f32(2, 3))),
    direct("vmap float in_axes", lambda m: m.vmap(lambda x: x, in_axes=0.5)(f32(2, 3))),
    direct("psum over an unbound axis", lambda m: m.vmap(lambda x: m.lax.psum(x, "j"),
                                                         axis_name="i")(f32(2))),
    # control flow
    traced("cond branch shapes", lambda m, x: m.lax.cond(x[0] > 0, lambda: x, lambda: x[:2]),
           f32(3)),
    traced("cond branch dtypes", lambda m, x: m.lax.cond(
        x[0] > 0, lambda: x, lambda: x.astype(m.jnp.int32)), f32(3)),
    traced("cond branch trees", lambda m, x: m.lax.cond(x[0] > 0, lambda: (x, x), lambda: x),
           f32(3)),
    traced("cond non-scalar pred", lambda m, x: m.lax.cond(x > 0, lambda: x, lambda: x), f32(3)),
    traced("cond non-callable branches", lambda m, x: m.lax.cond(x[0] > 0, x, x), f32(3)),
    traced("switch float index", lambda m, x: m.lax.switch(x[0], [lambda: x, lambda: x]), f32(3)),
    traced("switch branch shapes", lambda m, x, i: m.lax.switch(i, [lambda: x, lambda: x[0]]),
           f32(3), 1),
    traced("while_loop carry shape", lambda m, x: m.lax.while_loop(
        lambda c: c[0] < 3, lambda c: c[:2], x), f32(3)),
    traced("while_loop cond not bool", lambda m, x: m.lax.while_loop(
        lambda c: c, lambda c: c, x[0]), f32(3)),
    traced("while_loop cond not scalar", lambda m, x: m.lax.while_loop(
        lambda c: c < 3, lambda c: c, x), f32(3)),
    traced("fori_loop carry shape", lambda m, x: m.lax.fori_loop(0, 3, lambda i, c: c[:2], x),
           f32(3)),
    traced("scan carry shape", lambda m, x: m.lax.scan(lambda c, y: (c[:1], y), x, x), f32(3)),
    traced("scan body not a pair", lambda m, x: m.lax.scan(lambda c, y: c, x[0], x), f32(3)),
    traced("scan xs lengths", lambda m, x, y: m.lax.scan(lambda c, a: (c, a), 0.0, (x, y)),
           f32(3), f32(4)),
    traced("scan length disagrees", lambda m, x: m.lax.scan(lambda c, a: (c, a), 0.0, x,
                                                            length=4), f32(3)),
    traced("map of a non-callable", lambda m, x: m.lax.map(3, x), f32(3)),
    # custom rules
    direct("custom_jvp rule output tree", _custom_jvp_bad_tree),
    direct("custom_jvp without a rule", _custom_jvp_no_rule),
    direct("custom_vjp bwd too few cotangents", _custom_vjp_bwd_too_few),
    direct("custom_vjp bwd not a tuple", _custom_vjp_bwd_not_tuple),
    direct("custom_vjp fwd not a pair", _custom_vjp_fwd_not_pair),
    direct("custom_vjp without a rule", _custom_vjp_no_rule),
    # donation, deleted arrays and Compiled calls
    direct("use a donated array", _use_donated),
    direct("use a deleted array", _use_deleted),
    direct("Compiled with another shape", lambda m: _compiled(m)(f32(4))),
    direct("Compiled with another dtype", lambda m: _compiled(m)(i32(3))),
    direct("Compiled with more arguments", lambda m: _compiled(m)(f32(3), f32(3))),
    direct("Compiled with keywords", lambda m: _compiled(m)(a=f32(3))),
    # creation
    direct("ragged nested list", lambda m: m.jnp.array([[1, 2], [3]])),
    direct("asarray of a string", lambda m: m.jnp.asarray("abc")),
    direct("ones of a bad dtype", lambda m: m.jnp.ones(3, dtype="foo")),
    direct("arange zero step", lambda m: m.jnp.arange(0, 10, 0)),
    direct("arange zero float step", lambda m: m.jnp.arange(0.0, 1.0, 0.0)),
    # shapes: negative dimensions
    direct("lower negative struct", lambda m: m.jit(lambda x: x).lower(_neg(m))),
    direct("compile negative struct",
           lambda m: m.jit(lambda x: x * 2).lower(m.SDS((2, -1), np.float32)).compile()),
    direct("pure_callback negative result",
           lambda m: m.jit(lambda x: m.pure_callback(_host_zeros, _neg(m), x))(1.0)),
    direct("io_callback negative result",
           lambda m: m.jit(lambda x: m.io_callback(_host_zeros, _neg(m), x))(1.0)),
    # devices and byte order
    direct("device_put to a string", lambda m: m.device_put(f32(3), "cpu")),
    direct("device_put tree to a string", lambda m: m.device_put([f32(3)], ["cpu"])),
    direct("jit of a big-endian array", lambda m: m.jit(lambda x: x * 2)(BIG_ENDIAN)),
    direct("sin of a big-endian array", lambda m: m.jnp.sin(BIG_ENDIAN)),
    direct("asarray of a big-endian array", lambda m: m.jnp.asarray(BIG_ENDIAN)),
    # make_array_from_callback
    direct("make_array_from_callback float shape", lambda m: _from_callback(m, (4.0,))),
    direct("make_array_from_callback negative shape", lambda m: _from_callback(m, (-4,))),
    direct("make_array_from_callback no sharding",
           lambda m: _from_callback(m, (4,), sharding=lambda m: None)),
    direct("make_array_from_callback data of another shape",
           lambda m: _from_callback(m, (4,), data=lambda i: np.ones(5, np.float32))),
    # shardings on one device (more devices: test_multi_device_mistakes_like_jax)
    direct("PartitionSpec naming an axis twice",
           lambda m: m.sharding.NamedSharding(m.make_mesh((1,), ("x",)),
                                              m.sharding.PartitionSpec("x", "x"))),
    direct("make_mesh over more devices than there are", lambda m: m.make_mesh((2,), ("x",))),
]


def _caught(run: Callable, api) -> BaseException:
    with pytest.raises(Exception) as info:
        run(api)
    return info.value


def _full_text(e: BaseException) -> str:
    return "\n".join([str(e), *getattr(e, "__notes__", ())])


def test_table_is_large_enough():
    assert len(MISTAKES) >= 60
    assert len({m.name for m in MISTAKES}) == len(MISTAKES)


# jax classes raised where jax fails late, inside its compiler, rather than checking the
# input: minijax checks it first and raises the builtin type jax uses for the same
# mistake elsewhere. jax's MLIRError (an Exception) comes from its MLIR type builder for
# a negative dimension; jax raises TypeError for negative shapes it checks (jnp.zeros).
JAX_LATE_ERRORS = {"MLIRError": TypeError}


def _same_type(expected: type, got: BaseException) -> bool:
    names = {c.__name__ for c in type(got).__mro__}
    if expected.__name__ in names:
        return True
    instead = JAX_LATE_ERRORS.get(expected.__name__)
    return instead is not None and isinstance(got, instead)


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.name for m in MISTAKES])
def test_same_exception_type_as_jax(mistake):
    expected = type(_caught(mistake.run, JX))
    got = _caught(mistake.run, MJ)
    assert _same_type(expected, got), (
        f"jax raises {expected.__name__}, minijax {type(got).__name__}: {got}")
    if mistake.where is not None:
        assert mistake.where in _full_text(got), _full_text(got)


# ---- several devices: one subprocess with 8 CPU devices for jax and minijax ------------

MULTI_DEVICE = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, minijax

    def cases(lib):
        NS, P = lib.sharding.NamedSharding, lib.sharding.PartitionSpec
        m8, m42 = lib.make_mesh((8,), ("x",)), lib.make_mesh((4, 2), ("x", "y"))
        x6 = np.zeros(6, np.float32)
        return {
            "device_put indivisible": lambda: lib.device_put(x6, NS(m8, P("x"))),
            "device_put indivisible 2-d":
                lambda: lib.device_put(np.zeros((4, 3), np.float32), NS(m42, P("x", "y"))),
            "shard_shape indivisible": lambda: NS(m8, P("x")).shard_shape((6,)),
            "jit out_shardings indivisible":
                lambda: lib.jit(lambda a: a, out_shardings=NS(m8, P("x")))(x6),
            "make_array_from_callback indivisible":
                lambda: lib.make_array_from_callback((6,), NS(m8, P("x")), lambda i: x6[i]),
            "PartitionSpec naming an axis twice": lambda: NS(m42, P("x", "x")),
            "PartitionSpec naming an axis twice in a tuple": lambda: NS(m42, P(("x", "y"), "x")),
            "make_mesh over 16 of 8 devices": lambda: lib.make_mesh((16,), ("x",)),
            "make_mesh (3,) of 8 devices": lambda: lib.make_mesh((3,), ("x",)),
            "make_mesh (3, 2) of 8 devices": lambda: lib.make_mesh((3, 2), ("x", "y")),
            "make_mesh (3,) of 4 given devices":
                lambda: lib.make_mesh((3,), ("x",), devices=lib.devices()[4:]),
        }

    def outcome(fn):
        try:
            out = fn()
        except Exception as e:
            return {"raised": [c.__name__ for c in type(e).__mro__], "message": str(e)}
        mesh = getattr(out, "devices", None)
        return {"mesh": [d.id for d in mesh.flat] if mesh is not None else None,
                "shape": dict(out.shape) if mesh is not None else None}

    print(json.dumps({name: [outcome(f), outcome(cases(minijax)[name])]
                      for name, f in cases(jax).items()}))
""")


@pytest.mark.slow
def test_multi_device_mistakes_like_jax():
    """IndivisibleError (a ValueError), DuplicateSpecError (not one) and make_mesh over
    part of the devices, as jax on 8 CPU devices."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES="8", MINIJAX_PLATFORMS="cpu",
               JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=8",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", MULTI_DEVICE], env=env, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.splitlines()[-1])
    assert len(results) == 11
    for name, (want, got) in results.items():
        if "raised" in want:
            assert "raised" in got, (name, want, got)
            assert want["raised"][0] in got["raised"], (name, want, got)
            assert set(want["raised"]) <= set(got["raised"]) | {"object"}, (name, want, got)
        else:
            assert got == want, (name, want, got)
    assert results["device_put indivisible"][1]["raised"][:2] == ["IndivisibleError",
                                                                  "ValueError"]
    assert results["PartitionSpec naming an axis twice"][1]["raised"][:2] == [
        "DuplicateSpecError", "Exception"]
    assert results["make_mesh (3,) of 4 given devices"][1]["mesh"] == [4, 5, 6]
