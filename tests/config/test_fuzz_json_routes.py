"""Whatever JSON arrives, every route answers with a 4xx envelope or success, never a 500."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.services import auth as auth_services
from tests import factories

pytestmark = pytest.mark.django_db

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)
FIELDS = ["org_name", "email", "password", "token", "otp", "challenge_token", "name", "public_keys",
          "supported_formats", "public_key", "records", "items", "content", "generator_id", "model", "watermark_id",
          "content_hash", "signature", "signed_payload", "phash", "role"]
bodies = json_values | st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6)

PUBLIC = ["/v1/auth/register", "/v1/auth/login", "/v1/auth/verify-2fa", "/v1/auth/verify-email",
          "/v1/auth/resend-verification", "/v1/auth/forgot-password", "/v1/auth/reset-password", "/v1/verify/batch",
          "/v1/team/invites/some-token/accept"]
SESSION = ["/v1/api-keys", "/v1/auth/2fa/enable", "/v1/auth/2fa/disable", "/v1/team/invites"]
KEYED = ["/v1/generators", "/v1/records", "/v1/records/batch"]
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _assert_handled(response):
    assert response.status_code < 500, response.content[:300]
    if response.status_code >= 400:
        assert response.json()["error"]


@pytest.fixture(autouse=True)
def _no_time_floor_and_no_ip_limit(monkeypatch, settings):
    monkeypatch.setattr(auth_services, "ENUMERATION_TIME_FLOOR", 0)
    settings.AUTH_RATE_PER_MINUTE = 10**6
    settings.VERIFY_RATE_PER_MINUTE = 10**6


@pytest.mark.parametrize("path", PUBLIC)
@FUZZ
@given(body=bodies)
def test_public_routes_never_fail_on_odd_json(api_client, path, body):
    _assert_handled(api_client.post(path, body, format="json"))


@pytest.mark.parametrize("path", SESSION)
@FUZZ
@given(body=bodies)
def test_session_routes_never_fail_on_odd_json(owner_client, path, body):
    _assert_handled(owner_client.post(path, body, format="json"))


@pytest.mark.parametrize("path", KEYED)
@FUZZ
@given(body=bodies)
def test_key_routes_never_fail_on_odd_json(key_client, path, body):
    org = factories.make_org(plan="enterprise")
    factories.make_user(org=org)
    _assert_handled(key_client(org).post(path, body, format="json"))
