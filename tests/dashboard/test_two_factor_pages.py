"""The Security page and the login's code step: recovery codes shown once, used once, regenerated; a
wrong code that keeps the person at the code step; the password change that ends the other sessions."""

import re
import time

import pyotp
import pytest
from django.core import mail
from django.test import Client
from rest_framework.test import APIClient

from accounts import services
from accounts.models import RecoveryCode, TwoFactorChallenge
from audit.models import AuditEvent
from tests import factories
from tests.log_scan import register_secret

pytestmark = pytest.mark.django_db

CODES_PAGE = "/dashboard/security/recovery-codes"
CODE_SHAPE = re.compile(r"\b[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}\b")
NEW_PASSWORD = "a-brand-new-password"


def _next_code(totp: pyotp.TOTP) -> str:
    return totp.at(time.time() + 30)  # the step of the code used to enable is spent


def _wrong(totp: pyotp.TOTP) -> str:
    return "000000" if totp.now() != "000000" else "111111"


def _enable_through_the_page(client: Client, user) -> tuple[pyotp.TOTP, list[str]]:
    client.post("/dashboard/security/2fa/setup")
    secret = re.search(r'id="totp-secret"[^>]*>([A-Z2-7=]+)<', client.get("/dashboard/security").content.decode())
    totp = pyotp.TOTP(secret.group(1))
    response = client.post("/dashboard/security/2fa/enable", {"otp": totp.now()})
    assert response.status_code == 302 and response["Location"] == CODES_PAGE
    page = client.get(CODES_PAGE)
    codes = CODE_SHAPE.findall(page.content.decode())
    for code in codes:
        register_secret(code)
    return totp, codes


def _at_the_code_step(user) -> Client:
    client = Client()
    assert client.post("/login", {"email": user.email, "password": factories.PASSWORD})["Location"] == "/login/2fa"
    return client


# --- recovery codes shown once --------------------------------------------------------------------

def test_enabling_shows_ten_codes_once_and_a_reload_shows_none(owner, owner_page):
    _, codes = _enable_through_the_page(owner_page, owner)
    assert len(set(codes)) == 10
    again = owner_page.get(CODES_PAGE)
    assert again.status_code == 200
    html = again.content.decode()
    assert CODE_SHAPE.findall(html) == [] and "shown only once" in html
    assert "10 of 10 recovery codes left" in owner_page.get("/dashboard/security").content.decode()


def test_the_codes_page_is_never_cached_and_the_codes_leave_the_session(owner, owner_page):
    owner_page.post("/dashboard/security/2fa/setup")
    totp = pyotp.TOTP(services.two_factor_pending_setup(user=owner).secret)
    owner_page.post("/dashboard/security/2fa/enable", {"otp": totp.now()})
    assert "dashboard_recovery_codes" in owner_page.session
    page = owner_page.get(CODES_PAGE)
    assert page["Cache-Control"] == "no-store"
    for code in CODE_SHAPE.findall(page.content.decode()):
        register_secret(code)
    assert "dashboard_recovery_codes" not in owner_page.session


def test_a_wrong_enable_code_shows_no_codes(owner, owner_page):
    owner_page.post("/dashboard/security/2fa/setup")
    response = owner_page.post("/dashboard/security/2fa/enable", {"otp": "000000"}, follow=True)
    assert response.redirect_chain[-1][0] == "/dashboard/security"
    assert not RecoveryCode.objects.filter(user=owner).exists()


@pytest.mark.parametrize("path", ["/dashboard/security/2fa/setup", "/dashboard/security/2fa/enable",
                                  "/dashboard/security/2fa/disable", "/dashboard/security/recovery-codes/new",
                                  "/dashboard/security/password"])
def test_a_get_on_an_action_of_the_security_page_answers_the_page_and_changes_nothing(path, owner, owner_page):
    factories.enable_two_factor(owner)
    response = owner_page.get(path, follow=True)
    assert response.status_code == 200 and response.redirect_chain == [("/dashboard/security", 302)]
    assert set(RecoveryCode.objects.filter(user=owner).values_list("used_at", flat=True)) == {None}
    owner.refresh_from_db()
    assert owner.two_factor_enabled


# --- the code step of the login --------------------------------------------------------------------

def test_a_recovery_code_signs_in_at_the_code_step(owner):
    _, codes = factories.enable_two_factor(owner)
    client = _at_the_code_step(owner)
    done = client.post("/login/2fa", {"otp": codes[0]})
    assert done["Location"] == "/dashboard"
    assert client.get("/dashboard").status_code == 200
    assert "9 of 10 recovery codes left" in client.get("/dashboard/security").content.decode()


def test_a_used_recovery_code_says_so_and_keeps_the_person_at_the_code_step(owner):
    _, codes = factories.enable_two_factor(owner)
    _at_the_code_step(owner).post("/login/2fa", {"otp": codes[0]})
    client = _at_the_code_step(owner)
    response = client.post("/login/2fa", {"otp": codes[0]}, follow=True)
    assert response.redirect_chain == [("/login/2fa", 302)]
    assert "This recovery code was already used" in response.content.decode()
    assert client.get("/dashboard").status_code == 302  # not signed in
    assert client.post("/login/2fa", {"otp": codes[1]})["Location"] == "/dashboard"


def test_a_malformed_code_is_a_form_error_that_burns_nothing(owner):
    factories.enable_two_factor(owner)
    client = _at_the_code_step(owner)
    response = client.post("/login/2fa", {"otp": "12-34"})
    assert response.status_code == 200 and "Enter the 6-digit code" in response.content.decode()
    assert TwoFactorChallenge.objects.get(user=owner).used_at is None


def test_five_wrong_codes_in_one_login_lock_the_account_with_429(owner):
    totp, codes = factories.enable_two_factor(owner)
    client = _at_the_code_step(owner)
    for _ in range(4):
        assert client.post("/login/2fa", {"otp": _wrong(totp)})["Location"] == "/login/2fa"
    locked = client.post("/login/2fa", {"otp": _wrong(totp)})
    assert locked.status_code == 429 and int(locked["Retry-After"]) > 800
    # The lockout holds for every challenge, recovery codes included, and nothing was spent.
    other = _at_the_code_step(owner)
    assert other.post("/login/2fa", {"otp": codes[0]}).status_code == 429
    assert RecoveryCode.objects.filter(user=owner, used_at__isnull=True).count() == 10


def test_a_challenge_renewed_after_a_wrong_code_keeps_the_first_expiry(owner):
    totp, _ = factories.enable_two_factor(owner)
    client = _at_the_code_step(owner)
    first = TwoFactorChallenge.objects.get(user=owner)
    client.post("/login/2fa", {"otp": _wrong(totp)})
    second = TwoFactorChallenge.objects.exclude(pk=first.pk).get(user=owner)
    assert second.expires_at == first.expires_at and second.used_at is None


def test_a_wrong_code_after_the_login_expired_goes_back_to_the_password_step(owner):
    totp, _ = factories.enable_two_factor(owner)
    client = _at_the_code_step(owner)
    TwoFactorChallenge.objects.update(expires_at=TwoFactorChallenge.objects.get().created_at)
    response = client.post("/login/2fa", {"otp": _wrong(totp)}, follow=True)
    assert response.redirect_chain[0] == ("/login", 302)
    assert "expired" in response.content.decode()
    assert client.get("/login/2fa")["Location"] == "/login"


def test_a_challenge_is_renewed_only_once_and_never_after_a_right_code(owner):
    totp, _ = factories.enable_two_factor(owner)
    client = _at_the_code_step(owner)
    challenge = client.session["dashboard_2fa_challenge"]
    client.post("/login/2fa", {"otp": _wrong(totp)})
    from core.errors import OtpInvalid

    with pytest.raises(OtpInvalid):
        services.two_factor_challenge_renew(challenge_token=challenge)  # spent on the first renewal
    right = _at_the_code_step(owner)
    passed = right.session["dashboard_2fa_challenge"]
    right.post("/login/2fa", {"otp": _next_code(totp)})
    with pytest.raises(OtpInvalid):
        services.two_factor_challenge_renew(challenge_token=passed)


# --- regenerate and disable ------------------------------------------------------------------------

def test_new_codes_need_the_password_and_end_the_old_ones(owner, owner_page):
    _, old = factories.enable_two_factor(owner)
    wrong = owner_page.post("/dashboard/security/recovery-codes/new", {"codes-current_password": "nope"})
    assert wrong.status_code == 400 and "Your current password is not right." not in wrong.content.decode()
    assert "The password is not right." in wrong.content.decode()
    response = owner_page.post("/dashboard/security/recovery-codes/new",
                               {"codes-current_password": factories.PASSWORD})
    assert response["Location"] == CODES_PAGE
    new = CODE_SHAPE.findall(owner_page.get(CODES_PAGE).content.decode())
    for code in new:
        register_secret(code)
    assert len(new) == 10 and not set(new) & set(old)
    assert _at_the_code_step(owner).post("/login/2fa", {"otp": old[0]})["Location"] == "/login/2fa"
    assert _at_the_code_step(owner).post("/login/2fa", {"otp": new[0]})["Location"] == "/dashboard"


def test_turning_2fa_off_with_a_recovery_code_deletes_the_codes(owner, owner_page):
    _, codes = factories.enable_two_factor(owner)
    owner_page.post("/dashboard/security/2fa/disable", {"otp": codes[2]})
    owner.refresh_from_db()
    assert not owner.two_factor_enabled and not RecoveryCode.objects.filter(user=owner).exists()
    assert "Set up two-factor" in owner_page.get("/dashboard/security").content.decode()


def test_the_security_page_says_when_no_codes_are_left(owner, owner_page):
    factories.enable_two_factor(owner)
    RecoveryCode.objects.filter(user=owner).update(used_at=RecoveryCode.objects.first().created_at)
    assert "No recovery codes left." in owner_page.get("/dashboard/security").content.decode()


# --- change password -------------------------------------------------------------------------------

def _change(client: Client, current: str = factories.PASSWORD, new: str = NEW_PASSWORD, confirm: str | None = None):
    register_secret(new)
    return client.post("/dashboard/security/password", {
        "current_password": current, "password": new, "password_confirm": new if confirm is None else confirm})


def test_changing_the_password_ends_every_other_session_and_keeps_this_one(owner, page_client):
    this_browser, other_browser = page_client(owner), page_client(owner)
    jwt = factories.session_token(owner)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {jwt}")
    assert api.get("/v1/auth/me").status_code == 200
    response = _change(this_browser)
    assert response.status_code == 302 and response["Location"] == "/dashboard/security"
    assert this_browser.get("/dashboard").status_code == 200  # this session stays signed in
    assert other_browser.get("/dashboard")["Location"].startswith("/login")  # another browser is out
    refused = api.get("/v1/auth/me")  # a JWT issued before the change, even within the same second
    assert refused.status_code == 401 and refused.json()["error"] == "authentication_required"
    login = APIClient().post("/v1/auth/login", {"email": owner.email, "password": NEW_PASSWORD}, format="json")
    fresh = APIClient()
    fresh.credentials(HTTP_AUTHORIZATION=f"Bearer {login.json()['token']}")
    assert fresh.get("/v1/auth/me").status_code == 200  # a session from after the change works


def test_a_password_change_is_mailed_and_audited(owner, owner_page):
    _change(owner_page)
    assert [m.subject for m in mail.outbox] == ["Your password was changed"]
    assert mail.outbox[0].to == [owner.email] and NEW_PASSWORD not in mail.outbox[0].body
    event = AuditEvent.objects.for_org(owner.org).get(type="account.password_changed")
    assert event.metadata == {"actor_id": str(owner.pk)}
    assert Client().post("/login", {"email": owner.email, "password": NEW_PASSWORD})["Location"] == "/dashboard"


def test_a_wrong_current_password_is_a_form_error_and_changes_nothing(owner, page_client):
    client, other = page_client(owner), page_client(owner)
    response = _change(client, current="not my password")
    assert response.status_code == 400
    assert "Your current password is not right." in response.content.decode()
    owner.refresh_from_db()
    assert owner.check_password(factories.PASSWORD) and owner.sessions_valid_after is None
    assert other.get("/dashboard").status_code == 200 and mail.outbox == []


@pytest.mark.parametrize(("new", "confirm", "message"), [
    ("short", None, "at least 8"), ("x" * 129, None, "at most 128"), (NEW_PASSWORD, "something-else", "differ")])
def test_the_new_password_is_checked_as_at_sign_up(owner, owner_page, new, confirm, message):
    response = _change(owner_page, new=new, confirm=confirm)
    assert response.status_code == 400 and message in response.content.decode()
    owner.refresh_from_db()
    assert owner.check_password(factories.PASSWORD)


def test_password_attempts_count_on_the_sign_in_limit_per_address(owner, owner_page, settings):
    settings.AUTH_RATE_PER_MINUTE = 2
    for _ in range(2):
        assert _change(owner_page, current="guess").status_code == 400
    refused = _change(owner_page)
    assert refused.status_code == 429 and refused["Retry-After"]
    owner.refresh_from_db()
    assert owner.check_password(factories.PASSWORD)


def test_a_get_on_logout_signs_nobody_out_and_says_where_the_button_is(owner, owner_page):
    landed = owner_page.get("/logout", follow=True)
    assert landed.redirect_chain == [("/dashboard", 302)] and "Sign out button" in landed.content.decode()
    assert Client().get("/logout")["Location"] == "/login"
