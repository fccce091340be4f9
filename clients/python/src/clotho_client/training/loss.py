"""GRPO's clipped surrogate against the engine's logprobs, and the alignment statistics Atropos's trainer logs."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .data import MicroBatch


@dataclass
class LossStats:
    """Sums over the trained tokens of one step, turned into means by :meth:`summary`."""

    tokens: int = 0
    sequences: int = 0
    diff_sum: float = 0.0
    abs_diff_sum: float = 0.0
    abs_diff_max: float = 0.0
    ratio_sum: float = 0.0
    ratio_min: float = float("inf")
    ratio_max: float = float("-inf")
    clipped: int = 0
    logprob_sum: float = 0.0
    losses: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        n = max(self.tokens, 1)
        return {
            "logprob_diff_mean": self.diff_sum / n,
            "logprob_diff_abs_mean": self.abs_diff_sum / n,
            "logprob_diff_max": self.abs_diff_max,
            "ratio_mean": self.ratio_sum / n,
            "ratio_min": self.ratio_min if self.tokens else 1.0,
            "ratio_max": self.ratio_max if self.tokens else 1.0,
            "clipped_fraction": self.clipped / n,
            "trained_logprob_mean": self.logprob_sum / n,
            "trained_tokens": float(self.tokens),
        }


def token_logprobs(model: torch.nn.Module, batch: MicroBatch) -> torch.Tensor:
    """Log-probabilities of the targets at the trained positions only (``[trained tokens]``), at each sample's temperature.

    Logits are computed only where a token is trained: a vocabulary of 150k makes the full ``[batch, length, vocab]``
    tensor the largest thing in the step.
    """
    hidden = model.get_decoder()(input_ids=batch.input_ids, attention_mask=batch.attention_mask).last_hidden_state
    rows = batch.trained.nonzero(as_tuple=True)
    logits = model.get_output_embeddings()(hidden[rows]).float()
    logits = logits / batch.temperatures[rows[0]].unsqueeze(-1)
    return -F.cross_entropy(logits, batch.targets[rows], reduction="none")


def grpo_loss(model: torch.nn.Module, batch: MicroBatch, *, clip_eps: float, total_sequences: int, stats: LossStats) -> torch.Tensor:
    """This micro-batch's share of the step's loss: the clipped surrogate, averaged over each sequence's trained tokens
    and then over the step's ``total_sequences`` (so micro-batches' losses add up to the step's mean)."""
    rows = batch.trained.nonzero(as_tuple=True)
    logp = token_logprobs(model, batch)
    old = batch.inference_logprobs[rows]
    adv = batch.advantages[rows]
    # Positions without the engine's logprob carry Atropos's placeholder 1.0: on-policy there, ratio 1 with a gradient.
    old = torch.where(old > 0, logp.detach(), old)
    ratio = torch.exp(logp - old)
    clipped_ratio = ratio.clamp(1 - clip_eps, 1 + clip_eps)
    per_token = -torch.minimum(ratio * adv, clipped_ratio * adv)
    counts = batch.trained.sum(dim=1).clamp(min=1).float()
    per_sequence = torch.zeros(batch.size, device=logp.device).index_add(0, rows[0], per_token) / counts
    loss = per_sequence.sum() / total_sequences

    with torch.no_grad():
        diff = logp - old
        stats.tokens += int(logp.numel())
        stats.sequences += batch.size
        stats.diff_sum += float(diff.sum())
        stats.abs_diff_sum += float(diff.abs().sum())
        if diff.numel():
            stats.abs_diff_max = max(stats.abs_diff_max, float(diff.abs().max()))
            stats.ratio_min = min(stats.ratio_min, float(ratio.min()))
            stats.ratio_max = max(stats.ratio_max, float(ratio.max()))
        stats.ratio_sum += float(ratio.sum())
        stats.clipped += int(((ratio * adv) != torch.minimum(ratio * adv, clipped_ratio * adv)).sum())
        stats.logprob_sum += float(logp.sum())
        stats.losses.append(float(loss))
    return loss
