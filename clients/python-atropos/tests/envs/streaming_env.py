"""A streaming environment: `get_next_item` has nothing (None) for its first STREAMING_ENV_EMPTY calls (default 3), as a
queue fed by another process may, then an item at every call. Under `serve` Atropos asks again; the run must too."""

import os
from typing import List, Tuple

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item


class StreamingEnv(BaseEnv):
    name = "streaming"

    @classmethod
    def config_init(cls) -> Tuple[BaseEnvConfig, List[APIServerConfig]]:
        config = BaseEnvConfig(tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview", group_size=2, use_wandb=False)
        return config, [APIServerConfig(model_name="tiny", base_url="http://localhost:9001/v1", api_key="x")]

    async def setup(self):
        self.calls = 0
        self.empty = int(os.environ.get("STREAMING_ENV_EMPTY", "3"))

    async def get_next_item(self) -> Item:
        self.calls += 1
        if self.calls <= self.empty:
            return None
        return {"n": self.calls - self.empty}

    async def collect_trajectories(self, item: Item):
        tokens = self.tokenizer.encode(f"item {item['n']}")
        return ScoredDataGroup(tokens=[tokens, tokens], masks=[tokens, tokens], scores=[1.0, 0.0]), []

    async def evaluate(self, *args, **kwargs):
        pass
