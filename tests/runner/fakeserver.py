"""A small real HTTP server that speaks enough of vLLM's OpenAI API to test the load generator.

It listens on 127.0.0.1 (a free port) in a background thread with its own event loop, and serves
/health, /tokenize, /v1/completions and /v1/chat/completions, streamed (SSE with a usage chunk
and `data: [DONE]`) or not. A "token" is the word " tok"; prompt tokens are whitespace-separated
words, so /tokenize and usage agree. Each streamed chunk carries `server_send`, the server's
time.monotonic() when it wrote the chunk.

Modes (server-wide `mode`, or per request by putting `mode=NAME` in the prompt):
normal, http_500, garbage_sse, truncated_sse, stall, die_mid_stream, short, error_in_stream
(vLLM's mid-stream error event: `data: {"error": {...}}`), conn_close (a normal response that
says `Connection: close` but leaves closing to the client: a client that sent another request on
it anyway would get an answer, so a test can tell).

`metrics_page`: the text /metrics and /metrics/ answer (None: no such route, 404).

Connections: HTTP/1.1 keep-alive as aiohttp serves it. `peers` records the client port of each
generation request (one port = one connection), `open_connections()` counts the connections
open now, and `close_idle_connections()` closes them from the server side, as a server's
keep-alive timeout would.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Any

import orjson
from aiohttp import web

MODES = (
    "normal", "http_500", "garbage_sse", "truncated_sse", "stall", "die_mid_stream", "short",
    "error_in_stream", "conn_close",
)
MODE_RE = re.compile(r"mode=(\w+)")
THINK_BLOCK_TOKENS = 6


class FakeVllm:
    """Start with `start()`, stop with `stop()`; base_url is http://127.0.0.1:PORT."""

    def __init__(self) -> None:
        self.mode = "normal"
        self.interval_s = 0.002  # between chunks
        self.stream_interval = 1  # tokens per chunk, like vLLM's --stream-interval
        self.model = "fake-model"
        self.metrics_page: str | None = None
        self.requests: list[dict[str, Any]] = []  # every generation request body, in order
        self.arrivals: list[float] = []  # time.monotonic() when each generation request arrived
        self.peers: list[int] = []  # the client port of each generation request's connection
        self.base_url = ""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> FakeVllm:
        self._thread.start()
        port = asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=10)
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def open_connections(self) -> int:
        """Connections whose socket is still open (aiohttp lists a lost one until its handler
        returns, which a stalled handler never does)."""
        assert self._runner is not None and self._runner.server is not None
        return sum(1 for h in self._runner.server.connections if h.transport is not None)

    def close_idle_connections(self) -> None:
        """Close every open connection from the server side; returns once they are closed."""
        asyncio.run_coroutine_threadsafe(self._close_connections(), self._loop).result(timeout=10)

    async def _close_connections(self) -> None:
        assert self._runner is not None and self._runner.server is not None
        for handler in self._runner.server.connections:
            if handler.transport is not None:
                handler.transport.close()
        for _ in range(200):  # connection_lost clears each one on a later loop iteration
            if not any(h.transport is not None for h in self._runner.server.connections):
                return
            await asyncio.sleep(0.005)

    async def _serve(self) -> int:
        app = web.Application()
        app.router.add_get("/health", self._health)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/metrics/", self._metrics)
        app.router.add_post("/tokenize", self._tokenize)
        app.router.add_post("/v1/completions", self._generate)
        app.router.add_post("/v1/chat/completions", self._generate)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    # -- handlers -------------------------------------------------------------------------------

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="")

    async def _metrics(self, request: web.Request) -> web.Response:
        if self.metrics_page is None:
            raise web.HTTPNotFound()
        return web.Response(text=self.metrics_page)

    async def _tokenize(self, request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"count": count_words(body), "tokens": [], "max_model_len": 4096})

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        self.arrivals.append(time.monotonic())
        assert request.transport is not None
        self.peers.append(request.transport.get_extra_info("peername")[1])
        body = orjson.loads(await request.read())
        self.requests.append(body)
        chat = request.path.endswith("/chat/completions")
        text = prompt_text(body)
        found = MODE_RE.search(text)
        mode = found.group(1) if found else self.mode
        if mode == "http_500":
            return web.json_response({"error": {"message": "boom", "code": 500}}, status=500)
        prompt_tokens = count_words(body)
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        tokens = max(1, max_tokens // 2) if mode == "short" else max_tokens
        if not body.get("stream"):
            await asyncio.sleep(self.interval_s * tokens)
            return web.json_response(
                _full_response(chat, tokens, prompt_tokens, mode, max_tokens)
            )
        return await self._stream(request, body, chat, mode, tokens, prompt_tokens)

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        chat: bool,
        mode: str,
        tokens: int,
        prompt_tokens: int,
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        if mode == "conn_close":
            response.headers["Connection"] = "close"
        await response.prepare(request)
        continuous = bool((body.get("stream_options") or {}).get("continuous_usage_stats"))
        if chat:
            await _send(response, {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
        sent = 0
        for size in chunk_sizes(tokens, self.stream_interval):
            await asyncio.sleep(self.interval_s)
            sent += size
            last = sent == tokens
            reason = ("stop" if mode == "short" else "length") if last else None
            chunk = _chunk(chat, size, reason)
            if continuous:
                chunk["usage"] = _usage(prompt_tokens, sent)
            await _send(response, chunk)
            if mode == "error_in_stream":
                await response.write(b'data: {"error": {"message": "engine dead", "code": 500}}\n\n')
                await response.write_eof()
                return response
            if mode == "garbage_sse":
                await response.write(b"data: {this is not json\n\n")
                return response
            if mode == "stall":
                await asyncio.sleep(3600)
            if mode == "die_mid_stream":
                assert request.transport is not None
                request.transport.abort()
                return response
            if mode == "truncated_sse" and sent * 2 >= tokens:
                await response.write_eof()  # a clean end of body, but no usage and no [DONE]
                return response
        await _send(response, {"choices": [], "usage": _usage(prompt_tokens, tokens)})
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def chunk_sizes(tokens: int, interval: int) -> list[int]:
    """vLLM's --stream-interval: the first token alone, then `interval` tokens per chunk."""
    sizes = [1]
    left = tokens - 1
    while left > 0:
        sizes.append(min(interval, left))
        left -= sizes[-1]
    return sizes


def count_words(body: dict[str, Any]) -> int:
    """Prompt tokens; like Qwen3's template, enable_thinking=false adds an empty think block."""
    thinking_off = (body.get("chat_template_kwargs") or {}).get("enable_thinking") is False
    extra = THINK_BLOCK_TOKENS if "messages" in body and thinking_off else 0
    return len(prompt_text(body).split()) + extra


def prompt_text(body: dict[str, Any]) -> str:
    if "messages" in body:
        return " ".join(str(m.get("content", "")) for m in body["messages"])
    return str(body.get("prompt", ""))


def _chunk(chat: bool, size: int, reason: str | None) -> dict[str, Any]:
    text = " tok" * size
    if chat:
        choice: dict[str, Any] = {"index": 0, "delta": {"content": text}, "finish_reason": reason}
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": reason}
    return {"id": "cmpl-fake", "model": "fake-model", "choices": [choice]}


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _full_response(
    chat: bool, tokens: int, prompt_tokens: int, mode: str, max_tokens: int
) -> dict[str, Any]:
    reason = "stop" if tokens < max_tokens else "length"
    if chat:
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": " tok" * tokens}}
    else:
        choice = {"index": 0, "text": " tok" * tokens}
    choice["finish_reason"] = reason
    return {"id": "cmpl-fake", "choices": [choice], "usage": _usage(prompt_tokens, tokens)}


async def _send(response: web.StreamResponse, chunk: dict[str, Any]) -> None:
    chunk["server_send"] = time.monotonic()
    await response.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
