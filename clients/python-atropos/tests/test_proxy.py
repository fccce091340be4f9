"""``keep_proxy_state_current``: a ProxyManagedServer's ``get_state()`` answers the proxy's nodes after a completion."""

from __future__ import annotations

import asyncio
from typing import Any

from atroposlib.envs.server_handling.proxy_client import ProxyManagedServer

from clotho_atropos.proxy import keep_proxy_state_current

NODE = {"full_text": "ab", "tokens": [1, 2], "masked_tokens": [-100, 2], "logprobs": [1.0, -0.5], "metadata": {"finish_reason": "stop"}}


class RecordingProxy(ProxyManagedServer):
    """The client with its HTTP calls answered here: one chat answer, and the session's nodes."""

    def __init__(self) -> None:
        super().__init__(proxy_url="http://proxy", session_uuid="s1")
        self.calls: list[str] = []

    async def _post(self, path: str, json: dict, timeout: int = 300) -> dict:
        self.calls.append(f"POST {path}")
        return {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "b"}}]}

    async def _get(self, path: str, timeout: int = 30) -> dict:
        self.calls.append(f"GET {path}")
        return {"nodes": [NODE]}


def test_get_state_answers_the_sessions_nodes_after_each_completion() -> None:
    keep_proxy_state_current()
    keep_proxy_state_current()  # a second install wraps nothing twice
    managed = RecordingProxy()

    async def turn() -> Any:
        return await managed.chat_completion(messages=[{"role": "user", "content": "a"}], max_tokens=4)

    completion = asyncio.run(turn())
    assert completion.choices[0].message.content == "b"
    assert managed.calls == ["POST /s1/v1/chat/completions", "GET /s1/nodes"]
    [node] = managed.get_state()["nodes"]
    assert (node.tokens, node.masked_tokens, node.logprobs) == ([1, 2], [-100, 2], [1.0, -0.5])
