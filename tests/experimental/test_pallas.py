"""Pallas in interpret mode: classic kernels against NumPy and jax's Pallas, under jit/vmap.

The kernels are written once against a (pl, jnp, lax) namespace and run by both
minijax and jax (``interpret=True``), so the semantics (grid order, block
indexing, scratch persistence, ``pl.when``) are compared directly.
"""

import warnings

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.experimental import pallas as jpl
from jax.experimental.pallas import tpu as jpltpu

import minijax
import minijax.experimental.pallas as pl
import minijax.experimental.pallas.tpu as pltpu
import minijax.numpy as jnp
from minijax import lax

MINI = (pl, pltpu, jnp, lax, minijax.ShapeDtypeStruct)
JAX = (jpl, jpltpu, jjnp, jax.lax, jax.ShapeDtypeStruct)
rng = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# ---- kernels, written against either library ---------------------------------------------

def make_add(lib, shape, block, interpret=True):
    pl_, _, _, _, S = lib

    def add_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...] * 2.0

    grid = (shape[0] // block[0], shape[1] // block[1])
    spec = pl_.BlockSpec(block, lambda i, j: (i, j))
    return pl_.pallas_call(add_kernel, out_shape=S(shape, np.float32), grid=grid,
                           in_specs=[spec, spec], out_specs=spec, interpret=interpret)


def make_matmul(lib, m, k, n, bm=32, bk=128, bn=128, interpret=True):
    pl_, pltpu_, jnp_, _, S = lib

    def matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
        @pl_.when(pl_.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp_.zeros_like(acc_ref)

        acc_ref[...] += jnp_.dot(x_ref[...], y_ref[...])

        @pl_.when(pl_.program_id(2) == pl_.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...]

    return pl_.pallas_call(
        matmul_kernel, out_shape=S((m, n), np.float32), grid=(m // bm, n // bn, k // bk),
        in_specs=[pl_.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl_.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl_.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu_.VMEM((bm, bn), np.float32)],
        compiler_params=pltpu_.CompilerParams(
            dimension_semantics=("parallel", "parallel", "arbitrary")),
        interpret=interpret)


def make_softmax(lib, rows, cols, block_rows=8, interpret=True):
    pl_, _, jnp_, _, S = lib

    def softmax_kernel(x_ref, o_ref):
        x = x_ref[...]
        e = jnp_.exp(x - jnp_.max(x, axis=-1, keepdims=True))
        o_ref[...] = e / jnp_.sum(e, axis=-1, keepdims=True)

    spec = pl_.BlockSpec((block_rows, cols), lambda i: (i, 0))
    return pl_.pallas_call(softmax_kernel, out_shape=S((rows, cols), np.float32),
                           grid=(rows // block_rows,), in_specs=[spec], out_specs=spec,
                           interpret=interpret)


def make_loop(lib, rows=32, cols=128, interpret=True):
    """A kernel with lax.fori_loop writing row groups of the output ref by pl.ds."""
    pl_, _, jnp_, lax_, S = lib

    def loop_kernel(x_ref, o_ref):
        def body(i, c):
            o_ref[pl_.ds(i * 8, 8), :] = x_ref[pl_.ds(i * 8, 8), :] * 2.0 + c
            return c + 1.0
        lax_.fori_loop(0, rows // 8, body, 0.0)

    return pl_.pallas_call(loop_kernel, out_shape=S((rows, cols), np.float32),
                           interpret=interpret)


def softmax_np(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# ---- classic kernels ---------------------------------------------------------------------

@pytest.mark.parametrize("shape,block", [((64, 256), (8, 128)), ((16, 128), (16, 128))])
def test_elementwise_add(shape, block):
    x, y = rand(*shape), rand(*shape)
    f = make_add(MINI, shape, block)
    want = x + 2 * y
    np.testing.assert_allclose(f(x, y), want, rtol=1e-6)
    np.testing.assert_allclose(minijax.jit(f)(x, y), want, rtol=1e-6)
    np.testing.assert_allclose(minijax.jit(f)(x, y), make_add(JAX, shape, block)(x, y),
                               rtol=1e-6)
    xs = rand(3, *shape)
    np.testing.assert_allclose(minijax.jit(minijax.vmap(f, in_axes=(0, None)))(xs, y),
                               xs + 2 * y, rtol=1e-6)


def test_tiled_matmul_with_accumulator():
    m, k, n = 64, 256, 256
    x, y = rand(m, k), rand(k, n)
    f = make_matmul(MINI, m, k, n)
    out = minijax.jit(f)(x, y)
    np.testing.assert_allclose(out, x @ y, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out, make_matmul(JAX, m, k, n)(x, y), rtol=1e-4, atol=1e-4)
    xs = rand(2, m, k)
    np.testing.assert_allclose(minijax.jit(minijax.vmap(f, in_axes=(0, None)))(xs, y),
                               xs @ y, rtol=1e-4, atol=1e-4)
    ys = rand(2, k, n)
    np.testing.assert_allclose(minijax.vmap(f)(xs, ys), xs @ ys, rtol=1e-4, atol=1e-4)


def test_softmax_per_row():
    x = rand(64, 128) * 3
    f = make_softmax(MINI, 64, 128)
    np.testing.assert_allclose(minijax.jit(f)(x), softmax_np(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(minijax.jit(f)(x), make_softmax(JAX, 64, 128)(x), rtol=1e-5,
                               atol=1e-7)
    xs = rand(2, 64, 128)
    np.testing.assert_allclose(minijax.jit(minijax.vmap(f))(xs), softmax_np(xs), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("n", [1000, 1024])
def test_masked_tail(n):
    """A 1-D array cut into 256-element blocks; the last block is partial and masked."""
    def tail_kernel(x_ref, o_ref):
        idx = pl.program_id(0) * 256 + lax.broadcasted_iota(jnp.int32, (256,), 0)
        mask = idx < n
        v = pl.load(x_ref, pl.ds(0, 256), mask=mask, other=0.0)
        pl.store(o_ref, pl.ds(0, 256), jnp.sqrt(jnp.abs(v)) + 1.0, mask=mask)

    spec = pl.BlockSpec((256,), lambda i: (i,))
    f = pl.pallas_call(tail_kernel, out_shape=minijax.ShapeDtypeStruct((n,), jnp.float32),
                       grid=(pl.cdiv(n, 256),), in_specs=[spec], out_specs=spec,
                       interpret=True)
    x = rand(n)
    want = np.sqrt(np.abs(x)) + 1
    out = minijax.jit(f)(x)
    assert out.shape == (n,) and out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-6)
    xs = rand(3, n)
    np.testing.assert_allclose(minijax.jit(minijax.vmap(f))(xs), np.sqrt(np.abs(xs)) + 1,
                               rtol=1e-6)


def test_fori_loop_in_kernel():
    x = rand(32, 128)
    f = make_loop(MINI)
    want = x * 2 + np.repeat(np.arange(4, dtype=np.float32), 8)[:, None]
    np.testing.assert_allclose(f(x), want, rtol=1e-6)
    np.testing.assert_allclose(minijax.jit(f)(x), want, rtol=1e-6)
    np.testing.assert_allclose(minijax.jit(f)(x), make_loop(JAX)(x), rtol=1e-6)
    jaxpr = str(minijax.make_jaxpr(f)(x))
    assert "pallas_call[" in jaxpr and "scan[" in jaxpr and "swap[indexer=[pl.ds(?, 8), :]]" \
        in jaxpr


def test_when_inside_nested_fori_loops_and_pytree_inputs():
    def kernel(x_ref, yz, o_ref):
        y_ref, z_ref = yz

        def outer(i, c):
            @pl.when(i % 2 == 0)
            def _():
                def inner(j, c2):
                    cols = pl.ds(j * 128, 128)
                    o_ref[pl.ds(i, 1), cols] = (x_ref[pl.ds(i, 1), cols]
                                                + y_ref[pl.ds(i, 1), cols] * z_ref[i, cols])
                    return c2
                lax.fori_loop(0, 2, inner, 0)

            @pl.when(i % 2 == 1)
            def _():
                o_ref[i, :] = jnp.zeros((256,), jnp.float32) + c
            return c + 1.0
        lax.fori_loop(0, 8, outer, 0.0)

    spec = pl.BlockSpec((8, 256), lambda: (0, 0))
    f = pl.pallas_call(kernel, out_shape=minijax.ShapeDtypeStruct((8, 256), jnp.float32),
                       in_specs=[spec, (spec, spec)], interpret=True)
    x, y, z = rand(8, 256), rand(8, 256), rand(8, 256)
    want = x + y * z
    want[1::2] = np.arange(1, 8, 2, dtype=np.float32)[:, None]
    np.testing.assert_allclose(minijax.jit(f)(x, (y, z)), want, rtol=1e-6, atol=1e-6)


def test_while_loop_and_cond_in_kernel():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

        def body(c):
            o_ref[...] = o_ref[...] * 2.0
            return c + 1
        lax.while_loop(lambda c: c < 3, body, 0)

        def bump():
            o_ref[0] = o_ref[0] + 100.0
        lax.cond(pl.program_id(0) == 1, bump, lambda: None)

    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    f = pl.pallas_call(kernel, out_shape=minijax.ShapeDtypeStruct((16, 128), jnp.float32),
                       grid=(2,), in_specs=[spec], out_specs=spec, interpret=True)
    x = rand(16, 128)
    want = x * 8
    want[8] += 100
    np.testing.assert_allclose(minijax.jit(f)(x), want, rtol=1e-6)


def test_pytree_outputs_and_aliases():
    S = minijax.ShapeDtypeStruct

    def kernel(x_ref, y_ref, outs):
        outs["sum"][...] = x_ref[...] + y_ref[...]
        outs["diff"][...] = x_ref[...] - y_ref[...]

    f = pl.pallas_call(kernel, out_shape={"sum": S((16, 128), jnp.float32),
                                          "diff": S((16, 128), jnp.float32)}, interpret=True)
    x, y = rand(16, 128), rand(16, 128)
    r = minijax.jit(f)(x, y)
    assert set(r) == {"sum", "diff"}
    np.testing.assert_allclose(r["sum"], x + y)
    np.testing.assert_allclose(r["diff"], x - y)

    def bump(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1.0
    spec = pl.BlockSpec((8, 128), lambda i: (0, 0))
    g = pl.pallas_call(bump, out_shape=S((16, 128), jnp.float32), grid=(1,), in_specs=[spec],
                       out_specs=spec, input_output_aliases={0: 0}, interpret=True)
    want = x.copy()
    want[:8] += 1   # only block 0 is written; the rest keeps the aliased input
    np.testing.assert_allclose(minijax.jit(g)(x), want)
    np.testing.assert_allclose(minijax.vmap(g)(np.stack([x, y])),
                               np.stack([want, np.concatenate([y[:8] + 1, y[8:]])]))


def test_squeezed_block_dims_and_program_ids():
    def kernel(x_ref, o_ref):
        assert x_ref.shape == (16, 128)
        o_ref[...] = x_ref[...] * 2.0 + pl.program_id(0).astype(jnp.float32)

    spec = pl.BlockSpec((None, 16, 128), lambda b: (b, 0, 0))
    x = rand(4, 16, 128)
    f = pl.pallas_call(kernel, out_shape=minijax.ShapeDtypeStruct(x.shape, jnp.float32),
                       grid=(4,), in_specs=[spec], out_specs=spec, interpret=True)
    want = 2 * x + np.arange(4, dtype=np.float32)[:, None, None]
    np.testing.assert_allclose(minijax.jit(f)(x), want, rtol=1e-6)
    # vmap of vmap: program_id(0) still refers to the kernel's own grid dimension
    xs = rand(2, 3, 4, 16, 128)
    np.testing.assert_allclose(minijax.jit(minijax.vmap(minijax.vmap(f)))(xs),
                               2 * xs + np.arange(4, dtype=np.float32)[:, None, None],
                               rtol=1e-6)


def test_lowered_text_is_one_loop_with_dynamic_slices():
    shape = (64, 256)
    f = make_add(MINI, shape, (8, 128))
    x = rand(*shape)
    text = minijax.jit(f).lower(x, x).as_text()
    assert text.count("stablehlo.while") == 1
    assert "stablehlo.dynamic_slice" in text and "stablehlo.dynamic_update_slice" in text
    # vmap adds a grid dimension: still one loop, no Python unrolling
    text = minijax.jit(minijax.vmap(f)).lower(rand(5, *shape), rand(5, *shape)).as_text()
    assert text.count("stablehlo.while") == 1
    assert "5x64x256" in text


def test_interpret_mode_warns_once_without_tpu():
    from minijax.experimental.pallas import _pallas_call
    _pallas_call._warned_backends.clear()

    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...]
    f = pl.pallas_call(copy, out_shape=minijax.ShapeDtypeStruct((8, 128), jnp.float32))
    x = rand(8, 128)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(f(x), x)
        np.testing.assert_array_equal(f(x), x)
    msgs = [str(m.message) for m in w if "interpret mode" in str(m.message)]
    assert len(msgs) == 1 and "cpu backend has no Pallas lowering" in msgs[0]


def test_uninitialized_output_is_nan():
    """Blocks the kernel never writes hold the interpreter's 'uninitialized' value."""
    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = x_ref[...]
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    f = pl.pallas_call(kernel, out_shape=minijax.ShapeDtypeStruct((16, 128), jnp.float32),
                       grid=(2,), in_specs=[spec], out_specs=spec, interpret=True)
    out = np.asarray(minijax.jit(f)(rand(16, 128)))
    assert np.isfinite(out[:8]).all() and np.isnan(out[8:]).all()


def test_grad_is_a_clear_error():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2
    f = pl.pallas_call(k, out_shape=minijax.ShapeDtypeStruct((8, 128), jnp.float32),
                       interpret=True)
    with pytest.raises(NotImplementedError, match="custom_vjp"):
        minijax.grad(lambda x: f(x).sum())(rand(8, 128))
