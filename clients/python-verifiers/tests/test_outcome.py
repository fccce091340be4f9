"""verifiers' recorded failures mapped onto Clotho's: infrastructure retried, a raise failed with its traceback, a
decline counted with its reason, the rest scored. Episodes and traces are verifiers' own types."""

import pytest
import verifiers.v1 as vf
from verifiers.v1.trace import AgentInfo, Error, ModelCall, Trace, TraceTask

from clotho_verifiers.outcome import classify

TASK = TraceTask(type="T", data=vf.TaskData(prompt="p"))


def trace(*errors: Error, calls: int = 1, ok: bool | None = None, stop: str | None = "agent_completed") -> Trace:
    made = Trace(task=TASK, agent=AgentInfo(config=vf.AgentConfig()), calls=[ModelCall() for _ in range(calls)])
    made.errors.extend(errors)
    made.ok = not errors if ok is None else ok
    made.stop_condition = stop
    return made


def episode(*traces: Trace, errors: tuple[Error, ...] = (), timeout: bool = False) -> vf.Episode:
    made = vf.Episode(task=TASK, traces=list(traces), errors=list(errors), is_timeout=timeout)
    made.ok = all(t.ok for t in traces) and not errors and not timeout
    return made


def error(kind: str, status: int | None = None, tb: str | None = None) -> Error:
    return Error(type=kind, message=f"{kind} happened", status_code=status, traceback=tb)


@pytest.mark.parametrize(
    ("failure", "calls", "reason"),
    [
        (error("ProviderError", 503), 1, "ProviderError (503)"),
        (error("ProviderError", 429), 1, "ProviderError (429)"),
        (error("ProviderError"), 1, "ProviderError (None)"),
        (error("SandboxError"), 1, "SandboxError"),
        (error("InterceptionError"), 1, "InterceptionError"),
        (error("HarnessError"), 0, "HarnessError before any model call"),
    ],
)
def test_infrastructure_is_retried_never_scored(failure, calls, reason):
    outcome = classify(episode(trace(failure, calls=calls)), complete=False)
    assert (outcome.kind, outcome.reason.startswith(reason)) == ("infrastructure", True)


@pytest.mark.parametrize("kind", ["TaskError", "EnvError", "ToolsetError", "ValueError"])
def test_an_episode_that_raised_fails_with_its_traceback(kind):
    tb = 'Traceback (most recent call last):\n  File "env.py", line 3, in correct\nValueError: broken'
    outcome = classify(episode(trace(error(kind, tb=tb))), complete=False)
    assert (outcome.kind, outcome.traceback) == ("raised", tb)
    assert outcome.reason == f"{kind}: {kind} happened"
    # An episode-level raise (the env's own hooks) too.
    assert classify(episode(trace(), errors=(error(kind, tb=tb),)), complete=False).kind == "raised"


def test_infrastructure_wins_over_a_raise_it_caused():
    assert classify(episode(trace(error("ProviderError", 502), error("TaskError"))), complete=False).kind == "infrastructure"


@pytest.mark.parametrize(
    ("made", "complete", "reason"),
    [
        (episode(trace(error("ProviderError", 400))), False, "provider_400"),
        (episode(trace(error("HarnessError"), calls=2)), False, "harness_error"),
        (episode(trace(), timeout=True), False, "episode_timeout"),
        (episode(trace(ok=False, stop="max_turns")), False, "max_turns"),
    ],
)
def test_a_declined_episode_is_counted_with_its_reason(made, complete, reason):
    assert classify(made, complete) == classify(made, complete).__class__("declined", reason)


def test_an_episode_stopped_by_a_limit_or_its_agent_deadline_is_scored():
    assert classify(episode(trace(stop="agent_timeout")), complete=True).kind == "scored"
    assert classify(episode(trace(stop="stop_guard")), complete=True).kind == "scored"
