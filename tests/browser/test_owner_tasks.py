"""Every owner task from sign-up to revoke in Chromium, with the reloads, Back buttons and bookmarks a
person uses: no page answers "method not allowed", and no reload repeats an action.

An owner signs up, verifies the email, signs out and in, creates an API key (reloads the page that shows
it: no second key, the value gone; goes Back; opens the create address as a bookmark), registers a
generator, signs a photo and downloads it (the bytes verify), reads the records, asks for the Growth plan
(staff apply it in the admin, in a browser of their own), invites a member who accepts in a second
browser and lands on the dashboard signed in, adds a webhook endpoint (its secret shown once), and
revokes the key and the generator, opening their revoke addresses directly first. Each page is checked
by `look` (nothing wider than 375 px, every control labelled) and screenshotted at 375 and 1440 px.
"""

import re
from pathlib import Path

import pytest
from django.core import mail
from django.test import Client

from accounts.models import ApiKey, Organization, User
from billing.models import PlanRequest
from dashboard.models import SignedFile
from generators.models import Generator
from provenance.models import Record
from teams.models import Invite
from tests.browser.navigation import follow, messages, nav, path
from tests.browser.page_checks import look
from tests.browser.screenshots import shoot
from tests.media import photo_bytes
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db(transaction=True)

OWNER = "owner@tasks.example"
MEMBER = "member@tasks.example"
STAFF = "staff@tasks.example"
PASSWORD = "a-long-password-1"
ORG = "Tasks Labs"
GENERATOR = "painter-v2"


def test_an_owner_does_every_task_with_reloads_back_and_bookmarks(page, new_page):
    _sign_up(page)
    _sign_out_and_in(page)
    key_page = _create_a_key_and_reload_it(page)
    _register_a_generator(page)
    record_id = _sign_and_download(page)
    _read_the_records(page, record_id)
    _ask_for_growth_which_staff_apply(page, new_page())
    _invite_a_member_who_accepts(page, new_page())
    _add_a_webhook_and_reload_it(page)
    _revoke_the_key(page, key_page)
    _revoke_the_generator(page)


def _sign_up(page) -> None:
    page.goto("/signup")
    page.get_by_label("Organization name").fill(ORG)
    page.get_by_label("Email").fill(OWNER)
    page.get_by_label("Password (").fill(PASSWORD)
    page.get_by_label("Repeat the password").fill(PASSWORD)
    follow(page, page.get_by_role("button", name="Create the organization"))
    assert page.inner_text("h1") == ORG
    page.goto(re.search(r"https?://[^/\s]+(/verify-email\S+)", mail.outbox[-1].body).group(1))
    follow(page, page.get_by_role("button", name="Confirm my email address"))
    assert User.objects.get(email=OWNER).email_verified


def _sign_out_and_in(page) -> None:
    page.goto("/logout")  # typed: nothing happens, the page says where signing out lives
    assert path(page) == "/dashboard" and "use the Sign out button" in messages(page)
    follow(page, page.get_by_role("button", name="Sign out"))
    page.goto("/dashboard/api-keys")  # a bookmark while signed out: the sign-in, then back to it
    assert path(page).startswith("/login?next=")
    page.get_by_label("Email").fill(OWNER)
    page.get_by_label("Password").fill(PASSWORD)
    follow(page, page.get_by_role("button", name="Sign in"))
    assert path(page) == "/dashboard/api-keys"


def _create_a_key_and_reload_it(page) -> str:
    page.get_by_label("Name (what uses this key)").fill("ci")
    follow(page, page.get_by_role("button", name="Create an organization key"))
    key = page.get_by_label("API key").input_value()
    assert key.startswith("svc_key_") and key not in page.url
    look(page, "tasks-01-key-created")
    created_page = path(page)

    page.reload()
    assert "was already shown" in page.inner_text("main") and key not in page.content()
    look(page, "tasks-02-key-already-shown")
    page.go_back()
    assert path(page) == "/dashboard/api-keys"
    page.go_forward()
    assert path(page) == created_page and key not in page.content()
    assert ApiKey.objects.filter(name="ci").count() == 1

    page.goto("/dashboard/api-keys/new")  # the form's action, opened as a bookmark: no key, the form
    assert path(page) == "/dashboard/api-keys" and "Create a key with the form" in messages(page)
    assert ApiKey.objects.count() == 1
    look(page, "tasks-03-api-keys")
    return created_page


def _register_a_generator(page) -> None:
    nav(page, "Generators")
    page.get_by_label("Name").fill(GENERATOR)
    follow(page, page.get_by_role("button", name="Register"))
    assert f"Generator {GENERATOR} is registered." in messages(page)
    page.reload()
    assert Generator.objects.count() == 1
    generator = Generator.objects.get()
    page.goto(f"/dashboard/generators/{generator.pk}/rotate")  # a bookmark of the rotate form's action
    assert path(page) == f"/dashboard/generators/{generator.pk}" and "Rotate the key" in messages(page)
    assert generator.keys.count() == 1
    look(page, "tasks-04-generator")


def _sign_and_download(page) -> str:
    photo = photo_bytes("astronaut", "jpeg")
    nav(page, "Sign")
    page.get_by_label("Generator").select_option(label=GENERATOR)
    page.get_by_label("Model name").fill("sdxl-turbo")
    page.get_by_label("File to sign").set_input_files(
        files={"name": "moon walk.jpg", "mimeType": "image/jpeg", "buffer": photo})
    follow(page, page.get_by_role("button", name="Sign and download"))
    assert page.inner_text("h1") == "Signed" and "data:" not in page.content()
    record = Record.objects.get()
    main = page.inner_text("main")
    assert str(record.pk) in main and page.get_by_label("Token").input_value().startswith("svc_")
    look(page, "tasks-05-signed")

    with page.expect_download() as download:
        page.get_by_role("link", name="Download signed-moon walk.jpg").click()
    assert download.value.suggested_filename == "signed-moon walk.jpg"
    signed = Path(download.value.path()).read_bytes()
    assert signed[:3] == b"\xff\xd8\xff" and signed != photo
    verified = Client().post("/v1/verify", {"content": _upload(signed)}).json()
    assert verified["authentic"] and verified["record_id"] == str(record.pk)

    page.reload()  # the result page again: no second signature
    page.go_back()
    assert path(page) == "/dashboard/sign"
    assert Record.objects.count() == 1 and SignedFile.objects.count() == 1
    return str(record.pk)


def _upload(content: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("signed.jpg", content)


def _read_the_records(page, record_id: str) -> None:
    nav(page, "Records")
    assert record_id in page.inner_text("main")
    look(page, "tasks-06-records")


def _ask_for_growth_which_staff_apply(page, staff) -> None:
    nav(page, "Billing")
    follow(page, page.get_by_role("link", name="Choose Growth"))
    look(page, "tasks-07-billing-choose")
    page.get_by_label("annual").check()
    follow(page, page.get_by_role("button", name="Request this plan"))
    assert "is sent to billing@localhost" in messages(page)
    assert "Requested: the Growth plan, billed annual" in page.inner_text("#pending-request")
    page.reload()  # no second request, no second email
    assert PlanRequest.objects.count() == 1
    page.goto(f"/dashboard/billing/requests/{PlanRequest.objects.get().pk}/cancel")  # a bookmark: asks first
    assert page.inner_text("h1") == "Cancel your request for Growth?"
    look(page, "tasks-08-billing-cancel-confirm")
    follow(page, page.get_by_role("link", name="Cancel", exact=True))
    assert PlanRequest.objects.get().is_pending
    [email] = [message for message in mail.outbox if message.to == ["billing@localhost"]]
    look(page, "tasks-08-billing-pending")

    User.objects.create_superuser(STAFF, PASSWORD)
    staff.goto(re.search(r"https?://[^/\s]+(/admin/\S+)", email.body).group(1))
    staff.get_by_label("Email").fill(STAFF)
    staff.get_by_label("Password").fill(PASSWORD)
    follow(staff, staff.get_by_role("button", name="Log in"))
    assert "pending" in staff.inner_text("#content")
    staff.goto("/admin/billing/planrequest/?status__exact=pending")
    staff.locator("input[name=_selected_action]").first.check()
    staff.locator("select[name=action]").select_option(label="Apply the requested plan")
    follow(staff, staff.get_by_role("button", name="Go"))
    assert "Applied 1 request." in staff.inner_text(".messagelist")
    shoot(staff, "tasks-09-admin-plan-requests")  # Django's admin: its own markup, not checked by `look`

    page.reload()
    assert "Growth (current)" in page.inner_text("main") and page.locator("#pending-request").count() == 0
    org = Organization.objects.get(name=ORG)
    assert (org.plan, org.billing_interval) == ("growth", "annual")


def _invite_a_member_who_accepts(page, member) -> None:
    nav(page, "Team")
    page.get_by_label("Email").fill(MEMBER)
    page.get_by_label("Role:", exact=True).select_option("admin")
    follow(page, page.get_by_role("button", name="Send the invite"))
    page.reload()
    assert len([m for m in mail.outbox if m.to == [MEMBER]]) == 1  # a reload sends no second invite
    look(page, "tasks-10-team-invited")
    page.goto("/dashboard/team/invites")  # the invite form's action, bookmarked: the team page
    assert path(page) == "/dashboard/team" and "Send an invite with the form" in messages(page)
    page.goto(f"/dashboard/team/invites/{Invite.objects.get().pk}/cancel")  # asks first, cancels nothing
    look(page, "tasks-10-invite-cancel-confirm")
    page.go_back()
    assert Invite.objects.get().accepted_at is None

    member.goto(re.search(r"https?://[^/\s]+(/invite/\S+)", mail.outbox[-1].body).group(1))
    member.get_by_label("Choose a password").fill(PASSWORD)
    member.get_by_label("Repeat it").fill(PASSWORD)
    follow(member, member.get_by_role("button", name="Accept the invite"))
    assert path(member) == "/dashboard" and member.inner_text("h1") == ORG
    assert "you joined as admin" in messages(member)
    look(member, "tasks-11-member-landed")
    member.go_back()  # the used invite: a page that says so, not an error
    assert "not valid" in member.inner_text("h1")
    nav(member, "Team")
    assert MEMBER in member.inner_text("table")


def _add_a_webhook_and_reload_it(page) -> None:
    nav(page, "Webhooks")
    # A public literal address (no DNS), for an event this walk never causes: nothing is ever sent.
    page.get_by_label("Endpoint URL").fill("https://93.184.216.34/hook")
    page.get_by_label("quota.limit").check()
    follow(page, page.get_by_role("button", name="Add the endpoint"))
    secret = page.get_by_label("Signing secret").input_value()
    assert secret.startswith("whsec_")
    look(page, "tasks-12-webhook-created")
    page.reload()
    assert secret not in page.content() and "already shown" in page.inner_text("main")
    assert WebhookEndpoint.objects.count() == 1
    endpoint = WebhookEndpoint.objects.get()
    page.goto(f"/dashboard/webhooks/{endpoint.pk}/status")  # a bookmark of the enable/disable action
    assert path(page) == f"/dashboard/webhooks/{endpoint.pk}" and WebhookEndpoint.objects.get().status == "active"
    look(page, "tasks-13-webhook")


def _revoke_the_key(page, key_page: str) -> None:
    key = ApiKey.objects.get(name="ci")
    page.goto(f"/dashboard/api-keys/{key.pk}/revoke")  # a bookmark: the confirmation, nothing revoked yet
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None
    look(page, "tasks-14-key-revoke")
    follow(page, page.get_by_role("button", name="Revoke the key"))
    assert f"Key {key.preview} is revoked." in messages(page)
    page.go_back()  # the confirmation of a revoked key: not found, as a page
    assert page.inner_text("h1") == "Not found"
    page.goto(key_page)
    assert "It is revoked." in page.inner_text("main")


def _revoke_the_generator(page) -> None:
    generator = Generator.objects.get()
    page.goto(f"/dashboard/generators/{generator.pk}/revoke")
    page.get_by_label(f"Type {GENERATOR} to confirm").fill(GENERATOR)
    follow(page, page.get_by_role("button", name="Revoke for good"))
    assert f"Generator {GENERATOR} is revoked" in messages(page)
    page.reload()
    assert Generator.objects.get().status == "revoked"
    look(page, "tasks-15-generator-revoked")
