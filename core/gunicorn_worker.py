"""A gthread worker that takes its share of connections, so keep-alive load spreads over the workers.

gunicorn's workers all wait on the one listening socket and whichever wakes first accepts. A kept-alive
connection then stays with that worker for its whole life, so a burst of connections (a proxy opening
its upstream pool, a load generator starting) can settle mostly on one worker, and that worker's share
of the CPU caps the whole server: measured, about one server start in three halved throughput
(docs/performance.md, "Connections over workers").

Each worker publishes how many connections it holds in a table shared with its siblings (created by
the master before it forks them) and stops accepting while it holds more than the least-loaded live
sibling plus `SLACK`. The least-loaded worker always accepts, so a connection is never left waiting
for a worker; a worker that stopped accepting looks again every `RECHECK_SECONDS`.
"""

import contextlib
import ctypes
import json
import multiprocessing
import os
import selectors
import socket
import tempfile
import time
from functools import partial

from gunicorn.http.unreader import SocketUnreader
from gunicorn.http2 import negotiation
from gunicorn.workers.gthread import TConn, ThreadWorker

# The workers below override gthread's internals (its accept switch, its event loop, TConn): run only on
# the gunicorn releases they were tested with (tests/core/test_tested_versions.py; pyproject agrees).
TESTED_VERSIONS = {"gunicorn": ("27.0",)}

# More than any worker count we run; a worker that finds no free slot accepts as stock gthread does.
SLOTS = 256
# How many more connections than the least-loaded sibling a worker may hold and still accept: a burst
# then lands on both workers at once instead of alternating one connection at a time.
SLACK = 1
RECHECK_SECONDS = 0.05


class _Slot(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_int), ("connections", ctypes.c_int)]


# Created when the master imports the worker class (before any fork), inherited by every worker.
_table = multiprocessing.RawArray(_Slot, SLOTS)
_slots_used = multiprocessing.RawValue(ctypes.c_int, 0)  # slots at or past this were never claimed
_claim_lock = multiprocessing.Lock()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim_slot(table, used, pid: int) -> int | None:
    """A free slot for `pid` (one whose worker has exited counts as free), or None if all are taken."""
    with _claim_lock:
        for index in range(len(table)):
            slot = table[index]
            if slot.pid == 0 or not _alive(slot.pid):
                slot.pid, slot.connections = pid, 0
                used.value = max(used.value, index + 1)
                return index
    return None


def release_slot(table, index: int | None, pid: int) -> None:
    if index is not None and table[index].pid == pid:
        table[index].pid = 0


def fewest_elsewhere(table, used: int, own: int) -> int | None:
    """The fewest connections any other live worker holds, or None when this worker is alone.

    A worker killed by the master (timeout, SIGKILL) never released its slot: its pid is checked.
    """
    fewest = None
    for index in range(used):
        slot = table[index]
        if index == own or slot.pid == 0 or not _alive(slot.pid):
            continue
        if fewest is None or slot.connections < fewest:
            fewest = slot.connections
    return fewest


class BalancedThreadWorker(ThreadWorker):
    """gthread, plus: accept only while holding no more than the least-loaded sibling plus SLACK."""

    def init_process(self):
        self._slot = claim_slot(_table, _slots_used, os.getpid())
        self._held_back = False
        super().init_process()

    def run(self):
        try:
            super().run()
        finally:
            release_slot(_table, self._slot, os.getpid())

    def _within_share(self) -> bool:
        if self._slot is None:
            return True
        _table[self._slot].connections = self.nr_conns
        fewest = fewest_elsewhere(_table, _slots_used.value, self._slot)
        return fewest is None or self.nr_conns <= fewest + SLACK

    def set_accept_enabled(self, enabled):
        self._held_back = enabled and self.alive and not self._within_share()
        super().set_accept_enabled(enabled and not self._held_back)

    def notify(self):
        # Called at the top of every turn of the event loop: stop accepting once over our share. Taking
        # connections again needs nothing here: while not accepting, the loop calls set_accept_enabled
        # (True) every turn, which asks _within_share again.
        super().notify()
        if not self.alive:
            # Stopping: no longer a sibling that others should wait for.
            release_slot(_table, self._slot, os.getpid())
            self._held_back = False
        elif self._accepting and not self._within_share():
            self.set_accept_enabled(False)
            self._held_back = True

    def wait_for_and_dispatch_events(self, timeout):
        # While held back, wake often enough to take connections again once the siblings catch up.
        if self._held_back:
            timeout = min(timeout, RECHECK_SECONDS)
        return super().wait_for_and_dispatch_events(timeout)


# --- Whole requests before a thread ------------------------------------------------------------------
#
# Stock gthread hands a connection to a thread as soon as its first byte arrives, and the thread then
# blocks in recv() until the head and body are complete: a client sending a byte a second holds it. The
# worker below reads in its poller instead, without blocking, into a buffer per connection, and gives a
# thread only whole requests, as a buffering proxy would (deploy/nginx.conf). A request whose head or
# body does not arrive in time is answered 408 and closed. Why: docs/decisions.md, "Slow clients".

# Seconds for a whole request head (nginx's client_header_timeout), from the connection's first byte, or
# from its opening for a new one. The body: no byte for BODY_READ_TIMEOUT, or not all of it within
# BODY_READ_DEADLINE of the head: the app's own settings, read from the same environment variables.
HEADER_READ_TIMEOUT = float(os.environ.get("HEADER_READ_TIMEOUT") or 10)
BODY_READ_TIMEOUT = float(os.environ.get("BODY_READ_TIMEOUT") or 10)
BODY_READ_DEADLINE = float(os.environ.get("BODY_READ_DEADLINE") or 60)
# The largest body any route takes (nginx's largest client_max_body_size). A body declared larger goes
# to the app at once, which refuses it (413) from its Content-Length without reading it.
MAX_BUFFERED_BODY = 51 * 1024 * 1024
# A request past this many bytes waits in a temporary file rather than in memory: a worker holds up to
# `worker_connections` (1,000) arriving requests.
SPOOL_AFTER = 256 * 1024
RECV_BYTES = 65536
# Body reads take what the socket has, up to this: every recv() waits for the GIL again, up to 5 ms while
# the worker's thread computes, so 64 KB at a time read a 50 MB upload at a few MB/s.
BODY_RECV_BYTES = 1024 * 1024


class ChunkScanner:
    """Finds where a chunked body ends, fed the bytes as they come (RFC 9112 section 7.1).

    Only the framing is followed; gunicorn's parser still reads and checks the body itself. Anything it
    cannot follow ends the scan, and the parser then answers the request as it sees fit.
    """

    def __init__(self):
        self.line = bytearray()
        self.data_left = 0  # bytes of chunk data, then its CRLF, still to skip
        self.in_trailer = False
        self.done = False

    def feed(self, data: bytes) -> int:
        """How many bytes of `data` belong to the body; `done` says whether it ended within them."""
        pos = 0
        while pos < len(data) and not self.done:
            if self.data_left:
                step = min(self.data_left, len(data) - pos)
                self.data_left -= step
                pos += step
                continue
            end = data.find(b"\n", pos)
            if end < 0:
                self.line += data[pos:]
                if len(self.line) > 8192:
                    self.done = True  # not a chunk line: let the parser say so
                return len(data)
            self.line += data[pos:end]
            pos = end + 1
            line, self.line = bytes(self.line).rstrip(b"\r"), bytearray()
            if self.in_trailer:
                self.done = not line
            else:
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    self.done = True
                    break
                if size:
                    self.data_left = size + 2
                else:
                    self.in_trailer = True
        return pos


class Arriving:
    """The part of one request that has arrived, held until the whole request is here.

    `feed()` says whether it is complete: its head, then the body its Content-Length or chunked framing
    announces. A head over the server's limits, or a framing this cannot follow, counts as complete too:
    gunicorn's parser then refuses it with everything at hand, without waiting for more.
    """

    def __init__(self, head_limit: int, deadline: float):
        self.head_limit = head_limit
        self.deadline = deadline
        self.data = bytearray()
        self.spool = None  # a temporary file once the request outgrows SPOOL_AFTER
        self.size = 0
        self.head_end = None
        self.body_left = 0  # Content-Length bytes still to come
        self.chunks: ChunkScanner | None = None
        self.expects_continue = False
        self.path = b""
        self.complete = False

    def want(self) -> int:
        """How much to read next: never past the end of a body of known length (the next request on
        the connection stays in the socket, for gunicorn's own reader)."""
        if self.head_end is not None and self.chunks is None:
            return min(BODY_RECV_BYTES, self.body_left)
        return RECV_BYTES if self.head_end is None else BODY_RECV_BYTES

    def feed(self, data: bytes, now: float) -> bool:
        self._keep(data)
        if self.head_end is None:
            end = self.data.find(b"\r\n\r\n", max(0, self.size - len(data) - 3))
            if not self.path and (line_end := self.data.find(b"\r\n", 0, end if end >= 0 else None)) > 0:
                self.path = [*bytes(self.data[:line_end]).split(b" "), b"", b""][1] or b"/"  # for the 408
            if end < 0:
                self.complete = self.size > self.head_limit
                return self.complete
            self.head_end = end + 4
            if not self._read_head(bytes(self.data[:end])):
                self.complete = True
                return True
            self.deadline = now + BODY_READ_DEADLINE
            data = bytes(self.data[self.head_end:])
        if self.chunks is not None:
            self.chunks.feed(data)
            self.complete = self.chunks.done or self.size - self.head_end > MAX_BUFFERED_BODY
        else:
            self.body_left -= len(data)
            self.complete = self.body_left <= 0
        return self.complete

    def _keep(self, data: bytes) -> None:
        self.size += len(data)
        if self.spool is not None:
            self.spool.write(data)
            return
        self.data += data
        if len(self.data) > SPOOL_AFTER and self.head_end is not None:
            self.spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _SpooledUnreader or _drop
            self.spool.write(self.data[self.head_end:])
            del self.data[self.head_end:]

    def _read_head(self, head: bytes) -> bool:
        """Find the body's framing; False when the head is one gunicorn will refuse or read itself."""
        request_line, *fields = head.lstrip(b"\r\n").split(b"\r\n")
        parts = request_line.split(b" ")
        if len(parts) != 3:
            return False
        lengths, codings = [], []
        for field in fields:
            name, colon, value = field.partition(b":")
            if not colon:
                return False
            name, value = name.strip().lower(), value.strip()
            if name == b"content-length":
                lengths.append(value)
            elif name == b"transfer-encoding":
                codings.append(value.lower())
            elif name == b"expect":
                self.expects_continue = value.lower() == b"100-continue" and parts[2] == b"HTTP/1.1"
        if codings:
            if lengths or not b",".join(codings).rstrip().endswith(b"chunked"):
                return False  # gunicorn refuses these (request smuggling)
            self.chunks = ChunkScanner()
            return True
        if len(lengths) > 1 or (lengths and not lengths[0].isdigit()):
            return False
        self.body_left = int(lengths[0]) if lengths else 0
        return self.body_left <= MAX_BUFFERED_BODY

    def in_time(self, now: float, last_byte: float) -> bool:
        if now >= self.deadline:
            return False
        return self.head_end is None or now - last_byte < BODY_READ_TIMEOUT


class _SpooledUnreader(SocketUnreader):
    """gunicorn's socket reader, reading a spooled request from its file before the socket."""

    def __init__(self, sock, spool):
        super().__init__(sock)
        self.spool = spool
        spool.seek(0)

    def chunk(self, size_hint=None):
        if self.spool is not None:
            data = self.spool.read(max(size_hint or 0, self.mxchunk))
            if data:
                return data
            self.spool.close()
            self.spool = None
        return super().chunk(size_hint)

    def plain(self) -> SocketUnreader:
        """A plain reader holding what is still unread here (a pipelined request, at most)."""
        reader = SocketUnreader(self.sock)
        rest = self.buf.getvalue() + (self.spool.read() if self.spool is not None else b"")
        if self.spool is not None:
            self.spool.close()
        reader.unread(rest)
        return reader


def timeout_response(path: bytes) -> bytes:
    """The 408 for a request that did not arrive in time: the error envelope under /v1, as the app's."""
    if path.startswith(b"/v1/"):
        body = json.dumps({"error": "request_timeout", "message": "The request did not arrive in time."}).encode()
        content_type = b"application/json"
    else:
        body, content_type = b"Request Timeout", b"text/plain; charset=utf-8"
    return (b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: " + content_type
            + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


class WholeRequestWorker(BalancedThreadWorker):
    """BalancedThreadWorker that gives a thread only a request that has fully arrived.

    Plain HTTP/1.x only: a TLS connection (the handshake happens in the thread) or an HTTP/2 one is
    served as stock gthread serves it; TLS ends at the proxy here.
    """

    def init_process(self):
        self._arriving: dict[TConn, Arriving] = {}
        self._last_byte: dict[TConn, float] = {}
        self._bufferable = not self.cfg.is_ssl
        self._head_limit = (self.cfg.limit_request_line or 8190) + 2 + (self.cfg.limit_request_fields or 100) * (
            (self.cfg.limit_request_field_size or 8190) + 2) + 2
        super().init_process()

    def enqueue_req(self, conn):
        if getattr(conn, "whole", False) or conn.is_http2 or not self._bufferable or (
                conn.parser is None and negotiation.prior_knowledge_allowed(self.cfg, conn.client)):
            conn.whole = False
            return super().enqueue_req(conn)
        now = time.monotonic()
        # A new connection gets HEADER_READ_TIMEOUT for its head; a kept-alive one made readable by its
        # next request's first byte gets it too (its idle time was the keepalive's).
        arriving = Arriving(self._head_limit, now + HEADER_READ_TIMEOUT)
        buffered = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        conn.sock.setblocking(False)
        self._arriving[conn] = arriving
        self._last_byte[conn] = now
        if buffered and self._take(conn, arriving, buffered, now):
            return None
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_arriving, conn))
        return None

    def _take(self, conn, arriving: Arriving, data: bytes, now: float) -> bool:
        """Add bytes; dispatch the request once whole. True when dispatched."""
        head_was_done = arriving.head_end is not None
        if not arriving.feed(data, now):
            if not head_was_done and arriving.head_end is not None and arriving.expects_continue:
                # The client waits for this before sending its body. (gunicorn sends another when the
                # app starts; a client reads any number of 1xx answers, RFC 9110 section 15.2.)
                with contextlib.suppress(OSError):
                    conn.sock.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            return False
        del self._arriving[conn], self._last_byte[conn]
        with contextlib.suppress(KeyError, ValueError):
            self.poller.unregister(conn.sock)
        conn.sock.setblocking(True)
        conn.init()
        if arriving.spool is not None:
            conn.parser.unreader = _SpooledUnreader(conn.sock, arriving.spool)
        conn.parser.unreader.unread(bytes(arriving.data))
        conn.whole = True
        super().enqueue_req(conn)
        return True

    def _on_arriving(self, conn, client):
        arriving = self._arriving[conn]
        try:
            data = conn.sock.recv(arriving.want())
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        now = time.monotonic()
        self._last_byte[conn] = now
        self._take(conn, arriving, data, now)

    def _drop(self, conn, answer: bytes = b"") -> None:
        arriving = self._arriving.pop(conn)
        self._last_byte.pop(conn, None)
        with contextlib.suppress(OSError, KeyError, ValueError):
            self.poller.unregister(conn.sock)
        if arriving.spool is not None:
            arriving.spool.close()
        if answer:
            with contextlib.suppress(OSError):
                # What the client sent meanwhile is read first: closing on unread bytes sends a reset,
                # which can destroy the answer before the client reads it.
                while conn.sock.recv(RECV_BYTES):
                    pass
            with contextlib.suppress(OSError):
                conn.sock.send(answer)
                conn.sock.shutdown(socket.SHUT_WR)
        self.nr_conns -= 1
        conn.close()

    def murder_pending(self):
        super().murder_pending()
        now = time.monotonic()
        for conn, arriving in list(self._arriving.items()):
            if not self.alive and arriving.size == 0:
                self._drop(conn)  # stopping: nothing of a request has come on this one
            elif not arriving.in_time(now, self._last_byte[conn]):
                self._drop(conn, timeout_response(arriving.path) if arriving.size else b"")

    def finish_request(self, conn, fs):
        if conn.parser is not None and isinstance(conn.parser.unreader, _SpooledUnreader):
            conn.parser.unreader = conn.parser.unreader.plain()
        super().finish_request(conn, fs)
