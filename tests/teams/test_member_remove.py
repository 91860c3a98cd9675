"""DELETE /v1/team/members/:user_id."""

import pytest

from accounts.models import ApiKey, User
from audit.models import AuditEvent
from tests import factories
from tests.teams.errors import assert_error

pytestmark = pytest.mark.django_db


def _remove(client, user):
    return client.delete(f"/v1/team/members/{user.pk}")


@pytest.mark.parametrize("role", ["user", "admin", "owner"])
def test_the_owner_removes_anyone_else(owner_client, org, role):
    target = factories.make_user(org=org, role=role)
    response = _remove(owner_client, target)
    assert response.status_code == 200 and response.json() == {"removed": True}
    assert not User.objects.filter(pk=target.pk).exists()


def test_removal_writes_the_audit_event_with_the_actor(owner_client, owner, member, org):
    _remove(owner_client, member)
    event = AuditEvent.objects.for_org(org).get(type="team.member_removed")
    assert event.metadata == {"actor_id": str(owner.pk), "user_id": str(member.pk), "email": member.email,
                              "role": "user"}


def test_a_removed_members_session_and_personal_key_stop_working_at_once(owner_client, member, session_client,
                                                                         personal_key_client):
    by_session, by_key = session_client(member), personal_key_client(member)
    assert by_session.get("/v1/team/members").status_code == 200
    assert by_key.get("/v1/billing/usage").status_code == 200
    assert _remove(owner_client, member).status_code == 200
    assert_error(by_session.get("/v1/team/members"), 401, "authentication_required")
    assert_error(by_session.get("/v1/auth/me"), 401, "authentication_required")
    assert_error(by_key.get("/v1/billing/usage"), 401, "authentication_required")
    assert not ApiKey.objects.filter(user_id=member.pk).exists()


def test_organization_keys_a_removed_member_created_keep_working(session_client, owner_client, admin_user, api_client):
    created = session_client(admin_user).post("/v1/api-keys", {"name": "ci"}, format="json").json()
    assert _remove(owner_client, admin_user).status_code == 200
    assert api_client.get("/v1/billing/usage", HTTP_AUTHORIZATION=f"Bearer {created['key']}").status_code == 200
    assert ApiKey.objects.get(pk=created["key_id"]).created_by is None


def test_an_owner_cannot_remove_themselves(owner_client, owner, org):
    factories.make_user(org=org, role="owner")
    assert_error(_remove(owner_client, owner), 400, "cannot_remove_self")
    assert User.objects.filter(pk=owner.pk).exists()


def test_the_only_owner_removing_themselves_is_told_the_organization_needs_an_owner(owner_client, owner):
    assert_error(_remove(owner_client, owner), 400, "last_owner")
    assert User.objects.filter(pk=owner.pk).exists()


def test_an_admin_removes_users_only(admin_client, admin_user, member, owner, org):
    other_admin = factories.make_user(org=org, role="admin")
    assert_error(_remove(admin_client, owner), 403, "forbidden")
    assert_error(_remove(admin_client, other_admin), 403, "forbidden")
    assert_error(_remove(admin_client, admin_user), 400, "cannot_remove_self")
    assert _remove(admin_client, member).json() == {"removed": True}
    assert set(User.objects.for_org(org).values_list("pk", flat=True)) == {owner.pk, admin_user.pk, other_admin.pk}


def test_a_user_removes_nobody(member_client, member, owner, org):
    other_user = factories.make_user(org=org, role="user")
    for target in (other_user, owner, member):
        assert_error(_remove(member_client, target), 403, "forbidden")
    assert User.objects.for_org(org).count() == 3


def test_another_organizations_member_is_404(owner_client, outsider):
    assert_error(_remove(owner_client, outsider), 404, "not_found")
    assert User.objects.filter(pk=outsider.pk).exists()


def test_an_unknown_or_malformed_user_id_is_404(owner_client):
    assert_error(owner_client.delete("/v1/team/members/00000000-0000-0000-0000-000000000000"), 404, "not_found")
    assert_error(owner_client.delete("/v1/team/members/nope"), 404, "not_found")


def test_an_organization_api_key_is_401(key_client, org, member):
    assert_error(_remove(key_client(org), member), 401, "authentication_required")
    assert User.objects.filter(pk=member.pk).exists()


def test_a_personal_api_key_is_401(personal_key_client, owner, member):
    assert_error(_remove(personal_key_client(owner), member), 401, "authentication_required")


def test_no_credential_is_401(api_client, member):
    assert_error(_remove(api_client, member), 401, "authentication_required")
