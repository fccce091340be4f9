"""Keeping leases alive (LeaseKeeper) against the real `clotho api` and Temporal server, without PyTorch: the lease
bookkeeping of the GRPO trainer, which acks a batch only once a checkpoint holds its step."""

from __future__ import annotations

import httpx
import pytest

from clotho_client import LeaseExpiredError, LeaseKeeper, LeaseLostError, TrajectoryClient
from clotho_client.leases import unrenewed_refusal

LEASE = 1.5


def _group(tag: int) -> dict:
    return {"tokens": [[tag, 1, 2], [tag, 3, 4]], "masks": [[-100, 1, 2], [-100, 3, 4]], "scores": [1.0, 0.0]}


@pytest.fixture(scope="module")
def api(http_api: str) -> TrajectoryClient:
    client = TrajectoryClient(http_api)
    client.register(batch_size=2, max_token_len=2048, num_steps=100)
    return client


def test_a_held_lease_outlives_its_first_end_and_acks_while_one_not_held_runs_out(api: TrajectoryClient, http_api: str) -> None:
    api.scored_data_list([_group(1), _group(2)])
    held = api.batch(lease_seconds=LEASE)
    dropped = api.batch(lease_seconds=LEASE)
    assert held and dropped and held.batch_id and dropped.batch_id
    with LeaseKeeper(http_api, LEASE, interval=0.25) as keeper:
        keeper.hold(held.batch_id)
        # Ten renewals a quarter of a second apart: both leases were taken more than 1.5 s ago by then.
        assert keeper.wait_renewed(10, timeout=60), f"renewed {keeper.renewed}, failed {keeper.failures}"
        keeper.check()
        keeper.release(held.batch_id)
        api.ack(held.batch_id)
    with pytest.raises(LeaseExpiredError):
        api.ack(dropped.batch_id)
    # The one that ran out is served again, under a lease of its own.
    again = api.batch(lease_seconds=60)
    assert again and again.batch_id == f"{dropped.batch_id}.lease-2" and again.groups == dropped.groups
    api.ack(again.batch_id)


def test_a_lease_the_api_will_not_renew_is_lost_and_stops_the_trainer(api: TrajectoryClient, http_api: str) -> None:
    api.scored_data_list([_group(3)])
    lapsed = api.batch(lease_seconds=0.001)
    assert lapsed and lapsed.batch_id
    with LeaseKeeper(http_api, 60, interval=3600) as keeper:
        keeper.hold(lapsed.batch_id)
        keeper.renew_now()
        assert keeper.lost == {lapsed.batch_id: "expired"} and keeper.held == []
        with pytest.raises(LeaseLostError, match=f"lease {lapsed.batch_id} \\(expired\\) ran out before the trainer could ack"):
            keeper.check()
    # Served again to whoever asks next: that is why the trainer stops.
    again = api.batch(lease_seconds=60)
    assert again and again.batch_id == f"{lapsed.batch_id}.lease-2"
    api.ack(again.batch_id)


def test_the_api_says_whether_it_renews_leases(api: TrajectoryClient) -> None:
    assert api.renews_leases() is None
    assert api.renew([], 10) == []
    # Atropos's run-api, or a clotho api from before renewals: no such route.
    old = TrajectoryClient("http://old.test", transport=httpx.MockTransport(lambda _: httpx.Response(404, json={"detail": "Not Found"})))
    assert old.renews_leases() == 404


def test_leases_that_are_not_renewed_are_refused_with_checkpoints_several_steps_apart() -> None:
    assert unrenewed_refusal(None, 10, 600) is None
    assert unrenewed_refusal(404, 1, 600) is None
    refusal = unrenewed_refusal(404, 5, 3)
    assert refusal is not None
    assert "POST /batch/renew answered 404" in refusal
    assert "--checkpoint-interval 5 its lease (--lease-seconds 3) would have to outlive 5 steps" in refusal
