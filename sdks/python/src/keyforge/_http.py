"""One HTTP round trip at a time, and the retry loop around a unit of work (standard library only)."""
from __future__ import annotations

import base64
import email.utils
import http.client
import json
import math
import random
import re
import socket
import ssl
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, TypeVar

from .errors import ApiError, NetworkError, is_transient

__all__ = ["RetryPolicy", "Answer", "Transport", "parse_retry_after", "backoff", "MAX_BODY_BYTES", "loads"]

#: The largest answer read: the API's answers are a few KiB; a larger body is refused (``InvalidResponse``)
#: instead of being held in memory.
MAX_BODY_BYTES = 1024 * 1024

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How calls are retried on 429, 502, 503, 504 and network failures (never on a definite answer).

    ``attempts``: attempts in all, the first included (1 turns retries off). The n-th retry waits between
    half and all of ``base_delay * 2**(n-1)`` seconds, capped by ``max_delay``. A ``Retry-After`` the server
    sends is waited for instead, unless it is longer than ``max_retry_after``: then the :class:`ApiError`
    is raised at once, carrying ``retry_after_seconds``.
    """

    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 30.0


@dataclass
class Answer:
    status: int
    headers: Dict[str, str]
    json: Dict[str, Any]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str) -> Any:
    """``json.loads`` as strict as JavaScript's ``JSON.parse`` (no NaN or Infinity)."""
    return json.loads(text, parse_constant=_reject_constant)


def parse_retry_after(value: Optional[str], now: float) -> Optional[float]:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if value is None:
        return None
    trimmed = value.strip()
    if re.fullmatch(r"[0-9]+", trimmed):
        return float(int(trimmed[:12]))
    try:
        date = email.utils.parsedate_to_datetime(trimmed)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if date is None:
        return None
    try:
        seconds: float = date.timestamp() - now
        return max(0.0, float(math.ceil(seconds)))
    except (OverflowError, ValueError, OSError):
        return None


def backoff(n: int, base: float, maximum: float) -> float:
    """"Equal jitter" exponential backoff: between half and all of ``base * 2**(n-1)``, capped."""
    cap = min(maximum, base * 2.0 ** min(n - 1, 30))
    return cap / 2 + random.random() * (cap / 2)


def _status_code(status: int) -> str:
    if status == 429:
        return "RateLimited"
    if status in (502, 503, 504):
        return "ServiceUnavailable"
    if status >= 500:
        return "InternalError"
    return "InvalidRequest"


class Transport:
    """Sends JSON requests to one server. Thread-safe: it keeps no connection between requests.

    Redirects are not followed: the license key travels in the body, and must not be re-sent to another address
    (configure the server's final URL). ``proxy``: None takes the environment's ``https_proxy``/``http_proxy``
    (honouring ``no_proxy``), a URL (``http://host:port``) names one, ``""`` turns proxies off.
    """

    def __init__(
        self,
        base_url: str,
        timeout: float,
        retry: RetryPolicy,
        clock: Callable[[], float],
        ssl_context: Optional[ssl.SSLContext] = None,
        user_agent: str = "keyforge-python",
        sleep: Callable[[float], None] = time.sleep,
        proxy: Optional[str] = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        self._scheme = parsed.scheme
        self._host = parsed.hostname or ""
        self._port = parsed.port
        self._prefix = parsed.path.rstrip("/")
        self.timeout = timeout
        self.retry = retry
        self._clock = clock
        self._ssl_context = ssl_context
        self._user_agent = user_agent
        self._sleep = sleep
        self._proxy_option = proxy
        if proxy is None:
            bypass = urllib.request.proxy_bypass(parsed.netloc) if self._host else True
            proxy = "" if bypass else urllib.request.getproxies().get(self._scheme, "")
        self._proxy: Optional[urllib.parse.SplitResult] = None
        if proxy:
            self._proxy = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
            if self._proxy.scheme != "http" or not self._proxy.hostname:
                raise TypeError("proxy must be an http:// proxy URL, e.g. http://proxy.example.com:3128")

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._proxy is not None:
            proxy_host, proxy_port = self._proxy.hostname or "", self._proxy.port or 80
            if self._scheme == "https":
                # A CONNECT tunnel: TLS runs end to end with the server, the proxy sees only the host name.
                context = self._ssl_context or ssl.create_default_context()
                tunnelled = http.client.HTTPSConnection(proxy_host, proxy_port, timeout=timeout, context=context)
                tunnelled.set_tunnel(self._host, self._port or 443, headers=self._proxy_headers())
                return tunnelled
            return http.client.HTTPConnection(proxy_host, proxy_port, timeout=timeout)
        if self._scheme == "https":
            context = self._ssl_context or ssl.create_default_context()
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=context)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _proxy_headers(self) -> Dict[str, str]:
        if self._proxy is None or self._proxy.username is None:
            return {}
        credentials = f"{urllib.parse.unquote(self._proxy.username)}:{urllib.parse.unquote(self._proxy.password or '')}"
        return {"Proxy-Authorization": "Basic " + base64.b64encode(credentials.encode("utf-8")).decode("ascii")}

    def _target(self, path: str) -> str:
        """The request target: the path, or the absolute URL through a plain-HTTP proxy."""
        if self._proxy is not None and self._scheme == "http":
            port = f":{self._port}" if self._port else ""
            return f"http://{self._host}{port}{self._prefix}{path}"
        return self._prefix + path

    def once(self, method: str, path: str, body: Optional[Dict[str, Any]] = None, bearer: Optional[str] = None, license: Optional[str] = None) -> Answer:
        """One request: the answer's JSON when 2xx, else an :class:`ApiError`; no answer: :class:`NetworkError`.

        The timeout bounds the whole attempt (connect, send, and reading the answer), not each socket read.
        """
        deadline = time.monotonic() + self.timeout
        headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        payload: Optional[bytes] = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if bearer is not None:
            headers["Authorization"] = f"Bearer {bearer}"
        if license is not None:
            # The release routes: the key in the header (never in the URL).
            headers["Authorization"] = f"License {license}"
        connection = self._connection(self.timeout)
        try:
            try:
                if self._proxy is not None and self._scheme == "http":
                    headers.update(self._proxy_headers())
                connection.request(method, self._target(path), body=payload, headers=headers)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise socket.timeout("deadline passed")
                if connection.sock is not None:
                    connection.sock.settimeout(remaining)  # the answer gets what is left of the attempt, not a fresh timeout
                response = connection.getresponse()
                status = response.status
                response_headers = {name.lower(): value for name, value in response.getheaders()}
                raw = self._read(connection, response, deadline)
            except socket.timeout as error:
                raise NetworkError("Timeout", f"{method} {path}: no answer within {self.timeout:g} s.") from error
            except (OSError, http.client.HTTPException) as error:
                raise NetworkError("NetworkError", f"{method} {path}: {error or type(error).__name__}") from error
        finally:
            connection.close()
        if raw is None:
            return self._fail(method, path, status, response_headers, "InvalidResponse", f"{method} {path}: the answer is larger than {MAX_BODY_BYTES} bytes.")
        text = raw.decode("utf-8", errors="replace")
        parsed: Any = None
        if text:
            try:
                parsed = loads(text)
            except (ValueError, RecursionError):
                parsed = None
        if not 200 <= status < 300:
            problem = parsed.get("error") if isinstance(parsed, dict) else None
            details: Dict[str, Any] = problem if isinstance(problem, dict) else {}
            code = details.get("code")
            message = details.get("message")
            fields = details.get("fields")
            return self._fail(
                method,
                path,
                status,
                response_headers,
                code if isinstance(code, str) else _status_code(status),
                message if isinstance(message, str) else f"{method} {path}: HTTP {status}.",
                fields if isinstance(fields, dict) else None,
            )
        if not isinstance(parsed, dict):
            return self._fail(method, path, status, response_headers, "InvalidResponse", f"{method} {path}: the answer is not the API's JSON (HTTP {status}).")
        return Answer(status, response_headers, parsed)

    def for_url(self, url: str) -> "Transport":
        """A transport to the origin of an absolute ``url`` (a download link), with this one's settings."""
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ApiError("InvalidResponse", "The download answer carries no http(s) link.", status=200)
        return Transport(f"{parsed.scheme}://{parsed.netloc}", self.timeout, self.retry, self._clock, self._ssl_context, self._user_agent, self._sleep, self._proxy_option)

    def download(self, target: str, max_bytes: int, write: Callable[[bytes], None]) -> int:
        """GETs ``target`` (a path and query on this transport's origin) with no credentials and hands the body to
        ``write`` chunk by chunk; returns the bytes read. Redirects are not followed (a 3xx is ``InvalidResponse``).
        The timeout bounds each wait for data (connect, then each read), not the whole download. A body longer than
        ``max_bytes`` stops the read with ``ArtifactIntegrity``.
        """
        from .errors import VerificationError

        what = "GET (download link)"
        connection = self._connection(self.timeout)
        try:
            try:
                headers = {"Accept": "*/*", "User-Agent": self._user_agent}
                if self._proxy is not None and self._scheme == "http":
                    headers.update(self._proxy_headers())
                connection.request("GET", self._target(target), headers=headers)
                response = connection.getresponse()
                status = response.status
                response_headers = {name.lower(): value for name, value in response.getheaders()}
                if 300 <= status < 400:
                    return self._fail(what, "", status, response_headers, "InvalidResponse", f"{what}: answered a redirect (HTTP {status}), which is not followed.").status
                if not 200 <= status < 300:
                    raw = response.read(65536)
                    try:
                        problem = loads(raw.decode("utf-8")).get("error")
                    except (ValueError, UnicodeDecodeError, AttributeError, RecursionError):
                        problem = None
                    details: Dict[str, Any] = problem if isinstance(problem, dict) else {}
                    code, message = details.get("code"), details.get("message")
                    return self._fail(what, "", status, response_headers, code if isinstance(code, str) else _status_code(status), message if isinstance(message, str) else f"{what}: HTTP {status}.").status
                length = response_headers.get("content-length")
                if length is not None and length.strip().isdigit() and int(length) > max_bytes:
                    raise VerificationError("ArtifactIntegrity", f"{what}: the file is {int(length)} bytes, more than the {max_bytes} signed.")
                size = 0
                while True:
                    chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
                    if not chunk:
                        return size
                    size += len(chunk)
                    if size > max_bytes:
                        raise VerificationError("ArtifactIntegrity", f"{what}: the file is longer than the {max_bytes} bytes signed.")
                    write(chunk)
            except socket.timeout as error:
                raise NetworkError("Timeout", f"{what}: no data within {self.timeout:g} s.") from error
            except (OSError, http.client.HTTPException) as error:
                raise NetworkError("NetworkError", f"{what}: {error or type(error).__name__}") from error
        finally:
            connection.close()

    def _read(self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse, deadline: float) -> Optional[bytes]:
        """The body, read against the attempt's deadline; None when it exceeds MAX_BODY_BYTES."""
        length = response.getheader("content-length")
        if length is not None and length.strip().isdigit() and int(length) > MAX_BODY_BYTES:
            return None
        chunks: List[bytes] = []
        size = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout("read deadline passed")
            if connection.sock is not None:
                connection.sock.settimeout(remaining)
            chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                return None
            chunks.append(chunk)

    def _fail(
        self,
        method: str,
        path: str,
        status: int,
        headers: Dict[str, str],
        code: str,
        message: str,
        fields: Optional[Dict[str, str]] = None,
    ) -> Answer:
        raise ApiError(
            code,
            message,
            status=status,
            request_id=headers.get("x-request-id"),
            fields=fields,
            retry_after_seconds=parse_retry_after(headers.get("retry-after"), self._clock()),
        )

    def retrying(self, attempt: Callable[[int], T], on_transient: Optional[Callable[[BaseException], None]] = None) -> T:
        """Runs ``attempt`` until it succeeds, a definite answer comes or the attempts are used up.

        Transient failures wait ``Retry-After`` when sent (giving up at once when it is longer than allowed),
        else an exponential backoff with jitter.
        """
        n = 1
        while True:
            try:
                return attempt(n)
            except Exception as error:
                if not is_transient(error) or n >= self.retry.attempts:
                    raise
                delay = self.delay_before(n, error)
                if delay is None:
                    raise
                if on_transient is not None:
                    on_transient(error)
                self._sleep(delay)
                n += 1

    def delay_before(self, n: int, error: BaseException) -> Optional[float]:
        """The wait before retry ``n`` (after ``n`` failed attempts), or None to give up now."""
        retry_after = error.retry_after_seconds if isinstance(error, ApiError) else None
        if retry_after is not None:
            if retry_after > self.retry.max_retry_after:
                return None
            # At least what the server asked for, spread a little so a crowd of clients does not return in step.
            return retry_after + random.random() * min(self.retry.base_delay, 1.0)
        return backoff(n, self.retry.base_delay, self.retry.max_delay)


