"""HTTP to a vLLM server for the weight syncs: its base URL, retries of the calls that are safe to repeat, and errors
that say what to change on the server."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import httpx

log = logging.getLogger("clotho_client.training")


class VllmHttpError(RuntimeError):
    """vLLM refused a call (4xx), kept failing (5xx), or could not be reached (``status`` is None)."""

    def __init__(self, message: str, status: Optional[int] = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


@dataclass(frozen=True)
class Retry:
    """How often a retryable call is tried, with the delay doubling from ``first_delay`` up to ``max_delay``."""

    attempts: int = 8
    first_delay: float = 0.5
    max_delay: float = 10.0

    def delay(self, attempt: int) -> float:
        return min(self.first_delay * 2 ** (attempt - 1), self.max_delay)


def base_url(url: str) -> str:
    """The server's root: vLLM's control routes (``/health``, ``/pause``, …) are not under ``/v1``."""
    return url.rstrip("/").removesuffix("/v1")


class VllmServer:
    """One vLLM server. ``hint_404`` is added to the error of a 404 for a route vLLM lacks (FastAPI's ``{"detail": "Not
    Found"}``), which means a route it was not started with (runtime LoRA, dev mode)."""

    def __init__(self, url: str, *, retry: Retry = Retry(), timeout: float = 300.0, hint_404: str = "") -> None:
        self.url = base_url(url)
        self.retry = retry
        self.timeout = timeout
        self.hint_404 = hint_404

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Optional[Mapping[str, Any]] = None,
        params: Optional[Mapping[str, str]] = None,
        retry: bool = True,
        timeout: Optional[float] = None,
    ) -> httpx.Response:
        """Sends one call; with ``retry``, connection failures and 5xx answers are tried again. Raises
        :class:`VllmHttpError` for any answer but 2xx."""
        url = f"{self.url}{path}"
        attempts = self.retry.attempts if retry else 1
        for attempt in range(1, attempts + 1):
            try:
                response = httpx.request(method, url, json=json, params=params, timeout=timeout or self.timeout)
            except httpx.TransportError as error:
                if attempt == attempts:
                    raise VllmHttpError(f"{method} {url}: vLLM could not be reached ({type(error).__name__}: {error})") from error
                log.warning("%s %s failed (%s); retrying", method, url, error)
            else:
                if response.is_success:
                    return response
                text = response.text[:500]
                if response.status_code == 404 and '"Not Found"' in text:  # FastAPI's answer for a route it lacks
                    raise VllmHttpError(f"{method} {url} answered 404 {text}: {self.hint_404 or 'no such route'}", 404, text)
                if response.status_code < 500 or attempt == attempts:
                    raise VllmHttpError(f"{method} {url} answered {response.status_code}: {text}", response.status_code, text)
                log.warning("%s %s answered %s; retrying", method, url, response.status_code)
            time.sleep(self.retry.delay(attempt))
        raise AssertionError("unreachable")

    def get_json(self, path: str) -> Any:
        return self.request("GET", path).json()

    def healthy(self) -> bool:
        """Whether ``GET /health`` answers 200 now (vLLM answers it once the engine is ready to serve)."""
        try:
            return httpx.get(f"{self.url}/health", timeout=5.0).status_code == 200
        except httpx.TransportError:
            return False

    def served_roots(self) -> dict[str, Optional[str]]:
        """``GET /v1/models`` as {model id: root}: vLLM reports the path (or repo id) the base model was loaded from as
        the base card's ``root``, and each LoRA adapter's path as its card's ``root``."""
        cards = self.get_json("/v1/models").get("data") or []
        return {str(card.get("id")): card.get("root") for card in cards}
