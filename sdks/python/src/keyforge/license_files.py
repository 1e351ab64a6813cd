"""The text formats of signed license files, activation requests and deactivation proofs.

docs/integrate/license-files.md ("Formats") describes each byte; the server reads and writes the same.
"""
from __future__ import annotations

import base64
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from ._b64 import atob, b64url_decode, b64url_encode, loose_b64url_decode
from ._http import loads
from ._jws import sign_compact
from .errors import VerificationError

__all__ = [
    "COMPACT_REQUEST_PREFIX",
    "LICENSE_FILE_KIND",
    "DEACTIVATION_KIND",
    "armor",
    "unarmor",
    "open_license_file",
    "normalize_key",
    "key_hint",
    "request_mac",
    "DeviceKey",
]

#: The one-line form of an activation request (for a QR code): this prefix, then base64url of the same JSON.
COMPACT_REQUEST_PREFIX = "KFREQ1:"
MAX_ARMORED_CHARS = 16384
FILE_KEY_INFO = "keyforge license file v1"
REQUEST_MAC_INFO = "keyforge activation request v1"
DEACTIVATION_KIND = "keyforge-deactivation"
LICENSE_FILE_KIND = "license-file"

# JavaScript's \s (white space and line terminators): the readers accept what the TypeScript SDK accepts.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680" + "".join(chr(code) for code in range(0x2000, 0x200B)) + "\u2028\u2029\u202f\u205f\u3000\ufeff"
_WHITE = re.compile(f"[{re.escape(_JS_SPACE)}]+")
_QUOTES = re.compile("(?:^|(?<=[\n\r\u2028\u2029]))[ \t]*(?:>[ \t]*)+")
_BODY = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def js_json(value: Any) -> str:
    """JSON as JavaScript's ``JSON.stringify`` writes it (no spaces, non-ASCII as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_KEYFORGE_KEY = re.compile(r"[A-Z][A-Z0-9]{1,11}(?:-[ABCDEFGHJKMNPQRSTVWXYZ23456789]{4}){4}")
_WHITE_AROUND = re.compile(f"^[{re.escape(_JS_SPACE)}]+|[{re.escape(_JS_SPACE)}]+\\Z")


def is_keyforge_key(key: str) -> bool:
    """Whether a key (as ``normalize_key`` gives it) is in Keyforge's own format, rather than imported from another service."""
    return _KEYFORGE_KEY.fullmatch(key) is not None


def normalize_key(license_key: str) -> str:
    """A license key as the server compares it: a Keyforge key without its white space, upper-cased; any other key
    (one imported from another licensing service) exactly as given, only the white space around it trimmed."""
    keyforge = _WHITE.sub("", license_key).upper()
    if is_keyforge_key(keyforge):
        return keyforge
    return _WHITE_AROUND.sub("", license_key)


def _damaged(message: str) -> VerificationError:
    return VerificationError("TokenInvalid", message)


def armor(label: str, text: str) -> str:
    """``-----BEGIN KEYFORGE <label>-----``, base64 in lines of 64, the END line."""
    body = base64.b64encode(text.encode("utf-8")).decode("ascii")
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN KEYFORGE {label}-----\n{lines}\n-----END KEYFORGE {label}-----\n"


def unarmor(label: str, text: Any) -> str:
    """The text armored under ``label`` (white space, mail quote markers and surrounding text ignored)."""
    what = label.lower()
    if not isinstance(text, str) or len(text) > MAX_ARMORED_CHARS:
        raise _damaged(f"This is not a {what}.")
    trimmed = text.strip(_JS_SPACE)
    try:
        if label == "ACTIVATION REQUEST" and trimmed.startswith(COMPACT_REQUEST_PREFIX):
            return loose_b64url_decode(trimmed[len(COMPACT_REQUEST_PREFIX) :]).decode("utf-8")
        begin = f"-----BEGIN KEYFORGE {label}-----"
        start = text.find(begin)
        end = -1 if start < 0 else text.find(f"-----END KEYFORGE {label}-----", start)
        if start < 0 or end < 0:
            raise _damaged(f"This is not a whole {what}: its BEGIN and END lines must both be there.")
        body = _WHITE.sub("", _QUOTES.sub("", text[start + len(begin) : end]))
        if not _BODY.fullmatch(body):
            raise _damaged(f"The {what} is damaged: copy it again whole.")
        return atob(body).decode("utf-8")
    except VerificationError:
        raise
    except (ValueError, UnicodeDecodeError):
        raise _damaged(f"The {what} is damaged: copy it again whole.") from None


def json_object(text: str, what: str) -> Dict[str, Any]:
    try:
        parsed = loads(text)
    except (ValueError, RecursionError):
        raise _damaged(f"The {what} is damaged: its content is not readable.") from None
    if not isinstance(parsed, dict):
        raise _damaged(f"The {what} is damaged: its content is not readable.")
    return parsed


def _hkdf(license_key: str, salt: bytes, info: str) -> bytes:
    # cryptography's HKDF treats an empty salt as None: a string of zeros of the hash length, as RFC 5869 and WebCrypto do.
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt or None, info=info.encode("utf-8")).derive(normalize_key(license_key).encode("utf-8"))


def _is_one(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 1


def open_license_file(text: Any, license_key: Optional[str] = None, device_id: Optional[str] = None) -> str:
    """The signed token inside a license file: as is, or decrypted (AES-256-GCM under HKDF-SHA256 of the license
    key and, for a device file, the device id). Raises ``TokenInvalid`` (or ``WrongDevice`` for a device file
    opened without a device id)."""
    envelope = json_object(unarmor("LICENSE FILE", text), "license file")
    if not _is_one(envelope.get("v")):
        raise _damaged("This license file is of an unknown version: update the SDK.")
    if "enc" in envelope and envelope["enc"] is None and isinstance(envelope.get("token"), str):
        return str(envelope["token"])
    salt, iv, ct = envelope.get("salt"), envelope.get("iv"), envelope.get("ct")
    if envelope.get("enc") != "A256GCM" or not isinstance(salt, str) or not isinstance(iv, str) or not isinstance(ct, str):
        raise _damaged("The license file is damaged.")
    if not license_key:
        raise _damaged("This license file is encrypted: pass the license_key that opens it.")
    for_device = envelope.get("device") is True
    if for_device and not device_id:
        raise VerificationError("WrongDevice", "This license file is encrypted for one device: pass its device_id.")
    info = f"{FILE_KEY_INFO}\n{device_id}" if for_device else FILE_KEY_INFO
    try:
        key = _hkdf(license_key, loose_b64url_decode(salt), info)
        nonce = loose_b64url_decode(iv)
        if not nonce:
            raise ValueError("empty iv")
        plain = AESGCM(key).decrypt(nonce, loose_b64url_decode(ct), FILE_KEY_INFO.encode("utf-8"))
        return plain.decode("utf-8")
    except (InvalidTag, ValueError, UnicodeDecodeError, OverflowError):
        raise _damaged(
            "The license file does not open with this license key"
            + (" and device" if for_device else "")
            + ": another license or device, or the file was altered."
        ) from None


def key_hint(license_key: str) -> str:
    """The license key's public hint (``ACME-…-WZ3P``), as the server shows it: which license, not the key."""
    key = normalize_key(license_key)
    if not is_keyforge_key(key):
        # An imported key: its first and last 4 characters from 16 on, its last 2 below (length in UTF-16 units, as the server counts).
        return f"{key[:4]}…{key[-4:]}" if len(key) >= 16 else f"…{key[-2:]}"
    parts = key.split("-")
    return f"{parts[0]}-…-{parts[-1]}"


def request_mac(license_key: str, fields: Dict[str, Any]) -> str:
    """HMAC-SHA256 under HKDF-SHA256(license key, no salt, "keyforge activation request v1") over the fields in order."""
    key = _hkdf(license_key, b"", REQUEST_MAC_INFO)
    message = js_json(
        [REQUEST_MAC_INFO, fields["hint"], fields["device"], fields["name"], fields["pub"], fields["challenge"], fields["iat"], fields["product"], fields["version"]]
    )
    mac = hmac.HMAC(key, hashes.SHA256())
    mac.update(message.encode("utf-8"))
    return b64url_encode(mac.finalize())


def encode_request(fields: Dict[str, Any]) -> Dict[str, str]:
    """The activation request's armored text and its one-line (QR) form."""
    text = js_json(fields)
    return {"request": armor("ACTIVATION REQUEST", text), "compact": COMPACT_REQUEST_PREFIX + b64url_encode(text.encode("utf-8"))}


@dataclass(frozen=True)
class DeviceKey:
    """The Ed25519 key pair of an air-gapped activation, as kept in the store (a JWK with its private part ``d``)."""

    jwk: Dict[str, str]
    pub: str

    @staticmethod
    def generate() -> "DeviceKey":
        return DeviceKey.from_private(Ed25519PrivateKey.generate())

    @staticmethod
    def from_seed(seed: bytes) -> "DeviceKey":
        """The key pair of a 32-byte Ed25519 seed (the private key's raw bytes)."""
        return DeviceKey.from_private(Ed25519PrivateKey.from_private_bytes(seed))

    @staticmethod
    def from_private(private: Ed25519PrivateKey) -> "DeviceKey":
        d = private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
        x = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64url_encode(x), "d": b64url_encode(d)}
        return DeviceKey(jwk=jwk, pub=jwk["x"])

    def private_key(self) -> Ed25519PrivateKey:
        return Ed25519PrivateKey.from_private_bytes(b64url_decode(self.jwk["d"]))

    def to_json(self) -> Dict[str, Any]:
        return {"jwk": dict(self.jwk), "pub": self.pub}


def sign_deactivation_proof(key: DeviceKey, activation: str, license: str, device: str, iat: int, jti: Optional[str] = None) -> str:
    """A deactivation proof: a compact JWS (EdDSA) by the device's private key naming its activation, license and device.

    ``jti`` (default: 16 random bytes) makes each proof unique; Ed25519 is deterministic, so the same claims and key
    give the same proof byte for byte."""
    payload = {
        "kind": DEACTIVATION_KIND,
        "activation": activation,
        "license": license,
        "device": device,
        "iat": iat,
        "jti": jti if jti is not None else b64url_encode(secrets.token_bytes(16)),
    }
    return armor("DEACTIVATION PROOF", sign_compact(key.private_key(), {"alg": "EdDSA"}, payload))


