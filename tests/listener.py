"""A plain HTTP server on a loopback address that keeps every request's path and headers.

It stands in for a server someone points an endpoint at: one of their own that would collect
whatever the dashboard sends, or one that answers with a redirect elsewhere. It answers what
"check now" asks as a vLLM server would (/health, /version, /v1/models), or, with `redirect_to`,
every request with a 302 there. It runs in a background thread (the standard library's threading
server), on 127.0.0.1 unless told another loopback address.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWERS = {
    "/health": (200, ""),
    "/version": (200, json.dumps({"version": "0.0-listener"})),
    "/v1/models": (200, json.dumps({"data": [{"id": "fake-model", "object": "model"}]})),
}


class Listener:
    def __init__(self, host: str = "127.0.0.1", redirect_to: str | None = None) -> None:
        self.redirect_to = redirect_to
        self.requests: list[tuple[str, dict[str, str]]] = []  # (path, headers) per request
        self._server = ThreadingHTTPServer((host, 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.base_url = f"http://{host}:{self._server.server_address[1]}"

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def headers_seen(self) -> str:
        """Every header of every request, as one text to search for a secret."""
        return "\n".join(f"{name}: {value}" for _, headers in self.requests
                         for name, value in headers.items())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                listener.requests.append((self.path, dict(self.headers.items())))
                if listener.redirect_to is not None:
                    self.send_response(302)
                    self.send_header("Location", listener.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status, body = ANSWERS.get(self.path, (404, "not here"))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the test reads `requests`, not stderr

        return Handler
