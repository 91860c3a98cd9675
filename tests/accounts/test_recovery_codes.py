"""Two-factor recovery codes through the API, with pyotp playing the authenticator app."""

import time

import pyotp
import pytest
from django.utils import timezone

from accounts.credentials import digest, normalize_recovery_code
from accounts.models import RecoveryCode
from audit.models import AuditEvent
from tests import factories
from tests.log_scan import register_secret

pytestmark = pytest.mark.django_db


def _enable(client) -> tuple[pyotp.TOTP, list[str]]:
    totp = pyotp.TOTP(client.post("/v1/auth/2fa/setup").json()["secret"])
    response = client.post("/v1/auth/2fa/enable", {"otp": totp.now()}, format="json")
    assert response.status_code == 200
    codes = response.json()["recovery_codes"]
    for code in codes:
        register_secret(code)
    return totp, codes


def _challenge(api_client, user) -> str:
    response = api_client.post("/v1/auth/login", {"email": user.email, "password": factories.PASSWORD}, format="json")
    return response.json()["challenge_token"]


def _verify(api_client, challenge: str, otp: str):
    return api_client.post("/v1/auth/verify-2fa", {"challenge_token": challenge, "otp": otp}, format="json")


def _wrong(code: str) -> str:
    return f"{(int(code) + 1) % 1_000_000:06d}"


@pytest.fixture
def enabled(owner_client):
    return _enable(owner_client)


def test_enabling_returns_ten_distinct_codes_stored_only_as_digests(owner, enabled):
    _, codes = enabled
    assert len(set(codes)) == 10
    for code in codes:
        assert len(code) == 19 and code.count("-") == 3
    stored = set(RecoveryCode.objects.filter(user=owner).values_list("digest", flat=True))
    assert stored == {digest(normalize_recovery_code(code)) for code in codes}
    for code in codes:  # nothing stored holds a code in the clear
        assert not RecoveryCode.objects.filter(digest__icontains=code.replace("-", "")).exists()


def test_a_recovery_code_signs_in_at_verify_2fa(api_client, owner, enabled):
    _, codes = enabled
    response = _verify(api_client, _challenge(api_client, owner), codes[3])
    assert response.status_code == 200
    token = response.json()["token"]
    assert api_client.get("/v1/auth/me", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


def test_a_recovery_code_is_forgiving_about_case_dashes_spaces_and_look_alikes(api_client, owner, enabled):
    _, codes = enabled
    typed = codes[0].upper().replace("-", " ").replace("1", "l").replace("0", "O")
    assert _verify(api_client, _challenge(api_client, owner), typed).status_code == 200


def test_a_recovery_code_works_exactly_once_and_then_says_it_was_used(api_client, owner, enabled):
    _, codes = enabled
    assert _verify(api_client, _challenge(api_client, owner), codes[0]).status_code == 200
    again = _verify(api_client, _challenge(api_client, owner), codes[0])
    assert again.status_code == 401
    body = again.json()
    assert body["error"] == "otp_invalid" and body["message"] == "This recovery code was already used."
    owner.refresh_from_db()
    assert owner.failed_otp_count == 1  # a spent code counts as a wrong attempt
    assert _verify(api_client, _challenge(api_client, owner), codes[1]).status_code == 200


def test_an_unknown_recovery_code_is_a_wrong_code_and_burns_the_challenge(api_client, owner, enabled):
    _, codes = enabled
    challenge = _challenge(api_client, owner)
    response = _verify(api_client, challenge, "aaaa-bbbb-cccc-dddd")
    assert response.status_code == 401 and response.json()["error"] == "otp_invalid"
    assert response.json()["message"] != "This recovery code was already used."
    assert _verify(api_client, challenge, codes[0]).status_code == 401  # burned: the spec's rule stands
    assert RecoveryCode.objects.filter(user=owner, used_at__isnull=True).count() == 10


def test_another_users_recovery_code_does_not_sign_in(api_client, owner, enabled, org, session_client):
    other = factories.make_user(org=org, role="user")
    _, their_codes = _enable(session_client(other))
    response = _verify(api_client, _challenge(api_client, owner), their_codes[0])
    assert response.status_code == 401
    assert RecoveryCode.objects.filter(user=other, used_at__isnull=True).count() == 10


def test_wrong_recovery_codes_count_toward_the_lockout_and_429_stays(api_client, owner, enabled):
    _, codes = enabled
    for n in range(5):
        response = _verify(api_client, _challenge(api_client, owner), f"aaaa-bbbb-cccc-{n:04d}")
        assert response.status_code == 401
    locked = _verify(api_client, _challenge(api_client, owner), codes[0])
    assert locked.status_code == 429 and locked.json()["error"] == "too_many_attempts"
    assert int(locked["Retry-After"]) > 800
    assert RecoveryCode.objects.filter(user=owner, used_at__isnull=True).count() == 10  # not spent while locked


def test_verify_2fa_refuses_codes_of_the_wrong_shape_with_400(api_client, owner, enabled):
    for otp in ("abcd-efgh", "aaaa-bbbb-cccc-dddd-eeee", "aaaa-bbbb-cccc-ddd!", "u" * 16, "1" * 33):
        response = _verify(api_client, _challenge(api_client, owner), otp)
        assert response.status_code == 400 and response.json()["error"] == "validation_error", otp


def test_using_a_code_writes_an_audit_event_without_the_code(api_client, owner, enabled):
    _, codes = enabled
    _verify(api_client, _challenge(api_client, owner), codes[0])
    event = AuditEvent.objects.for_org(owner.org).get(type="account.recovery_code_used")
    assert event.metadata == {"actor_id": str(owner.pk), "remaining": 9}
    assert AuditEvent.objects.for_org(owner.org).filter(type="account.two_factor_enabled").count() == 1


def test_regenerating_with_a_current_code_replaces_every_old_code(api_client, owner, owner_client, enabled):
    totp, old = enabled
    response = owner_client.post("/v1/auth/2fa/recovery-codes", {"otp": totp.at(time.time() + 30)}, format="json")
    assert response.status_code == 200
    new = response.json()["recovery_codes"]
    for code in new:
        register_secret(code)
    assert len(new) == 10 and not set(new) & set(old)
    assert _verify(api_client, _challenge(api_client, owner), old[0]).status_code == 401
    assert _verify(api_client, _challenge(api_client, owner), new[0]).status_code == 200
    assert AuditEvent.objects.for_org(owner.org).filter(type="account.recovery_codes_regenerated").count() == 1


def test_regenerating_with_the_password_works_and_a_wrong_one_is_401(owner_client, owner, enabled):
    wrong = owner_client.post("/v1/auth/2fa/recovery-codes", {"password": "not the password"}, format="json")
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_credentials"
    right = owner_client.post("/v1/auth/2fa/recovery-codes", {"password": factories.PASSWORD}, format="json")
    assert right.status_code == 200 and len(right.json()["recovery_codes"]) == 10
    for code in right.json()["recovery_codes"]:
        register_secret(code)


def test_regenerating_with_a_wrong_code_is_401_and_keeps_the_old_codes(owner_client, owner, enabled):
    totp, _ = enabled
    response = owner_client.post("/v1/auth/2fa/recovery-codes", {"otp": _wrong(totp.now())}, format="json")
    assert response.status_code == 401 and response.json()["error"] == "otp_invalid"
    owner.refresh_from_db()
    assert owner.failed_otp_count == 1
    assert RecoveryCode.objects.filter(user=owner, used_at__isnull=True).count() == 10


@pytest.mark.parametrize("body", [{}, {"otp": "123456", "password": "x"}, {"otp": "12345"},
                                  {"otp": "aaaa-bbbb-cccc-dddd"}])
def test_regenerating_needs_exactly_one_proof(owner_client, enabled, body):
    response = owner_client.post("/v1/auth/2fa/recovery-codes", body, format="json")
    assert response.status_code == 400 and response.json()["error"] == "validation_error"


def test_regenerating_without_2fa_is_400_and_needs_a_session(owner_client, api_client, org, key_client):
    response = owner_client.post("/v1/auth/2fa/recovery-codes", {"password": factories.PASSWORD}, format="json")
    assert response.status_code == 400
    assert api_client.post("/v1/auth/2fa/recovery-codes", {"password": "x"}, format="json").status_code == 401
    keyed = key_client(org).post("/v1/auth/2fa/recovery-codes", {"password": "x"}, format="json")
    assert keyed.status_code == 401 and keyed.json()["error"] == "authentication_required"


def test_disabling_deletes_the_codes_and_accepts_a_recovery_code_for_a_lost_phone(owner_client, owner, enabled):
    _, codes = enabled
    response = owner_client.post("/v1/auth/2fa/disable", {"otp": codes[5]}, format="json")
    assert response.status_code == 200 and response.json() == {"enabled": False}
    assert not RecoveryCode.objects.filter(user=owner).exists()
    event = AuditEvent.objects.for_org(owner.org).get(type="account.two_factor_disabled")
    assert event.metadata == {"actor_id": str(owner.pk), "proof": "recovery_code"}
    # Not a sign-in: the disable event says how it was proven, and no "recovery code used" is written.
    assert not AuditEvent.objects.for_org(owner.org).filter(type="account.recovery_code_used").exists()


def test_disabling_with_a_spent_recovery_code_is_refused(api_client, owner_client, owner, enabled):
    _, codes = enabled
    assert _verify(api_client, _challenge(api_client, owner), codes[0]).status_code == 200
    response = owner_client.post("/v1/auth/2fa/disable", {"otp": codes[0]}, format="json")
    assert response.status_code == 401 and response.json()["message"] == "This recovery code was already used."
    owner.refresh_from_db()
    assert owner.two_factor_enabled and RecoveryCode.objects.filter(user=owner).count() == 10


def test_a_wrong_code_at_disable_counts_even_though_nothing_changes(owner_client, owner, enabled):
    totp, _ = enabled
    owner_client.post("/v1/auth/2fa/disable", {"otp": _wrong(totp.now())}, format="json")
    owner.refresh_from_db()
    assert owner.failed_otp_count == 1 and owner.two_factor_enabled


def test_enabling_again_after_disabling_gives_a_new_set(owner_client, owner, enabled):
    totp, old = enabled
    owner_client.post("/v1/auth/2fa/disable", {"otp": totp.at(time.time() + 30)}, format="json")
    _, new = _enable(owner_client)
    assert not set(new) & set(old) and RecoveryCode.objects.filter(user=owner).count() == 10


def test_the_api_never_renews_a_burned_challenge(api_client, owner, enabled):
    from accounts.models import TwoFactorChallenge

    totp, _ = enabled
    challenge = _challenge(api_client, owner)
    _verify(api_client, challenge, _wrong(totp.now()))
    # The dashboard may renew it (retry_allowed); the API has no route that does, and the old one is dead.
    assert TwoFactorChallenge.objects.get(user=owner).retry_allowed is True
    assert _verify(api_client, challenge, totp.at(time.time() + 30)).status_code == 401
    assert TwoFactorChallenge.objects.filter(user=owner, expires_at__gt=timezone.now()).count() == 1
