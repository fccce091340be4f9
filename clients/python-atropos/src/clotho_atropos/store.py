"""Clotho's trajectory store on the file system: one JSON file per key, ``<root>/<key>.json``, written to a temporary
file and renamed into place. ``FileSystemStore`` (src/store/trajectory-store.ts) reads a key from this layout when its
group's journal does not hold it; it appends a group's own records to the journal, but a collected group is one write
here, so a file costs little. Groups, large items, put-back items and checkpoints go there rather than into Temporal's
history, whose payloads are limited (2 MB by default) and where Clotho's workflows keep references and scalars only.

Two attempts of one activity may run at once (one timed out while its code still ran), so no key is written by two
of them with different values: a collected group's key names its attempt, and a value kept by content
(``put_content``) is keyed by its hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

_KEY = re.compile(r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$")


def _path(root: str, key: str) -> Path:
    if not _KEY.match(key) or any(part in (".", "..") for part in key.split("/")):
        raise ValueError(f'invalid store key "{key}"')
    if re.match(r"^[a-z][a-z0-9+.-]*://", root, re.I):
        raise ValueError(f"{root}: only file-system stores are written from Python so far")
    return Path(root).resolve() / f"{key}.json"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _json(value: Any) -> str:
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


def put(root: str, key: str, value: Any) -> dict:
    """Writes ``value`` as JSON under ``key``; returns the ``StoreRef`` (``{"key": key}``)."""
    _write(_path(root, key), _json(value))
    return {"key": key}


def put_content(root: str, prefix: str, value: Any) -> dict:
    """Writes ``value`` under ``<prefix>/<sha256 of its JSON>`` (once: the same value is the same file); returns its ref."""
    text = _json(value)
    key = f"{prefix}/{hashlib.sha256(text.encode()).hexdigest()}"
    path = _path(root, key)
    if not path.exists():
        _write(path, text)
    return {"key": key}


def get(root: str, key: str) -> Any:
    """The value under ``key``; ``KeyError`` naming it when there is none."""
    path = _path(root, key)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise KeyError(f'the trajectory store under {root} has no entry "{key}"') from None
