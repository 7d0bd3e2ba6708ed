"""minijax must never import jax: check it in a fresh interpreter (jax is installed)."""

import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Exercise the runtime paths where jaxlib's C++ could import jax behind our back
# (host transfers of fresh executable results, bfloat16 fetches, iteration,
# printing, deletion, DLPack), then look at sys.modules.
_SCRIPT = """
import sys

import minijax.runtime  # noqa: F401
try:
    import minijax  # noqa: F401
except Exception as e:  # the package __init__ may be in flux
    print("note: import minijax failed:", type(e).__name__, e, file=sys.stderr)

import ml_dtypes
import numpy as np

import minijax.runtime as rt

MOD = '''module @jit_f {
  func.func public @main(%a: tensor<3xbf16>, %b: tensor<3xbf16>) -> tensor<3xbf16> {
    %0 = "stablehlo.add"(%a, %b) : (tensor<3xbf16>, tensor<3xbf16>) -> tensor<3xbf16>
    "func.return"(%0) : (tensor<3xbf16>) -> ()
  }
}'''
for dt in ["bool", "int8", "int32", "uint16", "float16", "float32", "complex64",
           ml_dtypes.bfloat16]:
    x = rt.device_put(np.ones((2, 3), dtype=dt))
    np.asarray(x); repr(x); str(x); list(x); x.tolist(); x.copy_to_host_async()
rt.device_put(1.0).item(); rt.device_put(3); rt.device_put([1, 2])
e = rt.compile(MOD)
x = rt.device_put(np.array([1, 2, 3], ml_dtypes.bfloat16))
for _ in range(3):
    (z,) = e.execute([x._buf, x._buf])
    z.copy_to_host_async()
    assert np.asarray(z).tolist() == [2, 4, 6]
    rt.block_until_ready([z, x])
np.from_dlpack(rt.device_put(np.arange(3.0)))
e.hlo_text(); e.cost_analysis(); e.memory_analysis(); e.serialize()
z.delete()
try:
    np.asarray(z)
except RuntimeError:
    pass
bad = sorted(m for m in sys.modules if m == "jax" or m.startswith("jax."))
print("JAX_MODULES", bad)
"""


@pytest.mark.slow
def test_minijax_never_imports_jax():
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_SCRIPT)], check=False,
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "JAX_MODULES []" in proc.stdout, proc.stdout + proc.stderr
