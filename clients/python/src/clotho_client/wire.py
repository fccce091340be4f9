"""Request encoding shared by the sync client and the trainer worker."""

from __future__ import annotations

import gzip
import json
import os
from typing import Any, Optional

#: Bodies at least this long are gzipped when that shrinks them, as Atropos environments do.
GZIP_MIN_BYTES = 1024


def encode_json(body: Any) -> tuple[bytes, dict[str, str]]:
    """Serialises ``body`` to JSON, gzipped (with ``Content-Encoding: gzip``) when >= 1 KiB and smaller so."""
    raw = json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if len(raw) >= GZIP_MIN_BYTES:
        packed = gzip.compress(raw)
        if len(packed) < len(raw):
            headers["Content-Encoding"] = "gzip"
            return packed, headers
    return raw, headers


def auth_headers(token: Optional[str], variable: str = "CLOTHO_API_TOKEN") -> dict[str, str]:
    """The bearer header for ``token``, or for ``$variable`` when None: ``clotho api`` reads ``CLOTHO_API_TOKEN``,
    ``clotho inference`` ``CLOTHO_INFERENCE_TOKEN``."""
    token = token if token is not None else os.environ.get(variable) or None
    return {"Authorization": f"Bearer {token}"} if token else {}
