"""A fast slice of optax's and chex's own test suites (shipped in their wheels), run on
minijax through the jax mode (``python -m minijax run -m pytest``), one subprocess per
library. The full suites take many minutes; these files were picked to be small and to
cover what the libraries lean on: optax's transforms, a loss family, dtype casting of
trees and schedule-free (half-precision conds, buffer donation); chex's shape-dimension
checks, deprecation warnings, telling jitted functions apart, and collectives under
fake_pmap. A file that passes on jax must pass here."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# A test the slice runs beside the library's files: it fails unless ``import jax`` gave
# minijax, so a slice cannot pass by running on the real jax.
MODE_CHECK = """
def test_runs_on_minijax():
    import jax
    import minijax
    assert jax.numpy is minijax.numpy and jax.jit is minijax.jit
"""

SLICES = {
    "optax": (["_src/transform_test.py", "losses/_regression_test.py",
               "tree_utils/_casting_test.py", "contrib/_schedule_free_test.py"], 75),
    "chex": (["_src/dimensions_test.py", "_src/warnings_test.py",
              "_src/asserts_internal_test.py",
              "_src/fake_test.py::PmapFakeTest::test_parallel_ops_equivalence"], 50),
}


def _counts(text: str) -> dict[str, int]:
    tail = text.strip().splitlines()[-1] if text.strip() else ""
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|errors?|skipped)", tail)}


@pytest.mark.parametrize("library", sorted(SLICES))
def test_library_slice_passes_in_jax_mode(library, tmp_path):
    module = pytest.importorskip(library)
    files, at_least = SLICES[library]
    base = pathlib.Path(module.__file__).parent
    paths = [str(base / f) for f in files]
    check = tmp_path / "test_mode_check.py"
    check.write_text(MODE_CHECK)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # cwd outside the repository: the repo's pytest settings (testpaths, timeouts) stay out
    p = subprocess.run([sys.executable, "-m", "minijax", "run", "-m", "pytest", "-q", "-x",
                        "-p", "no:cacheprovider", str(check), *paths],
                       capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    counts = _counts(p.stdout)
    assert counts.get("passed", 0) >= at_least + 1, out[-2000:]
    assert not counts.get("failed") and not counts.get("error") and not counts.get("errors")
