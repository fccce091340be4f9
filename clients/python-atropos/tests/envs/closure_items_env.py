"""Items that standard pickle refuses, as reasoning_gym's datasets are: each item carries its task's scorer, an object
holding a lambda made in ``__init__``. With ``--env.with_lock true`` an item also carries a lock, which nothing can
encode."""

import re
import threading
from typing import List, Tuple

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item


class OffsetTask:
    """Scores an answer by comparing it with ``a + b``; the comparison is a closure, so it pickles only by value."""

    def __init__(self, a: int, b: int) -> None:
        self.question = f"What is {a} + {b}?"
        self.check = lambda answer: answer == a + b


class ClosureItemsConfig(BaseEnvConfig):
    with_lock: bool = False


class ClosureItemsEnv(BaseEnv):
    name = "closure_items"
    env_config_cls = ClosureItemsConfig

    @classmethod
    def config_init(cls) -> Tuple[ClosureItemsConfig, List[APIServerConfig]]:
        config = ClosureItemsConfig(tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview", group_size=2, use_wandb=False)
        return config, [APIServerConfig(model_name="tiny", base_url="http://localhost:9001/v1", api_key="x")]

    async def setup(self):
        self.iter = 0

    async def get_next_item(self) -> Item:
        self.iter += 1
        task = OffsetTask(self.iter, 40)
        return (task.question, task, threading.Lock()) if self.config.with_lock else (task.question, task)

    async def collect_trajectories(self, item: Item):
        question, task = item[0], item[1]
        a, b = (int(n) for n in re.findall(r"\d+", question))
        tokens = self.tokenizer.encode(question)
        scores = [1.0 if task.check(answer) else -1.0 for answer in (a + b, a + b + 1)]
        return ScoredDataGroup(tokens=[tokens, tokens], masks=[tokens, tokens], scores=scores), []

    async def evaluate(self, *args, **kwargs):
        return None
