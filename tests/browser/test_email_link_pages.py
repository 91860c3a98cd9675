"""The pages behind the emailed links, in a real browser: the API sends the mail, Chromium follows its link."""

import re

import pytest
import requests
from django.core import mail

from accounts.models import User
from tests import factories
from tests.browser.screenshots import shoot

pytestmark = pytest.mark.django_db(transaction=True)


def _link_path(message) -> str:
    """The path and query of the link in the last mail (its host is PUBLIC_BASE_URL, not the live server)."""
    return re.search(r"https?://[^/\s]+(/\S+)", message.body).group(1)


def test_a_user_resets_the_password_in_the_browser_and_logs_in_with_it(page, live_server):
    user = factories.make_user(org=factories.make_org(), email="forgetful@example.com")
    asked = requests.post(f"{live_server.url}/v1/auth/forgot-password", json={"email": user.email}, timeout=10)
    assert asked.status_code == 200
    link = _link_path(mail.outbox[-1])
    assert link.startswith("/reset-password?token=")

    page.goto(link)
    shoot(page, "reset-password-form")
    page.fill("#password", "a-brand-new-password")
    page.fill("#password_confirm", "a-brand-new-password")
    page.click("button[type=submit]")
    page.wait_for_selector(".ok")
    assert "Your password is changed" in page.inner_text(".ok")
    shoot(page, "reset-password-done")

    login = {"email": user.email, "password": "a-brand-new-password"}
    logged_in = requests.post(f"{live_server.url}/v1/auth/login", json=login, timeout=10)
    assert logged_in.status_code == 200 and logged_in.json()["token"]
    old = requests.post(f"{live_server.url}/v1/auth/login", json={**login, "password": factories.PASSWORD}, timeout=10)
    assert old.status_code == 401


def test_mismatched_passwords_are_refused_on_the_page(page, live_server):
    user = factories.make_user(org=factories.make_org())
    requests.post(f"{live_server.url}/v1/auth/forgot-password", json={"email": user.email}, timeout=10)
    page.goto(_link_path(mail.outbox[-1]))
    page.fill("#password", "a-brand-new-password")
    page.fill("#password_confirm", "another-password")
    page.click("button[type=submit]")
    assert "The two passwords differ." in page.inner_text(".error")
    shoot(page, "reset-password-mismatch")


def test_a_new_user_verifies_the_email_by_following_the_link(page, live_server):
    body = {"org_name": "Acme Labs", "email": "new@example.com", "password": "a-long-password"}
    registered = requests.post(f"{live_server.url}/v1/auth/register", json=body, timeout=10)
    assert registered.status_code == 201
    link = _link_path(mail.outbox[-1])
    assert link.startswith("/verify-email?token=")

    page.goto(link)
    assert not User.objects.get(email="new@example.com").email_verified  # opening the link alone does nothing
    shoot(page, "verify-email-form")
    page.click("button[type=submit]")
    page.wait_for_selector(".ok")
    assert "Your email address is verified" in page.inner_text(".ok")
    shoot(page, "verify-email-done")
    assert User.objects.get(email="new@example.com").email_verified


def test_the_live_server_serves_static_files(page, live_server):
    response = page.goto("/admin/login/")
    assert response.status == 200
    css = page.request.get(f"{live_server.url}/static/admin/css/base.css")
    assert css.status == 200 and "text/css" in css.headers["content-type"]
    # The stylesheet is applied: the admin's header is styled, not the browser's default.
    assert page.eval_on_selector("#header", "e => getComputedStyle(e).display") == "flex"
    shoot(page, "admin-login")
