"""GET /v1/team/members."""

from dataclasses import replace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.plans import PLANS
from accounts.selectors import api_key_for_credential
from accounts.services import personal_api_key_revoke
from tests import factories
from tests.config.test_query_counts import SHARED_STATE_TABLES
from tests.teams.errors import assert_error

pytestmark = pytest.mark.django_db
URL = "/v1/team/members"


def test_the_owner_sees_every_member_with_the_spec_shape(owner_client, owner, admin_user, member):
    response = owner_client.get(URL)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"members", "plan", "max_members", "admin_role"}
    assert (body["plan"], body["max_members"], body["admin_role"]) == ("growth", 15, True)
    assert [m["user_id"] for m in body["members"]] == [str(owner.pk), str(admin_user.pk), str(member.pk)]
    first = body["members"][0]
    assert first == {"user_id": str(owner.pk), "email": owner.email, "role": "owner", "email_verified": True,
                     "api_key_count": 0, "created_at": first["created_at"]}
    assert first["created_at"].endswith("Z")
    assert [m["role"] for m in body["members"]] == ["owner", "admin", "user"]


@pytest.mark.parametrize("who", ["admin_user", "member"])
def test_admins_and_users_see_the_list_too(request, session_client, owner, who):
    response = session_client(request.getfixturevalue(who)).get(URL)
    assert response.status_code == 200 and len(response.json()["members"]) == 2


def test_api_key_count_counts_active_personal_keys_only(owner_client, owner, member, org):
    factories.make_personal_key(user=member)
    revoked = factories.make_personal_key(user=member)
    factories.make_api_key(org=org)  # an organization key belongs to nobody
    personal_api_key_revoke(org=org, user=member, key_id=api_key_for_credential(revoked).pk)
    counts = {m["user_id"]: m["api_key_count"] for m in owner_client.get(URL).json()["members"]}
    assert counts == {str(owner.pk): 0, str(member.pk): 1}


@pytest.mark.parametrize(("plan", "max_members", "admin_role"),
                         [("free", 2, False), ("starter", 5, False), ("scale", 50, True), ("enterprise", None, True)])
def test_the_plan_seat_limit_and_admin_role_come_from_the_plan_table(session_client, plan, max_members, admin_role):
    owner = factories.make_user(org=factories.make_org(plan=plan))
    body = session_client(owner).get(URL).json()
    assert (body["plan"], body["max_members"], body["admin_role"]) == (plan, max_members, admin_role)


def test_another_organizations_members_never_appear(owner_client, owner, outsider, outsider_client):
    assert [m["user_id"] for m in owner_client.get(URL).json()["members"]] == [str(owner.pk)]
    assert [m["user_id"] for m in outsider_client.get(URL).json()["members"]] == [str(outsider.pk)]


def test_an_organization_api_key_is_401(key_client, org, owner):
    assert_error(key_client(org).get(URL), 401, "authentication_required")


def test_a_personal_api_key_is_401(personal_key_client, owner):
    assert_error(personal_key_client(owner).get(URL), 401, "authentication_required")


def test_no_credential_is_401(api_client):
    response = api_client.get(URL)
    assert_error(response, 401, "authentication_required")
    assert response["WWW-Authenticate"].startswith("Bearer")


def _queries(client) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(URL)
    assert response.status_code == 200
    return len([q for q in captured.captured_queries if not any(t in q["sql"] for t in SHARED_STATE_TABLES)])


def test_the_list_costs_the_same_few_queries_for_2_or_15_members(session_client, org, owner):
    # Authentication (user with organization) and one annotated member query; the rate limiter's and
    # the JWT blocklist's statements run on their own tables (Redis in production), as in test_query_counts.
    client = session_client(owner)
    factories.make_user(org=org, role="user")
    factories.make_personal_key(user=owner)
    with_two = _queries(client)
    for _ in range(13):
        member = factories.make_user(org=org, role="user")
        factories.make_personal_key(user=member)
    assert len(client.get(URL).json()["members"]) == 15
    with_fifteen = _queries(client)
    assert with_two == with_fifteen <= 3


def test_a_burst_past_the_plan_rate_is_429_with_retry_after(owner_client, monkeypatch):
    monkeypatch.setitem(PLANS, "growth", replace(PLANS["growth"], requests_per_minute=3))
    statuses = [owner_client.get(URL).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    response = owner_client.get(URL)
    assert_error(response, 429, "rate_limited")
    assert 1 <= int(response["Retry-After"]) <= 60
    assert (response["X-RateLimit-Limit"], response["X-RateLimit-Remaining"]) == ("3", "0")
