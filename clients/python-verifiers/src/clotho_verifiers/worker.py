"""A Temporal worker serving one verifiers environment's activities on a run's task queue.

Activities (one input object, one output object, JSON):

- ``verifiersNextTasks({"cursor": n, "count": k})`` -> ``{"tasks": [{"data": {...}} | {"ref": key}], "exhausted"}``:
  the tasks at positions n.. of the run's view; a task past 8 KiB of JSON goes into the store through the session
  host and travels as its key.
- ``verifiersEpisode({"itemIndex", "sample", "task"})`` -> ``{"status", "reason"?, "calls", "replayed"}``: one
  episode (``episodes.py``), heartbeating ``{"calls", "replayed", "last"}`` every 2 s.

The environment is built once and serves for the life of the process (``env.serving()``: its shared tool servers and
its interception server), as ``vf-eval`` holds it for a run.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.envconfig import ClientConfig
from temporalio.worker import Worker
from verifiers.v1.configs.client import DEFAULT_PRIME_INFERENCE_URL

from .cursor import TaskCursor
from .episodes import Episodes
from .router import Host, Router

INLINE_TASK_BYTES = 8 * 1024
BASE_URL_FLAGS = ("--client.base-url", "--client.base_url")


async def connect(address: str | None, namespace: str | None) -> Client:
    """Connects as Temporal's environment configuration says (``TEMPORAL_ADDRESS``, profiles), the flags first."""
    config: dict[str, Any] = dict(ClientConfig.load_client_connect_config())
    config["target_host"] = address or config.get("target_host") or "127.0.0.1:7233"
    config["namespace"] = namespace or config.get("namespace") or "default"
    return await Client.connect(**config)


def describe(spec: Any, config: Any, env: Any, tasks: int | None, argv: list[str]) -> dict:
    """The environment as the command needs it: ids, the run's settings, and the config it records for the run."""
    recorded = config.model_dump(
        mode="json",
        include={"env", "model", "sampling", "select", "num_rollouts", "client"},
        exclude={"client": {"headers", "headers_from_env", "timeout"}},
    )
    return {
        "envId": config.env.env_id,
        "tasksetId": spec.taskset_id,
        "bounded": tasks is not None,
        "tasks": tasks,
        "groupSize": config.num_rollouts,
        "maxConcurrent": config.max_concurrent,
        "model": config.model,
        "modelGiven": "model" in config.model_fields_set,
        "client": {
            "baseUrl": config.client.base_url,
            # verifiers fills in Prime's endpoint itself (and marks it set): only another URL, or the flag, names one.
            "given": config.client.base_url != DEFAULT_PRIME_INFERENCE_URL or any(a.startswith(BASE_URL_FLAGS) for a in argv),
            "apiKeyVar": config.client.api_key_var,
        },
        "sampling": config.sampling.model_dump(mode="json", exclude_none=True),
        "agents": [
            {"name": name, "harness": harness.config.id, "runtime": env._agent_specs[name].runtime.type}
            for name, harness in env._harnesses.items()
        ],
        "config": recorded,
    }


class Activities:
    def __init__(self, cursor: TaskCursor, episodes: Episodes, host: Host) -> None:
        self.cursor = cursor
        self.episodes = episodes
        self.host = host

    @activity.defn(name="verifiersNextTasks")
    async def next_tasks(self, request: dict) -> dict:
        tasks, exhausted = await asyncio.to_thread(
            self.cursor.take, int(request["cursor"]), int(request["count"]), bool(request.get("cycle"))
        )
        carried = []
        for data in tasks:
            if len(json.dumps(data)) <= INLINE_TASK_BYTES:
                carried.append({"data": data})
                continue
            status, answer = await self.host.json("POST", "/items", data)
            if status != 200:
                raise RuntimeError(f"the session host could not keep a task ({status})")
            carried.append({"ref": answer["key"]})
        return {"tasks": carried, "exhausted": exhausted}

    @activity.defn(name="verifiersEpisode")
    async def episode(self, request: dict) -> dict:
        return await self.episodes.run(int(request["itemIndex"]), int(request["sample"]), request["task"])


async def run_worker(
    spec: Any,
    config: Any,
    env: Any,
    argv: list[str],
    *,
    task_queue: str,
    host_socket: str,
    address: str | None,
    namespace: str | None,
    heartbeat_interval: float = 2.0,
    stop: asyncio.Event | None = None,
) -> None:
    """Serves the activities until ``stop`` is set (or SIGINT/SIGTERM), announcing itself with one ready line."""
    stop = stop or asyncio.Event()
    cursor = TaskCursor(env, config.select)
    view = cursor.view()
    tasks = sum(1 for _ in view) if view.bounded else None
    host = Host(host_socket)
    router = Router(host)
    await router.start()
    client = await connect(address, namespace)
    episodes = Episodes(env, config, cursor, router, host, heartbeat_interval)
    activities = Activities(cursor, episodes, host)
    # Every episode the run may have in flight, and the cursor beside them.
    slots = (config.max_concurrent or 128) + 2
    try:
        async with env.serving():
            worker = Worker(
                client,
                task_queue=task_queue,
                activities=[activities.next_tasks, activities.episode],
                max_concurrent_activities=slots,
                graceful_shutdown_timeout=timedelta(seconds=10),
            )
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            running = asyncio.ensure_future(worker.run())
            ready = {"event": "ready", "taskQueue": task_queue, "identity": client.identity, "slots": slots}
            print(json.dumps({**ready, **describe(spec, config, env, tasks, argv)}), flush=True)
            stopping = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopping.cancel()
                if not running.done():
                    await worker.shutdown()
                await running
    finally:
        await router.stop()
        await host.close()


def stop_at_end_of_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Sets ``stop`` once stdin closes, which it does when the command that started the worker dies, even by kill -9."""

    def watch() -> None:
        sys.stdin.buffer.read()
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=watch, daemon=True).start()
