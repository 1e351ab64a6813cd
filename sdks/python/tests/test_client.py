"""The client's protocol against a local HTTP server that signs like the real one: nonces, challenges, JWKS
caching and rotation, hostile JWKS, stored tokens, offline fallback, floating heartbeats, metering's queue."""
import json
import os
import stat
import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

from keyforge import (
    ApiError,
    FileStore,
    KeyforgeClient,
    KeyforgeError,
    LicenseRejectedError,
    MemoryStore,
    MeterResult,
    QueuedMeter,
    RetryPolicy,
    VerificationError,
)
from keyforge._jws import decode_payload, verify_compact
from keyforge.keys import import_key
from keyforge.license_files import request_mac, unarmor
from stub_server import Request, Signer, StubServer, claims_for

KEY = "ACME-7KQ2-M9XH-4TRB-WZ3P"
FAST = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02, max_retry_after=1)


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer()
    yield server
    server.close()


def serve_keys(stub: StubServer, *signers: Signer) -> None:
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: (200, {}, {"keys": [signer.jwk() for signer in signers]})


def serve_validate(stub: StubServer, signer: Signer, **extra: Any) -> None:
    def validate(request: Request) -> Any:
        body = request.json()
        claims = claims_for(stub.url, nonce=body.get("challenge"), **extra)
        if body.get("deviceId"):
            claims["device"] = body["deviceId"]
        if body.get("requireActivation"):
            claims["deviceActivated"] = True
        return 200, {}, {"isValid": True, "errorCode": None, "productName": "Acme Studio", "features": ["export"], "offlineCacheToken": signer.token(claims)}

    stub.routes["POST /api/v1/validate"] = validate


def make(stub: StubServer, **options: Any) -> KeyforgeClient:
    options.setdefault("retry", FAST)
    return KeyforgeClient(stub.url, "Acme Studio", **options)


def test_activate_fetches_a_fresh_nonce_for_every_attempt_and_sends_the_product(stub: StubServer) -> None:
    nonces = iter(range(100))
    stub.routes["GET /api/v1/nonce"] = lambda _r: (200, {}, {"nonce": f"nonce-{next(nonces)}"})
    answers = iter([(503, {}, {"error": {"code": "ServiceUnavailable", "message": "db"}})])
    stub.routes["POST /api/v1/activate"] = lambda _r: next(
        answers, (200, {}, {"isValid": True, "productName": "Acme Studio", "remainingActivations": 2, "expiresAt": None, "features": [], "isTrial": False, "nodeLocked": False, "offlineGraceDays": 7, "vendorWarning": None})
    )
    activation = make(stub).activate(KEY, device_id="device-1", device_name="Ada's laptop")
    assert activation.remaining_activations == 2 and activation.device_id == "device-1"
    sent = [request.json() for request in stub.requests if request.path == "/api/v1/activate"]
    assert [body["nonce"] for body in sent] == ["nonce-0", "nonce-1"]
    assert all(body["product"] == "Acme Studio" and body["deviceId"] == "device-1" and body["deviceName"] == "Ada's laptop" for body in sent)


def test_a_rejection_is_raised_with_its_code_and_the_whole_answer(stub: StubServer) -> None:
    stub.routes["GET /api/v1/nonce"] = lambda _r: (200, {}, {"nonce": "n"})
    stub.routes["POST /api/v1/activate"] = lambda _r: (200, {}, {"isValid": False, "message": "All seats are taken.", "errorCode": "SeatsExhausted"})
    with pytest.raises(LicenseRejectedError) as raised:
        make(stub).activate(KEY)
    assert raised.value.code == "SeatsExhausted" and raised.value.response["message"] == "All seats are taken."
    assert stub.count("POST", "/api/v1/activate") == 1


def test_the_installation_id_is_created_once_and_kept(tmp_path: Any) -> None:
    store = FileStore(tmp_path / "store.json")
    first = KeyforgeClient("https://x.test", "Acme Studio", store=store).device_id()
    assert len(first) == 64 and KeyforgeClient("https://x.test", "Acme Studio", store=FileStore(tmp_path / "store.json")).device_id() == first


def test_validate_verifies_the_token_caches_the_jwks_and_stores_the_token(stub: StubServer) -> None:
    signer = Signer("k1")
    serve_keys(stub, signer)
    serve_validate(stub, signer)
    client = make(stub)
    validation = client.validate(KEY)
    assert validation.source == "online" and validation.entitlement.features == ["export"] and validation.entitlement.key_id == "k1"
    client.validate(KEY)
    assert stub.count("GET", "/.well-known/jwks.json") == 1  # fetched once, then cached
    assert client.validate_offline(KEY).source == "offline"
    # The challenge was random per request and echoed in the signed token.
    challenges = [request.json()["challenge"] for request in stub.requests if request.path == "/api/v1/validate"]
    assert len(set(challenges)) == 2 and all(len(value) >= 32 for value in challenges)


def test_a_replayed_answer_is_refused_by_its_challenge(stub: StubServer) -> None:
    signer = Signer("k1")
    serve_keys(stub, signer)
    captured = signer.token(claims_for(stub.url, nonce="an-earlier-challenge"))
    stub.routes["POST /api/v1/validate"] = lambda _r: (200, {}, {"isValid": True, "offlineCacheToken": captured})
    with pytest.raises(VerificationError) as raised:
        make(stub).validate(KEY)
    assert raised.value.code == "ChallengeMismatch"


def test_a_new_key_is_picked_up_on_rotation_with_one_refetch(stub: StubServer) -> None:
    old, new = Signer("old"), Signer("new")
    serve_keys(stub, old)
    serve_validate(stub, old)
    client = make(stub)
    client.validate(KEY)
    serve_keys(stub, new, old)
    serve_validate(stub, new)
    assert client.validate(KEY).entitlement.key_id == "new"
    assert stub.count("GET", "/.well-known/jwks.json") == 2


def test_an_unknown_kid_refetches_once_then_is_key_unknown(stub: StubServer) -> None:
    known, rogue = Signer("known"), Signer("rogue")
    serve_keys(stub, known)
    serve_validate(stub, rogue)
    client = make(stub)
    for _ in range(3):
        with pytest.raises(VerificationError) as raised:
            client.validate(KEY)
        assert raised.value.code == "KeyUnknown"
    # One fetch, one refetch for the unknown kid; the next sightings within the cool-down do not refetch.
    assert stub.count("GET", "/.well-known/jwks.json") == 2


def test_a_jwks_with_wrong_key_types_is_key_unknown(stub: StubServer) -> None:
    signer = Signer("k1")
    genuine = signer.jwk()
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: (
        200,
        {},
        {
            "keys": [
                {**genuine, "kty": "RSA", "n": "AQAB", "e": "AQAB"},
                {**genuine, "crv": "X25519"},
                {**genuine, "alg": "ES256"},
                {"kty": "OKP", "crv": "Ed25519", "kid": "k1"},
                {"kty": "OKP", "crv": "Ed25519", "kid": "k1", "x": 42},
                "not a key",
                None,
            ]
        },
    )
    serve_validate(stub, signer)
    with pytest.raises(VerificationError) as raised:
        make(stub).validate(KEY)
    assert raised.value.code == "KeyUnknown"


def test_a_jwks_key_that_is_not_32_bytes_is_token_invalid(stub: StubServer) -> None:
    signer = Signer("k1")
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: (200, {}, {"keys": [{**signer.jwk(), "x": "AAAA"}]})
    serve_validate(stub, signer)
    with pytest.raises(VerificationError) as raised:
        make(stub).validate(KEY)
    assert raised.value.code == "TokenInvalid"


def test_a_huge_jwks_is_refused_as_key_unknown(stub: StubServer) -> None:
    signer = Signer("k1")
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: (200, {}, b'{"keys":[' + b'{"kty":"OKP"},' * 200000 + b"{}]}")
    serve_validate(stub, signer)
    with pytest.raises(VerificationError) as raised:
        make(stub).validate(KEY)
    assert raised.value.code == "KeyUnknown"


def test_pinned_keys_are_the_only_ones_trusted_and_never_fetched(stub: StubServer) -> None:
    pinned, served = Signer("pinned"), Signer("served")
    serve_keys(stub, served)
    serve_validate(stub, served)
    client = make(stub, jwks={"keys": [pinned.jwk()]})
    with pytest.raises(VerificationError) as raised:
        client.validate(KEY)
    assert raised.value.code == "KeyUnknown" and stub.count("GET", "/.well-known/jwks.json") == 0
    with pytest.raises(TypeError):
        make(stub, jwks={"keys": [{"kty": "RSA"}]})


def test_wrong_product_and_issuer_are_refused(stub: StubServer) -> None:
    signer = Signer("k1")
    serve_keys(stub, signer)
    serve_validate(stub, signer, product="Other App")
    with pytest.raises(VerificationError) as raised:
        make(stub).validate(KEY)
    assert raised.value.code == "WrongProduct"
    serve_validate(stub, signer, iss="https://elsewhere.test")
    with pytest.raises(VerificationError) as raised:
        make(stub).validate(KEY)
    assert raised.value.code == "WrongIssuer"


def test_device_binding_and_require_activation(stub: StubServer) -> None:
    signer = Signer("k1")
    serve_keys(stub, signer)
    serve_validate(stub, signer)
    client = make(stub)
    validation = client.validate(KEY, device_id="device-1", require_activation=True)
    assert validation.entitlement.device == "device-1" and validation.entitlement.device_activated
    assert [request.json() for request in stub.requests if request.path == "/api/v1/validate"][-1]["requireActivation"] is True
    assert client.validate_offline(KEY, device_id="device-1", require_activation=True).source == "offline"
    with pytest.raises(VerificationError) as raised:
        client.validate_offline(KEY, device_id="device-2")
    assert raised.value.code == "WrongDevice"


def test_a_rejection_deletes_the_stored_token(stub: StubServer) -> None:
    signer = Signer("k1")
    serve_keys(stub, signer)
    serve_validate(stub, signer)
    client = make(stub)
    client.validate(KEY)
    stub.routes["POST /api/v1/validate"] = lambda _r: (200, {}, {"isValid": False, "errorCode": "LicenseRevoked", "message": "Revoked."})
    with pytest.raises(LicenseRejectedError) as raised:
        client.validate(KEY, offline_fallback=True)  # a definite answer: never the fallback
    assert raised.value.code == "LicenseRevoked"
    with pytest.raises(VerificationError) as offline:
        client.validate_offline(KEY)
    assert offline.value.code == "TokenMissing"


def test_offline_fallback_answers_from_the_stored_token_when_the_server_is_away(stub: StubServer) -> None:
    signer = Signer("k1")
    serve_keys(stub, signer)
    serve_validate(stub, signer)
    client = make(stub)
    client.validate(KEY)
    stub.routes["POST /api/v1/validate"] = lambda _r: (503, {}, {"error": {"code": "ServiceUnavailable", "message": "db"}})
    validation = client.validate(KEY, offline_fallback=True)
    assert validation.source == "offline" and isinstance(validation.online_error, ApiError) and validation.online_error.code == "ServiceUnavailable"
    with pytest.raises(ApiError):
        client.validate(KEY)  # without the fallback the failure is the answer
    with pytest.raises(ApiError) as nothing_stored:
        client.validate("ACME-ZZZZ-ZZZZ-ZZZZ-ZZZZ", offline_fallback=True)
    assert nothing_stored.value.code == "ServiceUnavailable"  # nothing stored: the network failure is the news


def test_offline_checks_grace_clock_skew_and_rollback(stub: StubServer) -> None:
    signer = Signer("k1")
    serve_keys(stub, signer)
    start = float(int(time.time()))  # whole seconds, as iat is
    server_now = start + 3600  # the server's clock is an hour ahead of this machine's
    now = [start]

    def validate(request: Request) -> Any:
        claims = claims_for(stub.url, now=server_now, nonce=request.json()["challenge"], offlineGraceDays=1)
        claims["exp"] = claims["iat"] + 86400
        return 200, {}, {"isValid": True, "offlineCacheToken": signer.token(claims)}

    stub.routes["POST /api/v1/validate"] = validate
    client = make(stub, clock=lambda: now[0])
    assert client.validate(KEY).clock_skew_seconds == 3600
    now[0] += 86400 - 3600 - 600  # still within the day of grace on the server's clock, whatever the local clock says
    assert client.validate_offline(KEY).source == "offline"
    now[0] -= 7200  # set back past what was seen
    with pytest.raises(VerificationError) as rollback:
        client.validate_offline(KEY)
    assert rollback.value.code == "ClockRollback"
    now[0] = start + 86400 + 400  # past exp (on the server's clock) by more than the tolerance
    with pytest.raises(VerificationError) as expired:
        client.validate_offline(KEY)
    assert expired.value.code == "TokenExpired"


def test_a_store_edited_by_hand_is_token_invalid(stub: StubServer) -> None:
    signer = Signer("k1")
    serve_keys(stub, signer)
    serve_validate(stub, signer)
    store = MemoryStore()
    client = make(stub, store=store)
    client.validate(KEY)
    record_key = client._record_key(KEY)
    record = json.loads(store.get(record_key) or "")
    header, payload, signature = record["token"].split(".")
    forged = signer.token({**decode_payload(record["token"]), "features": ["everything"]}).split(".")[1]
    store.set(record_key, json.dumps({**record, "token": f"{header}.{forged}.{signature}"}))
    with pytest.raises(VerificationError) as raised:
        client.validate_offline(KEY)
    assert raised.value.code == "TokenInvalid"
    store.set(record_key, "{not json")
    with pytest.raises(VerificationError):
        client.validate_offline(KEY)


def test_deactivate_frees_the_seat_and_forgets_the_token(stub: StubServer) -> None:
    signer = Signer("k1")
    serve_keys(stub, signer)
    serve_validate(stub, signer)
    stub.routes["POST /api/v1/deactivate"] = lambda _r: (200, {}, {"deactivated": True, "remainingActivations": 3})
    client = make(stub)
    client.validate(KEY)
    assert client.deactivate(KEY, device_id="device-1").remaining_activations == 3
    assert stub.requests[-1].json() == {"licenseKey": KEY, "deviceId": "device-1"}
    with pytest.raises(VerificationError):
        client.validate_offline(KEY)
    stub.routes["POST /api/v1/deactivate"] = lambda _r: (200, {}, {"deactivated": False, "errorCode": "ActivationNotFound", "message": "none"})
    with pytest.raises(LicenseRejectedError) as raised:
        client.deactivate(KEY, device_id="device-1")
    assert raised.value.code == "ActivationNotFound"


def test_the_file_store_is_private_and_written_atomically(tmp_path: Any) -> None:
    path = tmp_path / "app" / "license.json"
    store = FileStore(path)
    store.set("a", "1")
    store.set("b", "2")
    store.delete("a")
    assert json.loads(path.read_text()) == {"b": "2"}
    if os.name == "posix":
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert os.listdir(path.parent) == ["license.json"]  # no temporary file left behind
    path.write_text("{half a fi")
    assert FileStore(path).get("b") is None  # a corrupted file reads as empty, and is written anew
    FileStore(path).set("c", "3")
    assert json.loads(path.read_text()) == {"c": "3"}


def test_the_file_store_keeps_concurrent_writes(tmp_path: Any) -> None:
    store = FileStore(tmp_path / "store.json")
    threads = [threading.Thread(target=lambda n=n: [store.set(f"{n}-{i}", "x") for i in range(20)]) for n in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(json.loads((tmp_path / "store.json").read_text())) == 100


def checkout_routes(stub: StubServer, interval: float = 0.2) -> List[str]:
    beats: List[str] = []
    stub.routes["POST /api/v1/float/checkout"] = lambda request: (
        200,
        {},
        {
            "isValid": True,
            "sessionToken": "kfs_secret",
            "sessionId": "session-1",
            "leaseExpiresAt": "2030-01-01T00:00:00.000Z",
            "leaseSeconds": 300,
            "heartbeatIntervalSeconds": interval,
            "floatingSeats": 2,
            "remainingFloatingSeats": 1,
            "productName": "Acme Studio",
            "expiresAt": None,
            "features": ["render"],
            "vendorWarning": None,
        },
    )

    def heartbeat(request: Request) -> Any:
        beats.append(request.headers.get("authorization", ""))
        return 200, {}, {"isValid": True, "sessionId": "session-1", "leaseExpiresAt": "2030-01-01T00:05:00.000Z", "leaseSeconds": 300, "heartbeatIntervalSeconds": interval}

    stub.routes["POST /api/v1/float/heartbeat"] = heartbeat
    stub.routes["POST /api/v1/float/checkin"] = lambda _r: (200, {}, {"checkedIn": True, "sessionId": "session-1", "endedAt": "2030-01-01T00:01:00.000Z", "endReason": "checkin"})
    return beats


def test_a_floating_session_heartbeats_in_the_background_and_checks_in_on_exit(stub: StubServer) -> None:
    beats = checkout_routes(stub)
    with make(stub).checkout(KEY, device_id="render-4") as session:
        assert session.remaining_floating_seats == 1 and session.features == ["render"]
        deadline = time.monotonic() + 10
        while len(beats) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(beats) >= 3 and set(beats) == {"Bearer kfs_secret"}
    assert session.state == "closed" and session.lost.is_set()
    assert stub.count("POST", "/api/v1/float/checkin") == 1
    sent = stub.requests[0].json()
    assert sent["product"] == "Acme Studio" and sent["deviceId"] == "render-4"
    after = len(beats)
    time.sleep(0.8)  # four intervals
    assert len(beats) == after  # no heartbeat after the checkin
    assert session.checkin()["checkedIn"] is True and stub.count("POST", "/api/v1/float/checkin") == 1  # idempotent


def test_a_rejected_heartbeat_loses_the_seat(stub: StubServer) -> None:
    checkout_routes(stub)
    stub.routes["POST /api/v1/float/heartbeat"] = lambda _r: (200, {}, {"isValid": False, "errorCode": "SessionExpired", "message": "replaced"})
    lost: List[KeyforgeError] = []
    session = make(stub).checkout(KEY, on_lost=lost.append)
    assert session.lost.wait(10)
    assert session.state == "lost" and [error.code for error in lost] == ["SessionExpired"]
    with pytest.raises(KeyforgeError) as raised:
        session.heartbeat()
    assert raised.value.code == "SessionExpired"


def test_heartbeat_failures_are_retried_then_the_lease_lapses(stub: StubServer) -> None:
    checkout_routes(stub)
    stub.routes["POST /api/v1/float/checkout"] = (lambda original: lambda request: (200, {}, {**original(request)[2], "leaseSeconds": 1, "heartbeatIntervalSeconds": 0.3}))(stub.routes["POST /api/v1/float/checkout"])
    stub.routes["POST /api/v1/float/heartbeat"] = lambda _r: (503, {}, {"error": {"code": "ServiceUnavailable", "message": "db"}})
    errors: List[Exception] = []
    session = make(stub).checkout(KEY, on_heartbeat_error=errors.append)
    assert session.lost.wait(10)
    assert session.lost_reason is not None and session.lost_reason.code == "LeaseLapsed"
    assert errors and all(isinstance(error, ApiError) for error in errors)


def test_meter_sends_one_idempotency_key_across_retries(stub: StubServer) -> None:
    answers = iter([(None, None)])

    def meter(request: Request) -> Any:
        if next(answers, None) is not None:
            return 502, {}, "bad gateway"
        return 200, {"Idempotent-Replayed": "true"}, {"isValid": True, "event": "exports", "quantity": 3, "occurredAt": "x", "period": "lifetime", "periodStart": None, "periodEnd": None, "total": 3, "limit": 10, "remaining": 7}

    stub.routes["POST /api/v1/meter"] = meter
    result = make(stub).meter(KEY, "exports", 3)
    assert isinstance(result, MeterResult) and result.total == 3 and result.replayed
    keys = [request.json()["idempotencyKey"] for request in stub.requests]
    assert len(keys) == 2 and keys[0] == keys[1]


def test_usage_is_queued_offline_persisted_and_sent_in_order(stub: StubServer, tmp_path: Any) -> None:
    stub.routes["POST /api/v1/meter"] = lambda _r: (503, {}, {"error": {"code": "ServiceUnavailable", "message": "db"}})
    client = make(stub, store=FileStore(tmp_path / "store.json"))
    first = client.meter(KEY, "exports", 1, queue_offline=True, idempotency_key="usage-1")
    second = client.meter(KEY, "exports", 2, queue_offline=True, idempotency_key="usage-2")
    assert isinstance(first, QueuedMeter) and isinstance(second, QueuedMeter)
    assert [record.idempotency_key for record in client.pending_usage(KEY)] == ["usage-1", "usage-2"]
    assert KEY not in (tmp_path / "store.json").read_text()  # queued under a digest, never the key

    received: List[Dict[str, Any]] = []

    def meter(request: Request) -> Any:
        body = request.json()
        received.append(body)
        return 200, {}, {"isValid": True, "event": body["event"], "quantity": body["quantity"], "total": sum(item["quantity"] for item in received), "limit": None, "remaining": None}

    stub.routes["POST /api/v1/meter"] = meter
    restarted = make(stub, store=FileStore(tmp_path / "store.json"))  # a new process: the queue is on disk
    third = restarted.meter(KEY, "exports", 4, queue_offline=True, idempotency_key="usage-3")
    assert isinstance(third, MeterResult) and third.total == 7
    assert [body["idempotencyKey"] for body in received] == ["usage-1", "usage-2", "usage-3"]
    assert received[0]["timestamp"] == first.timestamp  # sent with the time it happened
    assert restarted.pending_usage(KEY) == []


def test_a_record_the_server_refuses_for_good_is_dropped_from_the_queue(stub: StubServer) -> None:
    stub.routes["POST /api/v1/meter"] = lambda _r: (503, {}, {"error": {"code": "ServiceUnavailable", "message": "db"}})
    client = make(stub)
    client.meter(KEY, "exports", 50, queue_offline=True, idempotency_key="too-many")
    stub.routes["POST /api/v1/meter"] = lambda _r: (200, {}, {"isValid": False, "errorCode": "QuotaExceeded", "message": "over", "total": 0, "limit": 10, "remaining": 10})
    report = client.flush_usage(KEY)
    assert report.sent == [] and [error.code for _, error in report.dropped] == ["QuotaExceeded"] and report.remaining == 0


def test_an_activation_request_keeps_the_private_key_in_the_store_and_macs_under_the_key() -> None:
    store = MemoryStore()
    client = KeyforgeClient("https://licenses.example.test", "Acme Studio", store=store)
    request = client.create_activation_request(KEY, device_id="plant-7", device_name="Line 3", version="2.4.1")
    fields = json.loads(unarmor("ACTIVATION REQUEST", request.request))
    assert fields["hint"] == "ACME-…-WZ3P" and fields["device"] == "plant-7" and fields["product"] == ["Acme Studio"]
    assert json.loads(unarmor("ACTIVATION REQUEST", request.compact)) == fields
    mac = fields.pop("mac")
    assert mac == request_mac(KEY, fields) and mac != request_mac("ACME-OTHE-RKEY-0000-0000", fields)
    assert KEY not in request.request and "\"d\"" not in unarmor("ACTIVATION REQUEST", request.request)
    stored = json.loads(store.get(f"device-key:{client._digest(KEY)}") or "")
    assert stored["pending"]["pub"] == fields["pub"] and len(stored["pending"]["jwk"]["d"]) == 43
    with pytest.raises(VerificationError) as raised:
        client.deactivate_offline(KEY)
    assert raised.value.code == "TokenMissing"


def test_a_deactivation_proof_is_signed_by_the_device_key() -> None:
    store = MemoryStore()
    client = KeyforgeClient("https://licenses.example.test", "Acme Studio", store=store)
    request = client.create_activation_request(KEY, device_id="plant-7")
    digest = client._digest(KEY)
    pending = json.loads(store.get(f"device-key:{digest}") or "")["pending"]
    store.set(f"device-key:{digest}", json.dumps({"v": 1, "active": {**pending, "activation": "act-1", "license": "lic-1"}}))
    proof = client.deactivate_offline(KEY)
    public = import_key({"x": json.loads(unarmor("ACTIVATION REQUEST", request.request))["pub"]})
    header, claims = verify_compact(unarmor("DEACTIVATION PROOF", proof.proof), lambda _kid: public)
    assert header == {"alg": "EdDSA"}
    assert (claims["kind"], claims["activation"], claims["license"], claims["device"]) == ("keyforge-deactivation", "act-1", "lic-1", "plant-7")
    assert store.get(f"device-key:{digest}") is None  # the key is gone with the activation


def test_machine_fingerprint_is_salted_and_stable() -> None:
    from keyforge import machine_fingerprint, machine_id

    try:
        identifier = machine_id()
    except KeyforgeError as error:
        assert error.code == "MachineIdUnavailable"
        return
    import hashlib

    assert machine_fingerprint("Acme Studio") == hashlib.sha256(f"Acme Studio\n{identifier}".encode()).hexdigest()
    assert machine_fingerprint("Acme Studio") != machine_fingerprint("Other App")
    # An empty salt is the default, as in every Keyforge SDK.
    assert machine_fingerprint("") == machine_fingerprint() == hashlib.sha256(f"keyforge\n{identifier}".encode()).hexdigest()
