"""Helpers shared by the differential tests of minijax.numpy against jax.numpy."""

import contextlib

import jax
import numpy as np

import minijax


@contextlib.contextmanager
def x64_mode(on: bool):
    """64-bit mode ``on`` in minijax and in jax for the duration of the block."""
    prev, prev_jax = minijax.config.minijax_enable_x64, jax.config.jax_enable_x64
    minijax.config.update("minijax_enable_x64", on)
    jax.config.update("jax_enable_x64", on)
    try:
        yield
    finally:
        minijax.config.update("minijax_enable_x64", prev)
        jax.config.update("jax_enable_x64", prev_jax)


def assert_same(got, want, rtol=1e-5, atol=1e-6, check_weak=True):
    """``got`` (minijax) equals ``want`` (jax): pytrees of arrays with equal dtypes, shapes,
    weak types and values (to a tolerance for inexact dtypes; NaNs in the same places)."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol, atol, check_weak)
        return
    w = np.asarray(want)
    g = np.asarray(got)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    assert g.shape == w.shape, (g.shape, w.shape)
    if check_weak and hasattr(want, "weak_type") and hasattr(got, "aval"):
        assert got.aval.weak_type == want.weak_type, "weak type"
    if g.dtype.kind in "fc" or g.dtype == np.dtype("bfloat16"):
        np.testing.assert_allclose(g.astype(np.complex128 if g.dtype.kind == "c" else
                                            np.float64),
                                   w.astype(np.complex128 if w.dtype.kind == "c" else
                                            np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)
