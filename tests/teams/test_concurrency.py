"""Seats and owners hold under concurrency, with real transactions and row locks: PostgreSQL only."""

import pytest
from django.db import connection

from accounts.models import User
from teams.models import Invite
from tests import factories
from tests.concurrent_requests import fire_concurrently

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks"),
]


def test_two_invites_racing_for_the_last_seat_let_exactly_one_through():
    org = factories.make_org(plan="free")  # 2 seats: the owner and one more
    owner = factories.make_user(org=org)
    session = factories.session_token(owner)
    calls = [("post", "/v1/team/invites", {"email": f"racer{i}@example.com", "role": "user"}, session)
             for i in range(2)]
    assert sorted(fire_concurrently(calls)) == [201, 402]
    assert Invite.objects.for_org(org).pending().count() == 1


def test_many_invites_racing_for_three_seats_fill_them_exactly():
    org = factories.make_org(plan="starter")  # 5 seats
    owner = factories.make_user(org=org)
    factories.make_user(org=org, role="user")
    session = factories.session_token(owner)
    calls = [("post", "/v1/team/invites", {"email": f"racer{i}@example.com", "role": "user"}, session)
             for i in range(8)]
    assert sorted(fire_concurrently(calls)) == [201] * 3 + [402] * 5
    assert Invite.objects.for_org(org).pending().count() == 3


def test_two_owners_stepping_down_at_once_leave_one_owner():
    org = factories.make_org(plan="growth")
    owners = [factories.make_user(org=org, role="owner") for _ in range(2)]
    calls = [("patch", f"/v1/team/members/{o.pk}/role", {"role": "user"}, factories.session_token(o)) for o in owners]
    assert sorted(fire_concurrently(calls)) == [200, 400]
    assert User.objects.for_org(org).filter(role="owner").count() == 1


def test_two_owners_demoting_each_other_at_once_leave_one_owner():
    org = factories.make_org(plan="growth")
    first, second = (factories.make_user(org=org, role="owner") for _ in range(2))
    calls = [("patch", f"/v1/team/members/{second.pk}/role", {"role": "admin"}, factories.session_token(first)),
             ("patch", f"/v1/team/members/{first.pk}/role", {"role": "admin"}, factories.session_token(second))]
    statuses = sorted(fire_concurrently(calls))
    assert statuses[0] == 200 and statuses[1] in (400, 403)
    assert User.objects.for_org(org).filter(role="owner").count() == 1


def test_two_owners_removing_each_other_at_once_leave_one_owner():
    org = factories.make_org(plan="growth")
    first, second = (factories.make_user(org=org, role="owner") for _ in range(2))
    calls = [("delete", f"/v1/team/members/{second.pk}", None, factories.session_token(first)),
             ("delete", f"/v1/team/members/{first.pk}", None, factories.session_token(second))]
    statuses = sorted(fire_concurrently(calls))
    assert statuses[0] == 200 and statuses[1] in (401, 403)
    assert User.objects.for_org(org).filter(role="owner").count() == 1


def test_an_invite_accepted_twice_at_once_creates_one_member():
    org = factories.make_org(plan="growth")
    owner = factories.make_user(org=org)
    invite, token = factories.make_invite(org=org, inviter=owner)
    calls = [("post", f"/v1/team/invites/{token}/accept", {"password": f"password-{i}"}, None) for i in range(4)]
    assert sorted(fire_concurrently(calls)) == [201, 400, 400, 400]
    assert User.objects.filter(email=invite.email).count() == 1
