"""A request head over the limits is refused in the error envelope, whichever server reads it.

414 `uri_too_long` for a request line over 8190 bytes, 431 `header_too_large` for a header field over 8190
bytes or more than 100 fields, 400 `validation_error` for a head that is not HTTP: from the app
(core/middleware.py), from a real gunicorn with gunicorn.conf.py, from the development server
(`runserver`) and from a real nginx with deploy/nginx.compose.conf (core/errors.py makes the servers'
own refusals envelopes). The attack run's probe was `byBinding?value=` and 100,000 characters.
"""

import contextlib
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.config.test_nginx import proxy  # noqa: F401 - the fixture: a real nginx with the compose site
from tests.proc_sockets import free_port
from tests.production_env import production_env
from tests.waiting import process_tree, stop_process, wait_until

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"
START_CPU_SECONDS = 60  # a server's start-up (Django's setup, the migrations' check) takes a few
PROBE = "/v1/matches/byBinding?alg=com.example.watermark&value="
LONG_LINE = b"GET " + PROBE.encode() + b"a" * 100_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
# Over 8190 bytes, far under every server's own limit but the app's (the development server reads 64 KB).
LINE_OVER_APP_LIMIT = (b"GET " + PROBE.encode() + b"a" * 8200 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       b"Connection: close\r\n\r\n")
BIG_HEADER = (b"GET /v1/billing/plans HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 9000
              + b"\r\nConnection: close\r\n\r\n")
MANY_HEADERS = (b"GET /v1/billing/plans HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + b"".join(b"X-Field-%d: x\r\n" % number for number in range(120)) + b"Connection: close\r\n\r\n")
NOT_HTTP = b"GARBAGE\r\n\r\n"


def _exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # refused before all was read
            sock.sendall(raw)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), {name.lower(): value for name, value in headers.items()}, body


def _assert_envelope(answer, status: int, code: str) -> None:
    got_status, headers, body = answer
    assert (got_status, headers.get("content-type", "").split(";")[0]) == (status, "application/json"), answer
    payload = json.loads(body)
    assert payload["error"] == code and payload["message"], payload


# --- the app, through Django's test client -------------------------------------------------------------

@pytest.mark.django_db
def test_the_app_refuses_a_long_request_target_with_414(client):
    response = client.get(PROBE + "a" * 100_000)
    assert response.status_code == 414
    assert response.json()["error"] == "uri_too_long"


@pytest.mark.django_db
def test_the_app_refuses_a_long_header_with_431(client):
    response = client.get("/v1/billing/plans", HTTP_X_PADDING="a" * 9000)
    assert response.status_code == 431
    assert response.json()["error"] == "header_too_large"
    assert client.get("/v1/billing/plans", HTTP_X_PADDING="a" * 8000).status_code == 200


@pytest.mark.django_db
def test_the_app_refuses_more_than_100_header_fields_with_431(client):
    extra = {f"HTTP_X_FIELD_{number}": "x" for number in range(101)}
    assert client.get("/v1/billing/plans", **extra).json()["error"] == "header_too_large"


@pytest.mark.django_db
def test_a_request_line_within_the_limit_reaches_the_view(client):
    response = client.get(PROBE + "a" * 7000)
    assert response.status_code != 414


# --- real servers ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server_env(tmp_path_factory) -> dict[str, str]:
    database = tmp_path_factory.mktemp("head_limits") / "db.sqlite3"
    env = production_env("head-limits", f"sqlite:///{database}")
    done = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return env


def _answers(port: int) -> bool:
    try:
        requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    except requests.RequestException:  # not listening yet, or too busy starting to answer
        return False
    return True


def _start(command: list[str], env: dict[str, str], port: int, log: Path):
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        wait_until(lambda: _answers(port), pids=lambda: process_tree(process.pid),
                   cpu_budget=START_CPU_SECONDS, what="the server answers", alive=lambda: process.poll() is None,
                   details=lambda: log.read_text(errors="replace"))
    except BaseException:
        stop_process(process)
        raise
    return process


@pytest.fixture(scope="module")
def gunicorn_port(server_env, tmp_path_factory):
    if not GUNICORN.exists():
        pytest.skip(f"gunicorn is not installed at {GUNICORN}")
    port = free_port()
    process = _start([str(GUNICORN), "config.wsgi:application", "-c", "gunicorn.conf.py",
                      "--bind", f"127.0.0.1:{port}", "--workers", "1", "--no-control-socket"],
                     server_env, port, tmp_path_factory.mktemp("gunicorn") / "gunicorn.log")
    yield port
    stop_process(process)


@pytest.fixture(scope="module")
def runserver_port(server_env, tmp_path_factory):
    port = free_port()
    env = {**server_env, "DEBUG": "true"}
    process = _start([sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
                     env, port, tmp_path_factory.mktemp("runserver") / "runserver.log")
    yield port
    stop_process(process)


@pytest.fixture(params=["gunicorn", "runserver"])
def app_server(request):
    return request.getfixturevalue(f"{request.param}_port")


@pytest.mark.parametrize(("raw", "status", "code"), [
    (LONG_LINE, 414, "uri_too_long"),
    (LINE_OVER_APP_LIMIT, 414, "uri_too_long"),
    (BIG_HEADER, 431, "header_too_large"),
    (MANY_HEADERS, 431, "header_too_large"),
], ids=["100k-line", "8k-line", "9k-header", "120-headers"])
def test_a_server_refuses_a_head_over_its_limits_in_the_envelope(app_server, raw, status, code):
    _assert_envelope(_exchange(app_server, raw), status, code)


def test_a_server_refuses_a_head_that_is_not_http_in_the_envelope(app_server):
    with socket.create_connection(("127.0.0.1", app_server), timeout=30) as sock:
        sock.sendall(NOT_HTTP)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    if answer.startswith(b"HTTP/"):
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.split()[1] == b"400"
    else:  # the development server answers a line that names no HTTP version as HTTP/0.9: the body alone
        body = answer
    assert json.loads(body)["error"] == "validation_error"


def test_gunicorn_passes_a_line_of_8000_bytes_to_the_app(gunicorn_port):
    raw = b"GET " + PROBE.encode() + b"a" * 7900 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    status, headers, _ = _exchange(gunicorn_port, raw)
    assert status != 414 and headers["content-type"].startswith("application/json")
    assert "x-request-id" in headers  # the app answered, not gunicorn


@pytest.mark.parametrize(("raw", "status", "code"), [
    (LONG_LINE, 414, "uri_too_long"),
    (BIG_HEADER, 431, "header_too_large"),
    (NOT_HTTP, 400, "validation_error"),
], ids=["100k-line", "9k-header", "not-http"])
def test_nginx_refuses_a_head_over_its_limits_in_the_envelope(proxy, raw, status, code):  # noqa: F811
    _assert_envelope(_exchange(proxy, raw), status, code)


def test_nginx_error_locations_are_not_reachable_from_outside(proxy):  # noqa: F811
    status, _, _ = _exchange(proxy, b"GET /.errors/uri_too_long HTTP/1.1\r\nHost: localhost\r\n"
                                       b"Connection: close\r\n\r\n")
    assert status != 414
