"""A Temporal trainer worker: runs ``trainStep`` activities from ``clotho api --trainer temporal``.

The batcher workflow turns every formed batch into one ``trainStep`` activity on the trainer task
queue, one at a time in step order, retried until a worker completes it. Completing it acknowledges
the batch, so a trainer that crashes mid-step simply gets the same step again.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import signal
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Awaitable, Callable, Optional, Union
from urllib.parse import quote

import httpx
from temporalio import activity
from temporalio.client import Client
from temporalio.envconfig import ClientConfig
from temporalio.worker import Worker

from .types import ScoredDataGroup
from .wire import auth_headers

log = logging.getLogger("clotho_client")

#: The activity's name, as the batcher workflow schedules it.
TRAIN_STEP_ACTIVITY = "trainStep"
#: Default task queue of ``trainStep`` activities (``clotho api --trainer-task-queue``).
TRAINER_TASK_QUEUE = "clotho-trainer"

#: ``callback(step, batch_id, groups)``; may be a plain function (run in a thread) or a coroutine function.
TrainStepCallback = Callable[[int, str, list[ScoredDataGroup]], Union[None, Awaitable[None], object]]


@dataclass(frozen=True)
class TrainStepInput:
    """The activity's single argument: ``{"batchId", "step", "groups"}`` (groups are store keys)."""

    batch_id: str
    step: int
    group_refs: list[str]

    @staticmethod
    def parse(raw: Any) -> "TrainStepInput":
        """Checks the activity argument's shape (it comes from another language's workflow)."""
        if not isinstance(raw, dict) or not isinstance(raw.get("batchId"), str) or not isinstance(raw.get("step"), int):
            raise TypeError(f"trainStep expects {{batchId: str, step: int, groups: [str]}}, got {raw!r}")
        return TrainStepInput(batch_id=raw["batchId"], step=raw["step"], group_refs=list(raw.get("groups") or []))


class _TrainStepActivity:
    """Holds what the activity needs; its bound method is what the worker registers."""

    def __init__(self, callback: TrainStepCallback, http: httpx.AsyncClient, heartbeat_interval: float) -> None:
        self._callback = callback
        self._http = http
        self._heartbeat_interval = heartbeat_interval

    @activity.defn(name=TRAIN_STEP_ACTIVITY)
    async def train_step(self, raw: Any) -> None:
        request = TrainStepInput.parse(raw)
        groups = await self._fetch_groups(request.batch_id)
        if len(groups) != len(request.group_refs):
            raise RuntimeError(f"batch {request.batch_id}: the API returned {len(groups)} groups, the step names {len(request.group_refs)}")
        work = asyncio.ensure_future(self._call(request.step, request.batch_id, groups))
        try:
            # Heartbeats carry cancellation to the activity: without them a cancel would go unnoticed.
            while True:
                done, _ = await asyncio.wait({work}, timeout=self._heartbeat_interval)
                if done:
                    work.result()
                    return
                activity.heartbeat(request.step)
        except BaseException:
            work.cancel()
            raise

    async def _fetch_groups(self, batch_id: str) -> list[ScoredDataGroup]:
        response = await self._http.get(f"/batch/{quote(batch_id, safe='')}")
        # Any failure is retried by Temporal (the step is retried until it completes), so just raise.
        response.raise_for_status()
        groups = response.json().get("batch")
        if not isinstance(groups, list):
            raise RuntimeError(f"GET /batch/{batch_id}: expected a list of groups, got {groups!r:.200}")
        return groups

    async def _call(self, step: int, batch_id: str, groups: list[ScoredDataGroup]) -> None:
        if inspect.iscoroutinefunction(self._callback) or inspect.iscoroutinefunction(getattr(self._callback, "__call__", None)):
            result = self._callback(step, batch_id, groups)
        else:
            # A plain function runs in a thread so the event loop keeps heartbeating; a thread cannot be
            # interrupted, so on cancellation its result is discarded (the step is not completed).
            result = await asyncio.to_thread(self._callback, step, batch_id, groups)
        if inspect.isawaitable(result):
            await result


async def run_trainer_worker(
    callback: TrainStepCallback,
    *,
    api_url: str,
    temporal_address: Optional[str] = None,
    namespace: Optional[str] = None,
    task_queue: str = TRAINER_TASK_QUEUE,
    token: Optional[str] = None,
    heartbeat_interval: float = 5.0,
    graceful_shutdown_timeout: timedelta = timedelta(seconds=30),
    stop: Optional[asyncio.Event] = None,
    client: Optional[Client] = None,
) -> None:
    """Runs a worker that executes ``trainStep`` with ``callback(step, batch_id, groups)`` until stopped.

    Each step's groups come from ``GET {api_url}/batch/{batch_id}``. Returning from the callback
    completes the activity, which acknowledges the batch; raising fails this attempt, and Temporal
    runs the step again. The callback is called for one step at a time.

    Args:
        callback: a function or coroutine function; plain functions run in a worker thread.
        api_url: the trajectory API (``clotho api``), e.g. ``http://127.0.0.1:8000``.
        temporal_address: ``host:port``; default from Temporal's environment configuration
            (``TEMPORAL_ADDRESS``, profiles), else ``127.0.0.1:7233``.
        namespace: default from the environment configuration (``TEMPORAL_NAMESPACE``), else ``default``.
        task_queue: the batcher's trainer task queue.
        token: bearer token of the API; ``None`` reads ``$CLOTHO_API_TOKEN``.
        heartbeat_interval: seconds between heartbeats while a step runs.
        graceful_shutdown_timeout: how long a step in progress may finish after a stop before it is cancelled.
        stop: set it to stop the worker; SIGINT and SIGTERM set it too when called from the main thread.
        client: an already connected Temporal client (then address and namespace are ignored).
    """
    try:
        if client is None:
            client = await connect_temporal(temporal_address, namespace)
        worker_options = {"task_queue": task_queue, "graceful_shutdown_timeout": graceful_shutdown_timeout}
        await _serve(callback, client, api_url, token, heartbeat_interval, stop or asyncio.Event(), worker_options)
    finally:
        # The worker and client hold native (Rust) objects in reference cycles. Collected now, they are
        # released while the interpreter runs; left to the collection at interpreter exit, their
        # threads may call into a finalizing interpreter, which aborts the process.
        client = None
        gc.collect()


async def _serve(
    callback: TrainStepCallback,
    client: Client,
    api_url: str,
    token: Optional[str],
    heartbeat_interval: float,
    stop: asyncio.Event,
    worker_options: dict[str, Any],
) -> None:
    async with httpx.AsyncClient(base_url=api_url.rstrip("/"), headers=auth_headers(token), timeout=60.0) as http:
        step_activity = _TrainStepActivity(callback, http, heartbeat_interval)
        worker = Worker(client, activities=[step_activity.train_step], max_concurrent_activities=1, **worker_options)
        with _signals_set(stop):
            running = asyncio.ensure_future(worker.run())
            stopping = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopping.cancel()
                if not running.done():
                    await worker.shutdown()
                await running


async def connect_temporal(address: Optional[str] = None, namespace: Optional[str] = None) -> Client:
    """Connects as Temporal's environment configuration says, with explicit arguments taking precedence."""
    config: dict[str, Any] = dict(ClientConfig.load_client_connect_config())
    if address:
        config["target_host"] = address
    config.setdefault("target_host", "127.0.0.1:7233")
    if namespace:
        config["namespace"] = namespace
    config.setdefault("namespace", "default")
    return await Client.connect(**config)


class _signals_set:
    """While active, SIGINT and SIGTERM set ``event`` (only possible in the main thread's event loop)."""

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
