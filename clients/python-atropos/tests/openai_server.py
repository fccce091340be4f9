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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    def __init__(self) -> None:
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
                if self.path.endswith("/chat/completions"):
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
                reply.update(id="cmpl-test", created=int(time.time()), model=body.get("model", "tiny"),
                             usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2})
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

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _answer(prompt: str, i: int) -> str:
    numbers = [int(n) for n in re.findall(r"\d+", prompt)]
    total = sum(numbers[:2]) + (i % 2)
    return f"Adding them gives \\boxed{{{total}}}"
