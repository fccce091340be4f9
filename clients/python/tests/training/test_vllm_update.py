"""--weight-sync vllm-update's control plane against a scripted vLLM that answers its weight-transfer routes as
vllm/entrypoints/serve/dev/rlhf/api_router.py does. The NCCL data plane needs vLLM and GPUs: in its place a stand-in
makes the client calls vLLM's NCCL trainer engine makes (vllm/distributed/weight_transfer/nccl_engine.py)."""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any, Iterator

import pytest
import torch

from clotho_client.training.config import TrainerConfig
from clotho_client.training.vllm_http import Retry, VllmHttpError
from clotho_client.training.vllm_update import VllmUpdateSync, WeightSyncClient, rendezvous
from scripted_vllm import Call, ScriptedServer, tiny_qwen2

FAST = Retry(attempts=3, first_delay=0.01)


class UpdateVllm:
    """``VLLM_SERVER_DEV_MODE=1 vllm serve … --weight-transfer-config '{"backend": "nccl"}'`` with one worker."""

    def __init__(self) -> None:
        self.weight_version: Any = None
        ok = lambda message: (lambda call: (200, {"message": message}))  # noqa: E731
        self.server = ScriptedServer({
            ("GET", "/get_world_size"): lambda call: (200, {"world_size": 1}),
            ("GET", "/weight_info"): lambda call: (200, {"weight_version": self.weight_version}),
            ("POST", "/pause"): self.pause,
            ("POST", "/resume"): lambda call: (200, {"status": "resumed"}),
            ("POST", "/init_weight_transfer_engine"): self.needs("init_info", "Weight transfer initialized"),
            ("POST", "/start_weight_update"): ok("Weight update started"),
            ("POST", "/update_weights"): self.needs("update_info", "Weights updated"),
            ("POST", "/finish_weight_update"): self.finish,
        })

    def pause(self, call: Call) -> tuple[int, Any]:
        if call.query.get("mode", "abort") not in ("abort", "wait", "keep"):
            return 422, {"detail": "mode"}
        return 200, {"status": "paused"}

    @staticmethod
    def needs(key: str, message: str):
        def route(call: Call) -> tuple[int, Any]:
            if not isinstance(call.body, dict) or call.body.get(key) is None:
                return 400, {"detail": f"Missing '{key}' in request body"}
            return 200, {"message": message}

        return route

    def finish(self, call: Call) -> tuple[int, Any]:
        if call.body is not None:
            self.weight_version = call.body["weight_version"]
        return 200, {"message": "Weight update finished"}


class StandIn:
    """The client calls of vLLM's NCCLTrainerWeightTransferEngine: init (with the worker's init info) at trainer_init;
    start, update (the parameters' names, dtypes, shapes), finish at each send_weights."""

    built: list["StandIn"] = []

    def __init__(self, client: WeightSyncClient, model: torch.nn.Module, world_size: int) -> None:
        self.client, self.model, self.closed = client, model, False
        client.init_weight_transfer_engine({
            "master_address": "127.0.0.1", "master_port": 29555, "rank_offset": 1, "world_size": world_size,
            "packed": True, "packed_buffer_size_bytes": 1 << 30, "packed_num_buffers": 2,
        })
        StandIn.built.append(self)

    def send_weights(self) -> None:
        params = list(self.model.named_parameters())
        self.client.start_weight_update()
        self.client.update_weights({
            "names": [n for n, _ in params], "dtype_names": [str(p.dtype).split(".")[-1] for _, p in params], "shapes": [list(p.shape) for _, p in params],
        })
        self.client.finish_weight_update()

    def shutdown(self) -> None:
        self.closed = True


@pytest.fixture
def vllm() -> Iterator[UpdateVllm]:
    StandIn.built = []
    server = UpdateVllm()
    yield server
    server.server.close()


def config_for(url: str) -> TrainerConfig:
    return TrainerConfig(model="unused", save_path="unused", weight_sync="vllm-update", inference_url=f"{url}/v1")


def test_each_version_is_pushed_once_between_pause_and_resume_and_committed(vllm: UpdateVllm) -> None:
    model = tiny_qwen2()
    sync = VllmUpdateSync(config_for(vllm.server.url), model, transfer=StandIn, retry=FAST)
    sync.serve_starting_weights(model, 0)
    round_trip = ["POST /pause", "POST /start_weight_update", "POST /update_weights", "POST /finish_weight_update", "POST /resume"]
    assert vllm.server.paths() == ["GET /weight_info", "GET /get_world_size", "POST /init_weight_transfer_engine", *round_trip]
    calls = {c.path: c for c in vllm.server.calls}
    assert calls["/init_weight_transfer_engine"].body["init_info"]["world_size"] == 2  # one vLLM worker and the trainer
    assert calls["/pause"].query == {"mode": "keep"}  # vLLM's async-RL flow: requests freeze, then go on with the new weights
    assert calls["/start_weight_update"].body is None
    update = calls["/update_weights"].body["update_info"]
    assert update["names"] == [n for n, _ in model.named_parameters()] and update["dtype_names"][0] == "float32"
    assert calls["/finish_weight_update"].body == {"weight_version": "0"} and vllm.weight_version == "0"

    before = len(vllm.server.calls)
    sync.sync(model, 1)
    assert vllm.server.paths()[before:] == ["GET /weight_info", *round_trip]  # the NCCL group is set up once
    assert vllm.weight_version == "1"

    before = len(vllm.server.calls)
    sync.sync(model, 1)  # the trainer's repeat after a restart
    assert vllm.server.paths()[before:] == ["GET /weight_info"]


def test_a_failed_transfer_is_not_retried_resumes_generation_and_sets_up_again(vllm: UpdateVllm) -> None:
    model = tiny_qwen2()
    sync = VllmUpdateSync(config_for(vllm.server.url), model, transfer=StandIn, retry=FAST)
    vllm.server.fail["/pause"] = [503]  # safe to repeat: retried
    vllm.server.fail["/update_weights"] = [500]  # vLLM's workers would wait for a broadcast: not retried
    with pytest.raises(VllmHttpError, match="update_weights answered 500"):
        sync.sync(model, 1)
    assert vllm.server.paths().count("POST /update_weights") == 1 and vllm.server.paths()[-1] == "POST /resume"
    assert vllm.weight_version is None and StandIn.built[0].closed

    sync.sync(model, 1)
    assert len(StandIn.built) == 2 and vllm.weight_version == "1"
    assert vllm.server.paths().count("POST /init_weight_transfer_engine") == 2


def test_refusals_say_what_to_change(vllm: UpdateVllm) -> None:
    model = tiny_qwen2()
    off = ScriptedServer({})  # a vLLM without VLLM_SERVER_DEV_MODE=1: none of these routes
    try:
        with pytest.raises(VllmHttpError, match="VLLM_SERVER_DEV_MODE=1"):
            VllmUpdateSync(config_for(off.url), model, transfer=StandIn, retry=FAST).sync(model, 1)
        assert off.paths() == ["GET /weight_info", "GET /get_world_size"]
    finally:
        off.close()
    vllm.server.close()
    with pytest.raises(VllmHttpError, match="could not be reached"):
        VllmUpdateSync(config_for(vllm.server.url), model, transfer=StandIn, retry=FAST).sync(model, 1)


def test_the_nccl_data_plane_refuses_to_start_without_vllm_or_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    model = tiny_qwen2()
    config = config_for("http://127.0.0.1:9")
    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(RuntimeError, match=r"needs vLLM 0.26 or later installed beside the trainer \(pip install vllm\)"):
            VllmUpdateSync(config, model)
    names = {"vllm": [], "vllm.distributed": [], "vllm.distributed.weight_transfer": ["ModuleSource", "WeightTransferTrainerFactory"],
             "vllm.distributed.weight_transfer.nccl_engine": ["NCCLTrainerInitInfo"]}
    for module, attributes in names.items():
        fake = types.ModuleType(module)
        for attribute in attributes:
            setattr(fake, attribute, object())
        monkeypatch.setitem(sys.modules, module, fake)
    with pytest.raises(RuntimeError, match="from a CUDA device, and the model is on cpu"):
        VllmUpdateSync(config, model)


def test_the_rendezvous_is_on_the_interface_that_reaches_vllm() -> None:
    address, port = rendezvous("http://127.0.0.1:8000")
    assert address == "127.0.0.1" and 0 < port < 65536
