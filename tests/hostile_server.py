"""A server that answers as a broken or hostile endpoint would, for the reads that must stay
bounded (runner.engine.bounded_read): a page too large, a body or headers sent a byte at a
time. It listens on 127.0.0.1 in a background thread (the standard library's threading server,
as tests/listener.py does) and answers each path with the answer given for it, else a plain
vLLM's: /health 200, /version and /v1/models as tests/listener.py answers them.

An answer is a function of the request handler that writes the whole response itself, so the
status line and headers can be sent slowly too; the server closes each connection after it. A drip stops after `seconds`, so a reader that
does not stop it returns late instead of never.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from tests.listener import ANSWERS

Answer = Callable[[BaseHTTPRequestHandler], None]


def page(body: bytes, status: int = 200) -> Answer:
    """The body at once, its length declared."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(
            f"HTTP/1.1 {status} OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode() + body
        )

    return answer


def endless(line: bytes) -> Answer:
    """`line` again and again, no length declared, until the reader hangs up."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")
        block = line * max(1, 65536 // len(line))
        while True:
            handler.wfile.write(block)

    return answer


def declared(size: int) -> Answer:
    """A Content-Length of `size`, and a body far shorter: a reader that trusts it waits."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n".encode())

    return answer


def drip_body(every_s: float, seconds: float) -> Answer:
    """Headers at once, then the declared body a byte every `every_s` for `seconds`."""
    count = int(seconds / every_s)

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(f"HTTP/1.1 200 OK\r\nContent-Length: {count}\r\n\r\n".encode())
        for _ in range(count):
            handler.wfile.write(b"#")
            time.sleep(every_s)

    return answer


def drip_headers(every_s: float, seconds: float) -> Answer:
    """The status line, then a header a byte every `every_s` for `seconds`, then the end."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        for _ in range(int(seconds / every_s)):
            handler.wfile.write(b"a")
            time.sleep(every_s)
        handler.wfile.write(b"\r\nContent-Length: 0\r\n\r\n")

    return answer


class HostileServer:
    """`answers` maps a path (its query ignored) to its answer."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.paths: list[str] = []  # every request's path, in order
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                server.paths.append(path)
                self.close_connection = True
                try:
                    if path in server.answers:
                        server.answers[path](self)
                    else:
                        status, body = ANSWERS.get(path, (404, "not here"))
                        page(body.encode(), status)(self)
                except OSError:
                    pass  # the reader hung up: what a bounded reader does

            def do_POST(self) -> None:
                # The request's body is read first, as a server does, then answered as a GET.
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.do_GET()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
