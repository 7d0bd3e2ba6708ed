"""pltpu.CompilerParams against the reference, and every TPU-compile check with its message.

Reference: /work/shared/reference/003_a14d64b9dc1cddaf.txt
(jax.experimental.pallas.tpu.CompilerParams).
"""

import dataclasses

import numpy as np
import pytest
from jax.experimental.pallas import tpu as jpltpu

import minijax
import minijax.experimental.pallas as pl
import minijax.experimental.pallas.tpu as pltpu
import minijax.numpy as jnp

S = minijax.ShapeDtypeStruct

# The reference's signature, in order (field, default).
REFERENCE_FIELDS = [
    ("dimension_semantics", None), ("allow_input_fusion", None), ("vmem_limit_bytes", None),
    ("collective_id", None), ("has_side_effects", False), ("flags", None),
    ("internal_scratch_in_bytes", None), ("serialization_format", 1),
    ("kernel_type", pltpu.CoreType.TC), ("disable_bounds_checks", False),
    ("disable_semaphore_checks", False), ("skip_device_barrier", False),
    ("allow_collective_id_without_custom_barrier", False), ("shape_invariant_numerics", True),
    ("use_tc_tiling_on_sc", None), ("needs_layout_passes", None),
    ("fuse_transposed_lhs_in_matmul", False),
]


# ---- CompilerParams ------------------------------------------------------------------------

def test_compiler_params_fields_match_reference():
    fields = dataclasses.fields(pltpu.CompilerParams)
    assert [(f.name, f.default) for f in fields] == REFERENCE_FIELDS
    assert pltpu.CompilerParams.__dataclass_params__.frozen


def test_compiler_params_fields_match_installed_jax():
    """jax 0.10.2's class is the reference minus ``kernel_type`` (the reference documents
    a newer jax) and with ``needs_layout_passes=True``; otherwise identical in order and
    defaults."""
    ours = {f.name: f.default for f in dataclasses.fields(pltpu.CompilerParams)}
    theirs = [(f.name, f.default) for f in dataclasses.fields(jpltpu.CompilerParams)]
    assert [n for n, _ in theirs] == [n for n in ours if n != "kernel_type"]
    for n, d in theirs:
        if n != "needs_layout_passes":
            assert ours[n] == d, n
    assert dict(theirs)["needs_layout_passes"] is True and ours["needs_layout_passes"] is None
    # the same construction and replace() behaviour
    for mod in (pltpu, jpltpu):
        p = mod.CompilerParams(dimension_semantics=["parallel", "arbitrary"])
        assert p.dimension_semantics == ("parallel", "arbitrary") or \
            tuple(str(s) for s in p.dimension_semantics) == ("parallel", "arbitrary")
        q = p.replace(vmem_limit_bytes=1 << 20)
        assert q.vmem_limit_bytes == 1 << 20 and p.vmem_limit_bytes is None
        assert q.dimension_semantics == p.dimension_semantics
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.vmem_limit_bytes = 3


def test_compiler_params_values():
    p = pltpu.CompilerParams(dimension_semantics=(pltpu.PARALLEL, "arbitrary"),
                             flags={"xla_tpu_x": True}, kernel_type="sc_vector_subcore")
    assert p.dimension_semantics == (pltpu.PARALLEL, pltpu.ARBITRARY)
    assert [str(s) for s in p.dimension_semantics] == ["parallel", "arbitrary"]
    assert p.kernel_type is pltpu.CoreType.SC_VECTOR_SUBCORE
    assert dict(p.flags) == {"xla_tpu_x": True}
    assert hash(p) == hash(pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary"),
                                                flags={"xla_tpu_x": True},
                                                kernel_type=pltpu.CoreType.SC_VECTOR_SUBCORE))
    assert p.replace(flags=None).flags is None
    assert [c.name for c in pltpu.CoreType] == [c.name for c in jpltpu.CoreType]
    assert str(pltpu.PARALLEL) == "parallel" and str(pltpu.ARBITRARY) == "arbitrary"
    assert pltpu.CompilerParams() == pltpu.CompilerParams().replace()


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(dimension_semantics=("parallel", "sequential")), ValueError,
     r"CompilerParams.dimension_semantics\[1\] must be 'parallel' or 'arbitrary' .* got "
     r"'sequential'"),
    (dict(dimension_semantics="parallel"), TypeError,
     r"dimension_semantics must be a sequence .* got 'parallel'"),
    (dict(vmem_limit_bytes=0), ValueError,
     r"CompilerParams.vmem_limit_bytes must be a positive int .* got 0"),
    (dict(vmem_limit_bytes=-5), ValueError, r"vmem_limit_bytes .* got -5"),
    (dict(vmem_limit_bytes=1.5), TypeError, r"vmem_limit_bytes .* got 1.5 of type float"),
    (dict(vmem_limit_bytes=True), TypeError, r"vmem_limit_bytes .* got True"),
    (dict(kernel_type="gpu"), ValueError,
     r"CompilerParams.kernel_type must be one of pltpu.CoreType.TC, .* got 'gpu'"),
])
def test_compiler_params_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        pltpu.CompilerParams(**kwargs)
    with pytest.raises(exc, match=match):  # replace validates too
        pltpu.CompilerParams().replace(**kwargs)


# ---- checks at pallas_call -----------------------------------------------------------------

def copy_kernel(x_ref, o_ref, *scratch):
    o_ref[...] = x_ref[...]


def copy_call(shape, block, grid, index_map, dtype=jnp.float32, params=None, **kw):
    spec = pl.BlockSpec(block, index_map)
    return pl.pallas_call(copy_kernel, out_shape=S(shape, dtype), grid=grid, in_specs=[spec],
                          out_specs=spec, compiler_params=params, interpret=True, **kw)


def test_dimension_semantics_must_match_grid_rank():
    f = copy_call((64, 256), (8, 256), (8,), lambda i: (i, 0),
                  params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")))
    with pytest.raises(ValueError, match=r"dimension_semantics=\('parallel', 'arbitrary'\) has "
                       r"2 entries but the grid \(8,\) has rank 1"):
        f(np.zeros((64, 256), np.float32))


@pytest.mark.parametrize("dtype,block,bad", [
    (np.float32, (8, 100), r"float32 tile \(8, 128\) .* change block_shape\[1\]=100 \(use a "
                           r"multiple of 128, or 256\)"),
    (np.float32, (4, 256), r"float32 tile \(8, 128\) .* block_shape\[0\]=4 \(use a multiple "
                           r"of 8, or 64\)"),
    (jnp.bfloat16, (8, 256), r"bfloat16 tile \(16, 128\) .* block_shape\[0\]=8 \(use a "
                             r"multiple of 16, or 64\)"),
    (np.int8, (16, 256), r"int8 tile \(32, 128\) .* block_shape\[0\]=16 \(use a multiple of "
                         r"32, or 64\)"),
])
def test_tiling_rule(dtype, block, bad):
    f = copy_call((64, 256), block, (64 // block[0],), lambda i: (i, 0), dtype=dtype)
    with pytest.raises(ValueError, match=r"in_specs\[0\] has block shape .* on TPU the last two "
                       r"block dimensions must be divisible by the " + bad):
        f(np.zeros((64, 256), dtype))


@pytest.mark.parametrize("dtype,block", [(np.float32, (8, 128)), (jnp.bfloat16, (16, 128)),
                                         (np.int8, (32, 128)), (np.float32, (64, 256)),
                                         (np.float32, (64, 128))])
def test_tiling_rule_accepts(dtype, block):
    x = np.arange(64 * 256).reshape(64, 256).astype(dtype)
    f = copy_call((64, 256), block, (64 // block[0], 256 // block[1]), lambda i, j: (i, j),
                  dtype=dtype)
    np.testing.assert_array_equal(np.asarray(minijax.jit(f)(x)).astype(np.float32),
                                  x.astype(np.float32))


def test_tiling_rule_rank1():
    f = copy_call((1000,), (100,), (10,), lambda i: (i,))
    with pytest.raises(ValueError, match=r"a rank-1 block must equal the array's size \(1000\), "
                       r"be a multiple of 1024 .* or be a power of two >= 128 .* "
                       r"change block_shape\[0\]=100"):
        f(np.zeros(1000, np.float32))


def test_vmem_limit_default():
    f = copy_call((4096, 4096), (1024, 4096), (4,), lambda i: (i, 0),
                  scratch_shapes=[pltpu.VMEM((8, 100), jnp.float32)])
    with pytest.raises(ValueError) as e:
        f(np.zeros((4096, 4096), np.float32))
    msg = str(e.value)
    assert "needs 67112960 bytes (64.00 MiB) of VMEM but the limit is 16777216 bytes" in msg
    assert "default scoped VMEM limit" in msg and "vmem_limit_bytes=" in msg
    assert "in_specs[0] block (1024, 4096) float32: 2 x 16777216 bytes (double-buffered)" in msg
    assert "out_specs[0] block (1024, 4096) float32: 2 x 16777216 bytes" in msg
    # (8, 100) f32 is padded to one (8, 128) tile
    assert "scratch_shapes[0] (8, 100) float32: 4096 bytes" in msg


def test_vmem_limit_explicit():
    shape, block = (512, 512), (256, 512)
    x = np.ones(shape, np.float32)
    # 2 x 2 x 512 KiB = 2 MiB of blocks + 1 MiB scratch: over a 2 MiB limit, under 4 MiB
    kw = dict(scratch_shapes=[pltpu.VMEM((512, 512), jnp.float32)])
    f = copy_call(shape, block, (2,), lambda i: (i, 0),
                  params=pltpu.CompilerParams(vmem_limit_bytes=2 << 20), **kw)
    with pytest.raises(ValueError, match=r"needs 3145728 bytes \(3.00 MiB\) of VMEM but the "
                       r"limit is 2097152 bytes \(2.00 MiB, CompilerParams.vmem_limit_bytes\)"):
        f(x)
    g = copy_call(shape, block, (2,), lambda i: (i, 0),
                  params=pltpu.CompilerParams(vmem_limit_bytes=4 << 20), **kw)
    np.testing.assert_array_equal(g(x), x)


def test_out_of_bounds_block_index():
    f = copy_call((64, 256), (8, 256), (9,), lambda i: (i, 0))
    with pytest.raises(ValueError, match=r"the in_specs\[0\] index_map returns block index "
                       r"\(8, 0\) at grid point \(8,\), out of bounds .* \(\(8, 1\) blocks; "
                       r"valid indices 0..7, 0..0\).*disable_bounds_checks=True"):
        f(np.zeros((64, 256), np.float32))
    g = copy_call((64, 256), (8, 256), (4,), lambda i: (i, -1))
    with pytest.raises(ValueError, match=r"block index \(0, -1\) at grid point \(0,\)"):
        g(np.zeros((64, 256), np.float32))


def test_disable_bounds_checks_opts_out():
    params = pltpu.CompilerParams(disable_bounds_checks=True)
    f = copy_call((64, 256), (8, 256), (9,), lambda i: (i, 0), params=params)
    out = minijax.jit(f)(np.ones((64, 256), np.float32))
    assert out.shape == (64, 256)


def test_parallel_race():
    params = pltpu.CompilerParams(dimension_semantics=("parallel", "parallel"))
    f = copy_call((64, 256), (8, 256), (8, 2), lambda i, j: (i, 0), params=params)
    with pytest.raises(ValueError, match=r"out_specs\[0\] block \(0, 0\) is written at grid "
                       r"points \(0, 0\) and \(0, 1\), which differ along grid dimension 1 "
                       r"marked 'parallel'.*a race.*'arbitrary'"):
        f(np.zeros((64, 256), np.float32))
    # the same map along an 'arbitrary' dimension is a reduction: fine
    ok = pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary"))
    g = copy_call((64, 256), (8, 256), (8, 2), lambda i, j: (i, 0), params=ok)
    x = np.arange(64 * 256, dtype=np.float32).reshape(64, 256)
    np.testing.assert_array_equal(g(x), x)


def test_spec_errors():
    x = np.zeros((64, 256), np.float32)
    with pytest.raises(ValueError, match=r"in_specs\[0\] has block shape \(8,\) of rank 1 for an "
                       r"array of type f32\[64,256\]"):
        copy_call((64, 256), (8,), (8,), lambda i: (i,))(x)
    with pytest.raises(TypeError, match=r"index_map cannot be called with 1 program id"):
        copy_call((64, 256), (8, 256), (8,), lambda i, j: (i, j))(x)
    with pytest.raises(ValueError, match=r"index_map returned 1 block indices but the block "
                       r"shape \(8, 256\) has rank 2"):
        copy_call((64, 256), (8, 256), (8,), lambda i: (i,))(x)
    with pytest.raises(TypeError, match="argument order is \\(block_shape, index_map\\)"):
        pl.BlockSpec(lambda i: (i, 0), (8, 128))


def test_kernel_errors():
    x = np.zeros((8, 128), np.float32)

    def returns(x_ref, o_ref):
        return x_ref[...]
    with pytest.raises(TypeError, match="the kernel returned a value"):
        pl.pallas_call(returns, out_shape=S((8, 128), jnp.float32), interpret=True)(x)

    def bad_dtype(x_ref, o_ref):
        o_ref[...] = x_ref[...].astype(jnp.int32)
    with pytest.raises(TypeError, match=r"cannot store a value of type i32\[8,128\] into "
                       r"ref\[...\] of type f32\[8,128\].*astype\(float32\)"):
        pl.pallas_call(bad_dtype, out_shape=S((8, 128), jnp.float32), interpret=True)(x)

    def ref_as_array(x_ref, o_ref):
        o_ref[...] = jnp.exp(x_ref)
    with pytest.raises(TypeError, match=r"a kernel ref was passed where an array was expected "
                       r"\(e.g. jnp.exp\(x_ref\)\); read it first: x_ref\[...\]"):
        pl.pallas_call(ref_as_array, out_shape=S((8, 128), jnp.float32), interpret=True)(x)

    def oob(x_ref, o_ref):
        o_ref[...] = x_ref[pl.ds(4, 8)]
    with pytest.raises(IndexError,
                       match=r"pl.ds\(4, 8\) is out of bounds for dimension 0 of size 8"):
        pl.pallas_call(oob, out_shape=S((8, 128), jnp.float32), interpret=True)(x)

    @minijax.jit
    def closes_over(y):
        def k(x_ref, o_ref):
            o_ref[...] = x_ref[...] + y
        return pl.pallas_call(k, out_shape=S((8, 128), jnp.float32), interpret=True)(x)
    with pytest.raises(TypeError, match="closes over traced value.*pass them to pallas_call as "
                       "inputs"):
        closes_over(np.ones((8, 128), np.float32))
    with pytest.raises(ValueError, match="only be called inside a pallas_call kernel"):
        pl.program_id(0)


def test_index_map_evaluated_from_its_jaxpr_when_numpy_fails():
    """Index maps are evaluated on all grid points with NumPy; one that only works on traced
    values is evaluated from its jaxpr (jit of vmap) instead, with the same checks."""
    def index_map(i):
        if isinstance(i, np.ndarray):
            raise TypeError("traced values only")
        return (jnp.minimum(i, 8), 0)
    f = copy_call((64, 256), (8, 256), (10,), index_map)
    with pytest.raises(ValueError, match=r"block index \(8, 0\) at grid point \(8,\)"):
        f(np.zeros((64, 256), np.float32))
