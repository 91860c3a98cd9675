"""No admin page, ours or a third party's, shows secret material: keys, digests, seeds, second factors."""

import base64
from datetime import timedelta

import pytest
from django.contrib import admin
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.credentials import digest, new_url_token
from accounts.models import ApiKey, EmailToken, Organization, TwoFactorChallenge
from accounts.services.two_factor import two_factor_setup
from audit.services import audit_write
from billing.models import UsageCounter
from generators.models import GeneratorKey
from generators.services import generator_signing_seed
from provenance.models import Record
from teams.models import Invite
from tests import factories
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db

# A secret shown in part is still shown: any run of this many characters of one counts.
SHOWN_PREFIX = 12


def _forms(secret: str | bytes) -> set[str]:
    """The ways a page could print a secret: itself, and bytes as hex, base64 (both alphabets) and base32."""
    if isinstance(secret, str):
        return {secret, secret.lower(), secret.upper()}
    return {secret.hex(), secret.hex().upper(), base64.b64encode(secret).decode(),
            base64.urlsafe_b64encode(secret).decode().rstrip("="), base64.b32encode(secret).decode().rstrip("=")}


def _fragments(secret: str | bytes) -> set[str]:
    fragments = set()
    for form in _forms(secret):
        fragments |= {form[i:i + SHOWN_PREFIX] for i in range(0, max(1, len(form) - SHOWN_PREFIX + 1))}
    return fragments


@pytest.fixture
def secrets(org) -> dict[str, str | bytes]:
    """One row of every model with secret material, and that material by name."""
    owner = factories.make_user(org=org)
    raw_key = factories.make_api_key(org=org)
    api_key = ApiKey.objects.get(org=org)
    generator = factories.make_generator(org=org, formats=["image"])
    sealed = GeneratorKey.objects.get(generator=generator)
    setup = two_factor_setup(user=owner)
    device = TOTPDevice.objects.get(user=owner)
    TOTPDevice.objects.filter(pk=device.pk).update(confirmed=True)
    email_raw, challenge_raw = new_url_token(), new_url_token()
    later = timezone.now() + timedelta(hours=1)
    EmailToken.objects.create(user=owner, purpose="reset_password", digest=digest(email_raw), expires_at=later)
    TwoFactorChallenge.objects.create(user=owner, digest=digest(challenge_raw), expires_at=later)
    Record.objects.create(org=org, generator=generator, key=sealed, model="m", watermark_id="wm",
                          content_hash="sha3-256:" + "0" * 64, signature=b"\x01" * 3309)
    audit_write(org=org, type="key_created", metadata={"generator_id": str(generator.pk)})
    factories.set_usage(org, 3)
    _, invite_raw = factories.make_invite(org=org, inviter=owner)
    webhook, webhook_secret = factories.make_webhook(org=org)
    WebhookDelivery.objects.create(org=org, endpoint=webhook, event="record.created", status="failed",
                                   payload='{"id":"x","event":"record.created","data":{}}', error="timed out")
    *_, salt, password_hash = owner.password.split("$")
    return {
        # The key's public "svc_key_" prefix and first 4 characters are its preview, shown on purpose.
        "api key": raw_key.removeprefix("svc_key_"), "api key digest": api_key.digest,
        "api key lookup id": api_key.lookup_id,
        "sealed private key": bytes(sealed.encrypted_private_key), "private key seed": generator_signing_seed(sealed),
        "totp key": bytes.fromhex(device.key), "totp base32 secret": setup.secret,
        "email token": email_raw, "email token digest": digest(email_raw),
        "2fa challenge": challenge_raw, "2fa challenge digest": digest(challenge_raw),
        "invite token": invite_raw, "invite token digest": digest(invite_raw),
        "password salt": salt, "password hash": password_hash,
        "webhook secret": webhook_secret.removeprefix("whsec_"),
        "sealed webhook secret": bytes(webhook.encrypted_secret),
    }


def _admin_pages() -> list[str]:
    """The changelist and the change page of one row of every model registered in the admin."""
    pages = []
    for model in admin.site._registry:
        info = model._meta.app_label, model._meta.model_name
        pages.append(f"/admin/{info[0]}/{info[1]}/")
        for row in model._default_manager.all():
            pages.append(f"/admin/{info[0]}/{info[1]}/{row.pk}/change/")
    # Each organization's "Change plan" page (its row carries the sealed webhook secrets).
    pages += [f"/admin/accounts/organization/{org.pk}/set-plan/" for org in Organization.objects.all()]
    return pages


def test_every_model_with_secrets_has_a_row_to_look_at(secrets):
    for model in (ApiKey, GeneratorKey, TOTPDevice, EmailToken, TwoFactorChallenge, Record, UsageCounter, Invite,
                  WebhookEndpoint, WebhookDelivery):
        assert model.objects.exists(), model


def test_no_admin_page_shows_any_secret(staff_client, secrets):
    pages = _admin_pages()
    assert {"/admin/otp_totp/totpdevice/", "/admin/accounts/apikey/", "/admin/generators/generator/",
            "/admin/webhooks/webhookendpoint/", "/admin/webhooks/webhookdelivery/"} <= set(pages)
    assert sum("/change/" in page for page in pages) >= len(admin.site._registry)
    for page in pages:
        response = staff_client.get(page)
        assert response.status_code == 200, page
        html = response.content.decode()
        for name, secret in secrets.items():
            shown = [fragment for fragment in _fragments(secret) if fragment in html]
            assert not shown, f"{page} shows the {name}: {shown[:3]}"


def test_the_totp_admin_has_no_qr_code_or_key_page(staff_client, secrets):
    device = TOTPDevice.objects.get()
    for page in (f"/admin/otp_totp/totpdevice/{device.pk}/config/", f"/admin/otp_totp/totpdevice/{device.pk}/qrcode/"):
        assert staff_client.get(page).status_code == 403, page
    change = staff_client.get(f"/admin/otp_totp/totpdevice/{device.pk}/change/").content.decode()
    assert "qrcode" not in change.lower() and 'name="key"' not in change


def test_staff_cannot_create_a_second_factor_for_someone(staff_client, secrets):
    # The add form would show the new key, and a device made there skips the enrolment flow.
    assert staff_client.get("/admin/otp_totp/totpdevice/add/").status_code == 403
