"""Secrets at rest: an endpoint's API key and extra headers, encrypted with a key from SECRET_KEY.

The database holds only Fernet tokens (AES-128-CBC with an HMAC-SHA256 tag), so a dump, a
backup or a query console shows no key. The encryption key is derived from Django's SECRET_KEY
with HKDF under this module's own purpose label, so it is never the signing key itself; the web
and the node's workers share SECRET_KEY already (sessions, the workers read the same settings).
Rotating SECRET_KEY makes stored secrets unreadable: `decrypt` then raises SecretUnreadable and
the endpoint's secrets must be entered again (the run says so; nothing is sent without them).
"""

from __future__ import annotations

import base64
import json

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

PURPOSE = b"headroom endpoint secrets v1"


class SecretUnreadable(Exception):
    """A stored secret could not be decrypted: SECRET_KEY changed since it was stored."""


def _fernet() -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=PURPOSE).derive(
        settings.SECRET_KEY.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))


def encrypt(text: str) -> str:
    """The Fernet token for text; '' for '' (no secret stored)."""
    return _fernet().encrypt(text.encode()).decode() if text else ""


def decrypt(token: str) -> str:
    """The text a token holds; '' for ''. SecretUnreadable when it cannot be read."""
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            "a stored secret cannot be decrypted (SECRET_KEY changed since it was stored): "
            "enter the endpoint's API key and headers again"
        ) from None


def encrypt_headers(headers: dict[str, str]) -> str:
    return encrypt(json.dumps(headers, sort_keys=True)) if headers else ""


def decrypt_headers(token: str) -> dict[str, str]:
    text = decrypt(token)
    return dict(json.loads(text)) if text else {}
