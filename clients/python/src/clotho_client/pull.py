"""The pull loop of an Atropos-style trainer, with leases: poll ``GET /batch``, back off, ack after the step."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import httpx

from .errors import ApiError, LeaseExpiredError, UnknownBatchError
from .types import Batch

if TYPE_CHECKING:
    from .api import TrajectoryClient

log = logging.getLogger("clotho_client")


def poll_batches(
    client: "TrajectoryClient",
    *,
    lease_seconds: Optional[float],
    poll_interval: float = 1.0,
    max_poll_interval: float = 10.0,
    max_failures: int = 5,
    stop: Optional[threading.Event] = None,
) -> Iterator[Batch]:
    """Yields batches as they form, acking nothing.

    Polling doubles its wait from ``poll_interval`` up to ``max_poll_interval`` while ``batch`` is null
    and starts over after each batch. Network errors and 5xx answers are retried with the same backoff;
    ``max_failures`` in a row raise the last one. The generator ends when ``stop`` is set.
    """
    stop = stop or threading.Event()
    delay = poll_interval
    failures = 0
    while not stop.is_set():
        try:
            batch = client.batch(lease_seconds)
            failures = 0
        except (httpx.TransportError, ApiError) as error:
            if not _transient(error) or failures + 1 >= max_failures:
                raise
            failures += 1
            log.warning("GET /batch failed (%s); retrying in %.1fs", error, delay)
            batch = None
        if batch is None:
            stop.wait(delay)
            delay = min(delay * 2, max_poll_interval)
            continue
        delay = poll_interval
        yield batch


def iter_batches(client: "TrajectoryClient", **poll: Any) -> Iterator[Batch]:
    """:func:`poll_batches`, acking each leased batch when the consumer asks for the next one.

    Control returns to the generator only when the loop body finished normally. An exception (or a
    ``break``) closes it at the ``yield``, so that batch stays unacked and is served again when its
    lease ends.
    """
    for batch in poll_batches(client, **poll):
        yield batch
        if batch.batch_id is not None and batch.lease_expires_at is not None:
            ack_with_retries(client, batch.batch_id)


def run_pull_loop(
    client: "TrajectoryClient",
    callback: Callable[[Batch], object],
    *,
    max_batches: Optional[int] = None,
    **poll: Any,
) -> int:
    """Calls ``callback(batch)`` for each batch and acks it once the callback returns; returns the count.

    Ends after ``max_batches`` (the last one acked too) or when ``stop`` is set. If the callback
    raises, the batch is not acked: the exception propagates and the lease brings the batch back.
    """
    done = 0
    if max_batches is not None and max_batches <= 0:
        return done
    for batch in poll_batches(client, **poll):
        callback(batch)
        if batch.batch_id is not None and batch.lease_expires_at is not None:
            ack_with_retries(client, batch.batch_id)
        done += 1
        if max_batches is not None and done >= max_batches:
            break
    return done


def ack_with_retries(client: "TrajectoryClient", batch_id: str, attempts: int = 5) -> bool:
    """Acks a batch, retrying network errors and 5xx; returns False (and warns) when the API no longer holds it.

    A lease that ran out before the ack is answered 409 (the batch is served again under a new lease, which
    alone can ack it), or 404 once the batch was acked under that later lease or the data was reset: the step
    is done either way, so the loop goes on. A 404 after a failed attempt means that attempt got through, so
    it counts as acked.
    """
    for attempt in range(1, attempts + 1):
        try:
            client.ack(batch_id)
            return True
        except (LeaseExpiredError, UnknownBatchError) as error:
            if attempt > 1 and isinstance(error, UnknownBatchError):
                return True
            log.warning("batch %s: not acked (%s); its lease had run out, so it may be trained on twice: raise lease_seconds", batch_id, error)
            return False
        except (httpx.TransportError, ApiError) as error:
            if not _transient(error) or attempt == attempts:
                raise
            log.warning("ack of batch %s failed (%s); retrying", batch_id, error)
            time.sleep(min(0.25 * 2.0**attempt, 5.0))
    return False


def _transient(error: Exception) -> bool:
    return isinstance(error, httpx.TransportError) or (isinstance(error, ApiError) and error.status_code >= 500)
