"""An environment that declines groups, as Atropos's environments do: `None`, or a group of equal scores."""

from typing import List, Tuple

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item


def declines(n: int) -> bool:
    return n % 2 == 1


class DecliningEnv(BaseEnv):
    name = "declining"

    @classmethod
    def config_init(cls) -> Tuple[BaseEnvConfig, List[APIServerConfig]]:
        config = BaseEnvConfig(tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview", group_size=2, use_wandb=False)
        return config, [APIServerConfig(model_name="tiny", base_url="http://localhost:9001/v1", api_key="x")]

    async def setup(self):
        self.iter = 0
        self.eval_metrics = []

    async def get_next_item(self) -> Item:
        self.iter += 1
        return {"n": self.iter}

    async def collect_trajectories(self, item: Item):
        if declines(item["n"]):
            # Declined, and the item put back for later (Atropos's backlog).
            return None, [item]
        tokens = self.tokenizer.encode("two equal scores")
        group = ScoredDataGroup(tokens=[tokens, tokens], masks=[tokens, tokens], scores=[0.5, 0.5])
        return group, []

    async def evaluate(self, *args, **kwargs):
        # The share of the first items it would decline, reported the way Atropos's environments report it.
        declined = sum(1 for n in range(1, 5) if declines(n)) / 4
        self.eval_metrics.append(("eval/declined_share", declined))
