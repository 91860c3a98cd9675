"""Personal API keys: POST /v1/team/members/:user_id/api-keys, DELETE .../api-keys/:key_id,
GET /v1/team/members/me/api-keys."""

import pytest

from accounts.credentials import digest
from accounts.models import ApiKey
from accounts.services import api_keys as api_key_services
from tests import factories
from tests.teams.errors import assert_error

pytestmark = pytest.mark.django_db
MINE = "/v1/team/members/me/api-keys"


def _keys_url(user) -> str:
    return f"/v1/team/members/{user.pk}/api-keys"


def _create(client, user):
    return client.post(_keys_url(user))


def test_a_user_creates_a_personal_key_shown_once_and_stored_as_a_digest(member_client, member, org):
    response = _create(member_client, member)
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"key_id", "key", "created_at"} and body["key"].startswith("svc_key_")
    stored = ApiKey.objects.get(pk=body["key_id"])
    assert (stored.org_id, stored.user_id, stored.created_by_id) == (org.pk, member.pk, member.pk)
    assert stored.digest == digest(body["key"]) and body["key"] not in str(list(ApiKey.objects.values()))
    listed = member_client.get(MINE).json()
    assert listed == {"keys": [{"key_id": body["key_id"], "preview": body["key"][:12] + "...",
                                "created_at": body["created_at"]}], "total": 1, "page": 1, "limit": None}


def test_a_personal_key_acts_for_its_organization_on_key_routes(member_client, member, org, api_client):
    generator = factories.make_generator(org=org, formats=["image"])
    key = _create(member_client, member).json()["key"]
    header = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    listed = api_client.get("/v1/generators", **header)
    assert listed.status_code == 200
    assert [g["generator_id"] for g in listed.json()["generators"]] == [str(generator.pk)]
    assert api_client.get("/v1/billing/usage", **header).json()["plan"] == "growth"
    assert ApiKey.objects.get(user=member).last_used_at is not None


def test_a_personal_key_is_refused_on_session_routes(member_client, member, api_client):
    key = _create(member_client, member).json()["key"]
    header = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    assert_error(api_client.get(MINE, **header), 401, "authentication_required")
    assert_error(api_client.get("/v1/auth/me", **header), 401, "authentication_required")
    assert_error(api_client.get("/v1/api-keys", **header), 403, "forbidden")  # as any key there


@pytest.mark.parametrize("who", ["owner", "admin_user"])
def test_owners_and_admins_create_keys_for_any_member(request, session_client, member, who):
    actor = request.getfixturevalue(who)
    response = _create(session_client(actor), member)
    assert response.status_code == 201
    stored = ApiKey.objects.get(pk=response.json()["key_id"])
    assert (stored.user_id, stored.created_by_id) == (member.pk, actor.pk)


def test_a_user_cannot_create_a_key_for_another_member(member_client, owner):
    assert_error(_create(member_client, owner), 403, "forbidden")
    assert not ApiKey.objects.exists()


def test_another_organizations_member_is_404(owner_client, outsider):
    assert_error(_create(owner_client, outsider), 404, "not_found")
    assert not ApiKey.objects.exists()


def test_personal_keys_are_not_organization_keys(owner_client, owner):
    personal = _create(owner_client, owner).json()
    org_key = owner_client.post("/v1/api-keys", {"name": "ci"}, format="json").json()
    assert ApiKey.objects.get(pk=org_key["key_id"]).user_id is None  # created by the owner, owned by nobody
    assert [k["key_id"] for k in owner_client.get("/v1/api-keys").json()["keys"]] == [org_key["key_id"]]
    assert [k["key_id"] for k in owner_client.get(MINE).json()["keys"]] == [personal["key_id"]]
    assert_error(owner_client.delete(f"/v1/api-keys/{personal['key_id']}"), 404, "not_found")
    assert ApiKey.objects.get(pk=personal["key_id"]).revoked_at is None


def test_my_keys_are_mine_only_and_active_only(member_client, member, owner, session_client):
    factories.make_personal_key(user=owner)
    first = _create(member_client, member).json()
    second = _create(member_client, member).json()
    member_client.delete(f"{_keys_url(member)}/{first['key_id']}")
    assert [k["key_id"] for k in member_client.get(MINE).json()["keys"]] == [second["key_id"]]
    assert len(session_client(owner).get(MINE).json()["keys"]) == 1


def test_a_user_revokes_their_own_key_and_it_stops_at_once(member_client, member, api_client):
    created = _create(member_client, member).json()
    header = {"HTTP_AUTHORIZATION": f"Bearer {created['key']}"}
    assert api_client.get("/v1/billing/usage", **header).status_code == 200
    response = member_client.delete(f"{_keys_url(member)}/{created['key_id']}")
    assert response.status_code == 200 and response.json() == {"revoked": True}
    assert_error(api_client.get("/v1/billing/usage", **header), 401, "authentication_required")
    assert_error(member_client.delete(f"{_keys_url(member)}/{created['key_id']}"), 404, "not_found")


@pytest.mark.parametrize("who", ["owner", "admin_user"])
def test_owners_and_admins_revoke_any_members_key(request, session_client, member, who):
    key_id = ApiKey.objects.get(lookup_id=factories.make_personal_key(user=member)[8:20]).pk
    client = session_client(request.getfixturevalue(who))
    assert client.delete(f"{_keys_url(member)}/{key_id}").json() == {"revoked": True}


def test_a_user_cannot_revoke_another_members_key(member_client, owner):
    key_id = ApiKey.objects.get(lookup_id=factories.make_personal_key(user=owner)[8:20]).pk
    assert_error(member_client.delete(f"{_keys_url(owner)}/{key_id}"), 403, "forbidden")
    assert ApiKey.objects.get(pk=key_id).revoked_at is None


def test_a_key_named_under_the_wrong_member_or_an_organization_key_is_404(owner_client, owner, member, org):
    members_key = ApiKey.objects.get(lookup_id=factories.make_personal_key(user=member)[8:20]).pk
    org_key = ApiKey.objects.get(lookup_id=factories.make_api_key(org=org)[8:20]).pk
    assert_error(owner_client.delete(f"{_keys_url(owner)}/{members_key}"), 404, "not_found")
    assert_error(owner_client.delete(f"{_keys_url(owner)}/{org_key}"), 404, "not_found")
    assert not ApiKey.objects.filter(revoked_at__isnull=False).exists()


def test_another_organizations_member_or_key_is_404(owner_client, owner, outsider, outsider_client):
    outsiders_key = ApiKey.objects.get(lookup_id=factories.make_personal_key(user=outsider)[8:20]).pk
    assert_error(owner_client.delete(f"{_keys_url(outsider)}/{outsiders_key}"), 404, "not_found")
    owners_key = ApiKey.objects.get(lookup_id=factories.make_personal_key(user=owner)[8:20]).pk
    assert_error(outsider_client.delete(f"{_keys_url(owner)}/{owners_key}"), 404, "not_found")
    assert_error(outsider_client.delete(f"{_keys_url(outsider)}/{owners_key}"), 404, "not_found")
    assert not ApiKey.objects.filter(revoked_at__isnull=False).exists()


def test_personal_keys_count_toward_the_organizations_key_cap(member_client, member, org, monkeypatch):
    monkeypatch.setattr(api_key_services, "MAX_ACTIVE_KEYS_PER_ORG", 2)
    factories.make_api_key(org=org)
    assert _create(member_client, member).status_code == 201
    assert_error(_create(member_client, member), 400, "validation_error")


@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_key_routes_refuse_api_keys_and_need_a_credential(key_client, personal_key_client, api_client, org, member,
                                                           method):
    url = {"get": MINE, "post": _keys_url(member), "delete": f"{_keys_url(member)}/{member.pk}"}[method]
    for client in (key_client(org), personal_key_client(member), api_client):
        assert_error(getattr(client, method)(url), 401, "authentication_required")
