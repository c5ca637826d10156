"""What the runner needs to talk to a server someone else runs: its address and its credentials.

A registered endpoint may want an API key (`Authorization: Bearer KEY`) and extra headers (a
gateway's tenant header, say). They are secrets, so they never enter the SweepPlan, which is
stored, shown and downloadable: they travel beside it as a `Credentials` object, held only in
the worker's memory, and every HTTP call to an attached server sends them (the load, /metrics,
/tokenize, /health, /version, /v1/models).

Header names and values are checked here once, for every caller: a CR or LF inside either would
let whoever typed them add headers or a whole second request to what the client writes on the
socket (header injection), and a header that frames the request (Content-Length, Host, ...) would
break the exchange the load generator times.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

# RFC 9110 token characters: what a header field name may be made of.
HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
# Visible ASCII with inner spaces or tabs: no CR, LF, NUL or other control character.
HEADER_VALUE = re.compile(r"^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$")
# Headers the client itself writes to frame each request; another value would break it.
FRAMING_HEADERS = frozenset({
    "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te",
    "trailer", "expect", "content-type", "accept", "proxy-connection",
})


def check_header(name: str, value: str) -> None:
    """ValueError when the header cannot be sent as it is. The message names the header, never
    its value: a value is usually a secret."""
    if not HEADER_NAME.match(name):
        raise ValueError(f"header name {name!r} is not an HTTP token (letters, digits and "
                         "!#$%&'*+-.^_`|~ only; no spaces, colons or line breaks)")
    if name.lower() in FRAMING_HEADERS:
        raise ValueError(f"header {name} is set by the client itself and cannot be replaced")
    if not HEADER_VALUE.match(value):
        raise ValueError(f"the value of header {name} must be printable ASCII on one line "
                         "(no line breaks or control characters) and not blank")


@dataclass(frozen=True)
class Credentials:
    """An API key and extra headers for one attached server; empty for an engine we started.

    repr() names what is set and never a value, so a traceback, a log line or a debugger shows
    no secret.
    """

    api_key: str = field(default="", repr=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if self.api_key and not HEADER_VALUE.match(self.api_key):
            raise ValueError("the API key must be printable ASCII on one line (no line breaks "
                             "or control characters)")
        names = [name.lower() for name, _ in self.headers]
        if len(set(names)) != len(names):
            raise ValueError("each extra header once")
        if self.api_key and "authorization" in names:
            raise ValueError("an API key is sent as the Authorization header: give one or the "
                             "other")
        for name, value in self.headers:
            check_header(name, value)

    @classmethod
    def of(cls, api_key: str = "", headers: Mapping[str, str] | None = None) -> Credentials:
        return cls(api_key=api_key, headers=tuple(sorted((headers or {}).items())))

    def http_headers(self) -> dict[str, str]:
        """Every header to send: the extra ones, then the key as a bearer token."""
        sent = dict(self.headers)
        if self.api_key:
            sent["Authorization"] = f"Bearer {self.api_key}"
        return sent

    def secrets(self) -> list[str]:
        """The values that must never be written anywhere (for redacting messages)."""
        return [value for value in (self.api_key, *(v for _, v in self.headers)) if value]

    def __bool__(self) -> bool:
        return bool(self.api_key or self.headers)

    def __repr__(self) -> str:
        names = ", ".join(name for name, _ in self.headers) or "none"
        return f"Credentials(api_key={'set' if self.api_key else 'none'}, headers={names})"


NO_CREDENTIALS = Credentials()


def redact(text: str, credentials: Credentials) -> str:
    """text with every secret of credentials replaced by [secret]."""
    for secret in sorted(credentials.secrets(), key=len, reverse=True):
        text = text.replace(secret, "[secret]")
    return text


def normalize_base_url(text: str) -> str:
    """A server's base URL as the runner uses it, or ValueError saying what is wrong.

    http or https, a host, an optional port and path prefix; no user:password@ (credentials
    go in their own fields, never in an address that is shown and stored in plans), no query or
    fragment. A trailing / and /v1 are dropped: the runner adds /v1/... itself, and /health and
    /metrics live beside /v1, not under it.
    """
    url = text.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError("the base URL starts with http:// or https://")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ValueError("no user:password@ in the base URL: give an API key or a header instead")
    if not parts.hostname:
        raise ValueError("the base URL names a host, e.g. http://10.0.0.5:8000")
    try:
        parts.port  # noqa: B018 - urlsplit checks the port only when it is read
    except ValueError:
        raise ValueError("the port of the base URL is not a number from 0 to 65535") from None
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise ValueError("the base URL has no ?query or #fragment")
    if re.search(r"\s", url):
        raise ValueError("the base URL has no spaces")
    path = parts.path.rstrip("/")
    path = path.removesuffix("/v1").rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{path}"


DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(base_url: str) -> str:
    """scheme://host:port of a base URL, the default port written out: the server it reaches
    (a different path may be another route of the same server or gateway)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    return f"{parts.scheme}://{f'[{host}]' if ':' in host else host}:{port}"
