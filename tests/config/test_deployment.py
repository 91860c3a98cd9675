"""A server started the way Django projects are deployed serves every route: `migrate`, then serve.

No REDIS_URL and no other command (no `createcachetable`, no setup script): whatever the routes need
(rate counters, the JWT blocklist, the database cache table) must come from `manage.py migrate`.
The server is `runserver` in a subprocess, on its own SQLite file and with the project's own settings.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.log_scan import watch_file
from tests.proc_sockets import free_port
from tests.waiting import serving, wait_for_process

PROJECT = Path(__file__).resolve().parents[2]
STARTUP_CPU_SECONDS = 60
REQUEST_SECONDS = 30



def _deployment_env(folder: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if name not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}  # config.settings, as manage.py picks it
    return {**env, "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}", "DEBUG": "true"}


@pytest.fixture
def migrated_server(tmp_path, request):
    """The base URL of `manage.py runserver` on a database made by `manage.py migrate` alone."""
    env = _deployment_env(tmp_path)
    migrate = subprocess.run([sys.executable, "manage.py", "migrate"], cwd=PROJECT, env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert migrate.returncode == 0, migrate.stdout[-2000:] + migrate.stderr[-4000:]
    port = free_port()
    log_path = tmp_path / "server.log"
    watch_file(log_path)  # its lines join the session's secret scan
    log = log_path.open("w")
    server = subprocess.Popen([sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
                              cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT)

    def stop() -> None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        log.close()

    request.addfinalizer(stop)
    base = f"http://127.0.0.1:{port}/v1"
    _wait_until_up(server, f"{base}/billing/plans", log_path)
    return base, log_path


def _wait_until_up(server: subprocess.Popen, url: str, log_path: Path) -> None:
    # Bounded by the CPU runserver spends starting, not by the clock (a busy machine only makes it longer).
    wait_for_process(lambda: serving(url), server, what=f"{url} up", cpu_budget=STARTUP_CPU_SECONDS,
                     details=lambda: log_path.read_text()[-4000:])


def test_migrate_then_runserver_serves_auth_sessions_and_key_routes(migrated_server):
    base, log_path = migrated_server
    credentials = {"email": "owner@example.com", "password": "a-long-password"}

    def call(method: str, path: str, expected: int, credential: str | None = None, **kwargs) -> dict:
        headers = {"Authorization": f"Bearer {credential}"} if credential else {}
        response = requests.request(method, f"{base}{path}", headers=headers, timeout=REQUEST_SECONDS, **kwargs)
        assert response.status_code == expected, (
            f"{method} {path}: {response.status_code} {response.text[:500]}\n{log_path.read_text()[-4000:]}")
        return response.json()

    call("POST", "/auth/register", 201, json={"org_name": "Deployed", **credentials})
    token = call("POST", "/auth/login", 200, json=credentials)["token"]
    key = call("POST", "/api-keys", 201, credential=token, json={"name": "deploy"})["key"]
    assert call("GET", "/generators", 200, credential=key) == {"generators": [], "total": 0, "page": 1, "limit": None}
