"""A local HTTP server for the SDK's protocol tests: each route is a function of the request, answering
(status, headers, body). It records every request, so tests can count attempts and read what the SDK sent."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from keyforge._b64 import b64url_encode
from keyforge._jws import sign_compact

Reply = Tuple[int, Dict[str, str], Union[bytes, str, Dict[str, Any]]]


class Request:
    def __init__(self, method: str, path: str, headers: Dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class StubServer:
    def __init__(self) -> None:
        self.routes: Dict[str, Callable[[Request], Optional[Reply]]] = {}
        self.requests: List[Request] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def handle_any(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length))
                stub.requests.append(request)
                route = stub.routes.get(f"{self.command} {self.path}")
                reply = route(request) if route else (404, {}, {"error": {"code": "NotFound", "message": "no route"}})
                if reply is None:  # the route answered (or hung) by itself
                    return
                status, headers, body = reply
                data = json.dumps(body).encode() if isinstance(body, dict) else body.encode() if isinstance(body, str) else body
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if "content-type" not in {name.lower() for name in headers}:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

            do_GET = handle_any
            do_POST = handle_any
            do_CONNECT = handle_any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def count(self, method: str, path: str) -> int:
        return sum(1 for request in self.requests if request.method == method and request.path == path)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Signer:
    """A signing key like the server's, to answer validate with genuine tokens."""

    def __init__(self, kid: str) -> None:
        self.kid = kid
        self.key = Ed25519PrivateKey.generate()

    def jwk(self) -> Dict[str, str]:
        x = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return {"kty": "OKP", "crv": "Ed25519", "x": b64url_encode(x), "kid": self.kid, "alg": "EdDSA", "use": "sig"}

    def token(self, claims: Dict[str, Any], header: Optional[Dict[str, Any]] = None) -> str:
        return sign_compact(self.key, header or {"alg": "EdDSA", "kid": self.kid, "typ": "JWT"}, claims)


def claims_for(issuer: str, now: Optional[float] = None, **extra: Any) -> Dict[str, Any]:
    iat = int(now if now is not None else time.time())
    claims: Dict[str, Any] = {
        "iss": issuer,
        "sub": "license-1",
        "tenant": "tenant-1",
        "productId": "product-1",
        "product": "Acme Studio",
        "bundleProducts": None,
        "features": ["export"],
        "licenseExpiresAt": None,
        "isTrial": False,
        "nodeLocked": False,
        "offlineGraceDays": 7,
        "maintenanceExpiresAt": None,
        "minVersion": None,
        "maxVersion": None,
        "iat": iat,
        "exp": iat + 7 * 86400,
    }
    claims.update(extra)
    return claims
