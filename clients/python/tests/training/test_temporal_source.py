"""`--source temporal`: batches as trainStep activities from `clotho api --trainer temporal`, exactly once across a
kill -9 of the trainer right after a checkpoint (before or after its trainStep completed: both must hold)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from conftest import Stack, kill_9, metrics_of
from servers import wait_until

STEPS = 4


def test_temporal_trainer_trains_each_step_once_across_a_kill(stack: Stack, tmp_path: Path) -> None:
    stack.start_engine_and_api("--trainer", "temporal", "--trainer-heartbeat-timeout", "5")
    save = tmp_path / "trainer"
    args = ("--source", "temporal", "--batch-size", "16", "--gradient-accumulation-steps", "1", "--lr", "1e-3", "--training-steps", str(STEPS))
    trainer = stack.trainer(save, *args)
    trainer.wait_for_line(r"loaded .* in", timeout=180)
    stack.start_serve("--env.max_batches_offpolicy", "1")

    latest = save / "checkpoints" / "latest"
    wait_until(lambda: latest.is_file() and latest.read_text().strip() == "step-2", 600, "the checkpoint of step 2", 0.02)
    kill_9(trainer)
    trainer = stack.trainer(save, *args)
    assert trainer.popen.wait(timeout=900) == 0, "the resumed trainer failed"

    state = json.loads((save / "checkpoints" / f"step-{STEPS}" / "state.json").read_text())
    assert [h["step"] for h in state["history"]] == list(range(1, STEPS + 1))
    batcher_steps = [h["batcher_step"] for h in state["history"]]
    assert len(set(batcher_steps)) == STEPS and batcher_steps == sorted(batcher_steps), batcher_steps
    groups = [g for h in state["history"] for g in h["groups"]]
    assert len(groups) == len(set(groups)) == STEPS * 2
    assert len(metrics_of(save)) == STEPS
    assert httpx.get(f"{stack.engine_url}/v1/weights").json()["version"] == STEPS
