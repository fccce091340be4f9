"""The trainer's settings and its command line (flag names follow Atropos's ``example_trainer/cli.py`` where it has them)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import Optional, Sequence

WEIGHT_SYNC_MODES = ("none", "clotho", "vllm-restart", "vllm-lora", "vllm-update")


@dataclass(frozen=True)
class TrainerConfig:
    save_path: str
    model: str = ""
    atropos_url: str = "http://localhost:8000"
    source: str = "http"
    lr: float = 1e-5
    lr_schedule: str = "constant"
    warmup_steps: int = 0
    training_steps: int = 10
    batch_size: int = 2
    gradient_accumulation_steps: int = 32
    seq_len: int = 2048
    clip_eps: float = 0.2
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    device: str = "auto"
    dtype: str = "float32"
    seed: int = 0
    checkpoint_interval: int = 1
    keep_checkpoints: int = 2
    lease_seconds: float = 600.0
    weight_sync: str = "none"
    inference_url: Optional[str] = None
    gguf_template: Optional[str] = None
    vllm_restart_command: Optional[str] = None
    vllm_start_timeout: float = 900.0
    lora_rank: int = 16
    lora_alpha: int = 32
    lora_name: str = "clotho-lora"
    allow_missing_logprobs: bool = False
    log_file: Optional[str] = None
    metrics_port: Optional[int] = None
    use_wandb: bool = False
    wandb_project: str = ""
    wandb_group: str = ""
    temporal_address: Optional[str] = None
    namespace: Optional[str] = None
    task_queue: str = "clotho-trainer"
    token: Optional[str] = None
    inference_token: Optional[str] = None

    @property
    def sequences_per_step(self) -> int:
        """What the trainer registers as its batch size: micro-batch × accumulation, as Atropos's trainer does."""
        return self.batch_size * self.gradient_accumulation_steps


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m clotho_client.training",
        description="GRPO on batches from `clotho api` (or Atropos's run-api), weights synced back to the inference engine.",
    )
    p.add_argument(
        "--model",
        "--model-name",
        dest="model",
        default="",
        help="Hugging Face folder or repo id, or a .gguf file (default with --weight-sync clotho: the GGUF the engine serves)",
    )
    p.add_argument("--save-path", required=True, help="folder of checkpoints, exported weights and the trainer's journal")
    p.add_argument("--atropos-url", default=TrainerConfig.atropos_url, help="the trajectory API")
    p.add_argument("--source", choices=("http", "temporal"), default="http", help="pull leased batches over HTTP, or run trainStep activities (clotho api --trainer temporal)")
    p.add_argument("--lr", type=_positive_float, default=TrainerConfig.lr)
    p.add_argument("--lr-schedule", choices=("constant", "linear", "cosine"), default="constant", help="after warm-up")
    p.add_argument("--warmup-steps", type=_non_negative_int, default=0)
    p.add_argument("--training-steps", type=_positive_int, default=TrainerConfig.training_steps)
    p.add_argument("--batch-size", type=_positive_int, default=TrainerConfig.batch_size, help="sequences per micro-batch")
    p.add_argument("--gradient-accumulation-steps", type=_positive_int, default=TrainerConfig.gradient_accumulation_steps)
    p.add_argument("--seq-len", type=_positive_int, default=TrainerConfig.seq_len, help="registered as max_token_len")
    p.add_argument("--clip-eps", type=_positive_float, default=TrainerConfig.clip_eps)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--max-grad-norm", type=_positive_float, default=TrainerConfig.max_grad_norm)
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N, or auto (cuda when available)")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-interval", type=_positive_int, default=1, help="steps between checkpoints; batches are acked only once checkpointed")
    p.add_argument("--keep-checkpoints", type=_positive_int, default=2)
    p.add_argument("--lease-seconds", type=_positive_float, default=TrainerConfig.lease_seconds, help="lease of each batch, renewed every third of it until the batch is acked at a checkpoint: longer than a restart")
    p.add_argument("--weight-sync", choices=WEIGHT_SYNC_MODES, default="none", help="how the engine gets the new weights")
    p.add_argument("--inference-url", help="the engine's base URL (clotho inference or vLLM), for --weight-sync")
    p.add_argument("--gguf-template", help="GGUF whose layout the clotho weight sync writes into (default: --model when it is a .gguf)")
    p.add_argument("--vllm-restart-command", help="--weight-sync vllm-restart: command that starts vLLM; {model} is replaced by the checkpoint folder")
    p.add_argument("--vllm-start-timeout", type=_positive_float, default=TrainerConfig.vllm_start_timeout, help="--weight-sync vllm-restart: seconds vLLM may take to answer GET /health with 200")
    p.add_argument("--lora-rank", type=_positive_int, default=TrainerConfig.lora_rank, help="--weight-sync vllm-lora: rank of the adapters trained on every linear layer")
    p.add_argument("--lora-alpha", type=_positive_int, default=TrainerConfig.lora_alpha)
    p.add_argument("--lora-name", default=TrainerConfig.lora_name, help="--weight-sync vllm-lora: the adapter's name in vLLM, the model name environments request")
    p.add_argument("--allow-missing-logprobs", action="store_true", help="train groups without inference_logprobs on-policy (ratio 1)")
    p.add_argument("--log-file", help="JSON line of metrics per step (default <save-path>/metrics.jsonl)")
    p.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port")
    p.add_argument("--use-wandb", action="store_true")
    p.add_argument("--wandb-project", default="")
    p.add_argument("--wandb-group", default="")
    p.add_argument("--temporal-address", help="--source temporal: host:port (default from Temporal's environment config)")
    p.add_argument("--namespace")
    p.add_argument("--task-queue", default=TrainerConfig.task_queue)
    p.add_argument("--token", help="bearer token of the API (default $CLOTHO_API_TOKEN)")
    p.add_argument("--inference-token", help="--weight-sync clotho: bearer token of clotho inference (default $CLOTHO_INFERENCE_TOKEN)")
    return p


def parse_config(argv: Optional[Sequence[str]] = None) -> TrainerConfig:
    p = parser()
    args = p.parse_args(argv)
    names = {f.name for f in fields(TrainerConfig)}
    config = TrainerConfig(**{k: v for k, v in vars(args).items() if k in names})
    if config.weight_sync != "none" and not config.inference_url:
        p.error(f"--weight-sync {config.weight_sync} needs --inference-url")
    if not config.model and config.weight_sync != "clotho":
        p.error("--model is required (only --weight-sync clotho can take it from the engine)")
    if config.weight_sync == "vllm-restart" and not config.vllm_restart_command:
        p.error("--weight-sync vllm-restart needs --vllm-restart-command")
    if config.weight_sync == "vllm-restart" and "{model}" not in (config.vllm_restart_command or ""):
        p.error("--vllm-restart-command must contain {model}, which the trainer replaces by the checkpoint folder")
    return config
