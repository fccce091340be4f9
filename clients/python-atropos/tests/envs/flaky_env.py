"""An environment whose `collect_trajectories` raises on its first attempt at each item, and `evaluate` on its first
attempt (transient failures); with FLAKY_ENV_ALWAYS_FAIL set, on every attempt. With FLAKY_ENV_SETUP_FAILS set, its
`setup` raises (a data set that will not load)."""

import os
from typing import List, Tuple

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item


class FlakyEnv(BaseEnv):
    name = "flaky"

    @classmethod
    def config_init(cls) -> Tuple[BaseEnvConfig, List[APIServerConfig]]:
        config = BaseEnvConfig(tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview", group_size=2, use_wandb=False)
        return config, [APIServerConfig(model_name="tiny", base_url="http://localhost:9001/v1", api_key="x")]

    async def setup(self):
        if os.environ.get("FLAKY_ENV_SETUP_FAILS"):
            raise FileNotFoundError("the data set is not there")
        self.iter = 0
        self.attempts = {}
        self.eval_attempts = 0
        self.eval_metrics = []

    async def get_next_item(self) -> Item:
        self.iter += 1
        return {"n": self.iter}

    async def collect_trajectories(self, item: Item):
        n = item["n"]
        self.attempts[n] = self.attempts.get(n, 0) + 1
        if self.attempts[n] == 1 or os.environ.get("FLAKY_ENV_ALWAYS_FAIL"):
            raise ConnectionError(f"inference server hiccup on item {n}")
        tokens = self.tokenizer.encode(f"item {n}")
        return ScoredDataGroup(tokens=[tokens, tokens], masks=[tokens, tokens], scores=[1.0, 0.0]), []

    async def evaluate(self, *args, **kwargs):
        self.eval_attempts += 1
        if self.eval_attempts == 1 or os.environ.get("FLAKY_ENV_ALWAYS_FAIL"):
            raise ConnectionError(f"inference server hiccup on evaluation attempt {self.eval_attempts}")
        self.eval_metrics.append(("eval/attempts", self.eval_attempts))
