"""The worker on a real Temporal dev server, driven by a small Python workflow standing in for Clotho's TypeScript ones."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Awaitable, Callable, Optional

import pytest
from temporalio import workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import CancelledError
from temporalio.common import RetryPolicy
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from clotho_atropos import WorkerStop, build_env, load_env_class, run_worker
from conftest import ENVS, ITEM_KEY


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
        first = request.get("first", 0)
        for i in range(first, first + request["items"]):
            taken = await workflow.execute_activity("atroposNextItem", {"cursor": i}, **options)
            collected = await workflow.execute_activity("atroposCollect", {"itemIndex": i, "item": taken["item"]}, **options)
            results.append({"item": taken["item"], "fastForwarded": taken["fastForwarded"], "status": collected["status"], "scores": [g["scores"] for g in collected.get("groups", [])]})
        return results


@workflow.defn(name="atroposCollectTest")
class CollectOne:
    """One ``atroposCollect`` of the item given, as a workflow started by hand on the server could ask for it."""

    @workflow.run
    async def run(self, request: dict) -> dict:
        retry = RetryPolicy(initial_interval=timedelta(milliseconds=100), backoff_coefficient=1, maximum_attempts=3)
        return await workflow.execute_activity(
            "atroposCollect",
            {"itemIndex": 0, "item": request["item"]},
            task_queue=request["queue"],
            start_to_close_timeout=timedelta(seconds=60),
            heartbeat_timeout=timedelta(seconds=2),
            retry_policy=retry,
            # A cancel waits for the worker to say the activity ended: the test sees when the cancel reached it.
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )


async def collect_one(client: Client, queue: str, workflow_id: str, item, started: Optional[Callable[[], Awaitable[None]]] = None) -> dict:
    """Runs ``CollectOne``; with ``started``, awaits it once the workflow has started (to cancel it, say)."""
    workflows = f"{queue}-workflows"
    async with Worker(client, task_queue=workflows, workflows=[CollectOne], workflow_runner=UnsandboxedWorkflowRunner()):
        handle = await client.start_workflow(CollectOne.run, {"queue": queue, "item": item}, id=workflow_id, task_queue=workflows)
        if started is not None:
            await started()
        return await handle.result()


async def drive(client: Client, queue: str, workflow_id: str = "", **request) -> list:
    workflows = f"{queue}-workflows"
    workflow_id = workflow_id or f"atropos-test-{uuid.uuid4()}"
    async with Worker(client, task_queue=workflows, workflows=[Drive], workflow_runner=UnsandboxedWorkflowRunner()):
        return await client.execute_workflow(Drive.run, {"queue": queue, **request}, id=workflow_id, task_queue=workflows)


async def drive_to_the_end(client: Client, queue: str, **request) -> list:
    """``drive``, failing the test with the activity's failure (a heartbeat timeout) where the workflow fails."""
    try:
        return await drive(client, queue, **request)
    except WorkflowFailureError as error:
        pytest.fail(f"the workflow failed: {error.cause} ({error.cause.cause})")


async def attempts_of(client: Client, workflow_id: str, activity_type: str) -> list[int]:
    """The attempt each of the workflow's finished ``activity_type`` activities finished on, from its history."""
    scheduled, attempts = set(), []
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.HasField("activity_task_scheduled_event_attributes"):
            if event.activity_task_scheduled_event_attributes.activity_type.name == activity_type:
                scheduled.add(event.event_id)
        elif event.HasField("activity_task_started_event_attributes"):
            started = event.activity_task_started_event_attributes
            if started.scheduled_event_id in scheduled:
                attempts.append(started.attempt)
    return attempts


def worker_command(queue: str, address: str, spec: str, argv: list[str], cwd) -> list[str]:
    """The worker's command line as Clotho's CLI gives it: it stops when its stdin (a pipe from the command) closes, and
    signs pickled items with the run's key (here ``ITEM_KEY``, in a file in ``cwd``)."""
    key_file = Path(cwd) / "atropos-item-key"
    key_file.write_bytes(ITEM_KEY)
    return [sys.executable, "-m", "clotho_atropos", "worker", "--exit-with-stdin", "--item-key-file", str(key_file), "--task-queue", queue,
            "--address", address, "--heartbeat-interval", "0.5", str(ENVS / spec), *argv]


def start_worker(queue: str, address: str, spec: str, argv: list[str], cwd) -> tuple[subprocess.Popen, dict]:
    """The worker as Clotho's CLI starts it, in a process group of its own; returns it and its ready line."""
    process = subprocess.Popen(worker_command(queue, address, spec, argv, cwd), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    ready = json.loads(process.stdout.readline())
    assert ready["event"] == "ready" and ready["taskQueue"] == queue
    return process, ready


def stop_worker(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(30)


async def in_process_worker(spec: str, argv: list[str], address: str, queue: str):
    built = await asyncio.to_thread(build_env, load_env_class(str(ENVS / spec)), argv)
    stop = WorkerStop()
    return stop, asyncio.ensure_future(run_worker(built, task_queue=queue, address=address, stop=stop, announce=False))


def test_a_transient_failure_is_retried(temporal_address: str, flags) -> None:
    queue = f"clotho-env@test-{uuid.uuid4()}/flaky"

    async def scenario():
        client = await Client.connect(temporal_address)
        stop, worker = await in_process_worker("flaky_env.py", flags("serve"), temporal_address, queue)
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
        stop, worker = await in_process_worker("flaky_env.py", flags("serve"), temporal_address, queue)
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

    def start() -> subprocess.Popen:
        process, ready = start_worker(queue, temporal_address, "arithmetic_env.py", flags("serve", "--env.group_size", "2"), tmp_path)
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
                stop_worker(second)
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


def test_a_collect_that_blocks_the_event_loop_keeps_its_attempt(temporal_address: str, flags, tmp_path) -> None:
    """Scoring that holds the event loop for 5 s under a 2 s heartbeat timeout: one attempt, not a timeout and another."""
    queue = f"clotho-env@test-{uuid.uuid4()}/blocking"
    worker, _ = start_worker(queue, temporal_address, "blocking_env.py", flags("serve", "--env.scoring_seconds", "5"), tmp_path)
    workflow_id = f"atropos-test-{uuid.uuid4()}"

    async def scenario():
        client = await Client.connect(temporal_address)
        results = await drive_to_the_end(client, queue, workflow_id=workflow_id, items=1, heartbeat=2, attempts=2)
        return results, await attempts_of(client, workflow_id, "atroposCollect")

    try:
        results, attempts = asyncio.run(scenario())
    finally:
        stop_worker(worker)
    assert [r["status"] for r in results] == ["scored"]
    assert attempts == [1]


def test_a_cancel_reaches_a_collect_whose_environment_holds_the_loop(temporal_address: str, flags, tmp_path) -> None:
    """The workflow is cancelled while scoring holds the environment's loop: the activity ends cancelled meanwhile."""
    queue = f"clotho-env@test-{uuid.uuid4()}/blocking"
    release = tmp_path / "release"
    worker, _ = start_worker(queue, temporal_address, "blocking_env.py", flags("serve", "--env.release_file", str(release)), tmp_path)
    workflow_id = f"atropos-test-{uuid.uuid4()}"

    async def scenario():
        client = await Client.connect(temporal_address)

        async def cancel_once_scoring() -> None:
            # The environment prints this, then holds its loop until the release file exists.
            assert await asyncio.to_thread(worker.stdout.readline) == "scoring item 1\n"
            await client.get_workflow_handle(workflow_id).cancel()

        try:
            with pytest.raises(WorkflowFailureError) as failed:
                await asyncio.wait_for(collect_one(client, queue, workflow_id, {"n": 1}, started=cancel_once_scoring), timeout=60)
            cancelled_while_held = not release.exists()
        finally:
            release.touch()
        events = [e async for e in client.get_workflow_handle(workflow_id).fetch_history_events()]
        return failed.value, cancelled_while_held, events, await attempts_of(client, workflow_id, "atroposCollect")

    try:
        error, cancelled_while_held, events, attempts = asyncio.run(scenario())
    finally:
        stop_worker(worker)
    assert isinstance(error.cause, CancelledError) and cancelled_while_held
    # The first attempt, still heartbeating, heard the cancel and ended cancelled: no heartbeat timeout, no retry.
    assert attempts == [1] and any(e.HasField("activity_task_canceled_event_attributes") for e in events)


def test_a_long_fast_forward_heartbeats_by_time(temporal_address: str, flags, tmp_path) -> None:
    """A new worker skipping 80 items of 50 ms each (4 s) under a 2 s heartbeat timeout: it heartbeats meanwhile."""
    queue = f"clotho-env@test-{uuid.uuid4()}/blocking"
    worker, _ = start_worker(queue, temporal_address, "blocking_env.py", flags("serve", "--env.item_seconds", "0.05"), tmp_path)

    async def scenario():
        client = await Client.connect(temporal_address)
        return await drive_to_the_end(client, queue, items=1, first=80, heartbeat=2, attempts=1)

    try:
        results = asyncio.run(scenario())
    finally:
        stop_worker(worker)
    assert [(r["item"], r["fastForwarded"]) for r in results] == [({"n": 81}, 80)]


def test_a_long_collect_says_where_it_is_in_its_heartbeat(temporal_address: str, flags, tmp_path) -> None:
    """While scoring blocks the loop, the collect's heartbeat details carry its stack and the environment's last output."""
    queue = f"clotho-env@test-{uuid.uuid4()}/blocking"
    release = tmp_path / "release"
    worker, _ = start_worker(queue, temporal_address, "blocking_env.py", flags("serve", "--env.release_file", str(release)), tmp_path)
    workflow_id = f"atropos-test-{uuid.uuid4()}"

    async def heartbeat_details(client: Client) -> dict:
        description = await client.get_workflow_handle(workflow_id).describe()
        for pending in description.raw_description.pending_activities:
            if pending.activity_type.name == "atroposCollect" and pending.heartbeat_details.payloads:
                return json.loads(pending.heartbeat_details.payloads[0].data)
        return {}

    async def scenario():
        client = await Client.connect(temporal_address)
        run = asyncio.ensure_future(drive(client, queue, workflow_id=workflow_id, items=1, heartbeat=2))
        try:
            deadline = time.monotonic() + 60
            details = {}
            while not any("score_slowly" in line for line in details.get("stack", [])):
                assert time.monotonic() < deadline, f"no heartbeat naming score_slowly in 60 s; the last details: {details}"
                await asyncio.sleep(0.2)
                details = await heartbeat_details(client)
        finally:
            release.touch()
        return details, await run

    try:
        details, results = asyncio.run(scenario())
    finally:
        stop_worker(worker)
    assert [r["status"] for r in results] == ["scored"]
    stack = details["stack"]
    # Innermost last, down to the loop that holds the event loop (or the file check it calls).
    functions = [line.rsplit(" in ", 1)[1] for line in stack]
    assert functions[-3:-1] == ["collect_trajectories", "score_slowly"] or functions[-2:] == ["collect_trajectories", "score_slowly"], stack
    assert stack[functions.index("score_slowly")].startswith("blocking_env.py:")
    assert details["lastOutput"][-1] == "scoring item 1" and details["seconds"] > 0
    assert len(json.dumps(details)) < 4096


def test_an_environment_that_scores_in_a_forked_pool(temporal_address: str, flags, tmp_path) -> None:
    """A pool forked while the worker watches its stdin: its children must not inherit a lock held by the watcher."""
    queue = f"clotho-env@test-{uuid.uuid4()}/forked_pool"
    worker, _ = start_worker(queue, temporal_address, "forked_pool_env.py", flags("serve"), tmp_path)

    async def scenario():
        client = await Client.connect(temporal_address)
        try:
            return await asyncio.wait_for(drive_to_the_end(client, queue, items=2), timeout=90)
        except asyncio.TimeoutError:
            pytest.fail("2 groups scored in a forked pool did not finish in 90 s: its children hang")

    try:
        results = asyncio.run(scenario())
    finally:
        os.killpg(worker.pid, signal.SIGKILL)  # the pool's children too, should they hang
        worker.wait()
    assert [r["scores"] for r in results] == [[[1.0, -1.0]], [[1.0, -1.0]]]


def test_an_environment_error_ends_the_worker_with_its_traceback(temporal_address: str, flags, tmp_path) -> None:
    """setup() raises while the command's stdin is open: exit 1 with the traceback, not Python's fatal error on stdin."""
    queue = f"clotho-env@test-{uuid.uuid4()}/flaky"
    command = worker_command(queue, temporal_address, "flaky_env.py", flags("serve"), tmp_path)
    env = {**os.environ, "FLAKY_ENV_SETUP_FAILS": "1"}
    with subprocess.Popen(command, cwd=tmp_path, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as worker:
        code = worker.wait(120)
        stderr = worker.stderr.read()
    assert "FileNotFoundError: the data set is not there" in stderr
    assert "Fatal Python error" not in stderr and code == 1, stderr[-2000:]


def test_the_worker_exits_when_its_stdin_closes_though_its_environment_holds_the_loop(temporal_address: str, flags, tmp_path) -> None:
    """Its command is gone (stdin closed) while scoring holds the loop for good: the worker exits all the same."""
    queue = f"clotho-env@test-{uuid.uuid4()}/blocking"
    argv = flags("serve", "--env.release_file", str(tmp_path / "never"))
    worker, _ = start_worker(queue, temporal_address, "blocking_env.py", argv, tmp_path)

    async def scenario():
        client = await Client.connect(temporal_address)
        run = asyncio.ensure_future(drive(client, queue, items=1))
        try:
            # The environment prints this, then holds the loop.
            assert await asyncio.to_thread(worker.stdout.readline) == "scoring item 1\n"
            worker.stdin.close()
            return await asyncio.to_thread(worker.wait, 60)
        finally:
            run.cancel()

    try:
        code = asyncio.run(scenario())
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
    assert code == 1


class CreatesAFile:
    """Unpickling it runs ``open(path, "w")``: any code could run in its place."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_forged_pickled_item_is_refused_and_never_unpickled(temporal_address: str, flags, tmp_path) -> None:
    """A workflow started by hand hands the worker a pickle it did not make: refused for good, its code never run."""
    queue = f"clotho-env@test-{uuid.uuid4()}/arithmetic"
    worker, _ = start_worker(queue, temporal_address, "arithmetic_env.py", flags("serve"), tmp_path)
    created = tmp_path / "created-by-the-pickle"
    forged = {"$pickle": base64.b64encode(pickle.dumps(CreatesAFile(str(created)))).decode("ascii")}
    workflow_id = f"atropos-test-{uuid.uuid4()}"

    async def scenario():
        client = await Client.connect(temporal_address)
        with pytest.raises(WorkflowFailureError) as failed:
            await collect_one(client, queue, workflow_id, forged)
        return failed.value, await attempts_of(client, workflow_id, "atroposCollect")

    try:
        error, attempts = asyncio.run(scenario())
    finally:
        stop_worker(worker)
    assert not created.exists(), "the forged pickle's code ran in the worker"
    cause = error.cause.cause
    assert cause.type == "AtroposItemRefused" and "has no signature" in cause.message, cause
    assert attempts == [1]  # not retried: the same item would be refused again


def test_pickled_items_the_worker_signed_are_collected(temporal_address: str, flags, tmp_path) -> None:
    """Items only pickle can carry (a closure: cloudpickle), signed by the worker that took them, then collected."""
    queue = f"clotho-env@test-{uuid.uuid4()}/closure_items"
    worker, _ = start_worker(queue, temporal_address, "closure_items_env.py", flags("process"), tmp_path)

    async def scenario():
        client = await Client.connect(temporal_address)
        return await drive_to_the_end(client, queue, items=2)

    try:
        results = asyncio.run(scenario())
    finally:
        stop_worker(worker)
    assert [r["scores"] for r in results] == [[[1.0, -1.0]], [[1.0, -1.0]]]
    assert all("$pickle" in json.dumps(r["item"]) for r in results)
