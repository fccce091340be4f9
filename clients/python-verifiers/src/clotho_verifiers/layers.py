"""An environment's own dependencies, in a layer above the base venv.

A folder environment's ``[project].dependencies`` (besides verifiers) are installed once into
``<clotho home>/verifiers-layers/<digest>``, keyed on them, the base venv's packages and the Python, with the base
venv's versions as constraints (its pins win; a dependency that needs another version is refused by pip, naming
both). The layer is built under a temporary name and renamed whole, so a killed install leaves none half made, and
put on ``sys.path`` after the base's site-packages. Later runs find it and need no network.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


class LayerError(Exception):
    """pip could not install the environment's dependencies (its last lines)."""


def _base_freeze() -> str:
    return subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--disable-pip-version-check"], check=True, capture_output=True, text=True
    ).stdout


def ensure_layer(dependencies: list[str], home: str, notice=lambda line: None) -> str | None:
    """The layer's folder, installed first when missing; None when there is nothing to install."""
    if not dependencies:
        return None
    freeze = _base_freeze()
    digest = hashlib.sha256(json.dumps([sorted(dependencies), freeze, sys.version]).encode()).hexdigest()[:24]
    layer = Path(home) / "verifiers-layers" / digest
    if layer.is_dir():
        return str(layer)
    layer.parent.mkdir(parents=True, exist_ok=True)
    notice(f"installing the environment's dependencies ({', '.join(dependencies)}) into {layer} (once)")
    building = Path(tempfile.mkdtemp(prefix=f"{digest}.installing-", dir=layer.parent))
    try:
        constraints = building / "constraints.txt"
        # Editable and direct-URL lines are no constraints pip takes.
        constraints.write_text("".join(line + "\n" for line in freeze.splitlines() if "==" in line and " @ " not in line))
        target = building / "site"
        result = subprocess.run(
            [
                sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                "--target", str(target), "-c", str(constraints), *dependencies,
            ],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-8:])
            raise LayerError(f"could not install the environment's dependencies {dependencies}:\n{tail}")
        try:
            os.rename(target, layer)
        except OSError:
            # Another worker installed the same layer meanwhile: keep theirs.
            if not layer.is_dir():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return str(layer)
