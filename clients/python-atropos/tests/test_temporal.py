"""The worker on a real Temporal dev server, driven by a small Python workflow standing in for Clotho's TypeScript ones."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import timedelta

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from clotho_atropos import build_env, load_env_class, run_worker
from conftest import ENVS


@workflow.defn(name="atroposDriveTest")
class Drive:
    """Takes `items` items through the durable cursor and collects each, as an env-run and its groups would."""

    @workflow.run
    async def run(self, request: dict) -> list:
        options = dict(
            task_queue=request["queue"],
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=timedelta(seconds=request.get("heartbeat", 10)),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), backoff_coefficient=1, maximum_attempts=request.get("attempts", 3)),
        )
        results = []
        for i in range(request["items"]):
            taken = await workflow.execute_activity("atroposNextItem", {"cursor": i}, **options)
            collected = await workflow.execute_activity("atroposCollect", {"itemIndex": i, "item": taken["item"]}, **options)
            results.append({"item": taken["item"], "fastForwarded": taken["fastForwarded"], "status": collected["status"], "scores": [g["scores"] for g in collected.get("groups", [])]})
        return results


async def drive(client: Client, queue: str, **request) -> list:
    workflows = f"{queue}-workflows"
    async with Worker(client, task_queue=workflows, workflows=[Drive], workflow_runner=UnsandboxedWorkflowRunner()):
        return await client.execute_workflow(Drive.run, {"queue": queue, **request}, id=f"atropos-test-{uuid.uuid4()}", task_queue=workflows)


async def in_process_worker(spec: str, argv: list[str], client: Client, queue: str):
    built = await asyncio.to_thread(build_env, load_env_class(str(ENVS / spec)), argv)
    stop = asyncio.Event()
    return stop, asyncio.ensure_future(run_worker(built, task_queue=queue, client=client, stop=stop, announce=False))


def test_a_transient_failure_is_retried(temporal_address: str, flags) -> None:
    queue = f"clotho-env@test-{uuid.uuid4()}/flaky"

    async def scenario():
        client = await Client.connect(temporal_address)
        stop, worker = await in_process_worker("flaky_env.py", flags("serve"), client, queue)
        try:
            return await drive(client, queue, items=2)
        finally:
            stop.set()
            await worker

    results = asyncio.run(scenario())
    assert [r["status"] for r in results] == ["scored", "scored"]
    assert [r["item"] for r in results] == [{"n": 1}, {"n": 2}]


def test_a_failure_that_persists_fails_the_workflow_with_the_traceback(temporal_address: str, flags, monkeypatch) -> None:
    monkeypatch.setenv("FLAKY_ENV_ALWAYS_FAIL", "1")
    queue = f"clotho-env@test-{uuid.uuid4()}/flaky"

    async def scenario():
        client = await Client.connect(temporal_address)
        stop, worker = await in_process_worker("flaky_env.py", flags("serve"), client, queue)
        try:
            with pytest.raises(WorkflowFailureError) as failed:
                await drive(client, queue, items=1, attempts=2)
            return failed.value
        finally:
            stop.set()
            await worker

    error = asyncio.run(scenario())
    cause = error.cause.cause  # workflow failure ← activity failure ← the environment's exception
    assert cause.type == "ConnectionError" and "hiccup on item 1" in cause.message
    assert "flaky_env.py" in cause.failure.stack_trace and "collect_trajectories" in cause.failure.stack_trace


def test_kill_9_mid_group_then_a_new_worker_finishes_the_run(temporal_address: str, flags, openai_server, tmp_path) -> None:
    """kill -9 of the worker's process group while a group is being collected; a new process resumes the cursor."""
    queue = f"clotho-env@test-{uuid.uuid4()}/arithmetic"
    command = [sys.executable, "-m", "clotho_atropos", "worker", "--task-queue", queue, "--address", temporal_address,
               "--heartbeat-interval", "0.5", str(ENVS / "arithmetic_env.py"), *flags("serve", "--env.group_size", "2")]

    def start() -> subprocess.Popen:
        process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        ready = json.loads(process.stdout.readline())
        assert ready["event"] == "ready" and ready["taskQueue"] == queue
        assert ready["className"] == "ArithmeticEnv" and ready["config"]["group_size"] == 2 and ready["slots"] == 10
        # Temporal's default identity, which the command that started the worker looks for among started activities.
        assert ready["identity"] == f"{process.pid}@{socket.gethostname()}"
        return process

    async def scenario():
        client = await Client.connect(temporal_address)
        first = start()
        openai_server.delay = 1.5
        run = asyncio.ensure_future(drive(client, queue, items=3, heartbeat=2))
        try:
            # Item 0 is collected in 1.5 s; kill during item 1's collection.
            before = openai_server.generations
            deadline = time.monotonic() + 30
            while openai_server.generations < before + 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            killed_at = time.monotonic()
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            second = start()
            try:
                results = await asyncio.wait_for(run, timeout=90)
            finally:
                second.terminate()
                second.wait(15)
            return results, time.monotonic() - killed_at
        finally:
            openai_server.delay = 0.0

    results, recovered_in = asyncio.run(scenario())
    assert [r["status"] for r in results] == ["scored"] * 3
    # The new process was brought to the run's cursor: it skipped the items already taken.
    assert [r["fastForwarded"] for r in results] == [0, 0, 2]
    assert len({json.dumps(r["item"]) for r in results}) == 3
    # From the kill to the run's end: a new worker's start, the 2 s heartbeat timeout, item 1 again, item 2.
    print(f"\nrun finished {recovered_in:.1f} s after kill -9 of the worker mid-group")
    assert recovered_in < 60
