"""What the activities put in Temporal's history, kept small: items, put-back items and checkpoints go into the
trajectory store and travel as ``{"$stored": key}``, and every answer is held to the payload budget.

An encoded item (``codec.encode_item``) stays inline while it is small (``INLINE_ITEM_BYTES``, and
``INLINE_ANSWER_BYTES`` for all the items of one answer): most environments' items are a question and an answer, and a
store read per group would cost more than it saves. A larger one is written to ``<run>/<env>/items/<sha256>`` (by
content: two attempts that took the same item write the same file). Put-back items always go there, since the
env-run keeps its backlog in its progress across continue-as-new. An answer past ``PAYLOAD_BUDGET_BYTES`` fails the
activity at once, not retryable, naming its size, rather than failing later at Temporal's limit (2 MB).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from temporalio.exceptions import ApplicationError

from . import store

#: The budget of one answer in bytes of JSON: ``PAYLOAD_BUDGET_BYTES`` of src/schema/payload.ts.
PAYLOAD_BUDGET_BYTES = 512 * 1024
#: The largest item kept inline.
INLINE_ITEM_BYTES = 8 * 1024
#: The most the items kept inline may weigh together in one answer (a call may answer a hundred slots).
INLINE_ANSWER_BYTES = 64 * 1024

STORED = "$stored"


def _bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":")).encode())


def _is_ref(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get(STORED), str)


@dataclass
class Target:
    """Where an activity writes: the store's root, the run's prefix (``<run>/<env>``) and, for a group, its key."""

    root: str
    run: Optional[str] = None
    key: Optional[str] = None

    @staticmethod
    def parse(raw: Any) -> Optional["Target"]:
        if not isinstance(raw, dict) or not isinstance(raw.get("root"), str):
            return None
        run, key = raw.get("run"), raw.get("key")
        return Target(raw["root"], run if isinstance(run, str) else None, key if isinstance(key, str) else None)

    def read(self, key: str) -> Any:
        return store.get(self.root, key)


class Carrier:
    """Carries the encoded items of one answer: inline while small, else into the store (``always``: every one)."""

    def __init__(self, target: Optional[Target], always: bool = False) -> None:
        self.target = target if target is not None and target.run is not None else None
        self.always = always
        self.inline = 0

    def carry(self, encoded: Any) -> Any:
        size = _bytes(encoded)
        # An item that reads as a reference is stored too, so that an inline value is never taken for one.
        small = size <= INLINE_ITEM_BYTES and self.inline + size <= INLINE_ANSWER_BYTES and not _is_ref(encoded)
        if self.target is None or (small and not self.always):
            self.inline += size
            return encoded
        return {STORED: store.put_content(self.target.root, f"{self.target.run}/items", encoded)["key"]}


def uncarried(value: Any, target: Optional[Target]) -> Any:
    """The encoded item ``value`` stands for: itself, or what the store holds under its reference."""
    if not _is_ref(value):
        return value
    if target is None:
        raise ApplicationError(f"item {value[STORED]} is in the trajectory store, and the request names none", type="AtroposBadInput", non_retryable=True)
    return target.read(value[STORED])


def within_budget(answer: dict, what: str) -> dict:
    """``answer``, unless its JSON is past ``PAYLOAD_BUDGET_BYTES``: then a non-retryable failure naming the size."""
    size = _bytes(answer)
    if size > PAYLOAD_BUDGET_BYTES:
        raise ApplicationError(
            f"{what} is {size} bytes of JSON, past the payload budget of {PAYLOAD_BUDGET_BYTES} (Temporal refuses payloads past 2 MB): "
            "large values travel through the trajectory store, which the request must name (a directory store)",
            type="AtroposPayloadTooLarge",
            non_retryable=True,
        )
    return answer
