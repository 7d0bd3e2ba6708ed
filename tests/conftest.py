"""Shared fixtures: x64 mode toggling, and a jax import for differential tests.

The suite compiles thousands of small programs, twice each (minijax and jax), and XLA's
LLVM backend takes most of the suite's time doing so. The tests check what minijax hands
to XLA and what comes back, not how hard LLVM optimizes the machine code, so they run
with LLVM's optimization level 0 (``--xla_backend_optimization_level=0``, set before
jaxlib starts; the HLO passes are unchanged, and minijax and jax compile under the same
flags, so comparisons between them are exact as before). Subprocesses inherit it. A
test run with ``MINIJAX_TEST_XLA_OPT=default`` keeps XLA's defaults.
"""

import os

if os.environ.get("MINIJAX_TEST_XLA_OPT") != "default":
    _flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_optimization_level" not in _flags:
        os.environ["XLA_FLAGS"] = (_flags + " --xla_backend_optimization_level=0").strip()

import pytest  # noqa: E402

import minijax  # noqa: E402


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
