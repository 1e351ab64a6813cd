"""The public keys that verify offline tokens and license files (the server's JWKS)."""
from __future__ import annotations

import json
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ._b64 import b64url_decode
from ._http import Transport, loads
from .errors import KeyforgeError, VerificationError
from .stores import TokenStore

__all__ = ["KeyRing", "usable_key"]

#: The server's JWKS may be cached this long (it sends ``Cache-Control: max-age=300``).
MAX_AGE_SECONDS = 300.0
#: A ``kid`` the JWKS did not list refetches it at most this often (the first sight of a new key refetches at once).
REFETCH_COOLDOWN_SECONDS = 10.0
#: At most this many keys are kept from one JWKS (a hostile JWKS must not fill memory).
MAX_KEYS = 100


def usable_key(jwk: Any) -> bool:
    """An Ed25519 public key for EdDSA: the only kind trusted (RSA, EC, symmetric keys are ignored)."""
    return (
        isinstance(jwk, dict)
        and jwk.get("kty") == "OKP"
        and jwk.get("crv") == "Ed25519"
        and isinstance(jwk.get("x"), str)
        and jwk.get("alg", "EdDSA") in ("EdDSA", "Ed25519")
    )


def _usable(keys: Any) -> List[Dict[str, Any]]:
    return [key for key in keys if usable_key(key)][:MAX_KEYS] if isinstance(keys, list) else []


def import_key(jwk: Mapping[str, Any]) -> Ed25519PublicKey:
    try:
        raw = b64url_decode(str(jwk.get("x")))
        if len(raw) != 32:
            raise ValueError("not 32 bytes")
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError:
        raise VerificationError("TokenInvalid", f"The key {jwk.get('kid')!r} of the JWKS is not a valid Ed25519 public key.") from None


class KeyRing:
    """Pinned keys (shipped with the application), or the server's JWKS fetched, cached in memory and in the
    store (for verification after an offline restart), and fetched again when a token names an unknown ``kid``
    (a key rotation). Thread-safe: one fetch at a time."""

    def __init__(
        self,
        pinned: Optional[Mapping[str, Any]],
        transport: Optional[Transport],
        store: Optional[TokenStore],
        store_key: str,
        clock: Callable[[], float],
    ) -> None:
        self._pinned = pinned is not None
        self._transport = transport
        self._store = store
        self._store_key = store_key
        self._clock = clock
        self._keys: Optional[List[Dict[str, Any]]] = None
        self._fetched_at = float("-inf")
        self._misses: Dict[str, float] = {}
        self._lock = threading.RLock()
        if pinned is not None:
            keys = _usable(pinned.get("keys") if isinstance(pinned, Mapping) else None)
            if not keys:
                raise TypeError("jwks: pinned keys must be a JWKS ({'keys': [...]}) with at least one Ed25519 key.")
            self._keys = keys

    def key_for(self, kid: Any, online: bool) -> Ed25519PublicKey:
        """The key that verifies a token with this ``kid``; ``online`` allows fetching the JWKS."""
        if kid is None:
            raise VerificationError("TokenInvalid", "The token names no signing key (kid).")
        jwk = self._find(self._current(online), kid)
        if jwk is None and not self._pinned and online and isinstance(kid, str):
            with self._lock:
                last = self._misses.get(kid, float("-inf"))
                due = self._clock() - last >= REFETCH_COOLDOWN_SECONDS
                if due:
                    if len(self._misses) > 100:
                        self._misses.clear()
                    self._misses[kid] = self._clock()
            if due:
                jwk = self._find(self.fetch(), kid)
        if jwk is None:
            if self._pinned:
                raise VerificationError("KeyUnknown", f"The token is signed by key {kid!r}, which is not among the pinned keys (after a key rotation, ship the new JWKS).")
            raise VerificationError("KeyUnknown", f"The token is signed by key {kid!r}, which the server's JWKS does not list.")
        return import_key(jwk)

    @staticmethod
    def _find(keys: List[Dict[str, Any]], kid: Any) -> Optional[Dict[str, Any]]:
        for key in keys:
            if isinstance(kid, str) and key.get("kid") == kid:
                return key
        return None

    def _current(self, online: bool) -> List[Dict[str, Any]]:
        """The keys to try first: pinned, else fresh ones in memory, else (online) fetched, else the stored copy."""
        with self._lock:
            if self._pinned and self._keys is not None:
                return self._keys
            if self._keys is not None and (not online or self._clock() - self._fetched_at < MAX_AGE_SECONDS):
                return self._keys
        if online:
            try:
                return self.fetch()
            except KeyforgeError as error:
                # The JWKS endpoint is away: a copy we have still verifies tokens of the keys it lists.
                with self._lock:
                    if self._keys is not None:
                        return self._keys
                stored = self._stored()
                if stored:
                    return stored
                raise VerificationError("KeyUnknown", f"The server's keys (JWKS) could not be fetched: {error}") from error
        with self._lock:
            if self._keys is not None:
                return self._keys
        return self._stored()

    def fetch(self) -> List[Dict[str, Any]]:
        """Fetches the JWKS (one request at a time), keeps it in memory and in the store."""
        with self._lock:
            if self._pinned and self._keys is not None:
                return self._keys
            if self._transport is None:
                raise VerificationError("KeyUnknown", "No server to fetch the keys (JWKS) from.")
            transport = self._transport
            answer = transport.retrying(lambda _n: transport.once("GET", "/.well-known/jwks.json"))
            keys = _usable(answer.json.get("keys"))
            self._keys = keys
            self._fetched_at = self._clock()
            if self._store is not None:
                try:
                    self._store.set(self._store_key, json.dumps({"keys": keys}))
                except OSError:
                    pass  # Best effort: a store that cannot be written only costs the offline copy.
            return keys

    def _stored(self) -> List[Dict[str, Any]]:
        if self._store is None:
            return []
        try:
            raw = self._store.get(self._store_key)
            parsed = loads(raw) if raw else None
        except (OSError, ValueError, RecursionError):
            return []
        keys = _usable(parsed.get("keys") if isinstance(parsed, dict) else None)
        if keys:
            with self._lock:
                self._keys = keys
        return keys
