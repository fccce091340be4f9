"""The environment's item iterator, brought to the run's durable cursor.

The workflow records item ``i`` once and asks for ``i + 1`` next; this process may be new (a restart, or
a worker on another host), so its ``get_next_item`` may stand anywhere behind. ``ItemCursor.item_at(i)``
first restores the run's last checkpoint when the class keeps one (``save_checkpoint``/``load_checkpoint``,
Atropos's own methods and file layout) and it is ahead of this process, then calls ``get_next_item`` and
discards the results until the iterator stands at ``i`` (fast-forward; ``progress`` hears the count after each item,
for the activity's heartbeat, which beats by time), then takes item ``i``. The last
items taken are kept, so an activity retried after its result was lost gets the same item again.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from atroposlib.envs.base import BaseEnv


class CursorBehindError(RuntimeError):
    """This process's iterator has moved past the item asked for and no longer keeps it."""


@dataclass
class Taken:
    """Item ``index``, or ``exhausted`` when ``get_next_item`` returned None there."""

    index: int
    item: Any = None
    exhausted: bool = False
    fast_forwarded: int = 0
    fast_forward_seconds: float = 0.0
    restored_from: Optional[int] = None


@dataclass
class Checkpoint:
    """What ``save_checkpoint`` wrote, and how many items the iterator had given when it was taken.

    The workflow keeps it by reference when the worker put it in the trajectory store (``ref``): it is given back with
    every ``atroposNextItem``, and read (``read``) only when a restore needs it.
    """

    cursor: int
    data: Optional[dict] = field(default=None)
    ref: Optional[str] = None
    read: Optional[Callable[[str], Any]] = field(default=None, repr=False)

    @property
    def saved(self) -> bool:
        return self.data is not None or self.ref is not None

    def contents(self) -> Optional[dict]:
        if self.data is None and self.ref is not None:
            if self.read is None:
                raise TypeError(f"checkpoint {self.ref} is in the trajectory store, and the request names none")
            self.data = self.read(self.ref)
        return self.data

    def to_json(self) -> dict:
        return {"cursor": self.cursor, "data": self.data}

    @staticmethod
    def parse(raw: Any, read: Optional[Callable[[str], Any]] = None) -> Optional["Checkpoint"]:
        if raw is None:
            return None
        if not isinstance(raw, dict) or not isinstance(raw.get("cursor"), int):
            raise TypeError(f"checkpoint: expected {{cursor: int, data: object | null, ref?: {{key}}}}, got {raw!r:.200}")
        ref = raw.get("ref")
        key = ref.get("key") if isinstance(ref, dict) and isinstance(ref.get("key"), str) else None
        return Checkpoint(cursor=raw["cursor"], data=raw.get("data"), ref=key, read=read)


class ItemCursor:
    """Serialises this process's calls of ``get_next_item`` and counts them."""

    def __init__(self, env: BaseEnv, keep: int = 1024) -> None:
        self.env = env
        self.taken = 0
        self._keep = keep
        self._recent: "OrderedDict[int, Any]" = OrderedDict()
        self._lock = asyncio.Lock()

    @property
    def keeps_checkpoints(self) -> bool:
        """Whether the class overrides Atropos's checkpoint methods (the base class saves nothing)."""
        cls = type(self.env)
        return cls.save_checkpoint is not BaseEnv.save_checkpoint or cls.load_checkpoint is not BaseEnv.load_checkpoint

    async def item_at(self, index: int, checkpoint: Optional[Checkpoint] = None, progress: Callable[[int], None] = lambda _n: None) -> Taken:
        async with self._lock:
            if index in self._recent:
                return Taken(index=index, item=self._recent[index])
            if index < self.taken:
                raise CursorBehindError(f"item {index} was taken by this process {self.taken - index} items ago and is no longer kept")
            result = await self._advance(index, checkpoint, progress)
            if result.exhausted:
                return result
            item = await self.env.get_next_item()
            if item is None:
                # Not counted: under `serve` Atropos asks again later, and so may the workflow.
                result.exhausted = True
                return result
            self.taken += 1
            self._recent[index] = item
            while len(self._recent) > self._keep:
                self._recent.popitem(last=False)
            result.item = item
            return result

    async def _advance(self, index: int, checkpoint: Optional[Checkpoint], progress: Callable[[int], None]) -> Taken:
        """Brings the iterator to ``index``: restores ``checkpoint`` when it is ahead of this process, then fast-forwards."""
        result = Taken(index=index)
        if checkpoint is not None and checkpoint.saved and self.taken < checkpoint.cursor <= index:
            self._load(checkpoint)
            result.restored_from = checkpoint.cursor
        started = time.perf_counter()
        while self.taken < index:
            if await self.env.get_next_item() is None:
                result.exhausted = True
                break
            self.taken += 1
            result.fast_forwarded += 1
            progress(result.fast_forwarded)
        result.fast_forward_seconds = time.perf_counter() - started
        return result

    async def checkpoint(self, step: int, at: Optional[int] = None, restore: Optional[Checkpoint] = None) -> "tuple[Checkpoint, Taken]":
        """Runs the class's ``save_checkpoint(step)`` into a scratch folder and reads back what it wrote.

        With ``at`` (the run's cursor), a process whose iterator stands behind it (a new one) is first brought there,
        from ``restore`` when it is ahead, so the checkpoint is of the run's position, not of this process's; the
        ``Taken`` says how (nothing restored or skipped when it stood there).
        """
        async with self._lock:
            advanced = Taken(index=self.taken)
            if at is not None and at > self.taken:
                advanced = await self._advance(at, restore, lambda _n: None)
            with tempfile.TemporaryDirectory(prefix="clotho-atropos-ckpt-") as folder, _checkpoint_location(self.env, folder, step) as path:
                self.env.save_checkpoint(step)
                data = None
                if os.path.exists(path):
                    with open(path) as f:
                        data = json.load(f)
                return Checkpoint(cursor=self.taken, data=data), advanced

    def _load(self, checkpoint: Checkpoint) -> None:
        with tempfile.TemporaryDirectory(prefix="clotho-atropos-ckpt-") as folder, _checkpoint_location(self.env, folder, 0) as path:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                json.dump(checkpoint.contents(), f)
            self.env.load_checkpoint()
        self.taken = checkpoint.cursor
        self._recent.clear()


class _checkpoint_location:
    """Points Atropos's checkpoint paths (``<checkpoint_dir>/env_checkpoints/<wandb_prepend>/step-<n>.json``) at ``folder``."""

    def __init__(self, env: BaseEnv, folder: str, step: int) -> None:
        self.env, self.folder, self.step = env, folder, step

    def __enter__(self) -> str:
        env = self.env
        self.saved = (env.checkpoint_dir, env.wandb_prepend, env.curr_step)
        env.checkpoint_dir = self.folder
        env.wandb_prepend = env.wandb_prepend or "clotho"
        env.curr_step = self.step
        return os.path.join(self.folder, "env_checkpoints", env.wandb_prepend, f"step-{self.step}.json")

    def __exit__(self, *_exc: object) -> None:
        self.env.checkpoint_dir, self.env.wandb_prepend, self.env.curr_step = self.saved
