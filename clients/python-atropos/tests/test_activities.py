"""The activities called directly (temporalio's ActivityEnvironment) on environments built from argv."""

import asyncio
import dataclasses
import json
import os
import subprocess
import sys

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from clotho_atropos import AtroposActivities, ItemCursor, build_env, load_env_class
from clotho_atropos import store
from clotho_atropos.cursor import CursorBehindError
from clotho_atropos.payloads import PAYLOAD_BUDGET_BYTES, Carrier, Target, uncarried
from conftest import ENVS


def activities_for(spec: str, argv: list[str], **options) -> AtroposActivities:
    built = build_env(load_env_class(str(ENVS / spec)), argv)
    return AtroposActivities(built, **options)


def run(activities: AtroposActivities, scenario, **environment):
    """Runs ``setup()`` then ``scenario(call)`` on one event loop, as the worker does."""

    async def main():
        await activities.env.setup()
        env = ActivityEnvironment()
        for name, value in environment.items():
            setattr(env, name, value)
        return await scenario(lambda fn, *args: env.run(fn, *args))

    return asyncio.run(main())


def test_items_and_a_scored_group(flags) -> None:
    acts = activities_for("arithmetic_env.py", flags("serve"))

    async def scenario(call):
        items = [await call(acts.next_item, {"cursor": i}) for i in range(3)]
        collected = await call(acts.collect, {"itemIndex": 0, "item": items[0]["item"], "maxTokenLen": 4096})
        return items, collected

    items, collected = run(acts, scenario)
    assert [i["cursor"] for i in items] == [0, 1, 2] and not any(i["exhausted"] for i in items)
    question, answer = items[0]["item"]["$tuple"]
    assert question.startswith("What is ") and isinstance(answer, int)
    assert collected["status"] == "scored" and collected["list"] is False and collected["dropped"] == [] and collected["backlog"] == []
    [group] = collected["groups"]
    json.dumps(group, allow_nan=False)
    assert group["scores"] == [1.0, -1.0, 1.0, -1.0]  # the fake model is right on even choices
    assert len(group["tokens"]) == 4 and all(isinstance(t, int) for t in group["tokens"][0])
    assert group["masks"][0][0] == -100 and group["masks"][0][-1] == group["tokens"][0][-1]
    assert group["messages"][1][-1]["content"].startswith("Adding them gives")
    # Filled in by Atropos's handle_send_to_api, as it does before posting.
    assert group["overrides"] is None and group["distill_token_ids"] is None


def test_several_items_in_one_call_until_the_iterator_ends(flags) -> None:
    acts = activities_for("arithmetic_env.py", flags("serve"))
    singles = activities_for("arithmetic_env.py", flags("serve"))
    given = acts.env.get_next_item
    calls = {"n": 0}

    async def five_items():
        calls["n"] += 1
        return await given() if calls["n"] <= 5 else None

    acts.env.get_next_item = five_items

    async def scenario(call):
        first = await call(acts.next_item, {"cursor": 0, "count": 3})
        rest = await call(acts.next_item, {"cursor": 3, "count": 3})
        return first, rest

    async def one_by_one(call):
        return [(await call(singles.next_item, {"cursor": i}))["item"] for i in range(5)]

    first, rest = run(acts, scenario)
    expected = run(singles, one_by_one)
    assert first["items"] == expected[:3] and not first["exhausted"]
    assert first["item"] == first["items"][0] and first["cursor"] == 0
    assert rest["items"] == expected[3:] and rest["exhausted"]  # the iterator ended after five
    assert acts.cursor.taken == 5


def test_a_lost_result_gets_the_same_item_again(flags) -> None:
    acts = activities_for("arithmetic_env.py", flags("serve"))

    async def scenario(call):
        first = await call(acts.next_item, {"cursor": 0})
        await call(acts.next_item, {"cursor": 1})
        again = await call(acts.next_item, {"cursor": 0})
        return first, again

    first, again = run(acts, scenario)
    assert first["item"] == again["item"]
    assert acts.cursor.taken == 2  # the iterator was not asked again


def test_an_item_no_longer_kept_is_refused(flags) -> None:
    built = build_env(load_env_class(str(ENVS / "arithmetic_env.py")), flags("serve"))
    cursor = ItemCursor(built.env, keep=2)

    async def scenario():
        await built.env.setup()
        for i in range(4):
            await cursor.item_at(i)
        await cursor.item_at(0)

    with pytest.raises(CursorBehindError, match="item 0 was taken by this process 4 items ago"):
        asyncio.run(scenario())


def test_declined_groups_and_the_backlog(flags) -> None:
    def collect_two(mode: str):
        acts = activities_for("declining_env.py", flags(mode))

        async def scenario(call):
            out = []
            for i in range(2):
                item = await call(acts.next_item, {"cursor": i})
                out.append(await call(acts.collect, {"itemIndex": i, "item": item["item"]}))
            return out

        return run(acts, scenario)

    none, equal = collect_two("serve")
    assert none == {"status": "declined", "reason": "declined", "dropped": [], "backlog": [{"n": 1}], "seconds": none["seconds"]}
    assert equal["status"] == "declined" and equal["reason"] == "identical scores"
    assert equal["dropped"] == [{"index": 0, "reason": "identical scores"}]
    # Atropos's process mode turns ensure_scores_are_not_same off, so the same group is kept there.
    _, kept = collect_two("process")
    assert kept["status"] == "scored" and kept["groups"][0]["scores"] == [0.5, 0.5]
    # ...and include_messages synthesises messages from the tokens, as Atropos's process does.
    assert kept["groups"][0]["messages"][0][0] == {"role": "user", "content": "two equal scores"}


def test_an_exception_fails_the_activity(flags) -> None:
    acts = activities_for("flaky_env.py", flags("serve"))

    async def scenario(call):
        item = await call(acts.next_item, {"cursor": 0})
        with pytest.raises(ConnectionError, match="hiccup on item 1"):
            await call(acts.collect, {"itemIndex": 0, "item": item["item"]})
        return await call(acts.collect, {"itemIndex": 0, "item": item["item"]})

    assert run(acts, scenario)["status"] == "scored"


def test_heartbeats_while_collecting(flags, openai_server) -> None:
    acts = activities_for("arithmetic_env.py", flags("serve"), heartbeat_interval=0.1)
    beats = []

    async def scenario(call):
        item = await call(acts.next_item, {"cursor": 0})
        openai_server.delay = 0.6
        try:
            return await call(acts.collect, {"itemIndex": 0, "item": item["item"]})
        finally:
            openai_server.delay = 0.0

    assert run(acts, scenario, on_heartbeat=lambda *details: beats.append(details))["status"] == "scored"
    assert len(beats) >= 3
    # Where the collect waits: the environment's collect_trajectories, awaiting the model.
    [details] = beats[-1]
    assert details["seconds"] > 0 and any(line.startswith("arithmetic_env.py:") and line.endswith(" in collect_trajectories") for line in details["stack"])


def test_postprocess_as_a_step_of_its_own(flags) -> None:
    acts = activities_for("arithmetic_env.py", flags("serve"))

    async def scenario(call):
        item = await call(acts.next_item, {"cursor": 0})
        raw = await call(acts.collect, {"itemIndex": 0, "item": item["item"], "postprocess": False})
        raw = json.loads(json.dumps(raw))  # as Temporal would carry it
        done = await call(acts.postprocess, {"itemIndex": 0, "item": item["item"], "groups": json.loads(json.dumps(raw["groups"])), "list": raw["list"]})
        return raw, done

    raw, done = run(acts, scenario)
    assert raw["status"] == "collected" and "overrides" not in raw["groups"][0]
    assert done["status"] == "scored" and done["groups"][0]["overrides"] is None


def test_evaluate_and_metrics(flags, openai_server) -> None:
    acts = activities_for("arithmetic_env.py", flags("evaluate"))

    async def scenario(call):
        item = await call(acts.next_item, {"cursor": 0})
        await call(acts.collect, {"itemIndex": 0, "item": item["item"]})
        evaluated = await call(acts.evaluate, {"step": 3})
        return evaluated, await call(acts.metrics, {"step": 3})

    evaluated, metrics = run(acts, scenario)
    assert evaluated["metrics"] == {"eval/percent_correct": 1.0, "eval/items": 4} and evaluated["result"] is None
    # Without data_dir_to_save_evals evaluate_log writes nothing; what it was given is still in the answer.
    assert evaluated["logged"] == {"eval/percent_correct": 1.0, "eval/items": 4}
    logged = metrics["metrics"]
    assert logged["train/percent_correct"] == 0.5 and logged["eval/percent_correct"] == 1.0
    assert logged["train/completion_lengths"] > 0 and "server/server_0_request_time_avg" in logged


def test_evaluate_writes_what_evaluate_log_writes(flags, tmp_path) -> None:
    evals = tmp_path / "evals"
    acts = activities_for("arithmetic_env.py", flags("evaluate", "--env.data_dir_to_save_evals", str(evals)))
    evaluated = run(acts, lambda call: call(acts.evaluate, {}))
    assert evaluated["logged"] == {"eval/percent_correct": 1.0, "eval/items": 4}
    written = json.loads((evals / "metrics.json").read_text())
    assert written["results"]["all"] == evaluated["logged"] and written["config_general"]["model_name"] == "tiny"
    samples = [json.loads(line) for line in (evals / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 4 and all(s["correct"] for s in samples)
    # The class's own evaluate_log is back once the activity ends.
    assert "evaluate_log" not in vars(acts.env)


def test_an_evaluate_that_raises_fails_the_activity(flags) -> None:
    acts = activities_for("flaky_env.py", flags("evaluate"))

    async def scenario(call):
        with pytest.raises(ConnectionError, match="evaluation attempt 1"):
            await call(acts.evaluate, {})
        return await call(acts.evaluate, {})

    assert run(acts, scenario)["metrics"] == {"eval/attempts": 2}


def test_a_restarted_process_fast_forwards_to_the_cursor(flags) -> None:
    argv = flags("serve")
    first = activities_for("arithmetic_env.py", argv)
    restarted = activities_for("arithmetic_env.py", argv)

    async def scenario(call):
        await restarted.env.setup()
        served = [await call(first.next_item, {"cursor": i}) for i in range(51)]
        resumed = await call(restarted.next_item, {"cursor": 50})
        return served, resumed

    served, resumed = run(first, scenario)
    assert resumed["fastForwarded"] == 50 and resumed["item"] == served[50]["item"]
    assert restarted.cursor.taken == 51


def test_a_checkpoint_is_restored_then_fast_forwarded(flags) -> None:
    spec = "arithmetic_env.py:CheckpointedArithmeticEnv"
    first = activities_for(spec, flags("serve"))
    restarted = activities_for(spec, flags("serve"))

    async def taking_a_checkpoint(call):
        await restarted.env.setup()
        served = [await call(first.next_item, {"cursor": i}) for i in range(30)]
        checkpoint = await call(first.checkpoint, {"step": 2})
        served += [await call(first.next_item, {"cursor": i}) for i in range(30, 36)]
        resumed = await call(restarted.next_item, {"cursor": 35, "checkpoint": {"cursor": 30, "data": checkpoint["data"]}})
        return served, checkpoint, resumed, await call(restarted.describe)

    served, checkpoint, resumed, described = run(first, taking_a_checkpoint)
    assert checkpoint == {"cursor": 30, "data": {"iter": 30}, "restoredFrom": None, "fastForwarded": 0}
    assert resumed["restoredFrom"] == 30 and resumed["fastForwarded"] == 5
    assert resumed["item"] == served[35]["item"] and restarted.env.iter == 36
    assert described["usesCheckpoint"] is True


def test_a_new_worker_checkpoints_at_the_runs_cursor_not_at_its_own(flags) -> None:
    spec = "arithmetic_env.py:CheckpointedArithmeticEnv"
    first = activities_for(spec, flags("serve"))
    restarted = activities_for(spec, flags("serve"))

    async def scenario(call):
        await restarted.env.setup()
        for i in range(10):
            await call(first.next_item, {"cursor": i})
        earlier = await call(first.checkpoint, {"step": 1})
        later = await call(restarted.checkpoint, {"step": 2, "cursor": 12, "checkpoint": {"cursor": 10, "data": earlier["data"]}})
        return earlier, later

    earlier, later = run(first, scenario)
    assert earlier == {"cursor": 10, "data": {"iter": 10}, "restoredFrom": None, "fastForwarded": 0}
    assert later == {"cursor": 12, "data": {"iter": 12}, "restoredFrom": 10, "fastForwarded": 2} and restarted.cursor.taken == 12


def test_a_class_without_checkpoints_saves_nothing(flags) -> None:
    acts = activities_for("arithmetic_env.py", flags("serve"))

    async def scenario(call):
        await call(acts.next_item, {"cursor": 0})
        return await call(acts.checkpoint, {"step": 1}), await call(acts.describe)

    checkpoint, described = run(acts, scenario)
    assert checkpoint["cursor"] == 1 and checkpoint["data"] is None and described["usesCheckpoint"] is False


def test_a_multi_step_group_through_managed_server(flags, tokenizer_dir) -> None:
    # server_type vllm: ManagedServer asks vLLM's /generate for exact token ids and logprobs, twice per rollout.
    acts = activities_for("multistep_env.py", flags("serve", "--openai.tokenizer_name", tokenizer_dir))

    async def scenario(call):
        item = await call(acts.next_item, {"cursor": 0})
        return await call(acts.collect, {"itemIndex": 0, "item": item["item"]})

    collected = run(acts, scenario)
    assert collected["status"] == "scored"
    [group] = collected["groups"]
    tokens, masks, logprobs = group["tokens"][0], group["masks"][0], group["inference_logprobs"][0]
    assert len(tokens) == len(masks) == len(logprobs)
    # Two generated spans in one sequence: prompt -100 / 1.0, completion = token ids / real logprobs, twice.
    trained = [i for i, m in enumerate(masks) if m != -100]
    spans = sum(1 for i in trained if i - 1 not in trained)
    assert spans == 2 and all(masks[i] == tokens[i] and logprobs[i] == -0.25 for i in trained)
    assert all(logprobs[i] == 1.0 for i, m in enumerate(masks) if m == -100)
    assert len(group["messages"][0]) == 4


def test_a_multi_step_evaluation_through_managed_server(flags, tokenizer_dir) -> None:
    acts = activities_for("multistep_env.py", flags("evaluate", "--openai.tokenizer_name", tokenizer_dir))
    evaluated = run(acts, lambda call: call(acts.evaluate, {}))
    assert evaluated["metrics"]["eval/mean_score"] == 1.0 and evaluated["metrics"]["eval/mean_tokens"] > 0


def test_groups_collected_side_by_side_stay_apart(flags, openai_server) -> None:
    # As under Atropos's serve, several groups are in flight on one event loop and one environment object.
    acts = activities_for("arithmetic_env.py", flags("serve"))

    async def scenario(call):
        items = [await call(acts.next_item, {"cursor": i}) for i in range(6)]
        openai_server.delay = 0.2
        try:
            return items, await asyncio.gather(*(call(acts.collect, {"itemIndex": i, "item": it["item"]}) for i, it in enumerate(items)))
        finally:
            openai_server.delay = 0.0

    items, collected = run(acts, scenario)
    for item, out in zip(items, collected):
        question = item["item"]["$tuple"][0]
        assert out["status"] == "scored" and len(out["groups"]) == 1
        assert out["groups"][0]["messages"][0][1]["content"] == question


def test_groups_into_the_trajectory_store(flags, tmp_path) -> None:
    acts = activities_for("arithmetic_env.py", flags("serve"))
    key = "run-1/arithmetic/item-0/atropos"

    async def scenario(call):
        item = await call(acts.next_item, {"cursor": 0})
        return await call(acts.collect, {"itemIndex": 0, "item": item["item"], "store": {"root": str(tmp_path), "key": key}})

    collected = run(acts, scenario)
    assert "groups" not in collected and collected["groupRefs"] == [{"key": f"{key}/attempt-1/group-0"}]
    assert collected["scores"] == [[1.0, -1.0, 1.0, -1.0]]
    stored = json.loads((tmp_path / f"{key}/attempt-1/group-0.json").read_text())
    assert stored["scores"] == [1.0, -1.0, 1.0, -1.0] and len(stored["tokens"]) == 4


def test_items_standard_pickle_refuses_travel_by_value(flags, item_key_file) -> None:
    # reasoning_gym's items carry dataset objects holding lambdas: encoded by value, read back by another worker.
    acts = activities_for("closure_items_env.py", flags("process"))

    async def scenario(call):
        taken = await call(acts.next_item, {"cursor": 0})
        return taken, await call(acts.collect, {"itemIndex": 0, "item": taken["item"], "maxTokenLen": 4096})

    taken, collected = run(acts, scenario)
    assert collected["status"] == "scored" and collected["groups"][0]["scores"] == [1.0, -1.0]
    elsewhere = (
        "import json, sys\nfrom clotho_atropos import load_env_class\nfrom clotho_atropos.codec import decode_item, read_item_key, set_item_key\n"
        f"load_env_class({str(ENVS / 'closure_items_env.py')!r})\nset_item_key(read_item_key({item_key_file!r}))\n"
        "question, task = decode_item(json.load(sys.stdin))\nprint(question, task.check(41), task.check(42))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", elsewhere], input=json.dumps(taken["item"]), capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "What is 1 + 40? True False"


def test_an_item_nothing_can_encode_fails_the_activity_for_good(flags) -> None:
    acts = activities_for("closure_items_env.py", flags("process", "--env.with_lock", "true"))

    async def scenario(call):
        return await call(acts.next_item, {"cursor": 0})

    with pytest.raises(ApplicationError, match=r"item 0 from get_next_item cannot be encoded: .*\[2\] is a lock") as raised:
        run(acts, scenario)
    assert raised.value.type == "AtroposItemNotEncodable" and raised.value.non_retryable


def test_two_overlapping_attempts_of_one_collect_each_answer_what_they_wrote(flags, tmp_path) -> None:
    # Attempt 1 timed out (its heartbeats stopped) while its code ran on; attempt 2 ran, wrote and answered; then
    # attempt 1 finished and wrote too. What attempt 2 answered is what the trainer must read.
    acts = activities_for("flaky_env.py", flags("process"))
    second_answered = asyncio.Event()
    tokens = [[1, 2, 3], [1, 2, 3]]

    async def collect(item):
        first = not second_answered.is_set() and item.get("attempt") == 1
        if first:
            await second_answered.wait()
        scores = [1.0, 0.0] if first else [0.0, 1.0]
        return {"tokens": tokens, "masks": tokens, "scores": scores}, []

    acts.env.collect_trajectories = collect
    target = {"root": str(tmp_path), "run": "run-1/flaky", "key": "run-1/flaky/item-0"}

    async def scenario():
        await acts.env.setup()
        attempts = []
        for n in (1, 2):
            environment = ActivityEnvironment()
            environment.info = dataclasses.replace(environment.info, attempt=n)
            attempts.append(environment)
        first = asyncio.ensure_future(attempts[0].run(acts.collect, {"itemIndex": 0, "item": {"n": 1, "attempt": 1}, "store": target}))
        await asyncio.sleep(0)
        answered = await attempts[1].run(acts.collect, {"itemIndex": 0, "item": {"n": 1, "attempt": 2}, "store": target})
        second_answered.set()
        await first
        return answered

    answered = asyncio.run(scenario())
    assert answered["scores"] == [[0.0, 1.0]]
    [ref] = answered["groupRefs"]
    assert store.get(str(tmp_path), ref["key"])["scores"] == [0.0, 1.0]


def test_large_items_put_back_items_and_checkpoints_travel_as_store_keys(flags, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BIG_ITEMS_ENV_BYTES", "250000")
    acts = activities_for("edge_envs.py:BigItemsEnv", flags("process"))
    target = {"root": str(tmp_path), "run": "run-1/BigItemsEnv"}

    async def scenario(call):
        taken = await call(acts.next_item, {"cursor": 0, "count": 3, "store": target})
        collected = await call(acts.collect, {"itemIndex": 0, "item": taken["items"][0], "store": {**target, "key": "run-1/BigItemsEnv/item-0"}})
        saved = await call(acts.checkpoint, {"step": 1, "cursor": 3, "store": target})
        return taken, collected, saved

    taken, collected, saved = run(acts, scenario)
    assert len(json.dumps(taken)) < 2000 and taken["item"] == taken["items"][0]
    assert all(set(item) == {"$stored"} for item in taken["items"])
    # Item 1 is put back once: in the store too, whatever its size.
    assert collected["status"] == "declined" and set(collected["backlog"][0]) == {"$stored"}
    again = Target.parse(target).read(collected["backlog"][0]["$stored"])
    assert again["again"] is True and len(again["text"]) == 250000
    # The checkpoint is a key: a new worker restores from it.
    assert saved["data"] is None and saved["ref"]["key"].startswith("run-1/BigItemsEnv/checkpoints/")
    restarted = activities_for("edge_envs.py:BigItemsEnv", flags("process"))

    async def resume(call):
        return await call(restarted.next_item, {"cursor": 5, "checkpoint": {"cursor": 3, "data": None, "ref": saved["ref"]}, "store": target})

    resumed = run(restarted, resume)
    assert resumed["restoredFrom"] == 3 and resumed["fastForwarded"] == 2 and restarted.env.iter == 6


def test_small_items_stay_inline_and_one_that_reads_as_a_key_is_stored(tmp_path) -> None:
    target = Target(root=str(tmp_path), run="run-1/env")
    carrier = Carrier(target)
    assert carrier.carry({"n": 1}) == {"n": 1}
    lookalike = {"$stored": "run-1/env/items/x"}
    carried = carrier.carry(lookalike)
    assert carried != lookalike and uncarried(carried, target) == lookalike
    # The items kept inline in one answer stay under a bound together.
    many = [carrier.carry({"text": "x" * 4000}) for _ in range(40)]
    assert 10 < sum(1 for m in many if "text" in m) < 20


def test_an_answer_past_the_payload_budget_fails_naming_its_size(flags, monkeypatch) -> None:
    # Without a store to put them in, sixteen items of 250 KB would be a 4 MB answer.
    monkeypatch.setenv("BIG_ITEMS_ENV_BYTES", "250000")
    acts = activities_for("edge_envs.py:BigItemsEnv", flags("process"))

    async def scenario(call):
        return await call(acts.next_item, {"cursor": 0, "count": 16})

    with pytest.raises(ApplicationError, match=rf"atroposNextItem's answer at cursor 0 is \d+ bytes of JSON, past the payload budget of {PAYLOAD_BUDGET_BYTES}") as raised:
        run(acts, scenario)
    assert raised.value.type == "AtroposPayloadTooLarge" and raised.value.non_retryable


def test_a_module_imported_while_collecting_that_is_missing_fails_for_good_naming_it(flags, monkeypatch) -> None:
    monkeypatch.setenv("MISSING_MODULE_ENV_LAZY", "1")
    acts = activities_for("missing_module_env.py", flags("serve"))

    async def scenario(call):
        item = await call(acts.next_item, {"cursor": 0})
        return await call(acts.collect, {"itemIndex": 0, "item": item["item"]})

    with pytest.raises(ApplicationError, match=r"imports the Python module 'clotho_test_missing_module' at missing_module_env.py:\d+") as raised:
        run(acts, scenario)
    assert raised.value.type == "AtroposModuleMissing" and raised.value.non_retryable and "CLOTHO_ATROPOS_PYTHON" in raised.value.message
