"""An environment whose `collect_trajectories` takes SLOW_ENV_SECONDS (default 30) at every second item: past a small
worker_timeout, Atropos drops that group as `timeout`."""

import asyncio
import os
from typing import List, Tuple

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item


class SlowEnv(BaseEnv):
    name = "slow"

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
        if item["n"] % 2 == 0:
            await asyncio.sleep(float(os.environ.get("SLOW_ENV_SECONDS", "30")))
        tokens = self.tokenizer.encode(f"item {item['n']}")
        return ScoredDataGroup(tokens=[tokens, tokens], masks=[tokens, tokens], scores=[1.0, 0.0]), []

    async def evaluate(self, *args, **kwargs):
        pass
