"""A small reverse proxy that demands a bearer key, in front of a vLLM server (real or fake).

It stands in for what a registered endpoint often is: a gateway in front of vLLM that answers
401 without `Authorization: Bearer <key>` (and, when asked, without some extra header). Every
request is forwarded to the upstream as it came (method, path, body, content type) and the
response is streamed back chunk by chunk as it arrives, so SSE timing passes through. It listens
on 127.0.0.1 in a background thread with its own event loop, as tests/runner/fakeserver.py does.

Knobs: `hide_metrics` answers /metrics with 404 (a gateway that routes only the API),
`models` answers /v1/models itself with these ids (for an upstream that has no such route).
`seen` keeps, per request, the path and whether its credentials were right (never the key).
"""

from __future__ import annotations

import asyncio
import threading

import aiohttp
from aiohttp import web

# Hop-by-hop headers are the proxy's own business; the others are passed through as they are.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate", "content-length", "host",
              "authorization"}


class BearerProxy:
    def __init__(self, upstream: str, key: str, required_headers: dict[str, str] | None = None):
        self.upstream = upstream.rstrip("/")
        self.key = key
        self.required_headers = required_headers or {}
        self.hide_metrics = False
        self.models: list[str] | None = None
        self.seen: list[tuple[str, bool]] = []  # (path, credentials right) per request
        self.base_url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    def start(self) -> BearerProxy:
        self._thread.start()
        port = asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=10)
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def paths(self, *, accepted: bool) -> set[str]:
        return {path for path, ok in self.seen if ok == accepted}

    async def _close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _serve(self) -> int:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_read=120),
            auto_decompress=False,
        )
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def _authorized(self, request: web.Request) -> bool:
        if request.headers.get("Authorization") != f"Bearer {self.key}":
            return False
        return all(request.headers.get(k) == v for k, v in self.required_headers.items())

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        ok = self._authorized(request)
        self.seen.append((request.path, ok))
        if not ok:
            return web.json_response({"error": "missing or wrong bearer key"}, status=401)
        if request.path in ("/metrics", "/metrics/") and self.hide_metrics:
            return web.Response(status=404, text="not routed")
        if request.path == "/v1/models" and self.models is not None:
            data = [{"id": name, "object": "model", "max_model_len": 4096} for name in self.models]
            return web.json_response({"object": "list", "data": data})
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        body = await request.read()
        async with self._session.request(
            request.method, self.upstream + request.path_qs, data=body, headers=headers
        ) as upstream:
            response = web.StreamResponse(status=upstream.status)
            for name, value in upstream.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    response.headers[name] = value
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
