"""`clotho api --trainer temporal` feeding `run_trainer_worker` through the trainer task queue."""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import uuid
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from clotho_client import TrajectoryClient, UnknownBatchError, run_trainer_worker
from servers import Process, start_api, terminate_workflow, wait_until
from test_http_api import group, tags


class WorkerThread:
    """Runs `run_trainer_worker` on its own event loop in a thread, as a trainer process would."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop: Optional[asyncio.Event] = None
        self._started = threading.Event()
        self.error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self._started.set()
            await run_trainer_worker(stop=self._stop, **self._options)

        try:
            asyncio.run(main())
        except BaseException as error:  # noqa: BLE001 - reported by stop()
            self.error = error
            self._started.set()

    def start(self) -> None:
        self._thread.start()
        assert self._started.wait(30), "worker thread did not start"

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        assert not self._thread.is_alive(), "worker did not shut down"
        if self.error is not None:
            raise self.error


@pytest.fixture
def temporal_trainer_api(temporal_address: str, store_dir: Path) -> Iterator[tuple[str, str]]:
    """`clotho api --trainer temporal` on a task queue of its own; yields its URL and that queue."""
    queue = f"py-test-trainer-{uuid.uuid4()}"
    batcher_id = f"py-test/temporal/{uuid.uuid4()}"
    api, url = start_api(temporal_address, store_dir, "--trainer", "temporal", "--trainer-task-queue", queue, "--batcher-id", batcher_id)
    try:
        yield url, queue
    finally:
        api.stop()
        api.print_tail()
        terminate_workflow(temporal_address, batcher_id)


def test_steps_arrive_in_order_with_their_groups_and_completing_them_acks(
    temporal_trainer_api: tuple[str, str], temporal_address: str
) -> None:
    url, queue = temporal_trainer_api
    calls: list[tuple[int, str, list[int]]] = []
    attempts: dict[str, int] = {}

    async def train(step: int, batch_id: str, groups: list[dict[str, Any]]) -> None:
        attempts[batch_id] = attempts.get(batch_id, 0) + 1
        if len(calls) == 0 and attempts[batch_id] == 1:
            # A trainer that crashes mid-step: Temporal retries the step, nothing is lost.
            raise RuntimeError("crash in the first attempt")
        calls.append((step, batch_id, tags(groups)))

    worker = WorkerThread(callback=train, api_url=url, temporal_address=temporal_address, task_queue=queue, heartbeat_interval=0.2)
    worker.start()
    try:
        with TrajectoryClient(url) as client:
            client.register(batch_size=4, max_token_len=2048, num_steps=10, trainer="temporal")
            client.scored_data_list([group(11), group(12), group(13), group(14)])
            wait_until(lambda: len(calls) >= 2, timeout=30, what="two trainStep calls")
            (step_a, batch_a, groups_a), (step_b, batch_b, groups_b) = calls[:2]
            assert step_b == step_a + 1
            assert groups_a == [11, 12] and groups_b == [13, 14]
            assert attempts[batch_a] == 2 and attempts[batch_b] == 1

            def acked(batch_id: str) -> bool:
                try:
                    client.batch_by_id(batch_id)
                    return False
                except UnknownBatchError:
                    return True

            wait_until(lambda: acked(batch_a) and acked(batch_b), timeout=15, what="both batches to be acked")
            assert client.status().queue_size == 0
    finally:
        worker.stop()
    assert len(calls) == 2


def test_a_plain_function_callback_runs_and_the_worker_stops_cleanly(
    temporal_trainer_api: tuple[str, str], temporal_address: str
) -> None:
    url, queue = temporal_trainer_api
    seen: list[tuple[int, list[int]]] = []
    main_thread = threading.main_thread()

    def train(step: int, batch_id: str, groups: list[dict[str, Any]]) -> None:
        assert threading.current_thread() is not main_thread
        seen.append((step, tags(groups)))

    worker = WorkerThread(callback=train, api_url=url, temporal_address=temporal_address, task_queue=queue)
    worker.start()
    try:
        with TrajectoryClient(url) as client:
            client.register(batch_size=2, max_token_len=2048, num_steps=10, trainer="temporal")
            client.scored_data(group(21))
            wait_until(lambda: seen, timeout=30, what="a trainStep call")
            assert seen[0][1] == [21]
    finally:
        worker.stop()


# A trainer process whose step never finishes by itself; it prints when the step starts.
_SLOW_TRAINER = """
import asyncio, sys
from datetime import timedelta
from clotho_client import run_trainer_worker

async def train(step, batch_id, groups):
    print(f"started {step} {batch_id}", flush=True)
    await asyncio.sleep(600)

asyncio.run(run_trainer_worker(train, api_url=sys.argv[1], temporal_address=sys.argv[2], task_queue=sys.argv[3],
                               heartbeat_interval=0.2, graceful_shutdown_timeout=timedelta(seconds=1)))
print("worker stopped", flush=True)
"""


def test_sigint_stops_the_worker_without_completing_the_step_and_the_step_runs_again(
    temporal_trainer_api: tuple[str, str], temporal_address: str
) -> None:
    url, queue = temporal_trainer_api
    trainer = Process([sys.executable, "-c", _SLOW_TRAINER, url, temporal_address, queue])
    try:
        with TrajectoryClient(url) as client:
            client.register(batch_size=2, max_token_len=2048, num_steps=10, trainer="temporal")
            client.scored_data(group(31))
            started = trainer.wait_for_line(r"started (\d+) (\S+)", timeout=30)
            step, batch_id = int(started.group(1)), started.group(2)
            trainer.popen.send_signal(signal.SIGINT)
            assert trainer.popen.wait(20) == 0, "\n".join(trainer.lines)
            assert "worker stopped" in trainer.lines
            # Not completed, so not acked: the batch is still held for the trainer.
            assert tags(client.batch_by_id(batch_id).groups) == [31]

            seen: list[tuple[int, str]] = []
            worker = WorkerThread(
                callback=lambda s, b, _groups: seen.append((s, b)), api_url=url, temporal_address=temporal_address, task_queue=queue
            )
            worker.start()
            try:
                wait_until(lambda: seen, timeout=30, what="the interrupted step to run again")
            finally:
                worker.stop()
            assert seen == [(step, batch_id)]
    finally:
        trainer.stop()
