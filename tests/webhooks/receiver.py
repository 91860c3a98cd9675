"""A real webhook receiver for tests: a threaded HTTP server on 127.0.0.1 that checks each delivery's
signature as a Stripe-style receiver does (constant-time compare, 300-second window) before answering.

Each path can be told what to answer (`respond`): a status code, a Location, or a delay (a receiver
that hangs). Every request is recorded with its headers, body and signature verdict.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from webhooks.signing import HEADER, signature_verify


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    signature_ok: bool | None  # None: no secret registered for the path
    alongside: int = 0  # requests hanging here on purpose whose senders still waited when this one arrived

    @property
    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class _Answer:
    status: int = 200
    delay: float = 0.0
    location: str | None = None


class Receiver:
    def __init__(self):
        self.requests: list[Received] = []
        self._answers: dict[str, _Answer] = {}
        self._secrets: dict[str, str] = {}
        self._holding: list[tuple[str, socket.socket]] = []  # (path, connection) answered late or never
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver._handle(self, body)

            def log_message(self, *args):  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def respond(self, path: str = "/hook", *, status: int = 200, delay: float = 0.0, location: str | None = None):
        self._answers[path] = _Answer(status, delay, location)

    def expect_secret(self, path: str, secret: str) -> None:
        """Check signatures on `path` with `secret`: a bad one is answered 400, as a real receiver would."""
        self._secrets[path] = secret

    def received(self, path: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if path is None or r.path == path]

    def held(self, path: str) -> int:
        """Connections on `path` this receiver holds unanswered whose sender has not given up (closed)."""
        with self._lock:
            holding = [sock for held_path, sock in self._holding if held_path == path]
        return sum(1 for sock in holding if _peer_waits(sock))

    def close(self) -> None:
        self._stopping.set()  # wakes handlers that are hanging on purpose
        self._server.shutdown()
        self._server.server_close()

    def _handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        path = handler.path
        secret = self._secrets.get(path)
        ok = None if secret is None else signature_verify(secret=secret, body=body,
                                                           header=handler.headers.get(HEADER, ""))
        with self._lock:
            alongside = sum(1 for _, sock in self._holding if _peer_waits(sock))
            self.requests.append(Received(path, {k.lower(): v for k, v in handler.headers.items()}, body, ok,
                                          alongside))
        answer = self._answers.get(path, _Answer())
        if answer.delay:
            entry = (path, handler.connection)
            with self._lock:
                self._holding.append(entry)
            try:
                if self._stopping.wait(answer.delay):
                    return
            finally:
                with self._lock:
                    self._holding.remove(entry)
        status = 400 if ok is False else answer.status
        try:
            handler.send_response(status)
            if answer.location:
                handler.send_header("Location", answer.location)
            handler.send_header("Content-Length", "0")
            handler.send_header("Connection", "close")
            handler.end_headers()
        except OSError:
            pass  # the sender gave up (timed out) before the answer


def _peer_waits(conn: socket.socket) -> bool:
    """Whether the sender on `conn` is still connected (it closes once it gives up on the answer)."""
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True  # nothing to read, not closed
    except OSError:
        return False
