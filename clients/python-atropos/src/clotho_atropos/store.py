"""Clotho's trajectory store on the file system: one JSON file per key, ``<root>/<key>.json``, written to a temporary
file and renamed into place, so a retried activity overwrites what its failed attempt wrote. ``FileSystemStore``
(src/store/trajectory-store.ts) reads a key from this layout when its group's journal does not hold it; it appends a
group's own records to the journal, but a collected group is one write here, so a file costs little. Groups go there rather than into Temporal's history, whose
payloads are limited (2 MB by default) and where Clotho's workflows keep references and scalars only.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

_KEY = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")


def put(root: str, key: str, value: Any) -> dict:
    """Writes ``value`` as JSON under ``key``; returns the ``StoreRef`` (``{"key": key}``)."""
    if not _KEY.match(key) or any(part in (".", "..") for part in key.split("/")):
        raise ValueError(f'invalid store key "{key}"')
    if re.match(r"^[a-z][a-z0-9+.-]*://", root, re.I):
        raise ValueError(f"{root}: only file-system stores are written from Python so far")
    path = Path(root).resolve() / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    temporary.write_text(json.dumps(value, allow_nan=False, separators=(",", ":")))
    os.replace(temporary, path)
    return {"key": key}
