"""The deployed WSGI application: the API under /v1/ on its short chain, pages on the full one.

Requests go through `config.wsgi.application` itself (the object gunicorn and runserver serve); the
test client splits its chain the same way (tests/api_chain.py, tests/core/test_api_chain.py).
"""

import io
import json
from http.cookies import SimpleCookie
from wsgiref.util import setup_testing_defaults

import pytest
from django.conf import settings

from config.wsgi import application
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)


def call(path: str, *, method: str = "GET", headers: dict | None = None, body: bytes = b"",
         content_type: str = "") -> tuple[int, dict[str, list[str]], bytes]:
    environ = {"PATH_INFO": path, "REQUEST_METHOD": method, "wsgi.input": io.BytesIO(body),
               "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": content_type, "SERVER_NAME": "testserver",
               "HTTP_HOST": "testserver"}
    environ.update({f"HTTP_{name.upper().replace('-', '_')}": value for name, value in (headers or {}).items()})
    setup_testing_defaults(environ)
    captured = {}

    def start_response(status, response_headers, exc_info=None):
        captured["status"] = int(status.split()[0])
        captured["headers"] = {}
        for name, value in response_headers:
            captured["headers"].setdefault(name.lower(), []).append(value)

    chunks = application(environ, start_response)
    try:
        content = b"".join(chunks)
    finally:
        getattr(chunks, "close", lambda: None)()
    return captured["status"], captured["headers"], content


def test_the_api_chain_is_the_page_chain_without_the_browser_layers():
    browser = {"django.contrib.sessions.middleware.SessionMiddleware", "django.middleware.csrf.CsrfViewMiddleware",
               "django.contrib.auth.middleware.AuthenticationMiddleware",
               "django.contrib.messages.middleware.MessageMiddleware"}
    assert [name for name in settings.MIDDLEWARE if name not in browser] == settings.API_MIDDLEWARE
    assert "core.middleware.RateLimitHeadersMiddleware" in settings.API_MIDDLEWARE


def test_an_api_route_answers_without_session_or_cookies():
    org = factories.make_org(plan="starter")
    key = factories.make_api_key(org=org)
    status, headers, content = call("/v1/billing/usage", headers={"Authorization": f"Bearer {key}"})
    assert status == 200, content
    assert json.loads(content)["plan"] == "starter"
    assert "set-cookie" not in headers and "Cookie" not in headers.get("vary", [""])[0]
    # The layers the API keeps still run: security headers, frame options, rate-limit headers.
    assert headers["x-content-type-options"] == ["nosniff"]
    assert headers["x-frame-options"] == ["DENY"]
    assert "x-ratelimit-limit" in headers


def test_an_api_post_needs_no_csrf_token_and_errors_keep_the_envelope():
    status, _, content = call("/v1/auth/register", method="POST", body=b'{"email": "nope"}',
                              content_type="application/json")
    assert status == 400
    assert json.loads(content)["error"] == "validation_error"
    status, _, content = call("/v1/no-such-route")
    assert status == 404 and json.loads(content)["error"] == "not_found"


def test_pages_keep_sessions_and_csrf():
    status, headers, _ = call("/admin/login/")
    assert status == 200
    cookies = SimpleCookie()
    for value in headers.get("set-cookie", []):
        cookies.load(value)
    assert "csrftoken" in cookies
    # A form post without the token is refused by the page chain's CSRF layer.
    status, _, _ = call("/admin/login/", method="POST", body=b"username=a&password=b",
                        content_type="application/x-www-form-urlencoded")
    assert status == 403
