"""A multi-step environment: each rollout asks the model twice through Atropos's ManagedServer, which keeps the
two turns as one sequence of exact tokens, masks and logprobs (written for the tests in Atropos's style)."""

import random
from typing import List, Tuple

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item


class TwoStepArithmeticEnv(BaseEnv):
    name = "two_step"

    @classmethod
    def config_init(cls) -> Tuple[BaseEnvConfig, List[APIServerConfig]]:
        config = BaseEnvConfig(tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview", group_size=2, use_wandb=False, max_token_length=64)
        servers = [APIServerConfig(model_name="tiny", base_url="http://localhost:9001/v1", api_key="x", server_type="vllm")]
        return config, servers

    async def setup(self):
        self.rng = random.Random(1)
        self.iter = 0

    async def get_next_item(self) -> Item:
        self.iter += 1
        return {"a": self.rng.randint(0, 50), "b": self.rng.randint(0, 50), "c": self.rng.randint(0, 50)}

    async def rollout(self, item) -> Tuple[list, float, list]:
        messages = [{"role": "user", "content": f"What is {item['a']} + {item['b']}?"}]
        async with self.server.managed_server(tokenizer=self.tokenizer) as managed:
            first = await managed.chat_completion(messages=messages, n=1, max_tokens=self.config.max_token_length)
            messages += [
                {"role": "assistant", "content": first.choices[0].message.content},
                {"role": "user", "content": f"And {item['b']} + {item['c']}?"},
            ]
            second = await managed.chat_completion(messages=messages, n=1, max_tokens=self.config.max_token_length)
            messages.append({"role": "assistant", "content": second.choices[0].message.content})
            [node] = managed.get_state()["nodes"]
        score = 1.0 if f"{{{item['b'] + item['c']}}}" in second.choices[0].message.content else -1.0
        return node, score, messages

    async def collect_trajectories(self, item: Item):
        group = ScoredDataGroup(tokens=[], masks=[], scores=[], inference_logprobs=[], messages=[])
        for _ in range(self.config.group_size):
            node, score, messages = await self.rollout(item)
            group["tokens"].append(node.tokens)
            group["masks"].append(node.masked_tokens)
            group["inference_logprobs"].append(node.logprobs)
            group["scores"].append(score)
            group["messages"].append(messages)
        if len(set(group["scores"])) == 1:
            group["scores"][0] += 0.5  # keep the group (the fake model answers alike)
        return group, []

    async def evaluate(self, *args, **kwargs):
        # Rollouts of a few fixed items, each two turns through ManagedServer, as the training groups are made.
        rng = random.Random(2)
        items = [{k: rng.randint(0, 50) for k in "abc"} for _ in range(3)]
        rollouts = [await self.rollout(item) for item in items]
        scores = [score for _, score, _ in rollouts]
        tokens = [len(node.tokens) for node, _, _ in rollouts]
        await self.evaluate_log(
            metrics={"eval/mean_score": sum(scores) / len(scores), "eval/mean_tokens": sum(tokens) / len(tokens)},
            samples=[{"item": item, "messages": messages, "score": score} for item, (_, score, messages) in zip(items, rollouts)],
        )
