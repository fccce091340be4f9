"""The base URL verifiers' interception server sends model calls to: each one routed to its episode's Clotho session.

verifiers keeps one upstream client per distinct client config for the life of ``env.serving()``, so a base URL per
episode would leak clients. Every call carries its trace's id instead (``X-Session-ID``), and the episode maps each
trace to its session when verifiers mints it (``on_trace``, before the trace's runtime exists, so before any call).
The router forwards the body unchanged to the command's session host, on a Unix socket, at
``/item-<i>/sample-<s>/attempt-<a>/<trace key>/v1/chat/completions``, and answers what the session answered (JSON,
or the completion's events when the call asked to stream). A call of no known trace is refused (409): it would be
answered by no session, so recorded by none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

SESSION_ID_HEADER = "X-Session-ID"
SUMMARY_CHARS = 160


@dataclass
class EpisodeRoute:
    """One episode's attempt, and what its calls have done so far (its heartbeat)."""

    prefix: str
    """``/item-<i>/sample-<s>/attempt-<a>``."""
    calls: int = 0
    replayed: int = 0
    last: str | None = None
    traces: dict[str, str] = field(default_factory=dict)
    """Trace id -> its key in the episode (``<agent>-<n>``)."""


class Host:
    """The command's session host, over its Unix socket."""

    def __init__(self, socket: str) -> None:
        self._socket = socket
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            # No timeout of its own: a model call takes what the model takes; the activity's heartbeat bounds it.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.UnixConnector(path=self._socket), timeout=aiohttp.ClientTimeout(total=None)
            )
        return self._session

    async def json(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        async with self.session().request(method, f"http://clotho{path}", json=body) as response:
            text = await response.text()
            try:
                return response.status, (json.loads(text) if text else None)
            except ValueError:
                return response.status, {"error": {"message": text}}

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def summary(body: bytes) -> str | None:
    """The last message of a request, cut short: what the heartbeat shows of a call."""
    try:
        message = json.loads(body)["messages"][-1]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    flat = " ".join(str(text).split())
    return f"{message.get('role')}: {flat[:SUMMARY_CHARS]}{'…' if len(flat) > SUMMARY_CHARS else ''}"


class Router:
    """An aiohttp server on loopback; ``base_url`` is what verifiers' client config gets."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.routes: dict[str, EpisodeRoute] = {}
        self.base_url = ""
        self._runner: web.AppRunner | None = None

    def register(self, trace_id: str, route: EpisodeRoute, key: str) -> None:
        route.traces[trace_id] = key
        self.routes[trace_id] = route

    def forget(self, route: EpisodeRoute) -> None:
        for trace_id in route.traces:
            self.routes.pop(trace_id, None)

    async def start(self) -> str:
        app = web.Application(client_max_size=1024**3)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _chat(self, request: web.Request) -> web.Response:
        trace_id = request.headers.get(SESSION_ID_HEADER, "")
        route = self.routes.get(trace_id)
        if route is None:
            return web.json_response(
                {"error": {"message": f"no episode has trace {trace_id!r}", "type": "invalid_request_error", "code": 409}},
                status=409,
            )
        body = await request.read()
        path = f"{route.prefix}/{route.traces[trace_id]}/v1/chat/completions"
        headers = {"content-type": "application/json"}
        async with self.host.session().post(f"http://clotho{path}", data=body, headers=headers) as answer:
            payload = await answer.read()
            if answer.status == 200:
                route.calls += 1
                route.replayed += answer.headers.get("x-clotho-replayed") == "true"
                route.last = summary(body)
            return web.Response(body=payload, status=answer.status, content_type=answer.content_type)

    async def _models(self, request: web.Request) -> web.Response:
        status, body = await self.host.json("GET", "/v1/models")
        return web.json_response(body, status=status)
