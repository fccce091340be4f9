"""Wire types of the trajectory API, with Atropos's field names (ATROPOS-API.md §2)."""

from __future__ import annotations

from dataclasses import dataclass
import sys
from typing import Any, Optional

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # 3.10's TypedDict does not understand NotRequired
    from typing_extensions import NotRequired, TypedDict


class Message(TypedDict, total=False):
    """One chat message; the API requires ``role`` and ``content`` and keeps any other key."""

    role: str
    content: Any
    reward: Optional[float]


@dataclass(frozen=True)
class LeaseRenewal:
    """What ``POST /batch/renew`` did with one lease: ``renewed`` until ``lease_expires_at`` (seconds since the Unix
    epoch), ``expired`` (it ran out first, so its batch is served again) or ``unknown``."""

    batch_id: str
    status: str
    lease_expires_at: Optional[float]


class ScoredDataGroup(TypedDict):
    """A scored group of rollouts of one item: Atropos's ``ScoredData``, 14 keys.

    ``tokens``, ``masks`` and ``scores`` are required when posting; the API fills the other keys
    with ``None``, so every group it returns carries all 14.
    """

    tokens: list[list[int]]
    #: ``-100`` at positions not trained on, else the token id.
    masks: list[list[int]]
    #: One scalar per sequence.
    scores: list[float]
    advantages: NotRequired[Optional[list[list[float]]]]
    ref_logprobs: NotRequired[Optional[list[list[float]]]]
    messages: NotRequired[Optional[list[list[Message]]]]
    generation_params: NotRequired[Optional[dict[str, Any]]]
    #: Aligned with ``tokens``; ``1.0`` at masked positions.
    inference_logprobs: NotRequired[Optional[list[list[float]]]]
    #: Per-sequence dicts, e.g. ``{"set_advantage_to_zero": True}``.
    overrides: NotRequired[Optional[list[dict[str, Any]]]]
    group_overrides: NotRequired[Optional[dict[str, Any]]]
    images: NotRequired[Any]
    env_id: NotRequired[Optional[int]]
    #: ``[sequence][position][top_k]``.
    distill_token_ids: NotRequired[Optional[list[list[list[int]]]]]
    distill_logprobs: NotRequired[Optional[list[list[list[float]]]]]


#: The 14 keys of a group, in Atropos's order.
SCORED_DATA_FIELDS: tuple[str, ...] = (
    "tokens",
    "masks",
    "scores",
    "advantages",
    "ref_logprobs",
    "messages",
    "generation_params",
    "inference_logprobs",
    "overrides",
    "group_overrides",
    "images",
    "env_id",
    "distill_token_ids",
    "distill_logprobs",
)


@dataclass(frozen=True)
class Batch:
    """What ``GET /batch`` served: groups whose sequences add up to the trainer's ``batch_size``.

    ``batch_id`` and ``lease_expires_at`` (seconds since the Unix epoch) are set for leased batches
    and batches fetched by id; a plain Atropos ``GET /batch`` has neither. A leased batch's ``batch_id``
    is its lease's, the id to ack it with: a batch served again comes with a new one.
    """

    groups: list[ScoredDataGroup]
    batch_id: Optional[str] = None
    lease_expires_at: Optional[float] = None


@dataclass(frozen=True)
class Info:
    """``GET /info``: ``-1, -1`` before a trainer registered."""

    batch_size: int
    max_token_len: int


@dataclass(frozen=True)
class Status:
    """``GET /status``: the server's step (batches formed) and the groups waiting."""

    current_step: int
    queue_size: int
