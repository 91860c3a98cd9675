"""One signed webhook POST to a checked target, within a hard deadline (spec, Events rules 1-3).

The connection goes to an address `target_check` approved, never to a fresh DNS answer (so DNS
rebinding cannot move it); TLS still verifies the certificate against the URL's host name. Every
blocking step (connect, TLS handshake, send, each read) gets only the time left before the deadline,
so a target that drips its answer cannot stretch the 10 seconds. Only the status line matters: the
request says `Connection: close`, nothing is followed (a 3xx is a failure like any non-2xx) and at
most `MAX_HEAD_BYTES` of the answer are read.

Pure module: no Django.
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlsplit

from webhooks.targets import Target

MAX_HEAD_BYTES = 16 * 1024
USER_AGENT = "ProvenanceService-Webhooks/1"


@dataclass(frozen=True)
class Outcome:
    """What came of one POST: the status code if the target answered in time, else why not."""

    status_code: int | None
    error: str  # empty when a status code came back
    latency_ms: int
    attempted: bool = True  # False: never sent (the request's delivery window had already passed)

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def post(target: Target, *, body: bytes, headers: dict[str, str], deadline: float) -> Outcome:
    """POST `body` to `target` with `headers` added, finishing by `deadline` (time.monotonic())."""
    started = time.monotonic()
    if started >= deadline:
        return Outcome(None, "not sent: the delivery window of this request had already passed", 0, attempted=False)
    try:
        status = _exchange(target, _request_bytes(target, body, headers), deadline)
        return Outcome(status, "", _elapsed_ms(started))
    except TimeoutError:
        return Outcome(None, "timed out", _elapsed_ms(started))
    except ssl.SSLError as exc:
        return Outcome(None, f"TLS error: {exc.reason or exc.__class__.__name__}"[:300], _elapsed_ms(started))
    except (OSError, ValueError) as exc:
        return Outcome(None, f"connection failed: {exc}"[:300], _elapsed_ms(started))


def _exchange(target: Target, request: bytes, deadline: float) -> int:
    sock = _connect(target, deadline)
    try:
        if target.scheme == "https":
            sock.settimeout(_left(deadline))
            sock = _tls_context().wrap_socket(sock, server_hostname=target.host)  # handshake within the time left
        sock.settimeout(_left(deadline))
        sock.sendall(request)
        return _read_status(sock, deadline)
    finally:
        sock.close()


def _connect(target: Target, deadline: float) -> socket.socket:
    """A TCP connection to the first checked address that accepts one (no name lookup here)."""
    last_error: OSError = OSError("no address")
    for address in target.addresses:
        sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.settimeout(_left(deadline))
            sock.connect((address, target.port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except TimeoutError:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            last_error = exc
    raise last_error


def _read_status(sock: socket.socket, deadline: float) -> int:
    """The final status code: informational (1xx) heads are skipped; each read gets the time left."""
    received = b""
    while True:
        head_end = received.find(b"\r\n\r\n")
        if head_end >= 0:
            status = _status_code(received[:received.find(b"\r\n")])
            if status >= 200:
                return status
            received = received[head_end + 4:]  # 1xx: another head follows
            continue
        if len(received) > MAX_HEAD_BYTES:
            raise ValueError("the response head is too long")
        sock.settimeout(_left(deadline))
        chunk = sock.recv(4096)
        if not chunk:
            if received.startswith(b"HTTP/") and b"\r\n" in received:  # a head cut short still says its status
                return _status_code(received[:received.find(b"\r\n")])
            raise ValueError("the connection closed before a response")
        received += chunk


def _status_code(status_line: bytes) -> int:
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or len(parts[1]) != 3 or not parts[1].isdigit():
        raise ValueError("the response is not HTTP/1.x")
    return int(parts[1])


def _request_bytes(target: Target, body: bytes, headers: dict[str, str]) -> bytes:
    parts = urlsplit(target.url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = f"[{target.host}]" if ":" in target.host else target.host
    if parts.port is not None:
        host += f":{parts.port}"
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}", f"User-Agent: {USER_AGENT}",
             "Content-Type: application/json", f"Content-Length: {len(body)}", "Connection: close",
             *(f"{name}: {value}" for name, value in headers.items())]
    if any("\r" in line or "\n" in line for line in lines):
        raise ValueError("a header carries a line break")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + body


@cache
def _tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()  # certificate and host name checked, TLS 1.2 or newer


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _elapsed_ms(started: float) -> int:
    return max(0, round((time.monotonic() - started) * 1000))
