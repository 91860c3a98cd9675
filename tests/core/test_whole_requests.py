"""Slow clients against each documented way of serving: they must not hold the server from anyone else.

Clients drip a request head, or a body, one byte a second; others send part of a body and stall, or
connect and send nothing. While they are connected, normal requests (new connections, a kept-alive one,
a small POST) must all be answered. Against gunicorn with the repository's gunicorn.conf.py (its worker
reads requests in its poller and gives a thread only whole ones: core/gunicorn_worker.py) the slow
connections are then closed by the worker's deadlines, with 408 in the error envelope where a request
had begun. Against the development server (`make run`: deploy/run_dev.py, Django's threaded runserver)
each slow client holds only a thread of its own.

Nothing here reads a clock: waits are bounded by the CPU the servers spend (tests/waiting.py), and
"while they are connected" is checked by order (no slow connection had been closed when the last normal
answer came).
"""

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests

from core.gunicorn_worker import Arriving, ChunkScanner, timeout_response
from tests.proc_sockets import free_port
from tests.waiting import process_tree, wait_until

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"
STARTUP_CPU_SECONDS = 120
TRAFFIC_CPU_SECONDS = 60
# The worker's deadlines in these tests: long enough for all the normal traffic to be served first on a
# busy machine (it takes well under a second of CPU), short enough to watch them fire.
HEADER_SECONDS, BODY_IDLE_SECONDS, BODY_SECONDS = 15, 6, 15
DRIPS = 90  # bytes each dripping client sends at most, one a second: past every deadline above

HEAD_DRIP = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: "
BODY_DRIP = (b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             b"Content-Length: 1000\r\n\r\n{")
CHUNKED_DRIP = (b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n400\r\n{")
BODY_STALL = (b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: 100000\r\n\r\n" + b'{"email":')


def _server_env(database: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if name not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "PUBLIC_BASE_URL")}
    env.update(DEBUG="false", ALLOWED_HOSTS="127.0.0.1,localhost",
               SECRET_KEY="whole-requests-test-secret-key-0123456789-abcdefghijklmnop",
               KEY_ENCRYPTION_KEY="whole-requests-test-kek", TOKEN_SIGNING_KEY="whole-requests-test-tsk",
               LOG_SIGNING_KEY="whole-requests-test-lsk", DATABASE_URL=f"sqlite:///{database}", LOG_LEVEL="INFO",
               HEADER_READ_TIMEOUT=str(HEADER_SECONDS), BODY_READ_TIMEOUT=str(BODY_IDLE_SECONDS),
               BODY_READ_DEADLINE=str(BODY_SECONDS))
    return env


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("whole_requests") / "db.sqlite3"
    done = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT,
                          env=_server_env(path), capture_output=True, text=True, timeout=600)
    if done.returncode:
        pytest.fail(f"manage.py migrate failed:\n{done.stdout}{done.stderr}")
    return path


class Server:
    def __init__(self, kind: str, process: subprocess.Popen, port: int, log: Path):
        self.kind, self.process, self.port, self.log = kind, process, port, log

    def pids(self) -> list[int]:
        return process_tree(self.process.pid)

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def wait(self, condition, what: str, cpu_budget: float = TRAFFIC_CPU_SECONDS):
        return wait_until(condition, pids=self.pids, cpu_budget=cpu_budget, what=f"{self.kind}: {what}",
                          alive=lambda: self.process.poll() is None, details=self.output)


@pytest.fixture(scope="module", params=["gunicorn", "runserver"])
def server(request, database, tmp_path_factory):
    """gunicorn as deploy/serve.sh starts it (gunicorn.conf.py, two workers), or the development server
    as `make run` starts it (deploy/run_dev.py)."""
    kind, port = request.param, free_port()
    env = _server_env(database)
    if kind == "gunicorn":
        if not GUNICORN.exists():
            pytest.skip(f"gunicorn is not installed at {GUNICORN}")
        command = [str(GUNICORN), "config.wsgi:application", "-c", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}",
                   "--workers", "2", "--graceful-timeout", "2", "--no-control-socket"]
    else:
        env["DEBUG"] = "true"
        command = [sys.executable, "deploy/run_dev.py", f"127.0.0.1:{port}"]
    log = tmp_path_factory.mktemp(kind) / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    served = Server(kind, process, port, log)
    try:
        served.wait(lambda: _answering(f"http://127.0.0.1:{port}/healthz"), "answering", STARTUP_CPU_SECONDS)
        if kind == "gunicorn":  # both workers up, so neither is still loading Django when the test begins
            served.wait(lambda: served.output().count("Worker ready") >= 2, "two workers ready", STARTUP_CPU_SECONDS)
        yield served
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _answering(url: str) -> bool:
    try:
        requests.get(url, timeout=2)
    except requests.RequestException:  # not listening yet, or its workers still loading
        return False
    return True


class SlowClients:
    """Connections that send their start at once, then one byte a second (`drip`) or nothing more.

    A thread does the dripping and reads whatever the server sends back; `closed` lists the connections
    the server has closed, in order, `received` what each got.
    """

    def __init__(self, port: int, plan: list[tuple[str, bytes, bool]]):
        self.received: dict[str, bytes] = {}
        self.closed: list[str] = []
        self.rounds = 0
        self._socks: dict[str, tuple[socket.socket, bool]] = {}
        for name, start, drip in plan:
            sock = socket.create_connection(("127.0.0.1", port))
            if start:
                sock.sendall(start)
            sock.setblocking(False)
            self._socks[name] = (sock, drip)
            self.received[name] = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with selectors.DefaultSelector() as selector:
            for name, (sock, _) in self._socks.items():
                selector.register(sock, selectors.EVENT_READ, name)
            while self.rounds < DRIPS and not self._stop.wait(1.0):
                for key, _ in selector.select(timeout=0):
                    self._read(selector, key.fileobj, key.data)
                for name, (sock, drip) in self._socks.items():
                    if drip and name not in self.closed:
                        with contextlib.suppress(OSError):
                            sock.send(b"a")
                self.rounds += 1
            while not self._stop.is_set() and selector.get_map():  # no more drips: still read, until stopped
                for key, _ in selector.select(timeout=0.2):
                    self._read(selector, key.fileobj, key.data)

    def _read(self, selector, sock: socket.socket, name: str) -> None:
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        self.received[name] += data
        if not data:
            selector.unregister(sock)
            self.closed.append(name)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for sock, _ in self._socks.values():
            sock.close()


def _plan(count: int, server: Server) -> list[tuple[str, bytes, bool]]:
    plan = [(f"head-{n}", HEAD_DRIP, True) for n in range(count)]
    plan += [(f"body-{n}", BODY_DRIP, True) for n in range(count // 2)]
    plan += [("stalled-body", BODY_STALL, False), ("silent", b"", False)]
    if server.kind == "gunicorn":  # runserver reads no chunked body: it answers at once, then closes
        plan.append(("chunked", CHUNKED_DRIP, True))
    return plan


def _normal_traffic(base: str) -> list[tuple[str, int, str]]:
    """What a normal client does: fresh connections, a kept-alive one, a small POST."""
    answers = []
    for n in range(6):
        answered = requests.get(f"{base}/v1/no-such-route-{n}", headers={"Connection": "close"}, timeout=300)
        answers.append(("fresh", answered.status_code, answered.json()["error"]))
    with requests.Session() as session:
        for _ in range(6):
            answered = session.get(f"{base}/healthz", timeout=300)
            answers.append(("kept-alive", answered.status_code, ""))
    answered = requests.post(f"{base}/v1/auth/login", json={"email": "nobody@example.com", "password": "x" * 12},
                             timeout=300)
    answers.append(("post", answered.status_code, answered.json()["error"]))
    return answers


def _parse(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value for name, _, value in (line.partition(": ") for line in lines)}
    return int(status_line.split()[1]), headers, body


def test_normal_requests_are_answered_while_slow_clients_drip(server, count=8):
    base = f"http://127.0.0.1:{server.port}"
    plan = _plan(count, server)
    slow = SlowClients(server.port, plan)
    try:
        server.wait(lambda: slow.rounds >= 2, "the slow clients connected and dripping")
        answers: list = []
        def traffic():
            try:
                answers.extend(_normal_traffic(base))
            except requests.RequestException as exc:  # the server reset or dropped it: a failure below
                answers.append(("failed", 0, repr(exc)))

        normal = threading.Thread(target=traffic, daemon=True)
        normal.start()
        # Fails if a slow connection is closed before every normal request was answered (the server was
        # held until its deadlines freed it), or if the server stops working with requests still waiting.
        wait_until(lambda: not normal.is_alive(), pids=server.pids, cpu_budget=TRAFFIC_CPU_SECONDS,
                   what=f"{server.kind}: normal requests answered while {len(plan)} slow clients are connected",
                   alive=lambda: not slow.closed, details=lambda: f"closed first: {slow.closed}\n{server.output()}")
        assert not slow.closed
        assert answers == [("fresh", 404, "not_found")] * 6 + [("kept-alive", 200, "")] * 6 + [
            ("post", 401, "invalid_credentials")]

        if server.kind != "gunicorn":
            return  # runserver: each slow client holds a thread of its own until it leaves
        # gunicorn's worker closes them all by its deadlines, before they have dripped DRIPS bytes.
        server.wait(lambda: len(slow.closed) == len(plan), "every slow connection closed by its deadline")
        assert slow.rounds < DRIPS
        assert slow.received["silent"] == b""  # nothing had begun: closed without an answer
        for name, raw in slow.received.items():
            if name != "silent":
                status, headers, body = _parse(raw)
                assert (status, headers["content-type"], json.loads(body)["error"]) == (
                    408, "application/json", "request_timeout"), name
                assert headers["connection"] == "close"
    finally:
        slow.close()


def test_a_large_upload_and_a_kept_alive_pipelined_connection_still_work(server):
    slow = SlowClients(server.port, _plan(4, server))
    try:
        # 20 MB through the multipart route: the application reads all of it and answers for the file.
        noise = os.urandom(20 * 1024 * 1024)
        answered = requests.post(f"http://127.0.0.1:{server.port}/v1/verify", timeout=300,
                                 files={"file": ("noise.bin", noise, "application/octet-stream")})
        assert answered.status_code == 400 and answered.json()["error"] in ("unsupported_media_type",
                                                                           "validation_error"), answered.text
        # Two requests in one write on one connection, then a third after both answers: all answered in order.
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.settimeout(300)
            ask = b"GET /v1/no-such-%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            sock.sendall(ask % 1 + ask % 2)
            reader = sock.makefile("rb")
            assert [_read_response(reader) for _ in range(2)] == [(404, "not_found")] * 2
            sock.sendall(ask % 3)
            assert _read_response(reader) == (404, "not_found")
    finally:
        slow.close()


def test_a_client_expecting_100_continue_is_told_to_send_its_body(server):
    if server.kind != "gunicorn":
        pytest.skip("runserver does not answer 100-continue (clients send their body after a pause)")
    body = json.dumps({"email": "nobody@example.com", "password": "x" * 12}).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(300)
        sock.sendall(b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
        reader = sock.makefile("rb")
        assert reader.readline() == b"HTTP/1.1 100 Continue\r\n" and reader.readline() == b"\r\n"
        sock.sendall(body)
        while (line := reader.readline()) == b"HTTP/1.1 100 Continue\r\n":  # gunicorn's own, when the app reads
            assert reader.readline() == b"\r\n"
        reader = _Prefixed(line, reader)
        assert _read_response(reader) == (401, "invalid_credentials")


class _Prefixed:
    def __init__(self, first: bytes, reader):
        self.first, self.reader = first, reader

    def readline(self) -> bytes:
        line, self.first = self.first, None
        return line if line is not None else self.reader.readline()

    def read(self, size: int) -> bytes:
        return self.reader.read(size)


def _read_response(reader) -> tuple[int, str]:
    status = int(reader.readline().split()[1])
    length = 0
    while (line := reader.readline()) != b"\r\n":
        name, _, value = line.decode("latin-1").partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return status, json.loads(reader.read(length))["error"]


# --- the worker's reading, without a server ---------------------------------------------------------------

def _arriving() -> Arriving:
    return Arriving(head_limit=16384, deadline=10.0)


def test_a_request_is_whole_once_its_head_and_declared_body_are_here():
    arriving = _arriving()
    head = b"POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n"
    for byte in head[:-1]:
        assert not arriving.feed(bytes([byte]), now=0.0)
    assert not arriving.feed(head[-1:], now=1.0)
    assert arriving.path == b"/v1/x" and arriving.want() == 5
    started = _arriving()
    started.feed(b"GET /v1/health HTTP/1.1\r\nX-Drip: aa", now=0.0)
    assert started.path == b"/v1/health"  # known before the head is whole, for its 408
    assert not arriving.feed(b"ab", now=2.0) and arriving.want() == 3
    assert arriving.feed(b"cde", now=3.0)
    assert bytes(arriving.data) == head + b"abcde"
    assert _arriving().feed(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", now=0.0)  # no body


def test_heads_gunicorn_refuses_or_reads_itself_go_to_it_at_once():
    for head in (b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                 b"GET / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                 b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
                 b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
                 b"POST / HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (52 * 1024 * 1024)):  # over every route's limit
        assert _arriving().feed(head, now=0.0), head
    over = Arriving(head_limit=100, deadline=10.0)
    assert not over.feed(b"GET /" + b"a" * 90, now=0.0)
    assert over.feed(b"a" * 20, now=0.0)  # past the head limit without an end: gunicorn answers it


def test_a_chunked_body_ends_at_its_last_chunk_and_trailers():
    body = b"3;ext=1\r\nabc\r\n10\r\n" + b"x" * 16 + b"\r\n0\r\nTrailer: 1\r\n\r\n"
    for step in (1, 2, 7, len(body)):
        scanner = ChunkScanner()
        for start in range(0, len(body), step):
            assert not scanner.done
            scanner.feed(body[start:start + step])
        assert scanner.done, step
    scanner = ChunkScanner()
    assert scanner.feed(b"0\r\n\r\nGET / HTTP/1.1") == 5 and scanner.done  # a pipelined request after it


def test_a_large_body_waits_in_a_file_and_deadlines_bound_head_and_body():
    arriving = _arriving()
    arriving.feed(b"POST / HTTP/1.1\r\nContent-Length: 3000000\r\n\r\n", now=0.0)
    assert arriving.in_time(now=5.0, last_byte=0.0)
    for _ in range(45):
        arriving.feed(b"z" * 65536, now=1.0)
    assert arriving.spool is not None and len(arriving.data) < 100  # the head only, in memory
    assert not arriving.in_time(now=1.0 + 11, last_byte=1.0)  # no byte for BODY_READ_TIMEOUT (10 s)
    assert not arriving.in_time(now=59.0 + 2, last_byte=60.0)  # past BODY_READ_DEADLINE after the head
    arriving.spool.close()
    head = _arriving()
    head.feed(b"GET / HT", now=0.0)
    assert head.in_time(now=9.0, last_byte=0.0) and not head.in_time(now=10.0, last_byte=9.9)


def test_the_timeout_answer_is_the_error_envelope_under_the_api():
    status, headers, body = _parse(timeout_response(b"/v1/verify"))
    assert (status, headers["content-type"], json.loads(body)["error"]) == (408, "application/json", "request_timeout")
    assert int(headers["content-length"]) == len(body)
    assert _parse(timeout_response(b"/"))[2] == b"Request Timeout"
