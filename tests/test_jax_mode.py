"""The jax mode (``python -m minijax run``, ``minijax.compat.install``) and jax's extension
API, run in subprocesses: each program runs on jax and, in the jax mode, on minijax."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROGRAMS = pathlib.Path(__file__).resolve().parent / "jax_mode_programs"


def _python(*args, code: str | None = None, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, *args] + (["-c", code] if code is not None else [])
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300,
                          cwd=cwd or str(ROOT))


def _ok(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


SCRIPT = """
import sys
import jax, jax.numpy as jnp, jax.experimental.shard_map
import minijax
print(jax.__version__, jax.version.__version__, jax.numpy is minijax.numpy,
      sys.modules['jax.experimental.shard_map'] is minijax.experimental.shard_map,
      minijax.numpy.__spec__.name, sys.argv[1:])
print(float(jax.jit(lambda x: jnp.sin(x) * 2)(1.0)))
try:
    import jax.no_such_module
except ImportError as e:
    print("ImportError", type(e).__name__)
try:
    jax.export.no_such_name
except AttributeError:
    print("AttributeError")
print(not hasattr(jax.interpreters.mlir, "no_such_name"))
print(any("site-packages/jax/" in (getattr(m, "__file__", None) or "")
          for m in list(sys.modules.values())))
"""


def test_run_script(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    out = _ok(_python("-m", "minijax", "run", str(script), "a", "--b")).split("\n")
    assert out[0] == ("0.10.2 0.10.2 True True minijax.numpy ['a', '--b']")
    assert float(out[1]) == pytest.approx(2 * 0.8414709848)
    assert out[2:6] == ["ImportError ModuleNotFoundError", "AttributeError", "True", "False"]


def test_run_module_and_exit_code(tmp_path):
    (tmp_path / "jaxprog.py").write_text(
        "import sys, jax\nprint(jax.__version__, __name__, sys.argv)\nsys.exit(3)\n")
    p = _python("-m", "minijax", "run", "-m", "jaxprog", "x", cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    assert p.stdout.split()[:2] == ["0.10.2", "__main__"]
    assert p.stdout.strip().endswith("'x']")


def test_install_in_process_and_refusal_after_real_jax():
    out = _ok(_python(code="import minijax.compat as c; c.install(); import jax, minijax; "
                           "print(jax.numpy is minijax.numpy, c.installed())"))
    assert out.split() == ["True", "True"]
    p = _python(code="import jax, minijax.compat as c\ntry:\n    c.install()\n"
                     "except RuntimeError as e:\n    print('refused', 'real jax' in str(e))\n"
                     "print(jax.__file__.endswith('site-packages/jax/__init__.py'))")
    assert _ok(p).split() == ["refused", "True", "True"]


def test_off_unless_asked():
    out = _ok(_python(code="import sys, minijax; print('jax' in sys.modules)"))
    assert out.strip() == "False"
    out = _ok(_python("-m", "minijax", "--help"))
    assert "run" in out and "demo" in out


def test_a_primitive_defined_the_jax_way_matches_jax():
    """jit, grad, jvp, vmap, vmap of grad, scan and lowering of a library primitive."""
    prog = str(PROGRAMS / "multiply_add.py")
    want = json.loads(_ok(_python(prog)))
    got = json.loads(_ok(_python("-m", "minijax", "run", prog)))
    assert got == want
    assert want["grad"] == 4.0 and want["vmap"] == [10.0, 11.0, 14.0]


def test_library_imports():
    code = ("import minijax.compat as c; c.install()\n"
            "import optax, jaxtyping, equinox, flax, flax.linen\nprint('ok')")
    assert _ok(_python(code=code)).strip() == "ok"


def test_stub_modules_raise_attribute_error():
    import minijax
    for name in ("export", "ffi", "lib", "memory", "ref"):
        assert not hasattr(getattr(minijax, name), "no_such_name")
    assert not hasattr(minijax.interpreters.ad, "no_such_name")
