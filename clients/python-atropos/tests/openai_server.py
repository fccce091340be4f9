"""A trivial OpenAI-compatible HTTP server for the tests: it adds the numbers it is asked about.

Choice i of a chat completion answers correctly when i is even and off by one when it is odd, so a group
has differing scores. Requests are counted per path, generations (not health checks) apart. Not a mock of atroposlib: the environments' own
ServerManager and the openai client talk to it over HTTP.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from typing import Optional
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    def __init__(self, tokenizer: Optional[str] = None) -> None:
        """With ``tokenizer`` (a folder) it also serves vLLM's ``/generate`` (token ids in, ids and logprobs out)."""
        self.tokenizer = None
        if tokenizer is not None:
            from transformers import AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        self.requests: Counter[str] = Counter()
        self.generations = 0
        self.delay = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                server.requests[self.path] += 1
                if body.get("max_tokens") != 1:  # not ServerManager's health check
                    server.generations += 1
                    time.sleep(server.delay)
                if self.path == "/generate" and server.tokenizer is not None:
                    reply = server.generate(body)
                elif self.path.endswith("/chat/completions"):
                    prompt = body["messages"][-1]["content"]
                    reply = {"object": "chat.completion", "choices": [
                        {"index": i, "message": {"role": "assistant", "content": _answer(prompt, i)}, "finish_reason": "stop"}
                        for i in range(body.get("n", 1))
                    ]}
                elif self.path.endswith("/completions"):
                    reply = {"object": "text_completion", "choices": [
                        {"index": i, "text": _answer(body["prompt"], i), "finish_reason": "stop"} for i in range(body.get("n", 1))
                    ]}
                else:
                    self.send_error(404)
                    return
                if self.path != "/generate":
                    reply.update(id="cmpl-test", created=int(time.time()), model=body.get("model", "tiny"),
                                 usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})
                self._send(reply)

            def do_GET(self) -> None:  # noqa: N802 - vLLM's health probe
                if self.path == "/health":
                    self._send({})
                else:
                    self.send_error(404)

            def _send(self, reply: dict) -> None:
                data = json.dumps(reply).encode()
                try:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the caller was killed (the crash test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def generate(self, body: dict) -> dict:
        """vLLM's native ``/generate`` as Atropos's VLLMServer calls it: ``{"logprobs": [[[{id: lp}], ...]], "finish_reasons"}``."""
        prompt = self.tokenizer.decode(body["prompt"]["prompt_token_ids"])
        # Answer the last question in the prompt (a multi-turn prompt holds the earlier ones too).
        last_user = prompt.rsplit("user\n", 1)[-1]
        outputs = []
        for i in range(body.get("n", 1)):
            ids = self.tokenizer.encode(_answer(last_user, i), add_special_tokens=False) + [self.tokenizer.eos_token_id]
            outputs.append([[{str(t): -0.25}] for t in ids[: body.get("max_tokens", 64)]])
        return {"logprobs": outputs, "finish_reasons": ["stop"] * len(outputs)}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _answer(prompt: str, i: int) -> str:
    numbers = [int(n) for n in re.findall(r"\d+", prompt)]
    total = sum(numbers[:2]) + (i % 2)
    return f"Adding them gives \\boxed{{{total}}}"
