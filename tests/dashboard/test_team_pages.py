"""Team page: each role may do what the team API allows it, and nothing in another organization."""

import uuid

import pytest
from django.core import mail

from accounts.models import User
from teams.models import Invite
from teams.services import invite_send
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def org(db):
    return factories.make_org(plan="growth")  # room for invites and the admin role


@pytest.fixture
def other_org(db):
    return factories.make_org(plan="growth", name="Other")


def test_members_are_listed_for_every_role_but_invites_only_for_managers(owner, member, page_client, org):
    invite_send(org=org, inviter=owner, email="new@example.com", role="user")
    member_page = page_client(member).get("/dashboard/team").content.decode()
    assert owner.email in member_page and member.email in member_page
    assert "new@example.com" not in member_page and "Send the invite" not in member_page
    owner_page = page_client(owner).get("/dashboard/team").content.decode()
    assert "new@example.com" in owner_page and "Send the invite" in owner_page


def test_an_owner_invites_and_the_mail_goes_out(owner, page_client, org):
    response = page_client(owner).post("/dashboard/team/invites", {"email": "New@Example.com", "role": "user"})
    assert response["Location"] == "/dashboard/team"
    assert Invite.objects.for_org(org).pending().get().email == "new@example.com"
    assert "/invite/" in mail.outbox[0].body


def test_a_user_may_not_invite_cancel_change_roles_or_remove(owner, member, admin_user, page_client, org):
    invite = invite_send(org=org, inviter=owner, email="new@example.com", role="user")
    client = page_client(member)
    assert client.post("/dashboard/team/invites", {"email": "x@example.com", "role": "user"}).status_code == 403
    assert client.post(f"/dashboard/team/invites/{invite.pk}/cancel").status_code == 403
    assert client.post(f"/dashboard/team/members/{admin_user.pk}/role", {"role": "user"}).status_code == 403
    assert client.post(f"/dashboard/team/members/{admin_user.pk}/remove").status_code == 403
    assert Invite.objects.filter(pk=invite.pk).exists() and User.objects.get(pk=admin_user.pk).role == "admin"


def test_an_admin_removes_users_but_not_owners_and_cannot_change_roles(owner, admin_user, member, page_client):
    client = page_client(admin_user)
    assert client.post(f"/dashboard/team/members/{owner.pk}/remove").status_code == 403
    assert client.post(f"/dashboard/team/members/{member.pk}/role", {"role": "admin"}).status_code == 403
    confirm = client.get(f"/dashboard/team/members/{member.pk}/remove")
    assert confirm.status_code == 200 and member.email in confirm.content.decode()
    assert client.post(f"/dashboard/team/members/{member.pk}/remove")["Location"] == "/dashboard/team"
    assert not User.objects.filter(pk=member.pk).exists()


def test_an_owner_changes_roles_but_never_leaves_the_organization_without_an_owner(owner, member, page_client):
    client = page_client(owner)
    client.post(f"/dashboard/team/members/{member.pk}/role", {"role": "admin"})
    assert User.objects.get(pk=member.pk).role == "admin"
    last = client.post(f"/dashboard/team/members/{owner.pk}/role", {"role": "user"})
    assert last.status_code == 400 and User.objects.get(pk=owner.pk).role == "owner"
    assert client.post(f"/dashboard/team/members/{owner.pk}/remove").status_code == 400


def test_the_admin_role_and_seats_follow_the_plan(page_client):
    free = factories.make_org(plan="free")
    owner = factories.make_user(org=free, role="owner")
    factories.make_user(org=free, role="user")
    client = page_client(owner)  # free: 2 seats, both taken; no admin role
    assert client.post("/dashboard/team/invites", {"email": "x@example.com", "role": "admin"}).status_code == 402
    assert client.post("/dashboard/team/invites", {"email": "x@example.com", "role": "user"}).status_code == 402


def test_cancelling_an_invite(owner, page_client, org):
    invite = invite_send(org=org, inviter=owner, email="new@example.com", role="user")
    assert page_client(owner).post(f"/dashboard/team/invites/{invite.pk}/cancel").status_code == 302
    assert not Invite.objects.filter(pk=invite.pk).exists()


def test_another_organizations_members_and_invites_are_not_found(owner, page_client, outsider, other_org):
    theirs = factories.make_user(org=other_org, role="user")
    their_invite = invite_send(org=other_org, inviter=outsider, email="their@example.com", role="user")
    client = page_client(owner)
    assert client.post(f"/dashboard/team/members/{theirs.pk}/role", {"role": "admin"}).status_code == 404
    assert client.get(f"/dashboard/team/members/{theirs.pk}/remove").status_code == 404
    assert client.post(f"/dashboard/team/members/{theirs.pk}/remove").status_code == 404
    assert client.post(f"/dashboard/team/invites/{their_invite.pk}/cancel").status_code == 404
    assert client.post(f"/dashboard/team/members/{uuid.uuid4()}/remove").status_code == 404
    assert User.objects.filter(pk=theirs.pk).exists() and Invite.objects.filter(pk=their_invite.pk).exists()
    assert theirs.email not in client.get("/dashboard/team").content.decode()


def test_the_invite_link_page_uses_the_dashboard_layout(owner, org):
    from django.test import Client

    invite_send(org=org, inviter=owner, email="new@example.com", role="user")
    token = mail.outbox[0].body.split("/invite/")[1].split()[0]
    page = Client().get(f"/invite/{token}")
    assert page.status_code == 200 and "/static/dashboard/app.css" in page.content.decode()


# --- members' personal keys (POST/DELETE /v1/team/members/:id/api-keys) -------------------------------

def test_an_admin_makes_and_revokes_a_members_personal_key(admin_user, member, page_client, org):
    from accounts.models import ApiKey
    from accounts.selectors import api_key_for_credential

    client = page_client(admin_user)
    created = client.post(f"/dashboard/team/members/{member.pk}/api-keys")
    key = ApiKey.objects.get(user=member)
    assert created.status_code == 302 and created["Location"] == f"/dashboard/api-keys/{key.pk}/created"
    html = client.get(created["Location"]).content.decode()
    assert f"New personal key of {member.email}" in html
    assert f'href="/dashboard/team/members/{member.pk}/api-keys"' in html  # back to that member's keys
    raw = html[html.index('id="new-key"'):].split('>', 1)[1].split('<', 1)[0]
    assert api_key_for_credential(raw).pk == key.pk
    assert key.preview in client.get(f"/dashboard/team/members/{member.pk}/api-keys").content.decode()
    assert client.post(f"/dashboard/team/members/{member.pk}/api-keys/{key.pk}/revoke").status_code == 302
    assert api_key_for_credential(raw) is None


def test_a_user_manages_only_their_own_personal_keys(member, owner, page_client, org):
    from accounts.services import personal_api_key_create

    theirs = personal_api_key_create(org=org, user=owner, created_by=owner).api_key
    client = page_client(member)
    assert client.get(f"/dashboard/team/members/{owner.pk}/api-keys").status_code == 403
    assert client.post(f"/dashboard/team/members/{owner.pk}/api-keys").status_code == 403
    assert client.post(f"/dashboard/team/members/{owner.pk}/api-keys/{theirs.pk}/revoke").status_code == 403
    assert client.get(f"/dashboard/team/members/{member.pk}/api-keys").status_code == 200
    assert client.post(f"/dashboard/team/members/{member.pk}/api-keys").status_code == 302


def test_another_organizations_member_keys_are_not_found(owner, page_client, other_org):
    from accounts.services import personal_api_key_create

    theirs = factories.make_user(org=other_org, role="user")
    key = personal_api_key_create(org=other_org, user=theirs, created_by=theirs).api_key
    client = page_client(owner)
    assert client.get(f"/dashboard/team/members/{theirs.pk}/api-keys").status_code == 404
    assert client.post(f"/dashboard/team/members/{theirs.pk}/api-keys").status_code == 404
    assert client.post(f"/dashboard/team/members/{theirs.pk}/api-keys/{key.pk}/revoke").status_code == 404
    assert client.post(f"/dashboard/team/members/{owner.pk}/api-keys/{key.pk}/revoke").status_code == 404
    key.refresh_from_db()
    assert key.revoked_at is None
