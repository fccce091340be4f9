"""A single-turn dataset environment written the way Atropos's own are (for the tests; not Atropos's code).

`python arithmetic_env.py process --env.tokenizer_name <dir> --openai.base_url http://host/v1` runs it under
Atropos; the tests run it under Clotho's worker with the same flags.
"""

import random
import time
from typing import Dict, List, Optional, Tuple

from pydantic import Field

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataGroup
from atroposlib.type_definitions import Item
from atroposlib.utils.tokenize_for_trainer import tokenize_for_trainer

SYSTEM = "Add the two numbers. End with \\boxed{the sum}."


class ArithmeticConfig(BaseEnvConfig):
    dataset_size: int = Field(default=100, description="How many problems the generated data set holds")
    seed: int = Field(default=0, description="Seed of the generated data set")
    hf_dataset: bool = Field(default=False, description="Keep the data set as a datasets.Dataset, as Hub-backed environments do")


def boxed(text: str) -> Optional[str]:
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    end = text.find("}", start)
    return text[start + len("\\boxed{") : end] if end > 0 else None


class ArithmeticEnv(BaseEnv):
    name = "arithmetic"
    env_config_cls = ArithmeticConfig

    def __init__(self, config: ArithmeticConfig, server_configs: List[APIServerConfig], slurm=False, testing=False):
        super().__init__(config, server_configs, slurm, testing)
        self.percent_correct_buffer = []
        self.eval_metrics = []

    @classmethod
    def config_init(cls) -> Tuple[ArithmeticConfig, List[APIServerConfig]]:
        env_config = ArithmeticConfig(
            tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview",
            group_size=4,
            use_wandb=False,
            total_steps=10,
            batch_size=16,
            steps_per_eval=5,
            max_token_length=256,
            wandb_name="arithmetic",
        )
        server_configs = [
            APIServerConfig(model_name="tiny", base_url="http://localhost:9001/v1", api_key="x", num_requests_for_eval=4)
        ]
        return env_config, server_configs

    async def setup(self):
        rng = random.Random(self.config.seed)
        rows = [
            {"question": f"What is {a} + {b}?", "answer": a + b}
            for a, b in ((rng.randint(0, 99), rng.randint(0, 99)) for _ in range(self.config.dataset_size))
        ]
        if self.config.hf_dataset:
            from datasets import Dataset

            # Shuffled, as gsm8k_server.py shuffles its split: row access then goes through an index mapping.
            self.train = Dataset.from_list(rows).shuffle(seed=self.config.seed)
        else:
            self.train = rows
        self.test = rows[:4]
        self.iter = 0

    async def get_next_item(self) -> Item:
        row = self.train[self.iter % len(self.train)]
        self.iter += 1
        # Items as many of Atropos's environments make them: a tuple (prompt, answer).
        return (row["question"], row["answer"])

    async def collect_trajectories(self, item: Item) -> Tuple[ScoredDataGroup, List[Item]]:
        question, answer = item
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
        completions = await self.server.chat_completion(
            messages=messages, n=self.config.group_size, max_tokens=self.config.max_token_length, temperature=1.0
        )
        group = ScoredDataGroup(tokens=[], masks=[], scores=[], messages=[])
        for choice in completions.choices:
            rollout = messages + [{"role": "assistant", "content": choice.message.content}]
            out = tokenize_for_trainer(self.tokenizer, rollout)
            correct = boxed(choice.message.content) == str(answer)
            self.percent_correct_buffer.append(1.0 if correct else 0.0)
            group["tokens"].append(out["tokens"])
            group["masks"].append(out["masks"])
            group["scores"].append(1.0 if correct else -1.0)
            group["messages"].append(rollout)
        return group, []

    async def evaluate(self, *args, **kwargs):
        start = time.time()
        samples = []
        for question, answer in ((row["question"], row["answer"]) for row in self.test):
            completion = await self.server.chat_completion(
                messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
                n=1,
                max_tokens=self.config.max_token_length,
                temperature=0.0,
                split="eval",
            )
            response = completion.choices[0].message.content
            samples.append({"question": question, "answer": answer, "response": response, "correct": boxed(response) == str(answer)})
        percent_correct = sum(s["correct"] for s in samples) / len(samples)
        self.eval_metrics.append(("eval/percent_correct", percent_correct))
        # As Atropos's environments report an evaluation: metrics.json and samples.jsonl in data_dir_to_save_evals.
        await self.evaluate_log(
            metrics={"eval/percent_correct": percent_correct, "eval/items": len(samples)},
            samples=samples,
            start_time=start,
            end_time=time.time(),
            generation_parameters={"temperature": 0.0},
        )

    async def wandb_log(self, wandb_metrics: Optional[Dict] = None):
        wandb_metrics = wandb_metrics or {}
        if self.percent_correct_buffer:
            wandb_metrics["train/percent_correct"] = sum(self.percent_correct_buffer) / len(self.percent_correct_buffer)
        self.percent_correct_buffer = []
        for key, value in self.eval_metrics:
            wandb_metrics[key] = value
        self.eval_metrics = []
        await super().wandb_log(wandb_metrics)


class CheckpointedArithmeticEnv(ArithmeticEnv):
    """The same, keeping its position with Atropos's checkpoint methods (as gsm8k_server does)."""

    name = "arithmetic_ckpt"

    def save_checkpoint(self, step, data=None):
        if data is None:
            data = {}
        data["iter"] = self.iter
        super().save_checkpoint(step, data)


if __name__ == "__main__":
    ArithmeticEnv.cli()
