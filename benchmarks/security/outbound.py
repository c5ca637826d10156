"""Where the dashboard may send requests: the networks of HEADROOM_OUTBOUND_NETWORKS.

People with catalog rights type addresses (an endpoint's base URL, a node's dcgm-exporter) and
"check now" requests one from the web host. Unchecked, anyone who may edit an endpoint could make
the web host request what only it can reach: its own loopback services, the cloud metadata
address (169.254.169.254), the networks behind it. So:

- an address typed as a number, in any spelling the resolver reads (127.1, 2130706433,
  [::ffff:127.0.0.1]), or a localhost name, is judged when the form is saved; other names only
  when a connection is made, since a node's worker may resolve names the web host cannot;
- each connection the dashboard opens resolves the host once, judges every address, and
  connects to the address it judged: a second lookup could answer otherwise (DNS rebinding);
- a redirect is never followed: it would be another address, and the extra headers would go
  along.

Every refusal, and every failure to get an answer at all, is the one UNREACHABLE message, so the
check cannot tell a closed port from a filtered one or from an address it may not use.
"""

from __future__ import annotations

import ipaddress
import socket
from functools import lru_cache
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from runner.engine.bounded_read import DeadlineTransport
from runner.engine.endpoint import DEFAULT_PORTS

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

UNREACHABLE = (
    "the dashboard cannot reach this address: nothing answered there, or it is outside the "
    "networks the dashboard may send requests to (HEADROOM_OUTBOUND_NETWORKS)"
)

# Public by ipaddress's reading, yet they carry an IPv4 address that a gateway would forward
# to (NAT64, 6to4), private ones included: named, never "public".
EMBEDDED_IPV4 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("2002::/16"))


class Refused(httpx.ConnectError):
    """A connection the dashboard does not make: outside the allowed networks, a name that does
    not resolve, or a redirect."""


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[bool, tuple[Network, ...]]:
    named = tuple(ipaddress.ip_network(entry) for entry in entries if entry != "public")
    return "public" in entries, named


def _public(address: Address) -> bool:
    return (address.is_global and not address.is_multicast
            and not any(address in network for network in EMBEDDED_IPV4))


def allowed(address: Address) -> bool:
    """Whether the dashboard may connect to address under HEADROOM_OUTBOUND_NETWORKS."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1 on the wire
    public, named = _networks(tuple(settings.HEADROOM_OUTBOUND_NETWORKS))
    return (public and _public(address)) or any(address in network for network in named)


def _typed_address(host: str) -> Address | None:
    """The address a host stands for without asking DNS: a number in any spelling the system
    resolver reads (AI_NUMERICHOST never sends a query), or loopback for a localhost name
    (RFC 6761); None for any other name."""
    host = host.removesuffix(".")
    if host == "localhost" or host.endswith(".localhost"):
        return ipaddress.ip_address("127.0.0.1")
    try:
        infos = socket.getaddrinfo(host, None, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        return None
    return ipaddress.ip_address(infos[0][4][0])


def check_typed(url: str) -> None:
    """ValueError(UNREACHABLE) when url's host is written as an address the dashboard may not
    use. A host name passes: it is judged by its addresses when a connection is made."""
    address = _typed_address(urlsplit(url).hostname or "")
    if address is not None and not allowed(address):
        raise ValueError(UNREACHABLE)


def resolve(host: str, port: int) -> list[Address]:
    """Every address host stands for, as the system resolver answers now (a number: itself)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0]) for info in infos]


class GuardedTransport(httpx.BaseTransport):
    """httpx's transport, connecting only to allowed addresses, at the address it judged.

    The request goes to that address with the URL's own Host header and TLS server name, so a
    certificate is still checked against the name. `inner` is httpx's transport held to
    read_bounded's deadline (runner.engine.bounded_read) unless a test gives another.
    """

    def __init__(self, inner: httpx.BaseTransport | None = None) -> None:
        self._inner = inner or DeadlineTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.raw_host.decode("ascii")
        port = request.url.port or DEFAULT_PORTS[request.url.scheme]
        try:
            addresses = resolve(host, port)
        except (OSError, UnicodeError):
            raise Refused(UNREACHABLE, request=request) from None
        if not addresses or not all(allowed(address) for address in addresses):
            raise Refused(UNREACHABLE, request=request)
        pinned = httpx.Request(
            request.method,
            request.url.copy_with(host=str(addresses[0])),
            headers=request.headers,  # Host: the name, as the request was built
            stream=request.stream,
            extensions={**request.extensions, "sni_hostname": host},
        )
        response = self._inner.handle_request(pinned)
        if response.is_redirect:
            response.close()
            raise Refused(UNREACHABLE, request=request)
        return response

    def close(self) -> None:
        self._inner.close()
