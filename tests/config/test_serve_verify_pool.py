"""deploy/serve.sh with VERIFY_BIND starts a second gunicorn (VERIFY_WORKERS workers) for deploy/nginx.conf's
verification upstream; a stop of the process group stops both. Real gunicorn, SQLite (no migrations: only
/healthz is asked)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import requests

from tests.proc_sockets import free_port
from tests.waiting import process_tree, wait_until

PROJECT = Path(__file__).resolve().parents[2]
SECRETS = {"SECRET_KEY": "pool-test-secret-key-" + "s" * 40, "KEY_ENCRYPTION_KEY": "pool-test-kek-" + "k" * 30,
           "TOKEN_SIGNING_KEY": "pool-test-tsk-" + "t" * 30, "LOG_SIGNING_KEY": "pool-test-lsk-" + "l" * 30}


def _healthy(url: str) -> bool:
    try:
        return requests.get(url, timeout=10).json() == {"status": "ok"}
    except requests.RequestException:  # not bound yet, or its workers still booting on a busy machine
        return False


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])


def _environment(pid: int) -> dict[str, str]:
    entries = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
    return dict(entry.split("=", 1) for entry in entries if "=" in entry)


def _start(tmp_path: Path, extra: dict) -> subprocess.Popen:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHON": sys.executable, **SECRETS,
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "MIGRATE_ON_START": "false",
           "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "WARNING", "WEB_CONCURRENCY": "1", **extra}
    return subprocess.Popen(["sh", str(PROJECT / "deploy" / "serve.sh")], env=env, cwd=tmp_path,
                            stdin=subprocess.DEVNULL, stdout=(tmp_path / "out.log").open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def test_verify_bind_starts_a_second_pool_that_stops_with_the_first(tmp_path):
    app_port, verify_port = free_port(), free_port()
    process = _start(tmp_path, {"GUNICORN_BIND": f"127.0.0.1:{app_port}", "VERIFY_BIND": f"127.0.0.1:{verify_port}",
                                "VERIFY_WORKERS": "2"})
    try:
        app, verify = (f"http://127.0.0.1:{port}/healthz" for port in (app_port, verify_port))
        wait_until(lambda: _healthy(app), pids=lambda: process_tree(process.pid), cpu_budget=120,
                   what="the app's pool answering", alive=lambda: process.poll() is None)
        # serve.sh started the verification pool's master before exec'ing the app's: it is the app's child.
        [verify_master] = [pid for pid in process_tree(process.pid)[1:] if _parent(pid) == process.pid
                           and "gunicorn" in Path(f"/proc/{pid}/cmdline").read_bytes().decode()
                           and _environment(pid).get("GUNICORN_BIND") == f"127.0.0.1:{verify_port}"]
        wait_until(lambda: _healthy(verify), pids=lambda: process_tree(verify_master), cpu_budget=120,
                   what="the verification pool answering", alive=lambda: Path(f"/proc/{verify_master}").exists())
        # The app's master with its worker, and the verification pool's master with its two.
        wait_until(lambda: len(process_tree(process.pid)) == 5, pids=lambda: process_tree(process.pid),
                   cpu_budget=60, what="1 + 2 workers")
    finally:
        tree = process_tree(process.pid)
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
    wait_until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in tree), pids=lambda: tree, cpu_budget=60,
               what="both pools stopped")


def test_without_verify_bind_there_is_one_pool(tmp_path):
    app_port = free_port()
    process = _start(tmp_path, {"GUNICORN_BIND": f"127.0.0.1:{app_port}"})
    try:
        wait_until(lambda: _healthy(f"http://127.0.0.1:{app_port}/healthz"), pids=lambda: process_tree(process.pid),
                   cpu_budget=120, what="the app answering", alive=lambda: process.poll() is None)
        assert len(process_tree(process.pid)) == 2
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
