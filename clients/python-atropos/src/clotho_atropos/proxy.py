"""Keeps the nodes of a session on a ManagedServer OpenAI proxy (``ATROPOS_PROXY_URL``) current for ``get_state()``.

With ``ATROPOS_PROXY_URL`` set, atroposlib's ``ServerManager.managed_server()`` yields a ``ProxyManagedServer``
(atroposlib 0.4.0) in place of a ``ManagedServer``. Environments read their sequences with ``managed.get_state()``
inside the ``async with`` block, as they do from a ``ManagedServer``; but the proxy client's ``get_state()`` answers
from a cache that only its ``fetch_state()`` fills, which ``managed_server()`` never calls, so every environment
written for ``ManagedServer`` would get no nodes. Once installed, each ``chat_completion`` through the proxy fetches
the session's nodes after it, so ``get_state()`` answers what the proxy recorded, as ``ManagedServer``'s does.
"""

from __future__ import annotations

import functools
from typing import Any

from atroposlib.envs.server_handling import proxy_client

_installed = False


def keep_proxy_state_current() -> None:
    """Wraps ``ProxyManagedServer.chat_completion`` to fetch the session's nodes after each completion (once per process)."""
    global _installed
    if _installed:
        return
    original = proxy_client.ProxyManagedServer.chat_completion

    @functools.wraps(original)
    async def chat_completion(self: proxy_client.ProxyManagedServer, **kwargs: Any) -> Any:
        completion = await original(self, **kwargs)
        # A failed fetch fails the rollout (retried as an infrastructure failure) rather than leaving stale nodes.
        await self.fetch_state()
        return completion

    proxy_client.ProxyManagedServer.chat_completion = chat_completion  # type: ignore[method-assign]
    _installed = True
