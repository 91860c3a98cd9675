"""Hostile request bodies and methods: every one answers a 4xx in the error envelope, never a 500 or HTML."""

import json
import re
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.middleware.csrf import CsrfViewMiddleware
from django.test import RequestFactory
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from accounts.services import auth as auth_services
from tests import factories
from tests.media import photo_bytes
from tests.waiting import CpuSpent

pytestmark = pytest.mark.django_db

DEEP = b"[" * 10_000 + b"]" * 10_000
DEEP_OBJECT = b'{"a": ' * 10_000 + b"1" + b"}" * 10_000


@pytest.fixture(autouse=True)
def _no_ip_limits(monkeypatch, settings):
    monkeypatch.setattr(auth_services, "ENUMERATION_TIME_FLOOR", 0)
    settings.AUTH_RATE_PER_MINUTE = 10**6
    settings.VERIFY_RATE_PER_MINUTE = 10**6


@pytest.fixture
def enterprise_owner():
    org = factories.make_org(plan="enterprise")
    return factories.make_user(org=org)


@pytest.fixture
def session_of(enterprise_owner):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.session_token(enterprise_owner)}")
    return client


@pytest.fixture
def key_of(enterprise_owner):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_api_key(org=enterprise_owner.org)}")
    return client


def _assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = json.loads(response.content)
    assert body["error"] == code
    return body


def _v1_routes() -> list[tuple[str, object]]:
    """(path with sample arguments, view callback) of every /v1 route but the unknown-path catch-all."""

    def walk(patterns, prefix: str):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                yield from walk(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern) and not str(entry.pattern).startswith("^"):
                yield prefix + str(entry.pattern), entry.callback

    sample = "00000000-0000-4000-8000-000000000001"  # fixed: xdist workers must collect the same ids
    routes = []
    for route, callback in walk(get_resolver().url_patterns, "/"):
        if route.startswith("/v1/"):
            for converter in ("<uuid:pk>", "<uuid:generator_id>", "<uuid:record_id>", "<uuid:user_id>",
                              "<uuid:key_id>", "<uuid:invite_id>", "<uuid:delivery_id>", "<uuid:job_id>"):
                route = route.replace(converter, sample)
            route = route.replace("<str:token>", "sample-token").replace("<int:position>", "0")
            assert "<" not in route, route
            routes.append((route, callback))
    return routes


V1_ROUTES = _v1_routes()


def _json_post_routes() -> list[tuple[str, str]]:
    """(method, path) of every /v1 route that takes a JSON body."""
    from core.parsers import LimitedJSONParser

    found = []
    for path, callback in V1_ROUTES:
        view = callback.cls
        if LimitedJSONParser not in [*getattr(view, "parser_classes", [])]:
            continue
        actions = getattr(callback, "actions", None) or {m: m for m in ("post", "put", "patch") if hasattr(view, m)}
        found += [(method, path) for method in actions if method in ("post", "put", "patch")]
    return found


JSON_ROUTES = _json_post_routes()
# Routes whose handler reads its body whatever the state: the parse error must be what answers.
BODY_READING = ["/v1/auth/register", "/v1/auth/login", "/v1/auth/verify-email", "/v1/auth/forgot-password",
                "/v1/auth/2fa/enable", "/v1/api-keys", "/v1/generators", "/v1/records", "/v1/records/batch",
                "/v1/verify/batch", "/v1/team/invites", "/v1/team/invites/sample-token/accept"]


def test_the_json_route_list_covers_the_body_reading_routes():
    assert set(BODY_READING) <= {path for _, path in JSON_ROUTES}


# --- 1. nesting -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", BODY_READING)
@pytest.mark.parametrize("raw", [DEEP, DEEP_OBJECT], ids=["array", "object"])
def test_json_nested_ten_thousand_deep_is_a_quick_400(session_of, path, raw):
    with CpuSpent() as spent:  # the test client serves it in this process
        response = session_of.post(path, data=raw, content_type="application/json")
    assert spent.seconds < 1.0, spent.seconds
    _assert_error(response, 400, "validation_error")


@pytest.mark.parametrize(("method", "path"), JSON_ROUTES)
def test_no_json_route_fails_on_deep_nesting(session_of, method, path):
    response = getattr(session_of, method)(path, data=DEEP, content_type="application/json")
    assert response.status_code < 500
    if response.status_code >= 400:
        assert response.json()["error"]


def test_nesting_deeper_than_any_api_body_is_refused_even_when_python_could_parse_it(api_client):
    raw = b'{"org_name": ' + b"[" * 200 + b"]" * 200 + b"}"
    _assert_error(api_client.post("/v1/auth/register", data=raw, content_type="application/json"), 400,
                  "validation_error")


# --- 2. charsets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("charset", ["rot13", "rot_13", "zlib", "base64", "hex", "bz2", "uu", "quopri",
                                     "no-such-codec", ""])
def test_a_charset_that_is_not_a_text_encoding_is_a_400(api_client, charset):
    response = api_client.post("/v1/auth/login", data=b'{"email": "a@example.com", "password": "x"}',
                               content_type=f"application/json; charset={charset}")
    _assert_error(response, 400, "validation_error")


@pytest.mark.parametrize("charset", ["utf-8", "UTF-8", "utf8", '"utf-8"', "us-ascii", "iso-8859-1"])
def test_text_charsets_are_still_accepted(api_client, charset):
    response = api_client.post("/v1/auth/login", data=b'{"email": "nobody@example.com", "password": "x"}',
                               content_type=f"application/json; charset={charset}")
    _assert_error(response, 401, "invalid_credentials")


def test_a_utf16_body_declared_as_such_is_decoded(api_client):
    raw = '{"email": "nobody@example.com", "password": "x"}'.encode("utf-16")
    response = api_client.post("/v1/auth/login", data=raw, content_type="application/json; charset=utf-16")
    _assert_error(response, 401, "invalid_credentials")


# --- 3. multipart limits ----------------------------------------------------------------------------


def _multipart(fields: dict) -> bytes:
    return encode_multipart(BOUNDARY, fields)


def _files(count: int) -> list:
    png = photo_bytes("astronaut", "png")  # encoded once: 101 encodings were most of the test's time
    return [SimpleUploadedFile(f"photo{n}.png", png, content_type="image/png") for n in range(count)]


@pytest.fixture
def upload_to(key_of, enterprise_owner):
    """upload_to(route) -> (client, the other fields of an otherwise valid upload to that route)."""

    def for_route(route: str):
        if route == "/v1/verify":
            return APIClient(), {}
        generator = factories.make_generator(org=enterprise_owner.org, formats=["image"])
        return key_of, {"model": "m", "generator_id": str(generator.pk)}

    return for_route


@pytest.mark.parametrize("route", ["/v1/verify", "/v1/sign"])
def test_more_than_a_thousand_multipart_fields_is_a_400(route, upload_to):
    client, fields = upload_to(route)
    fields = {**fields, **{f"field{n}": "x" for n in range(1001)}, "content": _files(1)[0]}
    response = client.post(route, data=_multipart(fields), content_type=MULTIPART_CONTENT)
    _assert_error(response, 400, "validation_error")


@pytest.mark.parametrize("count", [2, 101])
@pytest.mark.parametrize("route", ["/v1/verify", "/v1/sign"])
def test_more_than_one_uploaded_file_is_a_400(route, count, upload_to):
    client, fields = upload_to(route)
    response = client.post(route, data=_multipart({**fields, "content": _files(count)}),
                           content_type=MULTIPART_CONTENT)
    _assert_error(response, 400, "validation_error")


@pytest.mark.parametrize("route", ["/v1/verify", "/v1/sign"])
def test_a_single_file_upload_still_works(route, upload_to):
    client, fields = upload_to(route)
    response = client.post(route, data=_multipart({**fields, "content": _files(1)[0]}),
                           content_type=MULTIPART_CONTENT)
    assert response.status_code in (200, 201), response.content[:300]


def test_a_suspicious_operation_while_parsing_is_a_400_envelope(api_client, monkeypatch):
    from django.core.exceptions import SuspiciousMultipartForm
    from django.http import multipartparser

    def refuse(self):
        raise SuspiciousMultipartForm("odd framing")

    monkeypatch.setattr(multipartparser.MultiPartParser, "parse", refuse)
    response = api_client.post("/v1/verify", data=_multipart({"content": _files(1)[0]}),
                               content_type=MULTIPART_CONTENT)
    _assert_error(response, 400, "validation_error")


# --- 4. lone surrogates -----------------------------------------------------------------------------


@pytest.mark.parametrize("escape", [b"\\ud800", b"\\udfff", b"\\ud83d", b"a\\ude00b"])
def test_a_lone_surrogate_in_supported_formats_is_a_400(key_of, escape):
    raw = b'{"name": "gen", "supported_formats": ["' + escape + b'"]}'
    _assert_error(key_of.post("/v1/generators", data=raw, content_type="application/json"), 400,
                  "validation_error")


@pytest.mark.parametrize("raw", [b'{"email": "\\ud800@example.com", "password": "x"}',
                                 b'{"\\udc00": 1, "email": "a@example.com", "password": "x"}',
                                 b'{"email": "a@example.com", "password": ["x", {"y": "\\ud800"}]}'])
def test_a_lone_surrogate_anywhere_in_the_body_is_a_400(api_client, raw):
    _assert_error(api_client.post("/v1/auth/login", data=raw, content_type="application/json"), 400,
                  "validation_error")


def test_a_lone_surrogate_in_a_batch_record_is_a_400(key_of):
    raw = b'{"records": [{"model": "\\udbff"}]}'
    _assert_error(key_of.post("/v1/records/batch", data=raw, content_type="application/json"), 400,
                  "validation_error")


def test_a_lone_surrogate_in_a_utf16_body_is_a_400(api_client):
    raw = b'{"email": "\\ud800", "password": "x"}'.decode().encode("utf-16-le", "surrogatepass")
    response = api_client.post("/v1/auth/login", data=raw, content_type="application/json; charset=utf-16-le")
    _assert_error(response, 400, "validation_error")


def test_a_proper_surrogate_pair_is_accepted(key_of):
    raw = b'{"name": "gen \\ud83d\\ude00", "supported_formats": ["image"]}'
    response = key_of.post("/v1/generators", data=raw, content_type="application/json")
    assert response.status_code == 201, response.content[:300]
    assert response.json()["name"] == "gen \N{GRINNING FACE}"


# --- 5. OPTIONS -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "callback"), V1_ROUTES, ids=[path for path, _ in V1_ROUTES])
@pytest.mark.parametrize("credential", ["anonymous", "session", "key"])
def test_options_on_every_v1_route_answers_json_without_a_5xx(path, callback, credential, session_of, key_of):
    client = {"anonymous": APIClient(), "session": session_of, "key": key_of}[credential]
    response = client.options(path)
    assert response.status_code < 500, response.content[:300]
    assert re.match(r"application/([\w.-]+\+)?json", response["Content-Type"])  # openapi.json: vnd.oai.openapi+json
    body = json.loads(response.content)
    if response.status_code == 200:
        allowed = {method.strip() for method in response["Allow"].split(",")}
        assert "OPTIONS" in allowed and allowed == set(body["methods"])
    else:
        assert body["error"]


def test_options_lists_the_methods_of_the_route(key_of):
    for path, expected in [("/v1/generators", {"GET", "POST"}),
                           (f"/v1/generators/{uuid.uuid4()}/rotate", {"POST"}),
                           (f"/v1/generators/{uuid.uuid4()}/revoke", {"PUT"}),
                           ("/v1/verify", {"POST"})]:
        response = key_of.options(path)
        assert response.status_code == 200, (path, response.content[:300])
        allowed = {method.strip() for method in response["Allow"].split(",")}
        assert expected <= allowed and "DELETE" not in allowed


# --- 6. unknown paths and CSRF ----------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete", "options", "head"])
def test_every_method_on_an_unknown_v1_path_is_a_json_404(method):
    client = APIClient(enforce_csrf_checks=True)
    body = {} if method in ("get", "head") else {"data": b"{}", "content_type": "application/json"}
    response = getattr(client, method)("/v1/no-such-route", **body)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    if method != "head":
        assert response.json()["error"] == "not_found"


def test_a_form_post_with_a_session_cookie_to_an_unknown_v1_path_is_a_json_404(client, owner):
    client = type(client)(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.post("/v1/no-such-route", {"a": "b"})
    _assert_error(response, 404, "not_found")


def _csrf_rejection(path: str):
    request = RequestFactory().post(path, data=b"{}", content_type="application/json")
    request._dont_enforce_csrf_checks = False
    return CsrfViewMiddleware(lambda r: None).process_view(request, lambda r: None, (), {})


def test_a_csrf_failure_under_v1_is_a_json_403():
    _assert_error(_csrf_rejection("/v1/anything"), 403, "forbidden")


def test_a_csrf_failure_outside_v1_is_djangos_page():
    response = _csrf_rejection("/login")
    assert response.status_code == 403
    assert response["Content-Type"].startswith("text/html")
