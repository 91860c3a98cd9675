"""POST /v1/team/invites."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.core import mail
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from accounts.credentials import digest
from audit.models import AuditEvent
from teams.models import Invite
from tests import factories
from tests.teams.errors import assert_error
from tests.teams.mailbox import invite_links, invite_token_from_mail

pytestmark = pytest.mark.django_db
URL = "/v1/team/invites"


def _invite(client, email="new@example.com", role="user"):
    return client.post(URL, {"email": email, "role": role}, format="json")


def test_the_owner_invites_and_the_email_carries_the_link(owner_client, owner, org):
    response = _invite(owner_client, email="New@Example.com ")
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"invite_id", "email", "role", "expires_at"}
    assert (body["email"], body["role"]) == ("new@example.com", "user")
    expires_in = parse_datetime(body["expires_at"]) - timezone.now()
    assert timedelta(days=7) - timedelta(minutes=1) < expires_in <= timedelta(days=7)
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["new@example.com"]
    text_link, html_link = invite_links()
    token = invite_token_from_mail()
    assert text_link == html_link == f"{settings.PUBLIC_BASE_URL}/invite/{token}"
    assert org.name in mail.outbox[0].subject and owner.email in mail.outbox[0].body
    stored = Invite.objects.get(pk=body["invite_id"])
    assert (stored.org_id, stored.inviter_id, stored.digest) == (org.pk, owner.pk, digest(token))
    assert token not in str(list(Invite.objects.values()))  # only the digest is stored


def test_sending_writes_the_audit_event_with_the_actor(owner_client, owner, org):
    invite_id = _invite(owner_client, role="admin").json()["invite_id"]
    event = AuditEvent.objects.for_org(org).get(type="team.invite_sent")
    assert event.metadata == {"actor_id": str(owner.pk), "invite_id": invite_id, "email": "new@example.com",
                              "role": "admin"}


def test_an_admin_may_invite(admin_client, owner):
    assert _invite(admin_client).status_code == 201


def test_a_user_may_not_invite(member_client):
    assert_error(_invite(member_client), 403, "forbidden")
    assert not Invite.objects.exists() and mail.outbox == []


def test_an_organization_api_key_is_401(key_client, org, owner):
    assert_error(_invite(key_client(org)), 401, "authentication_required")


def test_a_personal_api_key_is_401(personal_key_client, owner):
    assert_error(_invite(personal_key_client(owner)), 401, "authentication_required")


def test_no_credential_is_401(api_client):
    assert_error(_invite(api_client), 401, "authentication_required")


@pytest.mark.parametrize("body", [{}, {"email": "x@example.com"}, {"role": "user"}, {"email": "nope", "role": "user"},
                                  {"email": "x@example.com", "role": "owner"}, {"email": "x@example.com", "role": 5},
                                  ["x@example.com"]])
def test_a_bad_body_is_400(owner_client, body):
    assert_error(owner_client.post(URL, body, format="json"), 400, "validation_error")


@pytest.mark.parametrize("plan", ["free", "starter"])
def test_the_admin_role_needs_growth_or_above(session_client, plan):
    owner = factories.make_user(org=factories.make_org(plan=plan))
    client = session_client(owner)
    assert_error(_invite(client, role="admin"), 402, "plan_required")
    assert _invite(client, role="user").status_code == 201


def test_an_unverified_owner_blocks_invites(session_client):
    owner = factories.make_user(org=factories.make_org(plan="growth"), verified=False)
    assert_error(_invite(session_client(owner)), 403, "email_not_verified")
    assert mail.outbox == []


def test_a_member_cannot_be_invited_again(owner_client, member):
    assert_error(_invite(owner_client, email=member.email.upper()), 409, "already_member")


def test_an_email_registered_in_another_organization_may_be_invited(owner_client, outsider):
    assert _invite(owner_client, email=outsider.email).status_code == 201


def test_the_invite_goes_to_the_callers_organization_only(outsider_client, other_org, org):
    invite_id = _invite(outsider_client).json()["invite_id"]
    assert Invite.objects.get(pk=invite_id).org_id == other_org.pk
    assert not Invite.objects.for_org(org).exists()


def test_members_fill_the_seats(session_client):
    org = factories.make_org(plan="free")  # 2 seats
    owner = factories.make_user(org=org)
    factories.make_user(org=org, role="user")
    assert_error(_invite(session_client(owner)), 402, "seat_limit_reached")


def test_pending_invites_take_seats_and_expired_ones_do_not(session_client):
    org = factories.make_org(plan="free")
    owner = factories.make_user(org=org)
    client = session_client(owner)
    invite_id = _invite(client, email="a@example.com").json()["invite_id"]
    assert_error(_invite(client, email="b@example.com"), 402, "seat_limit_reached")
    Invite.objects.filter(pk=invite_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert _invite(client, email="b@example.com").status_code == 201


def test_an_accepted_invite_counts_once_as_its_member(session_client, api_client):
    org = factories.make_org(plan="starter")  # 5 seats
    owner = factories.make_user(org=org)
    client = session_client(owner)
    _invite(client, email="a@example.com")
    api_client.post(f"{URL}/{invite_token_from_mail()}/accept", {"password": "long-enough"}, format="json")
    for email in ("b@example.com", "c@example.com", "d@example.com"):
        assert _invite(client, email=email).status_code == 201
    assert_error(_invite(client, email="e@example.com"), 402, "seat_limit_reached")


def test_enterprise_has_no_seat_limit(session_client):
    org = factories.make_org(plan="enterprise")
    client = session_client(factories.make_user(org=org))
    assert all(_invite(client, email=f"m{i}@example.com").status_code == 201 for i in range(60))


def test_inviting_the_same_email_again_expires_the_older_invite(owner_client, api_client):
    first = _invite(owner_client, role="user").json()
    first_token = invite_token_from_mail()
    second = _invite(owner_client, email="NEW@example.com", role="admin").json()
    second_token = invite_token_from_mail()
    assert first["invite_id"] != second["invite_id"]
    assert_error(api_client.get(f"{URL}/{first_token}/preview"), 404, "not_found")
    assert api_client.get(f"{URL}/{second_token}/preview").json()["role"] == "admin"
    assert [i["invite_id"] for i in owner_client.get(URL).json()["invites"]] == [second["invite_id"]]


def test_a_repeated_invite_needs_no_extra_seat(session_client):
    org = factories.make_org(plan="free")
    client = session_client(factories.make_user(org=org))
    assert _invite(client, email="a@example.com").status_code == 201
    assert _invite(client, email="a@example.com").status_code == 201


def test_a_refused_invite_leaves_no_trace(owner_client, member):
    _invite(owner_client, email=member.email)
    assert not Invite.objects.exists() and mail.outbox == []
    assert not AuditEvent.objects.filter(type="team.invite_sent").exists()
