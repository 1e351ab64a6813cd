"""Watching a running application's license: revalidation in the background, reporting what changes."""
from __future__ import annotations

import datetime
import json
import random
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Callable, List, Optional, Type

from ._http import backoff
from .errors import ApiError, KeyforgeError
from .tokens import Entitlement

__all__ = ["LicenseState", "LicenseWatcher", "WatchProbe", "DEFAULT_WATCH_INTERVAL_SECONDS"]

#: Default time between checks: 15 minutes.
DEFAULT_WATCH_INTERVAL_SECONDS = 900.0
#: Never checks more often than this, whatever ``interval`` says (a typo must not hammer the server).
MIN_WATCH_INTERVAL_SECONDS = 1.0
#: The first retry after a failed check comes after about this long (at most the interval); then it doubles.
FIRST_RETRY_SECONDS = 2.0


@dataclass(frozen=True)
class LicenseState:
    """One finding of a :class:`LicenseWatcher`.

    ``status``: ``valid`` (``source`` ``online``, or ``offline`` when the stored token vouches for the license while
    the server is out of reach), ``suspended``, ``revoked``, ``expired``, ``device-freed`` (``DeviceNotActivated``),
    ``not-found``, ``rejected`` (another rejection: ``code``), ``unverified`` (the server answered but the answer did
    not check out) or ``unreachable`` (no answer, and no stored token vouches for the license).
    """

    status: str
    source: Optional[str]
    entitlement: Optional[Entitlement]
    features: List[str]
    #: The rejection, verification, HTTP or network code behind a status other than an online ``valid``; else None.
    code: Optional[str]
    error: Optional[BaseException] = field(compare=False)
    checked_at: datetime.datetime = field(compare=False)


@dataclass
class WatchProbe:
    state: LicenseState
    #: The transient failure (no answer, 429, 502-504) the check met, if any: the next check backs off.
    transient: Optional[KeyforgeError] = None
    usage: Any = None
    errors: List[BaseException] = field(default_factory=list)


def _signature(state: LicenseState) -> str:
    """What makes two findings "the same" for on_change: the status, its source, the features, the license's expiry."""
    expiry = state.entitlement.license_expires_at if state.entitlement is not None else None
    return json.dumps([state.status, state.source, sorted(state.features), expiry, state.code if state.status in ("rejected", "unverified") else None])


class LicenseWatcher:
    """Revalidates a license on a daemon thread (from :meth:`KeyforgeClient.watch`).

    It checks at once, then every ``interval`` seconds with ±10 % jitter (so a fleet started together spreads out); a
    check that gets no answer is retried sooner with exponential backoff (about 2 s, 4 s, 8 s …, never longer than the
    interval, at least the server's ``Retry-After``) while the stored token answers. ``on_change`` is called with the
    first finding and whenever the status, its source, the features or the license's expiry change. Callbacks run on
    the watcher's thread. :meth:`stop` (or leaving a ``with`` block) ends it.
    """

    def __init__(
        self,
        probe: Callable[[], WatchProbe],
        on_change: Callable[[LicenseState, Optional[LicenseState]], None],
        interval: float = DEFAULT_WATCH_INTERVAL_SECONDS,
        on_error: Optional[Callable[[BaseException], None]] = None,
        on_usage_flushed: Optional[Callable[[Any], None]] = None,
    ) -> None:
        if not isinstance(interval, (int, float)) or isinstance(interval, bool) or not interval > 0 or interval == float("inf"):
            raise TypeError("interval must be a positive number of seconds.")
        self.interval = max(MIN_WATCH_INTERVAL_SECONDS, float(interval))
        self._probe = probe
        self._on_change = on_change
        self._on_error = on_error
        self._on_usage_flushed = on_usage_flushed
        self._state: Optional[LicenseState] = None
        self._failures = 0
        self._checking = threading.Lock()
        self._stopped = threading.Event()
        self._wake = threading.Event()
        self._due = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="keyforge-watch", daemon=True)
        self._thread.start()

    @property
    def state(self) -> Optional[LicenseState]:
        """The last finding (None before the first check ends)."""
        return self._state

    @property
    def active(self) -> bool:
        """False once stopped."""
        return not self._stopped.is_set()

    def check(self) -> LicenseState:
        """Checks now (after a check already under way) and returns the finding; the schedule restarts from it."""
        if not self.active:
            raise RuntimeError("The watcher is stopped.")
        with self._checking:
            probe = self._probe()
            state = probe.state
            if not self.active:
                return state
            previous, self._state = self._state, state
            if probe.transient is not None:
                self._failures += 1
                self._report(probe.transient)
            else:
                self._failures = 0
            for error in probe.errors:
                self._report(error)
            usage = probe.usage
            if usage is not None and (usage.sent or usage.dropped) and self._on_usage_flushed is not None:
                try:
                    self._on_usage_flushed(usage)
                except Exception as error:  # noqa: BLE001 - a throwing callback must not stop the watcher
                    self._report(error)
            if previous is None or _signature(previous) != _signature(state):
                try:
                    self._on_change(state, previous)
                except Exception as error:  # noqa: BLE001
                    self._report(error)
            self._due = time.monotonic() + self._delay(probe.transient)
            self._wake.set()
            return state

    def stop(self) -> None:
        """Stops checking (a check under way finishes without reporting). Idempotent."""
        self._stopped.set()
        self._wake.set()

    def __enter__(self) -> "LicenseWatcher":
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], value: Optional[BaseException], traceback: Optional[TracebackType]) -> None:
        self.stop()

    def _delay(self, transient: Optional[KeyforgeError]) -> float:
        if transient is None:
            return self.interval * (0.9 + random.random() * 0.2)
        retry_after = transient.retry_after_seconds if isinstance(transient, ApiError) and transient.retry_after_seconds is not None else 0.0
        return max(retry_after, backoff(self._failures, min(FIRST_RETRY_SECONDS, self.interval), self.interval))

    def _loop(self) -> None:
        while self.active:
            wait = self._due - time.monotonic()
            if wait > 0:
                self._wake.wait(wait)
                self._wake.clear()
                continue
            try:
                self.check()
            except Exception as error:  # noqa: BLE001 - the probe reports its own failures: this is a bug or a store error
                if self.active:
                    self._report(error)
                    self._due = time.monotonic() + self.interval

    def _report(self, error: BaseException) -> None:
        if self._on_error is None:
            return
        try:
            self._on_error(error)
        except Exception:  # noqa: BLE001 - a throwing error hook must not stop the watcher
            pass
