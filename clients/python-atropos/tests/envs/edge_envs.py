"""Environments at the edges of a run (issue 38), each a class to name (`edge_envs.py:SlowEnv`):

- ``SlowEnv``: ``collect_trajectories`` takes SLOW_ENV_SECONDS (default 30) at every second item, past a small
  worker_timeout, where Atropos drops the group as ``timeout``.
- ``StreamingEnv``: ``get_next_item`` has nothing (None) for its first STREAMING_ENV_EMPTY calls (default 3), as a queue
  fed by another process may, then an item at every call. Under ``serve`` Atropos asks again; the run must too.
- ``BigItemsEnv``: items of BIG_ITEMS_ENV_BYTES (default 250 KB; reasoning_gym's reach a megabyte), each odd one put
  back once (Atropos's backlog), and a checkpoint as large. None of it may travel in Temporal's history.
"""

import asyncio
import os
from typing import List, Tuple

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item


class EdgeEnv(BaseEnv):
    """Items ``{"n": 1}``, ``{"n": 2}``, …; each group two sequences scored 1 and 0, with no model."""

    name = "edge"

    @classmethod
    def config_init(cls) -> Tuple[BaseEnvConfig, List[APIServerConfig]]:
        config = BaseEnvConfig(tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview", group_size=2, use_wandb=False)
        return config, [APIServerConfig(model_name="tiny", base_url="http://localhost:9001/v1", api_key="x")]

    async def setup(self):
        self.iter = 0

    async def get_next_item(self) -> Item:
        self.iter += 1
        return {"n": self.iter}

    async def collect_trajectories(self, item: Item):
        tokens = self.tokenizer.encode(f"item {item['n']}")
        return ScoredDataGroup(tokens=[tokens, tokens], masks=[tokens, tokens], scores=[1.0, 0.0]), []

    async def evaluate(self, *args, **kwargs):
        pass


class SlowEnv(EdgeEnv):
    name = "slow"

    async def collect_trajectories(self, item: Item):
        if item["n"] % 2 == 0:
            await asyncio.sleep(float(os.environ.get("SLOW_ENV_SECONDS", "30")))
        return await super().collect_trajectories(item)


class StreamingEnv(EdgeEnv):
    name = "streaming"

    async def setup(self):
        self.calls = 0
        self.empty = int(os.environ.get("STREAMING_ENV_EMPTY", "3"))

    async def get_next_item(self) -> Item:
        self.calls += 1
        return None if self.calls <= self.empty else {"n": self.calls - self.empty}


def size() -> int:
    return int(os.environ.get("BIG_ITEMS_ENV_BYTES", "250000"))


class BigItemsEnv(EdgeEnv):
    name = "big_items"

    async def get_next_item(self) -> Item:
        self.iter += 1
        # Digits, so that no two items are alike.
        return {"n": self.iter, "text": (str(self.iter) * size())[: size()], "again": False}

    async def collect_trajectories(self, item: Item):
        assert len(item["text"]) == size(), "the item came back whole"
        if item["n"] % 2 == 1 and not item["again"]:
            return None, [{**item, "again": True}]
        return await super().collect_trajectories(item)

    def save_checkpoint(self, step, data=None):
        super().save_checkpoint(step, {"iter": self.iter, "padding": "0" * size()})
