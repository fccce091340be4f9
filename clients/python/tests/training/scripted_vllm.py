"""Stand-ins for vLLM in the weight-sync tests: a tiny Qwen2 built in memory, and an HTTP server that answers the
routes a test gives it, checks each call's shape and records it, and can fail a route on cue."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import parse_qsl, urlsplit

import torch

#: FastAPI's answer for a route the app does not have: what vLLM answers when a feature's routes are off.
NOT_FOUND = (404, {"detail": "Not Found"})


def tiny_qwen2(seed: int = 0) -> torch.nn.Module:
    """A two-layer Qwen2 with a 64-token vocabulary: every linear layer a real model has, loaded in milliseconds."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=64, tie_word_embeddings=True, eos_token_id=2,
    )
    return Qwen2ForCausalLM(config)


def tiny_model_folder(folder: Path) -> Path:
    """The tiny model saved as a Hugging Face folder, with tokenizer files (placeholders) whose copies a test can check."""
    tiny_qwen2().save_pretrained(folder)
    (folder / "tokenizer.json").write_text('{"model": "placeholder tokenizer"}')
    (folder / "tokenizer_config.json").write_text('{"tokenizer_class": "Qwen2Tokenizer"}')
    return folder


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    content_type: str = ""


Route = Callable[[Call], tuple[int, Any]]


@dataclass
class ScriptedServer:
    """``routes`` maps (method, path) to a function of the call answering (status, JSON body or text). A path listed
    in ``fail`` answers those statuses first, one per call, before its route runs."""

    routes: dict[tuple[str, str], Route]
    calls: list[Call] = field(default_factory=list)
    fail: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        scripted = self
        self.lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                content_type = self.headers.get("content-type") or ""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                call = Call(self.command, parts.path, dict(parse_qsl(parts.query)), body, content_type)
                status, answer = scripted.answer(call)
                data = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "text/plain" if isinstance(answer, str) else "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve  # noqa: N815 - http.server's names

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, call: Call) -> tuple[int, Any]:
        with self.lock:
            self.calls.append(call)
            failures = self.fail.get(call.path)
            if failures:
                return failures.pop(0), {"error": "scripted failure"}
            route = self.routes.get((call.method, call.path))
            return route(call) if route else NOT_FOUND

    def paths(self, *, method: Optional[str] = None) -> list[str]:
        return [f"{c.method} {c.path}" for c in self.calls if method is None or c.method == method]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
