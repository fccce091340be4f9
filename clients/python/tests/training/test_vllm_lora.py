"""--weight-sync vllm-lora against a scripted vLLM that checks each runtime-LoRA call as vLLM's OpenAIServingModels
does (vllm/entrypoints/serve/lora, vllm/entrypoints/openai/models/serving.py), and the trainer training adapters only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
import torch
from safetensors.torch import load_file

from clotho_client.training.config import TrainerConfig
from clotho_client.training.grpo_trainer import GrpoTrainer
from clotho_client.training.lora import VllmLoraSync, load_policy, lora_target_modules
from clotho_client.training.vllm_http import Retry, VllmHttpError
from scripted_vllm import Call, ScriptedServer, tiny_model_folder, tiny_qwen2

FAST = Retry(attempts=3, first_delay=0.01)
LINEAR = ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"]


class LoraVllm:
    """``vllm serve --enable-lora --max-lora-rank 16`` with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True (``runtime`` False: without
    it); ``inplace`` False is a vLLM from before ``load_inplace``, which ignores the field."""

    def __init__(self, *, runtime: bool = True, inplace: bool = True, max_rank: int = 16) -> None:
        self.inplace, self.max_rank = inplace, max_rank
        self.adapters: dict[str, str] = {}
        routes: dict[tuple[str, str], Any] = {("GET", "/v1/models"): self.models}
        if runtime:
            routes[("POST", "/v1/load_lora_adapter")] = self.load
            routes[("POST", "/v1/unload_lora_adapter")] = self.unload
        self.server = ScriptedServer(routes)

    def models(self, call: Call) -> tuple[int, Any]:
        cards = [{"id": "base", "object": "model", "root": "/models/base", "parent": None}]
        cards += [{"id": name, "object": "model", "root": path, "parent": "base"} for name, path in self.adapters.items()]
        return 200, {"object": "list", "data": cards}

    def load(self, call: Call) -> tuple[int, Any]:
        assert call.content_type.startswith("application/json"), call.content_type
        assert set(call.body) <= {"lora_name", "lora_path", "load_inplace"}, call.body
        name, path = call.body.get("lora_name"), call.body.get("lora_path")
        if not name or not path:
            return 400, {"error": {"message": "Both 'lora_name' and 'lora_path' must be provided.", "code": 400}}
        if name in self.adapters and not (self.inplace and call.body.get("load_inplace")):
            return 400, {"error": {"message": f"The lora adapter '{name}' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.", "code": 400}}
        config = json.loads((Path(path) / "adapter_config.json").read_text())
        assert config["r"] <= self.max_rank and sorted(config["target_modules"]) == LINEAR, config
        tensors = load_file(str(Path(path) / "adapter_model.safetensors"))
        assert all(".lora_A." in k or ".lora_B." in k for k in tensors), list(tensors)
        self.adapters[name] = path
        return 200, f"Success: LoRA adapter '{name}' added successfully."

    def unload(self, call: Call) -> tuple[int, Any]:
        name = call.body.get("lora_name")
        if name not in self.adapters:
            return 404, {"error": {"message": f"The lora adapter '{name}' cannot be found.", "code": 404}}
        del self.adapters[name]
        return 200, f"Success: LoRA adapter '{name}' removed successfully."


@pytest.fixture
def vllm() -> Iterator[LoraVllm]:
    server = LoraVllm()
    yield server
    server.server.close()


def config_for(tmp_path: Path, url: str, **extra: Any) -> TrainerConfig:
    folder = tmp_path / "base"
    if not folder.is_dir():
        tiny_model_folder(folder)
    fields = dict(model=str(folder), save_path=str(tmp_path / "run"), weight_sync="vllm-lora", inference_url=f"{url}/v1", lora_rank=4, lora_alpha=8)
    return TrainerConfig(**{**fields, **extra})


def lora_policy(config: TrainerConfig) -> torch.nn.Module:
    return load_policy(config, None, dtype=torch.float32, device=torch.device("cpu"))


def loads(server: LoraVllm) -> list[dict]:
    return [c.body for c in server.server.calls if c.path == "/v1/load_lora_adapter"]


def test_adapters_cover_every_linear_layer_and_only_they_train(tmp_path: Path, vllm: LoraVllm) -> None:
    assert lora_target_modules(tiny_qwen2()) == LINEAR  # lm_head is the output head, left out
    model = lora_policy(config_for(tmp_path, vllm.server.url))
    trained = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trained and all(".lora_A." in n or ".lora_B." in n for n in trained)
    assert len(trained) == 2 * 7 * 2  # A and B, 7 layers, 2 blocks


def test_each_version_is_saved_then_loaded_in_place_under_one_name_once(tmp_path: Path, vllm: LoraVllm) -> None:
    config = config_for(tmp_path, vllm.server.url)
    model = lora_policy(config)
    sync = VllmLoraSync(config, retry=FAST)
    sync.serve_starting_weights(model, 0)
    lora = tmp_path / "run" / "lora"
    assert loads(vllm) == [{"lora_name": "clotho-lora", "lora_path": str(lora / "step-0"), "load_inplace": True}]
    assert vllm.adapters == {"clotho-lora": str(lora / "step-0")}

    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.requires_grad:
                p.add_(0.5)
    sync.sync(model, 1)
    assert loads(vllm)[-1] == {"lora_name": "clotho-lora", "lora_path": str(lora / "step-1"), "load_inplace": True}
    saved = load_file(str(lora / "step-1" / "adapter_model.safetensors"))
    q_b = next(p for n, p in model.named_parameters() if n.endswith("layers.0.self_attn.q_proj.lora_B.default.weight"))
    assert torch.equal(saved["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"], q_b.detach())
    adapter = json.loads((lora / "step-1" / "adapter_config.json").read_text())
    assert (adapter["r"], adapter["lora_alpha"], adapter["lora_dropout"]) == (4, 8, 0.0)

    before = len(vllm.server.calls)
    sync.sync(model, 1)  # a trainer repeating its last sync after a restart
    assert vllm.server.paths()[before:] == ["GET /v1/models"]
    assert len(loads(vllm)) == 2

    sync.sync(model, 2)
    sync.sync(model, 3)
    assert sorted(p.name for p in lora.iterdir()) == ["step-2", "step-3"]  # the served one and the one before


def test_a_vllm_without_in_place_loading_gets_an_unload_and_a_load(tmp_path: Path) -> None:
    old = LoraVllm(inplace=False)
    try:
        config = config_for(tmp_path, old.server.url)
        model = lora_policy(config)
        sync = VllmLoraSync(config, retry=FAST)
        sync.sync(model, 0)
        sync.sync(model, 1)
        assert old.server.paths(method="POST") == [
            "POST /v1/load_lora_adapter", "POST /v1/load_lora_adapter", "POST /v1/unload_lora_adapter", "POST /v1/load_lora_adapter",
        ]
        assert old.server.calls[-1].body == {"lora_name": "clotho-lora", "lora_path": str(tmp_path / "run" / "lora" / "step-1")}
        assert old.adapters == {"clotho-lora": str(tmp_path / "run" / "lora" / "step-1")}
    finally:
        old.server.close()


def test_server_errors_are_retried_and_refusals_say_what_to_change(tmp_path: Path, vllm: LoraVllm) -> None:
    config = config_for(tmp_path, vllm.server.url)
    model = lora_policy(config)
    vllm.server.fail["/v1/load_lora_adapter"] = [500, 503]
    VllmLoraSync(config, retry=FAST).sync(model, 0)
    assert len(loads(vllm)) == 3 and "clotho-lora" in vllm.adapters

    off = LoraVllm(runtime=False)
    try:
        with pytest.raises(VllmHttpError, match="VLLM_ALLOW_RUNTIME_LORA_UPDATING=True") as refused:
            VllmLoraSync(config_for(tmp_path, off.server.url), retry=FAST).sync(model, 1)
        assert refused.value.status == 404
    finally:
        off.server.close()

    vllm.server.fail["/v1/load_lora_adapter"] = [500, 500, 500]
    with pytest.raises(VllmHttpError, match="answered 500"):
        VllmLoraSync(config, retry=FAST).sync(model, 2)

    vllm.server.close()
    with pytest.raises(VllmHttpError, match="could not be reached"):
        VllmLoraSync(config, retry=FAST).sync(model, 2)


def group() -> dict[str, Any]:
    return {
        "tokens": [[1, 5, 9, 4], [1, 5, 7, 6, 3]],
        "masks": [[-100, -100, 9, 4], [-100, -100, 7, 6, 3]],
        "scores": [1.0, -1.0],
        "inference_logprobs": [[1.0, 1.0, -4.1, -4.2], [1.0, 1.0, -4.0, -4.3, -4.1]],
    }


def test_the_trainer_trains_checkpoints_and_resumes_the_adapter_and_vllm_follows(tmp_path: Path, vllm: LoraVllm) -> None:
    config = config_for(tmp_path, vllm.server.url, lr=0.05, training_steps=4, gradient_accumulation_steps=1)
    base = {n: p.detach().clone() for n, p in tiny_qwen2().named_parameters()}
    trainer = GrpoTrainer(config)
    lora = tmp_path / "run" / "lora"
    assert vllm.adapters == {"clotho-lora": str(lora / "step-0")}  # served before the first step

    metrics = trainer.train_on([group()])
    assert trainer.commit([group()], {"lease": "lease-1"}, metrics)
    trainer.sync_weights(metrics)
    assert vllm.adapters == {"clotho-lora": str(lora / "step-1")}
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints" / "step-1" / "model").iterdir()) == ["README.md", "adapter_config.json", "adapter_model.safetensors"]
    trained = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    frozen = {n.removeprefix("base_model.model.").replace(".base_layer", ""): p for n, p in trained.items() if ".lora_" not in n}
    assert frozen.keys() == base.keys() and all(torch.equal(frozen[n], base[n]) for n in base)  # the base stays as it was
    assert any(float(p.abs().sum()) > 0 for n, p in trained.items() if ".lora_B." in n)

    loads_before = len(loads(vllm))
    resumed = GrpoTrainer(config)  # a restart: the adapter comes back from the checkpoint, vLLM already has it
    assert len(loads(vllm)) == loads_before
    assert resumed.state.step == 1
    for name, value in resumed.model.named_parameters():
        assert torch.equal(value.detach(), trained[name]), name
    assert {n for n, p in resumed.model.named_parameters() if p.requires_grad} == {n for n in trained if ".lora_" in n}
