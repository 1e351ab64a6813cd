"""The background watcher against a local server: the first finding, a change reported once, the stored token
while the server is away, a freed device, queued usage sent once back online, and stop."""
import threading
import time
from typing import Any, Iterator, List, Optional, Tuple

import pytest

from keyforge import KeyforgeClient, LicenseState, QueuedMeter, RetryPolicy
from stub_server import Request, Signer, StubServer, claims_for

KEY = "ACME-7KQ2-M9XH-4TRB-WZ3P"


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer()
    yield server
    server.close()


def serve(stub: StubServer, signer: Signer, features: List[str]) -> None:
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: (200, {}, {"keys": [signer.jwk()]})

    def validate(request: Request) -> Any:
        body = request.json()
        extra = {"device": body["deviceId"], "deviceActivated": True} if body.get("requireActivation") else {}
        token = signer.token(claims_for(stub.url, nonce=body["challenge"], features=features, **extra))
        return 200, {}, {"isValid": True, "offlineCacheToken": token}

    stub.routes["POST /api/v1/validate"] = validate


def watching(client: KeyforgeClient, **options: Any) -> Tuple[Any, List[Tuple[LicenseState, Optional[LicenseState]]], List[BaseException]]:
    changes: List[Tuple[LicenseState, Optional[LicenseState]]] = []
    errors: List[BaseException] = []
    first = threading.Event()

    def on_change(state: LicenseState, previous: Optional[LicenseState]) -> None:
        changes.append((state, previous))
        first.set()

    watcher = client.watch(KEY, on_change=on_change, on_error=errors.append, interval=3600, **options)
    assert first.wait(15), "the first check did not report"
    return watcher, changes, errors


def test_changes_are_reported_once_each(stub: StubServer) -> None:
    signer = Signer("k1")
    serve(stub, signer, ["export"])
    client = KeyforgeClient(stub.url, "Acme Studio", retry=RetryPolicy(attempts=1))
    watcher, changes, _ = watching(client)
    with watcher:
        assert (changes[0][0].status, changes[0][0].source, changes[0][0].features, changes[0][1]) == ("valid", "online", ["export"], None)
        watcher.check()
        assert len(changes) == 1  # nothing changed: nothing reported
        serve(stub, signer, ["export", "render"])
        assert watcher.check().features == ["export", "render"] and len(changes) == 2
        stub.routes["POST /api/v1/validate"] = lambda _r: (200, {}, {"isValid": False, "errorCode": "LicenseRevoked", "message": "revoked"})
        state = watcher.check()
        assert (state.status, state.code, state.entitlement) == ("revoked", "LicenseRevoked", None)
        assert changes[-1][1] is not None and changes[-1][1].status == "valid"
    assert not watcher.active
    with pytest.raises(RuntimeError):
        watcher.check()


def test_the_stored_token_answers_while_the_server_is_away_then_unreachable_without_one(stub: StubServer) -> None:
    signer = Signer("k1")
    serve(stub, signer, ["export"])
    client = KeyforgeClient(stub.url, "Acme Studio", retry=RetryPolicy(attempts=1))
    watcher, changes, errors = watching(client)
    with watcher:
        stub.routes["POST /api/v1/validate"] = lambda _r: (503, {"Retry-After": "1"}, {"error": {"code": "ServiceUnavailable", "message": "db"}})
        state = watcher.check()
        assert (state.status, state.source, state.code) == ("valid", "offline", "ServiceUnavailable")
        assert [error.code for error in errors] == ["ServiceUnavailable"]  # type: ignore[attr-defined]
        client.forget(KEY)
        state = watcher.check()
        assert (state.status, state.code) == ("unreachable", "ServiceUnavailable")
        assert [change[0].status for change in changes] == ["valid", "valid", "unreachable"]


def test_a_device_scoped_watch_reports_a_freed_device(stub: StubServer) -> None:
    signer = Signer("k1")
    serve(stub, signer, ["export"])
    client = KeyforgeClient(stub.url, "Acme Studio", retry=RetryPolicy(attempts=1))
    watcher, changes, _ = watching(client, device_id="device-1")
    with watcher:
        sent = [request.json() for request in stub.requests if request.path == "/api/v1/validate"][0]
        assert sent["deviceId"] == "device-1" and sent["requireActivation"] is True
        assert changes[0][0].entitlement is not None and changes[0][0].entitlement.device_activated
        stub.routes["POST /api/v1/validate"] = lambda _r: (200, {}, {"isValid": False, "errorCode": "DeviceNotActivated", "message": "freed"})
        assert watcher.check().status == "device-freed"


def test_queued_usage_is_sent_after_an_online_check(stub: StubServer) -> None:
    signer = Signer("k1")
    serve(stub, signer, ["export"])
    stub.routes["POST /api/v1/meter"] = lambda _r: (503, {}, {"error": {"code": "ServiceUnavailable", "message": "db"}})
    client = KeyforgeClient(stub.url, "Acme Studio", retry=RetryPolicy(attempts=1))
    assert isinstance(client.meter(KEY, "exports", 2, queue_offline=True, idempotency_key="u-1"), QueuedMeter)
    stub.routes["POST /api/v1/meter"] = lambda request: (200, {}, {"isValid": True, "event": "exports", "quantity": 2, "total": 2, "limit": None, "remaining": None})
    flushed: List[Any] = []
    changes: List[Any] = []
    done = threading.Event()
    watcher = client.watch(KEY, on_change=lambda state, _previous: changes.append(state), on_usage_flushed=lambda report: (flushed.append(report), done.set()), interval=3600)
    with watcher:
        assert done.wait(15)
        assert [result.idempotency_key for result in flushed[0].sent] == ["u-1"] and client.pending_usage(KEY) == []


def test_stop_ends_the_checks(stub: StubServer) -> None:
    signer = Signer("k1")
    serve(stub, signer, ["export"])
    client = KeyforgeClient(stub.url, "Acme Studio", retry=RetryPolicy(attempts=1))
    watcher = client.watch(KEY, on_change=lambda *_: None, interval=1)
    deadline = time.monotonic() + 20
    while stub.count("POST", "/api/v1/validate") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stub.count("POST", "/api/v1/validate") >= 2  # the schedule runs by itself
    watcher.stop()
    after = stub.count("POST", "/api/v1/validate")
    time.sleep(2.5)
    # At most a request already sent when it stopped (it may arrive late); still checking, it would send two or more.
    assert stub.count("POST", "/api/v1/validate") <= after + 1
    with pytest.raises(TypeError):
        client.watch(KEY, on_change=lambda *_: None, interval=0)
