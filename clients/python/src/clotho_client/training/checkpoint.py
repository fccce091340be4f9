"""Checkpoints that a kill -9 at any moment leaves whole: written under a temporary name, then renamed."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

import torch


class CheckpointError(RuntimeError):
    """``checkpoints/latest`` names a checkpoint that is not whole: resuming from step 0 instead would start a new run."""


@dataclass
class TrainerState:
    """What the trainer must remember across a crash, besides the weights and the optimizer."""

    #: Optimizer steps taken.
    step: int = 0
    #: Leases of batches trained and checkpointed but perhaps not acked yet (HTTP source).
    unacked_leases: list[str] = field(default_factory=list)
    #: The batcher's step of the last trainStep trained (Temporal source).
    batcher_step: Optional[int] = None
    #: The weights version the engine was last told to serve.
    synced_version: Optional[int] = None
    #: Per step: the batch's lease or batcher step and the fingerprints of its groups.
    history: list[dict[str, Any]] = field(default_factory=list)
    #: Leases of batches trained and checkpointed whose ack the API refused (the lease had run out): each batch is
    #: served again, and trained twice by whoever takes it. Exactly-once lost, counted here for good.
    leases_lost: list[dict[str, Any]] = field(default_factory=list)


class Checkpoints:
    """``<save_path>/checkpoints/step-<n>/`` (model, optimizer, state), the newest named by ``latest``."""

    def __init__(self, save_path: str, keep: int) -> None:
        self.root = Path(save_path) / "checkpoints"
        self.keep = keep

    def latest(self) -> Optional[Path]:
        """The checkpoint ``latest`` names; None without a pointer (a fresh start). A pointer naming a folder without its
        state is an error: starting over from step 0 would silently count as a new training run."""
        pointer = self.root / "latest"
        if not pointer.is_file():
            return None
        folder = self.root / pointer.read_text().strip()
        if not (folder / "state.json").is_file():
            raise CheckpointError(
                f"{pointer} names {folder}, which has no state.json: the checkpoint is not whole (deleted or damaged). "
                "Point latest at a whole checkpoint (a step-N folder with state.json), or start a new run with another --save-path"
            )
        return folder

    def save(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, state: TrainerState) -> Path:
        name = f"step-{state.step}"
        final = self.root / name
        tmp = self.root / f".{name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        model.save_pretrained(tmp / "model", safe_serialization=True)
        torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state()}, tmp / "optimizer.pt")
        (tmp / "state.json").write_text(json.dumps(asdict(state)))
        _fsync_tree(tmp)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        _write_atomically(self.root / "latest", name)
        self._prune(name)
        return final

    def load_state(self, folder: Path) -> TrainerState:
        return TrainerState(**json.loads((folder / "state.json").read_text()))

    def load_optimizer(self, folder: Path, optimizer: torch.optim.Optimizer, scheduler: Any) -> None:
        saved = torch.load(folder / "optimizer.pt", weights_only=False)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["rng"])

    def _prune(self, newest: str) -> None:
        steps = sorted((p for p in self.root.glob("step-*") if p.is_dir()), key=lambda p: int(p.name.split("-")[1]))
        for old in steps[: -self.keep]:
            if old.name != newest:
                shutil.rmtree(old, ignore_errors=True)


def update_state(folder: Path, state: TrainerState) -> None:
    """Rewrites a checkpoint's state (the ack and sync bookkeeping changes after the weights were saved)."""
    _write_atomically(folder / "state.json", json.dumps(asdict(state)))


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def _fsync_tree(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            with open(path, "rb") as f:
                os.fsync(f.fileno())
