"""One verifiers episode as a Temporal activity: ``env.run_slot`` on one task, its model calls through Clotho's session.

The task is rebuilt from its wire data as verifiers' env server rebuilds it; the episode runs with verifiers' own
machinery unchanged (its interception server, hooks, tools, runtime and scoring), its upstream client pointed at the
router, which hands each call to the episode's session in the command (recorded before its answer comes back, replayed
on a retry). The outcome (``outcome.py``) decides: a scored or declined episode is handed to the session host, which
writes its traces' sequences and the episode's result into the store (the result last: a result is a finished
episode); an infrastructure failure or a raise fails the attempt. A sample whose result is in the store is never run
again.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from temporalio import activity
from temporalio.api.failure.v1 import Failure
from temporalio.exceptions import ApplicationError

from .cursor import TaskCursor
from .outcome import Outcome, classify
from .router import EpisodeRoute, Host, Router

INFRASTRUCTURE_FAILURE = "VerifiersInfrastructure"
EPISODE_FAILURE = "VerifiersEpisodeError"


def trace_summary(trace: Any, key: str) -> dict:
    """What Clotho keeps of a trace beside its sequence: who played it, its rewards, metrics and stop."""
    return {
        "key": key,
        "agent": trace.agent.name,
        "trainable": trace.agent.trainable,
        "reward": trace.reward,
        "rewards": {name: {"score": r.score, "weight": r.weight} for name, r in trace.rewards.items() if r is not None},
        "metrics": {name: value for name, value in trace.metrics.items() if value is not None},
        "stop": trace.stop_condition,
        "ok": trace.ok,
        "calls": len(trace.calls),
    }


def raised(outcome: Outcome) -> ApplicationError:
    """The attempt's failure, its cause carrying the episode's own traceback (``clotho inspect`` and the UI show it)."""
    if outcome.kind == "infrastructure":
        return ApplicationError(f"infrastructure: {outcome.reason}", type=INFRASTRUCTURE_FAILURE)
    error = ApplicationError(f"the episode raised {outcome.reason}", type=EPISODE_FAILURE)
    if outcome.traceback:
        cause = ApplicationError(outcome.reason or "", type="VerifiersTraceback")
        failure = Failure(message=outcome.reason or "", stack_trace=outcome.traceback, source="verifiers")
        failure.application_failure_info.type = "VerifiersTraceback"
        cause._failure = failure  # a failure proto set beforehand is sent as it is, traceback included
        error.__cause__ = cause
    return error


class Episodes:
    """Runs episodes of the worker's environment, inside its ``env.serving()``."""

    def __init__(self, env: Any, config: Any, cursor: TaskCursor, router: Router, host: Host, heartbeat_interval: float) -> None:
        self.env = env
        self.config = config
        self.cursor = cursor
        self.router = router
        self.host = host
        self.heartbeat_interval = heartbeat_interval

    def context(self) -> Any:
        """The run's model context with its client pointed at the router: verifiers imposes the model and sampling."""
        from verifiers.v1.clients import EvalClientConfig, ModelContext

        # An API key variable nobody sets: the session host needs none, and no secret crosses to it.
        client = EvalClientConfig(base_url=self.router.base_url, api_key_var="CLOTHO_VERIFIERS_SESSION_KEY")
        return ModelContext(model=self.config.model, client=client, sampling=self.config.sampling)

    async def run(self, item: int, sample: int, task: dict) -> dict:
        sample_path = f"/item-{item}/sample-{sample}"
        status, done = await self.host.json("GET", f"{sample_path}/result")
        if status == 200:
            return {"status": done["status"], **({"reason": done["reason"]} if done.get("reason") else {}), "calls": 0, "replayed": 0}
        data = task.get("data")
        if data is None:
            status, data = await self.host.json("GET", f"/items/{task['ref']}")
            if status != 200:
                raise ApplicationError(f"the task's data is not in the store ({task['ref']})", type=INFRASTRUCTURE_FAILURE)
        attempt = activity.info().attempt
        route = EpisodeRoute(prefix=f"{sample_path}/attempt-{attempt}")
        minted: dict[str, int] = {}

        def on_trace(trace: Any) -> None:
            # Keys stable across attempts: the n-th trace an agent mints (one agent at a time by default).
            n = minted[trace.agent.name] = minted.get(trace.agent.name, -1) + 1
            self.router.register(trace.id, route, f"{trace.agent.name}-{n}")

        heartbeat = asyncio.ensure_future(self._heartbeat(route))
        try:
            (slot,) = self.env.slots(self.cursor.task(data), 1)
            episode = await self.env.run_slot(slot, self.context(), on_trace=on_trace)
            outcome = classify(episode, self.env.complete(episode))
            if outcome.kind in ("infrastructure", "raised"):
                raise raised(outcome)
            keys = {trace.id: key for trace, key in ((t, route.traces.get(t.id)) for t in episode.traces) if key}
            result = {
                "attempt": attempt,
                "status": outcome.kind,
                **({"reason": outcome.reason} if outcome.reason else {}),
                "ok": episode.ok,
                "task": {"idx": episode.task.data.idx, "hash": episode.task.hash},
                "traces": [trace_summary(trace, keys[trace.id]) for trace in episode.traces if trace.id in keys],
                "episode": episode.to_record(),
            }
            status, answer = await self.host.json("POST", f"{route.prefix}/finish", result)
            if status != 200:
                # The session saw the policy's server fail (503), or the host could not keep the result.
                message = (answer or {}).get("error", {}).get("message", f"the session host answered {status}")
                raise ApplicationError(message, type=INFRASTRUCTURE_FAILURE)
            return {
                "status": outcome.kind,
                **({"reason": outcome.reason} if outcome.reason else {}),
                "calls": route.calls,
                "replayed": route.replayed,
            }
        finally:
            heartbeat.cancel()
            self.router.forget(route)
            with contextlib.suppress(Exception):
                await self.host.json("DELETE", route.prefix)

    async def _heartbeat(self, route: EpisodeRoute) -> None:
        while True:
            activity.heartbeat({"calls": route.calls, "replayed": route.replayed, **({"last": route.last} if route.last else {})})
            await asyncio.sleep(self.heartbeat_interval)
