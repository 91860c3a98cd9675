"""PATCH /v1/team/members/:user_id/role."""

import pytest

from audit.models import AuditEvent
from tests import factories
from tests.teams.errors import assert_error

pytestmark = pytest.mark.django_db


def _url(user) -> str:
    return f"/v1/team/members/{user.pk}/role"


def _set_role(client, user, role):
    return client.patch(_url(user), {"role": role}, format="json")


@pytest.mark.parametrize(("start", "role"), [("user", "admin"), ("admin", "user"), ("user", "owner"),
                                             ("admin", "owner")])
def test_the_owner_changes_roles(owner_client, owner, org, start, role):
    target = factories.make_user(org=org, role=start)
    response = _set_role(owner_client, target, role)
    assert response.status_code == 200 and response.json() == {"user_id": str(target.pk), "role": role}
    target.refresh_from_db()
    assert target.role == role


def test_a_change_writes_the_audit_event_with_the_actor(owner_client, owner, member, org):
    _set_role(owner_client, member, "admin")
    event = AuditEvent.objects.for_org(org).get(type="team.role_changed")
    assert event.metadata == {"actor_id": str(owner.pk), "user_id": str(member.pk), "email": member.email,
                              "previous_role": "user", "role": "admin"}


def test_setting_the_current_role_changes_nothing(owner_client, member):
    assert _set_role(owner_client, member, "user").json() == {"user_id": str(member.pk), "role": "user"}
    assert not AuditEvent.objects.filter(type="team.role_changed").exists()


@pytest.mark.parametrize("who", ["admin_user", "member"])
def test_only_owners_change_roles(request, session_client, owner, who):
    actor = request.getfixturevalue(who)
    target = factories.make_user(org=owner.org, role="user")
    assert_error(_set_role(session_client(actor), target, "admin"), 403, "forbidden")
    assert_error(_set_role(session_client(actor), actor, "owner"), 403, "forbidden")  # no self-promotion
    target.refresh_from_db()
    assert target.role == "user"


def test_the_last_owner_cannot_step_down(owner_client, owner, member):
    for role in ("admin", "user"):
        assert_error(_set_role(owner_client, owner, role), 400, "last_owner")
    owner.refresh_from_db()
    assert owner.role == "owner"


def test_ownership_is_transferred_by_promoting_then_stepping_down(owner_client, owner, member, session_client):
    assert _set_role(owner_client, member, "owner").status_code == 200
    assert _set_role(owner_client, owner, "admin").json() == {"user_id": str(owner.pk), "role": "admin"}
    assert_error(_set_role(owner_client, member, "user"), 403, "forbidden")  # the former owner lost the right
    new_owner = session_client(member)
    assert_error(_set_role(new_owner, member, "user"), 400, "last_owner")
    assert _set_role(new_owner, owner, "user").status_code == 200


def test_an_owner_may_demote_another_owner(owner_client, org):
    second = factories.make_user(org=org, role="owner")
    assert _set_role(owner_client, second, "user").status_code == 200


def test_another_organizations_member_is_404(owner_client, outsider):
    assert_error(_set_role(owner_client, outsider, "user"), 404, "not_found")
    outsider.refresh_from_db()
    assert outsider.role == "owner"


def test_an_unknown_or_malformed_user_id_is_404(owner_client):
    assert_error(owner_client.patch("/v1/team/members/00000000-0000-0000-0000-000000000000/role",
                                    {"role": "user"}, format="json"), 404, "not_found")
    assert_error(owner_client.patch("/v1/team/members/nope/role", {"role": "user"}, format="json"), 404, "not_found")


@pytest.mark.parametrize("body", [{}, {"role": "superuser"}, {"role": None}, ["owner"]])
def test_a_bad_role_is_400(owner_client, member, body):
    assert_error(owner_client.patch(_url(member), body, format="json"), 400, "validation_error")


def test_an_organization_api_key_is_401(key_client, org, member):
    assert_error(_set_role(key_client(org), member, "admin"), 401, "authentication_required")


def test_a_personal_api_key_is_401(personal_key_client, owner, member):
    assert_error(_set_role(personal_key_client(owner), member, "admin"), 401, "authentication_required")


def test_no_credential_is_401(api_client, member):
    assert_error(_set_role(api_client, member, "admin"), 401, "authentication_required")
