"""Scored groups to padded tensors: targets, trained positions, the engine's logprobs, advantages, temperatures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import torch

from ..grpo import advantages as group_advantages

#: Atropos's mask of a position that is not trained (the prompt, tool output).
UNTRAINED = -100


class BatchError(ValueError):
    """A group the trainer cannot learn from as it is (missing logprobs, lengths that disagree)."""


@dataclass(frozen=True)
class Sample:
    """One sequence, shifted for next-token prediction: position t predicts ``targets[t]`` from ``inputs[: t + 1]``."""

    inputs: list[int]
    targets: list[int]
    trained: list[bool]
    inference_logprobs: list[float]
    advantages: list[float]
    temperature: float
    score: float


@dataclass(frozen=True)
class MicroBatch:
    """Right-padded tensors of a few samples, all ``[batch, length]`` except ``temperatures`` (``[batch]``)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    targets: torch.Tensor
    trained: torch.Tensor
    inference_logprobs: torch.Tensor
    advantages: torch.Tensor
    temperatures: torch.Tensor

    @property
    def size(self) -> int:
        return int(self.input_ids.shape[0])


def _temperature(group: Mapping[str, Any], i: int) -> float:
    # Atropos's example trainer's order: the sample's override, the generation params, the group's override, 1.
    overrides = group.get("overrides") or []
    for source in (overrides[i] if i < len(overrides) else None, group.get("generation_params"), group.get("group_overrides")):
        if isinstance(source, Mapping) and source.get("temperature") is not None:
            value = float(source["temperature"])
            if value <= 0:
                raise BatchError(f"temperature {value} of sample {i}: training needs the sampling temperature, which must be > 0")
            return value
    return 1.0


def samples_of(group: Mapping[str, Any], *, require_logprobs: bool = True) -> list[Sample]:
    """A group's sequences as samples, with GRPO advantages unless the group carries per-token ones."""
    tokens: Sequence[Sequence[int]] = group["tokens"]
    masks: Sequence[Sequence[int]] = group["masks"]
    scores = [float(s) for s in group["scores"]]
    logprobs = group.get("inference_logprobs")
    per_token = group.get("advantages")
    overrides = group.get("overrides") or []
    normalised = group_advantages(group)
    if not (len(tokens) == len(masks) == len(scores)):
        raise BatchError(f"group of {len(tokens)} token lists, {len(masks)} masks and {len(scores)} scores")
    out: list[Sample] = []
    for i, seq in enumerate(tokens):
        mask = masks[i]
        if len(mask) != len(seq):
            raise BatchError(f"sample {i}: {len(seq)} tokens but {len(mask)} mask entries")
        if logprobs is None or i >= len(logprobs) or logprobs[i] is None:
            if require_logprobs:
                raise BatchError(
                    "a group without inference_logprobs: the importance ratio needs the engine's logprobs "
                    "(use an engine that returns them: clotho inference, vLLM, SGLang; or --allow-missing-logprobs)"
                )
            lp = [1.0] * len(seq)
        else:
            lp = [float(x) for x in logprobs[i]]
            if len(lp) != len(seq):
                raise BatchError(f"sample {i}: {len(seq)} tokens but {len(lp)} inference_logprobs")
        zeroed = i < len(overrides) and bool((overrides[i] or {}).get("set_advantage_to_zero"))
        if per_token is not None and i < len(per_token) and per_token[i] is not None:
            adv = [float(a) for a in per_token[i]]
            if len(adv) != len(seq):
                raise BatchError(f"sample {i}: {len(seq)} tokens but {len(adv)} advantages")
        else:
            adv = [normalised[i]] * len(seq)
        if zeroed:
            adv = [0.0] * len(seq)
        out.append(
            Sample(
                inputs=list(seq[:-1]),
                targets=list(seq[1:]),
                trained=[m != UNTRAINED for m in mask[1:]],
                inference_logprobs=lp[1:],
                advantages=adv[1:],
                temperature=_temperature(group, i),
                score=scores[i],
            )
        )
    return out


def micro_batches(
    groups: Sequence[Mapping[str, Any]],
    size: int,
    *,
    pad_token_id: int = 0,
    require_logprobs: bool = True,
    device: Optional[torch.device] = None,
) -> list[MicroBatch]:
    """Every sample of ``groups`` in order, ``size`` at a time, right-padded to the longest of each micro-batch."""
    samples = [s for g in groups for s in samples_of(g, require_logprobs=require_logprobs)]
    return [_stack(samples[i : i + size], pad_token_id, device) for i in range(0, len(samples), size)]


def _stack(samples: Sequence[Sample], pad: int, device: Optional[torch.device]) -> MicroBatch:
    length = max(len(s.inputs) for s in samples)

    def padded(rows: list[list[Any]], fill: Any, dtype: torch.dtype) -> torch.Tensor:
        return torch.tensor([r + [fill] * (length - len(r)) for r in rows], dtype=dtype, device=device)

    return MicroBatch(
        input_ids=padded([s.inputs for s in samples], pad, torch.long),
        attention_mask=padded([[1] * len(s.inputs) for s in samples], 0, torch.long),
        targets=padded([s.targets for s in samples], pad, torch.long),
        trained=padded([s.trained for s in samples], False, torch.bool),
        inference_logprobs=padded([s.inference_logprobs for s in samples], 1.0, torch.float32),
        advantages=padded([s.advantages for s in samples], 0.0, torch.float32),
        temperatures=torch.tensor([s.temperature for s in samples], dtype=torch.float32, device=device),
    )
