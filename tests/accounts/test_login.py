import time

import jwt
import pytest
from django.conf import settings

from core.keyring import jwt_signing_key
from tests import factories

pytestmark = pytest.mark.django_db
URL = "/v1/auth/login"


def test_login_returns_a_24_hour_hs256_session_token_with_the_spec_claims(api_client, owner):
    before = int(time.time())
    response = api_client.post(URL, {"email": owner.email.upper(), "password": factories.PASSWORD}, format="json")
    after = time.time()
    assert response.status_code == 200
    body = response.json()
    assert body["user"] == {"user_id": str(owner.pk), "email": owner.email, "email_verified": True,
                            "org_id": str(owner.org_id)}
    assert jwt.get_unverified_header(body["token"])["alg"] == "HS256"
    claims = jwt.decode(body["token"], jwt_signing_key(), algorithms=["HS256"])
    assert set(claims) == {"user_id", "email", "org_id", "iat", "exp", "jti"}
    assert claims["user_id"] == str(owner.pk) and claims["org_id"] == str(owner.org_id)
    assert claims["email"] == owner.email
    assert claims["exp"] - claims["iat"] == 24 * 3600
    assert before <= claims["iat"] <= after  # issued during the request, however long a busy machine made it


def test_login_tokens_have_distinct_jtis(api_client, owner):
    tokens = [api_client.post(URL, {"email": owner.email, "password": factories.PASSWORD}, format="json")
              .json()["token"] for _ in range(2)]
    jtis = {jwt.decode(t, options={"verify_signature": False})["jti"] for t in tokens}
    assert len(jtis) == 2


@pytest.mark.parametrize("email", ["nobody@example.com", None])
def test_login_with_a_wrong_password_or_unknown_email_is_401(api_client, owner, email):
    response = api_client.post(URL, {"email": email or owner.email, "password": "wrong-password"}, format="json")
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_credentials"
    assert "token" not in response.json()


def test_login_of_a_deactivated_user_is_401(api_client, owner):
    owner.is_active = False
    owner.save()
    response = api_client.post(URL, {"email": owner.email, "password": factories.PASSWORD}, format="json")
    assert response.status_code == 401


@pytest.mark.parametrize("body", [{}, {"email": "a@b.c"}, {"password": "x"}, {"email": 5, "password": []}])
def test_login_with_missing_fields_is_400(api_client, body):
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"


def test_login_is_rate_limited_per_ip(api_client, owner, settings):
    settings.AUTH_RATE_PER_MINUTE = 3
    for _ in range(3):
        response = api_client.post(URL, {"email": owner.email, "password": "bad-password"}, format="json")
        assert response.status_code == 401
    response = api_client.post(URL, {"email": owner.email, "password": factories.PASSWORD}, format="json")
    assert response.status_code == 429
    assert response.json()["error"] == "rate_limited"
    assert 1 <= int(response["Retry-After"]) <= 60


def test_session_lifetime_setting_is_24_hours():
    assert settings.JWT_LIFETIME.total_seconds() == 86400
