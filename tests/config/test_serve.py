"""The production run: deploy/docker-entrypoint.sh `serve` (what `make serve` and the image run) starts
gunicorn with gunicorn.conf.py on PostgreSQL and Redis, DEBUG off, and everything it writes is JSON.

Real processes: a database of its own on the local PostgreSQL, a Redis server of its own (stopped
during the test), gunicorn with two workers; skipped where PostgreSQL is not at 127.0.0.1:5432.
"""

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import requests

from tests.log_scan import register_secret, watch_file
from tests.proc_sockets import free_port
from tests.waiting import port_open, serving, wait_for_process

PROJECT = Path(__file__).resolve().parents[2]
ENTRYPOINT = PROJECT / "deploy" / "docker-entrypoint.sh"
POSTGRES = "postgres://postgres@127.0.0.1:5432"
SECRETS = {"SECRET_KEY": "serve-test-secret-key-" + "s" * 40, "KEY_ENCRYPTION_KEY": "serve-test-kek-" + "k" * 30,
           "TOKEN_SIGNING_KEY": "serve-test-tsk-" + "t" * 30, "LOG_SIGNING_KEY": "serve-test-lsk-" + "l" * 30}
START_CPU_SECONDS = 180  # CPU of the served process tree: migrations on PostgreSQL, then the workers booting



@pytest.fixture
def database_url():
    """A new, empty PostgreSQL database, dropped afterwards."""
    psycopg = pytest.importorskip("psycopg")
    name = f"serve_test_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(f"{POSTGRES}/postgres", autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL at 127.0.0.1:5432")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        yield f"{POSTGRES}/{name}"
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def redis_server(tmp_path):
    """(URL, process) of a Redis server of this test's own, which the test may stop."""
    port = free_port()
    process = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", str(tmp_path)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_process(lambda: port_open(port), process, what="redis-server up", cpu_budget=30)
    yield f"redis://127.0.0.1:{port}/0", process
    process.kill()
    process.wait(timeout=10)


class Served:
    def __init__(self, process: subprocess.Popen, base: str, stdout: Path):
        self.process, self.base, self.stdout = process, base, stdout

    def lines(self) -> list[str]:
        return self.stdout.read_text().splitlines()

    def json_lines(self) -> list[dict]:
        """Every line from gunicorn's start on (the migrations before it print plain text)."""
        lines = self.lines()
        start = next(i for i, line in enumerate(lines) if "Starting gunicorn" in line)
        return [json.loads(line) for line in lines[start:]]


@pytest.fixture
def serve(tmp_path, request):
    """serve(env) -> Served: the entrypoint's `serve` running with the production environment plus `env`."""
    started = []

    def start(extra: dict) -> Served:
        port = free_port()
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHON": sys.executable, **SECRETS,
               "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "2", "ALLOWED_HOSTS": "127.0.0.1",
               "PUBLIC_BASE_URL": "https://provenance.example", "EMAIL_FILE_PATH": str(tmp_path / "emails"),
               "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend", **extra}
        stdout, stderr = tmp_path / f"serve-{port}.out", tmp_path / f"serve-{port}.err"
        watch_file(stdout)
        watch_file(stderr)
        process = subprocess.Popen([str(ENTRYPOINT), "serve"], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                                   stdout=stdout.open("w"), stderr=stderr.open("w"))
        started.append(process)
        served = Served(process, f"http://127.0.0.1:{port}", stdout)
        _wait_for(served, stderr)
        return served

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def _wait_for(served: Served, stderr: Path) -> None:
    # Bounded by the CPU the server spends starting (migrations included), not by the clock.
    wait_for_process(lambda: serving(f"{served.base}/healthz"), served.process, what="serving",
                     cpu_budget=START_CPU_SECONDS,
                     details=lambda: f"{stderr.read_text()[-3000:]}\n{served.stdout.read_text()[-3000:]}")


def _stop(served: Served) -> int:
    served.process.send_signal(signal.SIGTERM)  # the entrypoint exec'd gunicorn: this is its master
    return served.process.wait(timeout=45)


def test_serve_migrates_then_serves_json_logs_with_request_ids_and_stops_gracefully(serve, database_url,
                                                                                   redis_server):
    redis_url, redis_process = redis_server
    served = serve({"DATABASE_URL": database_url, "REDIS_URL": redis_url})

    ready = requests.get(f"{served.base}/readyz", timeout=10)
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"] == {"database": {"status": "ok"}, "migrations": {"status": "ok"},
                                      "redis": {"status": "ok"}, "signer": {
                                          "status": "skipped",
                                          "reason": "SIGNER_SOCKET is not set: keys are used in this process"}}

    password = "Serve-Test-Password-" + uuid.uuid4().hex[:8]
    register_secret(password)
    registered = requests.post(f"{served.base}/v1/auth/register", timeout=30,
                               json={"email": "owner@example.com", "password": password, "org_name": "O"})
    assert registered.status_code == 201, registered.text
    missing = requests.get(f"{served.base}/v1/no-such-route", headers={"X-Request-Id": "client-req-0001"}, timeout=10)
    assert missing.status_code == 404 and missing.headers["X-Request-Id"] == "client-req-0001"

    redis_process.kill()
    redis_process.wait(timeout=10)
    down = requests.get(f"{served.base}/readyz", timeout=10)
    assert down.status_code == 503 and down.json()["details"]["redis"]["status"] == "error"
    assert requests.get(f"{served.base}/healthz", timeout=10).json() == {"status": "ok"}

    assert _stop(served) == 0
    lines = served.json_lines()
    assert all({"timestamp", "level", "logger", "message", "request_id"} <= set(line) for line in lines)
    access = [line for line in lines if line["logger"] == "access"]
    assert {(line["method"], line["path"], line["status"]) for line in access} >= {
        ("POST", "/v1/auth/register", 201), ("GET", "/v1/no-such-route", 404)}
    assert [line["request_id"] for line in access if line["status"] == 404] == ["client-req-0001"]
    (redis_down,) = [line for line in lines if line["logger"] == "core.health"]
    assert redis_down["level"] == "WARNING" and redis_down["request_id"] == down.headers["X-Request-Id"]
    assert sum("Worker ready" in line["message"] for line in lines) == 2
    assert lines[-1]["message"] == "Shutting down: Master"
    assert password not in served.stdout.read_text()


def test_serve_without_migrating_is_alive_but_not_ready(serve, database_url):
    served = serve({"DATABASE_URL": database_url, "MIGRATE_ON_START": "false"})
    assert requests.get(f"{served.base}/healthz", timeout=10).status_code == 200
    response = requests.get(f"{served.base}/readyz", timeout=30)
    assert response.status_code == 503
    details = response.json()["details"]
    assert details["migrations"]["status"] == "error" and details["migrations"]["unapplied"] > 40
    assert details["database"] == {"status": "ok"} and details["redis"]["status"] == "skipped"
    assert _stop(served) == 0
    assert "Operations to perform" not in served.stdout.read_text()


def test_the_entrypoint_runs_any_other_command_as_given_without_migrating(tmp_path):
    result = subprocess.run([str(ENTRYPOINT), "sh", "-c", "echo ran: $0", "given"], cwd=tmp_path,
                            env={"PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and result.stdout == "ran: given\n"


def test_the_entrypoint_refuses_an_unknown_migrate_switch(tmp_path):
    result = subprocess.run([str(ENTRYPOINT), "serve"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                            env={"PATH": os.environ["PATH"], "MIGRATE_ON_START": "maybe"})
    assert result.returncode == 2 and "MIGRATE_ON_START must be true or false" in result.stderr
