"""Running a test module's ``CASES`` in one subprocess with 8 CPU devices.

``worker(cases, path)`` runs in that subprocess: each case's result (or its error, as
text) is pickled to ``path`` (the test's own temporary file, written by the test's own
code: nothing from outside is unpickled). ``run_cases(module, tmp_dir)`` starts the
subprocess for ``tests.sharding.<module>`` (or ``module`` itself when dotted) and
returns ``(results, stderr)``;
``get(results, name)`` is one case's value, failing the test with the case's error.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def worker(cases: dict, path: str) -> None:
    out = {}
    for name, fn in cases.items():
        try:
            out[name] = ("ok", fn())
        except Exception as e:  # noqa: BLE001 - sent back to the test
            out[name] = ("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
    with open(path, "wb") as f:
        pickle.dump(out, f)


def run_cases(module: str, tmp_dir, devices: int = 8, **env_overrides) -> tuple[dict, str]:
    path = os.path.join(str(tmp_dir), "results.pkl")
    flags = os.environ.get("XLA_FLAGS", "")
    env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES=str(devices), MINIJAX_PLATFORMS="cpu",
               XLA_FLAGS=(flags + " --xla_force_host_platform_device_count=8").strip(),
               JAX_PLATFORMS="cpu",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k, v in env_overrides.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    dotted = module if "." in module else f"tests.sharding.{module}"
    proc = subprocess.run(
        [sys.executable, "-c", f"import {dotted} as t; t._worker({path!r})"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(path, "rb") as f:
        return pickle.load(f), proc.stderr


def get(results: dict, name: str):
    status, value = results[name]
    assert status == "ok", value
    return value
