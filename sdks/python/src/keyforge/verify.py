"""Verifying a token against a JWKS you hold, without a client (build tools, servers, tests)."""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .errors import VerificationError
from .keys import import_key, usable_key
from .tokens import Entitlement, verify_claims

__all__ = ["verify_offline_token"]


def verify_offline_token(
    token: str,
    *,
    jwks: Mapping[str, Any],
    issuer: str,
    product: Union[str, Sequence[str]],
    now: float,
    clock_tolerance: float = 300.0,
    device_id: Optional[str] = None,
    require_activation: bool = False,
    challenge: Optional[str] = None,
) -> Entitlement:
    """Verifies an offline token (or a license file's token) against ``jwks`` at ``now`` (seconds since the epoch).

    The same checks as :meth:`KeyforgeClient.validate_offline` makes of the signature and claims: EdDSA only, a key
    of ``jwks`` named by ``kid`` (``KeyUnknown`` otherwise; entries that are not Ed25519 public keys are ignored), the issuer, ``exp`` with ``clock_tolerance``, the
    product (or a bundle containing it), the device and activation when asked, and the challenge when given.
    """
    keys = [key for key in (jwks.get("keys") if isinstance(jwks, Mapping) else None) or [] if usable_key(key)]
    products = [product] if isinstance(product, str) else list(product)

    def key_for(kid: Any) -> Ed25519PublicKey:
        if kid is None:
            raise VerificationError("TokenInvalid", "The token names no signing key (kid).")
        for key in keys:
            if isinstance(kid, str) and key.get("kid") == kid:
                return import_key(key)
        raise VerificationError("KeyUnknown", f"The token is signed by key {kid!r}, which the JWKS does not list.")

    return verify_claims(
        token,
        key_for,
        issuer=issuer,
        products=products,
        now=now,
        clock_tolerance=clock_tolerance,
        device_id=device_id,
        require_activation=require_activation,
        challenge=challenge,
    )
