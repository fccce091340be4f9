"""An environment shaped as Atropos's gsm8k_server.py (for the tests; not Atropos's code): its groups hold tokens,
masks and scores but no messages, it prints a line for each item it scores, and every third item's answers all
score alike (Atropos's send filter drops such a group under serve, or with --env.ensure_scores_are_not_same)."""

from typing import List, Tuple

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item
from atroposlib.utils.tokenize_for_trainer import tokenize_for_trainer

SYSTEM = "Add the two numbers. End with \\boxed{the sum}."


class TokensOnlyEnv(BaseEnv):
    name = "tokens_only"

    @classmethod
    def config_init(cls) -> Tuple[BaseEnvConfig, List[APIServerConfig]]:
        config = BaseEnvConfig(tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview", group_size=2, use_wandb=False)
        return config, [APIServerConfig(model_name="tiny", base_url="http://localhost:9001/v1", api_key="x")]

    async def setup(self):
        self.iter = 0

    async def get_next_item(self) -> Item:
        self.iter += 1
        # Every third item has a sum the scripted model gets wrong in every answer: all scores equal.
        return (f"What is {self.iter} + {self.iter * 10}?", self.iter * 11 + (1000 if self.iter % 3 == 0 else 0))

    async def collect_trajectories(self, item: Item):
        question, answer = item
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        completions = await self.server.chat_completion(messages=messages, n=self.config.group_size, max_tokens=64)
        group = ScoredDataGroup(tokens=[], masks=[], scores=[])
        for choice in completions.choices:
            out = tokenize_for_trainer(self.tokenizer, messages + [{"role": "assistant", "content": choice.message.content}])
            group["tokens"].append(out["tokens"])
            group["masks"].append(out["masks"])
            group["scores"].append(1.0 if f"\\boxed{{{answer}}}" in choice.message.content else -1.0)
        print(f"{question} {group['scores'].count(1.0)} of {len(group['scores'])} right")
        return group, []

    async def evaluate(self, *args, **kwargs):
        pass
