"""HTTP for the client: one session, the error envelope as exceptions, retries with backoff.

Retry policy (docs/decisions.md, "Client package"):
- 429 is retried for every call, after the Retry-After the service sends: its rate limiter refuses a request
  before any of it runs, so repeating even a signing call cannot sign twice.
- 5xx, timeouts and broken connections are retried for idempotent calls: reads, verification, and the
  signing calls, which carry an `Idempotency-Key` (one per call, the same on each of its tries): the service
  answers a repeat of a call it already did with the first answer, signing and counting nothing again.
- Waits grow exponentially (0.5 s, 1 s, 2 s...) with jitter, capped; a Retry-After longer than
  `max_retry_after` is not waited out but raised at once as RateLimited with `retry_after` set.
"""

from __future__ import annotations

import email.utils
import json as jsonlib
import random
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

from svc_client.errors import RateLimited, ServiceUnavailable, error_for

Progress = Callable[[int, int], None]  # (bytes sent, bytes in all)
USER_AGENT = "svc-client/0.1"
UPLOAD_BLOCK = 256 * 1024


@dataclass
class RetryPolicy:
    attempts: int = 4  # the first try and three retries
    backoff: float = 0.5  # seconds before the first retry, doubled each time
    max_backoff: float = 8.0
    max_retry_after: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    jitter: Callable[[], float] = field(default=random.random, repr=False)

    def delay(self, retry: int) -> float:
        """Seconds before retry number `retry` (0-based): exponential, between half and all of the step."""
        step = min(self.max_backoff, self.backoff * 2**retry)
        return step * (0.5 + self.jitter() / 2)


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    content: bytes

    def json(self) -> Any:
        """The body as JSON; raises ServiceUnavailable when a success answer is not JSON (not our service)."""
        try:
            return jsonlib.loads(self.content)
        except ValueError:
            raise ServiceUnavailable(f"the answer ({self.status}) is not JSON: is the URL the service's?") from None


class _ProgressBody:
    """A request body read in blocks, reporting each one: requests streams it with its Content-Length."""

    def __init__(self, data: bytes, progress: Progress):
        self._data, self._progress, self._sent = memoryview(data), progress, 0
        self.len = len(data)  # requests' super_len reads it for Content-Length

    def read(self, size: int = -1) -> bytes:
        end = self.len if size is None or size < 0 else min(self.len, self._sent + max(size, UPLOAD_BLOCK))
        block = bytes(self._data[self._sent:end])
        self._sent = end
        self._progress(self._sent, self.len)
        return block


class Transport:
    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 60.0,
                 retry: RetryPolicy | None = None, session: requests.Session | None = None):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.session = session or requests.Session()

    def request(self, method: str, path: str, *, idempotent: bool, json: Any = None, body: bytes | None = None,
                content_type: str | None = None, progress: Progress | None = None,
                authenticated: bool = False, idempotency_key: str | None = None) -> Response:
        """Send one call, retrying as the policy says; return a 2xx response or raise a ClientError.

        With `idempotency_key` the call is sent with that `Idempotency-Key` and retried as an idempotent one."""
        headers = {"User-Agent": USER_AGENT}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
            idempotent = True
        if authenticated and self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        if json is not None:
            body, content_type = jsonlib.dumps(json).encode(), "application/json"
        if content_type:
            headers["Content-Type"] = content_type
        for retry in range(self.retry.attempts):
            is_last = retry == self.retry.attempts - 1
            data = _ProgressBody(body, progress) if body is not None and progress else body
            try:
                raw = self.session.request(method, self.base_url + path, data=data, headers=headers,
                                           timeout=self.timeout)
            except (requests.ConnectionError, requests.Timeout) as error:
                if not idempotent or is_last:
                    raise ServiceUnavailable(unreachable_reason(error, self.base_url, self.timeout)) from error
                self.retry.sleep(self.retry.delay(retry))
                continue
            except requests.RequestException as error:  # a URL requests cannot call, a broken answer
                raise ServiceUnavailable(f"{self.base_url}: {_first_line(error)}") from error
            response = Response(raw.status_code, dict(raw.headers), raw.content)
            if response.status < 400:
                return response
            wait = self._wait_before_retry(response, retry, idempotent=idempotent, is_last=is_last)
            if wait is None:
                raise self._error(response)
            self.retry.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _wait_before_retry(self, response: Response, retry: int, *, idempotent: bool, is_last: bool) -> float | None:
        """Seconds to wait before trying again, or None when this response is final."""
        if is_last:
            return None
        if response.status == 429:
            retry_after = _retry_after_seconds(response.headers)
            if retry_after is None:
                return self.retry.delay(retry)
            return retry_after if retry_after <= self.retry.max_retry_after else None
        if response.status >= 500 and idempotent:
            return self.retry.delay(retry)
        return None

    def _error(self, response: Response) -> Exception:
        try:
            body = jsonlib.loads(response.content)
        except ValueError:
            body = None
        error = error_for(response.status, body, _retry_after_seconds(response.headers))
        if isinstance(error, RateLimited) and error.retry_after is None:
            error.retry_after = 0.0
        return error


def unreachable_reason(error: BaseException, base_url: str, timeout: float) -> str:
    """One line saying why `base_url` did not answer: refused, a name that does not resolve, no answer in
    time, a TLS failure; the innermost error's first line (never a urllib3 pool's repr) for anything else."""
    causes = _causes(error)

    def found(*kinds: type) -> BaseException | None:
        return next((cause for cause in causes if isinstance(cause, kinds)), None)

    if found(socket.gaierror) or any(type(cause).__name__ == "NameResolutionError" for cause in causes):
        host = requests.utils.urlparse(base_url).hostname or base_url
        return f"the host name {host} does not resolve (DNS): check --url or SVC_URL"
    if found(ConnectionRefusedError):
        return f"{base_url} refused the connection: is the service running there? (--url or SVC_URL)"
    if isinstance(error, requests.Timeout) or found(TimeoutError):
        return f"{base_url} did not answer within {timeout:g} s"
    if tls := found(ssl.SSLError):
        return f"{base_url}: the TLS connection failed ({_first_line(tls)})"
    if found(ConnectionResetError, ConnectionAbortedError):
        return f"{base_url} closed the connection before answering"
    return f"{base_url}: {_first_line(causes[-1])}"


def _causes(error: BaseException) -> list[BaseException]:
    """The error and what it wraps: urllib3's `reason`, requests' first argument, `__cause__`/`__context__`."""
    seen: list[BaseException] = []
    pending: list[object] = [error]
    while pending and len(seen) < 20:
        item = pending.pop(0)
        if not isinstance(item, BaseException) or any(item is known for known in seen):
            continue
        seen.append(item)
        pending += [getattr(item, "reason", None), *(item.args[:1] if item.args else []), item.__cause__,
                    item.__context__]
    return seen


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def _retry_after_seconds(headers: dict[str, str]) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110 10.2.3); None when absent or garbled."""
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
