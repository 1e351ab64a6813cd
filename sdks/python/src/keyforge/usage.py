"""The per-license queues of usage recorded while the server could not be reached, kept in the client's store."""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, TypeVar

from ._http import loads
from .errors import KeyforgeError
from .stores import TokenStore

__all__ = ["QueuedUsage", "UsageQueue", "MAX_QUEUED_USAGE"]

#: The most records a license's queue holds: a meter call beyond it is refused (``UsageQueueFull``).
MAX_QUEUED_USAGE = 1000

T = TypeVar("T")


@dataclass(frozen=True)
class QueuedUsage:
    """A usage record waiting in the store (never with the license key: the queue's name is a digest of it)."""

    event: str
    quantity: int
    #: When the usage happened (ISO 8601, the server's clock as the client estimates it): what the server records.
    timestamp: str
    #: Sent with every attempt: the server counts the record once however often it arrives.
    idempotency_key: str

    def to_json(self) -> Dict[str, Any]:
        return {"event": self.event, "quantity": self.quantity, "timestamp": self.timestamp, "idempotencyKey": self.idempotency_key}


def _from_json(value: Any) -> "QueuedUsage | None":
    if not isinstance(value, dict):
        return None
    event, quantity, timestamp, key = value.get("event"), value.get("quantity"), value.get("timestamp"), value.get("idempotencyKey")
    if isinstance(event, str) and isinstance(quantity, int) and not isinstance(quantity, bool) and isinstance(timestamp, str) and isinstance(key, str):
        return QueuedUsage(event, quantity, timestamp, key)
    return None


class UsageQueue:
    """Queues in the store (``usage:<digest>``, the TypeScript SDK's format). Changes of one queue are serialized
    within the process, and one sender at a time flushes a queue (records go in order, once)."""

    def __init__(self, store: TokenStore) -> None:
        self._store = store
        self._lock = threading.RLock()
        self._senders: Dict[str, threading.Lock] = {}

    def list(self, name: str) -> List[QueuedUsage]:
        with self._lock:
            raw = self._store.get(name)
        if not raw:
            return []
        try:
            parsed = loads(raw)
        except (ValueError, RecursionError):
            return []  # not JSON (edited or corrupted): nothing usable is queued
        records = parsed.get("records") if isinstance(parsed, dict) else None
        if not isinstance(records, list):
            return []
        return [record for record in map(_from_json, records) if record is not None]

    def append(self, name: str, record: QueuedUsage) -> None:
        """Appends a record (in order); refuses beyond :data:`MAX_QUEUED_USAGE`. A key already queued is not added twice."""
        with self._lock:
            records = self.list(name)
            if any(queued.idempotency_key == record.idempotency_key for queued in records):
                return
            if len(records) >= MAX_QUEUED_USAGE:
                raise KeyforgeError("UsageQueueFull", f"{MAX_QUEUED_USAGE} usage records are already waiting for this license: send them (flush_usage) before recording more offline.")
            self._write(name, records + [record])

    def remove(self, name: str, idempotency_key: str) -> None:
        with self._lock:
            records = self.list(name)
            kept = [record for record in records if record.idempotency_key != idempotency_key]
            if len(kept) != len(records):
                self._write(name, kept)

    def exclusive(self, name: str, work: Callable[[], T]) -> T:
        """Runs ``work`` alone on this queue (a flush)."""
        with self._lock:
            sender = self._senders.setdefault(name, threading.Lock())
        with sender:
            return work()

    def _write(self, name: str, records: List[QueuedUsage]) -> None:
        if records:
            self._store.set(name, json.dumps({"v": 1, "records": [record.to_json() for record in records]}))
        else:
            self._store.delete(name)


