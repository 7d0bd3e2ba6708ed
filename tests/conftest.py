"""Shared fixtures: x64 mode toggling, and a jax import for differential tests."""

import pytest

import minijax


@pytest.fixture
def x64():
    """Run the test with 64-bit mode on (in minijax and in jax), then restore."""
    import jax
    prev = minijax.config.minijax_enable_x64
    prev_jax = jax.config.jax_enable_x64
    minijax.config.update("minijax_enable_x64", True)
    jax.config.update("jax_enable_x64", True)
    yield
    minijax.config.update("minijax_enable_x64", prev)
    jax.config.update("jax_enable_x64", prev_jax)
