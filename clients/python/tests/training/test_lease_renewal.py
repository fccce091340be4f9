"""A trainer that acks only at its checkpoints, with a lease shorter than the time between them (scaled down: a 3 s lease,
steps of 1 s, a checkpoint every 5 steps), against `clotho api` on a real Temporal server: every batch is trained once."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from clotho_client import LeaseKeeper, LeaseLostError, TrajectoryClient
from clotho_client.training.config import TrainerConfig
from clotho_client.training.grpo_trainer import GrpoTrainer
from servers import start_api, terminate_workflow

LEASE_SECONDS = 3.0
STEP_SECONDS = 1.0
CHECKPOINT_INTERVAL = 5
STEPS = 10


def _group(tag: int) -> dict[str, Any]:
    tokens = [[tag, 100 + i, 200 + i, 300 + i] for i in range(2)]
    return {"tokens": tokens, "masks": [[-100, *t[1:]] for t in tokens], "scores": [1.0, -1.0]}


def _trainer(url: str, save: Path, model: Path, **settings: Any) -> GrpoTrainer:
    """The GRPO trainer on the tiny model whose every step takes STEP_SECONDS at least, as a real model's would here."""
    config = TrainerConfig(
        save_path=str(save), model=str(model), atropos_url=url, batch_size=2, gradient_accumulation_steps=1,
        allow_missing_logprobs=True, device="cpu", keep_checkpoints=1, **settings,
    )
    trainer = GrpoTrainer(config)
    train_on = trainer.train_on

    def step_of_a_second(groups: Any) -> dict[str, float]:
        started = time.monotonic()
        metrics = train_on(groups)
        time.sleep(max(0.0, STEP_SECONDS - (time.monotonic() - started)))
        return metrics

    trainer.train_on = step_of_a_second  # type: ignore[method-assign]
    return trainer


def test_a_lease_shorter_than_the_checkpoint_interval_is_renewed_and_no_batch_is_trained_twice(
    temporal_address: str, tmp_path: Path, tiny_gguf: Path
) -> None:
    batcher_id = f"py-test/lease-renewal/{uuid.uuid4()}"
    api, url = start_api(temporal_address, tmp_path / "store", "--batcher-id", batcher_id)
    save = tmp_path / "trainer"
    try:
        trainer = _trainer(
            url, save, tiny_gguf, training_steps=STEPS, checkpoint_interval=CHECKPOINT_INTERVAL, lease_seconds=LEASE_SECONDS
        )
        with TrajectoryClient(url) as client:
            client.scored_data_list([_group(i) for i in range(1, STEPS + 1)], idempotency_keys=[f"g{i}" for i in range(STEPS)])
        trainer.run_http()
        metrics = httpx.get(f"{url}/metrics").text
    finally:
        api.stop()
        api.print_tail(20)
        terminate_workflow(temporal_address, batcher_id)

    state = json.loads((save / "checkpoints" / f"step-{STEPS}" / "state.json").read_text())
    leases = [h["lease"] for h in state["history"]]
    batches = [lease.split(".lease-")[0] for lease in leases]
    assert len(set(batches)) == STEPS, f"a batch was trained twice: {leases}"
    groups = [g for h in state["history"] for g in h["groups"]]
    assert len(set(groups)) == STEPS, "a group was trained twice"
    assert state["unacked_leases"] == [] and state.get("leases_lost", []) == []
    assert "clotho_leases_expired_total 0" in metrics, metrics


def test_an_ack_refused_after_the_checkpoint_is_recorded_and_stops_the_trainer_once(
    temporal_address: str, tmp_path: Path, tiny_gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No renewal gets through (the API unreachable for them, say) and a step outlasts the lease: the checkpoint holds the
    step, the ack is refused (409). The lost lease is recorded and the trainer fails; restarted, it does not fail again."""
    batcher_id = f"py-test/lease-lost/{uuid.uuid4()}"
    api, url = start_api(temporal_address, tmp_path / "store", "--batcher-id", batcher_id)
    save = tmp_path / "trainer"
    try:
        with TrajectoryClient(url) as client:
            client.scored_data_list([_group(1)])
        with monkeypatch.context() as m:
            m.setattr(LeaseKeeper, "renew_now", lambda _self: None)
            trainer = _trainer(url, save, tiny_gguf, training_steps=1, checkpoint_interval=1, lease_seconds=STEP_SECONDS / 2)
            with pytest.raises(LeaseLostError, match="refused the ack of batch-1-1 .* 1 lease\\(s\\) lost in this run"):
                trainer.run_http()
        state = json.loads((save / "checkpoints" / "step-1" / "state.json").read_text())
        assert [(lost["lease"], lost["step"]) for lost in state["leases_lost"]] == [("batch-1-1", 1)]
        assert state["unacked_leases"] == []
        assert json.loads((save / "metrics.jsonl").read_text().splitlines()[-1]) == {"step": 1, "leases_lost": 1.0}
        # The same command again: the step is done, the loss on record; nothing to ack twice, no second failure.
        _trainer(url, save, tiny_gguf, training_steps=1, checkpoint_interval=1, lease_seconds=60).run_http()
    finally:
        api.stop()
        terminate_workflow(temporal_address, batcher_id)
