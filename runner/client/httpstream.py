"""The load generator's hot path: one HTTP/1.1 POST whose response is streamed as SSE events.

Why not httpx or aiohttp: a Python client that cannot keep up still reports plausible throughput
but late per-token timestamps (docs/vllm.md, "Measurement pitfalls"; bench/client_events.py
measures the three side by side). This module uses an asyncio Protocol (the event loop calls
`data_received` directly: no StreamReader buffer, no coroutine switch per read) and the httptools
C parser. Every SSE event in one socket read gets that read's arrival stamp, taken in
`data_received` before any parsing; `_Reads` says when the parsing happens and when the loop may
nap instead of blocking.

Connections: with a `Pool` requests reuse keep-alive connections, as `vllm bench serve` does with
aiohttp's TCPConnector, so a busy API server need not accept a new connection before it can read
each request. A connection carries one request at a time (never pipelined) and goes back to the
pool only after a clean response; anything else aborts it. Without a pool each request opens its
own connection and sends `Connection: close` (bench/client_events.py compares the two). Calls off
the hot path (health, /tokenize) use httpx.

An https base URL (a registered endpoint behind TLS) wraps each connection in a verifying TLS
context; the arrival stamps are then taken after decryption, as any TLS client's are.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
import weakref
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import httptools

from runner.engine.endpoint import check_header

# Bytes of a non-200 body kept for the error message: enough for vLLM's JSON error.
ERROR_BODY_LIMIT = 2000
# A non-streamed JSON response larger than this is refused rather than held in memory.
BODY_LIMIT = 64 * 1024 * 1024
# Pool.close() waits this long for the closed sockets' connection_lost before giving up.
POOL_CLOSE_WAIT_S = 2.0
# Reads parsed in one loop pass before the loop polls its sockets again: a read that arrives
# while a backlog is parsed is stamped after one slice, not the whole backlog (docs/performance.md,
# "Client: streamed SSE events per client process", measures the size).
PARSE_SLICE = 4

OnEvent = Callable[[bytes, float], None]


class StreamAbort(Exception):
    """Raised by an event handler to stop reading this response; the message becomes its error."""


@dataclass(frozen=True)
class Url:
    host: str
    port: int
    path: str
    tls: bool = False  # https: the connection is wrapped in TLS, the certificate verified


@dataclass
class HttpResult:
    """How the exchange ended. error is None only for a complete response."""

    status: int | None = None
    error: str | None = None
    body: bytes = b""  # the whole body when not streamed; an excerpt for a non-200 status
    sent_at: float | None = None  # monotonic, when post() was called (before the connection)
    ended_at: float | None = None  # monotonic, when the response ended or failed
    connect_s: float | None = None  # sent_at until a connection was in hand (pooled or new)
    reused: bool = False  # the request went out on a pooled keep-alive connection


def parse_url(base_url: str, path: str) -> Url:
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"only http(s)://host:port URLs are supported, got {base_url!r}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("a base URL with user:password@ is not supported (give an API key)")
    tls = parts.scheme == "https"
    prefix = parts.path.rstrip("/")
    return Url(parts.hostname, parts.port or (443 if tls else 80), prefix + path, tls)


def request_bytes(
    url: Url, body: bytes, keep_alive: bool = False, headers: Mapping[str, str] | None = None
) -> bytes:
    """The request; HTTP/1.1 keeps the connection open unless it says `Connection: close`.

    headers: extra ones (an attached server's API key and its own headers), each checked by
    runner.engine.endpoint.check_header, so a CR or LF can never add a header or a request.
    """
    connection = "" if keep_alive else "Connection: close\r\n"
    extra = ""
    for name, value in (headers or {}).items():
        check_header(name, value)
        extra += f"{name}: {value}\r\n"
    head = (
        f"POST {url.path} HTTP/1.1\r\n"
        f"Host: {url.host}:{url.port}\r\n"
        "Content-Type: application/json\r\n"
        "Accept: text/event-stream, application/json\r\n"
        f"{extra}"
        f"{connection}"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class _Reads:
    """Socket reads, each stamped on arrival and parsed once the loop has delivered every read
    that was ready (call_soon runs after the pass's I/O callbacks, on uvloop and the stdlib loop
    alike). A read then waits only for the other reads' stamps, not for their parsing: with many
    streams, several sockets are ready at once after each server burst. The queue is parsed
    PARSE_SLICE reads at a time, one slice per loop pass, so after a large burst the loop polls
    its sockets between slices and a read arriving meanwhile is stamped without waiting for the
    whole backlog's parsing. Reads are parsed in the order they arrived.
    (No reference to the loop here: _READS maps the loop to this object weakly.)

    With a nap set (nap_while_streaming) and a response being read, the loop never blocks in
    epoll_wait: a pass that found no read sleeps nap_s on the client's own timer, and the next
    pass polls without waiting. Why: a client blocked in epoll_wait has to be woken by the
    server's write, and on loopback that wake-up (a cross-CPU interrupt) is charged to the API
    server, on the core it shares with the engine; a client fast enough to sleep between most
    chunks costs the server that on every chunk (docs/performance.md, "Waking the client").
    Busy passes do not nap, so capacity is untouched; a stamp can be late by at most one nap."""

    def __init__(self) -> None:
        self.queued: deque[tuple[_Connection, bytes, float]] = deque()
        self.parse_scheduled = False
        self.nap_s = 0.0  # 0: no nap, the loop blocks between reads
        self.streaming = 0  # exchanges begun and not yet finished on this loop
        self.napping = False  # the _nap callback is scheduled
        self.read_since_nap = False
        self.naps = 0  # over the loop's life: the tests read it to see the loop napped or not

    def add(self, conn: _Connection, data: bytes, stamp: float) -> None:
        self.read_since_nap = True
        if not self.parse_scheduled:
            self.parse_scheduled = True
            asyncio.get_running_loop().call_soon(self.parse)
        self.queued.append((conn, data, stamp))

    def exchange_began(self) -> None:
        self.streaming += 1
        if not self.napping and self.nap_s > 0:
            self.napping = True
            asyncio.get_running_loop().call_soon(self._nap)

    def exchange_ended(self) -> None:
        self.streaming -= 1

    def _nap(self) -> None:
        """Once per loop pass while streaming; being pending makes the next poll zero-timeout."""
        if self.streaming <= 0 or self.nap_s <= 0:
            self.napping = False  # nothing to read, or the nap turned off: the loop may block
            return
        if not self.read_since_nap:
            self.naps += 1
            time.sleep(self.nap_s)
        self.read_since_nap = False
        asyncio.get_running_loop().call_soon(self._nap)

    def parse(self) -> None:
        """One slice of the queue; the rest on the next loop pass, after its reads are stamped."""
        self.parse_scheduled = False
        queued = self.queued
        for _ in range(min(PARSE_SLICE, len(queued))):
            self._parse_one(*queued.popleft())
        if queued:
            self.parse_scheduled = True
            asyncio.get_running_loop().call_soon(self.parse)

    def drain(self) -> None:
        """Every queued read, now (a closing connection's last bytes must not wait)."""
        queued = self.queued
        while queued:
            self._parse_one(*queued.popleft())

    @staticmethod
    def _parse_one(conn: _Connection, data: bytes, stamp: float) -> None:
        try:
            conn._parse(data, stamp)
        except Exception as exc:  # noqa: BLE001 - a client bug ends that response, not the others
            conn.finish(f"client error while reading the response: {exc!r}")


_READS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Reads] = weakref.WeakKeyDictionary()


def _reads_for(loop: asyncio.AbstractEventLoop) -> _Reads:
    reads = _READS.get(loop)
    if reads is None:
        reads = _READS[loop] = _Reads()
    return reads


def nap_while_streaming(seconds: float) -> None:
    """From now on, on the running loop: while a response streams, a loop pass that found no
    read sleeps this long instead of blocking in epoll_wait (0: block, the default)."""
    if not seconds >= 0:
        raise ValueError(f"a nap is a number of seconds >= 0, got {seconds!r}")
    _reads_for(asyncio.get_running_loop()).nap_s = seconds


class _Connection(asyncio.Protocol):
    """One TCP connection, reading one response at a time (`begin` starts the next exchange);
    calls on_event(data, stamp) for each SSE `data:` line when sse."""

    def __init__(self, pool: Pool | None) -> None:
        loop = asyncio.get_running_loop()
        self.pool = pool
        self.reads = _reads_for(loop)
        self.received = False  # a byte arrived in this exchange
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = loop.create_future()  # set by connection_lost
        self.reused = False  # this exchange runs on a connection that served one before
        self.keep_alive = False  # the last response ended cleanly and allows another
        self.lost_before_response = False  # this exchange's connection went with no byte read
        self.done: asyncio.Future[None] = loop.create_future()
        self.done.set_result(None)  # no exchange yet: idle
        self.stall_handle: asyncio.TimerHandle | None = None

    def begin(
        self, result: HttpResult, on_event: OnEvent, sse: bool, stall_timeout_s: float
    ) -> None:
        """Start an exchange: reset the per-response state; the caller then writes the request."""
        loop = asyncio.get_running_loop()
        self.on_event = on_event
        self.sse = sse
        self.stall_timeout_s = stall_timeout_s
        self.parser = httptools.HttpResponseParser(self)
        self.result = result
        self.done = loop.create_future()
        self.keep_alive = self.lost_before_response = self.received = False
        self.stamp = 0.0  # the arrival stamp of the read being parsed
        self.last_data = time.monotonic()
        self.pending = b""  # an SSE line not yet ended by a newline
        self.body: list[bytes] = []
        self.body_size = 0
        self.stall_handle = loop.call_later(stall_timeout_s, self._check_stall)
        self.reads.exchange_began()

    def usable(self) -> bool:
        """Idle and open: can carry the next request."""
        return (
            self.done.done()
            and not self.closed.done()
            and self.transport is not None
            and not self.transport.is_closing()
        )

    # -- transport callbacks ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, so no isinstance here.
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("socket")
        if sock is not None:  # small writes and reads must not wait for Nagle's algorithm
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.last_data = stamp = time.monotonic()  # the arrival stamp, before any parsing
        self.received = True
        self.reads.add(self, data, stamp)

    def _parse(self, data: bytes, stamp: float) -> None:
        if self.done.done():
            # Bytes nobody asked for (on an idle keep-alive connection): the stream is out of
            # step, so the connection cannot carry another request.
            self._drop()
            return
        self.stamp = stamp
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
        if self.reads.queued:  # the response's last bytes may still be waiting to be parsed
            self.reads.drain()
        if not self.closed.done():
            self.closed.set_result(None)
        if self.pool is not None:
            self.pool._forget(self)
        if self.done.done():
            return
        # A reused connection the server closed while it was idle: the request never got an
        # answer, so post() may send it again on a new connection.
        self.lost_before_response = self.reused and not self.received
        status = self.result.status
        if status is not None and status != 200:
            excerpt = b"".join(self.body).decode("utf-8", "replace").strip()
            self.finish(f"HTTP {status}: {excerpt}")
        else:
            reason = f": {exc}" if exc else ""
            self.finish(f"connection closed before the response ended{reason}")

    # -- httptools callbacks --------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.done.done():  # a second response in one read: out of step, see data_received
            self._drop()
            raise StreamAbort("unexpected bytes after the response")

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
            # False for HTTP/1.0, `Connection: close`, or a body that ends only at EOF.
            self.keep_alive = self.parser.should_keep_alive()
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

    def _drop(self) -> None:
        """Abort the connection (unless already closing): it must never carry another request."""
        self.keep_alive = False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()

    def finish(self, error: str | None) -> None:
        """End the exchange. A clean response on a keep-alive connection leaves it open for
        post() to give back to the pool; anything else closes it (an error aborts it)."""
        if self.done.done():
            return
        self.result.error = error
        self.result.ended_at = time.monotonic()
        if self.stall_handle is not None:
            self.stall_handle.cancel()
        self.reads.exchange_ended()
        if error is not None:
            self._drop()
        elif not (self.keep_alive and self.pool is not None) and self.transport is not None:
            self.transport.close()
        self.done.set_result(None)


class Pool:
    """Keep-alive connections to one host:port, used from one event loop.

    A request takes the most recently used idle connection or opens a new one, so the pool never
    holds more connections than the most requests that were in flight at once. Connections the
    server closes while idle drop out by themselves (connection_lost). Call `close()` when done.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.opened = 0  # connections made over the pool's life
        self._idle: dict[_Connection, None] = {}  # insertion order: popitem() takes the newest
        self._open: set[_Connection] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False

    def _check_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif loop is not self._loop:
            raise RuntimeError("a connection pool belongs to the event loop that first used it")

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            conn, _ = self._idle.popitem()
            if conn.usable():
                conn.reused = True
                return conn
        return None

    def _give_back(self, conn: _Connection) -> None:
        if self._closing or not conn.keep_alive or not conn.usable():
            conn._drop()
        else:
            self._idle[conn] = None

    def _forget(self, conn: _Connection) -> None:
        self._idle.pop(conn, None)
        self._open.discard(conn)

    @property
    def idle(self) -> int:
        return len(self._idle)

    @property
    def open(self) -> int:
        return len(self._open)

    async def close(self) -> None:
        """Close every connection (idle ones gracefully, busy ones aborted) and wait until their
        sockets are gone, so nothing leaks past the event loop's end."""
        self._closing = True
        conns = list(self._open)
        for conn in conns:
            if conn.transport is None:
                continue
            if conn.done.done():
                conn.transport.close()
            else:
                conn.finish("connection pool closed")
        self._idle.clear()
        waiting = [conn.closed for conn in conns if not conn.closed.done()]
        if waiting:
            await asyncio.wait(waiting, timeout=POOL_CLOSE_WAIT_S)


_TLS: ssl.SSLContext | None = None


def _tls_context() -> ssl.SSLContext:
    """One verifying client context for every https connection (building one reads the CA
    store: milliseconds, too slow for each request of a burst)."""
    global _TLS
    if _TLS is None:
        _TLS = ssl.create_default_context()
    return _TLS


async def _connect(url: Url, pool: Pool | None, timeout_s: float) -> _Connection | str:
    """A new connection, or the error message saying why there is none."""
    conn = _Connection(pool)
    tls = _tls_context() if url.tls else None
    try:
        async with asyncio.timeout(timeout_s):
            await asyncio.get_running_loop().create_connection(
                lambda: conn, url.host, url.port, ssl=tls
            )
    except TimeoutError:
        return f"connect to {url.host}:{url.port} timed out"
    except OSError as exc:  # ssl.SSLError is an OSError: a certificate refused says so
        return f"cannot connect to {url.host}:{url.port}: {exc}"
    if pool is not None:
        pool.opened += 1
        pool._open.add(conn)
    return conn


async def post(
    url: Url,
    body: bytes,
    on_event: OnEvent,
    *,
    sse: bool,
    stall_timeout_s: float,
    request_timeout_s: float,
    pool: Pool | None = None,
    headers: Mapping[str, str] | None = None,
) -> HttpResult:
    """POST body to url and read the response; never raises for network or server faults.

    Failures come back as HttpResult.error: refused or hung connection, non-200 status, malformed
    HTTP, a stream with no bytes for stall_timeout_s, or request_timeout_s overall. A
    CancelledError propagates (after the socket is aborted) so the caller can record it.

    With a pool (for url's host:port) the request reuses an idle keep-alive connection when there
    is one. A reused connection that closes before any response byte arrived was most likely
    closed by the server while idle, so the request goes once more on a new connection; it is
    never sent again once response bytes have arrived.

    headers are sent with the request (an attached server's credentials); request_bytes
    refuses one that could inject a header, with ValueError before anything is sent.
    """
    if pool is not None:
        if (pool.host, pool.port) != (url.host, url.port):
            raise ValueError(f"pool is for {pool.host}:{pool.port}, not {url.host}:{url.port}")
        pool._check_loop()
    sent_at = time.monotonic()
    request = request_bytes(url, body, keep_alive=pool is not None, headers=headers)
    connect_timeout_s = min(stall_timeout_s, request_timeout_s)
    conn: _Connection | None = None
    result = HttpResult(sent_at=sent_at)
    try:
        async with asyncio.timeout(request_timeout_s):
            for retry in (False, True):
                conn = pool._take_idle() if pool is not None and not retry else None
                if conn is None:
                    made = await _connect(url, pool, connect_timeout_s)
                    if isinstance(made, str):
                        result.error, result.ended_at = made, time.monotonic()
                        return result
                    conn = made
                result.connect_s = time.monotonic() - sent_at
                result.reused = conn.reused
                conn.begin(result, on_event, sse, stall_timeout_s)
                assert conn.transport is not None
                conn.transport.write(request)
                # shield: a timeout or cancel must not cancel `done` itself, or finish() (which
                # records the error and closes the socket) would think the response had ended.
                await asyncio.shield(conn.done)
                if not conn.lost_before_response:
                    break
                result = HttpResult(sent_at=sent_at)  # the stale connection's try is forgotten
    except TimeoutError:
        if conn is not None and not conn.done.done():
            conn.finish(f"request timed out after {request_timeout_s:g} s")
        else:  # timed out while connecting the retry
            result.error = f"request timed out after {request_timeout_s:g} s"
            result.ended_at = time.monotonic()
    finally:
        if conn is not None and not conn.done.done():  # cancelled: abort; the caller records it
            conn.finish("cancelled")
    if pool is not None and conn is not None and result.error is None:
        pool._give_back(conn)
    return result
