"""An environment that scores in a process pool forked from its own process, as math_server_zero.py verifies answers
in a `ProcessPoolExecutor` (with the fork start method, Linux's default before Python 3.14)."""

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import List, Tuple

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item


class ForkedPoolConfig(BaseEnvConfig):
    pool_workers: int = 2


def score(answer: int, expected: int) -> float:
    """Runs in a pool process: module-level, so the pool pickles it by reference."""
    return 1.0 if answer == expected else -1.0


class ForkedPoolEnv(BaseEnv):
    name = "forked_pool"
    env_config_cls = ForkedPoolConfig

    @classmethod
    def config_init(cls) -> Tuple[ForkedPoolConfig, List[APIServerConfig]]:
        config = ForkedPoolConfig(tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview", group_size=2, use_wandb=False)
        return config, [APIServerConfig(model_name="tiny", base_url="http://localhost:9001/v1", api_key="x")]

    async def setup(self):
        self.pool = ProcessPoolExecutor(max_workers=self.config.pool_workers, mp_context=multiprocessing.get_context("fork"))
        self.iter = 0

    async def get_next_item(self) -> Item:
        self.iter += 1
        return {"a": self.iter, "b": 40}

    async def collect_trajectories(self, item: Item):
        expected = item["a"] + item["b"]
        loop = asyncio.get_running_loop()
        answers = [expected, expected + 1]
        scores = await asyncio.gather(*(loop.run_in_executor(self.pool, score, answer, expected) for answer in answers))
        tokens = self.tokenizer.encode(f"What is {item['a']} + {item['b']}?")
        return ScoredDataGroup(tokens=[tokens, tokens], masks=[tokens, tokens], scores=list(scores)), []

    async def evaluate(self, *args, **kwargs):
        return None
