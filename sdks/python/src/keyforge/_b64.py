"""Base64 as the browsers' ``atob``/``btoa`` and JOSE's base64url read and write it."""
from __future__ import annotations

import base64
import binascii
import re

_STANDARD = re.compile(r"[A-Za-z0-9+/]*")
_URL = re.compile(r"[A-Za-z0-9_-]*")


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Strict base64url without padding (as JOSE): anything else raises ValueError."""
    if not isinstance(text, str) or not _URL.fullmatch(text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as error:
        raise ValueError("not base64url") from error


def atob(text: str) -> bytes:
    """Decodes as the WHATWG ``atob`` does (padding optional, spare bits ignored); ValueError otherwise."""
    if len(text) % 4 == 0:
        if text.endswith("=="):
            text = text[:-2]
        elif text.endswith("="):
            text = text[:-1]
    if len(text) % 4 == 1 or not _STANDARD.fullmatch(text):
        raise ValueError("not base64")
    try:
        return binascii.a2b_base64(text + "=" * (-len(text) % 4))
    except binascii.Error as error:
        raise ValueError("not base64") from error


def loose_b64url_decode(text: str) -> bytes:
    """base64 or base64url, padding optional (the license file envelope's fields, read as the TypeScript SDK does)."""
    return atob(text.replace("-", "+").replace("_", "/"))
