"""A client of the Atropos-compatible trajectory API served by ``clotho api`` (or Atropos's ``run-api``)."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence
from urllib.parse import quote

import httpx

from . import pull
from .errors import ApiError, LeaseExpiredError, NotRegisteredError, UnknownBatchError
from .types import Batch, Info, LeaseRenewal, ScoredDataGroup, Status
from .wire import auth_headers, encode_json

_NO_BODY = object()


class TrajectoryClient:
    """Speaks the trajectory API (ATROPOS-API.md §1.3) plus Clotho's leases, acks and idempotency keys.

    Args:
        base_url: where the API listens, e.g. ``http://localhost:8000``.
        token: bearer token; ``None`` reads ``$CLOTHO_API_TOKEN`` (unset: no header).
        timeout: seconds per request.
        transport: an ``httpx`` transport, for tests.
    """

    def __init__(
        self,
        base_url: str = "http://localhost:8000",
        token: Optional[str] = None,
        timeout: float = 30.0,
        *,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=auth_headers(token),
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        """Closes the connection pool."""
        self._http.close()

    def __enter__(self) -> "TrajectoryClient":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, body: Any = _NO_BODY, params: Optional[Mapping[str, Any]] = None) -> Any:
        content, headers = (None, None) if body is _NO_BODY else encode_json(body)
        response = self._http.request(method, path, content=content, headers=headers, params=params)
        if response.status_code >= 400:
            raise _error_for(response)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    def _object(self, method: str, path: str, body: Any = _NO_BODY, params: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
        data = self._request(method, path, body, params)
        if not isinstance(data, dict):
            raise ApiError(f"{method} {path}: expected a JSON object, got {data!r:.200}", 200, data)
        return data

    def wait_for_server(self, timeout: float = 30.0, interval: float = 0.5) -> None:
        """Polls ``GET /info`` until it answers, as Atropos's trainer does before registering."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.info()
                return
            except (httpx.TransportError, ApiError):
                if time.monotonic() >= deadline:
                    raise
            time.sleep(interval)

    def register(
        self,
        *,
        batch_size: int,
        max_token_len: int,
        num_steps: int,
        wandb_group: str = "",
        wandb_project: str = "",
        checkpoint_dir: str = "",
        save_checkpoint_interval: Optional[int] = None,
        starting_step: int = 0,
        trainer: Optional[str] = None,
        new_run: bool = False,
    ) -> int:
        """``POST /register``: announces the trainer; returns Atropos's uuid (a 128-bit integer).

        ``save_checkpoint_interval`` defaults to ``num_steps``, as Atropos's example trainer sends it.
        ``trainer="temporal"`` registers the trainer workers of ``clotho api --trainer temporal`` (which refuses
        HTTP trainers); ``new_run=True`` starts a new training run whatever the settings.
        """
        body = {
            "wandb_group": wandb_group,
            "wandb_project": wandb_project,
            "batch_size": batch_size,
            "max_token_len": max_token_len,
            "checkpoint_dir": checkpoint_dir,
            "save_checkpoint_interval": num_steps if save_checkpoint_interval is None else save_checkpoint_interval,
            "starting_step": starting_step,
            "num_steps": num_steps,
        }
        params: dict[str, str] = {}
        if trainer is not None:
            params["trainer"] = trainer
        if new_run:
            params["new_run"] = "true"
        return int(self._object("POST", "/register", body, params=params or None)["uuid"])

    def info(self) -> Info:
        """``GET /info``: the registered trainer's batch size and max token length (``-1`` before)."""
        data = self._object("GET", "/info")
        return Info(batch_size=data["batch_size"], max_token_len=data["max_token_len"])

    def status(self) -> Status:
        """``GET /status``: the step (batches formed) and the number of queued groups."""
        data = self._object("GET", "/status")
        return Status(current_step=data["current_step"], queue_size=data["queue_size"])

    def wandb_info(self) -> dict[str, Any]:
        """``GET /wandb_info``."""
        return self._object("GET", "/wandb_info")

    def latest_example(self) -> dict[str, Any]:
        """``GET /latest_example``: the last queued group (Atropos's placeholder of empty lists before any)."""
        return self._object("GET", "/latest_example")

    def register_env(
        self,
        *,
        max_token_length: int,
        desired_name: str,
        group_size: int,
        weight: float = 1.0,
        min_batch_allocation: Optional[float] = None,
    ) -> dict[str, Any]:
        """``POST /register-env``: ``{"status": "wait for trainer to start"}`` until the first ``/batch``."""
        body = {
            "max_token_length": max_token_length,
            "desired_name": desired_name,
            "weight": weight,
            "group_size": group_size,
            "min_batch_allocation": min_batch_allocation,
        }
        return self._object("POST", "/register-env", body)

    def disconnect_env(self, env_id: int) -> dict[str, Any]:
        """``POST /disconnect-env``."""
        return self._object("POST", "/disconnect-env", {"env_id": env_id})

    def status_env(self, env_id: int) -> dict[str, Any]:
        """``GET /status-env`` with the env id as a JSON body on the GET, as Atropos's environments send it."""
        return self._object("GET", "/status-env", {"env_id": env_id})

    def scored_data(
        self,
        group: ScoredDataGroup | Mapping[str, Any],
        idempotency_key: Optional[str] = None,
        policy_version: Optional[int] = None,
    ) -> dict[str, Any]:
        """``POST /scored_data``: ``{"status": "received"}``, ``"buffered"``, or (Clotho) ``"dropped"``.

        A group posted again with the same ``idempotency_key`` is acknowledged and not queued twice;
        ``policy_version`` is the trainer step whose policy generated it (for staleness limits).
        """
        return self._object("POST", "/scored_data", _with_additions(group, idempotency_key, policy_version))

    def scored_data_list(
        self,
        groups: Iterable[ScoredDataGroup | Mapping[str, Any]],
        idempotency_keys: Optional[Sequence[Optional[str]]] = None,
        policy_version: Optional[int] = None,
    ) -> dict[str, Any]:
        """``POST /scored_data_list``: several groups in one request; keys, when given, pair with groups in order."""
        groups = list(groups)
        keys = list(idempotency_keys) if idempotency_keys is not None else [None] * len(groups)
        if len(keys) != len(groups):
            raise ValueError(f"{len(groups)} groups but {len(keys)} idempotency keys")
        body = [_with_additions(g, k, policy_version) for g, k in zip(groups, keys)]
        return self._object("POST", "/scored_data_list", body)

    def batch(self, lease_seconds: Optional[float] = None) -> Optional[Batch]:
        """``GET /batch``: the next batch, or ``None`` when none can be formed yet.

        With ``lease_seconds`` the batch is leased: unless :meth:`ack` is called within that time it goes
        back to the queue and is served again. Without, it is Atropos's fire-and-forget batch.

        Raises:
            NotRegisteredError: no trainer has registered.
        """
        params = None if lease_seconds is None else {"lease_seconds": lease_seconds}
        data = self._object("GET", "/batch", params=params)
        if data.get("status") == "error":
            raise NotRegisteredError(data.get("message", "trainer not registered"), 200, data)
        if data.get("batch") is None:
            return None
        return Batch(groups=data["batch"], batch_id=data.get("batch_id"), lease_expires_at=data.get("lease_expires_at"))

    def ack(self, batch_id: str) -> None:
        """``POST /batch/ack``: the leased batch is consumed for good.

        ``batch_id`` is the one :meth:`batch` returned: each serving of a batch is a lease of its own, and
        only the lease held now can ack the batch.

        Raises:
            UnknownBatchError: no such batch (404): never leased, or gone (acked under a later lease, reset).
            LeaseExpiredError: the lease ran out first (409), so the batch is, or will be, served again under
                another lease; this ack changed nothing.
        """
        try:
            self._request("POST", "/batch/ack", {"batch_id": batch_id})
        except ApiError as error:
            if error.status_code == 409:
                raise LeaseExpiredError(str(error), 409, error.body) from None
            if error.status_code == 404:
                raise UnknownBatchError(str(error), 404, error.body) from None
            raise

    def renew(self, batch_ids: Sequence[str], lease_seconds: float) -> list[LeaseRenewal]:
        """``POST /batch/renew``: holds each lease ``lease_seconds`` more from now; one answer per lease, in order.

        A trainer that acks only at checkpoints renews the leases of the batches it trained since the last one, so none
        runs out before its ack (:class:`~clotho_client.leases.LeaseKeeper` does it from a thread).
        """
        data = self._object("POST", "/batch/renew", {"batch_ids": list(batch_ids), "lease_seconds": lease_seconds})
        return [LeaseRenewal(batch_id=r["batch_id"], status=r["status"], lease_expires_at=r.get("lease_expires_at")) for r in data["leases"]]

    def renews_leases(self, lease_seconds: float = 60.0) -> Optional[int]:
        """Whether the API renews leases: None when it does, else the status it answered ``POST /batch/renew`` with
        (404 or 405: Atropos's ``run-api``, or a ``clotho api`` from before renewals). Renews nothing."""
        try:
            self.renew([], lease_seconds)
            return None
        except ApiError as error:
            if error.status_code in (404, 405):
                return error.status_code
            raise

    def batch_by_id(self, batch_id: str) -> Batch:
        """``GET /batch/{batch_id}``: the groups of a formed or leased, not yet acked, batch, by a lease id or its own.

        Raises:
            UnknownBatchError: no such batch, or it was acked already (404).
        """
        try:
            data = self._object("GET", f"/batch/{quote(batch_id, safe='')}")
        except ApiError as error:
            if error.status_code == 404:
                raise UnknownBatchError(str(error), 404, error.body) from None
            raise
        return Batch(groups=data["batch"], batch_id=data.get("batch_id", batch_id))

    def reset(self) -> None:
        """``GET /reset_data``: forgets the trainer, environments and queue."""
        self._request("GET", "/reset_data")

    def iter_batches(
        self,
        lease_seconds: Optional[float] = 300.0,
        *,
        poll_interval: float = 1.0,
        max_poll_interval: float = 10.0,
        max_failures: int = 5,
        stop: Optional[threading.Event] = None,
    ) -> Iterator[Batch]:
        """Yields batches as they form, polling with backoff while there are none (Atropos's trainer loop).

        A leased batch is acked only when the loop body that received it finishes and asks for the next
        one. If the body raises (or the process dies) the batch is not acked: its lease expires and the
        API serves it again, so a crash mid-step loses nothing. A ``break`` also leaves the current batch
        unacked; :meth:`run_pull_loop` with ``max_batches`` acks the last one too. ``lease_seconds=None``
        gives Atropos's unacknowledged batches. Setting ``stop`` ends the loop.
        """
        return pull.iter_batches(
            self,
            lease_seconds=lease_seconds,
            poll_interval=poll_interval,
            max_poll_interval=max_poll_interval,
            max_failures=max_failures,
            stop=stop,
        )

    def run_pull_loop(
        self,
        callback: Callable[[Batch], object],
        lease_seconds: Optional[float] = 300.0,
        *,
        max_batches: Optional[int] = None,
        poll_interval: float = 1.0,
        max_poll_interval: float = 10.0,
        max_failures: int = 5,
        stop: Optional[threading.Event] = None,
    ) -> int:
        """Calls ``callback(batch)`` for each batch and acks it once the callback returns; returns the count.

        Ends after ``max_batches`` or when ``stop`` is set. If the callback raises, the batch is not
        acked and comes back when its lease expires.
        """
        return pull.run_pull_loop(
            self,
            callback,
            max_batches=max_batches,
            lease_seconds=lease_seconds,
            poll_interval=poll_interval,
            max_poll_interval=max_poll_interval,
            max_failures=max_failures,
            stop=stop,
        )


def _with_additions(group: Mapping[str, Any], key: Optional[str], policy_version: Optional[int]) -> dict[str, Any]:
    body = dict(group)
    if key is not None:
        body["idempotency_key"] = key
    if policy_version is not None:
        body["policy_version"] = policy_version
    return body


def _error_for(response: httpx.Response) -> ApiError:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    detail = body.get("error") or body.get("detail") if isinstance(body, dict) else body
    message = f"{response.request.method} {response.request.url.path}: HTTP {response.status_code}: {detail}"
    return ApiError(message, response.status_code, body)
