"""The checkpoint the trainer resumes from: ``checkpoints/latest`` names it, and it must hold the trainer's state."""

from __future__ import annotations

from pathlib import Path

import pytest

from clotho_client.training.checkpoint import CheckpointError, Checkpoints


def test_a_latest_pointer_naming_a_folder_without_its_state_is_an_error_naming_the_folder(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    (root / "step-5" / "model").mkdir(parents=True)
    (root / "latest").write_text("step-5\n")
    # Not a fresh start from step 0 (which would count as a new training run): the folder is named, and what to do.
    with pytest.raises(CheckpointError, match=f"{root / 'step-5'}.*no state.json"):
        Checkpoints(str(tmp_path), keep=2).latest()
    (root / "latest").write_text("step-9")
    with pytest.raises(CheckpointError, match=f"{root / 'step-9'}"):
        Checkpoints(str(tmp_path), keep=2).latest()


def test_no_pointer_is_a_fresh_start_and_a_whole_checkpoint_is_found(tmp_path: Path) -> None:
    assert Checkpoints(str(tmp_path), keep=2).latest() is None
    root = tmp_path / "checkpoints"
    (root / "step-3").mkdir(parents=True)
    (root / "step-3" / "state.json").write_text("{}")
    (root / "latest").write_text("step-3")
    assert Checkpoints(str(tmp_path), keep=2).latest() == root / "step-3"
