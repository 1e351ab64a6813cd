"""The Keyforge licensing client."""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import math
import os
import re
import secrets
import ssl
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from ._b64 import b64url_encode
from ._http import Answer, RetryPolicy, Transport, loads
from ._jws import decode_payload
from .errors import ApiError, KeyforgeError, LicenseRejectedError, NetworkError, VerificationError, is_transient
from .floating import FloatingSession
from .keys import KeyRing
from .license_files import (
    LICENSE_FILE_KIND,
    DeviceKey,
    encode_request,
    key_hint,
    normalize_key,
    open_license_file,
    request_mac,
    sign_deactivation_proof,
)
from .releases import ArtifactDigest, UpdateCheck, current_platform, verify_artifact_signature
from .stores import MemoryStore, TokenStore
from .tokens import Entitlement, verify_claims
from .usage import QueuedUsage, UsageQueue
from .watch import DEFAULT_WATCH_INTERVAL_SECONDS, LicenseState, LicenseWatcher, WatchProbe

__all__ = [
    "KeyforgeClient",
    "Activation",
    "Validation",
    "Deactivation",
    "MeterResult",
    "QueuedMeter",
    "UsageFlush",
    "ActivationRequest",
    "OfflineDeactivation",
    "UpdateCheck",
]

#: Below this, a measured clock difference is noise (whole-second ``iat``, network latency).
SKEW_NOISE_SECONDS = 2.0
_DEVICE_KEY = "device"
_DEVICE_ID = re.compile(r"[0-9a-f]{64}")
_VERSION = "0.1.0"
#: The watcher's status for a rejection code (others: ``rejected``).
_WATCH_STATUS = {
    "LicenseRevoked": "revoked",
    "Suspended": "suspended",
    "LicenseExpired": "expired",
    "DeviceNotActivated": "device-freed",
    "LicenseNotFound": "not-found",
}


@dataclass(frozen=True)
class Activation:
    """A granted activation. ``response`` is the server's whole answer."""

    device_id: str
    product_name: Optional[str]
    remaining_activations: Optional[int]
    expires_at: Optional[str]
    features: List[str]
    is_trial: bool
    #: Trials only: UTC calendar days to the end date (0 on the last day).
    trial_days_remaining: Optional[int]
    node_locked: bool
    offline_grace_days: Optional[int]
    vendor_warning: Optional[str]
    response: Dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class Validation:
    """A granted validation. Use ``entitlement`` (the signed claims) to unlock features, not ``license``."""

    #: ``online``: the server answered now; ``offline``: from the stored token or license file.
    source: str
    entitlement: Entitlement
    #: The server's whole answer (online only; None offline).
    license: Optional[Dict[str, Any]]
    offline_token: str
    #: The end of the offline grace period (the token's expiry).
    offline_until: datetime.datetime
    #: How far the local clock is behind (+) or ahead (-) of the server's, as measured at the last online validation.
    clock_skew_seconds: int
    #: Offline answers given by ``offline_fallback``: why the online call failed.
    online_error: Optional[KeyforgeError] = None
    #: ``fetch_license_file``: the file's text.
    license_file: Optional[str] = None


@dataclass(frozen=True)
class Deactivation:
    deactivated: bool
    #: Seats left; None when a retry found the seat already freed by the first, unanswered attempt.
    remaining_activations: Optional[int]


@dataclass(frozen=True)
class MeterResult:
    """The server recorded the usage (``replayed``: it had already recorded this idempotency key; nothing was added)."""

    event: str
    quantity: int
    occurred_at: Optional[str]
    period: Optional[str]
    period_start: Optional[str]
    period_end: Optional[str]
    total: Optional[int]
    limit: Optional[int]
    remaining: Optional[int]
    idempotency_key: str
    replayed: bool
    response: Dict[str, Any] = field(repr=False)
    queued: bool = False


@dataclass(frozen=True)
class QueuedMeter:
    """``meter(queue_offline=True)`` could not reach the server: the record waits in the store."""

    event: str
    quantity: int
    timestamp: str
    idempotency_key: str
    reason: Optional[BaseException]
    queued: bool = True


@dataclass
class UsageFlush:
    """What sending a license's queue did."""

    sent: List[MeterResult] = field(default_factory=list)
    #: Records the server refused for good (a rejection such as ``QuotaExceeded``, or an ``InvalidRequest``): removed.
    dropped: List["tuple[QueuedUsage, KeyforgeError]"] = field(default_factory=list)
    remaining: int = 0
    #: Why the flush stopped before the end of the queue (no answer, a server error); None when it got through.
    stopped_by: Optional[KeyforgeError] = None


@dataclass(frozen=True)
class ActivationRequest:
    #: The armored request (``-----BEGIN KEYFORGE ACTIVATION REQUEST-----``).
    request: str
    #: The same request on one line (``KFREQ1:…``): for a QR code.
    compact: str
    device_id: str
    challenge: str


@dataclass(frozen=True)
class OfflineDeactivation:
    #: The armored proof, signed by this device's key: upload it to free the seat.
    proof: str
    activation_id: str
    device_id: str


def _require_key(license_key: Any) -> str:
    if not isinstance(license_key, str) or not license_key.strip():
        raise TypeError("license_key must be a non-empty string.")
    return license_key


@contextlib.contextmanager
def _writing(directory: str) -> Iterator[None]:
    """A local failure writing a download (a folder not writable, a full disk) is ``FileWriteFailed``: the disk's,
    not the network's, so never retried."""
    try:
        yield
    except OSError as error:
        raise KeyforgeError("FileWriteFailed", f"The download cannot be written in {directory}: {error.strerror or error}") from error


def _optional(**fields: Any) -> Dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


def _rejection(json_body: Mapping[str, Any]) -> LicenseRejectedError:
    code = json_body.get("errorCode")
    message = json_body.get("message")
    return LicenseRejectedError(code if isinstance(code, str) else "Rejected", message if isinstance(message, str) else "The server refused the request.", json_body)


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _random_token(size: int = 16) -> str:
    return b64url_encode(secrets.token_bytes(size))


class KeyforgeClient:
    """The Keyforge licensing client. One instance per server and application.

    Thread safety: an instance may be shared by threads. Network calls run on the calling thread; state in
    the store (tokens, keys, queued usage, device keys) is read and written under a lock, so concurrent calls
    never lose each other's writes within the process. Use one store file per process.

    :param base_url: the licensing server's origin, without ``/api/v1`` (e.g. ``https://licenses.example.com``).
    :param product: your application's product name(s) as the vendor named them. Sent with every activation and
        checkout (a key of another product is refused with ``ProductMismatch`` before a seat is taken); a token for
        another product (and not a bundle containing one of them) is refused offline (``WrongProduct``).
    :param issuer: the expected ``iss`` of offline tokens: the server's ``PUBLIC_URL``. Default: ``base_url``.
    :param jwks: public keys pinned at build time (the server's ``/.well-known/jwks.json``). When given they are the
        only keys trusted and the JWKS is never fetched. Default: fetched once, cached, refetched on an unknown ``kid``.
    :param store: where tokens, fetched keys, device keys, queued usage and the installation id are kept
        (default: a :class:`MemoryStore`; use a :class:`FileStore` in applications).
    :param timeout: per-attempt timeout in seconds (connect, send and the whole answer; default 10).
    :param retry: the retry policy on 429/502/503/504 and network failures.
    :param clock_tolerance: leeway for clock differences when checking token times, in seconds (default 300).
    :param clock: the local wall clock in seconds since the epoch (default ``time.time``); for tests.
    :param ssl_context: for HTTPS servers with a private certificate authority.
    :param proxy: an ``http://`` proxy (HTTPS goes through it in a CONNECT tunnel); default: the environment's
        ``https_proxy``/``http_proxy``, honouring ``no_proxy``; ``""``: none. Redirects are never followed (the license
        key is in the body): configure the server's final URL.
    """

    def __init__(
        self,
        base_url: str,
        product: Union[str, Sequence[str]],
        *,
        issuer: Optional[str] = None,
        jwks: Optional[Mapping[str, Any]] = None,
        store: Optional[TokenStore] = None,
        timeout: float = 10.0,
        retry: Optional[RetryPolicy] = None,
        clock_tolerance: float = 300.0,
        clock: Callable[[], float] = time.time,
        ssl_context: Optional[ssl.SSLContext] = None,
        proxy: Optional[str] = None,
    ) -> None:
        if not isinstance(base_url, str):
            raise TypeError("base_url must be an absolute http(s) URL, e.g. https://licenses.example.com")
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise TypeError("base_url must be an absolute http(s) URL, e.g. https://licenses.example.com")
        if url.query or url.fragment or url.username or url.password:
            raise TypeError("base_url must not carry a query, fragment or credentials.")
        path = url.path.rstrip("/")
        if path.endswith("/api/v1"):
            path = path[: -len("/api/v1")]
        self.base_url = f"{url.scheme}://{url.netloc}{path}"
        self.issuer = issuer if issuer is not None else self.base_url
        self.products: List[str] = [product] if isinstance(product, str) else list(product)
        if not self.products or any(not isinstance(name, str) or not name for name in self.products):
            raise TypeError("product must name your application's product (or products).")
        if timeout <= 0:
            raise TypeError("timeout must be positive.")
        self._clock = clock
        self._store: TokenStore = store if store is not None else MemoryStore()
        self._tolerance = float(clock_tolerance)
        self._lock = threading.RLock()
        self._usage = UsageQueue(self._store)
        self._transport = Transport(self.base_url, timeout, retry or RetryPolicy(), clock, ssl_context, user_agent=f"keyforge-python/{_VERSION}", proxy=proxy)
        self._keys = KeyRing(jwks, self._transport, self._store, f"jwks:{self.issuer}", clock)
        self._device_id: Optional[str] = None

    # -- identity ---------------------------------------------------------------------------------------------

    def device_id(self) -> str:
        """This installation's id: 64 random hex characters created on first use and kept in the store.

        Used by ``activate``, ``deactivate``, ``create_activation_request`` and ``validate(require_activation=True)``
        when no ``device_id`` is given. Use :func:`keyforge.machine_fingerprint` for an id of the machine instead.
        """
        with self._lock:
            if self._device_id is None:
                stored = self._store.get(_DEVICE_KEY)
                if stored and _DEVICE_ID.fullmatch(stored):
                    self._device_id = stored
                else:
                    created = secrets.token_hex(32)
                    self._store.set(_DEVICE_KEY, created)
                    self._device_id = created
            return self._device_id

    # -- online -----------------------------------------------------------------------------------------------

    def _product_field(self) -> Union[str, List[str]]:
        return self.products[0] if len(self.products) == 1 else list(self.products)

    def activate(
        self,
        license_key: str,
        *,
        device_id: Optional[str] = None,
        device_name: Optional[str] = None,
        version: Optional[str] = None,
        user_email: Optional[str] = None,
    ) -> Activation:
        """Registers this installation and takes a seat. Each attempt fetches its own fresh nonce; an attempt whose
        answer is lost is retried with the same device, which the server answers with the same seat.

        Raises :class:`LicenseRejectedError` (``SeatsExhausted``, ``ProductMismatch``, ``DeviceIdRequired`` ...).
        """
        license_key = _require_key(license_key)
        device = device_id if device_id is not None else self.device_id()
        body = {"licenseKey": license_key, "deviceId": device, "product": self._product_field(), **_optional(deviceName=device_name, version=version, userEmail=user_email)}

        def attempt(_n: int) -> Answer:
            issued = self._transport.once("GET", "/api/v1/nonce")
            nonce = issued.json.get("nonce")
            if not isinstance(nonce, str):
                raise ApiError("InvalidResponse", "GET /api/v1/nonce answered without a nonce.", status=issued.status)
            return self._transport.once("POST", "/api/v1/activate", body={**body, "nonce": nonce})

        answer = self._transport.retrying(attempt).json
        if answer.get("isValid") is not True:
            raise _rejection(answer)
        return Activation(
            device_id=device,
            product_name=_str(answer.get("productName")),
            remaining_activations=_int(answer.get("remainingActivations")),
            expires_at=_str(answer.get("expiresAt")),
            features=[item for item in answer.get("features") or [] if isinstance(item, str)] if isinstance(answer.get("features"), list) else [],
            is_trial=answer.get("isTrial") is True,
            trial_days_remaining=_int(answer.get("trialDaysRemaining")),
            node_locked=answer.get("nodeLocked") is True,
            offline_grace_days=_int(answer.get("offlineGraceDays")),
            vendor_warning=_str(answer.get("vendorWarning")),
            response=answer,
        )

    def validate(
        self,
        license_key: str,
        *,
        version: Optional[str] = None,
        device_id: Optional[str] = None,
        require_activation: bool = False,
        offline_fallback: bool = False,
    ) -> Validation:
        """Checks the license with the server and verifies the signed entitlement: EdDSA only, a trusted key, the
        issuer, this request's random challenge (a replayed answer is refused), the product and (when given) the
        device. The token is then stored for :meth:`validate_offline`.

        ``require_activation``: also ask whether this device (``device_id``, else the installation id) still holds an
        activation (``DeviceNotActivated`` otherwise), and require the token to attest it.
        ``offline_fallback``: when the server cannot be reached (network, timeouts, 429/503 after the retries),
        answer from the stored token as :meth:`validate_offline` does; never after a definite answer.

        A rejection deletes the stored token and raises :class:`LicenseRejectedError`.
        """
        return self._validate(license_key, version=version, device_id=device_id, require_activation=require_activation, offline_fallback=offline_fallback, retry=True)

    def _validate(
        self,
        license_key: str,
        *,
        version: Optional[str],
        device_id: Optional[str],
        require_activation: bool,
        offline_fallback: bool,
        retry: bool,
    ) -> Validation:
        """validate, with the transport's retries or one attempt (a watcher: its schedule is the retry)."""
        license_key = _require_key(license_key)
        challenge = _random_token(24)
        device = (device_id if device_id is not None else self.device_id()) if require_activation else device_id
        body = {"licenseKey": license_key, "challenge": challenge, **_optional(version=version, deviceId=device, requireActivation=True if require_activation else None)}

        def attempt(_n: int) -> Answer:
            return self._transport.once("POST", "/api/v1/validate", body=body)

        try:
            answer = (self._transport.retrying(attempt) if retry else attempt(1)).json
        except KeyforgeError as error:
            if not offline_fallback or not is_transient(error):
                raise
            try:
                offline = self.validate_offline(license_key, device_id=device, require_activation=require_activation)
            except VerificationError as offline_error:
                # Nothing stored: the network failure is the news. Otherwise why the stored token does not do.
                if offline_error.code == "TokenMissing":
                    raise error from None
                raise
            return dataclasses.replace(offline, online_error=error)
        received_at = self._clock()
        if answer.get("isValid") is not True:
            # A definite "no": the stored token must not keep the application running offline.
            try:
                self.forget(license_key)
            except OSError:
                pass
            raise _rejection(answer)
        token = answer.get("offlineCacheToken")
        if not isinstance(token, str):
            raise VerificationError("TokenMissing", "The server answered without an offline token.")
        skew = self._skew(token, received_at)
        entitlement = self._verify(token, online=True, now=received_at + skew, challenge=challenge, device_id=device, require_activation=require_activation)
        self._save(license_key, {"v": 1, "token": token, "skewMs": skew * 1000, "lastSeenAt": (received_at + skew) * 1000})
        return Validation("online", entitlement, answer, token, entitlement.expires_at, round(skew))

    def validate_offline(self, license_key: str, *, device_id: Optional[str] = None, require_activation: bool = False) -> Validation:
        """Answers from the last token ``validate`` stored (or an installed license file), without a network.

        It must verify against the pinned or cached keys, be within its grace period (``exp``, with the clock
        difference measured online), be for this product and (when given) this device, and the clock must not have
        been set back. Raises :class:`VerificationError` ``TokenMissing``, ``TokenInvalid``, ``TokenExpired``,
        ``WrongProduct``, ``WrongDevice``, ``ClockRollback``, ``OfflineNotAllowed``, ``KeyUnknown``.
        """
        license_key = _require_key(license_key)
        with self._lock:
            record = self._load(license_key)
            skew = record["skewMs"] / 1000
            now = self._clock() + skew
            last_seen = record["lastSeenAt"] / 1000
            if now < last_seen - self._tolerance:
                raise VerificationError("ClockRollback", "The clock is earlier than a time already seen for this license: it has been set back.")
            entitlement = self._verify(record["token"], online=False, now=now, device_id=device_id, require_activation=require_activation)
            if now < entitlement.issued_at.timestamp() - self._tolerance:
                raise VerificationError("ClockRollback", "The clock is earlier than the time the token was issued: it has been set back.")
            # A license file is the vendor's own grant of offline use, until its ttl.
            if not entitlement.offline_grace_days and entitlement.claims.get("kind") != LICENSE_FILE_KIND:
                raise VerificationError("OfflineNotAllowed", "This license has no offline grace period: it must be validated online.")
            if now > last_seen:
                try:
                    self._save(license_key, {**record, "lastSeenAt": now * 1000})
                except OSError:
                    pass  # a read-only store still answers offline (it only loses the rollback high-water mark)
        return Validation("offline", entitlement, None, record["token"], entitlement.expires_at, round(skew))

    def deactivate(self, license_key: str, *, device_id: Optional[str] = None) -> Deactivation:
        """Frees the seat of a device (default: this installation) and deletes the stored token. Safe to retry: when
        an attempt's answer was lost and the retry finds the seat already free, it returns ``remaining_activations=None``.

        Raises :class:`LicenseRejectedError` ``ActivationNotFound``, ``LicenseNotFound``.
        """
        license_key = _require_key(license_key)
        device = device_id if device_id is not None else self.device_id()
        unanswered = []

        def note(error: BaseException) -> None:
            if isinstance(error, NetworkError):
                unanswered.append(error)

        answer = self._transport.retrying(lambda _n: self._transport.once("POST", "/api/v1/deactivate", body={"licenseKey": license_key, "deviceId": device}), note).json
        if answer.get("deactivated") is not True and not (unanswered and answer.get("errorCode") == "ActivationNotFound"):
            raise _rejection(answer)
        self.forget(license_key)
        return Deactivation(True, _int(answer.get("remainingActivations")))

    def fetch_keys(self) -> Dict[str, Any]:
        """Fetches the server's JWKS now (e.g. at build time, to save the keys you then pin with ``jwks``)."""
        return {"keys": self._keys.fetch()}

    def forget(self, license_key: str) -> None:
        """Deletes the stored token (or license file) of a license."""
        with self._lock:
            self._store.delete(self._record_key(_require_key(license_key)))

    # -- watching -------------------------------------------------------------------------------------------------

    def watch(
        self,
        license_key: str,
        *,
        on_change: Callable[[LicenseState, Optional[LicenseState]], None],
        device_id: Optional[str] = None,
        require_activation: Optional[bool] = None,
        version: Optional[str] = None,
        interval: float = DEFAULT_WATCH_INTERVAL_SECONDS,
        on_error: Optional[Callable[[BaseException], None]] = None,
        on_usage_flushed: Optional[Callable[[UsageFlush], None]] = None,
    ) -> LicenseWatcher:
        """Revalidates a license in the background and reports what changes (see :class:`LicenseWatcher`): checks at
        once, then every ``interval`` seconds (±10 %), and calls ``on_change(state, previous)`` with the first finding
        and whenever the status (``valid``, ``suspended``, ``revoked``, ``expired``, ``device-freed`` …), its source,
        the features or the license's expiry change. A check that gets no answer falls back to the stored token and is
        retried with backoff; after each online check the license's queued usage is sent.

        With a ``device_id`` the watch is device-scoped (``require_activation``, default True then): a device freed in
        the console (or by the customer) is reported as ``device-freed``.
        """
        license_key = _require_key(license_key)
        if not callable(on_change):
            raise TypeError("watch needs an on_change callback.")
        scoped = require_activation if require_activation is not None else device_id is not None
        return LicenseWatcher(
            lambda: self._probe(license_key, device_id, scoped, version),
            on_change,
            interval=interval,
            on_error=on_error,
            on_usage_flushed=on_usage_flushed,
        )

    def _probe(self, license_key: str, device_id: Optional[str], require_activation: bool, version: Optional[str]) -> WatchProbe:
        """One check of a watcher: online, else the stored token."""
        device = device_id if device_id is not None else (self.device_id() if require_activation else None)

        def state(status: str, **fields: Any) -> LicenseState:
            found: Dict[str, Any] = {"source": None, "entitlement": None, "features": [], "code": None, "error": None}
            found.update(fields)
            return LicenseState(status=status, checked_at=datetime.datetime.fromtimestamp(self._clock(), tz=datetime.timezone.utc), **found)

        try:
            online = self._validate(license_key, version=version, device_id=device, require_activation=require_activation, offline_fallback=False, retry=False)
        except KeyforgeError as error:
            if isinstance(error, LicenseRejectedError):
                return WatchProbe(state(_WATCH_STATUS.get(error.code, "rejected"), code=error.code, error=error))
            if not is_transient(error):
                return WatchProbe(state("unverified", code=error.code, error=error))
            try:
                offline = self.validate_offline(license_key, device_id=device, require_activation=require_activation)
            except KeyforgeError as offline_error:
                # Nothing stored: the network failure is the news; otherwise why the stored token does not do.
                reason = error if isinstance(offline_error, VerificationError) and offline_error.code == "TokenMissing" else offline_error
                return WatchProbe(state("unreachable", code=reason.code, error=reason), transient=error)
            entitlement = offline.entitlement
            return WatchProbe(state("valid", source="offline", entitlement=entitlement, features=list(entitlement.features), code=error.code, error=error), transient=error)
        probe = WatchProbe(state("valid", source="online", entitlement=online.entitlement, features=list(online.entitlement.features)))
        # Back online: what was recorded meanwhile goes now.
        try:
            probe.usage = self.flush_usage(license_key)
            if probe.usage.stopped_by is not None:
                probe.errors.append(probe.usage.stopped_by)
        except KeyforgeError as error:
            probe.errors.append(error)
        return probe

    # -- license files ----------------------------------------------------------------------------------------

    def verify_license_file(
        self,
        text: str,
        *,
        license_key: Optional[str] = None,
        device_id: Optional[str] = None,
        require_activation: bool = False,
        fetch_keys: bool = False,
    ) -> Entitlement:
        """Verifies a signed license file offline: opened with the license key when encrypted, signed by a pinned
        or cached key (EdDSA), not expired, for this product and (when given) bound to this device, and the clock not
        set back. Raises the errors of :meth:`validate_offline`."""
        token = open_license_file(text, license_key=license_key, device_id=device_id)
        high_water = None
        if license_key:
            try:
                high_water = self._load(license_key)["lastSeenAt"] / 1000
            except VerificationError:
                high_water = None
        return self._verify_file_token(token, device_id=device_id, require_activation=require_activation, fetch_keys=fetch_keys, high_water=high_water)

    def install_license_file(
        self,
        text: str,
        *,
        license_key: str,
        device_id: Optional[str] = None,
        require_activation: bool = False,
        fetch_keys: bool = False,
    ) -> Validation:
        """Verifies a license file (as :meth:`verify_license_file`) and stores it for the license, so
        :meth:`validate_offline` answers from it until it expires."""
        license_key = _require_key(license_key)
        token = open_license_file(text, license_key=license_key, device_id=device_id)
        return self._store_file(self._record_key(license_key), token, device_id=device_id, require_activation=require_activation, fetch_keys=fetch_keys)

    def fetch_license_file(self, license_key: str, *, device_id: Optional[str] = None, encrypt: bool = False) -> Validation:
        """Fetches a signed license file while online (``POST /api/v1/license-file``) and installs it. With
        ``device_id`` the file is bound to this device, which must hold an activation; ``encrypt`` asks for a file
        that reveals nothing without the key (and device). ``license_file`` of the result holds the file's text."""
        license_key = _require_key(license_key)
        body = {"licenseKey": license_key, **_optional(deviceId=device_id, encrypt=True if encrypt else None)}
        answer = self._transport.retrying(lambda _n: self._transport.once("POST", "/api/v1/license-file", body=body)).json
        if answer.get("isValid") is not True:
            raise _rejection(answer)
        text = answer.get("licenseFile")
        if not isinstance(text, str):
            raise ApiError("InvalidResponse", "POST /api/v1/license-file answered without a file.", status=200)
        validation = self.install_license_file(text, license_key=license_key, device_id=device_id, require_activation=device_id is not None)
        return dataclasses.replace(validation, license_file=text)

    # -- air-gapped -------------------------------------------------------------------------------------------

    def create_activation_request(
        self,
        license_key: str,
        *,
        device_id: Optional[str] = None,
        device_name: Optional[str] = None,
        version: Optional[str] = None,
    ) -> ActivationRequest:
        """Writes an activation request for a machine that cannot reach the server: this device's id and name, a
        fresh Ed25519 public key (the private half stays in the store), a random challenge, the key's public hint and
        a MAC under the license key (proof the key was at hand, without the key). A newer request replaces an
        unanswered one."""
        license_key = _require_key(license_key)
        device = device_id if device_id is not None else self.device_id()
        key = DeviceKey.generate()
        challenge = _random_token(32)
        fields: Dict[str, Any] = {
            "v": 1,
            "hint": key_hint(license_key),
            "device": device,
            "name": device_name,
            "pub": key.pub,
            "challenge": challenge,
            "iat": int(self._clock()),
            "product": list(self.products),
            "version": version,
        }
        mac = request_mac(license_key, fields)
        digest = self._digest(license_key)
        with self._lock:
            record = self._device_keys(digest)
            record["pending"] = {**key.to_json(), "deviceId": device, "challenge": challenge}
            self._store.set(f"device-key:{digest}", json.dumps(record))
            self._store.set(f"offline-request:{challenge}", digest)
        encoded = encode_request({**fields, "mac": mac})
        return ActivationRequest(encoded["request"], encoded["compact"], device, challenge)

    def apply_activation_response(self, text: str, *, license_key: Optional[str] = None) -> Validation:
        """Installs the answer to this installation's activation request: a device license file that must echo the
        request's challenge (``ChallengeMismatch`` otherwise), be bound to its device and device key (``WrongDevice``),
        attest the activation and verify as :meth:`verify_license_file` does. ``license_key`` is needed only when the
        response was encrypted."""
        with self._lock:
            if license_key:
                pending_device = self._device_keys(self._digest(license_key)).get("pending")
                device = pending_device.get("deviceId") if isinstance(pending_device, dict) else None
                token = open_license_file(text, license_key=license_key, device_id=device if isinstance(device, str) else None)
            else:
                token = open_license_file(text)
            challenge = decode_payload(token).get("nonce")
            digest = self._store.get(f"offline-request:{challenge}") if isinstance(challenge, str) else None
            pending = self._device_keys(digest).get("pending") if digest else None
            if not digest or not isinstance(pending, dict) or pending.get("challenge") != challenge:
                raise VerificationError("ChallengeMismatch", "This is not the answer to the last activation request of this installation (or it was applied already).")
            validation = self._store_file(f"license:{digest}", token, device_id=str(pending.get("deviceId")), require_activation=True, challenge=str(challenge))
            claims = validation.entitlement.claims
            if claims.get("deviceKey") != pending.get("pub") or not isinstance(claims.get("activation"), str):
                self._store.delete(f"license:{digest}")
                raise VerificationError("WrongDevice", "The response is bound to another device key: not the answer to this installation's request.")
            active = {
                "jwk": pending.get("jwk"),
                "pub": pending.get("pub"),
                "deviceId": pending.get("deviceId"),
                "activation": claims["activation"],
                "license": validation.entitlement.license_id,
            }
            self._store.set(f"device-key:{digest}", json.dumps({"v": 1, "active": active}))
            self._store.delete(f"offline-request:{challenge}")
        return validation

    def deactivate_offline(self, license_key: str) -> OfflineDeactivation:
        """Offline deactivation: deletes the license file (and token) stored for the license and returns a proof,
        signed with this device's private key, that frees the seat once uploaded (customer portal, console, GraphQL
        ``deactivateOffline``). Keep it until then. Raises ``TokenMissing`` without an air-gapped activation."""
        license_key = _require_key(license_key)
        digest = self._digest(license_key)
        with self._lock:
            active = self._device_keys(digest).get("active")
            jwk = active.get("jwk") if isinstance(active, dict) else None
            if not isinstance(active, dict) or not isinstance(jwk, dict) or not isinstance(jwk.get("d"), str):
                raise VerificationError("TokenMissing", "This installation holds no offline activation of this license (apply an activation response first).")
            key = DeviceKey(jwk={str(k): str(v) for k, v in jwk.items()}, pub=str(active.get("pub")))
            proof = sign_deactivation_proof(key, str(active.get("activation")), str(active.get("license")), str(active.get("deviceId")), int(self._clock()))
            self.forget(license_key)
            self._store.delete(f"device-key:{digest}")
        return OfflineDeactivation(proof, str(active.get("activation")), str(active.get("deviceId")))

    # -- floating seats ---------------------------------------------------------------------------------------

    def checkout(
        self,
        license_key: str,
        *,
        device_id: Optional[str] = None,
        device_name: Optional[str] = None,
        version: Optional[str] = None,
        heartbeat_interval: Optional[float] = None,
        on_lost: Optional[Callable[[KeyforgeError], None]] = None,
        on_heartbeat_error: Optional[Callable[[Exception], None]] = None,
    ) -> FloatingSession:
        """Takes a floating seat and returns the session, which heartbeats itself on a daemon thread at the server's
        interval until :meth:`FloatingSession.checkin` (or the end of a ``with`` block). Retries replace their own
        unanswered checkout (same device), so a lost answer never holds a second seat.

        Raises :class:`LicenseRejectedError` ``FloatingSeatsExhausted`` (retry later), ``FloatingNotEnabled``,
        ``ProductMismatch`` ...
        """
        license_key = _require_key(license_key)
        device = device_id if device_id is not None else _random_token(24)
        body = {"licenseKey": license_key, "deviceId": device, "product": self._product_field(), **_optional(deviceName=device_name, version=version)}
        answer = self._transport.retrying(lambda _n: self._transport.once("POST", "/api/v1/float/checkout", body=body)).json
        if answer.get("isValid") is not True:
            raise _rejection(answer)
        if not isinstance(answer.get("sessionToken"), str) or not isinstance(answer.get("sessionId"), str):
            raise ApiError("InvalidResponse", "POST /api/v1/float/checkout answered without a session.", status=200)
        return FloatingSession(answer, device, self._transport, heartbeat_interval, on_lost, on_heartbeat_error)

    # -- metering ---------------------------------------------------------------------------------------------

    def meter(
        self,
        license_key: str,
        event: str,
        quantity: int = 1,
        *,
        timestamp: Union[None, str, datetime.datetime] = None,
        idempotency_key: Optional[str] = None,
        queue_offline: bool = False,
    ) -> Union[MeterResult, QueuedMeter]:
        """Records usage. Every attempt carries the same idempotency key (a random one per call unless you pass your
        own, e.g. your usage record's id), so a retry after a lost answer is counted once (``replayed``).

        ``queue_offline``: usage that cannot reach the server (no answer, 429, 502-504 after the retries) is kept in
        the store with its idempotency key and the time of this call, and a :class:`QueuedMeter` is returned; while
        records wait, later calls queue behind them, so usage is sent in the order it happened. The queue is sent by
        the next ``meter`` call that gets through and by :meth:`flush_usage`.

        Raises :class:`LicenseRejectedError` ``QuotaExceeded`` (``response`` holds ``total``, ``limit``, ``remaining``).
        """
        license_key = _require_key(license_key)
        key = idempotency_key if idempotency_key is not None else _random_token(16)
        stamp = _iso(timestamp) if isinstance(timestamp, datetime.datetime) else timestamp
        body: Dict[str, Any] = {"event": event, "quantity": quantity, "idempotencyKey": key, **_optional(timestamp=stamp)}
        if not queue_offline:
            return self._send_usage(license_key, body)
        record = QueuedUsage(event, quantity, stamp if stamp is not None else _iso(self._server_now(license_key)), key)
        name = self._usage_name(license_key)
        if self._usage.list(name):
            # Behind what is waiting, so the server gets usage in the order it happened.
            self._usage.append(name, record)
            flushed = self.flush_usage(license_key)
            for sent in flushed.sent:
                if sent.idempotency_key == key:
                    return sent
            for dropped, error in flushed.dropped:
                if dropped.idempotency_key == key:
                    raise error
            return QueuedMeter(record.event, record.quantity, record.timestamp, key, flushed.stopped_by)
        try:
            return self._send_usage(license_key, body)
        except KeyforgeError as error:
            if not is_transient(error):
                raise
            self._usage.append(name, record)
            return QueuedMeter(record.event, record.quantity, record.timestamp, key, error)

    def flush_usage(self, license_key: str) -> UsageFlush:
        """Sends the usage queued for a license, one record at a time in the order recorded, each with its
        idempotency key and original timestamp. A record the server refuses for good is removed and listed in
        ``dropped``; the first that gets no answer stops the flush, and it and the rest stay queued."""
        license_key = _require_key(license_key)
        name = self._usage_name(license_key)

        def work() -> UsageFlush:
            report = UsageFlush()
            for record in self._usage.list(name):
                try:
                    report.sent.append(self._send_usage(license_key, record.to_json()))
                except KeyforgeError as error:
                    definite = isinstance(error, LicenseRejectedError) or (isinstance(error, ApiError) and 400 <= error.status < 500 and not is_transient(error))
                    if not definite:
                        report.stopped_by = error
                        break
                    report.dropped.append((record, error))
                self._usage.remove(name, record.idempotency_key)
            report.remaining = len(self._usage.list(name))
            return report

        return self._usage.exclusive(name, work)

    def pending_usage(self, license_key: str) -> List[QueuedUsage]:
        """The usage records of a license waiting to be sent, oldest first."""
        return self._usage.list(self._usage_name(_require_key(license_key)))

    def _send_usage(self, license_key: str, body: Mapping[str, Any]) -> MeterResult:
        answer = self._transport.retrying(lambda _n: self._transport.once("POST", "/api/v1/meter", body={"licenseKey": license_key, **body}))
        json_body = answer.json
        if json_body.get("isValid") is not True:
            raise _rejection(json_body)
        return MeterResult(
            event=str(json_body.get("event", body.get("event"))),
            quantity=_int(json_body.get("quantity")) or int(body.get("quantity", 1)),
            occurred_at=_str(json_body.get("occurredAt")),
            period=_str(json_body.get("period")),
            period_start=_str(json_body.get("periodStart")),
            period_end=_str(json_body.get("periodEnd")),
            total=_int(json_body.get("total")),
            limit=_int(json_body.get("limit")),
            remaining=_int(json_body.get("remaining")),
            idempotency_key=str(body.get("idempotencyKey")),
            replayed=answer.headers.get("idempotent-replayed") == "true",
            response=json_body,
        )

    def _server_now(self, license_key: str) -> float:
        """Now on the server's clock as this client estimates it (the local clock when no token tells the difference)."""
        try:
            return self._clock() + float(self._load(license_key)["skewMs"]) / 1000
        except VerificationError:
            return self._clock()

    # -- releases ---------------------------------------------------------------------------------------------

    def list_releases(
        self,
        license_key: str,
        *,
        channel: Optional[str] = None,
        platform: Optional[str] = None,
        arch: Optional[str] = None,
        device_id: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> List[Dict[str, Any]]:
        """The published releases this license may download (its features and maintenance period allow), newest
        first, of ``channel`` (default stable) and the more stable ones, with the artifacts of ``platform``/``arch``
        (default: this process's, see :func:`keyforge.releases.current_platform`). Each release and artifact is the
        API's JSON object. The key goes in the ``Authorization: License`` header, never in the URL; with ``device_id``
        the device must hold an activation.

        Raises :class:`LicenseRejectedError` / :class:`ApiError` (``ProductMismatch``, ``LicenseNotFound`` …).
        """
        answer = self._release_call("/api/v1/releases", license_key, device_id, {**self._release_query(channel, platform, arch), "limit": limit})
        releases = answer.get("releases")
        if not isinstance(releases, list):
            raise ApiError("InvalidResponse", "GET /api/v1/releases answered without releases.", status=200)
        return releases

    def check_for_update(
        self,
        license_key: str,
        current_version: str,
        *,
        channel: Optional[str] = None,
        platform: Optional[str] = None,
        arch: Optional[str] = None,
        device_id: Optional[str] = None,
    ) -> UpdateCheck:
        """Whether a release newer than ``current_version`` (semver) is available to this license on ``channel``
        (default stable) for ``platform``/``arch`` (default: this process's). Raises ``InvalidRequest`` for a
        version that is not semantic, and the errors of :meth:`list_releases`."""
        if not isinstance(current_version, str) or not current_version:
            raise TypeError("current_version must be the running version (semver).")
        answer = self._release_call("/api/v1/releases/upgrade", license_key, device_id, {"version": current_version, **self._release_query(channel, platform, arch)})
        available = answer.get("available")
        if not isinstance(available, bool):
            raise ApiError("InvalidResponse", "GET /api/v1/releases/upgrade answered without `available`.", status=200)
        release = answer.get("release") if isinstance(answer.get("release"), dict) else None
        reason = None if available else (answer.get("reason") if isinstance(answer.get("reason"), str) else "NoNewerRelease")
        return UpdateCheck(available, reason, release)

    def download_artifact(
        self,
        license_key: str,
        artifact: Mapping[str, Any],
        path: Optional[str] = None,
        *,
        device_id: Optional[str] = None,
    ) -> Union[bytes, str]:
        """Downloads an artifact and returns it only once it checks out: the signature first (as an offline token:
        EdDSA, a trusted ``kid``, the issuer; then this artifact of this product), then the file, read with a cap of
        the signed size and hashed as it arrives, whose size, SHA-256 and SHA-512 must be the signed ones.

        The link comes from ``GET /api/v1/artifacts/{id}/download`` (the key in the header); the file is fetched from
        that link alone — possibly another host (a presigned object-store URL) — with no credentials and no redirect
        followed; a link on the server's public address (the ``issuer``) is fetched through ``base_url``. ``timeout`` bounds each wait for data, not the whole download. Transient failures are retried.

        Without ``path`` the bytes are returned (held in memory). With ``path`` the file is streamed to a temporary
        file beside it (mode 0600), renamed to ``path`` once verified, and ``path`` is returned; on any failure the
        temporary file is removed and ``path`` is untouched.

        Raises :class:`VerificationError` ``ArtifactIntegrity`` when anything does not match; :class:`KeyforgeError`
        ``FileWriteFailed`` when the file cannot be written (a folder that does not exist or is not writable, a full
        disk: not retried); the errors of :meth:`list_releases`.
        """
        claims = self._artifact_claims(artifact)
        answer = self._release_call(f"/api/v1/artifacts/{urllib.parse.quote(str(artifact.get('id')), safe='')}/download", license_key, device_id, {})
        url = answer.get("url")
        if not isinstance(url, str):
            raise ApiError("InvalidResponse", "The download answer carries no link.", status=200)
        # A link on the server's own public address (the issuer, its PUBLIC_URL) is fetched through base_url, the
        # address this client reaches the same server at; any other link (an object store's) as it is.
        issuer = self.issuer.rstrip("/")
        if issuer != self.base_url and url.startswith(issuer + "/"):
            url = self.base_url + url[len(issuer):]
        transport = self._transport.for_url(url)
        parsed = urllib.parse.urlsplit(url)
        target = (parsed.path or "/") + (f"?{parsed.query}" if parsed.query else "")
        if path is None:
            chunks: List[bytes] = []

            def attempt_memory(_n: int) -> ArtifactDigest:
                chunks.clear()
                digest = ArtifactDigest()

                def write(chunk: bytes) -> None:
                    digest.update(chunk)
                    chunks.append(chunk)

                transport.download(target, claims["size"], write)
                return digest

            self._transport.retrying(attempt_memory).check(claims)
            return b"".join(chunks)
        directory = os.path.dirname(os.path.abspath(path))
        temporary: Optional[str] = None
        try:
            # An OSError that gets here is the disk's: the transport raises the network's as NetworkError.
            with _writing(directory):
                descriptor, temporary = tempfile.mkstemp(prefix=".keyforge-download-", dir=directory)
                with os.fdopen(descriptor, "wb") as handle:

                    def attempt_file(_n: int) -> ArtifactDigest:
                        handle.seek(0)
                        handle.truncate()
                        digest = ArtifactDigest()

                        def write(chunk: bytes) -> None:
                            digest.update(chunk)
                            # Inside the transport's read loop an OSError would pass for the network's (and be
                            # retried): the disk's is raised as FileWriteFailed here.
                            with _writing(directory):
                                handle.write(chunk)

                        transport.download(target, claims["size"], write)
                        return digest

                    self._transport.retrying(attempt_file).check(claims)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(temporary, path)
        except BaseException:
            if temporary is not None:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass
            raise
        return path

    def verify_artifact(self, artifact: Mapping[str, Any], data: bytes) -> Dict[str, Any]:
        """Checks bytes obtained another way (an updater's own download) against an artifact's signature: the
        checks of :meth:`download_artifact`. Returns the signed claims; raises ``ArtifactIntegrity``."""
        claims = self._artifact_claims(artifact)
        digest = ArtifactDigest()
        digest.update(bytes(data))
        digest.check(claims)
        return claims

    def _artifact_claims(self, artifact: Mapping[str, Any]) -> Dict[str, Any]:
        return verify_artifact_signature(artifact, lambda kid: self._keys.key_for(kid, True), issuer=self.issuer, products=self.products)

    @staticmethod
    def _release_query(channel: Optional[str], platform: Optional[str], arch: Optional[str]) -> Dict[str, Optional[str]]:
        here_platform, here_arch = current_platform()
        return {"channel": channel, "platform": platform if platform is not None else here_platform, "arch": arch if arch is not None else here_arch}

    def _release_call(self, path: str, license_key: str, device_id: Optional[str], query: Mapping[str, Any]) -> Dict[str, Any]:
        """A GET of the release API: the key in ``Authorization: License``, the product and the device in the query."""
        license_key = _require_key(license_key)
        params = [("product", self.products[0])] + [(name, str(value)) for name, value in {**query, "deviceId": device_id}.items() if value is not None]
        target = f"{path}?{urllib.parse.urlencode(params)}"
        answer = self._transport.retrying(lambda _n: self._transport.once("GET", target, license=license_key)).json
        if answer.get("isValid") is False:
            raise _rejection(answer)
        return answer

    # -- internals --------------------------------------------------------------------------------------------

    def _verify(
        self,
        token: str,
        *,
        online: bool,
        now: float,
        challenge: Optional[str] = None,
        device_id: Optional[str] = None,
        require_activation: bool = False,
    ) -> Entitlement:
        return verify_claims(
            token,
            lambda kid: self._keys.key_for(kid, online),
            issuer=self.issuer,
            products=self.products,
            now=now,
            clock_tolerance=self._tolerance,
            device_id=device_id,
            require_activation=require_activation,
            challenge=challenge,
        )

    def _verify_file_token(
        self,
        token: str,
        *,
        device_id: Optional[str],
        require_activation: bool,
        fetch_keys: bool,
        high_water: Optional[float],
        challenge: Optional[str] = None,
    ) -> Entitlement:
        now = self._clock()
        if high_water is not None and now < high_water - self._tolerance:
            raise VerificationError("ClockRollback", "The clock is earlier than a time already seen for this license: it has been set back.")
        entitlement = self._verify(token, online=fetch_keys, now=now, device_id=device_id, require_activation=require_activation, challenge=challenge)
        if entitlement.claims.get("kind") != LICENSE_FILE_KIND:
            raise VerificationError("TokenInvalid", "This is not a license file (an online token, or something else).")
        if now < entitlement.issued_at.timestamp() - self._tolerance:
            raise VerificationError("ClockRollback", "The clock is earlier than the time the license file was issued: it has been set back.")
        return entitlement

    def _store_file(
        self,
        record_key: str,
        token: str,
        *,
        device_id: Optional[str],
        require_activation: bool,
        fetch_keys: bool = False,
        challenge: Optional[str] = None,
    ) -> Validation:
        with self._lock:
            high_water: Optional[float] = None
            raw = self._store.get(record_key)
            if raw:
                try:
                    previous = loads(raw)
                except (ValueError, RecursionError):
                    previous = None
                if isinstance(previous, dict) and _finite(previous.get("lastSeenAt")):
                    high_water = previous["lastSeenAt"] / 1000
            entitlement = self._verify_file_token(token, device_id=device_id, require_activation=require_activation, fetch_keys=fetch_keys, high_water=high_water, challenge=challenge)
            now = self._clock()
            # A file is verified with the local clock (an air-gapped machine has no other): no clock difference is assumed.
            self._store.set(record_key, json.dumps({"v": 1, "token": token, "skewMs": 0, "lastSeenAt": max(now, high_water or 0) * 1000}))
        return Validation("offline", entitlement, None, token, entitlement.expires_at, 0)

    def _device_keys(self, digest: str) -> Dict[str, Any]:
        try:
            raw = self._store.get(f"device-key:{digest}")
            parsed = loads(raw) if raw else None
        except (ValueError, RecursionError):
            parsed = None
        return parsed if isinstance(parsed, dict) and parsed.get("v") == 1 else {"v": 1}

    def _skew(self, token: str, received_at: float) -> float:
        """Server clock minus local clock, from the fresh token's ``iat``; 0 when within the noise."""
        iat = decode_payload(token).get("iat")
        if not _finite(iat):
            return 0.0
        skew = float(iat) - received_at  # type: ignore[arg-type]
        return 0.0 if abs(skew) <= SKEW_NOISE_SECONDS else skew

    def _digest(self, license_key: str) -> str:
        """A digest naming a license in the store, so the store never holds the key itself."""
        return hashlib.sha256(f"{self.issuer}\n{normalize_key(license_key)}".encode("utf-8")).hexdigest()[:32]

    def _record_key(self, license_key: str) -> str:
        return f"license:{self._digest(license_key)}"

    def _usage_name(self, license_key: str) -> str:
        return f"usage:{self._digest(license_key)}"

    def _save(self, license_key: str, record: Dict[str, Any]) -> None:
        with self._lock:
            self._store.set(self._record_key(license_key), json.dumps(record))

    def _load(self, license_key: str) -> Dict[str, Any]:
        raw = self._store.get(self._record_key(license_key))
        if not raw:
            raise VerificationError("TokenMissing", "No verified token is stored for this license: validate online first.")
        try:
            record = loads(raw)
        except (ValueError, RecursionError):
            raise VerificationError("TokenInvalid", "The stored token record is not valid JSON: tampered or corrupted.") from None
        if (
            not isinstance(record, dict)
            or record.get("v") != 1
            or not isinstance(record.get("token"), str)
            or not _finite(record.get("skewMs"))
            or not _finite(record.get("lastSeenAt"))
        ):
            raise VerificationError("TokenInvalid", "The stored token record is malformed: tampered or corrupted.")
        return record


def _iso(moment: Union[float, datetime.datetime]) -> str:
    """ISO 8601 in UTC with milliseconds and ``Z``, as JavaScript's ``toISOString``."""
    if not isinstance(moment, datetime.datetime):
        moment = datetime.datetime.fromtimestamp(moment, tz=datetime.timezone.utc)
    elif moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    moment = moment.astimezone(datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
