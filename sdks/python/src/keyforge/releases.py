"""Release distribution: the update check, and the checks a downloaded artifact must pass before it is returned."""
from __future__ import annotations

import hashlib
import platform as _platform
import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ._jws import verify_compact
from .errors import KeyforgeError, VerificationError

__all__ = ["UpdateCheck", "current_platform", "verify_artifact_signature", "ArtifactDigest"]

_ARCHES = {"x86_64": "x64", "amd64": "x64", "x64": "x64", "aarch64": "arm64", "arm64": "arm64", "armv8": "arm64"}


def current_platform() -> Tuple[Optional[str], Optional[str]]:
    """This process's (platform, arch) in the release API's terms: ``win32``/``darwin``/``linux`` from
    ``sys.platform``, ``x64``/``arm64`` from ``platform.machine()``. None for anything else (no filter is sent)."""
    plat: Optional[str] = None
    if sys.platform == "win32" or sys.platform == "cygwin":
        plat = "win32"
    elif sys.platform == "darwin":
        plat = "darwin"
    elif sys.platform.startswith("linux"):
        plat = "linux"
    return plat, _ARCHES.get(_platform.machine().lower())


@dataclass(frozen=True)
class UpdateCheck:
    """The answer of :meth:`KeyforgeClient.check_for_update`.

    ``available``: a newer release this license may install is ``release``. Otherwise ``reason`` says why not:
    ``NoNewerRelease``, or ``MaintenanceExpired`` / ``FeatureMissing`` with ``release`` the newest newer release this
    license may not install. Releases and their artifacts are the API's JSON objects (dicts), as listed.
    """

    available: bool
    reason: Optional[str]
    release: Optional[Dict[str, Any]]


def _integrity(message: str) -> VerificationError:
    return VerificationError("ArtifactIntegrity", message)


def verify_artifact_signature(
    artifact: Mapping[str, Any],
    key_for: Callable[[Any], Ed25519PublicKey],
    *,
    issuer: str,
    products: Sequence[str],
) -> Dict[str, Any]:
    """The signed claims of an artifact: its ``signature`` verified as an offline token is (EdDSA, a trusted
    ``kid``, the issuer), then that it is an artifact signature (``typ``) whose ``productName`` (or ``product``) is one of ``products``, of this artifact
    (``artifact`` its id; ``size``, ``sha256``, ``sha512`` those listed). Any failure is ``ArtifactIntegrity``."""
    if not isinstance(artifact, Mapping) or not isinstance(artifact.get("signature"), str):
        raise _integrity("The artifact carries no signature.")
    try:
        _header, claims = verify_compact(artifact["signature"], key_for)
    except KeyforgeError as error:
        raise _integrity(f"The artifact's signature does not verify ({error.code}: {error}): tampered, or not signed by this server.") from error
    if claims.get("typ") != "keyforge.artifact":
        raise _integrity("The signature is not an artifact signature (typ).")
    if claims.get("iss") != issuer:
        raise _integrity(f"The artifact's signature was not issued by {issuer}.")
    # ``productName`` is the product's name (``product`` its id); a name is what the client knows.
    if not any(isinstance(claims.get(name), str) and claims[name] in products for name in ("productName", "product")):
        raise _integrity("The artifact is signed for another product.")
    if claims.get("artifact") != artifact.get("id"):
        raise _integrity("The signature is of another artifact.")
    size, sha256, sha512 = claims.get("size"), claims.get("sha256"), claims.get("sha512")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0 or not isinstance(sha256, str) or not isinstance(sha512, str):
        raise _integrity("The artifact's signature names no size and digests.")
    listed_sha256, listed_sha512 = artifact.get("sha256"), artifact.get("sha512")
    if (
        artifact.get("size") != size
        or not isinstance(listed_sha256, str)
        or listed_sha256.lower() != sha256
        or not isinstance(listed_sha512, str)
        or listed_sha512.lower() != sha512
    ):
        raise _integrity("The artifact's listed size or digests differ from the signed ones.")
    return claims


class ArtifactDigest:
    """Size, SHA-256 and SHA-512 of bytes fed as they arrive, checked against the signed ones at the end."""

    def __init__(self) -> None:
        self.size = 0
        self._sha256 = hashlib.sha256()
        self._sha512 = hashlib.sha512()

    def update(self, chunk: bytes) -> None:
        self.size += len(chunk)
        self._sha256.update(chunk)
        self._sha512.update(chunk)

    def check(self, claims: Mapping[str, Any]) -> None:
        if self.size != claims["size"]:
            raise _integrity(f"The file is {self.size} bytes; {claims['size']} were signed.")
        if self._sha256.hexdigest() != claims["sha256"]:
            raise _integrity("The file's SHA-256 is not the signed one.")
        if self._sha512.hexdigest() != claims["sha512"]:
            raise _integrity("The file's SHA-512 is not the signed one.")
