"""Sign up, log in with and without the 2FA step, log out, forgotten password, verification emails."""

import re
import time

import pyotp
import pytest
from django.core import mail
from django.test import Client

from accounts import services
from accounts.models import User
from tests import factories

pytestmark = pytest.mark.django_db


def _login(client: Client, email: str, password: str = factories.PASSWORD, **extra):
    return client.post("/login", {"email": email, "password": password, **extra})


def _next_code(totp: pyotp.TOTP) -> str:
    # The code of the next 30-second step: the one used to enable 2FA is spent (django-otp refuses reuse).
    return totp.at(time.time() + 30)


def test_the_login_page_has_a_labelled_form_with_a_csrf_token():
    page = Client().get("/login")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="csrfmiddlewaretoken"' in html
    for field in ("email", "password"):
        assert f'<label for="id_{field}"' in html


def test_a_correct_password_signs_in_and_opens_the_overview(owner):
    client = Client()
    response = _login(client, owner.email)
    assert response.status_code == 302 and response["Location"] == "/dashboard"
    assert client.get("/dashboard").status_code == 200


def test_login_goes_back_to_a_local_next_page_only(owner):
    assert _login(Client(), owner.email, next="/dashboard/records")["Location"] == "/dashboard/records"
    assert _login(Client(), owner.email, next="https://evil.example/")["Location"] == "/dashboard"


def test_a_wrong_password_is_refused_without_telling_which_part_was_wrong(owner):
    response = _login(Client(), owner.email, password="wrong password")
    assert response.status_code == 200
    assert "Email or password is incorrect." in response.content.decode()
    unknown = _login(Client(), "nobody@example.com")
    assert "Email or password is incorrect." in unknown.content.decode()


def test_pages_send_anonymous_visitors_to_the_login_page():
    response = Client().get("/dashboard/records?page=2")
    assert response.status_code == 302
    assert response["Location"].startswith("/login?next=/dashboard/records")


def test_with_2fa_the_login_asks_for_a_code_then_signs_in(owner):
    totp, _ = factories.enable_two_factor(owner)
    client = Client()
    response = _login(client, owner.email)
    assert response["Location"] == "/login/2fa"
    assert client.get("/dashboard")["Location"].startswith("/login")  # not signed in yet
    assert client.get("/login/2fa").status_code == 200
    done = client.post("/login/2fa", {"otp": _next_code(totp)})
    assert done.status_code == 302 and done["Location"] == "/dashboard"
    assert client.get("/dashboard").status_code == 200


def test_a_wrong_code_keeps_the_person_at_the_code_step_with_a_message_and_a_new_challenge(owner):
    totp, _ = factories.enable_two_factor(owner)
    client = Client()
    _login(client, owner.email)
    first = client.session["dashboard_2fa_challenge"]
    wrong = "000000" if totp.now() != "000000" else "111111"
    response = client.post("/login/2fa", {"otp": wrong}, follow=True)
    assert response.redirect_chain == [("/login/2fa", 302)]
    assert "That code is not right." in response.content.decode()
    assert client.session["dashboard_2fa_challenge"] != first  # the wrong code burned the first one
    owner.refresh_from_db()
    assert owner.failed_otp_count == 1  # and counted toward the lockout
    done = client.post("/login/2fa", {"otp": _next_code(totp)})
    assert done["Location"] == "/dashboard"
    assert client.get("/dashboard").status_code == 200


def test_five_wrong_codes_lock_the_account_with_429(owner):
    totp, _ = factories.enable_two_factor(owner)
    wrong = "000000" if totp.now() != "000000" else "111111"
    for _ in range(5):
        client = Client()
        _login(client, owner.email)
        client.post("/login/2fa", {"otp": wrong})
    client = Client()
    _login(client, owner.email)
    locked = client.post("/login/2fa", {"otp": _next_code(totp)})
    assert locked.status_code == 429 and "Retry-After" in locked


def test_login_is_limited_per_client_ip_like_the_api(owner, settings):
    settings.AUTH_RATE_PER_MINUTE = 3
    client = Client()
    for _ in range(3):
        assert _login(client, owner.email, password="wrong password").status_code == 200
    refused = _login(client, owner.email)
    assert refused.status_code == 429 and refused["Retry-After"]


def test_signup_creates_the_organization_signs_in_and_mails_the_verification_link():
    client = Client()
    response = client.post("/signup", {"org_name": "Acme", "email": "New@Example.com", "password": "a-long-password",
                                       "password_confirm": "a-long-password"})
    assert response.status_code == 302
    user = User.objects.select_related("org").get(email="new@example.com")
    assert (user.role, user.org.name, user.org.plan, user.email_verified) == ("owner", "Acme", "free", False)
    assert "/verify-email?token=" in mail.outbox[0].body
    assert "Acme" in client.get("/dashboard").content.decode()


def test_signup_refuses_a_taken_email_short_passwords_and_mismatches(owner):
    client = Client()
    base = {"org_name": "Acme", "password": "a-long-password", "password_confirm": "a-long-password"}
    assert "already exists" in client.post("/signup", {**base, "email": owner.email}).content.decode()
    short = client.post("/signup", {**base, "email": "a@example.com", "password": "short", "password_confirm": "short"})
    assert short.status_code == 200 and "at least 8" in short.content.decode()
    differ = client.post("/signup", {**base, "email": "a@example.com", "password_confirm": "another-password"})
    assert "differ" in differ.content.decode()
    assert not User.objects.filter(email="a@example.com").exists()


def test_logout_is_a_post_that_ends_the_session(owner, page_client):
    client = page_client(owner)
    opened = client.get("/logout")  # typed or bookmarked: a page, and still signed in
    assert opened.status_code == 302 and opened["Location"] == "/dashboard"
    assert client.get("/dashboard").status_code == 200
    assert client.post("/logout")["Location"] == "/login"
    assert client.get("/dashboard").status_code == 302


def test_forgot_password_mails_a_link_whose_page_sets_the_new_password(owner):
    client = Client()
    page = client.post("/forgot-password", {"email": owner.email})
    assert page.status_code == 200 and "Check your email" in page.content.decode()
    token = re.search(r"/reset-password\?token=([\w-]+)", mail.outbox[0].body).group(1)
    done = client.post("/reset-password", {"token": token, "password": "brand-new-pass",
                                           "password_confirm": "brand-new-pass"})
    assert "password is changed" in done.content.decode()
    assert _login(Client(), owner.email, password="brand-new-pass")["Location"] == "/dashboard"


def test_forgot_password_answers_the_same_for_an_unknown_email():
    page = Client().post("/forgot-password", {"email": "nobody@example.com"})
    assert page.status_code == 200 and "Check your email" in page.content.decode()
    assert mail.outbox == []


def test_a_password_reset_ends_existing_page_sessions(owner, page_client):
    client = page_client(owner)
    services.password_forgot(email=owner.email)
    token = re.search(r"/reset-password\?token=([\w-]+)", mail.outbox[0].body).group(1)
    services.password_reset(token=token, password="brand-new-pass")
    assert client.get("/dashboard").status_code == 302


def test_resend_verification_mails_a_new_link_that_the_verify_page_completes():
    user = factories.make_user(org=factories.make_org(), verified=False)
    client = Client()
    assert "Check your email" in client.post("/resend-verification", {"email": user.email}).content.decode()
    token = re.search(r"/verify-email\?token=([\w-]+)", mail.outbox[0].body).group(1)
    assert client.get(f"/verify-email?token={token}").status_code == 200
    client.post("/verify-email", {"token": token})
    user.refresh_from_db()
    assert user.email_verified


def test_the_emailed_link_pages_use_the_dashboard_layout():
    for url in ("/verify-email?token=x", "/reset-password?token=x"):
        html = Client().get(url).content.decode()
        assert "/static/dashboard/app.css" in html and "<style" not in html


# --- 2FA setup ---------------------------------------------------------------------------------------

def test_2fa_setup_shows_a_server_drawn_qr_code_and_the_secret_then_enables(owner, page_client):
    client = page_client(owner)
    assert "Set up two-factor" in client.get("/dashboard/security").content.decode()
    assert client.post("/dashboard/security/2fa/setup")["Location"] == "/dashboard/security"
    html = client.get("/dashboard/security").content.decode()
    secret = re.search(r'id="totp-secret"[^>]*>([A-Z2-7=]+)<', html).group(1)
    assert "<svg" in html and "<path" in html and "style=" not in html  # drawn on the server, CSP-clean
    assert client.post("/dashboard/security/2fa/enable", {"otp": "12"}).status_code == 302
    owner.refresh_from_db()
    assert not owner.two_factor_enabled
    client.post("/dashboard/security/2fa/enable", {"otp": pyotp.TOTP(secret).now()})
    owner.refresh_from_db()
    assert owner.two_factor_enabled
    assert "Turn two-factor sign-in off" in client.get("/dashboard/security").content.decode()


def test_2fa_disable_needs_a_current_code(owner, page_client):
    totp, _ = factories.enable_two_factor(owner)
    client = page_client(owner)
    client.post("/dashboard/security/2fa/disable", {"otp": "000000" if totp.now() != "000000" else "111111"})
    owner.refresh_from_db()
    assert owner.two_factor_enabled
    client.post("/dashboard/security/2fa/disable", {"otp": _next_code(totp)})
    owner.refresh_from_db()
    assert not owner.two_factor_enabled


def test_the_login_page_sends_a_signed_in_member_to_the_overview(owner, page_client):
    assert page_client(owner).get("/login")["Location"] == "/dashboard"


@pytest.mark.parametrize("path", ["/reset-password", "/verify-email", "/invite/some-token", "/signup",
                                  "/forgot-password", "/resend-verification"])
def test_public_forms_count_per_client_ip_like_the_api_routes_they_mirror(path, settings):
    settings.AUTH_RATE_PER_MINUTE = 1
    client = Client()
    assert client.post(path, {"token": "x", "email": "a@example.com"}).status_code != 429
    assert client.post(path, {"token": "x", "email": "a@example.com"}).status_code == 429
