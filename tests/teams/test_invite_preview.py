"""GET /v1/team/invites/:token/preview (public)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests import factories
from tests.teams.errors import assert_error

pytestmark = pytest.mark.django_db
URL = "/v1/team/invites/{}/preview"


def test_a_pending_invite_shows_what_it_offers(api_client, owner, org):
    invite, token = factories.make_invite(org=org, inviter=owner, email="x@example.com", role="admin")
    response = api_client.get(URL.format(token))
    assert response.status_code == 200
    body = response.json()
    assert body == {"invite_id": str(invite.pk), "email": "x@example.com", "role": "admin", "org_name": org.name,
                    "expires_at": body["expires_at"]}
    assert body["expires_at"].endswith("Z")


def test_preview_does_not_use_up_the_invite(api_client, owner, org):
    invite, token = factories.make_invite(org=org, inviter=owner)
    assert api_client.get(URL.format(token)).status_code == 200
    assert api_client.get(URL.format(token)).status_code == 200
    invite.refresh_from_db()
    assert invite.accepted_at is None


def test_an_unknown_token_is_404(api_client):
    assert_error(api_client.get(URL.format("no-such-token")), 404, "not_found")


def test_an_expired_invite_is_404(api_client, owner, org):
    invite, token = factories.make_invite(org=org, inviter=owner)
    invite.expires_at = timezone.now() - timedelta(seconds=1)
    invite.save()
    assert_error(api_client.get(URL.format(token)), 404, "not_found")


def test_a_cancelled_invite_is_404(api_client, owner_client, owner, org):
    invite, token = factories.make_invite(org=org, inviter=owner)
    owner_client.delete(f"/v1/team/invites/{invite.pk}")
    assert_error(api_client.get(URL.format(token)), 404, "not_found")


def test_an_accepted_invite_is_404(api_client, owner, org):
    _, token = factories.make_invite(org=org, inviter=owner)
    accepted = api_client.post(f"/v1/team/invites/{token}/accept", {"password": "long-enough"}, format="json")
    assert accepted.status_code == 201
    assert_error(api_client.get(URL.format(token)), 404, "not_found")


def test_a_credential_is_not_needed_and_is_ignored(api_client, key_client, owner, org):
    _, token = factories.make_invite(org=org, inviter=owner)
    assert key_client(org).get(URL.format(token)).status_code == 200
    assert api_client.get(URL.format(token), HTTP_AUTHORIZATION="Bearer garbage").status_code == 200


def test_preview_is_limited_per_client_ip(api_client, settings, owner, org):
    settings.AUTH_RATE_PER_MINUTE = 2
    _, token = factories.make_invite(org=org, inviter=owner)
    assert [api_client.get(URL.format(token)).status_code for _ in range(2)] == [200, 200]
    response = api_client.get(URL.format(token))
    assert_error(response, 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1
    assert api_client.get(URL.format(token), REMOTE_ADDR="10.1.2.3").status_code == 200
