"""GRPO advantages, computed as Atropos's example trainer does (``example_trainer/data.py``)."""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

#: Floor of the standard deviation, so a group of equal scores gives zeros instead of a division by zero.
MIN_STD = 1e-8


def advantages(group: Mapping[str, Any]) -> list[float]:
    """One advantage per sequence: its score z-normalised within the group.

    ``(s - mean) / max(std, 1e-8)`` with the population standard deviation (numpy's default, as in
    Atropos) when the group has more than one sample; a single sample gets 0. A sequence whose
    ``overrides[i]["set_advantage_to_zero"]`` is truthy gets 0.
    """
    scores = [float(s) for s in group["scores"]]
    result = _z_scores(scores)
    for i, override in enumerate(group.get("overrides") or ()):
        if i < len(result) and override and override.get("set_advantage_to_zero"):
            result[i] = 0.0
    return result


def batch_advantages(groups: Iterable[Mapping[str, Any]]) -> list[list[float]]:
    """:func:`advantages` of every group of a batch, in order."""
    return [advantages(group) for group in groups]


def _z_scores(scores: Sequence[float]) -> list[float]:
    # Equal scores carry no signal; rounding in the mean must not turn them into +-1e-16 / 1e-8.
    if len(scores) <= 1 or min(scores) == max(scores):
        return [0.0] * len(scores)
    mean = math.fsum(scores) / len(scores)
    centred = [s - mean for s in scores]
    std = math.sqrt(math.fsum(c * c for c in centred) / len(centred))
    return [c / max(std, MIN_STD) for c in centred]
