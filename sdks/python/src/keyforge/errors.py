"""The errors of the SDK.

Every call returns only a granted result: anything else is raised as a :class:`KeyforgeError` whose
``code`` says why (the same codes as the REST API and the TypeScript SDK), so an HTTP 200 rejection
(``isValid: false``) can never be mistaken for a success.

- :class:`LicenseRejectedError`: the server answered and said no (its rejection code, e.g. ``SeatsExhausted``).
- :class:`ApiError`: an HTTP error answer (``InvalidRequest``, ``RateLimited``, ``ServiceUnavailable`` ...),
  or ``InvalidResponse`` for an answer that is not the API's JSON.
- :class:`NetworkError`: no answer (``NetworkError``, ``Timeout``).
- :class:`VerificationError`: a signed token or license file did not check out (``TokenInvalid``,
  ``TokenExpired``, ``KeyUnknown``, ``WrongIssuer``, ``WrongProduct``, ``WrongDevice``, ``ChallengeMismatch``,
  ``ClockRollback``, ``OfflineNotAllowed``, ``TokenMissing``), or a downloaded release artifact did not
  (``ArtifactIntegrity``).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

__all__ = [
    "ERROR_CODES",
    "KeyforgeError",
    "LicenseRejectedError",
    "ApiError",
    "NetworkError",
    "VerificationError",
    "is_transient",
]


#: Every code the SDK raises, by the class that carries it: the TypeScript SDK's codes (sdk/src/errors.ts) and the
#: REST API's, spelled identically. ``LicenseRejectedError`` also carries any rejection code a newer server adds.
ERROR_CODES: Dict[str, Tuple[str, ...]] = {
    "LicenseRejectedError": (
        "LicenseNotFound",
        "LicenseRevoked",
        "Suspended",
        "LicenseExpired",
        "SeatsExhausted",
        "VersionNotSupported",
        "DeviceIdRequired",
        "ProductMismatch",
        "ActivationNotFound",
        "DeviceNotActivated",
        "FloatingNotEnabled",
        "FloatingSeatsExhausted",
        "SessionInvalid",
        "SessionExpired",
        "QuotaExceeded",
    ),
    "ApiError": ("InvalidRequest", "NonceRequired", "NonceInvalid", "RateLimited", "ServiceUnavailable", "InternalError", "InvalidResponse"),
    "NetworkError": ("NetworkError", "Timeout"),
    "VerificationError": (
        "TokenMissing",
        "TokenInvalid",
        "TokenExpired",
        "KeyUnknown",
        "WrongIssuer",
        "WrongProduct",
        "WrongDevice",
        "ChallengeMismatch",
        "ClockRollback",
        "OfflineNotAllowed",
        "ArtifactIntegrity",
    ),
    # Raised as a plain KeyforgeError: a floating seat lost, no machine id, a full offline usage queue, a download
    # that cannot be written to disk.
    "KeyforgeError": ("LeaseLapsed", "MachineIdUnavailable", "UsageQueueFull", "FileWriteFailed"),
}


class KeyforgeError(Exception):
    """The base class of every error the SDK raises. ``code`` is machine-readable."""

    code: str

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class LicenseRejectedError(KeyforgeError):
    """The server answered and refused (HTTP 200 with ``isValid: false``). A definite answer: never retried.

    ``response`` is the server's whole answer (for ``QuotaExceeded``: ``total``, ``limit``, ``remaining`` ...).
    """

    def __init__(self, code: str, message: str, response: Mapping[str, Any]) -> None:
        super().__init__(code, message)
        self.response: Dict[str, Any] = dict(response)


class ApiError(KeyforgeError):
    """An HTTP error answer. ``RateLimited`` (429) and ``ServiceUnavailable`` (502/503/504) are retried first."""

    def __init__(
        self,
        code: str,
        message: str,
        status: int,
        request_id: Optional[str] = None,
        fields: Optional[Dict[str, str]] = None,
        retry_after_seconds: Optional[float] = None,
    ) -> None:
        super().__init__(code, message)
        self.status = status
        self.request_id = request_id
        self.fields = fields
        self.retry_after_seconds = retry_after_seconds


class NetworkError(KeyforgeError):
    """No answer: the connection failed (``NetworkError``) or the per-attempt timeout passed (``Timeout``)."""


class VerificationError(KeyforgeError):
    """A signed offline token, license file or activation response was refused."""


_TRANSIENT_STATUS = frozenset({429, 502, 503, 504})


def is_transient(error: BaseException) -> bool:
    """True for failures worth retrying later (no answer, 429, 502, 503, 504), false for definite answers."""
    if isinstance(error, NetworkError):
        return True
    return isinstance(error, ApiError) and error.status in _TRANSIENT_STATUS
