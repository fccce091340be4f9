"""An environment that needs a Python module the worker's Python lacks (as instruction_following needs langdetect):
imported with the file, or, with MISSING_MODULE_ENV_LAZY set, when the first group is collected."""

import os
from typing import List, Tuple

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item

if not os.environ.get("MISSING_MODULE_ENV_LAZY"):
    import clotho_test_missing_module  # noqa: F401


class MissingModuleEnv(BaseEnv):
    name = "missing_module"

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
        from clotho_test_missing_module import detect  # noqa: F401

        tokens = self.tokenizer.encode(f"item {item['n']}")
        return ScoredDataGroup(tokens=[tokens, tokens], masks=[tokens, tokens], scores=[1.0, 0.0]), []

    async def evaluate(self, *args, **kwargs):
        return None
