"""Unit tests of the HTTP client against an in-process transport (a test double of the server)."""

from __future__ import annotations

import gzip
import json
import threading
from typing import Any, Callable

import httpx
import pytest

from clotho_client import LeaseExpiredError, NotRegisteredError, TrajectoryClient, UnknownBatchError
from clotho_client import wire
from clotho_client.wire import GZIP_MIN_BYTES

Handler = Callable[[httpx.Request], httpx.Response]


def client_with(handler: Handler, **kwargs: Any) -> TrajectoryClient:
    return TrajectoryClient("http://api.test", transport=httpx.MockTransport(handler), **kwargs)


def body_of(request: httpx.Request) -> Any:
    raw = request.read()
    if request.headers.get("content-encoding") == "gzip":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def group(n_tokens: int) -> dict[str, Any]:
    return {"tokens": [list(range(n_tokens))] * 2, "masks": [list(range(n_tokens))] * 2, "scores": [1.0, 0.0]}


def test_bodies_of_1_kib_or_more_are_gzipped() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"status": "received"})

    client = client_with(handler)
    client.scored_data(group(2))
    client.scored_data(group(400), idempotency_key="k", policy_version=3)
    small, large = seen
    assert "content-encoding" not in small.headers
    assert len(small.content) < GZIP_MIN_BYTES
    assert large.headers["content-encoding"] == "gzip"
    assert len(gzip.decompress(large.content)) >= GZIP_MIN_BYTES
    assert body_of(large) == {**group(400), "idempotency_key": "k", "policy_version": 3}


def test_a_large_body_that_gzip_would_not_shrink_goes_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    # JSON always compresses; a gzip that grows the body stands in for an incompressible one.
    monkeypatch.setattr(wire.gzip, "compress", lambda data: data + b"padding")
    raw, headers = wire.encode_json(group(400))
    assert "Content-Encoding" not in headers
    assert json.loads(raw) == group(400)


def test_token_is_sent_as_a_bearer_header_and_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    headers: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        headers.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"current_step": 0, "queue_size": 0})

    monkeypatch.delenv("CLOTHO_API_TOKEN", raising=False)
    client_with(handler, token="s3cret").status()
    client_with(handler).status()
    monkeypatch.setenv("CLOTHO_API_TOKEN", "from-env")
    client_with(handler).status()
    assert headers == ["Bearer s3cret", None, "Bearer from-env"]


def test_status_env_sends_a_json_body_on_a_get() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.method == "GET" and request.url.path == "/status-env"
        return httpx.Response(200, json={"queue_size": body_of(request)["env_id"]})

    assert client_with(handler).status_env(7) == {"queue_size": 7}


def test_batch_parses_leases_nulls_and_the_not_registered_payload() -> None:
    answers = [
        {"batch": [group(2)], "batch_id": "b-1", "lease_expires_at": 1234.5},
        {"batch": None},
        {"status": "error", "message": "Trainer not registered. Call /register first.", "batch": []},
    ]
    queries: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        queries.append(str(request.url.params))
        return httpx.Response(200, json=answers.pop(0))

    client = client_with(handler)
    leased = client.batch(lease_seconds=30)
    assert leased is not None and leased.batch_id == "b-1" and leased.lease_expires_at == 1234.5
    assert leased.groups == [group(2)]
    assert client.batch() is None
    with pytest.raises(NotRegisteredError):
        client.batch()
    assert queries == ["lease_seconds=30", "", ""]


def test_ack_errors_map_to_exceptions() -> None:
    statuses = [404, 409]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(statuses.pop(0), json={"status": "failure", "error": "nope"})

    client = client_with(handler)
    with pytest.raises(UnknownBatchError):
        client.ack("a")
    with pytest.raises(LeaseExpiredError):
        client.ack("a")


def test_iter_batches_acks_after_the_body_returns_and_never_after_it_raises() -> None:
    served = iter(["b-1", "b-2"])
    acked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/batch/ack":
            acked.append(body_of(request)["batch_id"])
            return httpx.Response(200, json={"status": "success"})
        batch_id = next(served, None)
        if batch_id is None:
            return httpx.Response(200, json={"batch": None})
        return httpx.Response(200, json={"batch": [group(2)], "batch_id": batch_id, "lease_expires_at": 1e10})

    client = client_with(handler)
    with pytest.raises(RuntimeError):
        for batch in client.iter_batches(lease_seconds=10, poll_interval=0.01):
            if batch.batch_id == "b-1":
                assert acked == []  # not before the step has finished
            else:
                raise RuntimeError("crash mid-step")
    assert acked == ["b-1"]


def test_run_pull_loop_backs_off_while_empty_and_acks_each_batch() -> None:
    answers = [None, None, "b-1", None, "b-2"]
    acked: list[str] = []
    stop = threading.Event()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/batch/ack":
            acked.append(body_of(request)["batch_id"])
            return httpx.Response(200, json={"status": "success"})
        batch_id = answers.pop(0) if answers else None
        if batch_id is None:
            return httpx.Response(200, json={"batch": None})
        return httpx.Response(200, json={"batch": [group(2)], "batch_id": batch_id, "lease_expires_at": 1e10})

    steps: list[str] = []
    count = client_with(handler).run_pull_loop(lambda b: steps.append(b.batch_id), 10, max_batches=2, poll_interval=0.001, stop=stop)
    assert count == 2 and steps == ["b-1", "b-2"] and acked == ["b-1", "b-2"]
    assert answers == []


def test_transient_errors_are_retried_and_a_404_after_a_lost_ack_counts_as_acked(caplog: pytest.LogCaptureFixture) -> None:
    events: list[str] = []
    script: list[Any] = [
        httpx.Response(503, text="busy"),  # GET /batch: retried
        {"batch": [group(2)], "batch_id": "b-1", "lease_expires_at": 1e10},
        httpx.ConnectError("reset"),  # first ack lost on the way back
        httpx.Response(404, json={"status": "failure", "error": "unknown batch_id b-1"}),
        {"batch": [group(2)], "batch_id": "b-2", "lease_expires_at": 1e10},
        httpx.Response(409, json={"status": "failure", "error": "lease expired before the ack"}),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        events.append(request.url.path)
        step = script.pop(0)
        if isinstance(step, Exception):
            raise step
        return step if isinstance(step, httpx.Response) else httpx.Response(200, json=step)

    done = client_with(handler).run_pull_loop(lambda _b: None, 10, max_batches=2, poll_interval=0.001)
    assert done == 2 and script == []
    assert events == ["/batch", "/batch", "/batch/ack", "/batch/ack", "/batch", "/batch/ack"]
    assert "b-2: not acked" in caplog.text
