"""The transport against a local HTTP server: retries on transient failures only, Retry-After, bounded attempts,
timeouts, bodies that are not the API's JSON, bodies too large to read."""
import socket
import threading
import time
from typing import Iterator

import pytest

from keyforge import ApiError, KeyforgeClient, NetworkError, RetryPolicy
from keyforge._http import MAX_BODY_BYTES, parse_retry_after
from stub_server import StubServer

FAST = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05, max_retry_after=2)


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer()
    yield server
    server.close()


def client(url: str, **options: object) -> KeyforgeClient:
    return KeyforgeClient(url, "Acme Studio", retry=options.pop("retry", FAST), **options)  # type: ignore[arg-type]


def test_transient_failures_are_retried_until_an_answer(stub: StubServer) -> None:
    answers = iter([(503, {}, {"error": {"code": "ServiceUnavailable", "message": "db"}}), (502, {}, "<html>bad gateway</html>")])
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: next(answers, (200, {}, {"keys": []}))
    assert client(stub.url).fetch_keys() == {"keys": []}
    assert stub.count("GET", "/.well-known/jwks.json") == 3


def test_429_forever_gives_up_after_the_attempts_honouring_retry_after(stub: StubServer) -> None:
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: (429, {"Retry-After": "0"}, {"error": {"code": "RateLimited", "message": "slow down"}})
    with pytest.raises(ApiError) as raised:
        client(stub.url).fetch_keys()
    assert raised.value.code == "RateLimited" and raised.value.status == 429 and raised.value.retry_after_seconds == 0
    assert stub.count("GET", "/.well-known/jwks.json") == FAST.attempts


def test_retry_after_is_waited_for(stub: StubServer) -> None:
    answers = iter([(429, {"Retry-After": "1"}, {"error": {"code": "RateLimited", "message": "slow down"}})])
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: next(answers, (200, {}, {"keys": []}))
    started = time.monotonic()
    client(stub.url).fetch_keys()
    assert time.monotonic() - started >= 1.0


def test_a_retry_after_longer_than_allowed_is_not_waited_for(stub: StubServer) -> None:
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: (503, {"Retry-After": "3600"}, {"error": {"code": "ServiceUnavailable", "message": "maintenance"}})
    with pytest.raises(ApiError) as raised:
        client(stub.url).fetch_keys()
    assert raised.value.code == "ServiceUnavailable" and raised.value.retry_after_seconds == 3600
    assert stub.count("GET", "/.well-known/jwks.json") == 1


def test_definite_answers_are_not_retried(stub: StubServer) -> None:
    stub.routes["POST /api/v1/validate"] = lambda _r: (
        400,
        {"X-Request-Id": "req-1"},
        {"error": {"code": "InvalidRequest", "message": "bad", "fields": {"licenseKey": "Required"}}},
    )
    with pytest.raises(ApiError) as raised:
        client(stub.url).validate("ACME-AAAA-BBBB-CCCC-DDDD")
    assert (raised.value.code, raised.value.status, raised.value.request_id, raised.value.fields) == ("InvalidRequest", 400, "req-1", {"licenseKey": "Required"})
    assert stub.count("POST", "/api/v1/validate") == 1


@pytest.mark.parametrize("body", ["<html>ok</html>", "", "[1,2]", '"text"', "NaN", "{\"a\": Infinity}", "\xff\xfe{"])
def test_a_2xx_body_that_is_not_a_json_object_is_invalid_response(stub: StubServer, body: str) -> None:
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: (200, {"content-type": "text/html"}, body)
    with pytest.raises(ApiError) as raised:
        client(stub.url).fetch_keys()
    assert raised.value.code == "InvalidResponse"
    assert stub.count("GET", "/.well-known/jwks.json") == 1


def test_an_error_status_without_the_api_json_gets_the_status_code(stub: StubServer) -> None:
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: (500, {}, "Internal Server Error")
    with pytest.raises(ApiError) as raised:
        client(stub.url).fetch_keys()
    assert (raised.value.code, raised.value.status) == ("InternalError", 500)


def test_a_huge_body_is_refused_without_reading_it_whole(stub: StubServer) -> None:
    huge = b'{"keys":[' + b'{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":"k"},' * (3 * MAX_BODY_BYTES // 50) + b"{}]}"
    stub.routes["GET /.well-known/jwks.json"] = lambda _r: (200, {}, huge)
    with pytest.raises(ApiError) as raised:
        client(stub.url).fetch_keys()
    assert raised.value.code == "InvalidResponse"


def test_a_huge_body_without_content_length_is_refused_too() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
            try:
                for _ in range(400):  # 400 x 8 KiB = 3.2 MiB, more than the limit
                    connection.sendall(b" " * 8192)
            except OSError:
                pass
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with pytest.raises(ApiError) as raised:
            client(f"http://127.0.0.1:{listener.getsockname()[1]}", retry=RetryPolicy(attempts=1)).fetch_keys()
        assert raised.value.code == "InvalidResponse"
    finally:
        stop.set()
        listener.close()


def silent_server(trickle: bool) -> socket.socket:
    """Accepts connections and never answers (or answers one byte at a time, forever)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)

    def serve() -> None:
        held = []
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            held.append(connection)
            if trickle:
                threading.Thread(target=drip, args=(connection,), daemon=True).start()

    def drip(connection: socket.socket) -> None:
        try:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
            while True:
                connection.sendall(b" ")
                time.sleep(0.05)
        except OSError:
            return

    threading.Thread(target=serve, daemon=True).start()
    return listener


@pytest.mark.parametrize("trickle", [False, True], ids=["never-answers", "trickles-forever"])
def test_a_server_that_never_finishes_times_out_after_bounded_attempts(trickle: bool) -> None:
    listener = silent_server(trickle)
    try:
        started = time.monotonic()
        with pytest.raises(NetworkError) as raised:
            client(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.5, retry=RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.01)).fetch_keys()
        assert raised.value.code == "Timeout"
        # Two attempts of 0.5 s: the deadline covers the whole answer (a trickle of one byte per 50 ms would take
        # well over an hour to send its 100,000 bytes); the bound is generous for a loaded machine.
        assert time.monotonic() - started < 30
    finally:
        listener.close()


def test_a_refused_connection_is_a_network_error() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(NetworkError) as raised:
        client(f"http://127.0.0.1:{port}", retry=RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.01)).fetch_keys()
    assert raised.value.code == "NetworkError"


def test_retry_after_parsing() -> None:
    assert parse_retry_after("7", 0) == 7
    assert parse_retry_after(" 12 ", 0) == 12
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", 1445412480) == 10
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412490) == 0
    assert parse_retry_after("soon", 0) is None
    assert parse_retry_after(None, 0) is None


def test_the_base_url_is_checked_and_normalised() -> None:
    assert KeyforgeClient("https://licenses.example.com/api/v1/", "Acme Studio").base_url == "https://licenses.example.com"
    assert KeyforgeClient("https://licenses.example.com/", "Acme Studio").issuer == "https://licenses.example.com"
    for bad in ["licenses.example.com", "ftp://x", "https://u:p@x", "https://x/?a=1"]:
        with pytest.raises(TypeError):
            KeyforgeClient(bad, "Acme Studio")
    with pytest.raises(TypeError):
        KeyforgeClient("https://x", [])




def test_redirects_are_not_followed(stub: StubServer) -> None:
    stub.routes["POST /api/v1/validate"] = lambda _r: (307, {"Location": "http://elsewhere.invalid/api/v1/validate"}, "")
    with pytest.raises(ApiError) as raised:
        client(stub.url).validate("ACME-AAAA-BBBB-CCCC-DDDD")
    assert raised.value.status == 307 and stub.count("POST", "/api/v1/validate") == 1


def test_an_http_proxy_gets_the_absolute_url(stub: StubServer) -> None:
    stub.routes["GET http://licenses.invalid:8080/.well-known/jwks.json"] = lambda _r: (200, {}, {"keys": []})
    assert client("http://licenses.invalid:8080", proxy="http://user:p%40ss@" + stub.url[len("http://") :]).fetch_keys() == {"keys": []}
    assert stub.requests[0].headers["proxy-authorization"] == "Basic dXNlcjpwQHNz"  # user:p@ss


def test_the_environment_proxy_is_used_unless_no_proxy_names_the_host(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    stub.routes["GET http://licenses.invalid/.well-known/jwks.json"] = lambda _r: (200, {}, {"keys": []})
    for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", stub.url)
    assert client("http://licenses.invalid").fetch_keys() == {"keys": []}
    monkeypatch.setenv("no_proxy", "licenses.invalid")
    with pytest.raises(NetworkError):
        client("http://licenses.invalid", retry=RetryPolicy(attempts=1)).fetch_keys()  # straight to a host that does not exist
    assert stub.count("GET", "http://licenses.invalid/.well-known/jwks.json") == 1


def test_https_goes_through_the_proxy_in_a_connect_tunnel(stub: StubServer) -> None:
    # The stub refuses the tunnel (it is no proxy): what matters is what the client asked for.
    with pytest.raises(NetworkError):
        client("https://licenses.invalid", proxy=stub.url, retry=RetryPolicy(attempts=1)).fetch_keys()
    assert [(request.method, request.path) for request in stub.requests] == [("CONNECT", "licenses.invalid:443")]
