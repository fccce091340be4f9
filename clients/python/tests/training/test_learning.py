"""The loop closed on CPU: rollouts from `clotho inference`, groups through `clotho serve` and `clotho api`, GRPO steps,
the new weights swapped into the engine, the next rollouts from them; the reward of the `lowercase` task rises."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from conftest import Stack, free_port, metrics_of, results_dir, wandb_records
from servers import wait_until

STEPS = 40
FIRST = LAST = 5
#: Reward (share of lowercase words) the last steps must gain over the first: the random policy's is about 0.2.
MARGIN = 0.2


def test_grpo_on_lowercase_raises_reward_and_starts_aligned_with_the_engine(stack: Stack, tmp_path: Path) -> None:
    stack.start_engine_and_api()
    save = tmp_path / "trainer"
    metrics_port = free_port()
    # 4 groups of 8 per step; the engine's version is the trainer's step, and serve runs at most one batch ahead.
    trainer = stack.trainer(
        save, "--batch-size", "16", "--gradient-accumulation-steps", "2", "--lr", "2e-3", "--training-steps", str(STEPS),
        "--seed", "1", "--metrics-port", str(metrics_port), "--use-wandb", "--wandb-project", "clotho-trainer-test", "--wandb-group", "lowercase",
        env={"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true"},
    )
    trainer.wait_for_line(r"loaded .* in", timeout=180)
    stack.start_serve("--env.max_batches_offpolicy", "1")
    # Prometheus sees each step's figures while the trainer runs.
    scrape = lambda: httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").text  # noqa: E731
    wait_until(lambda: "clotho_trainer_step 2.0" in scrape(), 600, "step 2 on the trainer's /metrics", 0.5)
    assert "clotho_trainer_logprob_diff_abs_mean" in scrape() and "clotho_trainer_reward_mean" in scrape()
    assert trainer.popen.wait(timeout=1200) == 0, "the trainer failed"

    steps = metrics_of(save)
    assert [s["step"] for s in steps] == list(range(1, STEPS + 1))
    # Before any update the trainer's logprobs are the engine's: tokens, masks and logprobs line up.
    first = steps[0]
    assert first["logprob_diff_abs_mean"] < 1e-2, first
    assert 0.98 < first["ratio_min"] <= first["ratio_max"] < 1.02, first
    # Every step's weights reached the engine.
    assert httpx.get(f"{stack.engine_url}/v1/weights").json()["version"] == STEPS
    # W&B has every step's figures too (an offline run, read back from its transaction log).
    [run_file] = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    records = wandb_records(run_file)
    [run] = [r["run"] for r in records if r.get("run")]
    assert (run["project"], run["run_group"]) == ("clotho-trainer-test", "lowercase")
    history = {r["history"]["step"]["num"]: {(i.get("key") or "/".join(i["nested_key"])): json.loads(i["value_json"]) for i in r["history"]["item"]} for r in records if r.get("history")}
    assert sorted(history) == list(range(1, STEPS + 1))
    assert history[1]["train/logprob_diff_abs_mean"] == steps[0]["logprob_diff_abs_mean"]
    assert history[STEPS]["train/reward_mean"] == steps[-1]["reward_mean"]
    before = sum(s["reward_mean"] for s in steps[:FIRST]) / FIRST
    after = sum(s["reward_mean"] for s in steps[-LAST:]) / LAST
    out = results_dir()
    if out is not None:
        curve = [{k: s[k] for k in ("step", "reward_mean", "loss", "logprob_diff_abs_mean", "ratio_mean", "clipped_fraction")} for s in steps]
        (out / "curve.json").write_text(json.dumps(curve, indent=1))
        (out / "reward.txt").write_text(f"reward: {before:.3f} -> {after:.3f}\n")
    assert after >= before + MARGIN, f"reward {before:.3f} -> {after:.3f}: {[round(s['reward_mean'], 3) for s in steps]}"
