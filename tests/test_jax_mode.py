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


def test_print_saved_residuals_like_jax(capsys):
    import re

    import jax.ad_checkpoint
    import jax.numpy as jjnp

    import minijax
    import minijax.numpy as mjnp

    def f(np_):
        def fn(W, x):
            return np_.sum(np_.sin(np_.dot(W, x)))
        return fn

    import numpy as np
    args = (np.ones((3, 3), "float32"), np.ones(3, "float32"))
    jax.ad_checkpoint.print_saved_residuals(f(jjnp), *args)
    want = capsys.readouterr().out
    minijax.ad_checkpoint.print_saved_residuals(f(mjnp), *args)
    got = capsys.readouterr().out
    # jax adds the column to the line (file.py:12:19) and names the function by its
    # qualified name; the rest is the same
    def norm(text):
        return re.sub(r":(\d+)(:\d+)? \(.*\)$", r":\1", text, flags=re.M)
    assert norm(want) == norm(got) and "output of cos from" in got
    assert got.splitlines()[0] == "f32[3,3] from the argument W"


def test_config_flags_from_the_command_line():
    code = ("import jax; jax.config.config_with_absl(); "
            "print(jax.config.jax_enable_x64, jax.config.jax_numpy_rank_promotion)")
    script = ("import sys, minijax.compat as c; c.install(); sys.argv += ['--jax_enable_x64', "
              "'--jax_numpy_rank_promotion=raise', 'other']\n" + code)
    assert _ok(_python(code=script)).split() == ["True", "raise"]


def test_monitoring_and_api_util():
    import minijax
    seen = []

    def listener(event, **kw):
        seen.append((event, kw))
    minijax.monitoring.register_event_listener(listener)
    try:
        minijax.monitoring.record_event("/x", a=1)
    finally:
        minijax.monitoring.unregister_event_listener(listener)
    minijax.monitoring.record_event("/y")
    assert seen == [("/x", {"a": 1})]

    from minijax import api_util, tree_util
    from minijax.extend import linear_util as lu
    args = ((1.0, 2.0), {"k": 3.0})
    leaves, tree = tree_util.tree_flatten(args)
    fun, out_tree = api_util.flatten_fun(
        lu.wrap_init(lambda a, b, k: {"s": a + b + k}), tree)
    assert fun.call_wrapped(*leaves) == [6.0]
    assert tree_util.tree_unflatten(out_tree(), [1]) == {"s": 1}


def test_equinox_readme_mlp_trains_to_jax_losses():
    """equinox's README MLP with optax's adam, 5 steps on synthetic data: the losses agree
    with jax's to 1e-6 (relative; measured: within one float32 ulp)."""
    import numpy as np
    prog = str(PROGRAMS / "equinox_mlp.py")
    want = json.loads(_ok(_python(prog)))
    got = json.loads(_ok(_python("-m", "minijax", "run", prog)))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert want[-1] < want[0]


def test_experimental_modules_match_jax():
    """jax.experimental.ode/sparse/mesh_utils/serialize_executable/compilation_cache in
    one jax program: the same results under jax and in the jax mode."""
    import numpy as np
    prog = str(PROGRAMS / "experimental_modules.py")
    want = json.loads(_ok(_python(prog)))
    got = json.loads(_ok(_python("-m", "minijax", "run", prog)))
    assert got.keys() == want.keys()
    for key in want:
        if key in ("trees", "mesh", "mesh_shape", "sparse"):
            assert got[key] == want[key], key
        else:
            np.testing.assert_allclose(got[key], want[key], rtol=1e-5, err_msg=key)


def test_flax_nnx_and_linen_train_to_jax_losses():
    """flax.nnx MLP and CNN (Rngs, Linear, Conv, BatchNorm, Dropout, adamw through
    nnx.Optimizer, nnx.jit) and a flax.linen MLP (dropout rngs, batch statistics), a few
    steps each on synthetic data: the losses and the key bits equal jax's exactly
    (measured: bit for bit); nnx.vmap/split_rngs/scan/eval_shape give jax's results."""
    prog = str(PROGRAMS / "flax_train.py")
    want = json.loads(_ok(_python(prog)))
    got = json.loads(_ok(_python("-m", "minijax", "run", prog)))
    assert want.pop("array_type") == "jaxlib._jax"
    assert got.pop("array_type") == "minijax.runtime.array"
    assert got == want
    assert [[], "key<fry>"] in want["nnx_transforms"]["abstract"]
    for name in ("nnx_mlp", "nnx_cnn", "linen_mlp"):
        assert want[name][-2] < want[name][0], name  # they do train


@pytest.mark.slow
def test_the_readme_flax_optax_example_gives_jaxs_losses():
    """examples/flax_optax_train.py (shown in the README): the same printed losses on jax
    and under ``python -m minijax run``, and the jax-mode run computed with minijax."""
    pytest.importorskip("flax")
    prog = str(PROGRAMS.parent.parent / "examples" / "flax_optax_train.py")
    want, got = _ok(_python(prog)).splitlines(), _ok(_python("-m", "minijax", "run", prog))
    got = got.splitlines()
    assert want[-1] == "ran on jaxlib" and got[-1] == "ran on minijax"
    assert got[:-1] == want[:-1] and len(want) == 5
    first, last = (float(line.split()[-1]) for line in (want[0], want[-2]))
    assert last < first  # it trains
