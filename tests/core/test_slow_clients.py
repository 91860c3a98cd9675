"""The slow-client attack against a real gunicorn: stalled request bodies must not starve other requests.

Connections declare `Content-Length: 100000`, send 9 bytes and stall. With BODY_READ_TIMEOUT=2 each gets
408 `request_timeout` after about 2 s and its worker is free again. Without it a sync worker is stuck
until gunicorn's 30 s worker timeout kills it, and a gthread thread until the client leaves.
"""

import json
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.proc_sockets import free_port
from tests.production_env import production_env
from tests.waiting import stop_process, wait_for_process

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"
READ_TIMEOUT = 2
STALLED = (b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           b"Content-Length: 100000\r\n\r\n" + b'{"email":')  # 9 bytes of the 100000
NORMAL = b"GET /v1/no-such-route HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


@pytest.fixture(scope="module")
def server_env(tmp_path_factory) -> dict[str, str]:
    """Production settings on a throwaway SQLite database, migrated once for the module."""
    if not GUNICORN.exists():
        pytest.skip(f"gunicorn is not installed at {GUNICORN}")
    database = tmp_path_factory.mktemp("slow_clients") / "db.sqlite3"
    env = production_env("slow-clients", f"sqlite:///{database}",
                         BODY_READ_TIMEOUT=str(READ_TIMEOUT), BODY_READ_DEADLINE="30")
    done = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode:
        pytest.fail(f"manage.py migrate failed:\n{done.stdout}{done.stderr}")
    return env


@pytest.fixture
def serve(server_env, tmp_path):
    """Starts gunicorn with gunicorn.conf.py plus the given flags; every server is killed afterwards."""
    started: list[subprocess.Popen] = []

    def start(*flags: str, workers: int) -> int:
        port = free_port()
        log = tmp_path / f"gunicorn-{port}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(GUNICORN), "config.wsgi:application", "-c", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}",
                 "--workers", str(workers), "--timeout", "30", "--graceful-timeout", "2", "--log-level", "info",
                 "--no-control-socket", *flags],  # no socket shared with other servers in $HOME
                cwd=ROOT, env=server_env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        started.append(process)
        _wait_until_ready(process, log, workers)
        return port

    yield start
    for process in started:
        stop_process(process)



def _wait_until_ready(process: subprocess.Popen, log: Path, workers: int) -> None:
    # Bounded by the CPU gunicorn spends starting, not by the clock (a busy machine only makes it longer).
    wait_for_process(lambda: log.read_text(errors="replace").count("Worker ready") >= workers, process,
                     what="gunicorn workers ready", details=lambda: log.read_text(errors="replace"))


def _connect(port: int, request: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(request)
    sock.setblocking(False)
    return sock


def _read_until_closed(socks: dict[str, socket.socket], started: float, limit: float) -> dict[str, tuple]:
    """Each connection's (bytes received, seconds from `started` until the server closed it or None)."""
    received = {name: b"" for name in socks}
    closed_at: dict[str, float | None] = dict.fromkeys(socks)
    with selectors.DefaultSelector() as selector:
        for name, sock in socks.items():
            selector.register(sock, selectors.EVENT_READ, name)
        while selector.get_map() and time.monotonic() < started + limit:
            for key, _ in selector.select(timeout=0.1):
                try:
                    data = key.fileobj.recv(65536)
                except ConnectionResetError:
                    data = b""
                received[key.data] += data
                if not data:
                    closed_at[key.data] = time.monotonic() - started
                    selector.unregister(key.fileobj)
                    key.fileobj.close()  # ends gunicorn's lingering close at once
    for sock in socks.values():
        sock.close()
    return {name: (received[name], closed_at[name]) for name in socks}


def _parse(raw: bytes) -> tuple[int, dict[str, str], dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    return int(status_line.split()[1]), {k.lower(): v for k, v in headers.items()}, json.loads(body)


@pytest.mark.parametrize(("worker_flags", "workers", "stalled"), [
    # The attack from the issue: as many stalled bodies as sync workers.
    (["--worker-class", "sync", "--threads", "1"], 2, 2),
    # Production's worker class (gunicorn.conf.py): one thread, held by one stalled body.
    (["--worker-class", "gthread", "--threads", "1"], 1, 1),
], ids=["sync", "gthread"])
def test_stalled_bodies_time_out_and_other_requests_are_served(serve, worker_flags, workers, stalled):
    port = serve(*worker_flags, workers=workers)
    socks = {f"stalled-{n}": _connect(port, STALLED) for n in range(stalled)}
    started = time.monotonic()
    socks["normal"] = _connect(port, NORMAL)

    # 300 s: a guard against a hang, not a speed bound. What ended each request is read from its answer: the
    # app's 408 in the envelope (a worker killed by gunicorn's 30 s timeout would have closed with nothing).
    answers = _read_until_closed(socks, started, limit=300)

    raw, seconds = answers.pop("normal")
    assert seconds is not None, "the normal request got no answer"
    status, _, body = _parse(raw)
    assert (status, body["error"]) == (404, "not_found")
    for name, (raw, seconds) in answers.items():
        assert seconds is not None, f"{name} was never answered"
        assert seconds > READ_TIMEOUT - 0.5  # not before its read timed out (a lower bound: load only adds)
        status, headers, body = _parse(raw)
        assert (status, body["error"]) == (408, "request_timeout")
        assert headers["content-type"] == "application/json"
        if "sync" in worker_flags:
            assert headers["connection"] == "close"
