"""Per-function XLA compiler options on jit and Lowered.compile."""

import jax
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.runtime import compile_options
from minijax.runtime.executable import compile_count

X = np.linspace(0, 1, 16).astype(np.float32)


def f(x):
    return jnp.sin(x) * 2 + jnp.cos(x)


@pytest.fixture(scope="module")
def lowered():
    return minijax.jit(f).lower(X)


def test_disabling_a_pass_changes_the_optimized_hlo(lowered):
    base = lowered.compile().as_text()
    unfused = lowered.compile({"xla_disable_hlo_passes": "fusion"}).as_text()
    assert base.count("fusion(") == 1 and unfused.count("fusion(") > 1
    theirs = jax.jit(lambda x: jax.numpy.sin(x) * 2 + jax.numpy.cos(x)).lower(X).compile(
        {"xla_disable_hlo_passes": "fusion"}).as_text()
    assert theirs.count("fusion(") == unfused.count("fusion(")


def test_backend_option_changes_the_build(lowered):
    # (the suite runs with level 0 in XLA_FLAGS, see conftest: compare two explicit levels)
    base = lowered.compile({"xla_backend_optimization_level": 3}).memory_analysis() \
        .generated_code_size_in_bytes
    compiled = lowered.compile({"xla_backend_optimization_level": 0})
    assert compiled.memory_analysis().generated_code_size_in_bytes != base
    np.testing.assert_allclose(np.asarray(compiled(X)), np.sin(X) * 2 + np.cos(X), rtol=1e-6)


@pytest.mark.parametrize("options", [
    {"xla_cpu_enable_fast_math": True},
    {"xla_embed_ir_in_executable": True},
    {"exec_time_optimization_effort": -0.5, "memory_fitting_effort": 0.25},
    {"optimization_level": "O1"},
    {"xla_cpu_opt_preset": "CPU_OPT_PRESET_FAST_COMPILE"},
    {"xla_gpu_autotune_gemm_rtol": 1},  # an int for a float field is converted
])
def test_valid_options_compile_and_run(lowered, options):
    out = lowered.compile(options)(X)
    np.testing.assert_allclose(np.asarray(out), np.sin(X) * 2 + np.cos(X), rtol=1e-5)


def test_jit_compiler_options_are_used():
    g = minijax.jit(f, compiler_options={"xla_disable_hlo_passes": "fusion"})
    np.testing.assert_allclose(np.asarray(g(X)), np.sin(X) * 2 + np.cos(X), rtol=1e-6)
    assert g.lower(X).compile().as_text().count("fusion(") > 1
    # Lowered.compile adds to (and overrides) the jit's options, as in jax.
    assert g.lower(X).compile({"xla_disable_hlo_passes": ""}).as_text().count("fusion(") == 1


@pytest.mark.parametrize("options, message", [
    ({"xla_cpu_enable_fast_mat": True}, r"unknown compiler option 'xla_cpu_enable_fast_mat'.*"
                                        r"did you mean 'xla_cpu_enable_fast_math'"),
    ({"no_such_option": 1}, "unknown compiler option 'no_such_option'"),
    ({"xla_cpu_enable_fast_math": 1}, "'xla_cpu_enable_fast_math' takes a bool, got 1"),
    ({"xla_cpu_enable_fast_math": "true"}, "'xla_cpu_enable_fast_math' takes a bool"),
    ({"xla_backend_optimization_level": 1.5}, "'xla_backend_optimization_level' takes an int"),
    ({"xla_backend_optimization_level": True}, "'xla_backend_optimization_level' takes an int"),
    ({"xla_dump_max_hlo_modules": 2**40}, "'xla_dump_max_hlo_modules': .* out of range"),
    ({"xla_dump_to": 3}, "'xla_dump_to' takes a str"),
    ({"xla_cpu_opt_preset": "FASTEST"}, "'xla_cpu_opt_preset': 'FASTEST' is not one of"),
    ({"exec_time_optimization_effort": 2.0}, r"takes a float in \[-1, 1\]"),
    ({"optimization_level": "O9"}, "'optimization_level' takes one of"),
    ({"xla_backend_extra_options": "a=b"}, "message-valued"),
])
def test_bad_options_raise_before_xla_compiles(lowered, options, message):
    before = compile_count()
    with pytest.raises(ValueError, match=message):
        lowered.compile(options)
    with pytest.raises(ValueError, match=message):
        minijax.jit(f, compiler_options=options)  # checked when jit is applied
    assert compile_count() == before


def test_normalized_options_are_hashable_and_sorted():
    norm = compile_options.normalize({"xla_disable_hlo_passes": ["fusion", "cse"],
                                      "optimization_level": "o2",
                                      "exec_time_optimization_effort": 0})
    assert norm == (("exec_time_optimization_effort", 0.0), ("optimization_level", 29),
                    ("xla_disable_hlo_passes", "fusion,cse"))
    hash(norm)
    assert "xla_embed_ir_in_executable" in compile_options.known_options()


def test_options_schema_matches_jaxlib_exposed_fields():
    """The schema read from jaxlib agrees with the DebugOptions fields jaxlib exposes."""
    fields = compile_options._debug_option_fields()
    assert fields is not None and len(fields) > 200
    exposed = compile_options._exposed_debug_options()
    for name, default in exposed.items():
        if type(default) is bool:
            assert fields[name].type == compile_options._BOOL, name
        elif type(default) is str:
            assert fields[name].type == compile_options._STRING, name


def test_apply_sets_build_options_and_overrides():
    from jaxlib import xla_client
    opts = xla_client.CompileOptions()
    norm = compile_options.normalize({"exec_time_optimization_effort": -0.5,
                                      "optimization_level": "O1",
                                      "xla_cpu_enable_fast_math": True})
    compile_options.apply(opts, norm)
    build = opts.executable_build_options
    assert build.exec_time_optimization_effort == -0.5
    assert build.optimization_level == 19
    assert opts.env_option_overrides == [("xla_cpu_enable_fast_math", True)]
