"""Keeping leases alive while a trainer holds their batches: renewals from a thread of their own."""

from __future__ import annotations

import logging
import threading
from typing import Optional

import httpx

from .api import TrajectoryClient
from .errors import ApiError, LeaseLostError

log = logging.getLogger("clotho_client")


class LeaseKeeper:
    """Renews every lease it holds, every ``lease_seconds / 3`` by default, until it is released.

    A trainer that acks a batch only once a checkpoint holds its step keeps the batch for several steps; renewing from
    a thread of its own, no step, however long, can starve the renewals. A renewal the API answers ``expired`` or
    ``unknown`` means the batch is (or will be) served again: the lease is moved to :attr:`lost` and :meth:`check`
    raises :class:`~clotho_client.errors.LeaseLostError`, so the trainer stops before it trains the batch twice. A
    renewal that fails (the API down) is tried again at the next tick: with the default interval, two may fail before
    a lease runs out.

    Args:
        base_url: the trajectory API; the keeper has its own connection.
        lease_seconds: how long each renewal holds a lease, from the moment it is made.
        token: bearer token; ``None`` reads ``$CLOTHO_API_TOKEN``.
        interval: seconds between renewals (default a third of ``lease_seconds``).
        transport: an ``httpx`` transport, for tests.
    """

    def __init__(
        self,
        base_url: str,
        lease_seconds: float,
        *,
        token: Optional[str] = None,
        interval: Optional[float] = None,
        transport: Optional[httpx.BaseTransport] = None,
    ) -> None:
        self.lease_seconds = lease_seconds
        self.interval = lease_seconds / 3 if interval is None else interval
        self._client = TrajectoryClient(base_url, token=token, timeout=max(self.interval, 1.0), transport=transport)
        self._held: list[str] = []
        #: Leases the API would not renew, with its answer (``expired`` or ``unknown``).
        self.lost: dict[str, str] = {}
        #: Leases renewed so far (one per lease per renewal).
        self.renewed = 0
        #: Renewal requests that failed (network errors, 5xx): each is retried at the next tick.
        self.failures = 0
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="clotho-lease-keeper", daemon=True)

    def __enter__(self) -> "LeaseKeeper":
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stops renewing (what is still held runs out in its own time) and closes the connection."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._client.close()

    def hold(self, lease_id: str) -> None:
        """Renews ``lease_id`` from the next tick on, until :meth:`release`."""
        with self._lock:
            if lease_id not in self._held:
                self._held.append(lease_id)

    def release(self, *lease_ids: str) -> None:
        """Stops renewing these leases; call it before acking them (a renewal answered after the ack of a lease still
        held would find it unknown, and count it lost)."""
        with self._lock:
            self._held = [lease for lease in self._held if lease not in lease_ids]

    @property
    def held(self) -> list[str]:
        with self._lock:
            return list(self._held)

    def check(self) -> None:
        """Raises :class:`~clotho_client.errors.LeaseLostError` if a held lease could not be renewed."""
        with self._lock:
            lost = dict(self.lost)
        if lost:
            leases = ", ".join(f"{lease} ({status})" for lease, status in lost.items())
            raise LeaseLostError(
                f"lease {leases} ran out before the trainer could ack its batch (renewed every {self.interval:.1f} s for "
                f"{self.lease_seconds:g} s; {self.failures} renewals failed): the API serves the batch again, so the trainer "
                "stops rather than train it twice"
            )

    def renew_now(self) -> None:
        """Renews every held lease once (the thread calls it every :attr:`interval`)."""
        leases = self.held
        if not leases:
            return
        try:
            answers = self._client.renew(leases, self.lease_seconds)
        except (httpx.TransportError, ApiError) as error:
            with self._lock:
                self.failures += 1
            log.warning("renewing leases %s failed (%s); trying again in %.1f s", ", ".join(leases), error, self.interval)
            return
        with self._lock:
            for answer in answers:
                if answer.status == "renewed":
                    self.renewed += 1
                elif answer.batch_id in self._held:
                    self._held.remove(answer.batch_id)
                    self.lost[answer.batch_id] = answer.status
                    log.error("lease %s could not be renewed (%s): its batch is served again", answer.batch_id, answer.status)
            self._lock.notify_all()

    def wait_renewed(self, count: int, timeout: float) -> bool:
        """Waits until :attr:`renewed` reaches ``count``; False if ``timeout`` seconds pass first."""
        with self._lock:
            return self._lock.wait_for(lambda: self.renewed >= count, timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.renew_now()


def unrenewed_refusal(status: Optional[int], checkpoint_interval: int, lease_seconds: float) -> Optional[str]:
    """Why a trainer that acks only at checkpoints must not train leased batches from an API that renews no lease
    (``status``: its answer to ``POST /batch/renew``, None when it renews them), or None when it may."""
    if status is None or checkpoint_interval == 1:
        return None
    return (
        f"the API leases batches but renews no lease (POST /batch/renew answered {status}: a clotho api from before "
        f"renewals). A batch is acked only at the checkpoint after it, so with --checkpoint-interval {checkpoint_interval} "
        f"its lease (--lease-seconds {lease_seconds:g}) would have to outlive {checkpoint_interval} steps and a checkpoint, "
        "which the trainer cannot know before it trains. Use --checkpoint-interval 1, or a clotho api that renews leases."
    )
