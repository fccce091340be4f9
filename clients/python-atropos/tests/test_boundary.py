"""The activities held to the boundary schema generated from TypeScript's zod schemas (``boundary.schema.json``).

Every activity call in this suite goes through that check (``activities.py`` validates each input and answer), so an
answer the TypeScript side would not read fails the suite. Here: that a field renamed on either side is named.
"""

import base64
import copy
import json
import math
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from clotho_atropos.boundary import SCHEMA_PATH, Boundary
from test_activities import activities_for, run


def test_an_input_field_the_schema_does_not_have_is_refused_naming_it(flags) -> None:
    # TypeScript renamed maxTokenLen: Python would have collected without the trainer's limit, and said nothing.
    acts = activities_for("arithmetic_env.py", flags("serve"))

    async def scenario(call):
        item = await call(acts.next_item, {"cursor": 0})
        return await call(acts.collect, {"itemIndex": 0, "item": item["item"], "maxTokenLength": 4096})

    with pytest.raises(ApplicationError, match=r"atroposCollect's input does not hold to the boundary schema \(src/schema/atropos\.ts\): .*maxTokenLength") as raised:
        run(acts, scenario)
    assert raised.value.type == "AtroposBadInput" and raised.value.non_retryable


def test_an_input_of_the_wrong_type_is_refused_naming_its_path(flags, tmp_path) -> None:
    acts = activities_for("arithmetic_env.py", flags("serve"))

    async def scenario(call):
        return await call(acts.next_item, {"cursor": 0, "store": {"root": str(tmp_path), "run": 7}})

    with pytest.raises(ApplicationError, match=r"atroposNextItem's input .*: store\.run must be string") as raised:
        run(acts, scenario)
    assert raised.value.type == "AtroposBadInput" and raised.value.non_retryable


def test_an_answer_that_drifted_fails_naming_the_activity_and_the_field(flags) -> None:
    # Python renamed a field of its answer: TypeScript would have read undefined.
    acts = activities_for("arithmetic_env.py", flags("serve"))
    described = acts.description()
    acts.description = lambda: {**{k: v for k, v in described.items() if k != "usesCheckpoint"}, "usesCheckpoints": False}

    with pytest.raises(ApplicationError, match=r"atroposDescribe's answer .*usesCheckpoint") as raised:
        run(acts, lambda call: call(acts.describe))
    assert raised.value.type == "AtroposBadAnswer" and raised.value.non_retryable


def test_a_field_renamed_on_the_typescript_side_fails_the_python_suite(flags) -> None:
    # As the file regenerated after `fastForwarded` was renamed in src/schema/atropos.ts would say.
    document = json.loads(SCHEMA_PATH.read_text())
    renamed = copy.deepcopy(document)
    answer = renamed["activities"]["atroposNextItem"]["answer"]
    answer["properties"]["skipped"] = answer["properties"].pop("fastForwarded")
    answer["required"] = ["skipped" if name == "fastForwarded" else name for name in answer["required"]]
    acts = activities_for("arithmetic_env.py", flags("serve"), boundary=Boundary(renamed))

    with pytest.raises(ApplicationError, match=r"atroposNextItem's answer .*(skipped|fastForwarded)") as raised:
        run(acts, lambda call: call(acts.next_item, {"cursor": 0}))
    assert raised.value.type == "AtroposBadAnswer"
    # The schema as generated takes the same answer.
    acts = activities_for("arithmetic_env.py", flags("serve"), boundary=Boundary(document))
    assert run(acts, lambda call: call(acts.next_item, {"cursor": 0}))["fastForwarded"] == 0


def test_metrics_leave_out_values_json_cannot_carry(flags) -> None:
    # The answer is numbers by name (TypeScript merges them into the run's progress); one NaN made it a repr string.
    acts = activities_for("arithmetic_env.py", flags("serve"))
    acts.env.eval_metrics = [("eval/percent_correct", 0.5), ("eval/broken", math.nan)]

    answered = run(acts, lambda call: call(acts.metrics, {"step": 1}))
    assert isinstance(answered["metrics"], dict)
    assert answered["metrics"]["eval/percent_correct"] == 0.5 and "eval/broken" not in answered["metrics"]


def _recorded_payloads():
    """Every input and answer of an Atropos activity in the committed replay histories: what real runs exchanged."""
    histories = Path(__file__).resolve().parents[3] / "test" / "replay" / "histories"
    for path in sorted(histories.glob("*.json")):
        scheduled: dict = {}
        for event in json.loads(path.read_text())["events"]:
            started = event.get("activityTaskScheduledEventAttributes")
            if started and started["activityType"]["name"].startswith("atropos"):
                scheduled[event["eventId"]] = started["activityType"]["name"]
                for payload in started.get("input", {}).get("payloads", []):
                    yield path.name, started["activityType"]["name"], "input", json.loads(base64.b64decode(payload["data"]))
            completed = event.get("activityTaskCompletedEventAttributes")
            if completed and completed["scheduledEventId"] in scheduled:
                for payload in completed.get("result", {}).get("payloads", []):
                    yield path.name, scheduled[completed["scheduledEventId"]], "answer", json.loads(base64.b64decode(payload["data"]))


def test_the_schema_python_holds_to_takes_every_payload_the_committed_histories_recorded() -> None:
    # The generated JSON Schema itself, as this worker checks with it (the vitest side checks the zod schemas).
    boundary = Boundary.load()
    payloads = list(_recorded_payloads())
    assert {(activity, kind) for _, activity, kind, _ in payloads} >= {
        (activity, kind) for activity in ("atroposNextItem", "atroposCollect", "atroposCheckpoint", "atroposMetrics", "atroposEvaluate") for kind in ("input", "answer")
    }
    refused = []
    for history, activity, kind, value in payloads:
        try:
            (boundary.check_input if kind == "input" else boundary.check_answer)(activity, value)
        except ApplicationError as error:
            refused.append(f"{history}: {error}")
    assert refused == []
