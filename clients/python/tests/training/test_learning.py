"""The loop closed on CPU: rollouts from `clotho inference`, groups through `clotho serve` and `clotho api`, GRPO steps,
the new weights swapped into the engine, the next rollouts from them; the reward of the `lowercase` task rises."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from conftest import Stack, metrics_of, results_dir

STEPS = 24
FIRST = LAST = 4
#: Reward (share of lowercase words) the last steps must gain over the first: the random policy's is about 0.2.
MARGIN = 0.2


def test_grpo_on_lowercase_raises_reward_and_starts_aligned_with_the_engine(stack: Stack, tmp_path: Path) -> None:
    stack.start_engine_and_api()
    save = tmp_path / "trainer"
    # 4 groups of 8 per step; the engine's version is the trainer's step, and serve runs at most one batch ahead.
    trainer = stack.trainer(
        save, "--batch-size", "16", "--gradient-accumulation-steps", "2", "--lr", "2e-3", "--training-steps", str(STEPS),
        "--seed", "1",
    )
    trainer.wait_for_line(r"loaded .* in", timeout=180)
    stack.start_serve("--env.max_batches_offpolicy", "1")
    assert trainer.popen.wait(timeout=1200) == 0, "the trainer failed"

    steps = metrics_of(save)
    assert [s["step"] for s in steps] == list(range(1, STEPS + 1))
    # Before any update the trainer's logprobs are the engine's: tokens, masks and logprobs line up.
    first = steps[0]
    assert first["logprob_diff_abs_mean"] < 1e-2, first
    assert 0.98 < first["ratio_min"] <= first["ratio_max"] < 1.02, first
    # Every step's weights reached the engine.
    assert httpx.get(f"{stack.engine_url}/v1/weights").json()["version"] == STEPS
    before = sum(s["reward_mean"] for s in steps[:FIRST]) / FIRST
    after = sum(s["reward_mean"] for s in steps[-LAST:]) / LAST
    out = results_dir()
    if out is not None:
        curve = [{k: s[k] for k in ("step", "reward_mean", "loss", "logprob_diff_abs_mean", "ratio_mean", "clipped_fraction")} for s in steps]
        (out / "curve.json").write_text(json.dumps(curve, indent=1))
        (out / "reward.txt").write_text(f"reward: {before:.3f} -> {after:.3f}\n")
    assert after >= before + MARGIN, f"reward {before:.3f} -> {after:.3f}: {[round(s['reward_mean'], 3) for s in steps]}"
