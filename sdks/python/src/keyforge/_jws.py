"""Compact JWS with EdDSA (Ed25519) only: what the offline tokens, license files and deactivation proofs use."""
from __future__ import annotations

import json
from typing import Any, Callable, Dict, Tuple

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ._b64 import b64url_decode, b64url_encode
from ._http import loads
from .errors import VerificationError

__all__ = ["verify_compact", "sign_compact", "decode_payload"]

_MAX_TOKEN_CHARS = 16384


def _invalid(reason: str) -> VerificationError:
    return VerificationError("TokenInvalid", f"The token is not valid ({reason}): tampered, or not signed by a trusted key.")


def _object(segment: str, what: str) -> Dict[str, Any]:
    try:
        value = loads(b64url_decode(segment).decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise _invalid(f"its {what} is not JSON") from None
    if not isinstance(value, dict):
        raise _invalid(f"its {what} is not a JSON object")
    return value


def decode_payload(token: str) -> Dict[str, Any]:
    """The claims of a compact JWS, NOT verified (to pick what to verify it against)."""
    if not isinstance(token, str) or len(token) > _MAX_TOKEN_CHARS:
        raise _invalid("not a compact JWS")
    parts = token.split(".")
    if len(parts) != 3:
        raise _invalid("not a compact JWS")
    return _object(parts[1], "payload")


def verify_compact(token: str, key_for: Callable[[Any], Ed25519PublicKey]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(header, payload) of a compact JWS whose ``alg`` is EdDSA and whose signature verifies under ``key_for(kid)``.

    Refuses with ``TokenInvalid`` anything else (another algorithm, ``none``, a ``crit`` header, a bad signature);
    ``key_for`` raises ``KeyUnknown`` for a key it does not trust.
    """
    if not isinstance(token, str) or len(token) > _MAX_TOKEN_CHARS:
        raise _invalid("not a compact JWS")
    parts = token.split(".")
    if len(parts) != 3:
        raise _invalid("not a compact JWS")
    header = _object(parts[0], "header")
    if header.get("alg") != "EdDSA":
        raise _invalid(f"algorithm {header.get('alg')!r} is not allowed, only EdDSA")
    if "crit" in header or header.get("b64", True) is not True:
        raise _invalid("unsupported critical header")
    key = key_for(header.get("kid"))
    try:
        signature = b64url_decode(parts[2])
    except ValueError:
        raise _invalid("its signature is not base64url") from None
    try:
        key.verify(signature, f"{parts[0]}.{parts[1]}".encode("ascii"))
    except InvalidSignature:
        raise _invalid("signature verification failed") from None
    except (ValueError, UnicodeEncodeError):
        raise _invalid("signature verification failed") from None
    return header, _object(parts[1], "payload")


def sign_compact(private_key: Ed25519PrivateKey, header: Dict[str, Any], payload: Dict[str, Any]) -> str:
    """A compact JWS (the JSON serialised as JavaScript's ``JSON.stringify`` does)."""
    encoded_header = b64url_encode(json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    encoded_payload = b64url_encode(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    signature = private_key.sign(f"{encoded_header}.{encoded_payload}".encode("ascii"))
    return f"{encoded_header}.{encoded_payload}.{b64url_encode(signature)}"


