"""The client against the real `clotho api` on a Temporal dev server: register, post, lease, ack, expiry."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from clotho_client import LeaseExpiredError, TrajectoryClient, UnknownBatchError, advantages
from servers import wait_until


def group(tag: int, n_tokens: int = 3) -> dict[str, Any]:
    """A group of two sequences whose first token is `tag`, so tests can tell groups apart."""
    seq = [tag, *range(1, n_tokens)]
    return {"tokens": [seq, seq], "masks": [[-100, *seq[1:]]] * 2, "scores": [1.0, 0.0]}


def tags(groups: list[dict[str, Any]]) -> list[int]:
    return [g["tokens"][0][0] for g in groups]


@pytest.fixture
def client(http_api: str) -> Iterator[TrajectoryClient]:
    with TrajectoryClient(http_api, timeout=30) as c:
        c.reset()
        c.register(batch_size=4, max_token_len=2048, num_steps=10, wandb_project="py-test")
        yield c


def test_register_post_lease_ack(client: TrajectoryClient) -> None:
    assert client.info().batch_size == 4
    assert client.scored_data(group(1), idempotency_key="g1") == {"status": "received"}
    # The same key again is acknowledged but not queued twice.
    assert client.scored_data(group(1), idempotency_key="g1")["status"] == "received"
    # Over 1 KiB: sent gzipped, and it must arrive intact.
    big = group(2, n_tokens=600)
    assert client.scored_data_list([big], policy_version=0)["groups_processed"] == 1
    assert client.status().queue_size == 2

    before = time.time()
    batch = client.batch(lease_seconds=60)
    assert batch is not None and batch.batch_id
    assert batch.lease_expires_at is not None and before + 50 < batch.lease_expires_at < time.time() + 70
    assert tags(batch.groups) == [1, 2]
    assert batch.groups[1]["tokens"] == big["tokens"] and batch.groups[1]["masks"] == big["masks"]
    assert advantages(batch.groups[0]) == [1.0, -1.0]
    assert client.batch_by_id(batch.batch_id).groups == batch.groups

    client.ack(batch.batch_id)
    with pytest.raises(UnknownBatchError):
        client.batch_by_id(batch.batch_id)
    assert client.batch(lease_seconds=60) is None


def test_env_endpoints_after_the_trainer_started(client: TrajectoryClient) -> None:
    assert client.batch() is None  # the trainer's first /batch lets environments register
    env = client.register_env(max_token_length=2048, desired_name="py", group_size=2)
    assert env["status"] == "success"
    client.scored_data({**group(5), "env_id": env["env_id"]})
    status = client.status_env(env["env_id"])
    assert status["self_queue_size"] == 1 and status["max_group_size"] == 2


def test_floats_come_back_as_floats_and_free_form_numbers_as_posted(client: TrajectoryClient) -> None:
    # Python ints where Atropos types floats; free-form numbers of both kinds, and one too long for a double.
    posted = {
        **group(31),
        "scores": [1, 0],
        "inference_logprobs": [[1, 1, -1], [1.0, 1.0, -2]],
        "generation_params": {"temperature": 1.0, "max_tokens": 64, "seed": 12345678901234567890},
        "overrides": [{"temperature": 2.0}, {}],
        "group_overrides": {"group_size": 2},
        "messages": [[{"role": "assistant", "content": "a", "reward": 1.0}], [{"role": "assistant", "content": {"parts": 2}}]],
    }
    client.scored_data_list([posted, group(32)])
    batch = client.batch(lease_seconds=60)
    assert batch is not None and tags(batch.groups) == [31, 32]
    served = batch.groups[0]
    assert [type(s) for s in served["scores"]] == [float, float] and served["scores"] == [1.0, 0.0]
    assert all(type(lp) is float for row in served["inference_logprobs"] for lp in row)
    assert all(type(t) is int for row in served["tokens"] for t in row)
    params = served["generation_params"]
    assert type(params["temperature"]) is float and type(params["max_tokens"]) is int
    assert params["seed"] == 12345678901234567890
    assert type(served["overrides"][0]["temperature"]) is float
    assert type(served["group_overrides"]["group_size"]) is int
    assert type(served["messages"][0][0]["reward"]) is float and served["messages"][1][0]["content"] == {"parts": 2}
    client.ack(batch.batch_id)


def test_a_batch_not_acked_comes_back_after_its_lease(client: TrajectoryClient) -> None:
    client.scored_data_list([group(7), group(8)])
    with pytest.raises(RuntimeError, match="crash"):
        for batch in client.iter_batches(lease_seconds=1, poll_interval=0.05):
            assert tags(batch.groups) == [7, 8]
            raise RuntimeError("crash mid-step")
    # Nothing else to serve while the lease holds it.
    assert client.batch(lease_seconds=1) is None

    served = wait_until(lambda: client.batch(lease_seconds=60), timeout=20, what="the expired batch to be served again", interval=0.2)
    assert tags(served.groups) == [7, 8]
    client.ack(served.batch_id)
    assert client.batch(lease_seconds=60) is None and client.status().queue_size == 0


def test_a_late_ack_changes_nothing_and_the_batch_outlives_the_next_trainer(client: TrajectoryClient) -> None:
    client.scored_data_list([group(21), group(22)])
    slow = client.batch(lease_seconds=1)
    assert slow is not None and tags(slow.groups) == [21, 22]
    # The slow trainer's lease runs out; the next trainer gets the same batch under a lease of its own.
    crashed = wait_until(lambda: client.batch(lease_seconds=2), timeout=20, what="the first lease to run out")
    assert tags(crashed.groups) == [21, 22] and crashed.batch_id != slow.batch_id
    with pytest.raises(LeaseExpiredError):
        client.ack(slow.batch_id)
    # That trainer dies without acking: the batch is served a third time, whole.
    third = wait_until(lambda: client.batch(lease_seconds=60), timeout=20, what="the second lease to run out")
    assert tags(third.groups) == [21, 22] and third.batch_id not in (slow.batch_id, crashed.batch_id)
    assert client.batch_by_id(slow.batch_id).groups == third.groups
    client.ack(third.batch_id)
    with pytest.raises(UnknownBatchError):
        client.ack(crashed.batch_id)
    assert client.batch(lease_seconds=60) is None


def test_the_example_prints_advantages_and_acks(client: TrajectoryClient, http_api: str) -> None:
    client.scored_data_list([group(41), {**group(42), "scores": [3.0, 1.0]}])
    example = Path(__file__).resolve().parents[1] / "examples" / "grpo_advantages.py"
    run = subprocess.run(
        [sys.executable, str(example), "--api-url", http_api, "--no-register", "--max-batches", "1", "--lease-seconds", "30"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "2 groups, 4 sequences, mean score +1.2500, mean advantage +0.0000, mean |advantage| 1.0000" in run.stdout
    assert "1 batches acked" in run.stdout
    assert client.batch(lease_seconds=30) is None and client.status().queue_size == 0
