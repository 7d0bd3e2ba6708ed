"""Lowering Pallas kernels for a TPU without one: Mosaic in a tpu_custom_call.

Each kernel is lowered by minijax (``pltpu.lower_for_tpu``) and by jax
(``.trace(...).lower(lowering_platforms=("tpu",))``); the serialized Mosaic
bodies of both are deserialized with jaxlib's passes and compared.
"""

import base64
import collections
import json
import re

import jax
import numpy as np
import pytest
from jax.experimental import pallas as jpl
from jax.experimental.pallas import tpu as jpltpu

import minijax
import minijax.experimental.pallas as pl
import minijax.experimental.pallas.tpu as pltpu
import minijax.numpy as jnp
from minijax.experimental.pallas import _mosaic
from tests.experimental.test_pallas import (JAX, MINI, make_add, make_loop, make_matmul,
                                            make_softmax)

S = minijax.ShapeDtypeStruct


def custom_call(text: str) -> str:
    (line,) = [ln for ln in text.splitlines() if "stablehlo.custom_call" in ln]
    return line


def config(text: str) -> tuple[dict, str]:
    """The backend config (body removed) and the deserialized Mosaic module."""
    cfg = json.loads(re.search(r'backend_config = "(.*?)"[,}]', custom_call(text))
                     .group(1).replace("\\22", '"'))
    body = base64.b64decode(cfg["custom_call_config"].pop("body"))
    return cfg, _mosaic.deserialize(body)


def header(module: str) -> str:
    """The kernel function's signature and attributes."""
    return re.search(r"func\.func @\w+\((.*?)\{\n", module).group(1)


def op_names(module: str) -> set:
    return {m.group(1) for m in (re.match(r"\s*(?:%\S+ = )?([a-z_]+\.[a-z_]+)", ln)
                                 for ln in module.splitlines()) if m}


def both(make, *args):
    mini = pltpu.lower_for_tpu(make(MINI), *args).as_text()
    ref = jax.jit(make(JAX)).trace(*args).lower(lowering_platforms=("tpu",)).as_text()
    return mini, ref


KERNELS = {
    "matmul": (lambda lib: make_matmul(lib, 64, 256, 256, interpret=False),
               [(64, 256), (256, 256)], {"tpu.matmul", "scf.if", "tpu.vector_store"}),
    "softmax": (lambda lib: make_softmax(lib, 64, 128, interpret=False), [(64, 128)],
                {"vector.multi_reduction", "math.exp", "arith.divf"}),
    "add": (lambda lib: make_add(lib, (64, 256), (8, 128), interpret=False),
            [(64, 256), (64, 256)], {"arith.addf", "arith.mulf"}),
    "loop": (lambda lib: make_loop(lib, interpret=False), [(32, 128)], {"scf.for"}),
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_kernel_lowering_matches_jax(name):
    make, shapes, expected_ops = KERNELS[name]
    args = [np.ones(s, np.float32) for s in shapes]
    mini, ref = both(make, *args)
    assert "stablehlo.custom_call @tpu_custom_call" in mini
    cfg_m, mod_m = config(mini)
    cfg_j, mod_j = config(ref)
    assert cfg_m == cfg_j
    assert header(mod_m) == header(mod_j)
    assert expected_ops <= op_names(mod_m)
    assert op_names(mod_m) == op_names(mod_j)
    # the custom call's attributes as jax writes them (backend config aside)
    strip = lambda s: re.sub(r'backend_config = ".*?", ', "", s).split(" : (")[0].split(
        "@tpu_custom_call")[1]
    assert strip(custom_call(mini)).replace(", mhlo.frontend_attributes = "
                                            "{kernel_metadata = \"{}\"}", "") == \
        strip(custom_call(ref)).replace(", mhlo.frontend_attributes = "
                                        "{kernel_metadata = \"{}\"}", "")


def test_matmul_kernel_text():
    make, shapes, _ = KERNELS["matmul"]
    lowered = pltpu.lower_for_tpu(make(MINI), *[np.ones(s, np.float32) for s in shapes])
    cfg, module = config(lowered.as_text())
    assert "stable_mosaic.version" in module
    assert ("dimension_semantics = [#tpu.dimension_semantics<parallel>, "
            "#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<arbitrary>]") in module
    assert "iteration_bounds = array<i64: 2, 2, 2>" in module
    assert "scratch_operands = 1 : i64" in module
    assert "window_params = [{transform_indices = @transform_0, window_bounds = " \
        "array<i64: 32, 128>}" in module
    assert "func.func @transform_1(%arg0: i32, %arg1: i32, %arg2: i32) -> (i32, i32)" in module
    assert re.search(r"tpu.matmul .* : vector<32x128xf32>, vector<128x128xf32>, "
                     r"vector<32x128xf32> -> vector<32x128xf32>", module)


def test_compiler_params_in_backend_config():
    def kernel(x_ref, o_ref, s_ref):
        s_ref[0] = x_ref[0, 0]
        o_ref[...] = x_ref[...] * 2.0 + s_ref[0]

    def make(lib):
        pl_, pltpu_, _, _, S_ = lib
        spec = pl_.BlockSpec((None, 16, 128), lambda b: (b, 0, 0))
        return pl_.pallas_call(
            kernel, out_shape=S_((4, 16, 128), np.float32), grid=(4,), in_specs=[spec],
            out_specs=spec, scratch_shapes=[pltpu_.SMEM((1,), np.float32)],
            input_output_aliases={0: 0},
            compiler_params=pltpu_.CompilerParams(
                dimension_semantics=("parallel",), vmem_limit_bytes=1 << 24,
                flags={"xla_tpu_flag": 3, "xla_other": True}, has_side_effects=True,
                allow_input_fusion=[True], internal_scratch_in_bytes=4096,
                disable_bounds_checks=True, serialization_format=1))

    x = np.ones((4, 16, 128), np.float32)
    mini, ref = both(make, x)
    cfg_m, mod_m = config(mini)
    cfg_j, mod_j = config(ref)
    assert cfg_m == cfg_j
    assert cfg_m["scoped_memory_configs"] == [{"memory_space": 1, "offset": 0,
                                               "size": 1 << 24}]
    assert cfg_m["custom_call_config"]["disable_bounds_checks"] is True
    assert header(mod_m) == header(mod_j)
    assert "memref<1xf32, #tpu.memory_space<smem>>" in header(mod_m)
    call = custom_call(mini)
    assert "has_side_effect = true" in call
    assert "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = " \
        "[], operand_index = 0, operand_tuple_indices = []>]" in call


def test_vmapped_kernel_and_core_type():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + pl.program_id(0).astype(jnp.float32)
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    f = pl.pallas_call(kernel, out_shape=S((16, 128), jnp.float32), grid=(2,),
                       in_specs=[spec], out_specs=spec,
                       compiler_params=pltpu.CompilerParams(
                           dimension_semantics=("parallel",),
                           kernel_type=pltpu.CoreType.SC_VECTOR_SUBCORE))
    _, module = config(pltpu.lower_for_tpu(minijax.vmap(f), np.ones((3, 16, 128),
                                                                    np.float32)).as_text())
    assert "iteration_bounds = array<i64: 3, 2>" in module
    assert "window_bounds = array<i64: 1, 8, 128>" in module
    assert "tpu.core_type = #tpu.core_type<sc_vector_subcore>" in module
    # program_id(0) is the kernel's own grid axis, the second function argument
    assert "arith.sitofp %arg1 : i32 to f32" in module


def test_compile_without_tpu_is_a_clear_error():
    make, shapes, _ = KERNELS["add"]
    lowered = pltpu.lower_for_tpu(make(MINI), *[np.ones(s, np.float32) for s in shapes])
    assert "tpu_custom_call" in lowered.as_text("hlo")
    with pytest.raises(RuntimeError, match=r"cannot compile for TPU: no TPU is available "
                       r"\(minijax's backend here is 'cpu'\)"):
        lowered.compile()


def test_verifier_and_unsupported_primitives():
    with pytest.raises(minijax.lowering.lower.LoweringError, match="does not verify|invalid MLIR"):
        _mosaic.verify_and_serialize("module {\n  func.func @k(%arg0: i32) {\n"
                                     "    %0 = arith.addf %arg0, %arg0 : i32\n    return\n  }\n}\n")

    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.sort(x_ref[...], axis=-1)
    f = pl.pallas_call(kernel, out_shape=S((8, 128), jnp.float32))
    with pytest.raises(NotImplementedError, match="cannot lower the primitive 'sort' inside a "
                       "Pallas kernel yet; run the kernel with interpret=True"):
        pltpu.lower_for_tpu(f, np.ones((8, 128), np.float32))


def test_jax_reference_kernel_deserializes():
    """Our deserializer reads jax's serialized kernels too (same format)."""
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0
    f = jpl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((8, 128), np.float32),
                        compiler_params=jpltpu.CompilerParams())
    text = jax.jit(f).trace(np.ones((8, 128), np.float32)).lower(
        lowering_platforms=("tpu",)).as_text()
    _, module = config(text)
    assert collections.Counter(op_names(module))["tpu.vector_store"] == 1
