"""GET /v1/team/invites."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests import factories
from tests.teams.errors import assert_error

pytestmark = pytest.mark.django_db
URL = "/v1/team/invites"


def test_pending_invites_are_listed_newest_first_with_the_spec_shape(owner_client, owner, org):
    older, _ = factories.make_invite(org=org, inviter=owner, email="a@example.com")
    newer, _ = factories.make_invite(org=org, inviter=owner, email="b@example.com", role="admin")
    response = owner_client.get(URL)
    assert response.status_code == 200
    invites = response.json()["invites"]
    assert [i["invite_id"] for i in invites] == [str(newer.pk), str(older.pk)]
    assert invites[0] == {"invite_id": str(newer.pk), "email": "b@example.com", "role": "admin",
                          "inviter_id": str(owner.pk), "created_at": invites[0]["created_at"],
                          "expires_at": invites[0]["expires_at"]}
    assert invites[0]["created_at"].endswith("Z") and invites[0]["expires_at"].endswith("Z")


def test_expired_and_accepted_invites_are_not_listed(owner_client, owner, org, api_client):
    expired, _ = factories.make_invite(org=org, inviter=owner)
    expired.expires_at = timezone.now() - timedelta(seconds=1)
    expired.save()
    _, accepted_token = factories.make_invite(org=org, inviter=owner)
    api_client.post(f"{URL}/{accepted_token}/accept", {"password": "long-enough"}, format="json")
    pending, _ = factories.make_invite(org=org, inviter=owner)
    assert [i["invite_id"] for i in owner_client.get(URL).json()["invites"]] == [str(pending.pk)]


def test_an_invite_whose_inviter_left_shows_no_inviter(owner_client, owner, admin_user, org):
    factories.make_invite(org=org, inviter=admin_user)
    admin_user.delete()
    assert owner_client.get(URL).json()["invites"][0]["inviter_id"] is None


def test_an_admin_may_list(admin_client, owner, org):
    factories.make_invite(org=org, inviter=owner)
    assert len(admin_client.get(URL).json()["invites"]) == 1


def test_a_user_may_not_list(member_client):
    assert_error(member_client.get(URL), 403, "forbidden")


def test_another_organizations_invites_never_appear(owner_client, outsider_client, outsider, other_org):
    factories.make_invite(org=other_org, inviter=outsider)
    assert owner_client.get(URL).json() == {"invites": []}
    assert len(outsider_client.get(URL).json()["invites"]) == 1


def test_an_organization_api_key_is_401(key_client, org):
    assert_error(key_client(org).get(URL), 401, "authentication_required")


def test_a_personal_api_key_is_401(personal_key_client, owner):
    assert_error(personal_key_client(owner).get(URL), 401, "authentication_required")


def test_no_credential_is_401(api_client):
    assert_error(api_client.get(URL), 401, "authentication_required")
