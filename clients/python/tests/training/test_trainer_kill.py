"""kill -9 of the trainer while it trains and while it syncs weights: it resumes from its last checkpoint, every batch
the API formed is trained exactly once, and the engine ends on the trainer's last version."""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from conftest import Stack, kill_9, metrics_of
from servers import wait_until

STEPS = 8
SEED = 20261127


class WeightsGate:
    """A pass-through proxy in front of the engine's ``POST /v1/weights`` that can hold one version's call unanswered,
    so the test can kill the trainer while it syncs."""

    def __init__(self, engine_url: str, hold_version: int) -> None:
        self.engine_url = engine_url
        self.hold_version = hold_version
        self.held = threading.Event()
        self.release = threading.Event()
        self.calls: list[int] = []
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["content-length"]))
                version = json.loads(body)["version"]
                gate.calls.append(version)
                if version == gate.hold_version and not gate.held.is_set():
                    gate.held.set()
                    gate.release.wait(120)
                    return  # the trainer is dead by now; it gets no answer
                answer = httpx.post(f"{gate.engine_url}{self.path}", content=body, headers={"content-type": "application/json"}, timeout=120)
                self.send_response(answer.status_code)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(answer.content)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()


@pytest.fixture
def rng() -> random.Random:
    return random.Random(SEED)


def test_trainer_killed_while_training_and_while_syncing_loses_and_repeats_no_batch(stack: Stack, tmp_path: Path, rng: random.Random) -> None:
    stack.start_engine_and_api()
    save = tmp_path / "trainer"
    kill_in_training = rng.randint(2, 3)  # killed while training the batch of this step
    held_sync = rng.randint(5, 6)  # killed while the engine is being given this version
    gate = WeightsGate(stack.engine_url, held_sync)
    args = ("--batch-size", "16", "--gradient-accumulation-steps", "1", "--lr", "1e-3", "--training-steps", str(STEPS), "--lease-seconds", "300")
    try:
        trainer = stack.trainer(save, *args, inference_url=gate.url)
        trainer.wait_for_line(r"loaded .* in", timeout=180)
        stack.start_serve("--env.max_batches_offpolicy", "1")

        # 1. While training: the journal names the batch of step `kill_in_training` before its step is taken.
        journal = save / "inflight.json"
        wait_until(lambda: journal.is_file() and json.loads(journal.read_text())["step"] == kill_in_training - 1, 600, "the batch of the step to kill in", 0.02)
        kill_9(trainer)
        trainer = stack.trainer(save, *args, inference_url=gate.url)
        trainer.wait_for_line(r"taking back batch", timeout=180)

        # 2. While syncing: the gate holds the POST of version `held_sync` until the trainer is dead.
        assert gate.held.wait(600), "the trainer never synced the version to kill in"
        kill_9(trainer)
        gate.release.set()
        trainer = stack.trainer(save, *args, inference_url=gate.url)
        assert trainer.popen.wait(timeout=900) == 0, "the resumed trainer failed"
    finally:
        gate.close()

    state = json.loads((save / "checkpoints" / f"step-{STEPS}" / "state.json").read_text())
    history = state["history"]
    assert [h["step"] for h in history] == list(range(1, STEPS + 1))
    leases = [h["lease"] for h in history]
    assert len(set(leases)) == STEPS, f"a lease trained twice: {leases}"
    groups = [g for h in history for g in h["groups"]]
    assert len(groups) == len(set(groups)) == STEPS * 2, "a group was trained twice, or a batch had the wrong size"
    assert state["unacked_leases"] == []
    # The API formed exactly the batches trained: none lost (waiting under a lease nobody acks), none served twice.
    status = httpx.get(f"{stack.api_url}/status").json()
    assert status["current_step"] == STEPS, status
    # The held version was synced again after the restart, and the engine serves the last one.
    assert gate.calls.count(held_sync) == 2, gate.calls
    assert sorted(set(gate.calls)) == list(range(1, STEPS + 1))
    assert httpx.get(f"{stack.engine_url}/v1/weights").json()["version"] == STEPS
    assert len(metrics_of(save)) == STEPS
