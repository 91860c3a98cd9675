"""Two-factor recovery codes and the password change in Chromium, every step through the pages.

An owner turns on 2FA and sees the ten recovery codes once (a reload shows none); signs out; at the code
step types a wrong code (stays there, with a message), then a recovery code (in); signs in again with the
same recovery code (told it was already used, still at the code step) and then another one; changes the
password, which signs out a second browser and keeps this one. Each page is checked (`look`) and
screenshotted at 375 and 1440 px.
"""

import re

import pyotp
import pytest
from django.core import mail

from tests import factories
from tests.browser.navigation import follow, messages
from tests.browser.page_checks import look
from tests.log_scan import register_secret

pytestmark = pytest.mark.django_db(transaction=True)

NEW_PASSWORD = "a-new-long-password"
CODE_SHAPE = re.compile(r"^[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}$")


def _sign_in(page, email: str, password: str = factories.PASSWORD) -> None:
    page.goto("/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    follow(page, page.get_by_role("button", name="Sign in"))


def _enter_code(page, code: str) -> None:
    page.get_by_label("Code from your authenticator app, or a recovery code").fill(code)
    follow(page, page.get_by_role("button", name="Verify and sign in"))


def test_recovery_codes_are_shown_once_work_once_and_a_password_change_signs_out_other_browsers(page, new_page):
    owner = factories.make_user(org=factories.make_org(name="Acme Labs"))
    other_browser = new_page()
    _sign_in(other_browser, owner.email)
    _sign_in(page, owner.email)
    codes = _turn_on_two_factor(page)
    _sign_out(page)

    _sign_in(page, owner.email)
    assert page.url.endswith("/login/2fa")
    wrong = "000000" if pyotp.TOTP(_secret_of(owner)).now() != "000000" else "111111"
    _enter_code(page, wrong)
    assert page.url.endswith("/login/2fa") and "That code is not right." in messages(page)
    look(page, "2fa-04-wrong-code")
    _enter_code(page, codes[0])
    assert page.url.endswith("/dashboard") and page.inner_text("h1") == "Acme Labs"
    _sign_out(page)

    _sign_in(page, owner.email)
    _enter_code(page, codes[0])
    assert page.url.endswith("/login/2fa") and "This recovery code was already used" in messages(page)
    look(page, "2fa-05-code-already-used")
    _enter_code(page, codes[1].upper())
    assert page.url.endswith("/dashboard")

    _change_the_password(page, other_browser)


def _secret_of(owner) -> str:
    import base64

    from django_otp.plugins.otp_totp.models import TOTPDevice

    return base64.b32encode(TOTPDevice.objects.get(user=owner).bin_key).decode()


def _turn_on_two_factor(page) -> list[str]:
    page.goto("/dashboard/security")
    follow(page, page.get_by_role("button", name="Set up two-factor sign-in"))
    secret = page.get_by_label("Secret (for manual entry)").input_value()
    page.get_by_label("6-digit code").fill(pyotp.TOTP(secret).now())
    follow(page, page.get_by_role("button", name="Turn two-factor sign-in on"))
    assert page.url.endswith("/dashboard/security/recovery-codes")
    assert "Two-factor sign-in is on." in messages(page)
    codes = page.get_by_label("Your 10 recovery codes").input_value().split()
    for code in codes:
        register_secret(code)
    assert len(set(codes)) == 10 and all(CODE_SHAPE.match(code) for code in codes)
    look(page, "2fa-01-recovery-codes")

    page.reload()
    assert page.locator("#recovery-codes").count() == 0
    assert "shown only once" in page.inner_text("main")
    assert not any(code in page.content() for code in codes)
    look(page, "2fa-02-recovery-codes-reloaded")

    page.goto("/dashboard/security")
    assert "10 of 10 recovery codes left" in page.inner_text("#codes-remaining")
    look(page, "2fa-03-security-on")
    page.go_back()  # Back to the page that showed them: asked again (no-store), so nothing shows
    assert page.url.endswith("/dashboard/security/recovery-codes")
    assert not any(code in page.content() for code in codes)
    return codes


def _sign_out(page) -> None:
    follow(page, page.get_by_role("button", name="Sign out"))
    assert "You are signed out." in messages(page)


def _change_the_password(page, other_browser) -> None:
    register_secret(NEW_PASSWORD)
    page.goto("/dashboard/security")
    assert "8 of 10 recovery codes left" in page.inner_text("#codes-remaining")
    page.locator("#id_current_password").fill("not my password")
    page.get_by_label("New password (").fill(NEW_PASSWORD)
    page.get_by_label("Repeat the new password").fill(NEW_PASSWORD)
    follow(page, page.get_by_role("button", name="Change password"))
    assert "Your current password is not right." in page.inner_text("main")
    look(page, "2fa-06-password-wrong-current")

    page.locator("#id_current_password").fill(factories.PASSWORD)
    page.get_by_label("New password (").fill(NEW_PASSWORD)
    page.get_by_label("Repeat the new password").fill(NEW_PASSWORD)
    follow(page, page.get_by_role("button", name="Change password"))
    assert "Your password is changed. Every other session is signed out." in messages(page)
    look(page, "2fa-07-password-changed")
    assert mail.outbox[-1].subject == "Your password was changed"

    page.goto("/dashboard")
    assert page.url.endswith("/dashboard")  # this browser stays signed in
    other_browser.goto("/dashboard")
    assert "/login" in other_browser.url  # the other one is signed out
    look(other_browser, "2fa-08-other-browser-signed-out")
