"""Production's gthread worker takes its share of keep-alive connections (core/gunicorn_worker.py).

A real gunicorn serves a tiny WSGI app with two workers; bursts of kept-alive connections must
spread evenly over them, and a killed worker must not leave its siblings waiting for it.
"""

import ctypes
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from core.gunicorn_worker import _Slot, claim_slot, fewest_elsewhere, release_slot
from tests.proc_sockets import child_pids, connections_per_process, free_port
from tests.waiting import process_tree, wait_until

PROJECT = Path(__file__).resolve().parents[2]
CONNECTIONS = 32
WORKERS = 2


# --- the shared table, without a server ---------------------------------------------------------

def _table(size: int = 4):
    return multiprocessing.RawArray(_Slot, size), multiprocessing.RawValue(ctypes.c_int, 0)


def test_a_worker_compares_itself_with_its_live_siblings_only():
    table, used = _table()
    mine = claim_slot(table, used, os.getpid())
    assert fewest_elsewhere(table, used.value, mine) is None  # alone
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        theirs = claim_slot(table, used, sibling.pid)
        table[theirs].connections = 3
        assert fewest_elsewhere(table, used.value, mine) == 3
    finally:
        sibling.kill()
        sibling.wait()
    # A killed worker never released its slot: its pid no longer counts, and its slot is free again.
    assert fewest_elsewhere(table, used.value, mine) is None
    assert claim_slot(table, used, 4242424) == theirs


def test_a_released_slot_is_free_and_only_its_owner_releases_it():
    table, used = _table()
    slot = claim_slot(table, used, os.getpid())
    release_slot(table, slot, pid=1)  # someone else's pid: no effect
    assert table[slot].pid == os.getpid()
    release_slot(table, slot, os.getpid())
    assert table[slot].pid == 0


def test_no_free_slot_means_no_balancing_not_an_error():
    table, used = _table(size=1)
    assert claim_slot(table, used, os.getpid()) == 0
    assert claim_slot(table, used, os.getppid()) is None


# --- a real server ------------------------------------------------------------------------------

APP = '''
import time

def application(environ, start_response):
    time.sleep(0.002)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
'''



@pytest.fixture
def server(tmp_path):
    (tmp_path / "hello_app.py").write_text(APP)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{PROJECT}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "hello_app:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(WORKERS), "--worker-class", "core.gunicorn_worker.BalancedThreadWorker",
         "--threads", "1", "--keep-alive", "30", "--log-level", "warning"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for_workers(process, port)
        yield process, port
    finally:
        process.terminate()
        process.wait(timeout=30)


def _wait_for_workers(process: subprocess.Popen, port: int, gone: int | None = None) -> None:
    """Until `WORKERS` workers (none of them `gone`) idle in their event loops and the server answers: bounded
    by the CPU gunicorn spends starting them, not by the clock (a busy machine only makes it longer)."""

    def ready() -> bool:
        workers = child_pids(process.pid)
        return (len(workers) == WORKERS and gone not in workers and _answers(port)
                and all(_in_event_loop(pid) for pid in workers))

    wait_until(ready, pids=lambda: process_tree(process.pid), cpu_budget=60, what="gunicorn's workers",
               alive=lambda: process.poll() is None,
               details=lambda: process.stderr.read().decode()[-2000:] if process.poll() is not None else "")


def _in_event_loop(pid: int) -> bool:
    """Whether the worker's main thread waits in epoll (its event loop), so it accepts its share."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False
    return wchan in ("do_epoll_wait", "0")  # "0": a kernel that does not say; then answering has to do


def _held(pids: list[int], port: int) -> int:
    """TCP connections on local `port`, in any state, that the processes still hold a descriptor of."""
    return sum(connections_per_process(pids, port, any_state=True))


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            return sock.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def _open_kept_alive(port: int, count: int) -> list[socket.socket]:
    """Open `count` connections at once (as wrk or a proxy's pool does), then one request on each."""
    # The timeout is a guard against a hang, not a speed bound.
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=120) for _ in range(count)]
    for sock in sockets:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
    for sock in sockets:
        response = b""
        while not response.endswith(b"ok"):
            chunk = sock.recv(4096)
            assert chunk, "the server closed a kept-alive connection"
            response += chunk
        assert response.startswith(b"HTTP/1.1 200")
    return sockets


def test_bursts_of_kept_alive_connections_spread_evenly(server):
    process, port = server
    # Stock gthread put 31 or all 32 on one worker in about one start in three; three bursts in a row
    # would all have to come out even by luck.
    for _ in range(3):
        sockets = _open_kept_alive(port, CONNECTIONS)
        try:
            counts = connections_per_process(child_pids(process.pid), port)
            assert sum(counts) == CONNECTIONS
            assert max(counts) - min(counts) <= 4, counts
        finally:
            for sock in sockets:
                sock.close()
        # The workers see the closes: each holds its share of the next burst only once its count is down.
        wait_until(lambda: _held(child_pids(process.pid), port) == 0, pids=lambda: process_tree(process.pid),
                   cpu_budget=30, what="the workers closing their connections")


def test_a_killed_worker_leaves_no_one_waiting_for_it(server):
    process, port = server
    victim = child_pids(process.pid)[0]
    os.kill(victim, signal.SIGKILL)
    _wait_for_workers(process, port, gone=victim)
    # The burst is served, whatever a busy machine does to its duration: the dead worker's slot does not hold
    # the new one back (_open_kept_alive reads every answer).
    sockets = _open_kept_alive(port, CONNECTIONS)
    try:
        counts = connections_per_process(child_pids(process.pid), port)
        assert sum(counts) == CONNECTIONS and max(counts) - min(counts) <= 4, counts
    finally:
        for sock in sockets:
            sock.close()
