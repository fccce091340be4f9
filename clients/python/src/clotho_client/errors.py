"""Errors of the trajectory API client."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """The API answered with an error status (or an error payload)."""

    def __init__(self, message: str, status_code: int, body: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class NotRegisteredError(ApiError):
    """``GET /batch`` before any trainer called ``POST /register``."""


class UnknownBatchError(ApiError):
    """No formed or leased batch has this id (404): never existed, already acked, or reset."""


class LeaseLostError(Exception):
    """A lease the trainer holds ran out, or the API refused its ack: its batch is served again. Raised to stop the
    trainer before it trains that batch a second time (or, past a checkpoint, to say it will be)."""


class LeaseExpiredError(ApiError):
    """``POST /batch/ack`` came after the lease ran out (409): the batch went back to be served again, perhaps
    already to another trainer, and the ack changed nothing."""
