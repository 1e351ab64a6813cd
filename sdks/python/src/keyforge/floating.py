"""Floating seats: a checked-out seat that heartbeats itself on a background thread until it is checked in."""
from __future__ import annotations

import math
import threading
import time
from types import TracebackType
from typing import Any, Callable, Dict, List, Optional, Type

from ._http import Transport, backoff
from .errors import ApiError, KeyforgeError, LicenseRejectedError, is_transient

__all__ = ["FloatingSession"]


def _positive(value: Any, fallback: float) -> float:
    """A positive, finite number from the server, else the documented default (a hostile answer must not make a busy loop)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return fallback


class FloatingSession:
    """A floating seat (from :meth:`KeyforgeClient.checkout`).

    A daemon thread heartbeats every ``heartbeat_interval`` seconds (the server's ``heartbeatIntervalSeconds``,
    or more often when asked). Transient heartbeat failures (network, 429, 503) are retried with backoff; the seat
    is reported lost (``state == "lost"``, ``on_lost`` called, :attr:`lost` set) when the server rejects a heartbeat
    or when no heartbeat got through for a whole lease (``LeaseLapsed``). :meth:`checkin` (or leaving a ``with``
    block) stops the heartbeats and frees the seat. Safe to use from several threads; callbacks run on the
    heartbeat thread and must not block for long. The session token stays inside this object.
    """

    def __init__(
        self,
        answer: Dict[str, Any],
        device_id: str,
        transport: Transport,
        heartbeat_interval: Optional[float] = None,
        on_lost: Optional[Callable[[KeyforgeError], None]] = None,
        on_heartbeat_error: Optional[Callable[[Exception], None]] = None,
    ) -> None:
        self._token = str(answer["sessionToken"])
        self._transport = transport
        self._wanted = heartbeat_interval
        self._on_lost = on_lost
        self._on_heartbeat_error = on_heartbeat_error
        self.session_id: str = str(answer["sessionId"])
        self.device_id = device_id
        self.product_name: Optional[str] = answer.get("productName") if isinstance(answer.get("productName"), str) else None
        features = answer.get("features")
        self.features: List[str] = [item for item in features if isinstance(item, str)] if isinstance(features, list) else []
        self.expires_at: Optional[str] = answer.get("expiresAt") if isinstance(answer.get("expiresAt"), str) else None
        self.floating_seats: Optional[int] = answer.get("floatingSeats") if isinstance(answer.get("floatingSeats"), int) else None
        #: Seats still free right after this checkout.
        self.remaining_floating_seats: Optional[int] = answer.get("remainingFloatingSeats") if isinstance(answer.get("remainingFloatingSeats"), int) else None
        self.vendor_warning: Optional[str] = answer.get("vendorWarning") if isinstance(answer.get("vendorWarning"), str) else None
        self.lease_seconds = _positive(answer.get("leaseSeconds"), 300.0)
        #: The lease end the server last confirmed (ISO 8601).
        self.lease_expires_at: Optional[str] = answer.get("leaseExpiresAt") if isinstance(answer.get("leaseExpiresAt"), str) else None
        self.heartbeat_interval = self._interval(answer.get("heartbeatIntervalSeconds"))
        #: Why the seat was lost (state ``lost``).
        self.lost_reason: Optional[KeyforgeError] = None
        #: Set when the seat is lost or checked in: wait on it, or test it, in work that must stop without a seat.
        self.lost = threading.Event()
        self._state = "active"
        self._lock = threading.RLock()
        self._beat_lock = threading.RLock()
        self._wake = threading.Event()
        self._renewed_at = time.monotonic()
        self._failures = 0
        self._checkin_result: Optional[Dict[str, Any]] = None
        self._thread = threading.Thread(target=self._run, name=f"keyforge-heartbeat-{self.session_id[:8]}", daemon=True)
        self._thread.start()

    @property
    def state(self) -> str:
        """``active`` while the seat is held; ``lost`` when the server ended it or the lease lapsed; ``closed`` after checkin."""
        return self._state

    def _interval(self, server_seconds: Any) -> float:
        server = min(_positive(server_seconds, 60.0), self.lease_seconds)
        wanted = self._wanted
        return min(wanted, server) if wanted is not None and wanted > 0 else server

    def heartbeat(self) -> None:
        """Heartbeats now (the thread does it by itself). Raises the reason when the seat is lost."""
        if self._state != "active":
            raise self.lost_reason or KeyforgeError("SessionExpired", "The session is checked in.")
        self._beat()
        if self._state == "lost" and self.lost_reason is not None:
            raise self.lost_reason

    def checkin(self) -> Dict[str, Any]:
        """Frees the seat now (idempotent, retried on transient failures). Heartbeats stop first.

        Returns the server's answer (``checkedIn``, ``sessionId``, ``endedAt``, ``endReason``).
        """
        with self._lock:
            if self._state == "active":
                self._end("closed", None)
            if self._checkin_result is not None:
                return self._checkin_result
        # A heartbeat already on its way goes first, so the server never sees one after the checkin.
        if self._beat_lock.acquire(timeout=self._transport.timeout):
            self._beat_lock.release()
        transport = self._transport
        answer = transport.retrying(lambda _n: transport.once("POST", "/api/v1/float/checkin", body={}, bearer=self._token))
        if answer.json.get("checkedIn") is not True:
            raise LicenseRejectedError(str(answer.json.get("errorCode")), str(answer.json.get("message")), answer.json)
        with self._lock:
            self._checkin_result = answer.json
        return answer.json

    def close(self) -> None:
        """Checks in, never raising: a failed checkin goes to ``on_heartbeat_error`` (the lease then lapses by itself)."""
        try:
            self.checkin()
        except Exception as error:  # noqa: BLE001 - reported, never raised from a close
            if self._on_heartbeat_error is not None:
                self._on_heartbeat_error(error)

    def __enter__(self) -> "FloatingSession":
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], value: Optional[BaseException], traceback: Optional[TracebackType]) -> None:
        self.close()

    def _run(self) -> None:
        delay = self.heartbeat_interval
        while True:
            self._wake.wait(delay)
            if self._state != "active":
                return
            delay = self._beat()

    def _beat(self) -> float:
        """One heartbeat; the delay until the next."""
        with self._beat_lock:
            if self._state != "active":
                return self.heartbeat_interval
            try:
                # One attempt: this loop is the retry (it knows the lease; a heartbeat must not hang in retries).
                answer = self._transport.once("POST", "/api/v1/float/heartbeat", body={}, bearer=self._token)
            except KeyforgeError as error:
                return self._failed(error)
            with self._lock:
                if self._state != "active":
                    return self.heartbeat_interval
                if answer.json.get("isValid") is not True:
                    self._end("lost", LicenseRejectedError(str(answer.json.get("errorCode")), str(answer.json.get("message")), answer.json))
                    return self.heartbeat_interval
                self._renewed_at = time.monotonic()
                self._failures = 0
                if isinstance(answer.json.get("leaseExpiresAt"), str):
                    self.lease_expires_at = answer.json["leaseExpiresAt"]
                if "heartbeatIntervalSeconds" in answer.json:
                    self.heartbeat_interval = self._interval(answer.json["heartbeatIntervalSeconds"])
                return self.heartbeat_interval

    def _failed(self, error: KeyforgeError) -> float:
        with self._lock:
            if self._state != "active":
                return self.heartbeat_interval
            self._failures += 1
        if self._on_heartbeat_error is not None:
            try:
                self._on_heartbeat_error(error)
            except Exception:  # noqa: BLE001 - a throwing callback must not stop the heartbeats
                pass
        since = time.monotonic() - self._renewed_at
        if since >= self.lease_seconds:
            lapsed = KeyforgeError("LeaseLapsed", f"No heartbeat got through for {self.lease_seconds:g} s: the server has freed the seat.")
            lapsed.__cause__ = error
            with self._lock:
                self._end("lost", lapsed)
            return self.heartbeat_interval
        interval = self.heartbeat_interval
        retry_after = error.retry_after_seconds if isinstance(error, ApiError) else None
        # Transient: retry soon (bounded by the interval); anything else: at the next regular heartbeat.
        delay = min(interval, retry_after if retry_after is not None else backoff(self._failures, 1.0, interval)) if is_transient(error) else interval
        # One last try right before the lease would lapse; never a busy loop.
        return max(0.1, min(delay, self.lease_seconds - since))

    def _end(self, state: str, reason: Optional[KeyforgeError]) -> None:
        self._state = state
        self.lost_reason = reason
        self.lost.set()
        self._wake.set()
        if state == "lost" and reason is not None and self._on_lost is not None:
            try:
                self._on_lost(reason)
            except Exception:  # noqa: BLE001 - the application's callback must not kill the heartbeat thread
                pass
