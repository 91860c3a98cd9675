"""The dashboard end to end in Chromium against the live server, every step through the pages.

A new owner signs up, verifies the email from the outbox link, turns on 2FA with the secret read from the
page (codes from pyotp), signs in again with the keyboard and a code, creates an API key, registers a
generator, signs a real photo and downloads it; a visitor drops the download on the public verify page and
reads "high"; the owner invites a member, who accepts in a browser of their own and lands on the
dashboard signed in; the owner changes the member's role, revokes the generator with the typed
confirmation, and the visitor's verdict turns invalid.
Then every other dashboard page is opened. Each page is checked (`look`: nothing wider than 375 px, a
label on every control) and screenshotted at 375 and 1440 px, named in the flow's order.
"""

import re
import time
from pathlib import Path

import pyotp
import pytest
from django.core import mail

from accounts.models import Organization, User
from billing.services import plan_change
from tests.browser.navigation import follow, messages, nav
from tests.browser.page_checks import look
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db(transaction=True)

OWNER = "owner@acme.example"
MEMBER = "member@acme.example"
PASSWORD = "a-long-password-1"
GENERATOR = "diffusion-v3"
SIGNED_NAME = "signed-astronaut.jpg"


def test_an_owner_goes_from_sign_up_to_a_revoked_generator_whose_file_stops_verifying(page, new_page):
    visitor = new_page()
    _sign_up_and_verify_the_email(page)
    secret = _turn_on_two_factor(page)
    _sign_in_with_the_keyboard(page, secret)
    _create_an_api_key(page)
    _register_a_generator(page)
    signed = _sign_a_photo(page)
    verdict = _verify(visitor, signed, "flow-13-verify-high")
    assert "This file is exactly the content that Acme Labs signed" in verdict and "Confidence: high" in verdict

    # Staff move the organization to Growth (the admin's plan form, tested in test_admin.py): the admin
    # role and webhooks need it.
    plan_change(org=Organization.objects.get(name="Acme Labs"), plan="growth", actor="staff@example.com")
    _invite_a_member_who_accepts(page, new_page())
    _change_the_members_role(page)
    _revoke_the_generator(page)
    verdict = _verify(visitor, signed, "flow-22-verify-revoked")
    assert "A record says that Acme Labs signed this content" in verdict and "has since been revoked" in verdict
    assert "The record's signature does not check out, or its generator was revoked." in verdict
    assert "Signature: not valid: the generator was revoked." in verdict and "Confidence: high" not in verdict

    _open_every_other_page(page, visitor)


def _link_path(message) -> str:
    """The path of the link in a mail (its host is PUBLIC_BASE_URL, not the live server)."""
    return re.search(r"https?://[^/\s]+(/\S+)", message.body).group(1)


def _sign_up_and_verify_the_email(page) -> None:
    page.goto("/signup")
    look(page, "flow-01-signup")
    page.get_by_label("Organization name").fill("Acme Labs")
    page.get_by_label("Email").fill(OWNER)
    page.get_by_label("Password (").fill(PASSWORD)
    page.get_by_label("Repeat the password").fill(PASSWORD)
    follow(page, page.get_by_role("button", name="Create the organization"))
    assert page.inner_text("h1") == "Acme Labs"
    assert "We sent a link to verify your email" in messages(page)
    look(page, "flow-02-overview-unverified")

    link = _link_path(mail.outbox[-1])
    assert mail.outbox[-1].to == [OWNER] and link.startswith("/verify-email?token=")
    page.goto(link)
    look(page, "flow-03-verify-email")
    follow(page, page.get_by_role("button", name="Confirm my email address"))
    assert "Your email address is verified" in page.inner_text(".ok")
    look(page, "flow-04-verify-email-done")
    assert User.objects.get(email=OWNER).email_verified


def _turn_on_two_factor(page) -> str:
    """Set up 2FA from the Security page; returns the secret read from the page."""
    page.goto("/dashboard")
    nav(page, "Security")
    look(page, "flow-05-security-off")
    follow(page, page.get_by_role("button", name="Set up two-factor sign-in"))
    secret = page.get_by_label("Secret (for manual entry)").input_value()
    assert page.locator(".qr svg").count() == 1
    look(page, "flow-06-security-setup")
    page.get_by_label("6-digit code").fill(pyotp.TOTP(secret).now())
    follow(page, page.get_by_role("button", name="Turn two-factor sign-in on"))
    assert "Two-factor sign-in is on." in messages(page)
    look(page, "flow-07-security-on")
    return secret


def _tab_to(page, element_id: str) -> None:
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.id") == element_id:
            return
    raise AssertionError(f"Tab never reached #{element_id}")


def _sign_in_with_the_keyboard(page, secret: str) -> None:
    """Sign out, then sign in again with Tab, typing and Enter only, and a code for the second step."""
    follow(page, page.get_by_role("button", name="Sign out"))
    assert "You are signed out." in messages(page)
    look(page, "flow-08-login")
    page.keyboard.press("Tab")  # the first stop is the skip link, shown when focused
    assert page.evaluate("() => document.activeElement.className") == "skip"
    assert page.locator(".skip").bounding_box()["x"] >= 0
    _tab_to(page, "id_email")
    page.keyboard.type(OWNER)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url("**/login/2fa")
    look(page, "flow-09-login-2fa")
    _tab_to(page, "id_otp")
    # django-otp takes each time step's code once: enabling spent this step's, so the next step's
    # code (within its tolerance of one step) signs in without waiting half a minute.
    page.keyboard.type(pyotp.TOTP(secret).at(time.time() + 30))
    page.keyboard.press("Enter")
    page.wait_for_url("**/dashboard")
    assert page.inner_text("h1") == "Acme Labs"


def _create_an_api_key(page) -> None:
    nav(page, "API keys")
    page.get_by_label("Name (what uses this key)").fill("ci")
    follow(page, page.get_by_role("button", name="Create an organization key"))
    key = page.get_by_label("API key").input_value()
    assert key.startswith("svc_key_")
    look(page, "flow-10-key-created")
    follow(page, page.get_by_role("link", name="Done, back to the keys"))
    assert "ci" in page.inner_text("table")


def _register_a_generator(page) -> None:
    nav(page, "Generators")
    page.get_by_label("Name").fill(GENERATOR)
    follow(page, page.get_by_role("button", name="Register"))
    assert f"Generator {GENERATOR} is registered." in messages(page)
    assert "server-managed" in page.inner_text("main")
    look(page, "flow-11-generator")


def _sign_a_photo(page) -> bytes:
    """Sign a real photo on the Sign page; returns the bytes of the downloaded signed file."""
    photo = photo_bytes("astronaut", "jpeg")
    nav(page, "Sign")
    page.get_by_label("Generator").select_option(label=GENERATOR)
    page.get_by_label("Model name").fill("sdxl-turbo")
    page.get_by_label("File to sign").set_input_files(
        files={"name": "astronaut.jpg", "mimeType": "image/jpeg", "buffer": photo})
    look(page, "flow-12-sign")
    follow(page, page.get_by_role("button", name="Sign and download"))
    assert page.inner_text("h1") == "Signed"
    look(page, "flow-12-signed")
    with page.expect_download() as download:
        page.get_by_role("link", name=f"Download {SIGNED_NAME}").click()  # an attachment: no navigation
    assert download.value.suggested_filename == SIGNED_NAME
    signed = Path(download.value.path()).read_bytes()
    assert signed[:3] == b"\xff\xd8\xff" and signed != photo
    return signed


def _verify(visitor, content: bytes, shot: str) -> str:
    """Drop `content` on the public verify page; returns the verdict's text."""
    visitor.goto("/verify")
    visitor.get_by_label("File to check").set_input_files(
        files={"name": SIGNED_NAME, "mimeType": "image/jpeg", "buffer": content})
    follow(visitor, visitor.get_by_role("button", name="Verify"))
    verdict = visitor.inner_text(".verdict")
    look(visitor, shot)
    return verdict


def _invite_a_member_who_accepts(page, member) -> None:
    nav(page, "Team")
    look(page, "flow-14-team")
    page.get_by_label("Email").fill(MEMBER)
    page.get_by_label("Role:", exact=True).select_option("user")
    follow(page, page.get_by_role("button", name="Send the invite"))
    assert f"Invite sent to {MEMBER}" in messages(page)
    look(page, "flow-15-team-invited")

    link = _link_path(mail.outbox[-1])
    assert mail.outbox[-1].to == [MEMBER] and link.startswith("/invite/")
    member.goto(link)
    look(member, "flow-16-invite")
    member.get_by_label("Choose a password").fill(PASSWORD)
    member.get_by_label("Repeat it").fill(PASSWORD)
    follow(member, member.get_by_role("button", name="Accept the invite"))
    # Accepting signs the new member in and lands on the dashboard.
    assert member.url.endswith("/dashboard") and member.inner_text("h1") == "Acme Labs"
    assert "you joined as user" in messages(member)
    look(member, "flow-17-invite-accepted")
    nav(member, "Team")
    assert member.get_by_role("button", name="Send the invite").count() == 0  # users do not invite
    look(member, "flow-18-team-as-member")


def _change_the_members_role(page) -> None:
    page.reload()
    role = page.get_by_label(f"Role of {MEMBER}")
    role.select_option("admin")
    follow(page, page.locator("form.inline", has=role).get_by_role("button", name="Change"))
    assert f"{MEMBER} is now admin." in messages(page)
    look(page, "flow-19-team-role-changed")
    assert User.objects.get(email=MEMBER).role == "admin"


def _revoke_the_generator(page) -> None:
    nav(page, "Generators")
    follow(page, page.get_by_role("link", name=GENERATOR))
    follow(page, page.get_by_role("link", name="Revoke this generator"))
    look(page, "flow-20-generator-revoke")
    page.get_by_label(f"Type {GENERATOR} to confirm").fill(GENERATOR)
    follow(page, page.get_by_role("button", name="Revoke for good"))
    assert f"Generator {GENERATOR} is revoked" in messages(page)
    assert "its signatures no longer verify" in page.inner_text("dl")
    look(page, "flow-21-generator-revoked")


def _open_every_other_page(page, visitor) -> None:
    """The pages the flow did not pass through, with the flow's data in them."""
    for name, shot in [("Overview", "overview"), ("Records", "records"), ("Audit log", "audit"),
                       ("Billing", "billing"), ("API keys", "api-keys"), ("Generators", "generators"),
                       ("Sign", "sign-no-generator")]:
        nav(page, name)
        look(page, f"page-{shot}")
    page.goto("/dashboard/audit")
    assert "changed the role of" in page.inner_text("table")
    page.goto("/dashboard/api-keys")
    follow(page, page.get_by_role("link", name=re.compile("^Revoke")).first)
    look(page, "page-api-key-revoke")
    _webhook_pages(page)
    _team_pages(page)
    page.goto("/dashboard/generators/00000000-0000-0000-0000-000000000000")
    look(page, "page-not-found")
    for path, shot in [("/forgot-password", "forgot-password"), ("/resend-verification", "resend-verification")]:
        visitor.goto(path)
        look(visitor, f"page-{shot}")
    visitor.get_by_label("Email").fill(OWNER)
    follow(visitor, visitor.get_by_role("button", name="Send a new link"))
    look(visitor, "page-email-sent")


def _webhook_pages(page) -> None:
    nav(page, "Webhooks")
    look(page, "page-webhooks")
    page.get_by_label("Endpoint URL").fill("https://93.184.216.34/hook")
    page.get_by_label("record.created").check()
    follow(page, page.get_by_role("button", name="Add the endpoint"))
    assert page.inner_text("h1") == "Endpoint added"
    look(page, "page-webhook-created")
    follow(page, page.get_by_role("link", name="Done"))
    look(page, "page-webhook")
    follow(page, page.get_by_role("link", name="Delete this endpoint"))
    look(page, "page-webhook-delete")


def _team_pages(page) -> None:
    nav(page, "Team")
    follow(page, page.get_by_role("link", name=f"personal keys of {MEMBER}"))
    look(page, "page-member-keys")
    follow(page, page.get_by_role("button", name=f"Create a personal key for {MEMBER}"))
    look(page, "page-member-key-created")
    nav(page, "Team")
    follow(page, page.get_by_role("link", name=f"personal keys of {MEMBER}"))
    follow(page, page.get_by_role("link", name=re.compile("^Revoke")))
    look(page, "page-member-key-revoke")
    nav(page, "Team")
    follow(page, page.get_by_role("link", name=f"Remove {MEMBER}"))
    look(page, "page-member-remove")
