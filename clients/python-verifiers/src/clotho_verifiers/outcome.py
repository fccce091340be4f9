"""What a finished verifiers episode is to Clotho: scored, declined with its reason, an infrastructure failure, or an
episode that raised.

verifiers records every failure on the trace or the episode, typed by the boundary it crossed (``verifiers.v1.errors``),
and scores what it can. Clotho never turns a failure into a reward:

- **infrastructure** (retried under the step's policy, never scored): a model server that failed (``ProviderError``
  with a 5xx, 429 or no status; the session answers 503 when the policy's server fails), a runtime or sandbox
  (``SandboxError``), the interception server or its tunnel (``InterceptionError``), a harness that failed before
  its program asked the model anything (``HarnessError`` there: its setup, uv, a crash at start);
- **the episode raised** (retried, then the group fails with the Python traceback): task code (``TaskError``), the
  env's hooks (``EnvError``), a toolset (``ToolsetError``), anything untyped;
- **declined** (the group is dropped, counted by reason ``verifiers:<why>``): the model refused a request
  (``ProviderError`` 4xx), a harness that failed after its program asked the model (``harness_error``), the env's own
  deadline (``episode_timeout``), an episode the env does not accept (``env.complete()`` false: the failed trace's
  stop condition);
- **scored**: the rest, stopped by ``@stop``, a limit or an agent deadline (``agent_timeout`` is a stop, not a failure).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

INFRASTRUCTURE = {"SandboxError", "InterceptionError", "TunnelError"}
EPISODE_ERRORS = {"TaskError", "EnvError", "ToolsetError"}


@dataclass(frozen=True)
class Outcome:
    kind: Literal["scored", "declined", "infrastructure", "raised"]
    reason: str | None = None
    """Why it was declined, or the failure's type and message."""
    traceback: str | None = None


def _provider_infrastructure(error: Any) -> bool:
    status = error.status_code
    return status is None or status >= 500 or status == 429


def classify(episode: Any, complete: bool) -> Outcome:
    """The outcome of ``episode``; ``complete`` is the env's verdict (``env.complete(episode)``)."""
    found: list[tuple[Any, Any]] = [(error, None) for error in episode.errors]
    found += [(error, trace) for trace in episode.traces for error in trace.errors]
    for error, trace in found:
        if error.type == "ProviderError" and _provider_infrastructure(error):
            return Outcome("infrastructure", f"ProviderError ({error.status_code}): {error.message}")
        if error.type in INFRASTRUCTURE:
            return Outcome("infrastructure", f"{error.type}: {error.message}")
        if error.type == "HarnessError" and trace is not None and not trace.calls:
            return Outcome("infrastructure", f"HarnessError before any model call: {error.message}")
    for error, _ in found:
        if error.type not in {"ProviderError", "HarnessError"}:
            return Outcome("raised", f"{error.type}: {error.message}", error.traceback)
    for error, _ in found:
        if error.type == "ProviderError":
            return Outcome("declined", f"provider_{error.status_code}")
        return Outcome("declined", "harness_error")
    if episode.is_timeout:
        return Outcome("declined", "episode_timeout")
    if not complete:
        stops = [trace.stop_condition for trace in episode.traces if not trace.ok and trace.stop_condition]
        return Outcome("declined", stops[0] if stops else "incomplete")
    return Outcome("scored")
