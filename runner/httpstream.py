"""The load generator's hot path: one HTTP/1.1 POST whose response is streamed as SSE events.

Why not httpx or aiohttp: a Python client that cannot keep up still reports plausible throughput
but late per-token timestamps (domain.md section 6). bench/client_events.py measures httpx,
aiohttp and this module side by side; docs/performance.md has the figures. This module uses an
asyncio Protocol (the event loop calls `data_received` directly, no StreamReader buffer and no
coroutine switch per read) and the httptools C parser, which handles Content-Length and
Transfer-Encoding: chunked. Every SSE event in one socket read gets that read's arrival stamp
(time.monotonic()), taken before any parsing, so parsing cost never shows up as delay.

Each request opens its own connection and sends `Connection: close`: simple, and on a local
network the connect costs well under a millisecond. Non-hot calls (health, /tokenize) use httpx.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httptools

# Bytes of a non-200 body kept for the error message: enough for vLLM's JSON error.
ERROR_BODY_LIMIT = 2000
# A non-streamed JSON response larger than this is refused rather than held in memory.
BODY_LIMIT = 64 * 1024 * 1024

OnEvent = Callable[[bytes, float], None]


class StreamAbort(Exception):
    """Raised by an event handler to stop reading this response; the message becomes its error."""


@dataclass(frozen=True)
class Url:
    host: str
    port: int
    path: str


@dataclass
class HttpResult:
    """How the exchange ended. error is None only for a complete response."""

    status: int | None = None
    error: str | None = None
    body: bytes = b""  # the whole body when not streamed; an excerpt for a non-200 status
    sent_at: float | None = None  # monotonic, when the connection attempt started
    ended_at: float | None = None  # monotonic, when the response ended or failed


def parse_url(base_url: str, path: str) -> Url:
    parts = urlsplit(base_url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"only plain http://host:port URLs are supported, got {base_url!r}")
    prefix = parts.path.rstrip("/")
    return Url(parts.hostname, parts.port or 80, prefix + path)


def request_bytes(url: Url, body: bytes) -> bytes:
    head = (
        f"POST {url.path} HTTP/1.1\r\n"
        f"Host: {url.host}:{url.port}\r\n"
        "Content-Type: application/json\r\n"
        "Accept: text/event-stream, application/json\r\n"
        "Connection: close\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class _ResponseProtocol(asyncio.Protocol):
    """Reads one response; calls on_event(data, stamp) for each SSE `data:` line when sse."""

    def __init__(self, on_event: OnEvent, sse: bool, stall_timeout_s: float) -> None:
        self.on_event = on_event
        self.sse = sse
        self.stall_timeout_s = stall_timeout_s
        self.parser = httptools.HttpResponseParser(self)
        self.result = HttpResult()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        self.stamp = 0.0
        self.last_data = 0.0
        self.pending = b""  # an SSE line not yet ended by a newline
        self.body: list[bytes] = []
        self.body_size = 0
        self.stall_handle: asyncio.TimerHandle | None = None

    # -- transport callbacks ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, so no isinstance here.
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:  # small writes and reads must not wait for Nagle's algorithm
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.last_data = time.monotonic()
        self.stall_handle = asyncio.get_running_loop().call_later(
            self.stall_timeout_s, self._check_stall
        )

    def data_received(self, data: bytes) -> None:
        self.stamp = self.last_data = time.monotonic()
        if self.done.done():
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            # httptools wraps an exception raised in a callback; the original is the context.
            cause = exc.__context__
            if isinstance(cause, StreamAbort):
                self.finish(str(cause))
            elif cause is not None:
                self.finish(f"client error while reading the response: {cause!r}")
            else:
                self.finish(f"malformed HTTP response: {exc}")

    def connection_lost(self, exc: Exception | None) -> None:
        if self.done.done():
            return
        status = self.result.status
        if status is not None and status != 200:
            excerpt = b"".join(self.body).decode("utf-8", "replace").strip()
            self.finish(f"HTTP {status}: {excerpt}")
        else:
            reason = f": {exc}" if exc else ""
            self.finish(f"connection closed before the response ended{reason}")

    # -- httptools callbacks --------------------------------------------------------------------

    def on_headers_complete(self) -> None:
        self.result.status = self.parser.get_status_code()

    def on_body(self, chunk: bytes) -> None:
        if self.result.status != 200:
            if self.body_size < ERROR_BODY_LIMIT:
                self.body.append(chunk[: ERROR_BODY_LIMIT - self.body_size])
                self.body_size += len(self.body[-1])
            return
        if not self.sse:
            self.body_size += len(chunk)
            if self.body_size > BODY_LIMIT:
                raise StreamAbort(f"response body over {BODY_LIMIT} bytes")
            self.body.append(chunk)
            return
        self._split_events(chunk)

    def on_message_complete(self) -> None:
        if self.sse and self.result.status == 200 and self.pending.strip():
            self._split_events(b"\n")  # a last event without its newline
        self.result.body = b"".join(self.body)
        if self.result.status != 200:
            excerpt = self.result.body.decode("utf-8", "replace").strip()
            self.finish(f"HTTP {self.result.status}: {excerpt}")
        else:
            self.finish(None)

    # -- helpers --------------------------------------------------------------------------------

    def _split_events(self, chunk: bytes) -> None:
        data = self.pending + chunk if self.pending else chunk
        start = 0
        stamp = self.stamp
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            line = data[start:end]
            start = end + 1
            # SSE: only `data:` fields matter here; comments (":") and other fields are skipped.
            if line.startswith(b"data:"):
                self.on_event(line[5:].strip(), stamp)
        self.pending = data[start:]

    def _check_stall(self) -> None:
        if self.done.done():
            return
        idle = time.monotonic() - self.last_data
        if idle >= self.stall_timeout_s:
            self.finish(f"stalled: no bytes for {self.stall_timeout_s:g} s")
        else:
            self.stall_handle = asyncio.get_running_loop().call_later(
                self.stall_timeout_s - idle, self._check_stall
            )

    def finish(self, error: str | None) -> None:
        if self.done.done():
            return
        self.result.error = error
        self.result.ended_at = time.monotonic()
        if self.stall_handle is not None:
            self.stall_handle.cancel()
        if self.transport is not None:
            if error is None:
                self.transport.close()
            else:
                self.transport.abort()
        self.done.set_result(None)


async def post(
    url: Url,
    body: bytes,
    on_event: OnEvent,
    *,
    sse: bool,
    stall_timeout_s: float,
    request_timeout_s: float,
) -> HttpResult:
    """POST body to url and read the response; never raises for network or server faults.

    Failures come back as HttpResult.error: refused or hung connection, non-200 status, malformed
    HTTP, a stream with no bytes for stall_timeout_s, or request_timeout_s overall. A
    CancelledError propagates (after the socket is closed) so the caller can record it.
    """
    loop = asyncio.get_running_loop()
    sent_at = time.monotonic()
    protocol = _ResponseProtocol(on_event, sse, stall_timeout_s)
    protocol.result.sent_at = sent_at
    try:
        async with asyncio.timeout(request_timeout_s):
            try:
                async with asyncio.timeout(min(stall_timeout_s, request_timeout_s)):
                    await loop.create_connection(lambda: protocol, url.host, url.port)
            except TimeoutError:
                protocol.finish(f"connect to {url.host}:{url.port} timed out")
                return protocol.result
            except OSError as exc:
                protocol.finish(f"cannot connect to {url.host}:{url.port}: {exc}")
                return protocol.result
            assert protocol.transport is not None
            protocol.transport.write(request_bytes(url, body))
            # shield: a timeout or cancel must not cancel `done` itself, or finish() (which
            # records the error and closes the socket) would think the response had ended.
            await asyncio.shield(protocol.done)
    except TimeoutError:
        protocol.finish(f"request timed out after {request_timeout_s:g} s")
    finally:
        if not protocol.done.done():  # cancelled: close the socket, leave the error to the caller
            protocol.finish("cancelled")
    return protocol.result
