"""The AOT API: Wrapped.trace/lower, Traced, Lowered, Compiled (jax.stages)."""

import re
import types

import jax
import numpy as np
import pytest
from jaxlib.mlir import ir

import minijax
import minijax.numpy as jnp


def f(x, y):
    return jnp.sin(x) * y + 1.0


X = np.linspace(0, 1, 4).astype(np.float32)


def test_trace_has_jaxpr_and_lowers():
    traced = minijax.jit(f).trace(X, 2.0)
    assert [e.primitive.name for e in traced.jaxpr.eqns] == ["sin", "convert_element_type",
                                                            "mul", "add"]
    lowered = traced.lower()
    assert "stablehlo.sine" in lowered.as_text()


def test_lower_accepts_shape_dtype_struct_and_duck_types():
    spec = minijax.ShapeDtypeStruct((4,), np.float32)
    duck = types.SimpleNamespace(shape=(), dtype=np.dtype(np.float32))
    lowered = minijax.jit(f).lower(spec, duck)
    text = lowered.as_text()
    assert "tensor<4xf32>" in text
    out = lowered.compile()(X, np.float32(3.0))
    np.testing.assert_allclose(np.asarray(out), np.sin(X) * 3 + 1, rtol=1e-6)


def test_as_text_dialects():
    lowered = minijax.jit(f).lower(X, 2.0)
    stablehlo = lowered.as_text()
    assert stablehlo == lowered.as_text("stablehlo")
    assert stablehlo.startswith("module @jit_f")
    assert "func.func public @main" in stablehlo
    assert "loc(" not in stablehlo
    debug = lowered.as_text(debug_info=True)
    assert 'loc("jit(f)/sin"' in debug and "test_stages.py" in debug
    hlo = lowered.as_text("hlo")
    assert hlo.startswith("HloModule jit_f")
    with pytest.raises(ValueError, match="dialect"):
        lowered.as_text("llvm")


def test_compiler_ir_types():
    lowered = minijax.jit(f).lower(X, 2.0)
    assert isinstance(lowered.compiler_ir("stablehlo"), ir.Module)
    comp = lowered.compiler_ir("hlo")
    assert "HloModule" in comp.as_hlo_text()
    assert isinstance(comp.as_serialized_hlo_module_proto(), bytes)


def test_lowered_trees_and_infos():
    lowered = minijax.jit(f).lower(X, 2.0)
    assert lowered.in_tree == jax.tree_util.tree_structure(((0, 0), {})) or \
        lowered.in_tree.num_leaves == 2
    (ax, ay), kw = lowered.args_info
    assert kw == {}
    assert ax.shape == (4,) and ax.dtype == np.float32 and not ax.donated
    assert ay.shape == () and ay.weak_type
    assert lowered.out_info.shape == (4,) and lowered.out_info.dtype == np.float32
    assert lowered.out_tree.num_leaves == 1


def test_lowered_cost_analysis():
    cost = minijax.jit(f).lower(X, 2.0).cost_analysis()
    for key in ("flops", "bytes accessed", "transcendentals"):
        assert key in cost
    assert cost["transcendentals"] == 4.0


def test_compiled_methods():
    compiled = minijax.jit(f).lower(X, 2.0).compile()
    np.testing.assert_allclose(np.asarray(compiled(X, 2.0)), np.sin(X) * 2 + 1, rtol=1e-6)
    text = compiled.as_text()
    assert text.startswith("HloModule jit_f") and "is_scheduled=true" in text
    assert 'op_name="jit(f)/sin"' in text
    cost = compiled.cost_analysis()
    assert cost["flops"] > 0
    mem = compiled.memory_analysis()
    assert mem.argument_size_in_bytes == 4 * 4 + 4
    assert mem.output_size_in_bytes == 16
    assert compiled.runtime_executable() is not None
    assert compiled.in_tree == minijax.jit(f).lower(X, 2.0).in_tree
    assert compiled.args_info[0][0].shape == (4,)


def test_compiled_wrong_arguments():
    compiled = minijax.jit(f).lower(X, 2.0).compile()
    with pytest.raises(TypeError, match=r"Argument 'x' of f was compiled for f32\[4\] but "
                                        r"called with f32\[5\]"):
        compiled(np.ones(5, np.float32), 2.0)
    with pytest.raises(TypeError, match=r"Argument 'y' .* f32\[\] but called with i32\[\]"):
        compiled(X, np.int32(2))
    with pytest.raises(TypeError, match="tree structure"):
        compiled(X)
    with pytest.raises(TypeError, match="tree structure"):
        compiled((X, 2.0))


def test_compiled_with_static_args_takes_dynamic_only():
    g = minijax.jit(lambda x, n: x * n, static_argnums=1)
    compiled = g.lower(X, 3).compile()
    np.testing.assert_allclose(np.asarray(compiled(X)), X * 3, rtol=1e-6)


def test_param_names_in_hlo():
    def loss(params, inputs):
        return jnp.tanh(inputs * params["w"]) + params["b"]

    lowered = minijax.jit(loss).lower({"b": 1.0, "w": 2.0}, X)
    assert 'loc("params[\'b\']")' in lowered.as_text(debug_info=True)
    hlo = lowered.as_text("hlo")  # XLA sanitizes the names, as with jax
    assert re.search(r"params__b__\.\d+ = f32\[\] parameter\(0\)", hlo)
    assert re.search(r"params__w__\.\d+ = f32\[\] parameter\(1\)", hlo)
    assert re.search(r"inputs\.\d+ = f32\[4\]\{0\} parameter\(2\)", hlo)
    theirs = jax.jit(lambda p, i: jax.numpy.tanh(i * p["w"]) + p["b"]).lower(
        {"b": 1.0, "w": 2.0}, X).as_text("hlo")
    assert sorted(re.findall(r"(\S+) = \S+ parameter", hlo)) == \
        sorted(re.findall(r"(\S+) = \S+ parameter", theirs.replace("p__", "params__")
                          .replace("i.1", "inputs.1")))
