"""One answer from a server Headroom does not control, read within a size and a total time.

Every request to an endpoint (/health, /version, /v1/models, /tokenize and /metrics of an engine
or an attached server, a quality set's questions, a dcgm-exporter page) goes through
read_bounded, from the worker and from the dashboard's "check now" alike. httpx's timeouts are
per phase and per socket read: a server that sends a byte a second never trips a 5 s read
timeout, and a 300 MB page is read whole into memory. So here:

- the body is read as a stream and refused once it passes max_bytes (a Content-Length over it
  before any of it is read);
- every connect, socket read and write of the request, headers included, gets only what is left
  of total_s (DeadlineTransport), so a server that drips is cut off at the deadline.

AnswerTooLarge and AnswerTooSlow say which bound stopped the answer; both are httpx.RequestErrors,
so a caller that treats any failed request alike still does. (A request an environment proxy
carries goes through httpx's proxy transport instead: its body is still held to both bounds,
its socket waits only to httpx's own timeouts.)
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

KB = 1024
MB = 1024 * KB
# vLLM 0.32's whole /metrics page is about 60 KB for one engine and grows by about that much per
# data-parallel engine; dcgm-exporter's is a few KB per GPU. 4 MB holds over 60 such engines and
# parses in well under a second (prometheus_client: about 10 times its size in memory).
METRICS_MAX_BYTES = 4 * MB
# /health, /version and /v1/models answer a few hundred bytes; a /v1/models listing a thousand
# LoRA adapters is about 300 KB.
API_MAX_BYTES = 1 * MB
# A /tokenize answer lists a prompt's token ids, about 7 bytes each: a 128k-token prompt is under
# 1 MB. A quality answer is one non-streamed completion of a few hundred tokens.
TOKENIZE_MAX_BYTES = 4 * MB
COMPLETION_MAX_BYTES = 4 * MB

# A socket wait cut to the deadline may end a clock tick before it: such a timeout is the
# deadline's.
DEADLINE_SLACK_S = 0.01
# When the answer being read must be complete (time.monotonic()); None: no read_bounded call.
_DEADLINE: ContextVar[float | None] = ContextVar("answer_deadline", default=None)


class AnswerOverBound(httpx.RequestError):
    """An answer stopped by one of read_bounded's bounds; the message says which."""


class AnswerTooLarge(AnswerOverBound):
    pass


class AnswerTooSlow(AnswerOverBound):
    pass


@dataclass(frozen=True)
class Answer:
    """A response read whole within the bounds."""

    status_code: int
    body: bytes
    encoding: str  # the Content-Type's charset, else UTF-8

    @property
    def text(self) -> str:
        return self.body.decode(self.encoding, errors="replace")

    def json(self) -> Any:
        """The body as JSON; ValueError if it is not."""
        return json.loads(self.body)


def read_bounded(
    client: httpx.Client, url: str, *, max_bytes: int, total_s: float,
    json_body: Any = None,
) -> Answer:
    """GET url (relative to the client's base_url, if it has one), or POST json_body to it when
    one is given, and read the answer whole.

    AnswerTooLarge past max_bytes, AnswerTooSlow when the body has not all come within total_s;
    no answer by then is httpx's timeout, as a silent server's is. Every connect and socket
    read is held to the deadline only when the client's transport is a DeadlineTransport;
    otherwise the body is still checked between its chunks.
    """
    deadline = time.monotonic() + total_s
    token = _DEADLINE.set(deadline)
    try:
        method = "GET" if json_body is None else "POST"
        with client.stream(method, url, json=json_body) as response:
            return _read_body(response, max_bytes, total_s, deadline)
    finally:
        _DEADLINE.reset(token)


def _read_body(
    response: httpx.Response, max_bytes: int, total_s: float, deadline: float
) -> Answer:
    what = f"{response.request.method} {response.request.url.path}"
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(what, max_bytes, response.request)
    body = bytearray()
    try:
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > max_bytes:
                raise _too_large(what, max_bytes, response.request)
            if time.monotonic() > deadline:
                raise _too_slow(what, total_s, len(body), response.request)
    except httpx.TimeoutException:
        if deadline - time.monotonic() > DEADLINE_SLACK_S:
            raise  # the server fell silent for a whole read timeout
        raise _too_slow(what, total_s, len(body), response.request) from None
    return Answer(response.status_code, bytes(body), response.encoding or "utf-8")


def _too_large(what: str, max_bytes: int, request: httpx.Request) -> AnswerTooLarge:
    return AnswerTooLarge(
        f"the answer to {what} is over {_size(max_bytes)}, the most read from one answer",
        request=request,
    )


def _too_slow(what: str, total_s: float, received: int, request: httpx.Request) -> AnswerTooSlow:
    return AnswerTooSlow(
        f"the answer to {what} did not arrive in full within {total_s:g} s, the longest one "
        f"answer may take ({_size(received)} by then)",
        request=request,
    )


def _size(count: int) -> str:
    if count >= MB:
        return f"{count / MB:.1f} MB"
    return f"{count / KB:.0f} KB" if count >= KB else f"{count} bytes"


# ---------------------------------------------------------------------------------------------
# Every socket operation held to the deadline
# ---------------------------------------------------------------------------------------------


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's transport, each of whose connects, socket reads and writes ends by the deadline
    of the read_bounded call it serves (outside one, it is httpx's own)."""

    def __init__(self) -> None:
        super().__init__()
        # httpx takes no network backend of its own; the httpcore pool under it does.
        pool = self._pool
        pool._network_backend = _DeadlineBackend(pool._network_backend)


def _left(timeout: float | None, expired: type[httpcore.TimeoutException]) -> float | None:
    """timeout, cut to what is left before the deadline; `expired` raised once none is left."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the deadline for the whole answer has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        )

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)
