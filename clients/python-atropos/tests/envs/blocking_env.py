"""An environment whose scoring is CPU work that blocks the event loop, as a verifier run inline does (math_verify,
code tests run in-process). `--env.scoring_seconds` of pure-Python work per group, or until the file
`--env.release_file` exists; `--env.item_seconds` awaited per item, as a streamed data set's reads are."""

import asyncio
import os
import time
from typing import List, Tuple

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item


class BlockingConfig(BaseEnvConfig):
    scoring_seconds: float = 0.0
    release_file: str = ""
    item_seconds: float = 0.0


def score_slowly(seconds: float, release_file: str) -> float:
    """Busy CPU work that never yields to the event loop."""
    deadline = time.monotonic() + seconds
    total = 0
    while time.monotonic() < deadline or (release_file and not os.path.exists(release_file)):
        total += sum(i * i for i in range(1000))
    return 1.0 if total >= 0 else 0.0


class BlockingEnv(BaseEnv):
    name = "blocking"
    env_config_cls = BlockingConfig

    @classmethod
    def config_init(cls) -> Tuple[BlockingConfig, List[APIServerConfig]]:
        config = BlockingConfig(tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview", group_size=2, use_wandb=False)
        return config, [APIServerConfig(model_name="tiny", base_url="http://localhost:9001/v1", api_key="x")]

    async def setup(self):
        self.iter = 0

    async def get_next_item(self) -> Item:
        if self.config.item_seconds:
            await asyncio.sleep(self.config.item_seconds)
        self.iter += 1
        return {"n": self.iter}

    async def collect_trajectories(self, item: Item):
        print(f"scoring item {item['n']}", flush=True)
        score = score_slowly(self.config.scoring_seconds, self.config.release_file)
        tokens = self.tokenizer.encode(f"item {item['n']}")
        return ScoredDataGroup(tokens=[tokens, tokens], masks=[tokens, tokens], scores=[score, 0.0]), []

    async def evaluate(self, *args, **kwargs):
        return None
