"""Keyforge: the client SDK of the Keyforge licensing API for Python.

Activation, validation with a signed offline token (Ed25519), license files and air-gapped activation, floating
seats and metering, with the same behaviour and error codes as the TypeScript SDK (``@keyforge/client``).
"""
from ._http import RetryPolicy
from .client import (
    Activation,
    ActivationRequest,
    Deactivation,
    KeyforgeClient,
    MeterResult,
    OfflineDeactivation,
    QueuedMeter,
    UsageFlush,
    Validation,
)
from .errors import ApiError, KeyforgeError, LicenseRejectedError, NetworkError, VerificationError, is_transient
from .fingerprint import machine_fingerprint, machine_id
from .floating import FloatingSession
from .license_files import open_license_file
from .releases import UpdateCheck, current_platform
from .stores import FileStore, MemoryStore, TokenStore
from .tokens import Entitlement
from .usage import QueuedUsage
from .verify import verify_offline_token
from .watch import LicenseState, LicenseWatcher

__version__ = "0.1.0"

__all__ = [
    "KeyforgeClient",
    "RetryPolicy",
    "Activation",
    "ActivationRequest",
    "Deactivation",
    "MeterResult",
    "OfflineDeactivation",
    "QueuedMeter",
    "QueuedUsage",
    "UsageFlush",
    "Validation",
    "UpdateCheck",
    "current_platform",
    "Entitlement",
    "FloatingSession",
    "LicenseWatcher",
    "LicenseState",
    "TokenStore",
    "MemoryStore",
    "FileStore",
    "KeyforgeError",
    "LicenseRejectedError",
    "ApiError",
    "NetworkError",
    "VerificationError",
    "is_transient",
    "machine_id",
    "machine_fingerprint",
    "open_license_file",
    "verify_offline_token",
]
