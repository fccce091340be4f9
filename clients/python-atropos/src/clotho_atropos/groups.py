"""Which scored groups Atropos would send, decided by Atropos's own ``handle_send_to_api``, with the reason for each one it skips.

``handle_send_to_api(..., do_send_to_api=False)`` checks each group (size, identical scores, length),
fills the defaults, synthesises messages with ``include_messages``, adds it to the wandb rollout table
and writes the ones it keeps to ``env.jsonl_writer``. Installing a writer that hands each written group
to the calling task (a context variable: activities run side by side on one event loop) yields exactly
the groups Atropos keeps, as Atropos changed them. Atropos only logs why it skipped one; ``drop_reason``
repeats its checks, in its order, to name the reason for the progress line.
"""

from __future__ import annotations

import contextvars
from typing import Any, Optional

from atroposlib.envs.base import BaseEnv

_kept: contextvars.ContextVar[Optional[list]] = contextvars.ContextVar("clotho_atropos_kept", default=None)


class _KeptGroups:
    """Stands in for the JSONL writer; ``write`` is all ``handle_send_to_api`` calls."""

    def write(self, group: Any) -> None:
        kept = _kept.get()
        if kept is None:
            raise RuntimeError("a group was written outside filter_groups")
        kept.append(group)

    def close(self) -> None:
        pass


async def filter_groups(env: BaseEnv, groups: list[Any], item: Any, abort_on_length: bool) -> tuple[list[Any], list[dict]]:
    """The groups Atropos keeps and ``[{"index", "reason"}]`` for the others."""
    if not isinstance(getattr(env, "jsonl_writer", None), _KeptGroups):
        env.jsonl_writer = _KeptGroups()
    kept: list[Any] = []
    token = _kept.set(kept)
    try:
        await env.handle_send_to_api(groups, item, do_send_to_api=False, abort_on_any_max_length_exceeded=abort_on_length)
    finally:
        _kept.reset(token)
    kept_ids = {id(g) for g in kept}
    dropped = [{"index": i, "reason": drop_reason(env, g, abort_on_length)} for i, g in enumerate(groups) if id(g) not in kept_ids]
    return kept, dropped


def drop_reason(env: BaseEnv, group: Any, abort_on_length: bool) -> str:
    """Atropos's reason for not sending ``group`` (its checks in ``handle_send_to_api``, in order)."""
    if group is None:
        return "declined"
    if not isinstance(group, dict):
        return "not a ScoredDataGroup"
    size = (group.get("group_overrides") or {}).get("group_size", env.config.group_size)
    if None in group or len(group.get("tokens", [])) != size:
        return f"group size {len(group.get('tokens', []))}, expected {size}"
    if env.config.ensure_scores_are_not_same and len(set(group["scores"])) == 1:
        return "identical scores"
    if abort_on_length and env.max_token_len > 0 and any(len(t) >= env.max_token_len for t in group["tokens"]):
        return f"longer than max_token_len {env.max_token_len}"
    return "skipped by handle_send_to_api"
