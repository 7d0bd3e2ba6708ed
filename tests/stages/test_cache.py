"""The persistent compilation cache (minijax_compilation_cache_dir)."""

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.runtime import compilation_cache
from minijax.runtime.executable import compile_count

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROGRAM = textwrap.dedent("""
    import numpy as np
    import minijax, minijax.numpy as jnp
    from minijax.runtime.executable import compile_count
    x = np.linspace(0, 1, 8).astype(np.float32)
    f = minijax.jit(lambda x, y: jnp.sin(x) * y + 1.0)
    g = minijax.jit(lambda x: jnp.tanh(x) * 2, compiler_options={"xla_cpu_enable_fast_math": True})
    out = f(x, 2.0)
    np.testing.assert_allclose(np.asarray(out), np.sin(x) * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(g(x)), np.tanh(x) * 2, rtol=1e-5)
    print("COMPILES", compile_count())
""")


def _run(cache_dir, program=PROGRAM, wait=True):
    env = dict(os.environ, MINIJAX_COMPILATION_CACHE_DIR=str(cache_dir),
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", program], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return proc if not wait else _finish(proc)


def _finish(proc) -> int:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return int(out.split("COMPILES")[1])


def _entries(d):
    return sorted(p for p in os.listdir(d) if p.endswith(".xla"))


@pytest.mark.slow
def test_second_process_compiles_nothing_and_damage_is_repaired(tmp_path):
    assert _run(tmp_path) == 2  # f and g
    entries = _entries(tmp_path)
    assert len(entries) == 2
    assert _run(tmp_path) == 0  # a restart: everything comes from disk
    # Damage one entry (truncated) and overwrite the other with garbage.
    first, second = (tmp_path / e for e in entries)
    first.write_bytes(first.read_bytes()[:100])
    second.write_bytes(b"\x00garbage" * 50)
    assert _run(tmp_path) == 2  # ignored, recompiled...
    assert _entries(tmp_path) == entries
    assert _run(tmp_path) == 0  # ...and replaced by good entries
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.slow
def test_concurrent_writers(tmp_path):
    procs = [_run(tmp_path, wait=False) for _ in range(3)]
    assert all(_finish(p) <= 2 for p in procs)
    assert len(_entries(tmp_path)) == 2
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert _run(tmp_path) == 0


@pytest.fixture
def cache_dir(tmp_path):
    minijax.config.update("minijax_compilation_cache_dir", tmp_path)
    try:
        yield tmp_path
    finally:
        minijax.config.update("minijax_compilation_cache_dir", None)


def test_in_process_hit_options_in_key_and_damaged_entry(cache_dir, caplog):
    x = np.linspace(0, 1, 5).astype(np.float32)
    lowered = minijax.jit(lambda x: jnp.exp(x) - 1).lower(x)
    before = compile_count()
    lowered.compile()
    assert compile_count() == before + 1 and len(_entries(cache_dir)) == 1
    c = lowered.compile()  # same module, same options: loaded from disk
    assert compile_count() == before + 1
    np.testing.assert_allclose(np.asarray(c(x)), np.expm1(x), rtol=1e-5, atol=1e-6)
    lowered.compile({"xla_cpu_enable_fast_math": True})  # options are part of the key
    assert compile_count() == before + 2 and len(_entries(cache_dir)) == 2
    lowered.compile({"xla_cpu_enable_fast_math": True})
    assert compile_count() == before + 2
    path = cache_dir / _entries(cache_dir)[0]
    good = path.read_bytes()
    path.write_bytes(good[:-10] + b"0123456789")  # same size, wrong checksum
    with caplog.at_level(logging.WARNING, logger="minijax"):
        lowered.compile()
        lowered.compile({"xla_cpu_enable_fast_math": True})
    assert any("damaged entry" in r.getMessage() for r in caplog.records)
    assert compile_count() == before + 3
    assert compilation_cache.get(path.name[:-4]) is not None  # replaced by a good entry


def test_key_ignores_locations_but_not_the_program(cache_dir):
    x = np.ones(3, np.float32)
    before = compile_count()
    minijax.jit(lambda x: x * 3).lower(x).compile()
    minijax.jit(lambda x: x * 3).lower(x).compile()  # another line: the same program
    assert compile_count() == before + 1
    minijax.jit(lambda x: x * 4).lower(x).compile()
    assert compile_count() == before + 2


def test_off_by_default(monkeypatch):
    assert minijax.config.minijax_compilation_cache_dir is None
    assert compilation_cache.get("0" * 64) is None
    assert not compilation_cache.put("0" * 64, b"x")
    touched = []
    monkeypatch.setattr(compilation_cache, "get", lambda *a: touched.append(a))
    monkeypatch.setattr(compilation_cache, "put", lambda *a: touched.append(a))
    before = compile_count()
    minijax.jit(lambda x: x * 5.5 - 0.25)(jnp.ones(3))
    assert compile_count() > before and touched == []


def test_unwritable_directory_is_not_an_error(tmp_path):
    target = tmp_path / "file-not-dir"
    target.write_text("")
    minijax.config.update("minijax_compilation_cache_dir", target)
    try:
        f = minijax.jit(lambda x: x - 7)
        assert float(f(1.0)) == -6.0
    finally:
        minijax.config.update("minijax_compilation_cache_dir", None)
