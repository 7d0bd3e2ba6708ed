"""``minijax.ffi``: C++ XLA FFI handlers, compiled at test time against the headers jaxlib
ships, called eagerly, under jit and under vmap, checked against NumPy; the emitted
custom calls are checked against jax's for the same ``ffi_call``.

The kernels are built once per test session (a few seconds of g++); without a C++
compiler the tests that need them are skipped.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import re
import shutil
import subprocess

import jax
import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp
from minijax import ffi

# The kernels (C++ against XLA's FFI headers): an rms norm, an add, an affine map with
# typed attributes, an in-place increment and a user type.
KERNELS = (pathlib.Path(__file__).resolve().parent / "ffi_kernels.cc").read_text()

# target name -> the handler's symbol in the library
TARGETS = {"mj_rms_norm": "RmsNorm", "mj_add": "Add", "mj_affine": "Affine",
           "mj_increment": "Increment"}
EPS = np.float32(1e-5)
AFFINE = dict(offset=3, factor=2.0, mode="neg", weights=np.array([1.0, 2.0], np.float32))


@pytest.fixture(scope="session")
def targets(tmp_path_factory):
    """Build the kernels once, register them (minijax and jax share XLA's registry; jax
    registers the same capsules too, as a jax program would)."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler (g++) to build the FFI kernels")
    work = tmp_path_factory.mktemp("ffi_kernels")
    src, lib_path = work / "kernels.cc", work / "libkernels.so"
    src.write_text(KERNELS)
    cmd = [compiler, "-shared", "-fPIC", "-O1", "-std=c++17", "-w",
           f"-I{ffi.include_dir()}", str(src), "-o", str(lib_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lib = ctypes.cdll.LoadLibrary(str(lib_path))
    for name, symbol in TARGETS.items():
        ffi.register_ffi_target(name, ffi.pycapsule(getattr(lib, symbol)), platform="cpu")
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(lib, symbol)),
                                    platform="cpu")
    return lib


def _rms_norm(x, eps=EPS):
    x = np.asarray(x, np.float32)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def _custom_calls(text: str) -> list[str]:
    """The custom_call lines of a module's text, without SSA names."""
    return [re.sub(r"%[\w#:]+", "%", line.strip()) for line in text.splitlines()
            if "stablehlo.custom_call" in line]


def _same_custom_calls(mj_fn, jax_fn, *args):
    """The same custom calls (each spelled the same; an unrolled loop may repeat one)."""
    mine = _custom_calls(minijax.jit(mj_fn).lower(*args).as_text())
    theirs = _custom_calls(jax.jit(jax_fn).lower(*args).as_text())
    assert mine and set(mine) == set(theirs)


X = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0


# ---- the module --------------------------------------------------------------------------

def test_names_and_include_dir_like_jax():
    assert sorted(n for n in dir(jax.ffi) if not n.startswith("_")) == \
        sorted(n for n in ffi.__all__)
    assert minijax.ffi is ffi
    assert ffi.include_dir() == jax.ffi.include_dir()
    assert os.path.isfile(os.path.join(ffi.include_dir(), "xla", "ffi", "api", "ffi.h"))
    with pytest.raises(ValueError, match="register_ffi_type_id is not supported"):
        ffi.register_ffi_type_id("t", object())


def test_jax_mode_resolves_jax_ffi():
    from minijax.compat import JaxFinder
    finder = JaxFinder()
    assert finder._resolve("jax.ffi")[0] is ffi


def test_pycapsule_wraps_a_function_pointer(targets):
    cap = ffi.pycapsule(targets.RmsNorm)
    assert type(cap).__name__ == "PyCapsule"
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, (ctypes.py_object, ctypes.c_char_p)
    assert get(cap, None) == ctypes.cast(targets.RmsNorm, ctypes.c_void_p).value


# ---- calls -------------------------------------------------------------------------------

def test_eager_and_jit_with_an_attribute(targets):
    f = ffi.ffi_call("mj_rms_norm", minijax.ShapeDtypeStruct(X.shape, X.dtype))
    out = f(X, eps=EPS)
    assert isinstance(out, minijax.Array) and out.dtype == np.float32
    np.testing.assert_allclose(out, _rms_norm(X), rtol=1e-6)
    np.testing.assert_allclose(minijax.jit(lambda x: f(x, eps=EPS))(X), _rms_norm(X),
                               rtol=1e-6)
    np.testing.assert_allclose(f(X, eps=np.float32(10.0)), _rms_norm(X, 10.0), rtol=1e-6)
    # traced arguments of other computations, and as jax computes it
    g = minijax.jit(lambda x: f(x * 2, eps=EPS).sum(axis=-1))
    jf = jax.ffi.ffi_call("mj_rms_norm", jax.ShapeDtypeStruct(X.shape, X.dtype))
    np.testing.assert_allclose(g(X), jax.jit(lambda x: jf(x * 2, eps=EPS).sum(axis=-1))(X),
                               rtol=1e-6)


def test_custom_call_text_like_jax(targets):
    f = ffi.ffi_call("mj_rms_norm", minijax.ShapeDtypeStruct(X.shape, X.dtype))
    jf = jax.ffi.ffi_call("mj_rms_norm", jax.ShapeDtypeStruct(X.shape, X.dtype))
    _same_custom_calls(lambda x: f(x, eps=EPS), lambda x: jf(x, eps=EPS), X)
    text = minijax.jit(lambda x: f(x, eps=EPS)).lower(X).as_text()
    assert "mhlo.backend_config = {eps = 9.99999974E-6 : f32}" in text


def test_attributes_of_every_kind_like_jax(targets):
    shapes = (minijax.ShapeDtypeStruct(X.shape, X.dtype), minijax.ShapeDtypeStruct((), np.int32))
    jshapes = (jax.ShapeDtypeStruct(X.shape, X.dtype), jax.ShapeDtypeStruct((), np.int32))
    attrs = dict(i8=np.int8(-3), u32=np.uint32(7), f16=np.float16(0.5), f64=np.float64(0.25),
                 flag=True, npflag=np.bool_(False), big=2**40, s="a \"quoted\" name",
                 d={"a": 1, "b c": 2.5}, tup=(1, 2.0, "x"), dt=np.dtype(np.float32),
                 zero_d=np.array(4, np.int32), mask=np.array([True, False]),
                 mat=np.arange(6, dtype=np.int64).reshape(2, 3))
    f = ffi.ffi_call("mj_affine", shapes)
    jf = jax.ffi.ffi_call("mj_affine", jshapes)
    _same_custom_calls(lambda x: f(x, **attrs), lambda x: jf(x, **attrs), X)


def test_attributes_reach_the_handler_and_multiple_results(targets):
    shapes = [minijax.ShapeDtypeStruct(X.shape, X.dtype), minijax.ShapeDtypeStruct((), np.int32)]
    out = ffi.ffi_call("mj_affine", shapes)(X, **AFFINE)
    assert isinstance(out, list) and len(out) == 2
    w = np.resize(AFFINE["weights"], X.size).reshape(X.shape)
    np.testing.assert_allclose(out[0], -(X * w * 2.0 + 3), rtol=1e-6)
    assert out[1].dtype == np.int32 and int(out[1]) == X.size
    out = minijax.jit(lambda x: ffi.ffi_call("mj_affine", tuple(shapes))(
        x, offset=0, factor=1.0, mode="pos", weights=np.ones(1, np.float32)))(X)
    assert isinstance(out, tuple)
    np.testing.assert_allclose(out[0], X)


def test_input_output_aliases(targets):
    spec = minijax.ShapeDtypeStruct(X.shape, X.dtype)
    f = ffi.ffi_call("mj_increment", spec, input_output_aliases={0: 0})
    np.testing.assert_array_equal(f(X), X + 1)
    np.testing.assert_array_equal(minijax.jit(lambda x: f(x * 2))(X), X * 2 + 1)
    np.testing.assert_array_equal(X, np.arange(12, dtype=np.float32).reshape(3, 4) - 5.0)
    jf = jax.ffi.ffi_call("mj_increment", jax.ShapeDtypeStruct(X.shape, X.dtype),
                          input_output_aliases={0: 0})
    _same_custom_calls(f, jf, X)
    assert "output_operand_aliases" in minijax.jit(f).lower(X).as_text()
    # several results: the alias names its output's index
    shapes = [spec, minijax.ShapeDtypeStruct((), np.int32)]
    g = ffi.ffi_call("mj_affine", shapes, input_output_aliases={0: 0})
    jg = jax.ffi.ffi_call("mj_affine", [jax.ShapeDtypeStruct(X.shape, X.dtype),
                                        jax.ShapeDtypeStruct((), np.int32)],
                          input_output_aliases={0: 0})
    _same_custom_calls(lambda x: g(x, **AFFINE), lambda x: jg(x, **AFFINE), X)


@pytest.mark.parametrize("aliases, match", [
    ({1: 0}, "input index 1 outside the range"),
    ({0: 1}, "output index 1 outside the range"),
])
def test_bad_aliases_raise_like_jax(targets, aliases, match):
    spec = minijax.ShapeDtypeStruct(X.shape, X.dtype)
    with pytest.raises(ValueError, match=match):
        ffi.ffi_call("mj_increment", spec, input_output_aliases=aliases)(X)
    with pytest.raises(ValueError, match="different abstract value"):
        ffi.ffi_call("mj_increment", minijax.ShapeDtypeStruct((2,), X.dtype),
                     input_output_aliases={0: 0})(X)
    with pytest.raises(ValueError, match="different layout"):
        ffi.ffi_call("mj_increment", spec, input_output_aliases={0: 0},
                     input_layouts=[(1, 0)])(X)


def test_layouts_like_jax(targets):
    # the input column-major: XLA hands the kernel the transposed bytes
    f = ffi.ffi_call("mj_rms_norm", minijax.ShapeDtypeStruct(X.shape, X.dtype),
                     input_layouts=[(1, 0)])
    jf = jax.ffi.ffi_call("mj_rms_norm", jax.ShapeDtypeStruct(X.shape, X.dtype),
                          input_layouts=[(1, 0)])
    want = _rms_norm(X.T.reshape(X.shape))
    np.testing.assert_allclose(jf(X, eps=EPS), want, rtol=1e-6)
    np.testing.assert_allclose(f(X, eps=EPS), want, rtol=1e-6)
    _same_custom_calls(lambda x: f(x, eps=EPS), lambda x: jf(x, eps=EPS), X)
    from minijax.experimental.layout import Layout
    g = ffi.ffi_call("mj_rms_norm", minijax.ShapeDtypeStruct(X.shape, X.dtype),
                     input_layouts=[Layout((1, 0))], output_layouts=Layout((0, 1)))
    np.testing.assert_allclose(g(X, eps=EPS), want, rtol=1e-6)
    with pytest.raises(ValueError, match="number of input layouts"):
        ffi.ffi_call("mj_rms_norm", minijax.ShapeDtypeStruct(X.shape, X.dtype),
                     input_layouts=[None, None])(X, eps=EPS)


# ---- vmap --------------------------------------------------------------------------------

METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
           "legacy_vectorized"]


@pytest.mark.parametrize("method", METHODS)
def test_vmap_methods(targets, method):
    xs = np.random.default_rng(0).normal(size=(4, 3, 5)).astype(np.float32)

    def call(lib):
        f = lib.ffi.ffi_call("mj_rms_norm", lib.ShapeDtypeStruct((3,), np.float32),
                             vmap_method=method)
        return lambda row: f(row, eps=EPS)

    # over axis 1 of xs (moved to the front) and nested
    out = minijax.vmap(minijax.vmap(call(minijax)), in_axes=2, out_axes=1)(xs)
    assert out.shape == (4, 5, 3)
    np.testing.assert_allclose(out, _rms_norm(xs.transpose(0, 2, 1)), rtol=1e-5)
    jaxpr = str(minijax.make_jaxpr(minijax.vmap(call(minijax)))(xs[0].T))
    assert ("scan" in jaxpr) == method.startswith("sequential")
    # the same custom call as jax's (for batched ones, with the batched layouts)
    _same_custom_calls(minijax.vmap(call(minijax)), jax.vmap(call(jax)), xs[0].T)


@pytest.mark.parametrize("method", ["expand_dims", "broadcast_all", "legacy_vectorized",
                                    "sequential"])
def test_vmap_methods_with_an_unbatched_operand(targets, method):
    x, y = X, np.float32([10, 20, 30, 40])

    def call(lib):
        return lib.ffi.ffi_call("mj_add", lib.ShapeDtypeStruct((4,), np.float32),
                                vmap_method=method)

    if method in ("expand_dims", "legacy_vectorized"):  # y reaches the kernel unbroadcast
        with pytest.raises(minijax.errors.JaxRuntimeError, match="differ in size"):
            minijax.vmap(call(minijax), in_axes=(0, None))(x, y)
        with pytest.raises(jax.errors.JaxRuntimeError, match="differ in size"):
            jax.vmap(call(jax), in_axes=(0, None))(x, y)
    else:
        np.testing.assert_array_equal(minijax.vmap(call(minijax), in_axes=(0, None))(x, y),
                                      x + y)
    _same_custom_calls(minijax.vmap(call(minijax), in_axes=(0, None)),
                       jax.vmap(call(jax), in_axes=(0, None)), x, y)


def test_vmap_without_a_method_raises_like_jax(targets):
    f = ffi.ffi_call("mj_add", minijax.ShapeDtypeStruct((4,), np.float32))
    with pytest.raises(NotImplementedError, match="vmap_method is one of 'sequential'.*"
                                                  "Got vmap_method=None"):
        minijax.vmap(f)(X, X)
    with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
        ffi.ffi_call("mj_add", minijax.ShapeDtypeStruct((4,), np.float32), vmap_method="loop")


# ---- effects, derivatives, errors ---------------------------------------------------------

@pytest.mark.parametrize("side_effect", [False, True])
def test_has_side_effect_keeps_an_unused_call(targets, side_effect):
    def unused(lib):
        f = lib.ffi.ffi_call("mj_increment", lib.ShapeDtypeStruct(X.shape, X.dtype),
                             has_side_effect=side_effect)
        return lambda x: (f(x), x * 2)[1]

    # XLA drops the unused call unless it has a side effect (jax drops it while lowering
    # already; minijax leaves dead code to XLA)
    mine = minijax.jit(unused(minijax)).lower(X).compile().as_text()
    theirs = jax.jit(unused(jax)).lower(X).compile().as_text()
    assert ("custom-call" in mine) == ("custom-call" in theirs) == side_effect
    np.testing.assert_array_equal(minijax.jit(unused(minijax))(X), X * 2)
    if side_effect:
        _same_custom_calls(unused(minijax), unused(jax), X)
        from minijax.core.effects import jaxpr_effects
        jaxpr = minijax.make_jaxpr(unused(minijax))(X).jaxpr
        assert [str(e) for e in jaxpr_effects(jaxpr)] == ["FFI"]


def test_no_derivatives(targets):
    f = ffi.ffi_call("mj_increment", minijax.ShapeDtypeStruct(X.shape, X.dtype))
    with pytest.raises(ValueError, match="`mj_increment` cannot be differentiated"):
        minijax.grad(lambda x: f(x).sum())(X)
    with pytest.raises(ValueError, match="cannot be differentiated"):
        minijax.jvp(f, (X,), (X,))


def test_unknown_target_fails_at_compile(targets):
    f = ffi.ffi_call("mj_no_such_target", minijax.ShapeDtypeStruct(X.shape, X.dtype))
    lowered = minijax.jit(f).lower(X)  # lowering does not look the target up
    assert "@mj_no_such_target" in lowered.as_text()
    with pytest.raises(minijax.errors.JaxRuntimeError,
                       match="No FFI handler registered for mj_no_such_target"):
        lowered.compile()
    with pytest.raises(minijax.errors.JaxRuntimeError, match="mj_no_such_target"):
        f(X)


def test_kernel_errors_are_raised(targets):
    f = ffi.ffi_call("mj_add", minijax.ShapeDtypeStruct(X.shape, X.dtype))
    with pytest.raises(minijax.errors.JaxRuntimeError, match="add: x and y differ in size"):
        f(X, X[:1])
    g = ffi.ffi_call("mj_rms_norm", minijax.ShapeDtypeStruct(X.shape, X.dtype))
    with pytest.raises(minijax.errors.JaxRuntimeError, match="Wrong number of attributes"):
        g(X)  # the attribute the handler needs is missing
    np.testing.assert_allclose(g(X, eps=EPS), _rms_norm(X), rtol=1e-6)  # still usable
    # an f64 attribute equal to the f32 one just used is another call (not its executable)
    np.testing.assert_allclose(g(X, eps=np.float32(1.0)), _rms_norm(X, 1.0), rtol=1e-6)
    with pytest.raises(minijax.errors.JaxRuntimeError, match="expected F32 but got F64"):
        g(X, eps=1.0)


@pytest.mark.parametrize("bad", [3, None, "f32", [object()]])
def test_bad_result_shape_dtypes(bad):
    with pytest.raises(TypeError, match="must have 'shape' and 'dtype'"):
        ffi.ffi_call("mj_add", bad)
    with pytest.raises(ValueError, match="must have 'shape' and 'dtype'"):  # jax's type too
        ffi.ffi_call("mj_add", bad)


def test_bad_attributes_and_api_versions(targets):
    f = ffi.ffi_call("mj_increment", minijax.ShapeDtypeStruct(X.shape, X.dtype))
    with pytest.raises(TypeError, match="Non-hashable keyword argument to ffi_call w"):
        f(X, w=[1, 2])
    with pytest.raises(TypeError, match="No attribute handler defined for type"):
        minijax.jit(lambda x: f(x, w=object())).lower(X)
    with pytest.raises(TypeError, match="Unsupported scalar attribute type"):
        minijax.jit(lambda x: f(x, c=1j)).lower(X)
    with pytest.raises(ValueError, match="legacy_backend_config parameter requires"):
        ffi.ffi_call("mj_increment", minijax.ShapeDtypeStruct(X.shape, X.dtype),
                     legacy_backend_config="cfg")
    old = ffi.ffi_call("mj_increment", minijax.ShapeDtypeStruct(X.shape, X.dtype),
                       custom_call_api_version=2, legacy_backend_config="cfg")
    with pytest.raises(ValueError, match="API version of at least 4"):
        minijax.jit(lambda x: old(x, w=1)).lower(X)
    jold = jax.ffi.ffi_call("mj_increment", jax.ShapeDtypeStruct(X.shape, X.dtype),
                            custom_call_api_version=2, legacy_backend_config="cfg")
    _same_custom_calls(old, jold, X)


# ---- lowering rules of one's own primitives --------------------------------------------------

def test_ffi_lowering_for_a_primitive(targets):
    from minijax.extend.core import Primitive
    from minijax.interpreters import mlir

    prim = Primitive("my_rms_norm")
    prim.def_abstract_eval(lambda x, **params: x)
    mlir.register_lowering(prim, ffi.ffi_lowering("mj_rms_norm"))
    np.testing.assert_allclose(minijax.jit(lambda x: prim.bind(x, eps=EPS))(X), _rms_norm(X),
                               rtol=1e-6)
    text = minijax.jit(lambda x: prim.bind(x, eps=EPS)).lower(X).as_text()
    jf = jax.ffi.ffi_call("mj_rms_norm", jax.ShapeDtypeStruct(X.shape, X.dtype))
    theirs = _custom_calls(jax.jit(lambda x: jf(x, eps=EPS)).lower(X).as_text())
    assert _custom_calls(text) == theirs

    # the op builder, with a backend_config and a side effect
    build = ffi.build_ffi_lowering_function("mj_increment", has_side_effect=True,
                                            backend_config={"k": np.int32(1)})
    inc = Primitive("my_increment")
    inc.def_abstract_eval(lambda x: x)
    mlir.register_lowering(inc, lambda ctx, x: build(ctx, x).results)
    text = minijax.jit(lambda x: inc.bind(x)).lower(mjnp.zeros(3)).as_text()
    assert "has_side_effect = true" in text and "mhlo.backend_config = {k = 1 : i32}" in text


def test_jaxpr_and_export_like_jax(targets):
    def call(lib):
        return lib.ffi.ffi_call("mj_add", lib.ShapeDtypeStruct((), np.float32))

    mine = str(minijax.make_jaxpr(lambda x, y: call(minijax)(x, y, k=np.int32(2)))(1.0, 2.0))
    theirs = str(jax.make_jaxpr(lambda x, y: call(jax)(x, y, k=np.int32(2)))(1.0, 2.0))
    assert mine.replace("ShapedArray(f32[])", "ShapedArray(float32[])") == theirs
    np.testing.assert_array_equal(call(minijax)(1.0, np.float32(2)), 3.0)
    # export refuses targets without compatibility guarantees unless told otherwise
    with pytest.raises(ValueError, match="no compatibility guarantees"):
        minijax.export.export(minijax.jit(call(minijax)))(np.float32(1), np.float32(2))
    exp = minijax.export.export(
        minijax.jit(call(minijax)),
        disabled_checks=[minijax.export.DisabledSafetyCheck.custom_call("mj_add")])(
            np.float32(1), np.float32(2))
    np.testing.assert_array_equal(exp.call(np.float32(1), np.float32(4)), 5.0)


def test_register_by_stage_and_differentiate_with_custom_vjp(targets):
    ffi.register_ffi_target("mj_add_by_stage", {"execute": ffi.pycapsule(targets.Add)})
    add = ffi.ffi_call("mj_add_by_stage", minijax.ShapeDtypeStruct(X.shape, X.dtype),
                       vmap_method="broadcast_all")
    np.testing.assert_array_equal(add(X, X), 2 * X)

    @minijax.custom_vjp
    def f(x, y):
        return add(x, y)

    f.defvjp(lambda x, y: (add(x, y), None), lambda _, ct: (ct, ct))
    gx, gy = minijax.grad(lambda x, y: (f(x, y) ** 2).sum(), argnums=(0, 1))(X, X)
    np.testing.assert_allclose(gx, 4 * X)
    np.testing.assert_allclose(gy, 4 * X)
    np.testing.assert_allclose(minijax.jit(minijax.grad(lambda x: (f(x, x) ** 2).sum()))(X),
                               8 * X)


def test_register_ffi_type_assigns_a_type_id(targets):
    mjnp.zeros(1).block_until_ready()  # the CPU client (registrations wait for it)
    type_id = ctypes.c_int64.in_dll(targets, "MjStateTypeId")
    assert type_id.value == 0
    info = ctypes.c_char.in_dll(targets, "MjStateTypeInfo")
    ffi.register_ffi_type("mj_state", {"type_id": ffi.pycapsule(ctypes.addressof(type_id)),
                                       "type_info": ffi.pycapsule(ctypes.addressof(info))})
    assert type_id.value != 0


def test_no_results_and_legacy_configs_lower_like_jax():
    def no_results(lib):
        f = lib.ffi.ffi_call("mj_not_registered", [], has_side_effect=True)

        def g(x):
            f(x, tag="x")
            return x + 1
        return g

    _same_custom_calls(no_results(minijax), no_results(jax), X)

    def legacy(lib, config):
        return lib.ffi.ffi_call("mj_not_registered", lib.ShapeDtypeStruct(X.shape, X.dtype),
                                custom_call_api_version=1, legacy_backend_config=config)

    for config in (b"\x01ab", 'with "quotes"', None):
        _same_custom_calls(legacy(minijax, config), legacy(jax, config), X)
