"""Request ids and the request log: X-Request-Id on every response, in every log line of the request,
in the envelope of 5xx responses; one access line per request, without secrets from the URL."""

import io
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from core.logs import JsonFormatter, RequestContextFilter, request_id_from
from tests import factories

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.core.urls_request_context")]

PROJECT = Path(__file__).resolve().parents[2]
GENERATED = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def json_log():
    """Every line logged during the test, as production writes it (JSON), parsed."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestContextFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    access = logging.getLogger("access")
    old_level = access.level
    access.setLevel(logging.DEBUG)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    root.removeHandler(handler)
    access.setLevel(old_level)


@pytest.fixture
def client():
    return Client(raise_request_exception=False)


def _lines_of(lines: list[dict], request_id: str) -> list[dict]:
    return [line for line in lines if line["request_id"] == request_id]


@pytest.mark.parametrize(("path", "status"), [
    ("/healthz", 200), ("/login", 200), ("/v1/billing/plans", 200), ("/v1/no-such-route", 404),
    ("/v1/probe/whoami", 401), ("/no-such-page", 404), ("/v1/probe/broken", 500), ("/v1/probe/broken-plain", 500),
    ("/probe/broken-page", 500),
])
def test_every_response_carries_a_new_request_id(client, path, status):
    first, second = client.get(path), client.get(path)
    assert first.status_code == status
    assert GENERATED.fullmatch(first["X-Request-Id"]) and GENERATED.fullmatch(second["X-Request-Id"])
    assert first["X-Request-Id"] != second["X-Request-Id"]


def test_a_sane_incoming_request_id_is_kept_in_the_header_and_the_log(client, json_log):
    response = client.get("/v1/no-such-route", HTTP_X_REQUEST_ID="lb-7f3a9c21.0001")
    assert response["X-Request-Id"] == "lb-7f3a9c21.0001"
    (access,) = [line for line in json_log() if line["logger"] == "access"]
    assert access["request_id"] == "lb-7f3a9c21.0001" and access["status"] == 404


@pytest.mark.parametrize("evil", ["abc\r\nSet-Cookie: session=1", "x" * 8_000,  # (over 8190 bytes: 431)
                                  'id"},{"level":"ERROR', "short",
                                  "has space 12345", "ünïcode-12345", "<script>alert(1)</script>"])
def test_an_evil_incoming_request_id_is_replaced_and_never_echoed(client, json_log, evil):
    response = client.get("/v1/probe/broken", HTTP_X_REQUEST_ID=evil)
    assert GENERATED.fullmatch(response["X-Request-Id"])
    assert response.json()["request_id"] == response["X-Request-Id"]
    lines = json_log()
    assert lines and all(line["request_id"] == response["X-Request-Id"] for line in lines)
    assert all(evil not in json.dumps(line, ensure_ascii=False) for line in lines)


def test_request_id_from_keeps_tokens_and_replaces_the_rest():
    assert request_id_from("0af7651916cd43dd8448eb211c80319c") == "0af7651916cd43dd8448eb211c80319c"
    assert request_id_from("lb-01.abc:42_Z") == "lb-01.abc:42_Z"
    assert request_id_from("a" * 128) == "a" * 128
    for bad in (None, "", "1234567", "a" * 129, "with\nnewline", "semi;colon-123", "Root=1-6789-abcdef012345"):
        assert GENERATED.fullmatch(request_id_from(bad))


def test_a_500_in_a_view_names_the_request_id_in_the_envelope_and_every_log_line(client, json_log):
    response = client.get("/v1/probe/broken")
    request_id = response["X-Request-Id"]
    assert response.status_code == 500
    assert response.json() == {"error": "internal_error", "message": "Internal server error.", "request_id": request_id}
    lines = _lines_of(json_log(), request_id)
    (error,) = [line for line in lines if line["logger"] == "core.errors"]
    assert error["level"] == "ERROR" and "RuntimeError: secret internal detail" in error["exception"]
    (access,) = [line for line in lines if line["logger"] == "access"]
    assert access["status"] == 500 and access["path"] == "/v1/probe/broken"


def test_a_500_outside_drf_names_the_request_id_in_the_envelope_and_the_log(client, json_log):
    response = client.get("/v1/probe/broken-plain")
    request_id = response["X-Request-Id"]
    assert response.status_code == 500
    assert response.json() == {"error": "internal_error", "message": "Internal server error.", "request_id": request_id}
    (error,) = [line for line in _lines_of(json_log(), request_id) if line["logger"] == "django.request"]
    assert error["level"] == "ERROR" and "failure outside DRF" in error["exception"]


def test_a_page_500_carries_the_request_id_in_its_header_and_log(client, json_log):
    response = client.get("/probe/broken-page")
    assert response.status_code == 500 and not response["Content-Type"].startswith("application/json")
    assert [line["logger"] for line in _lines_of(json_log(), response["X-Request-Id"])] == ["django.request", "access"]


def test_a_4xx_envelope_does_not_name_the_request_id(client):
    assert set(client.get("/v1/no-such-route").json()) == {"error", "message"}
    assert set(client.get("/v1/probe/whoami").json()) == {"error", "message"}


def test_the_access_line_names_method_path_status_duration_organization_and_address(json_log, org, key_client):
    response = key_client(org).get("/v1/probe/whoami", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 200
    (access,) = [line for line in json_log() if line["logger"] == "access"]
    assert access["request_id"] == response["X-Request-Id"]
    assert (access["method"], access["path"], access["status"]) == ("GET", "/v1/probe/whoami", 200)
    assert access["org_id"] == str(org.pk) and access["remote_addr"] == "203.0.113.9"
    assert isinstance(access["duration_ms"], float) and access["duration_ms"] >= 0
    assert access["level"] == "INFO" and access["timestamp"].endswith("Z")


def test_the_access_line_leaves_out_query_strings_and_tokens_in_the_path(client, json_log, org, owner):
    _invite, token = factories.make_invite(org=org, inviter=owner)
    client.get(f"/v1/team/invites/{token}/preview?reset_token=query-secret-123")
    client.get(f"/invite/{token}")
    lines = [line for line in json_log() if line["logger"] == "access"]
    assert [line["path"] for line in lines] == ["/v1/team/invites/[redacted]/preview", "/invite/[redacted]"]
    assert all(token not in json.dumps(line) and "query-secret" not in json.dumps(line) for line in json_log())


def test_probes_are_logged_at_debug_so_they_do_not_drown_the_log(client, json_log):
    client.get("/healthz")
    (access,) = [line for line in json_log() if line["logger"] == "access"]
    assert access["level"] == "DEBUG" and access["path"] == "/healthz"


def test_a_json_line_stays_one_line_whatever_the_message_holds():
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, 'two\nlines "quoted" \x00', None, None)
    try:
        raise ValueError("boom\nagain")
    except ValueError:
        record.exc_info = sys.exc_info()
    line = JsonFormatter().format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["message"] == 'two\nlines "quoted" \x00' and "ValueError: boom" in parsed["exception"]
    assert set(parsed) == {"timestamp", "level", "logger", "message", "request_id", "exception"}


def _log_one_line(debug: str) -> str:
    env = {name: value for name, value in os.environ.items() if name not in ("DJANGO_SETTINGS_MODULE", "LOG_FORMAT")}
    env.update({"DEBUG": debug, "SECRET_KEY": "x" * 50, "KEY_ENCRYPTION_KEY": "k" * 44, "TOKEN_SIGNING_KEY": "t" * 44,
                "LOG_SIGNING_KEY": "l" * 44, "DJANGO_SETTINGS_MODULE": "config.settings"})
    code = "import django, logging; django.setup(); logging.getLogger('probe').warning('hello %s', 'world')"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=PROJECT, capture_output=True, text=True,
                         timeout=600, check=True)
    return out.stdout


def test_production_logs_are_json_on_stdout_and_development_logs_are_text():
    (line,) = _log_one_line("false").splitlines()
    assert json.loads(line) | {"timestamp": None} == {"timestamp": None, "level": "WARNING", "logger": "probe",
                                                      "message": "hello world", "request_id": None}
    text = _log_one_line("true")
    assert text.rstrip().endswith("WARNING probe hello world") and not text.startswith("{")


def test_a_408_from_the_body_timeout_keeps_the_request_id_header(monkeypatch):
    from core import body_timeout
    from core.body_timeout import BodyReadTimeout, BodyTimeoutMiddleware
    from tests.core.test_body_timeout import LENGTH, ClockedStream, call, environ

    def app(env, start_response):  # the Django chain: reads the body, fails, answers with the request id
        try:
            while env["wsgi.input"].read(LENGTH):
                pass
        except BodyReadTimeout:
            start_response("400 Bad Request", [("Content-Type", "text/html"), ("X-Request-Id", "lb-00000001")])
            return [b"<h1>Bad Request</h1>"]

    clock = [0.0]
    monkeypatch.setattr(body_timeout, "monotonic", lambda: clock[0])
    status, headers, _body = call(BodyTimeoutMiddleware(app, read_timeout=1, deadline=1.5),
                                  environ("/v1/records", ClockedStream(clock, b"x" * LENGTH)))
    assert status == "408 Request Timeout" and headers["X-Request-Id"] == "lb-00000001"


def _setting_in_a_fresh_process(name: str, debug: str) -> str:
    env = {key: value for key, value in os.environ.items() if key not in ("DJANGO_SETTINGS_MODULE", name)}
    env.update({"DEBUG": debug, "SECRET_KEY": "x" * 50, "KEY_ENCRYPTION_KEY": "k" * 44, "TOKEN_SIGNING_KEY": "t" * 44,
                "LOG_SIGNING_KEY": "l" * 44, "DJANGO_SETTINGS_MODULE": "config.settings"})
    code = f"import django; django.setup(); from django.conf import settings; print(settings.{name})"
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=PROJECT, capture_output=True, text=True,
                          timeout=600, check=True).stdout.strip()


def test_emails_go_over_smtp_outside_development_never_to_the_log_stream():
    # The console backend prints emails, single-use tokens included, to stdout: the log stream in production.
    assert _setting_in_a_fresh_process("EMAIL_BACKEND", "false") == "django.core.mail.backends.smtp.EmailBackend"
    assert _setting_in_a_fresh_process("EMAIL_BACKEND", "true") == "django.core.mail.backends.console.EmailBackend"
