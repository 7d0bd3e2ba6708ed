"""Two processes on localhost: jaxlib's coordination service, gloo collectives, a global
reduction by sharded jit and by shard_map; and the errors for a missing coordinator."""

import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.slow


def _env(**extra):
    env = dict(os.environ, MINIJAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)
    env.pop("MINIJAX_NUM_CPU_DEVICES", None)
    return env


def test_two_processes_global_reduction():
    proc = subprocess.run(
        [sys.executable, "-m", "minijax.launch", "-n", "2", "--devices", "4", "--timeout",
         "240", os.path.join(ROOT, "tests", "sharding", "_mp_worker.py")],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = sorted(line.split("RESULT ", 1)[1].split(" ") for line in proc.stdout.splitlines()
                  if "RESULT" in line)
    assert len(rows) == 2, proc.stdout
    shards = []
    for pid, row in enumerate(rows):
        assert row[:7] == [str(pid), "2", "8", "4", "240.0", "120.0", "False"], row
        shards.append(" ".join(row[7:]))
    assert shards[0] == "[0, 1, 2, 3]" and shards[0] != shards[1], shards  # 4 shards each


_UNREACHABLE = """
import time, minijax
from minijax.launch import free_port
address = f"127.0.0.1:{free_port()}"
start = time.monotonic()
try:
    minijax.distributed.initialize(address, 2, 1, initialization_timeout=3)
except RuntimeError as e:
    print("ERROR", round(time.monotonic() - start), address in str(e), str(e)[:200])
"""


def test_unreachable_coordinator_times_out_naming_the_address():
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _UNREACHABLE], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ERROR" in proc.stdout and " True " in proc.stdout, proc.stdout + proc.stderr
    assert time.monotonic() - start < 45


def test_bad_arguments():
    code = ("import minijax\n"
            "for kw in [dict(coordinator_address='127.0.0.1:1', num_processes=2, process_id=2),"
            " dict(coordinator_address='nohostport', num_processes=2, process_id=0)]:\n"
            "    try:\n"
            "        minijax.distributed.initialize(**kw)\n"
            "    except ValueError as e:\n"
            "        print('VE', e)\n"
            "minijax.devices()\n"
            "try:\n"
            "    minijax.distributed.initialize('127.0.0.1:1', 2, 0)\n"
            "except RuntimeError as e:\n"
            "    print('RE', e)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.count("VE") == 2 and "before minijax uses any device" in proc.stdout, \
        proc.stdout + proc.stderr


_JOIN = """
import sys, time, minijax
pid = int(sys.argv[2])
start = time.monotonic()
try:
    minijax.distributed.initialize(sys.argv[1], 2, pid, initialization_timeout=5)
    minijax.devices()
    print("JOINED", pid, flush=True)
except RuntimeError as e:
    print("ERROR", pid, round(time.monotonic() - start), sys.argv[1] in str(e), flush=True)
"""


def test_duplicate_process_id_is_an_error_not_a_hang():
    from minijax.launch import free_port
    address = f"127.0.0.1:{free_port()}"
    procs = []
    for pid in (0, 1, 1):
        procs.append(subprocess.Popen([sys.executable, "-c", _JOIN, address, str(pid)],
                                      cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True))
        time.sleep(0.5)
    outs = [p.communicate(timeout=90)[0] for p in procs]
    joined = [o for o in outs if "JOINED" in o]
    errors = [o for o in outs if "ERROR" in o]
    assert len(joined) == 2 and len(errors) == 1, outs
    assert errors[0].split()[1] == "1" and errors[0].split()[3] == "True", errors
