"""What every page shares: CSRF on every form, the security headers, the plan's rate limit, and a
bounded number of queries whatever the number of rows."""

import base64
import json
import uuid
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone

from accounts.services import personal_api_key_create
from audit.services import audit_write_many
from core import ratelimit
from provenance.services import Submission, record_submit
from teams.services import invite_send
from tests import factories
from webhooks.models import WebhookDelivery

pytestmark = pytest.mark.django_db

# Every form of the dashboard, with a body that would otherwise pass the form (ids are placeholders).
POSTS = [
    "/logout", "/dashboard/security/2fa/setup", "/dashboard/security/2fa/enable", "/dashboard/security/2fa/disable",
    "/dashboard/security/recovery-codes/new", "/dashboard/security/password",
    "/dashboard/api-keys/new", "/dashboard/api-keys/personal/new", "/dashboard/generators", "/dashboard/sign",
    "/dashboard/team/invites", "/dashboard/webhooks", "/dashboard/audit", "/dashboard/billing", "/dashboard",
]
PUBLIC_POSTS = ["/login", "/login/2fa", "/signup", "/forgot-password", "/resend-verification", "/verify",
                "/verify-email", "/reset-password"]


# Forms acting on one row: {generator}, {key}, {member}, {invite}, {endpoint}, {delivery} are real ids.
ROW_POSTS = [
    "/dashboard/api-keys/{key}/revoke", "/dashboard/api-keys/personal/{key}/revoke",
    "/dashboard/generators/{generator}/rotate", "/dashboard/generators/{generator}/revoke",
    "/dashboard/team/invites/{invite}/cancel", "/dashboard/team/members/{member}/role",
    "/dashboard/team/members/{member}/remove", "/dashboard/team/members/{member}/api-keys",
    "/dashboard/team/members/{member}/api-keys/{key}/revoke", "/dashboard/webhooks/{endpoint}/edit",
    "/dashboard/webhooks/{endpoint}/status", "/dashboard/webhooks/{endpoint}/delete",
    "/dashboard/webhooks/{endpoint}/deliveries/{delivery}/retry",
]


@pytest.mark.parametrize("path", POSTS)
def test_every_signed_in_form_refuses_a_post_without_the_csrf_token(path, owner, csrf_page_client):
    assert csrf_page_client(owner).post(path, {"name": "x"}).status_code == 403


@pytest.mark.parametrize("path", ROW_POSTS)
def test_every_form_on_a_row_refuses_a_post_without_the_csrf_token(path, busy_org, csrf_page_client):
    org, owner, generator, endpoint = busy_org
    ids = {"generator": generator.pk, "key": org.api_keys.first().pk, "member": org.users.exclude(pk=owner.pk)[0].pk,
           "invite": org.invites.first().pk, "endpoint": endpoint.pk, "delivery": endpoint.deliveries.first().pk}
    assert csrf_page_client(owner).post(path.format(**ids), {"role": "admin", "confirmation": generator.name,
                                                             "status": "disabled"}).status_code == 403
    generator.refresh_from_db()
    assert generator.status == "active" and org.users.count() == 6


@pytest.mark.parametrize("path", PUBLIC_POSTS)
def test_every_public_form_refuses_a_post_without_the_csrf_token(path):
    assert Client(enforce_csrf_checks=True).post(path, {"email": "a@example.com"}).status_code == 403


def test_a_post_with_the_token_from_the_page_passes(owner, csrf_page_client):
    client = csrf_page_client(owner)
    client.get("/dashboard/api-keys")
    token = client.cookies[django_settings.CSRF_COOKIE_NAME].value
    assert client.post("/dashboard/api-keys/new", {"name": "x", "csrfmiddlewaretoken": token}).status_code == 302


def test_pages_send_a_csp_without_inline_code_and_refuse_framing(owner_page):
    response = owner_page.get("/dashboard")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert response["X-Frame-Options"] == "DENY"
    html = response.content.decode()
    assert "<style" not in html and " style=" not in html and "<script>" not in html
    assert "<script src=\"/static/dashboard/app.js\" defer></script>" in html


def test_session_and_csrf_cookies_are_secure_outside_development():
    import os
    import subprocess
    import sys

    env = {**os.environ, "DEBUG": "false", "SECRET_KEY": "x" * 50, "KEY_ENCRYPTION_KEY": "k" * 44,
           "TOKEN_SIGNING_KEY": "t" * 44, "LOG_SIGNING_KEY": "l" * 44, "DJANGO_SETTINGS_MODULE": "config.settings"}
    code = "from django.conf import settings as s; print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE)"
    out = subprocess.run([sys.executable, "-c", "import django; django.setup(); " + code], env=env,
                         capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_pages_count_against_the_plans_per_minute_limit_shared_with_the_api(owner_page, org, key_client):
    ratelimit.hit(f"org:{org.pk}", 100, cost=99)
    assert owner_page.get("/dashboard")["X-RateLimit-Remaining"] == "0"
    refused = owner_page.get("/dashboard/records")
    assert refused.status_code == 429 and refused["Retry-After"]
    assert key_client(org).get("/v1/billing/usage").status_code == 429  # one counter for pages and API


# --- queries -----------------------------------------------------------------------------------------

@pytest.fixture
def busy_org():
    """A Growth organization with realistic numbers of every row a page lists."""
    org = factories.make_org(plan="growth")
    owner = factories.make_user(org=org, role="owner")
    members = [factories.make_user(org=org, role="user") for _ in range(5)]
    for n in range(4):
        invite_send(org=org, inviter=owner, email=f"invite{n}@example.com", role="user")
    for n in range(5):
        factories.make_api_key(org=org, name=f"key {n}")
    for member in [owner, *members]:
        personal_api_key_create(org=org, user=member, created_by=member)
    for n in range(4):
        factories.make_generator(org=org, name=f"server {n}")
    generator, seed = factories.make_client_generator(org=org)
    for n in range(30):
        body = factories.record_body(generator=generator, seed=seed, content=f"c {n}".encode())
        record_submit(org=org, submission=Submission(**{**body, "signature": base64.b64decode(body["signature"])}))
    audit_write_many(org=org, type="verify", metadatas=[{"n": n} for n in range(40)])
    endpoints = [factories.make_webhook(org=org, url=f"https://93.184.216.34/hook{n}")[0] for n in range(3)]
    WebhookDelivery.objects.bulk_create([
        WebhookDelivery(org=org, endpoint=endpoints[0], event="record.created", payload=json.dumps({"n": n}),
                        status="success", response_code=200) for n in range(30)])
    return org, owner, generator, endpoints[0]


PAGES = {
    # Each: session, user, organization, the rate counter, then the page's own reads (none per row).
    "/dashboard": 8, "/dashboard/security": 6, "/dashboard/api-keys": 7, "/dashboard/generators": 7,
    "/dashboard/generators/{generator}": 7, "/dashboard/generators/{generator}/revoke": 7, "/dashboard/sign": 6,
    "/dashboard/records": 6, "/dashboard/team": 7, "/dashboard/webhooks": 7, "/dashboard/webhooks/{endpoint}": 8,
    "/dashboard/billing": 6,
    # The audit page: the owner's verified email (export), then one query per kind of id its events name
    # (generators, members, webhooks), whatever the number of events.
    "/dashboard/audit": 10, "/dashboard/team/members/{member}/api-keys": 7,
    # The compliance report: the owner's verified email (downloads), then its two aggregate queries.
    "/dashboard/compliance": 7,
    # The confirmation pages.
    "/dashboard/api-keys/{org_key}/revoke": 6, "/dashboard/api-keys/personal/{own_key}/revoke": 6,
    "/dashboard/team/members/{member}/remove": 6, "/dashboard/team/members/{member}/api-keys/{member_key}/revoke": 6,
    "/dashboard/webhooks/{endpoint}/delete": 7, "/dashboard/team/invites/{invite}/cancel": 6,
    "/dashboard/billing/requests/{plan_request}/cancel": 6,
    # The pages a form's POST redirects to.
    "/dashboard/api-keys/{made_key}/created": 6, "/dashboard/webhooks/{endpoint}/created": 7,
    "/dashboard/sign/{signed}": 6,
}
# The public pages, for a visitor: no session, no user, nothing counted on a GET.
PUBLIC_PAGES = {"/login": 0, "/signup": 0, "/forgot-password": 0, "/resend-verification": 0, "/verify": 0,
                "/verify-email": 0, "/reset-password": 0, "/invite/{invite_token}": 1}


@pytest.mark.parametrize("path", PAGES)
def test_each_page_runs_a_bounded_number_of_queries(path, busy_org, page_client, django_assert_max_num_queries):
    org, owner, generator, endpoint = busy_org
    client = page_client(owner)
    member = owner.org.users.exclude(pk=owner.pk).first()
    url = path.format(generator=generator.pk, endpoint=endpoint.pk, member=member.pk,
                      org_key=org.api_keys.filter(user=None).first().pk, own_key=owner.personal_api_keys.get().pk,
                      member_key=member.personal_api_keys.get().pk, **_owner_made(org, owner))
    with django_assert_max_num_queries(PAGES[path]):
        response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    html = response.content.decode()
    assert " style=" not in html and "<style" not in html and "<script>" not in html  # what the CSP refuses


def _owner_made(org, owner) -> dict:
    """Rows the owner made: an invite, a plan request, a key, and a file signed on the dashboard."""
    from accounts.services import api_key_create
    from billing.services import plan_request_create
    from dashboard.models import SignedFile
    from provenance.models import Record
    from teams.models import Invite

    record = Record.objects.for_org(org).first()
    signed = SignedFile.objects.create(org=org, user=owner, record=record, token="svc_t", filename="signed-a.png",
                                       mime_type="image/png", size=3, data=b"png",
                                       expires_at=timezone.now() + timedelta(hours=1))
    return {"invite": Invite.objects.for_org(org).first().pk, "signed": signed.pk,
            "plan_request": plan_request_create(org=org, actor=owner, plan="scale", billing_interval="annual").pk,
            "made_key": api_key_create(org=org, created_by=owner, name="made").api_key.pk}


@pytest.mark.parametrize("path", PUBLIC_PAGES)
def test_each_public_page_runs_a_bounded_number_of_queries(path, busy_org, django_assert_max_num_queries):
    org, owner, _, _ = busy_org
    _, invite_token = factories.make_invite(org=org, inviter=owner)
    with django_assert_max_num_queries(PUBLIC_PAGES[path]):
        response = Client().get(path.format(invite_token=invite_token))
    assert response.status_code == 200, response.content[:500]


def test_an_unknown_id_is_404_not_500(owner_page):
    assert owner_page.get(f"/dashboard/webhooks/{uuid.uuid4()}").status_code in (402, 404)
    assert owner_page.get("/dashboard/generators/not-a-uuid").status_code == 404
