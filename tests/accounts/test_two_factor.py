"""2FA with pyotp playing the authenticator app."""

import time

import pyotp
import pytest
from django.utils import timezone

from tests import factories
from tests.log_scan import register_secret

pytestmark = pytest.mark.django_db


def _enrol(client) -> pyotp.TOTP:
    response = client.post("/v1/auth/2fa/setup")
    assert response.status_code == 200
    body = response.json()
    assert body["otpauth_url"].startswith("otpauth://totp/")
    totp = pyotp.TOTP(body["secret"])
    assert pyotp.parse_uri(body["otpauth_url"]).secret == body["secret"]
    response = client.post("/v1/auth/2fa/enable", {"otp": totp.now()}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body == {"enabled": True, "recovery_codes": body["recovery_codes"]}
    assert len(body["recovery_codes"]) == 10
    for code in body["recovery_codes"]:
        register_secret(code)
    return totp


def _wrong(code: str) -> str:
    return f"{(int(code) + 1) % 1_000_000:06d}"


def _challenge(api_client, user) -> str:
    response = api_client.post("/v1/auth/login", {"email": user.email, "password": factories.PASSWORD}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body == {"requires_2fa": True, "challenge_token": body["challenge_token"]}
    return body["challenge_token"]


def _verify(api_client, challenge: str, otp: str):
    return api_client.post("/v1/auth/verify-2fa", {"challenge_token": challenge, "otp": otp}, format="json")


@pytest.fixture
def totp(owner, owner_client):
    return _enrol(owner_client)


def test_enabled_2fa_shows_on_me(owner_client, totp):
    assert owner_client.get("/v1/auth/me").json()["user"]["two_factor_enabled"] is True


def test_login_with_2fa_needs_the_second_step(api_client, owner, totp):
    challenge = _challenge(api_client, owner)
    response = _verify(api_client, challenge, totp.at(time.time() + 30))
    assert response.status_code == 200
    body = response.json()
    assert body["user"]["user_id"] == str(owner.pk)
    assert api_client.get("/v1/auth/me", HTTP_AUTHORIZATION=f"Bearer {body['token']}").status_code == 200


def test_a_challenge_is_single_use_even_after_success(api_client, owner, totp):
    challenge = _challenge(api_client, owner)
    assert _verify(api_client, challenge, totp.at(time.time() + 30)).status_code == 200
    response = _verify(api_client, challenge, totp.at(time.time() + 60))
    assert response.status_code == 401
    assert response.json()["error"] == "otp_invalid"


def test_a_wrong_otp_burns_the_challenge(api_client, owner, totp):
    challenge = _challenge(api_client, owner)
    response = _verify(api_client, challenge, _wrong(totp.now()))
    assert response.status_code == 401
    assert response.json()["error"] == "otp_invalid"
    # The right code on the burned challenge fails too: the user logs in again.
    assert _verify(api_client, challenge, totp.at(time.time() + 30)).status_code == 401
    assert _verify(api_client, _challenge(api_client, owner), totp.at(time.time() + 30)).status_code == 200


def test_an_unknown_challenge_is_401(api_client, totp):
    response = _verify(api_client, "no-such-challenge", "123456")
    assert response.status_code == 401
    assert response.json()["error"] == "otp_invalid"


@pytest.mark.parametrize("body", [{}, {"challenge_token": "x"}, {"otp": "123456"},
                                  {"challenge_token": "x", "otp": "12345"},
                                  {"challenge_token": "x", "otp": "abcdef"}])
def test_verify_2fa_with_missing_or_malformed_fields_is_400(api_client, body):
    response = api_client.post("/v1/auth/verify-2fa", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"


def test_five_wrong_otps_lock_the_account_for_fifteen_minutes(api_client, owner, totp):
    for _ in range(5):
        response = _verify(api_client, _challenge(api_client, owner), _wrong(totp.now()))
        assert response.status_code == 401
    challenge = _challenge(api_client, owner)
    response = _verify(api_client, challenge, totp.now())
    assert response.status_code == 429
    assert response.json()["error"] == "too_many_attempts"
    assert 800 < int(response["Retry-After"]) <= 900
    owner.refresh_from_db()
    assert owner.otp_locked_until > timezone.now()
    # After the lockout the right code works again.
    owner.otp_locked_until = timezone.now()
    owner.save()
    assert _verify(api_client, _challenge(api_client, owner), totp.at(time.time() + 30)).status_code == 200


def test_a_correct_otp_resets_the_failure_count(api_client, owner, totp):
    for _ in range(4):
        _verify(api_client, _challenge(api_client, owner), _wrong(totp.now()))
    assert _verify(api_client, _challenge(api_client, owner), totp.at(time.time() + 30)).status_code == 200
    owner.refresh_from_db()
    assert owner.failed_otp_count == 0
    assert _verify(api_client, _challenge(api_client, owner), _wrong(totp.now())).status_code == 401
    owner.refresh_from_db()
    assert owner.failed_otp_count == 1


def test_an_expired_challenge_is_401(api_client, owner, totp):
    from accounts.models import TwoFactorChallenge

    challenge = _challenge(api_client, owner)
    TwoFactorChallenge.objects.update(expires_at=timezone.now())
    assert _verify(api_client, challenge, totp.now()).status_code == 401


def test_enable_with_a_wrong_code_is_401_and_leaves_2fa_off(owner_client):
    secret = owner_client.post("/v1/auth/2fa/setup").json()["secret"]
    response = owner_client.post("/v1/auth/2fa/enable", {"otp": _wrong(pyotp.TOTP(secret).now())}, format="json")
    assert response.status_code == 401
    assert response.json()["error"] == "otp_invalid"
    assert owner_client.get("/v1/auth/me").json()["user"]["two_factor_enabled"] is False


def test_enable_without_setup_is_400(owner_client):
    response = owner_client.post("/v1/auth/2fa/enable", {"otp": "123456"}, format="json")
    assert response.status_code == 400


def test_setup_when_already_enabled_is_400(owner_client, totp):
    assert owner_client.post("/v1/auth/2fa/setup").status_code == 400


def test_disable_needs_a_valid_code(api_client, owner, owner_client, totp):
    response = owner_client.post("/v1/auth/2fa/disable", {"otp": _wrong(totp.now())}, format="json")
    assert response.status_code == 401
    response = owner_client.post("/v1/auth/2fa/disable", {"otp": totp.at(time.time() + 30)}, format="json")
    assert response.status_code == 200 and response.json() == {"enabled": False}
    login = api_client.post("/v1/auth/login", {"email": owner.email, "password": factories.PASSWORD}, format="json")
    assert "token" in login.json()


def test_2fa_routes_need_a_session(api_client, org, key_client):
    for path in ("/v1/auth/2fa/setup", "/v1/auth/2fa/enable", "/v1/auth/2fa/disable"):
        assert api_client.post(path, {"otp": "123456"}, format="json").status_code == 401
        response = key_client(org).post(path, {"otp": "123456"}, format="json")
        assert response.status_code == 401 and response.json()["error"] == "authentication_required"
