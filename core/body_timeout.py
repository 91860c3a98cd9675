"""Request bodies must arrive in time, so a slow client cannot hold a worker.

gunicorn's sync and gthread workers read a request body with blocking `recv()` calls and no timeout of
their own (docs/decisions.md, "Slow clients"). `with_body_timeouts` wraps the WSGI application: for a
request with a body it gives the client socket (`gunicorn.socket`) a BODY_READ_TIMEOUT timeout, so a
read that gets no byte for that long fails, and has a watchdog thread shut the socket's read side at
BODY_READ_DEADLINE, so a body that trickles in too slowly fails too. Either way `wsgi.input` raises
`BodyReadTimeout` and the client gets 408 `request_timeout`. gunicorn then closes the connection: the
sync worker always does, and gthread does not reuse a connection whose body read failed or hit its end.
Without gunicorn (runserver) there is no socket: only the deadline applies, checked before each read.
"""

import contextlib
import heapq
import itertools
import json
import os
import socket
import threading
from collections.abc import Callable, Iterable
from time import monotonic

from django.conf import settings
from django.core.exceptions import BadRequest

from core.errors import RequestTimeout


class BodyReadTimeout(RequestTimeout, BadRequest):
    """Raised from `wsgi.input`. DRF views answer it as the ApiError it is; outside DRF it is a
    BadRequest, so Django answers without logging a 500, and the middleware turns that answer into 408."""


class _Watch:
    __slots__ = ("deadline", "fired", "order", "sock")

    def __init__(self, deadline: float, order: int, sock: socket.socket):
        self.deadline, self.order, self.sock, self.fired = deadline, order, sock, False

    def __lt__(self, other: "_Watch") -> bool:
        return (self.deadline, self.order) < (other.deadline, other.order)


class _Watchdog:
    """One thread per process that shuts the read side of sockets whose body deadline has passed.

    gunicorn's `Body.read()` loops over `recv()` until it has what it asked for (at least 1 KiB), so a
    client sending a byte just inside each read timeout never hands control back to `TimedInput`.
    `shutdown(SHUT_RD)` from another thread wakes the blocked `recv()` with end of file.
    """

    def __init__(self):
        self._pid = None
        self._starting = threading.Lock()

    def _start(self) -> None:
        # Per process, on first use: the thread of a process that forked does not run in its child.
        with self._starting:
            if self._pid == os.getpid():
                return
            self._ready = threading.Condition()
            self._heap: list[_Watch] = []
            self._order = itertools.count()
            threading.Thread(target=self._run, name="body-deadline-watchdog", daemon=True).start()
            self._pid = os.getpid()

    def watch(self, deadline: float, sock: socket.socket) -> _Watch:
        if self._pid != os.getpid():
            self._start()
        with self._ready:
            entry = _Watch(deadline, next(self._order), sock)
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._ready.notify()
        return entry

    def cancel(self, entry: _Watch) -> None:
        with self._ready:  # under the lock: once cancelled, the socket is never shut
            entry.sock = None

    def _run(self) -> None:
        with self._ready:
            while True:
                while self._heap and self._heap[0].sock is None:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._ready.wait()
                    continue
                delay = self._heap[0].deadline - monotonic()
                if delay > 0:
                    self._ready.wait(delay)
                    continue
                entry = heapq.heappop(self._heap)
                entry.fired = True
                with contextlib.suppress(OSError):  # the client may be gone already
                    # The plain socket's method: SSLSocket.shutdown() would also drop the TLS session
                    # that the 408 is still to be written through.
                    socket.socket.shutdown(entry.sock, socket.SHUT_RD)
                entry.sock = None


_watchdog = _Watchdog()


class TimedInput:
    """`wsgi.input` that raises BodyReadTimeout when the body stalls or misses its deadline.

    `read_timeout` (seconds without a byte) needs `sock`; `deadline` (seconds for the whole body, from
    now) works without one too. Zero turns either off.
    """

    def __init__(self, stream, *, length: int, sock: socket.socket | None, read_timeout: float, deadline: float):
        self._stream = stream
        self._remaining = length
        self._sock = sock
        self._read_timeout = read_timeout if sock is not None else 0
        self._deadline = monotonic() + deadline if deadline > 0 else None
        self._started = self._finished = False
        self._prior_timeout: float | None = None
        self._watch: _Watch | None = None
        self.timed_out = False

    def read(self, size: int = -1, /) -> bytes:
        return self._guarded(self._stream.read, size)

    def readline(self, size: int = -1, /) -> bytes:
        return self._guarded(self._stream.readline, size)

    def _guarded(self, read: Callable[[int], bytes], size: int) -> bytes:
        if self.timed_out:
            raise BodyReadTimeout("The request body did not arrive in time.")
        if self._finished:
            return read(size)
        if not self._started:
            self._start()
        if self._deadline is not None and monotonic() >= self._deadline:
            raise self._timeout("The request body did not arrive in time.")
        try:
            data = read(size)
        except TimeoutError as exc:
            if not self._read_timeout:
                raise  # not our timeout
            raise self._timeout("The request body stalled.") from exc
        self._remaining -= len(data)
        if self._remaining <= 0:
            self.finish()
        elif self._watch is not None and self._watch.fired:
            raise self._timeout("The request body did not arrive in time.")
        return data

    def _start(self) -> None:
        self._started = True
        if self._sock is None:
            return
        self._prior_timeout = self._sock.gettimeout()
        if self._read_timeout:
            self._sock.settimeout(self._read_timeout)
        if self._deadline is not None:
            self._watch = _watchdog.watch(self._deadline, self._sock)

    def _timeout(self, message: str) -> BodyReadTimeout:
        self.timed_out = True
        self.finish()
        return BodyReadTimeout(message)

    def finish(self) -> None:
        """Stop watching: the body is complete, failed, or the response is ready."""
        if self._finished:
            return
        self._finished = True
        if self._watch is not None:
            _watchdog.cancel(self._watch)
        if self._started and self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.settimeout(self._prior_timeout)


def _body_length(declared: str) -> int:
    try:
        return max(0, int(declared))
    except ValueError:
        return 0  # Django reads no body then either


def _timeout_response(environ: dict) -> tuple[list[tuple[str, str]], bytes]:
    if environ.get("PATH_INFO", "").startswith("/v1/"):
        body = json.dumps(RequestTimeout().body()).encode()
        content_type = "application/json"
    else:
        body, content_type = b"Request Timeout", "text/plain; charset=utf-8"
    return [("Content-Type", content_type), ("Content-Length", str(len(body)))], body


class BodyTimeoutMiddleware:
    """WSGI middleware: a request whose body times out is answered 408 whatever the view made of it."""

    def __init__(self, app: Callable, *, read_timeout: float, deadline: float):
        self.app, self.read_timeout, self.deadline = app, read_timeout, deadline

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        declared = environ.get("CONTENT_LENGTH")
        if not declared or declared == "0" or not (length := _body_length(declared)):
            return self.app(environ, start_response)  # most requests: nothing to wrap, no cost
        # An HTTP/2 stream shares its socket with other streams: no socket timeout there.
        sock = environ.get("gunicorn.socket") if environ.get("SERVER_PROTOCOL", "").startswith("HTTP/1") else None
        body = TimedInput(environ["wsgi.input"], length=length, sock=sock,
                          read_timeout=self.read_timeout, deadline=self.deadline)
        environ["wsgi.input"] = body
        replaced = []

        def start(status: str, headers: list, exc_info=None):
            if body.timed_out and not status.startswith("408"):
                request_id = [header for header in headers if header[0].lower() == "x-request-id"]
                headers, payload = _timeout_response(environ)
                headers += request_id
                replaced.append(payload)
                status = "408 Request Timeout"
            return start_response(status, headers, exc_info)

        try:
            response = self.app(environ, start)
        finally:
            body.finish()
        if replaced:
            if hasattr(response, "close"):
                response.close()
            return replaced
        return response


def with_body_timeouts(app: Callable) -> Callable:
    """The WSGI application with BODY_READ_TIMEOUT and BODY_READ_DEADLINE applied (unchanged if both are 0)."""
    read_timeout, deadline = max(0, settings.BODY_READ_TIMEOUT), max(0, settings.BODY_READ_DEADLINE)
    if not (read_timeout or deadline):
        return app
    return BodyTimeoutMiddleware(app, read_timeout=read_timeout, deadline=deadline)
