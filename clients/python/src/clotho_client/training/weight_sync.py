"""Getting the trained weights to the inference engine, so the next rollouts come from the new policy.

A sync must be idempotent: after a crash the trainer repeats the last one (same version) before it trains on.
The vLLM modes live beside this module (``vllm_restart``, ``lora``, ``vllm_update``); each also makes the engine serve
the weights the trainer starts from as it is built, since the trainer syncs only after a checkpoint.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any, Protocol

import httpx
import torch

from ..wire import auth_headers
from .checkpoint import Checkpoints
from .config import TrainerConfig
from .model_io import GgufExporter, gguf_source

log = logging.getLogger("clotho_client.training")


class WeightSync(Protocol):
    def sync(self, model: torch.nn.Module, version: int) -> None:
        """Makes the engine serve ``model``'s weights as ``version`` (the trainer's step)."""


class NoSync:
    """``--weight-sync none``: the engine keeps its weights (offline training, or a sync done elsewhere)."""

    def sync(self, model: torch.nn.Module, version: int) -> None:
        return None


class ClothoSync:
    """``--weight-sync clotho``: the weights as GGUF into ``<save_path>/weights``, swapped in by ``POST /v1/weights``."""

    def __init__(self, config: TrainerConfig, model: torch.nn.Module) -> None:
        template = gguf_source(config.model, config.gguf_template)
        if template is None:
            raise ValueError("--weight-sync clotho needs a GGUF to write into: --model file.gguf or --gguf-template")
        self.folder = Path(config.save_path) / "weights"
        self.folder.mkdir(parents=True, exist_ok=True)
        # The run's own copy of the layout: the template may be a file this sync later deletes (the engine's
        # served step-N.gguf when --model was taken from the engine).
        layout = self.folder / "layout.gguf"
        if not layout.exists():
            tmp = self.folder / ".layout.gguf.tmp"
            shutil.copyfile(template, tmp)
            os.replace(tmp, layout)
        self.exporter = GgufExporter(str(layout), model)
        self.url = f"{config.inference_url.rstrip('/').removesuffix('/v1')}/v1/weights"  # type: ignore[union-attr]
        self.headers = auth_headers(config.inference_token, "CLOTHO_INFERENCE_TOKEN")

    def sync(self, model: torch.nn.Module, version: int) -> None:
        path = (self.folder / f"step-{version}.gguf").resolve()
        if not path.exists():
            self.exporter.write(model, str(path))
        _post_with_retries(self.url, {"path": str(path), "version": version}, self.headers)
        # The engine holds the file it serves open; older ones are no longer needed.
        for old in self.folder.glob("step-*.gguf"):
            if int(old.stem.split("-")[1]) < version - 1:
                old.unlink(missing_ok=True)


def _post_with_retries(url: str, body: dict[str, object], headers: dict[str, str], attempts: int = 8) -> dict[str, object]:
    for attempt in range(1, attempts + 1):
        try:
            response = httpx.post(url, json=body, headers=headers, timeout=300.0)
        except httpx.TransportError as error:
            if attempt == attempts:
                raise
            log.warning("POST %s failed (%s); retrying", url, error)
        else:
            if response.status_code < 500:
                if response.is_error:
                    raise RuntimeError(f"POST {url} answered {response.status_code}: {response.text[:500]}")
                return response.json()
            if attempt == attempts:
                response.raise_for_status()
            log.warning("POST %s answered %s; retrying", url, response.status_code)
        time.sleep(min(0.5 * 2**attempt, 10.0))
    raise AssertionError("unreachable")


def starting_version(config: TrainerConfig) -> int:
    """The version of the weights the trainer starts from: its latest checkpoint's step, else 0."""
    checkpoints = Checkpoints(config.save_path, config.keep_checkpoints)
    latest = checkpoints.latest()
    return checkpoints.load_state(latest).step if latest else 0


def weight_sync_for(config: TrainerConfig, model: torch.nn.Module) -> WeightSync:
    if config.weight_sync == "none":
        return NoSync()
    if config.weight_sync == "clotho":
        return ClothoSync(config, model)
    sync: Any
    if config.weight_sync == "vllm-restart":
        from .vllm_restart import VllmRestartSync

        sync = VllmRestartSync(config)
    elif config.weight_sync == "vllm-lora":
        from .lora import VllmLoraSync

        sync = VllmLoraSync(config)
    elif config.weight_sync == "vllm-update":
        from .vllm_update import VllmUpdateSync

        sync = VllmUpdateSync(config, model)
    else:
        raise ValueError(f"--weight-sync {config.weight_sync} is not available in this version")
    sync.serve_starting_weights(model, starting_version(config))
    return sync
