"""The trainer's arithmetic on a toy model: alignment of targets, masks and logprobs, advantages, the clipped loss."""

from __future__ import annotations

import math

import pytest
import torch

from clotho_client.training.data import BatchError, micro_batches, samples_of
from clotho_client.training.loss import LossStats, grpo_loss, token_logprobs


class _Out:
    def __init__(self, hidden: torch.Tensor) -> None:
        self.last_hidden_state = hidden


class _Decoder(torch.nn.Module):
    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> _Out:
        return _Out(self.embed(input_ids))


class ToyLM(torch.nn.Module):
    """Next token depends on the current one only: enough to check what the loss does with each position."""

    def __init__(self, vocab: int = 11, dim: int = 5) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.decoder = _Decoder(vocab, dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)

    def get_decoder(self) -> torch.nn.Module:
        return self.decoder

    def get_output_embeddings(self) -> torch.nn.Module:
        return self.head

    def logprob(self, prev: int, token: int, temperature: float = 1.0) -> float:
        with torch.no_grad():
            logits = self.head(self.decoder.embed(torch.tensor([prev]))) / temperature
            return float(torch.log_softmax(logits, -1)[0, token])


def group(**extra: object) -> dict:
    base = {
        "tokens": [[1, 2, 3, 4], [1, 2, 5, 6, 7]],
        "masks": [[-100, -100, 3, 4], [-100, -100, 5, 6, 7]],
        "scores": [1.0, -1.0],
        "inference_logprobs": [[1.0, 1.0, -0.5, -0.7], [1.0, 1.0, -0.1, -0.2, -0.3]],
    }
    return {**base, **extra}


def test_samples_are_shifted_by_one_position() -> None:
    first, second = samples_of(group())
    assert first.inputs == [1, 2, 3] and first.targets == [2, 3, 4]
    assert first.trained == [False, True, True]
    assert first.inference_logprobs == [1.0, -0.5, -0.7]
    assert first.advantages == [1.0, 1.0, 1.0] and second.advantages == [-1.0] * 4
    assert first.temperature == 1.0


def test_per_token_advantages_win_and_set_advantage_to_zero_zeroes_them() -> None:
    g = group(advantages=[[0, 0, 0.5, 0.25], None], overrides=[{}, {"set_advantage_to_zero": True}])
    first, second = samples_of(g)
    assert first.advantages == [0, 0.5, 0.25]
    assert second.advantages == [0.0] * 4


def test_temperature_comes_from_the_sample_then_generation_params_then_the_group() -> None:
    g = group(overrides=[{"temperature": 0.5}, {}], generation_params={"temperature": 0.8}, group_overrides={"temperature": 2.0})
    assert [s.temperature for s in samples_of(g)] == [0.5, 0.8]
    assert [s.temperature for s in samples_of(group(group_overrides={"temperature": 2.0}))] == [2.0, 2.0]
    with pytest.raises(BatchError, match="temperature 0.0"):
        samples_of(group(generation_params={"temperature": 0}))


def test_bad_groups_are_refused_by_what_is_wrong() -> None:
    with pytest.raises(BatchError, match="without inference_logprobs"):
        samples_of(group(inference_logprobs=None))
    assert samples_of(group(inference_logprobs=None), require_logprobs=False)[0].inference_logprobs == [1.0] * 3
    with pytest.raises(BatchError, match="5 tokens but 4 inference_logprobs"):
        samples_of(group(inference_logprobs=[[1.0] * 4, [1.0] * 4]))
    with pytest.raises(BatchError, match="4 tokens but 3 mask entries"):
        samples_of(group(masks=[[-100, 3, 4], [-100, -100, 5, 6, 7]]))


def test_micro_batches_pad_on_the_right_and_keep_order() -> None:
    [batch] = micro_batches([group()], 4, pad_token_id=9)
    assert batch.input_ids.tolist() == [[1, 2, 3, 9], [1, 2, 5, 6]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    assert batch.trained.tolist() == [[False, True, True, False], [False, True, True, True]]
    assert batch.inference_logprobs[0, 3] == 1.0
    assert [b.size for b in micro_batches([group(), group()], 3)] == [3, 1]


def test_token_logprobs_are_those_of_the_targets_at_trained_positions() -> None:
    model = ToyLM()
    g = group(generation_params={"temperature": 0.7})
    [batch] = micro_batches([g], 2)
    expected = [model.logprob(2, 3, 0.7), model.logprob(3, 4, 0.7), model.logprob(2, 5, 0.7), model.logprob(5, 6, 0.7), model.logprob(6, 7, 0.7)]
    assert token_logprobs(model, batch).tolist() == pytest.approx(expected, abs=1e-6)


def test_on_policy_loss_is_minus_the_advantage_weighted_mean_and_its_statistics() -> None:
    model = ToyLM()
    # The engine's logprobs equal the model's: ratio 1, nothing clipped, diff 0.
    lp = [[1.0, 1.0, model.logprob(2, 3), model.logprob(3, 4)], [1.0, 1.0, model.logprob(2, 5), model.logprob(5, 6), model.logprob(6, 7)]]
    [batch] = micro_batches([group(inference_logprobs=lp)], 2)
    stats = LossStats()
    loss = grpo_loss(model, batch, clip_eps=0.2, total_sequences=2, stats=stats)
    # ratio = 1 everywhere: per-token loss is -adv, so each sequence's mean is -adv and the batch mean is 0.
    assert float(loss.detach()) == pytest.approx(0.0, abs=1e-6)
    summary = stats.summary()
    assert summary["logprob_diff_abs_mean"] == pytest.approx(0.0, abs=1e-6)
    assert summary["ratio_mean"] == pytest.approx(1.0) and summary["clipped_fraction"] == 0.0
    assert summary["trained_tokens"] == 5
    # The gradient raises the rewarded sequence's tokens and lowers the other's.
    loss.backward()
    before = (model.logprob(2, 3), model.logprob(2, 5))
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.5 * p.grad
    after = (model.logprob(2, 3), model.logprob(2, 5))
    assert after[0] > before[0] and after[1] < before[1]


def test_ratios_beyond_the_clip_stop_the_gradient_and_are_counted() -> None:
    model = ToyLM()
    far = model.logprob(2, 3) - 1.0  # ratio e ≈ 2.72 for a positive advantage: clipped at 1.2
    lp = [[1.0, 1.0, far, model.logprob(3, 4)], [1.0, 1.0, model.logprob(2, 5), model.logprob(5, 6), model.logprob(6, 7)]]
    [batch] = micro_batches([group(inference_logprobs=lp)], 2)
    stats = LossStats()
    loss = grpo_loss(model, batch, clip_eps=0.2, total_sequences=2, stats=stats)
    summary = stats.summary()
    assert summary["clipped_fraction"] == pytest.approx(1 / 5)
    assert summary["ratio_max"] == pytest.approx(math.e, rel=1e-4)
    assert summary["logprob_diff_max"] == pytest.approx(1.0, rel=1e-4)
    # First sequence: tokens (-1.2 clipped, -1) → mean -1.1; second: +1 × 3 → 1; batch mean -0.05.
    assert float(loss) == pytest.approx((-1.1 + 1.0) / 2, abs=1e-5)
