"""In the jax mode, ``jax._src.state.types.AbstractRef`` (flax.nnx tells refs from
arrays with it: ``isinstance(jax.typeof(x), AbstractRef)``) is the type of minijax's
refs, as in jax: the same program prints the same under jax and ``minijax run``."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

PROGRAM = """
import jax, jax.numpy as jnp
from jax._src.state.types import AbstractRef
r = jax.new_ref(jnp.arange(3.0))
print(isinstance(jax.typeof(r), AbstractRef), isinstance(jax.typeof(jnp.ones(2)), AbstractRef),
      isinstance(r, jax.Ref), isinstance(r, jax.Array))
"""


def _run(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                       timeout=300, cwd=str(ROOT))
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


def test_abstract_ref_is_the_type_of_refs_like_jax(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    want = _run(str(prog))
    assert want == "True False True False\n"
    assert _run("-m", "minijax", "run", str(prog)) == want
