"""The persistent compilation cache (minijax_compilation_cache_dir)."""

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

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
    minijax.clear_caches()  # the in-memory executable cache answers first
    c = lowered.compile()  # same module, same options: loaded from disk
    assert compile_count() == before + 1
    np.testing.assert_allclose(np.asarray(c(x)), np.expm1(x), rtol=1e-5, atol=1e-6)
    lowered.compile({"xla_cpu_enable_fast_math": True})  # options are part of the key
    assert compile_count() == before + 2 and len(_entries(cache_dir)) == 2
    minijax.clear_caches()
    lowered.compile({"xla_cpu_enable_fast_math": True})
    assert compile_count() == before + 2
    path = cache_dir / _entries(cache_dir)[0]
    good = path.read_bytes()
    path.write_bytes(good[:-10] + b"0123456789")  # same size, wrong checksum
    with caplog.at_level(logging.WARNING, logger="minijax"):
        minijax.clear_caches()
        lowered.compile()
        minijax.clear_caches()
        lowered.compile({"xla_cpu_enable_fast_math": True})
    assert any("checksum mismatch" in r.getMessage() for r in caplog.records)
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


def test_module_not_parsed_in_python_per_cached_compile(cache_dir, monkeypatch):
    from minijax.lowering import mlir
    from minijax.runtime.backend import get_backend
    parsed, compiled = [], []
    real_parse, client = mlir.parse, get_backend().client
    real_compile = client.compile_and_load
    monkeypatch.setattr(mlir, "parse", lambda text: parsed.append(text) or real_parse(text))
    monkeypatch.setattr(type(client), "compile_and_load",
                        lambda self, m, *a: compiled.append(type(m)) or real_compile(m, *a))
    x = np.arange(3, dtype=np.float32)
    f = minijax.jit(lambda x: jnp.cos(x) * 5)
    np.testing.assert_allclose(np.asarray(f(x)), np.cos(x) * 5, rtol=1e-6)
    # the key's text is printed from the builder (lowering/pretty.py): nothing is
    # parsed in Python, and XLA parses the module text once, itself
    assert parsed == [] and compiled == [str]
    assert len(_entries(cache_dir)) == 1
    # a module the printer does not spell is parsed once: key and XLA's input
    parsed.clear()
    compiled.clear()
    g = minijax.jit(lambda x: x * 1.2345678)
    np.testing.assert_allclose(np.asarray(g(x)), x * np.float32(1.2345678), rtol=1e-6)
    assert len(parsed) == 1 and compiled == [type(real_parse(parsed[0]))]
    assert len(_entries(cache_dir)) == 2


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


# ---- entries that are not what they seem ---------------------------------------------------------

def _recorded_key(path) -> str:
    data = path.read_bytes()
    return data[len(compilation_cache._MAGIC):len(compilation_cache._MAGIC) + 64].decode()


def test_entry_of_another_key_is_ignored_and_replaced(cache_dir, caplog):
    x = np.linspace(0, 1, 5).astype(np.float32)
    f = minijax.jit(lambda x: x * 3).lower(x)
    g = minijax.jit(lambda x: x + 100).lower(x)
    f.compile()
    (f_entry,) = [cache_dir / e for e in _entries(cache_dir)]
    g.compile()
    (g_entry,) = [cache_dir / e for e in _entries(cache_dir) if e != f_entry.name]
    f_entry.write_bytes(g_entry.read_bytes())  # f's file now holds g's entry
    before = compile_count()
    minijax.clear_caches()  # the in-memory executable cache answers first
    with caplog.at_level(logging.WARNING, logger="minijax"):
        out = f.compile()(x)
    np.testing.assert_allclose(np.asarray(out), x * 3)  # not g's x + 100
    assert compile_count() == before + 1
    assert any("records the key" in r.getMessage() for r in caplog.records)
    assert _recorded_key(f_entry) == f_entry.name[:-4]  # replaced by f's own entry
    f.compile()
    assert compile_count() == before + 1


def test_entry_whose_executable_has_other_types_is_not_used(cache_dir, caplog):
    x = np.linspace(0, 1, 5).astype(np.float32)
    f = minijax.jit(lambda x: x * 3).lower(x)
    f.compile()
    (f_entry,) = _entries(cache_dir)
    g = minijax.jit(lambda x: x[:2]).lower(x).compile()
    # A well-formed entry under f's key (right key, right checksum) holding g's
    # executable, which returns f32[2] where f returns f32[5].
    assert compilation_cache.put(f_entry[:-4], g.runtime_executable().serialize())
    before = compile_count()
    minijax.clear_caches()  # the in-memory executable cache answers first
    with caplog.at_level(logging.WARNING, logger="minijax"):
        out = f.compile()(x)
    np.testing.assert_allclose(np.asarray(out), x * 3)
    assert compile_count() == before + 1
    assert any("result types are (float32[2])" in r.getMessage() for r in caplog.records)


ODD_FILES = textwrap.dedent("""
    import logging, os, resource, time
    import numpy as np
    import minijax
    from minijax.runtime import compilation_cache
    from minijax.runtime.executable import compile_count

    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    logging.getLogger("minijax").addHandler(handler)
    directory = os.environ["MINIJAX_COMPILATION_CACHE_DIR"]
    x = np.arange(4, dtype=np.float32)
    minijax.jit(lambda x: x + 1)(x)
    # An unbounded read of /dev/zero fails here (MemoryError) instead of taking the machine.
    vm_data = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
                   if line.startswith("VmData:"))
    resource.setrlimit(resource.RLIMIT_DATA, (vm_data + (1 << 30), resource.RLIM_INFINITY))
    for i, kind in enumerate(["fifo", "symlink to /dev/zero", "directory"]):
        lowered = minijax.jit(lambda x, i=i: x * 2 - i).lower(x)
        before = set(os.listdir(directory))
        lowered.compile()
        (name,) = set(os.listdir(directory)) - before
        path = os.path.join(directory, name)
        os.unlink(path)
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "directory":
            os.mkdir(path)
        else:
            os.symlink("/dev/zero", path)
        del messages[:]
        compiles, start = compile_count(), time.monotonic()
        minijax.clear_caches()  # the in-memory executable cache answers first
        out = lowered.compile()(x)
        assert time.monotonic() - start < 10, kind
        np.testing.assert_array_equal(np.asarray(out), x * 2 - i)
        assert compile_count() == compiles + 1, kind  # ignored: compiled again
        assert any(name in m for m in messages), (kind, messages)
        if kind == "directory":  # it cannot be replaced: the failed write is logged
            assert any("cannot write entry" in m for m in messages), messages
        else:  # replaced by a good entry
            assert os.path.isfile(path) and not os.path.islink(path), kind
            assert compilation_cache.get(name[:-4]) is not None, kind
        print("OK", kind)
""")


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/proc/self/status"),
                    reason="needs FIFOs, /dev/zero and /proc")
def test_odd_files_named_like_entries(tmp_path):
    """A FIFO (which blocks a plain open), a symlink to /dev/zero (endless) and a
    directory where an entry should be: ignored quickly, then replaced (one process,
    bounded in time and memory)."""
    env = dict(os.environ, MINIJAX_COMPILATION_CACHE_DIR=str(tmp_path),
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", ODD_FILES], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode >= 0, f"killed by {signal.Signals(-proc.returncode).name}"
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["OK", "fifo", "OK", "symlink", "to", "/dev/zero", "OK",
                                   "directory"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="needs root to give a file to another user")
def test_entry_owned_by_another_user_is_ignored(cache_dir, caplog):
    x = np.arange(3, dtype=np.float32)
    lowered = minijax.jit(lambda x: x + 0.5).lower(x)
    lowered.compile()
    (name,) = _entries(cache_dir)
    os.chown(cache_dir / name, 12345, 12345)
    with caplog.at_level(logging.WARNING, logger="minijax"):
        assert compilation_cache.get(name[:-4]) is None
    assert any("owned by another user (uid 12345)" in r.getMessage() for r in caplog.records)


def test_odd_paths_are_logged_not_raised(caplog):
    minijax.config.update("minijax_compilation_cache_dir", "/tmp/minijax\0cache")
    try:
        with caplog.at_level(logging.WARNING, logger="minijax"):
            f = minijax.jit(lambda x: x * 11 + 2)
            assert float(f(1.0)) == 13.0
            assert compilation_cache.get("0" * 64) is None
            assert not compilation_cache.put("0" * 64, b"payload")
    finally:
        minijax.config.update("minijax_compilation_cache_dir", None)
    messages = [r.getMessage() for r in caplog.records]
    assert any("null byte" in m for m in messages), messages


def test_bad_keys_are_logged_not_raised(cache_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="minijax"):
        assert compilation_cache.get("../../etc/passwd") is None
        assert not compilation_cache.put("../escape", b"payload")
    assert sum("64 lowercase hex digits" in r.getMessage() for r in caplog.records) == 2
    assert os.listdir(cache_dir) == []


def test_directory_writable_by_others_is_named_once(tmp_path, caplog):
    shared, sticky = tmp_path / "shared", tmp_path / "sticky"
    shared.mkdir()
    sticky.mkdir()
    shared.chmod(0o777)
    sticky.chmod(0o1777)
    try:
        with caplog.at_level(logging.WARNING, logger="minijax"):
            for directory in (shared, sticky):
                minijax.config.update("minijax_compilation_cache_dir", directory)
                compilation_cache.put("1" * 64, b"one")
                compilation_cache.put("2" * 64, b"two")
                assert compilation_cache.get("1" * 64) == b"one"
    finally:
        minijax.config.update("minijax_compilation_cache_dir", None)
    warnings = [m for m in (r.getMessage() for r in caplog.records)
                if "writable by other users" in m]
    assert len(warnings) == 1 and str(shared) in warnings[0] and "mode 777" in warnings[0]


# ---- the size limit ------------------------------------------------------------------------------

@pytest.fixture
def max_size():
    def set_limit(n):
        minijax.config.update("minijax_compilation_cache_max_size", n)
    yield set_limit
    minijax.config.update("minijax_compilation_cache_max_size", 1 << 30)


def test_default_limit_is_one_gib():
    assert minijax.config.minijax_compilation_cache_max_size == 1 << 30
    assert compilation_cache.max_size() == 1 << 30


def test_size_limit_evicts_least_recently_used(cache_dir, max_size):
    entry = compilation_cache._HEAD + 1000
    max_size(3 * entry)
    keys = [c * 64 for c in "abcd"]
    now = time.time()
    for i, k in enumerate(keys[:3]):
        assert compilation_cache.put(k, bytes([i]) * 1000)
        os.utime(cache_dir / (k + ".xla"), (now - 300 + i, now - 300 + i))  # a oldest, c newest
    stale = cache_dir / ".0123456789abcdef-dead_x1z.tmp"  # left by a writer that died long ago
    stale.write_bytes(compilation_cache._MAGIC)
    os.utime(stale, (now - 7200, now - 7200))
    assert compilation_cache.get(keys[0]) == bytes([0]) * 1000  # a hit: a is now the newest
    assert compilation_cache.put(keys[3], b"d" * 1000)  # over the limit: b goes
    assert [e[0] for e in _entries(cache_dir)] == ["a", "c", "d"]
    assert not stale.exists()
    assert compilation_cache.get(keys[1]) is None
    # An entry bigger than the whole limit is not written (nothing is evicted for it).
    assert not compilation_cache.put("e" * 64, b"e" * (3 * entry))
    assert [e[0] for e in _entries(cache_dir)] == ["a", "c", "d"]
    max_size(-1)  # no limit
    for k in ("e" * 64, "f" * 64):
        assert compilation_cache.put(k, b"x" * 5000)
    assert len(_entries(cache_dir)) == 5
    max_size(0)  # the cache is off
    assert compilation_cache.cache_dir() is None
    assert compilation_cache.get(keys[0]) is None and not compilation_cache.put("9" * 64, b"")


def test_size_limit_applies_to_compiled_entries(cache_dir, max_size):
    x = np.ones(4, np.float32)
    minijax.jit(lambda x: x * 2).lower(x).compile()
    (first,) = _entries(cache_dir)
    size = (cache_dir / first).stat().st_size
    max_size(int(size * 1.5))  # room for one entry
    os.utime(cache_dir / first, (time.time() - 60,) * 2)
    minijax.jit(lambda x: x * 4).lower(x).compile()
    entries = _entries(cache_dir)
    assert len(entries) == 1 and entries != [first]


def test_eviction_touches_only_the_caches_own_files(cache_dir, max_size):
    """Files the cache did not write -- other names, or an entry's name without the
    magic -- are neither counted nor evicted, however old; nor are odd temporary files."""
    entry = compilation_cache._HEAD + 1000
    max_size(2 * entry)
    old = time.time() - 7200
    mine = {"foo.xla": b"user data" * 500, "9" * 64 + ".xla": b"not an entry" * 500,
            "notes.tmp": b"x", ".0123456789abcdef-user.tmp.bak": b"x",
            ".0123456789abcdef-user_1.tmp": b"someone else's temporary file"}
    for name, data in mine.items():
        (cache_dir / name).write_bytes(data)
        os.utime(cache_dir / name, (old, old))
    keys = [c * 64 for c in "abc"]
    for i, k in enumerate(keys):
        assert compilation_cache.put(k, bytes([i]) * 1000)
        os.utime(cache_dir / (k + ".xla"), (old + 10 * i,) * 2)
    # Only a's entry went: the user's files were not counted towards the limit.
    assert sorted(os.listdir(cache_dir)) == sorted([*mine, keys[1] + ".xla", keys[2] + ".xla"])
    for name, data in mine.items():
        assert (cache_dir / name).read_bytes() == data


def test_junk_named_like_an_entry_is_refused_after_its_header(cache_dir, monkeypatch, caplog):
    """A 900 MB file (sparse) named like an entry, within the size limit: refused
    after reading the header, not read in full; it is replaced by the next write."""
    key = "7" * 64
    junk = cache_dir / (key + ".xla")
    with open(junk, "wb") as f:
        f.truncate(900 << 20)
    read = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(n) or real_read(fd, n))
    with caplog.at_level(logging.WARNING, logger="minijax"):
        assert compilation_cache.get(key) is None
    monkeypatch.setattr(os, "read", real_read)
    assert sum(read) <= compilation_cache._HEAD, read
    assert any("not a minijax cache entry" in r.getMessage() for r in caplog.records)
    assert compilation_cache.put(key, b"payload")
    assert compilation_cache.get(key) == b"payload"
    assert junk.stat().st_size == compilation_cache._HEAD + 7
