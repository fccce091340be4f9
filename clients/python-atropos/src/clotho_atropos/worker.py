"""A Temporal worker serving one Atropos environment's activities on a run's task queue, on a thread of its own."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import json
import signal
import sys
import threading
from datetime import timedelta
from typing import Any, Optional

from temporalio.client import Client
from temporalio.envconfig import ClientConfig
from temporalio.worker import Worker

from .activities import AtroposActivities
from .building import BuiltEnv
from .watch import EnvLoop, OutputTail


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
    address: Optional[str] = None,
    namespace: Optional[str] = None,
    max_concurrent: Optional[int] = None,
    heartbeat_interval: float = 2.0,
    stop: Optional["WorkerStop"] = None,
    announce: bool = True,
    output: Optional[OutputTail] = None,
) -> None:
    """Runs ``setup()`` once, then serves the activities until ``stop`` is set (or SIGINT/SIGTERM).

    The loop that calls it stays the environment's: every activity runs the environment's code there (the main
    thread's, where Atropos runs it: signal-based timeouts such as math_verify's need it), while the Temporal worker
    polls and heartbeats on a thread and loop of its own, so code that holds the environment's loop for longer than
    the heartbeat timeout keeps its attempt. ``max_concurrent`` defaults to the environment's ``max_num_workers``
    (Atropos's limit on groups in flight per process) plus two, so the cursor and evaluation are never queued behind a
    full set of groups. With ``announce``, one JSON line ``{"event": "ready", "taskQueue", "identity", "slots",
    ...atroposDescribe}`` goes to stdout once polling starts: ``identity`` is what Temporal records as the worker of
    its activities, so the command that started it can hand on the ones it held if it dies. ``output``, when given,
    is the process's output kept for the heartbeats (the ready line bypasses it).
    """
    stop = stop or WorkerStop()
    await built.env.setup()
    activities = AtroposActivities(built, heartbeat_interval=heartbeat_interval, env_loop=EnvLoop.current(), output=output)
    slots = max_concurrent or max(1, int(built.env.max_num_workers)) + 2
    serving = _TemporalThread(activities, task_queue, address, namespace, slots, stop)
    with _signals_stop(stop):
        serving.start()
        try:
            identity = await asyncio.wrap_future(serving.polling)
            if announce:
                # With the description, so the command can record the run's config without a second start.
                line = {"event": "ready", "taskQueue": task_queue, "identity": identity, "slots": slots, **activities.description()}
                stdout = output.original("stdout") if output is not None else sys.stdout
                print(json.dumps(line), file=stdout, flush=True)
            await asyncio.wrap_future(serving.finished)
        finally:
            # Cancelled, or the announcement failed: the thread must not outlive this call.
            if not serving.finished.done():
                stop.set()
                await asyncio.shield(asyncio.wrap_future(serving.finished))


class WorkerStop:
    """Asks a running worker to stop; safe from any thread and from a signal handler (``set``)."""

    def __init__(self) -> None:
        self._target: Optional[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = None
        self._requested = False

    def set(self) -> None:
        self._requested = True
        target = self._target
        if target is not None:
            loop, event = target
            loop.call_soon_threadsafe(event.set)

    def _bind(self, event: asyncio.Event) -> None:
        """Binds the event the worker's loop waits on; a stop asked for before is passed on now."""
        self._target = (asyncio.get_running_loop(), event)
        if self._requested:
            event.set()


class _TemporalThread(threading.Thread):
    """The Temporal worker on a loop of its own: ``polling`` resolves to its identity once it polls, ``finished`` when it stops."""

    def __init__(self, activities: AtroposActivities, task_queue: str, address: Optional[str], namespace: Optional[str], slots: int, stop: WorkerStop) -> None:
        super().__init__(name="clotho-atropos-temporal")
        self.polling: "concurrent.futures.Future[str]" = concurrent.futures.Future()
        self.finished: "concurrent.futures.Future[None]" = concurrent.futures.Future()
        self._args = (activities, task_queue, address, namespace, slots, stop)

    def run(self) -> None:
        try:
            asyncio.run(self._serve(*self._args))
        except BaseException as error:  # noqa: BLE001 - handed to the environment's loop, which raises it
            if not self.polling.done():
                self.polling.set_exception(error)
            self.finished.set_exception(error)
        else:
            self.finished.set_result(None)
        finally:
            # Native objects in cycles: released now, not during interpreter shutdown (see clotho_client.trainer).
            gc.collect()

    async def _serve(self, activities: AtroposActivities, task_queue: str, address: Optional[str], namespace: Optional[str], slots: int, stop: WorkerStop) -> None:
        stopping = asyncio.Event()
        stop._bind(stopping)
        client = await connect_temporal(address, namespace)
        worker = Worker(
            client,
            task_queue=task_queue,
            activities=activities.activities,
            max_concurrent_activities=slots,
            graceful_shutdown_timeout=timedelta(seconds=10),
        )
        running = asyncio.ensure_future(worker.run())
        # The worker's identity is its client's (none is set on the worker).
        self.polling.set_result(client.identity)
        waiting = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait({running, waiting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
            if not running.done():
                await worker.shutdown()
            await running


class _signals_stop:
    """While active, SIGINT and SIGTERM stop the worker (main thread only): Python runs the handler between bytecodes,
    so it stops a worker whose environment holds its loop, which ``loop.add_signal_handler`` would wait for."""

    def __init__(self, stop: WorkerStop) -> None:
        self._stop = stop
        self._previous: dict[signal.Signals, Any] = {}

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, lambda _sig, _frame: self._stop.set())

    def __exit__(self, *_exc: object) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
