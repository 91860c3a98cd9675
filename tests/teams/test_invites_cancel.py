"""DELETE /v1/team/invites/:invite_id."""


import pytest

from audit.models import AuditEvent
from teams.models import Invite
from tests import factories
from tests.teams.errors import assert_error

pytestmark = pytest.mark.django_db
URL = "/v1/team/invites"


@pytest.fixture
def pending(org, owner):
    """(invite, token) of a pending invite of `org`."""
    return factories.make_invite(org=org, inviter=owner, email="invitee@example.com")


def test_the_owner_cancels_and_the_link_dies(owner_client, owner, org, pending, api_client):
    invite, token = pending
    response = owner_client.delete(f"{URL}/{invite.pk}")
    assert response.status_code == 200 and response.json() == {"cancelled": True}
    assert not Invite.objects.filter(pk=invite.pk).exists()
    assert_error(api_client.get(f"{URL}/{token}/preview"), 404, "not_found")
    assert_error(api_client.post(f"{URL}/{token}/accept", {"password": "long-enough"}, format="json"),
                 400, "invite_invalid")
    event = AuditEvent.objects.for_org(org).get(type="team.invite_cancelled")
    assert event.metadata == {"actor_id": str(owner.pk), "invite_id": str(invite.pk), "email": "invitee@example.com",
                              "role": "user"}


def test_an_admin_may_cancel(admin_client, pending):
    assert admin_client.delete(f"{URL}/{pending[0].pk}").json() == {"cancelled": True}


def test_a_user_may_not_cancel(member_client, pending):
    assert_error(member_client.delete(f"{URL}/{pending[0].pk}"), 403, "forbidden")
    assert Invite.objects.filter(pk=pending[0].pk).exists()


def test_another_organizations_invite_is_404(outsider_client, pending):
    assert_error(outsider_client.delete(f"{URL}/{pending[0].pk}"), 404, "not_found")
    assert Invite.objects.filter(pk=pending[0].pk).exists()


@pytest.mark.parametrize("invite_id", ["00000000-0000-4000-8000-000000000000", "not-a-uuid"])
def test_an_unknown_or_malformed_id_is_404(owner_client, invite_id):
    assert_error(owner_client.delete(f"{URL}/{invite_id}"), 404, "not_found")


def test_an_accepted_invite_cannot_be_cancelled(owner_client, pending, api_client):
    invite, token = pending
    api_client.post(f"{URL}/{token}/accept", {"password": "long-enough"}, format="json")
    assert_error(owner_client.delete(f"{URL}/{invite.pk}"), 404, "not_found")
    assert not AuditEvent.objects.filter(type="team.invite_cancelled").exists()


def test_cancelling_twice_is_404(owner_client, pending):
    assert owner_client.delete(f"{URL}/{pending[0].pk}").status_code == 200
    assert_error(owner_client.delete(f"{URL}/{pending[0].pk}"), 404, "not_found")


def test_an_organization_api_key_is_401(key_client, org, pending):
    assert_error(key_client(org).delete(f"{URL}/{pending[0].pk}"), 401, "authentication_required")


def test_a_personal_api_key_is_401(personal_key_client, owner, pending):
    assert_error(personal_key_client(owner).delete(f"{URL}/{pending[0].pk}"), 401, "authentication_required")


def test_no_credential_is_401(api_client, pending):
    assert_error(api_client.delete(f"{URL}/{pending[0].pk}"), 401, "authentication_required")
    assert Invite.objects.filter(pk=pending[0].pk).exists()
