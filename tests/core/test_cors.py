"""CORS: `Access-Control-Allow-Origin: *` on the public routes only, and preflights answered as docs/api.md says."""

import io
import uuid

import pytest

from tests import factories
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db
ORIGIN = "https://extension.example"
UNKNOWN = uuid.UUID("3f2b8c1e-0d4a-4e6b-9a51-7c2e8d9f0a13")  # fixed: xdist workers must collect the same ids

# (method a page uses, path) for every public route family.
PUBLIC = [
    ("POST", "/v1/verify"),
    ("POST", "/v1/verify/batch"),
    ("GET", f"/v1/records/{UNKNOWN}"),
    ("GET", f"/v1/records/{UNKNOWN}/c2pa"),
    ("GET", f"/v1/keys/{UNKNOWN}"),
    ("GET", "/v1/billing/plans"),
    ("GET", "/v1/log/checkpoint"),
    ("GET", "/v1/log/keys"),
    ("GET", "/v1/log/inclusion"),
    ("GET", "/v1/log/consistency"),
    ("GET", "/v1/log/tile/0/000"),
    ("GET", "/v1/c2pa/matches/byBinding"),
    ("POST", "/v1/c2pa/matches/byContent"),
    ("GET", "/v1/c2pa/services/supportedAlgorithms"),
]
# Routes that take a credential (and the public auth and invite routes, which are not for other origins).
PRIVATE = [
    ("GET", "/v1/records"), ("POST", "/v1/records"), ("POST", "/v1/sign"), ("POST", "/v1/records/batch"),
    ("GET", "/v1/generators"), ("GET", "/v1/api-keys"), ("GET", "/v1/team/members/me/api-keys"),
    ("GET", "/v1/billing/usage"), ("GET", "/v1/audit"), ("GET", "/v1/auth/me"), ("POST", "/v1/auth/login"),
    ("POST", f"/v1/records/{UNKNOWN}/c2pa/embed"), ("GET", "/v1/webhooks"),
]
CORS_HEADERS = ("Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers",
                "Access-Control-Max-Age", "Access-Control-Expose-Headers", "Access-Control-Allow-Credentials")


def _preflight(client, method: str, path: str, headers: str = "content-type", **extra):
    return client.options(path, HTTP_ORIGIN=ORIGIN, HTTP_ACCESS_CONTROL_REQUEST_METHOD=method,
                          HTTP_ACCESS_CONTROL_REQUEST_HEADERS=headers, **extra)


@pytest.mark.parametrize(("method", "path"), PUBLIC)
def test_a_public_route_answers_a_preflight_without_credentials(api_client, method, path):
    response = _preflight(api_client, method, path)
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "*"
    assert method in response["Access-Control-Allow-Methods"].split(", ")
    assert "Content-Type" in response["Access-Control-Allow-Headers"].split(", ")
    assert int(response["Access-Control-Max-Age"]) > 0
    assert "Access-Control-Allow-Credentials" not in response
    assert "Authorization" not in response["Access-Control-Allow-Headers"]


@pytest.mark.parametrize(("method", "path"), [pair for pair in PUBLIC if pair[0] == "GET"])
def test_a_public_routes_answers_carry_allow_origin_star_errors_included(api_client, method, path):
    response = api_client.get(path, HTTP_ORIGIN=ORIGIN)
    assert response["Access-Control-Allow-Origin"] == "*"
    exposed = response["Access-Control-Expose-Headers"].split(", ")
    assert {"X-RateLimit-Remaining", "Retry-After", "X-Request-Id"} <= set(exposed)
    assert "Access-Control-Allow-Methods" not in response  # only a preflight says what may be sent


def test_a_browser_verification_reads_the_result_and_the_rate_limit(api_client, key_client, org):
    generator = factories.make_generator(org=org, formats=["image"])
    signed = key_client(org).post("/v1/sign", {"content": io.BytesIO(photo_bytes()), "model": "m",
                                               "generator_id": str(generator.pk)}, format="multipart")
    response = api_client.post("/v1/verify", {"content": io.BytesIO(signed.content)}, format="multipart",
                               HTTP_ORIGIN=ORIGIN)
    assert response.status_code == 200 and response.json()["authentic"] is True
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "X-RateLimit-Remaining" in response and "X-RateLimit-Remaining" in response["Access-Control-Expose-Headers"]
    record = api_client.get(f"/v1/records/{signed['X-Service-Record-Id']}", HTTP_ORIGIN=ORIGIN)
    assert record.status_code == 200 and record["Access-Control-Allow-Origin"] == "*"


def test_a_rate_limited_public_answer_still_carries_cors(api_client, settings):
    settings.VERIFY_RATE_PER_MINUTE = 1
    api_client.get("/v1/billing/plans", REMOTE_ADDR="198.51.100.7")
    limited = api_client.get("/v1/billing/plans", REMOTE_ADDR="198.51.100.7", HTTP_ORIGIN=ORIGIN)
    assert limited.status_code == 429
    assert limited["Access-Control-Allow-Origin"] == "*" and "Retry-After" in limited


def test_preflights_are_not_counted_against_the_rate_limit(api_client, settings):
    settings.VERIFY_RATE_PER_MINUTE = 2
    for _ in range(5):
        assert _preflight(api_client, "POST", "/v1/verify/batch", REMOTE_ADDR="198.51.100.8").status_code == 200
    assert api_client.get("/v1/billing/plans", REMOTE_ADDR="198.51.100.8").status_code == 200
    assert api_client.get("/v1/billing/plans", REMOTE_ADDR="198.51.100.8").status_code == 200
    assert api_client.get("/v1/billing/plans", REMOTE_ADDR="198.51.100.8").status_code == 429


@pytest.mark.parametrize(("method", "path"), PRIVATE)
def test_a_route_that_takes_a_credential_answers_no_cors(api_client, method, path):
    response = _preflight(api_client, method, path, headers="authorization")
    assert not any(header in response for header in CORS_HEADERS)


def test_a_credentialed_request_from_another_origin_gets_no_cors_headers(key_client, org):
    client = key_client(org)
    for path in ("/v1/records", "/v1/generators", "/v1/billing/usage"):
        response = client.get(path, HTTP_ORIGIN=ORIGIN)
        assert response.status_code == 200
        assert not any(header in response for header in CORS_HEADERS), path
    preflight = _preflight(client, "GET", "/v1/records", headers="authorization")
    assert not any(header in preflight for header in CORS_HEADERS)


def test_options_without_a_preflight_keeps_its_answer(api_client):
    response = api_client.options("/v1/verify")
    assert response.status_code == 200
    assert response.json() == {"methods": ["POST", "OPTIONS"], "schema": "/v1/openapi.json"}
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Max-Age" not in response
