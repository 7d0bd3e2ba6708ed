"""Several processes, one computation: jaxlib's distributed runtime and gloo collectives.

``initialize`` connects this process to a coordination service (process 0 starts it)
before minijax makes its CPU client; the client is then made with the distributed
client, this process's id and the number of processes, and with gloo TCP collectives,
so ``minijax.devices()`` lists every process's devices and a ``Mesh`` over them runs
sharded ``jit`` across processes (each process passes its own shards).

Example (one script, started twice: ``python -m minijax.launch -n 2 script.py``)::

    >>> minijax.distributed.initialize()      # reads what minijax.launch sets
    >>> minijax.process_index(), minijax.process_count(), minijax.device_count()
    (0, 2, 8)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from jaxlib import _jax

__all__ = ["initialize", "is_initialized", "shutdown"]

logger = logging.getLogger("minijax")

ENV_ADDRESS = "MINIJAX_COORDINATOR_ADDRESS"
ENV_COUNT = "MINIJAX_NUM_PROCESSES"
ENV_ID = "MINIJAX_PROCESS_ID"


class _State:
    service = None
    client = None
    process_id = 0
    num_processes = 1
    address: str | None = None
    local_device_ids: tuple[int, ...] | None = None


state = _State()


def is_initialized() -> bool:
    """Whether ``initialize`` has connected this process."""
    return state.client is not None


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None, *,
               initialization_timeout: int = 120, heartbeat_timeout: int = 100) -> None:
    """Join a computation spread over ``num_processes`` processes.

    Args:
      coordinator_address: ``host:port`` of the coordination service, which process 0
        starts (it binds that port). Defaults to ``$MINIJAX_COORDINATOR_ADDRESS``.
      num_processes: how many processes take part (``$MINIJAX_NUM_PROCESSES``).
      process_id: this process's id, ``0 <= process_id < num_processes``
        (``$MINIJAX_PROCESS_ID``).
      local_device_ids: this process's devices; on CPU only their number counts (as
        ``minijax_num_cpu_devices``).
      initialization_timeout: seconds to wait for every process to connect; then a
        ``RuntimeError`` names the address (an unreachable coordinator, a missing
        process, or two processes with the same id).

    Must be called once, before minijax first uses a device.
    """
    from minijax.runtime import backend as _backend
    if state.client is not None:
        raise RuntimeError("minijax.distributed.initialize should only be called once")
    if "cpu" in _backend._backends:
        raise RuntimeError("minijax.distributed.initialize must be called before minijax "
                           "uses any device (its CPU client already exists)")
    address = coordinator_address or os.environ.get(ENV_ADDRESS)
    if num_processes is None and ENV_COUNT in os.environ:
        num_processes = int(os.environ[ENV_COUNT])
    if process_id is None and ENV_ID in os.environ:
        process_id = int(os.environ[ENV_ID])
    if not address or num_processes is None or process_id is None:
        raise ValueError("minijax.distributed.initialize needs coordinator_address, "
                         "num_processes and process_id (or the MINIJAX_COORDINATOR_ADDRESS, "
                         "MINIJAX_NUM_PROCESSES and MINIJAX_PROCESS_ID variables that "
                         "python -m minijax.launch sets)")
    if ":" not in address:
        raise ValueError(f"coordinator_address must be 'host:port', got {address!r}")
    num_processes, process_id = int(num_processes), int(process_id)
    if num_processes < 1 or not 0 <= process_id < num_processes:
        raise ValueError(f"process_id must be in [0, {num_processes}), got {process_id}")
    if isinstance(local_device_ids, int):
        local_device_ids = (local_device_ids,)
    service = None
    if process_id == 0:
        port = address.rsplit(":", 1)[1]
        try:
            service = _jax.get_distributed_runtime_service(
                f"[::]:{port}", num_processes, heartbeat_timeout=heartbeat_timeout)
        except Exception as e:  # noqa: BLE001 - e.g. the port is taken
            raise RuntimeError(f"minijax.distributed: cannot start the coordination service "
                               f"on port {port} ({address}): {e}") from None
    # With no callback, jaxlib aborts the process when the coordinator cannot be
    # reached; with one, connect() raises and we can say what went wrong.
    client = _jax.get_distributed_runtime_client(
        address, process_id, init_timeout=int(initialization_timeout),
        heartbeat_timeout=heartbeat_timeout, use_compression=True,
        missed_heartbeat_callback=_lost_contact)
    try:
        client.connect()
    except Exception as e:  # noqa: BLE001 - DEADLINE_EXCEEDED, ALREADY_EXISTS, ...
        if service is not None:
            service.shutdown()
        raise RuntimeError(
            f"minijax.distributed: process {process_id} of {num_processes} could not join "
            f"the coordinator at {address} within {initialization_timeout} s (is the "
            f"coordinator running and reachable, are all {num_processes} processes started, "
            f"each with a distinct process_id?): {e}") from None
    state.service, state.client = service, client
    state.process_id, state.num_processes, state.address = process_id, num_processes, address
    state.local_device_ids = None if local_device_ids is None else tuple(local_device_ids)


def _lost_contact(*status) -> None:
    logger.error("minijax.distributed: lost contact with the coordination service at %s: %s",
                 state.address, status[0] if status else "")


def shutdown() -> None:
    """Leave the computation (waits for the other processes to shut down too)."""
    if state.client is not None:
        state.client.shutdown()
    if state.service is not None:
        state.service.shutdown()
    state.service = state.client = None
    state.process_id, state.num_processes = 0, 1


def cpu_client_kwargs() -> dict:
    """Extra arguments for ``make_cpu_client`` when this process is one of several."""
    if state.client is None:
        return {}
    return {"distributed_client": state.client, "node_id": state.process_id,
            "num_nodes": state.num_processes,
            "collectives": _jax.make_gloo_tcp_collectives(distributed_client=state.client)}
