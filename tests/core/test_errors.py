"""The one error envelope, for every kind of failure, and never a stack trace."""

import pytest

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.config.urls_probe")]


def _assert_envelope(response, status: int, code: str):
    assert response.status_code == status
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error"] == code
    assert isinstance(body["message"], str) and body["message"]
    # A 5xx also names the request id (issue 18: the logs of the request carry it too).
    assert set(body) <= {"error", "message", "details"} | ({"request_id"} if status >= 500 else set())
    return body


def test_an_unknown_v1_path_is_a_json_404(api_client):
    _assert_envelope(api_client.get("/v1/no-such-route"), 404, "not_found")


@pytest.mark.parametrize("path", ["/v1/no-such%0Aroute", "/v1/team/members/%F2%B2%8F%86%0AT", "/v1/generators/x%0A"])
def test_a_v1_path_with_an_encoded_newline_is_a_json_404(api_client, settings, path):
    settings.DEBUG = True  # as under `make run`: a path no pattern matches would get Django's HTML page
    _assert_envelope(api_client.delete(path), 404, "not_found")


def test_a_wrong_method_is_a_json_405(api_client):
    _assert_envelope(api_client.get("/v1/auth/login"), 405, "method_not_allowed")
    _assert_envelope(api_client.delete("/v1/auth/register"), 405, "method_not_allowed")


def test_malformed_json_is_a_400_validation_error(api_client):
    response = api_client.post("/v1/probe/public", data=b"{not json", content_type="application/json")
    _assert_envelope(response, 400, "validation_error")


@pytest.mark.parametrize("raw", [b'{"a": NaN}', b'{"a": Infinity}', b"-Infinity"])
def test_non_json_number_constants_are_400(api_client, raw):
    response = api_client.post("/v1/probe/public", data=raw, content_type="application/json")
    _assert_envelope(response, 400, "validation_error")


def test_invalid_utf8_is_a_400_validation_error(api_client):
    response = api_client.post("/v1/probe/public", data=b'{"a": "\xff"}', content_type="application/json")
    _assert_envelope(response, 400, "validation_error")


def test_an_unsupported_content_type_is_415(api_client):
    response = api_client.post("/v1/probe/public", data=b"<x/>", content_type="application/xml")
    _assert_envelope(response, 415, "unsupported_media_type")


def test_an_oversized_body_is_413_even_without_content_length_honesty(api_client):
    raw = b'{"a": "' + b"x" * (1024 * 1024 + 10) + b'"}'
    _assert_envelope(api_client.post("/v1/probe/public", data=raw, content_type="application/json"), 413,
                     "payload_too_large")


def test_an_unexpected_error_is_a_bare_500_without_details(api_client, caplog):
    api_client.raise_request_exception = False
    response = api_client.get("/v1/probe/broken")
    body = _assert_envelope(response, 500, "internal_error")
    assert "secret internal detail" not in response.content.decode()
    assert "Traceback" not in response.content.decode()
    assert "details" not in body
    assert any("secret internal detail" in str(record.exc_info) for record in caplog.records)


def test_a_401_carries_www_authenticate(api_client):
    response = api_client.get("/v1/probe/whoami")
    _assert_envelope(response, 401, "authentication_required")
    assert response["WWW-Authenticate"].startswith("Bearer")
