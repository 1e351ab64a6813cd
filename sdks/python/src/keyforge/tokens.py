"""Verifying the signed entitlement (the offline token of a validate answer, or the token inside a license file)."""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ._jws import verify_compact
from .errors import VerificationError

__all__ = ["Entitlement", "verify_claims"]


@dataclass(frozen=True)
class Entitlement:
    """The entitlement the server signed. Every field is covered by the Ed25519 signature: unlock features from here."""

    license_id: str
    tenant_id: str
    product_id: str
    product: str
    bundle_products: Optional[List[str]]
    features: List[str]
    license_expires_at: Optional[str]
    is_trial: bool
    node_locked: bool
    offline_grace_days: Optional[float]
    maintenance_expires_at: Optional[str]
    min_version: Optional[str]
    max_version: Optional[str]
    device: Optional[str]
    device_activated: bool
    issued_at: datetime.datetime
    expires_at: datetime.datetime
    key_id: str
    claims: Dict[str, Any] = field(repr=False)


def _string(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _strings(value: Any) -> Optional[List[str]]:
    return list(value) if isinstance(value, list) and all(isinstance(item, str) for item in value) else None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _datetime(seconds: float) -> datetime.datetime:
    try:
        return datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    except (OverflowError, ValueError, OSError):
        raise VerificationError("TokenInvalid", "The token's times are out of range.") from None


_REQUIRED = ("sub", "iat", "exp", "product")


def verify_claims(
    token: str,
    key_for: Callable[[Any], Ed25519PublicKey],
    *,
    issuer: str,
    products: Sequence[str],
    now: float,
    clock_tolerance: float,
    device_id: Optional[str] = None,
    require_activation: bool = False,
    challenge: Optional[str] = None,
) -> Entitlement:
    """Verifies a token: EdDSA only, a trusted key, issuer, expiry, then product, device and challenge.

    ``now`` is in seconds since the epoch (the server's clock as the client estimates it).
    """
    header, payload = verify_compact(token, key_for)
    # The claims checks in the order the TypeScript SDK (jose) makes them.
    now = float(int(now // 1))  # whole seconds, as JOSE compares them
    for claim in ("iss",) + tuple(reversed(_REQUIRED)):
        if claim not in payload:
            if claim == "iss":
                raise VerificationError("WrongIssuer", f"The token was not issued by {issuer}.")
            raise VerificationError("TokenInvalid", f'The token is not valid (missing required "{claim}" claim).')
    if payload["iss"] != issuer:
        raise VerificationError("WrongIssuer", f"The token was not issued by {issuer}.")
    for claim in ("iat", "nbf", "exp"):
        if claim in payload and not _number(payload[claim]):
            raise VerificationError("TokenInvalid", f'The token is not valid ("{claim}" claim must be a number).')
    if "nbf" in payload and payload["nbf"] > now + clock_tolerance:
        raise VerificationError("TokenInvalid", 'The token is not valid yet ("nbf" claim check failed).')
    if payload["exp"] <= now - clock_tolerance:
        raise VerificationError("TokenExpired", "The token has expired: the offline grace period is over; validate online.")
    if not isinstance(payload["sub"], str):
        raise VerificationError("TokenInvalid", 'The token is not valid ("sub" claim must be a string).')
    product = _string(payload.get("product"))
    bundle_products = _strings(payload.get("bundleProducts"))
    if product not in products and not any(member in products for member in (bundle_products or [])):
        wanted = " or ".join(f'"{name}"' for name in products)
        raise VerificationError("WrongProduct", f'The license is for "{product}", not {wanted}.')
    device = _string(payload.get("device"))
    if device_id is not None and device != device_id:
        raise VerificationError(
            "WrongDevice",
            "The token is not bound to a device, but this check asks for one." if device is None else "The token is bound to another device.",
        )
    if require_activation and payload.get("deviceActivated") is not True:
        raise VerificationError("WrongDevice", "The token does not attest that this device holds an activation: validate online with require_activation.")
    if challenge is not None and payload.get("nonce") != challenge:
        raise VerificationError("ChallengeMismatch", "The token does not echo this request's challenge: a replayed or foreign answer.")
    grace = payload.get("offlineGraceDays")
    return Entitlement(
        license_id=payload["sub"],
        tenant_id=_string(payload.get("tenant")) or "",
        product_id=_string(payload.get("productId")) or "",
        product=product or "",
        bundle_products=bundle_products,
        features=_strings(payload.get("features")) or [],
        license_expires_at=_string(payload.get("licenseExpiresAt")),
        is_trial=payload.get("isTrial") is True,
        node_locked=payload.get("nodeLocked") is True,
        offline_grace_days=grace if _number(grace) else None,
        maintenance_expires_at=_string(payload.get("maintenanceExpiresAt")),
        min_version=_string(payload.get("minVersion")),
        max_version=_string(payload.get("maxVersion")),
        device=device,
        device_activated=payload.get("deviceActivated") is True,
        issued_at=_datetime(payload["iat"]),
        expires_at=_datetime(payload["exp"]),
        key_id=str(header.get("kid")),
        claims=dict(payload),
    )


