import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.credentials import digest
from accounts.models import ApiKey
from accounts.selectors import api_key_for_credential
from accounts.services import api_key_touch
from tests import factories

pytestmark = pytest.mark.django_db
URL = "/v1/api-keys"
KEY_ROUTE = "/v1/generators"  # any route that takes a key; /v1/auth/me takes only a session


def test_owner_creates_a_key_shown_once_and_stored_as_a_digest(owner_client, owner):
    response = owner_client.post(URL, {"name": "ci"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"key_id", "key", "preview", "name", "created_at"}
    assert body["key"].startswith("svc_key_")
    assert body["preview"] == "svc_key_" + body["key"][8:12] + "..."
    stored = ApiKey.objects.get(pk=body["key_id"])
    assert stored.digest == digest(body["key"])
    assert body["key"] not in str(list(ApiKey.objects.values()))
    listed = owner_client.get(URL).json()["keys"]
    assert listed == [{"key_id": body["key_id"], "name": "ci", "preview": body["preview"],
                       "created_at": body["created_at"], "last_used_at": None}]


def test_a_key_authenticates_and_records_last_use(owner_client, api_client):
    key = owner_client.post(URL, {}, format="json").json()
    assert _key_route_status(api_client, {"HTTP_AUTHORIZATION": f"Bearer {key['key']}"}) == 200
    assert ApiKey.objects.get(pk=key["key_id"]).last_used_at is not None


def test_looking_a_key_up_writes_nothing_and_touching_it_writes_once_a_minute(org):
    raw = factories.make_api_key(org=org)
    api_key = api_key_for_credential(raw)
    assert api_key is not None and ApiKey.objects.get(pk=api_key.pk).last_used_at is None  # a read is a read
    api_key_touch(api_key=api_key)
    first_use = ApiKey.objects.get(pk=api_key.pk).last_used_at
    assert first_use is not None
    with CaptureQueriesContext(connection) as captured:
        api_key_touch(api_key=api_key_for_credential(raw))
    assert len(captured) == 1  # the lookup only: within the minute, no second write
    assert ApiKey.objects.get(pk=api_key.pk).last_used_at == first_use


def test_admin_can_create_and_revoke(session_client, admin_user):
    client = session_client(admin_user)
    key_id = client.post(URL, {}, format="json").json()["key_id"]
    assert client.delete(f"{URL}/{key_id}").json() == {"revoked": True}


def test_a_plain_user_can_list_but_not_create_or_revoke(session_client, member, owner_client):
    key_id = owner_client.post(URL, {}, format="json").json()["key_id"]
    client = session_client(member)
    assert client.get(URL).status_code == 200
    response = client.post(URL, {}, format="json")
    assert response.status_code == 403 and response.json()["error"] == "forbidden"
    assert client.delete(f"{URL}/{key_id}").status_code == 403


def test_a_revoked_key_stops_working_at_once(owner_client, api_client, org):
    created = owner_client.post(URL, {}, format="json").json()
    header = {"HTTP_AUTHORIZATION": f"Bearer {created['key']}"}
    assert _key_route_status(api_client, header) != 401
    assert owner_client.delete(f"{URL}/{created['key_id']}").status_code == 200
    assert _key_route_status(api_client, header) == 401
    assert owner_client.get(URL).json()["keys"] == []
    assert owner_client.delete(f"{URL}/{created['key_id']}").status_code == 404


def _key_route_status(api_client, header) -> int:
    return api_client.get(KEY_ROUTE, **header).status_code


@pytest.mark.parametrize("bad", ["svc_key_", "svc_key_short", "svc_key_" + "A" * 40, "svc_key_" + "!" * 40])
def test_unknown_or_malformed_keys_are_401(api_client, bad):
    response = api_client.get(KEY_ROUTE, HTTP_AUTHORIZATION=f"Bearer {bad}")
    assert response.status_code == 401
    assert response.json()["error"] == "authentication_required"


def test_a_key_with_the_right_lookup_but_wrong_secret_is_401(owner_client, api_client):
    key = owner_client.post(URL, {}, format="json").json()["key"]
    forged = key[:-1] + ("a" if key[-1] != "a" else "b")
    assert _key_route_status(api_client, {"HTTP_AUTHORIZATION": f"Bearer {forged}"}) == 401


def test_another_organizations_keys_are_invisible_and_unrevokable(owner_client, session_client, outsider):
    key_id = owner_client.post(URL, {}, format="json").json()["key_id"]
    stranger = session_client(outsider)
    assert stranger.get(URL).json()["keys"] == []
    response = stranger.delete(f"{URL}/{key_id}")
    assert response.status_code == 404 and response.json()["error"] == "not_found"
    assert ApiKey.objects.get(pk=key_id).revoked_at is None


def test_a_malformed_key_id_is_404(owner_client):
    assert owner_client.delete(f"{URL}/not-a-uuid").status_code == 404


def test_api_key_routes_refuse_api_keys(key_client, org):
    assert key_client(org).get(URL).status_code == 403
    assert key_client(org).post(URL, {}, format="json").status_code == 403


def test_api_key_routes_need_a_credential(api_client):
    assert api_client.get(URL).status_code == 401


def test_a_key_name_over_100_characters_is_400(owner_client):
    response = owner_client.post(URL, {"name": "x" * 101}, format="json")
    assert response.status_code == 400 and "name" in response.json()["details"]
