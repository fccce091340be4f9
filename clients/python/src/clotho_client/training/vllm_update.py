"""``--weight-sync vllm-update``: vLLM's own weight-transfer API for RL, NCCL broadcast from the trainer's GPU.

The control plane is vLLM's HTTP routes (on a server started with ``VLLM_SERVER_DEV_MODE=1`` and
``--weight-transfer-config '{"backend": "nccl"}'``): ``/init_weight_transfer_engine`` once, then per version
``/pause?mode=keep``, ``/start_weight_update``, ``/update_weights``, ``/finish_weight_update`` with the version as
``weight_version``, ``/resume``. ``GET /weight_info`` answers the version last committed, which makes a repeated sync
a no-op. The data plane is vLLM's trainer-side engine (``vllm.distributed.weight_transfer``, vLLM 0.26 or later),
which drives those four transfer calls through :class:`WeightSyncClient` while it broadcasts the tensors, so this mode
needs ``vllm`` installed beside the trainer, the model on a CUDA device, and a different GPU than vLLM's.

Only pause, resume and the probes are retried: a transfer call that failed cannot be sent again on its own (vLLM's
workers would wait for a broadcast that never comes), so a failed round drops the NCCL group, resumes generation and
raises; the next sync (the trainer's restart) sets the group up again.
"""

from __future__ import annotations

import logging
import socket
from typing import Any, Callable, Optional, Protocol
from urllib.parse import urlsplit

import torch

from .config import TrainerConfig
from .vllm_http import Retry, VllmHttpError, VllmServer

log = logging.getLogger("clotho_client.training")

_DEV_MODE_HINT = (
    "vLLM serves its weight-transfer routes only when started with VLLM_SERVER_DEV_MODE=1 in its environment "
    """and --weight-transfer-config '{"backend": "nccl"}'"""
)


class WeightSyncClient:
    """vLLM's ``VLLMWeightSyncClient`` protocol over HTTP, as its ``HTTPVLLMWeightSyncClient`` speaks it, with the
    version being synced committed by ``finish_weight_update``."""

    def __init__(self, server: VllmServer) -> None:
        self.server = server
        self.weight_version: Optional[str] = None

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        self.server.request("POST", "/init_weight_transfer_engine", json={"init_info": init_info}, retry=False)

    def start_weight_update(self) -> None:
        self.server.request("POST", "/start_weight_update", retry=False)

    def update_weights(self, update_info: Any) -> None:
        self.server.request("POST", "/update_weights", json={"update_info": update_info}, retry=False)

    def finish_weight_update(self, weight_version: Optional[str] = None) -> None:
        version = weight_version if weight_version is not None else self.weight_version
        self.server.request("POST", "/finish_weight_update", json=None if version is None else {"weight_version": version}, retry=False)


class Transfer(Protocol):
    """What vLLM's ``TrainerWeightTransferEngine`` is to this module: one ``send_weights()`` per version."""

    def send_weights(self) -> None: ...


#: Builds the transfer once: (client, model, NCCL world size: vLLM's workers and the trainer) -> a transfer that has
#: called ``client.init_weight_transfer_engine``.
TransferFactory = Callable[[WeightSyncClient, torch.nn.Module, int], Transfer]


def nccl_transfer(server_url: str, model: torch.nn.Module) -> TransferFactory:
    """vLLM's dense NCCL trainer engine, refused up front without vLLM or without a CUDA model."""
    try:
        from vllm.distributed.weight_transfer import ModuleSource, WeightTransferTrainerFactory
        from vllm.distributed.weight_transfer.nccl_engine import NCCLTrainerInitInfo
    except ImportError as error:
        raise RuntimeError(
            "--weight-sync vllm-update needs vLLM 0.26 or later installed beside the trainer (pip install vllm): its "
            f"trainer-side engine, vllm.distributed.weight_transfer, sends the weights over NCCL ({error})"
        ) from error
    device = next(model.parameters()).device
    if device.type != "cuda":
        raise RuntimeError(
            f"--weight-sync vllm-update broadcasts the weights over NCCL from a CUDA device, and the model is on {device}: "
            "train on a GPU (--device cuda) other than vLLM's, or use --weight-sync vllm-restart or vllm-lora"
        )

    def build(client: WeightSyncClient, model: torch.nn.Module, world_size: int) -> Transfer:
        address, port = rendezvous(server_url)
        log.info("NCCL rendezvous at %s:%d with %d vLLM worker(s)", address, port, world_size - 1)
        init_info = NCCLTrainerInitInfo(master_address=address, master_port=port, world_size=world_size, rank=0)
        return WeightTransferTrainerFactory.trainer_init(init_info, client=client, source=ModuleSource(model))

    return build


def rendezvous(server_url: str) -> tuple[str, int]:
    """This host's address as vLLM's host reaches it (the interface that routes there) and a free port."""
    host = urlsplit(server_url).hostname or "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((socket.gethostbyname(host), 9))  # UDP: nothing is sent
        address = probe.getsockname()[0]
    with socket.socket() as free:
        free.bind(("", 0))
        port = int(free.getsockname()[1])
    return address, port


class VllmUpdateSync:
    """Pushes the weights with vLLM's weight-transfer API; ``transfer`` replaces the NCCL engine (tests)."""

    def __init__(self, config: TrainerConfig, model: torch.nn.Module, *, transfer: Optional[TransferFactory] = None, retry: Retry = Retry()) -> None:
        self.server = VllmServer(config.inference_url or "", retry=retry, hint_404=_DEV_MODE_HINT)
        self.build = transfer or nccl_transfer(self.server.url, model)
        self.client = WeightSyncClient(self.server)
        self.transfer: Optional[Transfer] = None

    def serve_starting_weights(self, model: torch.nn.Module, version: int) -> None:
        """Pushes the weights the trainer starts from unless vLLM has them (it may have been started on other ones, or
        with ``--load-format dummy``); this also sets up the NCCL group before the first step."""
        self.sync(model, version)

    def sync(self, model: torch.nn.Module, version: int) -> None:
        if self.committed_version() == str(version):
            return
        if self.transfer is None:
            world = int(self.server.get_json("/get_world_size")["world_size"])
            self.transfer = self.build(self.client, model, world + 1)
        self.server.request("POST", "/pause", params={"mode": "keep"})
        try:
            self.client.weight_version = str(version)
            self.transfer.send_weights()
        except BaseException:
            # The group is unusable after a failed round; the next sync sets up another.
            transfer, self.transfer = self.transfer, None
            shutdown = getattr(transfer, "shutdown", None)
            if shutdown is not None:
                shutdown()
            try:
                self.server.request("POST", "/resume")
            except VllmHttpError as error:
                log.warning("could not resume vLLM's generation after a failed weight update: %s", error)
            raise
        self.server.request("POST", "/resume")
        log.info("vLLM serves weights version %d", version)

    def committed_version(self) -> Optional[str]:
        """``GET /weight_info``'s ``weight_version``; None where vLLM has no such route (then every sync transfers)."""
        try:
            version = self.server.get_json("/weight_info").get("weight_version")
        except VllmHttpError as error:
            if error.status == 404:
                return None
            raise
        return None if version is None else str(version)
