"""``--weight-sync vllm-lora``: the trainer trains LoRA adapters (PEFT) on every linear layer, and vLLM loads each
version of the adapter at runtime under one name, the model name environments request (``--lora-name``).

vLLM must be started with ``--enable-lora --max-lora-rank <at least --lora-rank>`` and the environment variable
``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``, without which it has no ``/v1/load_lora_adapter``. Each version is loaded
with ``load_inplace: true``, which replaces the adapter's weights under the same name: the name is never missing
from ``/v1/models``, so no request is refused during a swap, and a request already running goes on with the new
adapter (its tokens keep the logprobs vLLM sampled them with, which the loss's importance ratio accounts for). A vLLM
without in-place loading (it answers 400 "already been loaded") gets an unload and a load instead.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Optional

import torch

from .config import TrainerConfig
from .model_io import load_model
from .vllm_http import Retry, VllmHttpError, VllmServer

log = logging.getLogger("clotho_client.training")


def lora_target_modules(model: torch.nn.Module) -> list[str]:
    """The names of every linear layer but the output head, as PEFT and vLLM match them (``q_proj``, ``down_proj``, …)."""
    head = model.get_output_embeddings()
    names = {name.rsplit(".", 1)[-1] for name, module in model.named_modules() if isinstance(module, torch.nn.Linear) and module is not head}
    return sorted(names)


def load_policy(config: TrainerConfig, checkpoint: Optional[Path], *, dtype: torch.dtype, device: torch.device) -> torch.nn.Module:
    """The model the trainer trains: the full model (``--model``, or a checkpoint's), or with ``--weight-sync vllm-lora``
    ``--model`` frozen under LoRA adapters, new or a checkpoint's (a checkpoint then holds the adapter only)."""
    if config.weight_sync != "vllm-lora":
        return load_model(str(checkpoint) if checkpoint else config.model, dtype=dtype, device=device)
    from peft import LoraConfig, PeftModel, get_peft_model

    base = load_model(config.model, dtype=dtype, device=device)
    if checkpoint is not None:
        return PeftModel.from_pretrained(base, str(checkpoint), is_trainable=True)
    # No dropout: the trainer's logprobs must be the engine's for the same weights.
    lora = LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha, target_modules=lora_target_modules(base), lora_dropout=0.0, bias="none")
    return get_peft_model(base, lora)


_RUNTIME_LORA_HINT = (
    "vLLM has the runtime LoRA endpoints only when started with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True in its environment "
    "(and --enable-lora --max-lora-rank at least --lora-rank)"
)


class VllmLoraSync:
    """Saves the adapter to ``<save_path>/lora/step-<n>`` and has vLLM load it as ``--lora-name``."""

    def __init__(self, config: TrainerConfig, *, retry: Retry = Retry()) -> None:
        self.name = config.lora_name
        self.folder = Path(config.save_path).resolve() / "lora"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.server = VllmServer(config.inference_url or "", retry=retry, hint_404=_RUNTIME_LORA_HINT)

    def serve_starting_weights(self, model: torch.nn.Module, version: int) -> None:
        """Loads the adapter the trainer starts from (new adapters change nothing: PEFT starts their B at zero), so the
        name environments request exists before the first step."""
        self.sync(model, version)

    def sync(self, model: torch.nn.Module, version: int) -> None:
        if not hasattr(model, "peft_config"):
            raise TypeError("--weight-sync vllm-lora syncs LoRA adapters: the model must come from lora.load_policy")
        path = self.folder / f"step-{version}"
        if self._served_path() == str(path):
            return
        if not (path / "adapter_config.json").is_file():
            tmp = path.with_name(f".{path.name}.tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            model.save_pretrained(str(tmp))
            shutil.rmtree(path, ignore_errors=True)
            os.replace(tmp, path)
        self._load(path)
        # The previous version stays: vLLM may read an adapter's files again when it evicts and reloads it.
        for old in self.folder.glob("step-*"):
            if int(old.name.split("-")[1]) < version - 1:
                shutil.rmtree(old, ignore_errors=True)

    def _served_path(self) -> Optional[str]:
        root = self.server.served_roots().get(self.name)
        return None if root is None else str(root)

    def _load(self, path: Path) -> None:
        body = {"lora_name": self.name, "lora_path": str(path)}
        try:
            self.server.request("POST", "/v1/load_lora_adapter", json={**body, "load_inplace": True})
        except VllmHttpError as error:
            if error.status != 400 or "already" not in error.body:
                raise
            log.info("this vLLM does not load adapters in place; unloading %s and loading it again", self.name)
            self.server.request("POST", "/v1/unload_lora_adapter", json={"lora_name": self.name})
            self.server.request("POST", "/v1/load_lora_adapter", json=body)
        log.info("vLLM serves adapter %s from %s", self.name, path)
