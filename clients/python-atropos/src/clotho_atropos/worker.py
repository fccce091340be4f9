"""A Temporal worker serving one Atropos environment's activities on a run's task queue."""

from __future__ import annotations

import asyncio
import gc
import json
import signal
import threading
from datetime import timedelta
from typing import Any, Optional

from temporalio.client import Client
from temporalio.envconfig import ClientConfig
from temporalio.worker import Worker

from .activities import AtroposActivities
from .building import BuiltEnv


async def connect_temporal(address: Optional[str] = None, namespace: Optional[str] = None) -> Client:
    """Connects as Temporal's environment configuration says (``TEMPORAL_ADDRESS``, profiles), arguments first."""
    config: dict[str, Any] = dict(ClientConfig.load_client_connect_config())
    if address:
        config["target_host"] = address
    config.setdefault("target_host", "127.0.0.1:7233")
    if namespace:
        config["namespace"] = namespace
    config.setdefault("namespace", "default")
    return await Client.connect(**config)


async def run_worker(
    built: BuiltEnv,
    *,
    task_queue: str,
    client: Optional[Client] = None,
    address: Optional[str] = None,
    namespace: Optional[str] = None,
    max_concurrent: Optional[int] = None,
    heartbeat_interval: float = 2.0,
    stop: Optional[asyncio.Event] = None,
    announce: bool = True,
) -> None:
    """Runs ``setup()`` once, then serves the activities until ``stop`` is set (or SIGINT/SIGTERM).

    ``max_concurrent`` defaults to the environment's ``max_num_workers`` (Atropos's limit on groups in
    flight per process) plus two, so the cursor and evaluation are never queued behind a full set of groups.
    With ``announce``, one JSON line ``{"event": "ready", "taskQueue", "identity", "slots", ...atroposDescribe}``
    goes to stdout once polling starts: ``identity`` is what Temporal records as the worker of its activities, so
    the command that started it can hand on the ones it held if it dies.
    """
    stop = stop or asyncio.Event()
    await built.env.setup()
    activities = AtroposActivities(built, heartbeat_interval=heartbeat_interval)
    owned = client is None
    try:
        if client is None:
            client = await connect_temporal(address, namespace)
        slots = max_concurrent or max(1, int(built.env.max_num_workers)) + 2
        worker = Worker(
            client,
            task_queue=task_queue,
            activities=activities.activities,
            max_concurrent_activities=slots,
            graceful_shutdown_timeout=timedelta(seconds=10),
        )
        with _signals_set(stop):
            running = asyncio.ensure_future(worker.run())
            if announce:
                # With the description, so the command can record the run's config without a second start.
                line = {
                    "event": "ready",
                    "taskQueue": task_queue,
                    # The worker's identity is its client's (none is set on the worker).
                    "identity": client.identity,
                    "slots": slots,
                    **(await activities.describe()),
                }
                print(json.dumps(line), flush=True)
            stopping = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopping.cancel()
                if not running.done():
                    await worker.shutdown()
                await running
    finally:
        if owned:
            # Native objects in cycles: released now, not during interpreter shutdown (see clotho_client.trainer).
            client = None
            gc.collect()


class _signals_set:
    """While active, SIGINT and SIGTERM set ``event`` (main thread only)."""

    def __init__(self, event: asyncio.Event) -> None:
        self._event = event
        self._installed: list[signal.Signals] = []

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._event.set)
                self._installed.append(sig)
            except (NotImplementedError, RuntimeError):
                pass

    def __exit__(self, *_exc: object) -> None:
        loop = asyncio.get_running_loop()
        for sig in self._installed:
            loop.remove_signal_handler(sig)
