"""The client address that login throttling (django-axes) counts failures against."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str | None:
    """The address the TLS proxy reports (HEADROOM_CLIENT_IP_HEADER), else the peer's address.

    Without a proxy the peer is the client. Behind one, REMOTE_ADDR is the proxy for everybody,
    which would make the per-address part of the lockout meaningless; the proxy's header, which
    it overwrites on every request, names the real client.
    """
    key = settings.HEADROOM_CLIENT_IP_META_KEY
    return (key and request.META.get(key)) or request.META.get("REMOTE_ADDR")
