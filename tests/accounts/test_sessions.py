"""Attacks on the session JWT: every forged, expired or revoked token is a 401."""

import base64
import json
import time
import uuid

import jwt
import pytest

from core.keyring import jwt_signing_key
from tests import factories

pytestmark = pytest.mark.django_db
ME = "/v1/auth/me"


def _claims(user, **overrides) -> dict:
    now = int(time.time())
    claims = {"user_id": str(user.pk), "email": user.email, "org_id": str(user.org_id), "iat": now,
              "exp": now + 3600, "jti": uuid.uuid4().hex}
    claims.update(overrides)
    return claims


def _get_me(api_client, token: str):
    return api_client.get(ME, HTTP_AUTHORIZATION=f"Bearer {token}")


def _assert_401(response):
    assert response.status_code == 401
    assert response.json()["error"] == "authentication_required"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_me_returns_user_and_org(api_client, owner):
    response = _get_me(api_client, factories.session_token(owner))
    assert response.status_code == 200
    body = response.json()
    assert body["user"]["user_id"] == str(owner.pk)
    assert body["user"]["email"] == owner.email
    assert body["user"]["two_factor_enabled"] is False
    assert body["user"]["created_at"].endswith("Z")
    assert {"user_id", "email", "email_verified", "org_id", "created_at"} <= set(body["user"])
    assert body["org"] == {"org_id": str(owner.org_id), "name": owner.org.name, "plan": "free"}


def test_me_without_a_credential_is_401(api_client):
    _assert_401(api_client.get(ME))


@pytest.mark.parametrize("header", ["Bearer", "Basic abc", "Token x", "Bearer    "])
def test_malformed_authorization_headers_are_401(api_client, header):
    _assert_401(api_client.get(ME, HTTP_AUTHORIZATION=header))


def test_a_token_with_an_altered_signature_is_401(api_client, owner):
    token = factories.session_token(owner)
    head, payload, signature = token.split(".")
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    _assert_401(_get_me(api_client, f"{head}.{payload}.{flipped}"))


def test_a_token_with_an_altered_payload_is_401(api_client, owner, outsider):
    token = factories.session_token(owner)
    head, _, signature = token.split(".")
    forged = base64.urlsafe_b64encode(json.dumps(_claims(outsider)).encode()).rstrip(b"=").decode()
    _assert_401(_get_me(api_client, f"{head}.{forged}.{signature}"))


def test_an_alg_none_token_is_401(api_client, owner):
    header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    payload = base64.urlsafe_b64encode(json.dumps(_claims(owner)).encode()).rstrip(b"=").decode()
    _assert_401(_get_me(api_client, f"{header}.{payload}."))


def test_a_token_signed_with_another_algorithm_is_401(api_client, owner):
    token = jwt.encode(_claims(owner), jwt_signing_key(), algorithm="HS512")
    _assert_401(_get_me(api_client, token))


def test_a_token_signed_with_another_key_is_401(api_client, owner):
    token = jwt.encode(_claims(owner), "some-other-secret-key-of-enough-length!!", algorithm="HS256")
    _assert_401(_get_me(api_client, token))


def test_an_expired_token_is_401(api_client, owner):
    now = int(time.time())
    token = jwt.encode(_claims(owner, iat=now - 90000, exp=now - 60), jwt_signing_key(), algorithm="HS256")
    _assert_401(_get_me(api_client, token))


def test_a_token_missing_a_claim_is_401(api_client, owner):
    claims = _claims(owner)
    del claims["jti"]
    _assert_401(_get_me(api_client, jwt.encode(claims, jwt_signing_key(), algorithm="HS256")))


def test_a_token_with_a_non_uuid_user_id_is_401(api_client, owner):
    token = jwt.encode(_claims(owner, user_id="1 OR 1=1"), jwt_signing_key(), algorithm="HS256")
    _assert_401(_get_me(api_client, token))


def test_a_token_whose_org_claim_does_not_match_the_user_is_401(api_client, owner, other_org):
    token = jwt.encode(_claims(owner, org_id=str(other_org.pk)), jwt_signing_key(), algorithm="HS256")
    _assert_401(_get_me(api_client, token))


def test_a_deleted_users_token_is_401(api_client, owner):
    token = factories.session_token(owner)
    owner.delete()
    _assert_401(_get_me(api_client, token))


def test_a_deactivated_users_token_is_401(api_client, owner):
    token = factories.session_token(owner)
    owner.is_active = False
    owner.save()
    _assert_401(_get_me(api_client, token))


def test_logout_blocklists_the_token_until_expiry(api_client, owner):
    token = factories.session_token(owner)
    other = factories.session_token(owner)
    response = api_client.post("/v1/auth/logout", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    _assert_401(_get_me(api_client, token))
    _assert_401(api_client.post("/v1/auth/logout", HTTP_AUTHORIZATION=f"Bearer {token}"))
    assert _get_me(api_client, other).status_code == 200


def test_logout_needs_a_session(api_client, org):
    _assert_401(api_client.post("/v1/auth/logout"))
    key = factories.make_api_key(org=org)
    # A session route (spec, Authentication 3): an API key is no credential there, as on /v1/auth/me.
    _assert_401(api_client.post("/v1/auth/logout", HTTP_AUTHORIZATION=f"Bearer {key}"))


def test_me_refuses_an_organization_api_key(api_client, org):
    # Spec, Auth: /v1/auth/me is "session"; a key gets the envelope's 401, like no credential.
    key = factories.make_api_key(org=org, name="deploy")
    response = api_client.get(ME, HTTP_AUTHORIZATION=f"Bearer {key}")
    _assert_401(response)
    assert key not in response.content.decode()
