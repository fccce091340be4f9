"""Where a step's metrics go: a JSON line per step always, Prometheus and W&B when asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from .config import TrainerConfig


class MetricsSink:
    def __init__(self, config: TrainerConfig) -> None:
        self.path = Path(config.log_file or Path(config.save_path) / "metrics.jsonl")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._gauges: Optional[dict[str, Any]] = None
        self._wandb: Any = None
        if config.metrics_port is not None:
            from prometheus_client import Gauge, start_http_server

            start_http_server(config.metrics_port)
            self._gauge_type = Gauge
            self._gauges = {}
        if config.use_wandb:
            try:
                import wandb
            except ImportError as error:
                raise SystemExit("--use-wandb needs the wandb package: pip install wandb") from error
            self._wandb = wandb.init(project=config.wandb_project or None, group=config.wandb_group or None, config=vars(config), resume="allow")

    def log(self, step: int, values: dict[str, float]) -> None:
        with open(self.path, "a") as out:
            out.write(json.dumps({"step": step, **values}) + "\n")
        if self._gauges is not None:
            for name, value in {"step": float(step), **values}.items():
                gauge = self._gauges.get(name)
                if gauge is None:
                    gauge = self._gauges[name] = self._gauge_type(f"clotho_trainer_{name}", f"trainer {name}, latest step")
                gauge.set(value)
        if self._wandb is not None:
            self._wandb.log({f"train/{k}": v for k, v in values.items()}, step=step)

    def close(self) -> None:
        if self._wandb is not None:
            self._wandb.finish()
