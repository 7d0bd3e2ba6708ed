"""minijax.export against jax.export 0.10.2: the Exported's attributes, the bytes both
ways (minijax -> jax, jax -> minijax, minijax -> minijax), calling under jit / grad /
vmap, and bad input (junk, truncated and mutated bytes; wrong arguments).

Each function is written once against a numpy-like module and a lax module, so that the
minijax and jax versions are the same code."""

from __future__ import annotations

import collections
import os
import struct
import subprocess
import sys

import jax
import jax.export as jexport
import ml_dtypes
import numpy as np
import pytest

import minijax
import minijax.numpy as mnp
from minijax import export as mexport
from minijax import lax as mlax

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BAD_INPUT = (ValueError, TypeError, NotImplementedError)


# ---- the functions, for both libraries ----------------------------------------------------

def f_pytree(xnp, lax):
    def f(x, y):
        return {"a": xnp.sin(x) * y, "b": (x + 1, y.sum())}
    return f


def f_scalar(xnp, lax):
    def f(x):
        return x * 2 + 1
    return f


def f_scan_cond(xnp, lax):
    def f(xs, c):
        def body(carry, x):
            carry = carry + x
            return carry, carry * c
        total, ys = lax.scan(body, xnp.zeros(xs.shape[1:], xs.dtype), xs)
        out = lax.cond(total.sum() > 0, lambda t: t * 2, lambda t: -t, total)
        return out, ys
    return f


def f_unused(xnp, lax):
    def f(x, unused, y):
        return x @ y
    return f


def f_kwargs(xnp, lax):
    def f(x, *, scale):
        return x * scale["s"], xnp.tanh(x)
    return f


X23 = np.linspace(-2, 3, 6, dtype=np.float32).reshape(2, 3)
CASES = {
    "pytree": (f_pytree, (X23, np.full((2, 3), 0.5, np.float32)), {}),
    "scalar": (f_scalar, (np.float32(1.5),), {}),
    "scan_cond": (f_scan_cond, (np.arange(12, dtype=np.float32).reshape(4, 3) - 3,
                                np.float32(0.5)), {}),
    "unused": (f_unused, (X23, np.int32(7), np.ones((3, 2), np.float32)), {}),
    "kwargs": (f_kwargs, (X23,), {"scale": {"s": np.float32(3)}}),
}


def _both(make):
    return make(mnp, mlax), make(jax.numpy, jax.lax)


def _check_tree_close(got, want, rtol=1e-6, atol=1e-6):
    g_leaves, g_tree = jax.tree_util.tree_flatten(got)
    w_leaves, w_tree = jax.tree_util.tree_flatten(want)
    assert g_tree == w_tree, (g_tree, w_tree)
    for g, w in zip(g_leaves, w_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g.astype(np.float64) if g.dtype == ml_dtypes.bfloat16 else g,
                                   w.astype(np.float64) if w.dtype == ml_dtypes.bfloat16 else w,
                                   rtol=rtol, atol=atol)


def _avals(avals):
    return [(tuple(a.shape), np.dtype(a.dtype)) for a in avals]


def _exports(case, **kw):
    make, args, kwargs = CASES[case]
    mf, jf = _both(make)
    me = mexport.export(minijax.jit(mf), **kw)(*args, **kwargs)
    je = jexport.export(jax.jit(jf), **kw)(*args, **kwargs)
    return me, je, jf, args, kwargs


# ---- 1. the Exported's attributes, as jax's ----------------------------------------------

def _same_attributes(me, je):
    assert me.fun_name == je.fun_name
    assert _avals(me.in_avals) == _avals(je.in_avals)
    assert _avals(me.out_avals) == _avals(je.out_avals)
    assert str(me.in_tree) == str(je.in_tree)
    assert str(me.out_tree) == str(je.out_tree)
    assert me.in_tree.num_leaves == je.in_tree.num_leaves
    assert me.in_shardings_hlo == je.in_shardings_hlo
    assert me.out_shardings_hlo == je.out_shardings_hlo
    assert me.nr_devices == je.nr_devices
    assert me.platforms == je.platforms
    assert me.calling_convention_version == je.calling_convention_version
    assert tuple(me.ordered_effects) == tuple(je.ordered_effects) == ()
    assert tuple(me.unordered_effects) == tuple(je.unordered_effects) == ()
    assert [str(c) for c in me.disabled_safety_checks] == \
        [str(c) for c in je.disabled_safety_checks]
    assert me.uses_global_constants == je.uses_global_constants
    assert me.module_kept_var_idx == je.module_kept_var_idx


@pytest.mark.parametrize("case", sorted(CASES))
def test_attributes_like_jax(case):
    make, args, kwargs = CASES[case]
    mf, jf = _both(make)
    # the same names (jax takes the name from the function)
    mf.__name__ = jf.__name__ = f"fn_{case}"
    me = mexport.export(minijax.jit(mf))(*args, **kwargs)
    je = jexport.export(jax.jit(jf))(*args, **kwargs)
    _same_attributes(me, je)
    assert me.calling_convention_version == 10
    assert me.platforms == (jexport.default_export_platform(),) == ("cpu",)
    text = me.mlir_module()
    assert "func.func public @main(" in text
    assert "jax.uses_shape_polymorphism = false" in text
    assert "_platform_index" not in text
    assert me.has_vjp() and je.has_vjp()
    assert str(me) == f"Exported(fun_name=fn_{case}, ...)"


def test_attributes_from_shape_dtype_structs():
    mf, jf = _both(f_pytree)
    specs = (minijax.ShapeDtypeStruct((2, 3), np.float32),
             minijax.ShapeDtypeStruct((2, 3), np.float32))
    jspecs = tuple(jax.ShapeDtypeStruct(s.shape, s.dtype) for s in specs)
    me = mexport.export(minijax.jit(mf))(*specs)
    je = jexport.export(jax.jit(jf))(*jspecs)
    _same_attributes(me, je)
    _check_tree_close(me.call(*CASES["pytree"][1]), je.call(*CASES["pytree"][1]))


def test_unused_argument_is_not_kept():
    me, je, *_ = _exports("unused")
    assert me.module_kept_var_idx == je.module_kept_var_idx == (0, 2)
    # @main takes only the kept arguments
    sig = [ln for ln in me.mlir_module().splitlines() if "func.func public @main" in ln][0]
    assert sig.count("tensor<") == 3  # two arguments, one result


def test_multi_platform_attributes_and_module():
    me, je, jf, args, kwargs = _exports("pytree", platforms=("cpu", "cuda"))
    _same_attributes(me, je)
    assert me.platforms == ("cpu", "cuda") and me.uses_global_constants
    main = [ln for ln in me.mlir_module().splitlines() if "func.func public @main" in ln][0]
    jmain = [ln for ln in je.mlir_module().splitlines() if "func.func public @main" in ln][0]
    want = '@main(%arg0: tensor<i32> {jax.global_constant = "_platform_index"}'
    assert want in main and want in jmain
    assert "jax.uses_shape_polymorphism = true" in me.mlir_module()
    _check_tree_close(me.call(*args), jf(*args))
    blob = me.serialize()
    _check_tree_close(jexport.deserialize(blob).call(*args), jf(*args))
    _check_tree_close(mexport.deserialize(je.serialize()).call(*args), jf(*args))
    assert mexport.deserialize(blob).platforms == ("cpu", "cuda")


def test_platform_names_are_canonical():
    mf, _ = _both(f_scalar)
    me = mexport.export(minijax.jit(mf), platforms=("CPU", "gpu"))(np.float32(1))
    assert me.platforms == ("cpu", "cuda")


def test_mlir_module_not_serialized_is_an_ir_module():
    me, *_ = _exports("scalar")
    mod = me.mlir_module(serialized=False)
    assert "func.func public @main" in str(mod)


def test_export_needs_jit():
    mf, _ = _both(f_scalar)
    with pytest.raises(ValueError, match="must be the result of `jit`"):
        mexport.export(mf)


def test_is_symbolic_dim():  # (shape polymorphism: tests/export/test_shape_poly.py)
    assert mexport.is_symbolic_dim(mexport.symbolic_shape("a, b")[0])
    assert not mexport.is_symbolic_dim(3)


# ---- 2. round trips ----------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trips(case):
    me, je, jf, args, kwargs = _exports(case)
    want = jf(*args, **kwargs)
    mblob, jblob = me.serialize(), je.serialize()
    assert isinstance(mblob, bytearray)
    # minijax -> minijax
    m2 = mexport.deserialize(mblob)
    _same_attributes(m2, je)
    _check_tree_close(m2.call(*args, **kwargs), want)
    # minijax -> jax
    j2 = jexport.deserialize(mblob)
    _same_attributes(m2, j2)
    _check_tree_close(j2.call(*args, **kwargs), want)
    # jax -> minijax
    m3 = mexport.deserialize(jblob)
    _same_attributes(m3, je)
    _check_tree_close(m3.call(*args, **kwargs), want)
    # the module survives both ways
    assert "func.func public @main" in m3.mlir_module()
    assert m2.mlir_module_serialized == me.mlir_module_serialized
    # serializing what was deserialized gives the same bytes
    assert mexport.deserialize(mblob).serialize() == mblob


DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.int8, np.uint8,
          np.uint32, np.bool_, np.complex64]


def f_dtype(xnp, lax):
    def f(x):
        return x + x, x.reshape(-1)[::-1], xnp.zeros((), x.dtype)
    return f


def _dtype_value(dt, shape=(2, 3)):
    a = np.linspace(-3, 3, int(np.prod(shape))).reshape(shape)
    if np.dtype(dt) == np.bool_:
        return a > 0
    if np.issubdtype(np.dtype(dt), np.complexfloating):
        return (a + 1j * a[::-1]).astype(dt)
    if np.issubdtype(np.dtype(dt), np.unsignedinteger):
        return np.abs(a).astype(dt)
    return a.astype(dt)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip_dtypes(dt):
    x = _dtype_value(dt)
    mf, jf = _both(f_dtype)
    me = mexport.export(minijax.jit(mf))(x)
    je = jexport.export(jax.jit(jf))(x)
    assert _avals(me.in_avals) == _avals(je.in_avals) == [((2, 3), np.dtype(dt))]
    assert _avals(me.out_avals) == _avals(je.out_avals)
    want = jf(x)
    _check_tree_close(mexport.deserialize(me.serialize()).call(x), want)
    _check_tree_close(jexport.deserialize(me.serialize()).call(x), want)
    _check_tree_close(mexport.deserialize(je.serialize()).call(x), want)


@pytest.mark.parametrize("dt", [np.float64, np.int64, np.uint64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_round_trip_x64_dtypes(x64, dt):
    x = _dtype_value(dt)
    mf, jf = _both(f_dtype)
    me = mexport.export(minijax.jit(mf))(x)
    je = jexport.export(jax.jit(jf))(x)
    assert _avals(me.in_avals) == _avals(je.in_avals) == [((2, 3), np.dtype(dt))]
    want = jf(x)
    _check_tree_close(mexport.deserialize(me.serialize()).call(x), want)
    _check_tree_close(jexport.deserialize(me.serialize()).call(x), want)
    _check_tree_close(mexport.deserialize(je.serialize()).call(x), want)


def test_round_trip_no_arguments_and_none_leaves():
    def make(xnp, lax):
        def f(a, b):
            return [xnp.arange(3.0), None, {"k": (a, b["z"])}]
        return f
    mf, jf = _both(make)
    args = (None, {"z": np.int32(4)})
    me = mexport.export(minijax.jit(mf))(*args)
    je = jexport.export(jax.jit(jf))(*args)
    assert str(me.in_tree) == str(je.in_tree) and str(me.out_tree) == str(je.out_tree)
    want = jf(*args)
    _check_tree_close(mexport.deserialize(me.serialize()).call(*args), want)
    _check_tree_close(jexport.deserialize(me.serialize()).call(*args), want)
    _check_tree_close(mexport.deserialize(je.serialize()).call(*args), want)


# custom pytree nodes, registered (with the same serialized names) in both libraries

class Point:
    def __init__(self, x, y, tag):
        self.x, self.y, self.tag = x, y, tag


def _point_flatten(p):
    return (p.x, p.y), p.tag


def _point_unflatten(tag, children):
    return Point(*children, tag)


# minijax's public registry is jaxlib's default one, which jax registers in too (with two
# more of its own, which its jit uses); minijax's registration after jax's adds the type
# to minijax's transform registry only (the public one already has it)
jax.tree_util.register_pytree_node(Point, _point_flatten, _point_unflatten)
minijax.tree_util.register_pytree_node(Point, _point_flatten, _point_unflatten)
# jax looks for its own Python-side registration unless from_children is given
for _m in (mexport, jexport):
    _m.register_pytree_node_serialization(
        Point, serialized_name="tests.export.Point",
        serialize_auxdata=lambda tag: tag.encode("utf-8"),
        deserialize_auxdata=lambda b: b.decode("utf-8"), from_children=_point_unflatten)

Pair = collections.namedtuple("Pair", "first second")
for _m in (mexport, jexport):
    _m.register_namedtuple_serialization(Pair, serialized_name="tests.export.Pair")

Unregistered = collections.namedtuple("Unregistered", "a")


def f_custom(xnp, lax):
    def f(p, pair):
        return Pair(p.x + p.y, Point(pair.first * 2, pair.second, p.tag + "!"))
    return f


def _custom_args():
    return (Point(np.float32(1), np.arange(3, dtype=np.float32), "t"),
            Pair(np.ones(2, np.float32), np.int32(5)))


def _check_custom(out, want):
    assert isinstance(out, Pair) and isinstance(out.second, Point)
    assert out.second.tag == want.second.tag == "t!"
    _check_tree_close(out, want)


def test_round_trip_custom_pytree_nodes():
    mf, jf = _both(f_custom)
    args = _custom_args()
    me = mexport.export(minijax.jit(mf))(*args)
    je = jexport.export(jax.jit(jf))(*args)
    assert str(me.out_tree) == str(je.out_tree)
    want = jf(*args)
    _check_custom(mexport.deserialize(me.serialize()).call(*args), want)
    _check_custom(jexport.deserialize(me.serialize()).call(*args), want)
    _check_custom(mexport.deserialize(je.serialize()).call(*args), want)


def test_unregistered_node_cannot_be_serialized():
    def make(xnp, lax):
        return lambda u: u.a * 2
    mf, _ = _both(make)
    me = mexport.export(minijax.jit(mf))(Unregistered(np.float32(1)))
    with pytest.raises(ValueError, match="register_namedtuple_serialization"):
        me.serialize()


def test_ordered_dict_round_trip():
    def make(xnp, lax):
        return lambda d: collections.OrderedDict([("z", d["z"] + 1), ("a", d["a"])])
    mf, jf = _both(make)
    arg = collections.OrderedDict([("z", np.float32(1)), ("a", np.float32(2))])
    me = mexport.export(minijax.jit(mf))(arg)
    je = jexport.export(jax.jit(jf))(arg)
    for blob in (me.serialize(), je.serialize()):
        out = mexport.deserialize(blob).call(arg)
        assert list(out) == ["z", "a"] and float(out["z"]) == 2.0
    assert list(jexport.deserialize(me.serialize()).call(arg)) == ["z", "a"]


def _key_fun(mod):
    def f(k, x):
        return {"n": mod.random.normal(k, (3,)) * x, "keys": mod.random.split(k)}
    return f


def _key_data(out, mod):
    return np.asarray(mod.random.key_data(out["keys"]))


def test_round_trip_typed_prng_keys():
    """jax writes a key array as a leaf of dtype key<fry> (the key shape); minijax's tree
    has a key node over the uint32 data: the bytes are jax's both ways."""
    jf, mf = _key_fun(jax), _key_fun(minijax)
    x = np.float32(2)
    me = mexport.export(minijax.jit(mf))(minijax.random.key(0), x)
    je = jexport.export(jax.jit(jf))(jax.random.key(0), x)
    want = jf(jax.random.key(0), x)
    for out, lib in [(mexport.deserialize(me.serialize()).call(minijax.random.key(0), x),
                      minijax),
                     (mexport.deserialize(je.serialize()).call(minijax.random.key(0), x),
                      minijax),
                     (jexport.deserialize(me.serialize()).call(jax.random.key(0), x), jax)]:
        np.testing.assert_allclose(out["n"], want["n"], rtol=1e-6)
        np.testing.assert_array_equal(_key_data(out, lib), _key_data(want, jax))
    j2 = jexport.deserialize(me.serialize())
    assert [str(a) for a in j2.in_avals] == [str(a) for a in je.in_avals] == \
        ["key<fry>[]", "float32[]"]
    assert [str(a) for a in j2.out_avals] == ["key<fry>[2]", "float32[3]"]  # keys < n
    m2 = mexport.deserialize(je.serialize())
    assert str(m2.in_tree) == str(me.in_tree) and str(m2.out_tree) == str(me.out_tree)
    assert _avals(m2.in_avals) == [((2,), np.dtype(np.uint32)), ((), np.dtype(np.float32))]
    # the raw uint32 key is another argument type
    with pytest.raises(ValueError, match="same pytree structure"):
        m2.call(np.asarray(minijax.random.key_data(minijax.random.key(0))), x)


def test_grad_through_jax_vjp_with_key_argument():
    jf, mf = _key_fun(jax), _key_fun(minijax)
    blob = jexport.export(jax.jit(jf))(jax.random.key(0), np.float32(2)).serialize(vjp_order=1)
    exp = mexport.deserialize(blob)
    got = minijax.grad(lambda x: exp.call(minijax.random.key(1), x)["n"].sum())(np.float32(2))
    want = jax.grad(lambda x: jf(jax.random.key(1), x)["n"].sum())(np.float32(2))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    me = mexport.export(minijax.jit(mf))(minijax.random.key(0), np.float32(2))
    with pytest.raises(NotImplementedError, match="typed PRNG keys"):
        me.serialize(vjp_order=1)


# ---- 3. calling under jit, grad and vmap ------------------------------------------------

def f_smooth(xnp, lax):
    def f(x, w):
        return {"y": xnp.tanh(x @ w).sum(axis=0), "z": (xnp.sin(x) * 3).mean()}
    return f


XS = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
WS = np.linspace(0.5, -0.5, 6, dtype=np.float32).reshape(3, 2)


def _loss(call):
    def loss(x, w):
        out = call(x, w)
        return (out["y"] ** 2).sum() + out["z"]
    return loss


def test_call_under_jit():
    mf, jf = _both(f_smooth)
    blob = mexport.export(minijax.jit(mf))(XS, WS).serialize()
    exp = mexport.deserialize(blob)
    got = minijax.jit(lambda x, w: exp.call(x * 2, w)["y"] + 1)(XS, WS)
    # another program than jax's (the call is inlined into the outer jit): f32 rounding
    np.testing.assert_allclose(got, jf(XS * 2, WS)["y"] + 1, rtol=1e-6, atol=1e-6)
    # called twice in one jitted function, and nested in an outer jit
    twice = minijax.jit(lambda x, w: exp.call(exp.call(x, w)["y"][None].repeat(4, 0)[:, :2]
                                              .repeat(2, 1)[:, :3], w)["z"])
    inner = jf(XS, WS)["y"][None].repeat(4, 0)[:, :2].repeat(2, 1)[:, :3]
    np.testing.assert_allclose(twice(XS, WS), jf(inner, WS)["z"], rtol=1e-6)


@pytest.mark.parametrize("source", ["minijax", "jax"])
def test_call_under_grad_with_serialized_vjp(source):
    mf, jf = _both(f_smooth)
    if source == "minijax":
        blob = mexport.export(minijax.jit(mf))(XS, WS).serialize(vjp_order=1)
    else:
        blob = jexport.export(jax.jit(jf))(XS, WS).serialize(vjp_order=1)
    exp = mexport.deserialize(blob)
    assert exp.has_vjp() and not exp.vjp().has_vjp()
    got = minijax.grad(_loss(exp.call), argnums=(0, 1))(XS, WS)
    want = jax.grad(_loss(jf), argnums=(0, 1))(XS, WS)
    _check_tree_close(got, want, rtol=1e-5, atol=1e-6)
    # under jit too
    got = minijax.jit(minijax.grad(_loss(exp.call)))(XS, WS)
    np.testing.assert_allclose(got, want[0], rtol=1e-5, atol=1e-6)


def test_minijax_vjp_bytes_give_grad_in_jax():
    mf, jf = _both(f_smooth)
    blob = mexport.export(minijax.jit(mf))(XS, WS).serialize(vjp_order=1)
    jexp = jexport.deserialize(blob)
    got = jax.grad(_loss(jexp.call), argnums=(0, 1))(XS, WS)
    want = jax.grad(_loss(jf), argnums=(0, 1))(XS, WS)
    _check_tree_close(got, want, rtol=1e-5, atol=1e-6)


def test_grad_in_memory_and_second_order():
    mf, jf = _both(f_scalar)
    me = mexport.export(minijax.jit(lambda x: mnp.sin(x) * x))(np.float32(0.7))
    jfun = lambda x: jax.numpy.sin(x) * x  # noqa: E731
    np.testing.assert_allclose(minijax.grad(me.call)(np.float32(0.7)),
                               jax.grad(jfun)(np.float32(0.7)), rtol=1e-6)
    exp2 = mexport.deserialize(me.serialize(vjp_order=2))
    got = minijax.grad(minijax.grad(exp2.call))(np.float32(0.7))
    np.testing.assert_allclose(got, jax.grad(jax.grad(jfun))(np.float32(0.7)), rtol=1e-5)


def test_grad_without_serialized_vjp_fails_like_jax():
    mf, jf = _both(f_scalar)
    exp = mexport.deserialize(mexport.export(minijax.jit(mf))(np.float32(1)).serialize())
    assert not exp.has_vjp()
    with pytest.raises(ValueError, match="No VJP is available"):
        minijax.grad(exp.call)(np.float32(1))
    jexp = jexport.deserialize(jexport.export(jax.jit(jf))(np.float32(1)).serialize())
    with pytest.raises(ValueError, match="No VJP is available"):
        jax.grad(jexp.call)(np.float32(1))
    with pytest.raises(ValueError, match="vjps of high-enough order"):
        exp.serialize(vjp_order=1)


def test_grad_integer_argument_float0():
    def make(xnp, lax):
        return lambda x, n: x * n.astype(x.dtype)
    mf, jf = _both(make)
    args = (np.float32(2.0), np.int32(3))
    for blob in (mexport.export(minijax.jit(mf))(*args).serialize(vjp_order=1),
                 jexport.export(jax.jit(jf))(*args).serialize(vjp_order=1)):
        exp = mexport.deserialize(blob)
        np.testing.assert_allclose(minijax.grad(exp.call)(*args), 3.0)


def test_call_under_vmap():
    mf, jf = _both(f_smooth)
    exp = mexport.deserialize(mexport.export(minijax.jit(mf))(XS, WS).serialize())
    xb = np.stack([XS, XS * 2, -XS])
    got = minijax.vmap(exp.call, in_axes=(0, None))(xb, WS)
    want = jax.vmap(jf, in_axes=(0, None))(xb, WS)
    _check_tree_close(got, want, rtol=1e-5, atol=1e-6)
    wb = np.stack([WS, WS.T.reshape(3, 2)], axis=2)  # batched on the last axis
    got = minijax.jit(minijax.vmap(exp.call, in_axes=(None, 2)))(XS, wb)
    want = jax.vmap(jf, in_axes=(None, 2))(XS, wb)
    _check_tree_close(got, want, rtol=1e-5, atol=1e-6)


def test_call_from_jax_bytes_under_vmap_of_grad():
    mf, jf = _both(f_smooth)
    exp = mexport.deserialize(jexport.export(jax.jit(jf))(XS, WS).serialize(vjp_order=1))
    wb = np.stack([WS, -WS, 2 * WS])
    got = minijax.vmap(minijax.grad(_loss(exp.call), argnums=1), in_axes=(None, 0))(XS, wb)
    want = jax.vmap(jax.grad(_loss(jf), argnums=1), in_axes=(None, 0))(XS, wb)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---- 4. bad input ------------------------------------------------------------------------

def _valid_blob():
    mf, _ = _both(f_pytree)
    return bytes(mexport.export(minijax.jit(mf))(*CASES["pytree"][1]).serialize(vjp_order=1))


@pytest.mark.parametrize("junk", [b"", b"abc", b"\0" * 64, bytes(range(256)),
                                  b"\xff" * 100, b"ML\xefR" + b"\0" * 60,
                                  b"\x08\0\0\0" + b"\xff" * 60])
def test_junk_bytes(junk):
    for blob in (junk, bytearray(junk), memoryview(junk)):
        with pytest.raises(ValueError):
            mexport.deserialize(blob)


def test_not_bytes():
    with pytest.raises(TypeError, match="expects bytes"):
        mexport.deserialize("not bytes")
    with pytest.raises(TypeError):
        mexport.deserialize(None)


def test_truncated_bytes():
    blob = _valid_blob()
    for n in [*range(0, 64), *range(64, len(blob) - 1, 37), len(blob) - 1]:
        with pytest.raises(ValueError):
            mexport.deserialize(blob[:n])


def test_symbol_name_not_utf8_is_a_value_error():
    """A damaged artifact whose function name is not valid UTF-8 (jaxlib's bindings
    raise RuntimeError reading it back) is refused with ValueError when called."""
    x = np.ones(3, np.float32)
    blob = bytearray(mexport.export(minijax.jit(mnp.sin))(x).serialize())
    # the name among the bytecode's NUL-terminated strings (paths may hold "main" too)
    at = blob.index(b"\0main\0", blob.index(b"ML\xefR"))
    blob[at + 1] = 0xFF
    exp = mexport.deserialize(bytes(blob))
    with pytest.raises(ValueError, match="not valid UTF-8"):
        exp.call(x)


def test_random_bytes_never_pass():
    rng = np.random.default_rng(0)
    for n in (8, 16, 100, 1000):
        for _ in range(20):
            with pytest.raises(BAD_INPUT):
                mexport.deserialize(rng.integers(0, 256, n, dtype=np.uint8).tobytes())


def test_crafted_shared_pytree_is_refused_quickly():
    """Offsets may share a table: a chain of 40 tuple nodes whose two children both
    point at the next node is 2**40 leaves if read naively; the reader refuses it."""
    from minijax.export import _serialization as ser
    from minijax.export._flatbuf import Reader
    buf = bytearray(b"\0" * 4)

    def put(b):
        while len(buf) % 4:
            buf.append(0)
        pos = len(buf)
        buf.extend(b)
        return pos
    # a vtable for a node with kind (slot 0, i8 at +8) and children (slot 1, at +4)
    vt = put(struct.pack("<HHHH", 8, 12, 8, 4))
    tables = []
    for _ in range(40):
        t = put(struct.pack("<iIB3x", 0, 0, 2))  # soffset, children, kind=tuple
        struct.pack_into("<i", buf, t, t - vt)
        v = put(struct.pack("<I", 2) + b"\0" * 8)
        struct.pack_into("<I", buf, t + 4, v - (t + 4))
        tables.append((t, v))
    leaf_vt = put(struct.pack("<HH", 4, 4))
    leaf = put(struct.pack("<i", 0))
    struct.pack_into("<i", buf, leaf, leaf - leaf_vt)
    for i, (_t, v) in enumerate(tables):
        target = tables[i + 1][0] if i + 1 < len(tables) else leaf
        for j in range(2):
            struct.pack_into("<I", buf, v + 4 + 4 * j, target - (v + 4 + 4 * j))
    with pytest.raises(ser.FlatbufferError, match="more nodes"):
        ser._read_tree(Reader(bytes(buf), tables[0][0]), 0, [len(buf) // 8], set(), [0])
    # a short chain is read: 2**3 leaves
    tree = ser._read_tree(Reader(bytes(buf), tables[-3][0]), 0, [len(buf) // 8], set(), [0])
    assert tree.num_leaves == 8


def _aval_field(slot, value):
    def edit(f):
        for a in f[19].items:
            a.fields[slot] = value
    return edit


def _set(slot, value):
    def edit(f):
        f[slot] = value
    return edit


def _dims(*dims):
    from minijax.export._flatbuf import Vector
    return _aval_field(1, Vector(list(dims)))


CRAFTED = {
    "version 0": (_set(0, ("u16", 0)), ValueError, "unknown serialization version"),
    "version 99": (_set(0, ("u16", 99)), ValueError, "unknown serialization version"),
    "calling convention 8": (_set(14, ("u16", 8)), ValueError,
                             "calling convention version 8 is not supported"),
    "calling convention 11": (_set(14, ("u16", 11)), ValueError,
                              "calling convention version 11 is not supported"),
    "no module": (lambda f: f.pop(13), ValueError, "no module"),
    "no name": (lambda f: f.pop(1), ValueError, "no function name"),
    "no in_tree": (lambda f: f.pop(2), ValueError, "a pytree is missing"),
    "nr_devices 0": (_set(18, ("u32", 0)), ValueError, "nr_devices is 0"),
    "kept out of range": (_set(15, None), ValueError, "module_kept_var_idx"),
    "kept unsorted": (_set(15, None), ValueError, "module_kept_var_idx"),
    "aval index": (_set(22, None), ValueError, "aval index is out of range"),
    "dtype code": (_aval_field(2, ("i8", 99)), ValueError, "unknown dtype code 99"),
    "rbg key": (_aval_field(2, ("i8", 28)), NotImplementedError, "rbg PRNG key"),
    "token": (_aval_field(0, ("i8", 1)), NotImplementedError, "abstract token"),
    "aval kind": (_aval_field(0, ("i8", 5)), ValueError, "unknown abstract value kind"),
    "host memory": (_aval_field(3, ("i8", 2)), NotImplementedError, "host"),
    "memory space": (_aval_field(3, ("i8", 9)), ValueError, "unknown memory space"),
    "bad symbolic dim": (_dims("a +", "3"), ValueError, "bad dimension 'a \\+'"),
    "empty dim": (_dims("", "3"), ValueError, "bad dimension"),
    "negative dim": (_dims("-2", "3"), ValueError, "bad dimension"),
    "scalar avals": (_dims(), ValueError, r"Rank mismatch for args\[0\]"),
    "check kind": (_set(12, None), ValueError, "unknown kind"),
}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_crafted_fields(name):
    """Bytes written by minijax's own writer with one field made wrong: each is refused
    with a clear error before anything runs."""
    from minijax.export import _serialization as ser
    from minijax.export._flatbuf import Scalars, Table, Vector, build
    mf, _ = _both(f_pytree)
    exp = mexport.export(minijax.jit(mf))(*CASES["pytree"][1])
    table = ser._exported_table(exp, 0)
    edit, err, msg = CRAFTED[name]
    edit(table.fields)
    extra = {"kept out of range": Scalars("H", [0, 5]), "kept unsorted": Scalars("H", [1, 0]),
             "aval index": Scalars("I", [0, 7]),
             "check kind": Vector([Table({0: ("i8", 9)})])}
    if name in extra:
        table.fields[{"aval index": 22, "check kind": 12}.get(name, 15)] = extra[name]
    blob = build(table)
    with pytest.raises(err, match=msg) as e:
        mexport.deserialize(blob).call(*CASES["pytree"][1])
    assert "Traceback" not in str(e.value)


FUZZ = r"""
import collections, random, sys
import numpy as np
import minijax, minijax.numpy as jnp
from minijax import export
import jax, jax.export as jexport

def f(x, y):
    return {"a": jnp.sin(x) * y, "b": (x + 1, y.sum())}
x = np.arange(6, dtype=np.float32).reshape(2, 3)
y = np.ones((2, 3), np.float32)
blobs = [bytes(export.export(minijax.jit(f))(x, y).serialize(vjp_order=1)),
         bytes(jexport.export(jax.jit(lambda x, y: {"a": jax.numpy.sin(x) * y,
               "b": (x + 1, y.sum())}))(x, y).serialize(vjp_order=1))]
rng = random.Random(1234)
seen = collections.Counter()
for i in range(N):
    blob = blobs[i % 2]
    b = bytearray(blob)
    start = blob.find(b"ML\xefR")
    for _ in range(rng.randint(1, 4)):
        # half the flips in the flatbuffer fields before the module, half anywhere
        j = rng.randrange(start) if rng.random() < 0.5 else rng.randrange(len(b))
        b[j] = rng.randrange(256)
    if rng.random() < 0.1:
        del b[rng.randrange(len(b)):]
    try:
        exp = export.deserialize(b)
        exp.mlir_module()  # reads the (maybe damaged) StableHLO artifact
        if i % 4 == 0:  # compiling is what takes time
            exp.call(x, y)
        seen["ran"] += 1
    except (ValueError, TypeError, NotImplementedError) as e:
        seen[type(e).__name__] += 1
print(dict(seen))
"""


@pytest.mark.slow
def test_fuzz_mutated_bytes_in_subprocess():
    code = "N = 200\n" + FUZZ
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                       text=True, errors="replace", timeout=240,
                       env={**os.environ, "PYTHONPATH": REPO})
    assert r.returncode >= 0, f"killed by signal {-r.returncode}:\n{r.stderr[-3000:]}"
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    seen = eval(r.stdout.strip().splitlines()[-1])  # a dict of counts
    assert sum(seen.values()) == 200
    assert seen.get("ValueError", 0) > 50


def test_wrong_arguments_like_jax():
    mf, jf = _both(f_pytree)
    args = CASES["pytree"][1]
    me = mexport.deserialize(mexport.export(minijax.jit(mf))(*args).serialize())
    je = jexport.deserialize(jexport.export(jax.jit(jf))(*args).serialize())
    x, y = args
    bad = [((x[0], y), "Rank mismatch for args[0]: expected (2, 3) and called with (3,)"),
           ((x.astype(np.int32), y),
            "Dtype mismatch for args[0]: expected float32 and called with int32"),
           ((x, y.reshape(3, 2)),
            "Shape mismatch for args[1].shape[0] (expected same constant): expected (2, 3) "
            "and called with (3, 2)")]
    for call_args, msg in bad:
        for exp in (me, je):
            with pytest.raises(ValueError) as e:
                exp.call(*call_args)
            assert str(e.value) == msg
        with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")
                           .replace("[", r"\[").replace("]", r"\]")):
            minijax.jit(me.call)(*call_args)
    for call_args, call_kwargs in [((x,), {}), ((x, y, y), {}), (((x, y),), {}),
                                   ((x,), {"y": y}), (([x], y), {})]:
        for exp in (me, je):
            with pytest.raises(ValueError, match="same pytree structure"):
                exp.call(*call_args, **call_kwargs)


def test_wrong_kwargs_path_in_error():
    me, je, *_ = _exports("kwargs")
    for exp in (me, je):
        with pytest.raises(ValueError, match=r"Dtype mismatch for kwargs\['scale'\]\['s'\]"):
            exp.call(X23, scale={"s": np.int32(3)})


def test_wrong_platform_like_jax():
    mf, jf = _both(f_scalar)
    me = mexport.export(minijax.jit(mf), platforms=("cuda",))(np.float32(1))
    je = jexport.export(jax.jit(jf), platforms=("cuda",))(np.float32(1))
    msg = "Function 'f' was exported for platforms '('cuda',)' but it is used on '('cpu',)'."
    for exp in (me, je, mexport.deserialize(je.serialize())):
        with pytest.raises(ValueError) as e:
            exp.call(np.float32(1))
        assert str(e.value) == msg
    checks = [mexport.DisabledSafetyCheck.platform()]
    me = mexport.export(minijax.jit(mf), platforms=("cuda",), disabled_checks=checks)(
        np.float32(1))
    assert float(me.call(np.float32(1))) == 3.0
    m2 = mexport.deserialize(me.serialize())
    assert m2.disabled_safety_checks == (mexport.DisabledSafetyCheck.platform(),)
    assert float(m2.call(np.float32(1))) == 3.0
    j2 = jexport.deserialize(me.serialize())
    assert [str(c) for c in j2.disabled_safety_checks] == ["platform"]


def test_call_needs_an_exported():
    with pytest.raises(ValueError, match="must be an export.Exported"):
        mexport.call(lambda x: x)


def test_no_pickle_and_no_flatbuffers_in_export():
    """The bytes never become code, and minijax reads and writes them itself (jax needs
    the flatbuffers package, minijax does not)."""
    here = os.path.join(REPO, "minijax", "export")
    for name in os.listdir(here):
        if name.endswith(".py"):
            src = open(os.path.join(here, name)).read()
            assert "pickle" not in src and "marshal" not in src, name
            assert "import flatbuffers" not in src and "from flatbuffers" not in src, name
