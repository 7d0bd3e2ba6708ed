"""``python -m minijax.launch -n N [--devices D] script.py [args...]``: run N local
processes of ``script.py`` as one distributed computation (for development).

Each process gets ``MINIJAX_COORDINATOR_ADDRESS`` (127.0.0.1 and a free port),
``MINIJAX_NUM_PROCESSES``, ``MINIJAX_PROCESS_ID`` and, with ``--devices``,
``MINIJAX_NUM_CPU_DEVICES``; the script calls ``minijax.distributed.initialize()``.
Output lines are prefixed with the process id. If one process fails the others are
stopped; the exit status is the first nonzero one.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time


def free_port() -> int:
    """A TCP port on the loopback interface that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pump(stream, prefix: str, out) -> None:
    for line in iter(stream.readline, ""):
        out.write(f"{prefix}{line}")
        out.flush()


def launch(script_args: list[str], num_processes: int, devices: int | None = None,
           timeout: float | None = None) -> int:
    """Run ``python script_args...`` ``num_processes`` times; returns the exit status."""
    address = f"127.0.0.1:{free_port()}"
    procs, pumps = [], []
    for i in range(num_processes):
        env = dict(os.environ, MINIJAX_COORDINATOR_ADDRESS=address,
                   MINIJAX_NUM_PROCESSES=str(num_processes), MINIJAX_PROCESS_ID=str(i))
        if devices is not None:
            env["MINIJAX_NUM_CPU_DEVICES"] = str(devices)
        p = subprocess.Popen([sys.executable, *script_args], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        procs.append(p)
        t = threading.Thread(target=_pump, args=(p.stdout, f"[{i}] ", sys.stdout), daemon=True)
        t.start()
        pumps.append(t)
    deadline = None if timeout is None else time.monotonic() + timeout
    status = 0
    while any(p.poll() is None for p in procs):
        failed = [p.returncode for p in procs if p.returncode not in (None, 0)]
        late = deadline is not None and time.monotonic() > deadline
        if failed or late:
            status = failed[0] if failed else 124
            for p in procs:  # stop the processes this launcher started
                if p.poll() is None:
                    p.kill()
            break
        time.sleep(0.05)
    for p in procs:
        p.wait()
        if status == 0 and p.returncode:
            status = p.returncode
    for t in pumps:
        t.join(timeout=1)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minijax.launch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--num-processes", type=int, required=True)
    parser.add_argument("--devices", type=int, default=None,
                        help="CPU devices per process (MINIJAX_NUM_CPU_DEVICES)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds before all stop")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    if ns.num_processes < 1:
        parser.error("-n must be at least 1")
    return launch([ns.script, *ns.args], ns.num_processes, ns.devices, ns.timeout)


if __name__ == "__main__":
    sys.exit(main())
