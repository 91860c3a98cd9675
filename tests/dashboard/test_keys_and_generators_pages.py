"""API keys (organization and personal) and generators: roles as on the API, scoping by organization."""

import base64
import uuid

import pytest

from accounts.models import ApiKey
from accounts.selectors import api_key_for_credential
from generators.models import Generator
from record_format import crypto
from tests import factories

pytestmark = pytest.mark.django_db


def _key_in(html: str) -> str:
    start = html.index('id="new-key"')
    return html[start:].split('>', 1)[1].split('<', 1)[0]  # the textarea's text


# --- organization keys -------------------------------------------------------------------------------

def test_creating_an_org_key_shows_it_once_and_it_works(owner, owner_page, org):
    response = owner_page.post("/dashboard/api-keys/new", {"name": "ci"})
    created = ApiKey.objects.get(name="ci")
    assert response.status_code == 302 and response["Location"] == f"/dashboard/api-keys/{created.pk}/created"
    assert "svc_key_" not in response["Location"]
    key = _key_in(owner_page.get(response["Location"]).content.decode())
    assert key.startswith("svc_key_")
    assert api_key_for_credential(key).org_id == org.pk
    listing = owner_page.get("/dashboard/api-keys").content.decode()
    assert key not in listing and created.preview in listing


def test_reloading_the_created_key_page_makes_no_second_key_and_hides_the_value(owner_page, org):
    created_page = owner_page.post("/dashboard/api-keys/new", {"name": "ci"})["Location"]
    key = _key_in(owner_page.get(created_page).content.decode())
    reloaded = owner_page.get(created_page)
    assert reloaded.status_code == 200
    assert key not in reloaded.content.decode() and "was already shown" in reloaded.content.decode()
    assert ApiKey.objects.for_org(org).count() == 1


def test_the_new_key_waits_in_the_session_sealed_never_in_plain_text(owner_page):
    from django.contrib.sessions.models import Session

    created_page = owner_page.post("/dashboard/api-keys/new", {"name": "ci"})["Location"]
    before = "".join(str(session.get_decoded()) for session in Session.objects.all())
    key = _key_in(owner_page.get(created_page).content.decode())
    assert "dashboard_one_time_secrets" in before  # kept, sealed
    assert key not in before and key[len("svc_key_"):] not in before
    after = "".join(str(session.get_decoded()) for session in Session.objects.all())
    assert ApiKey.objects.get(name="ci").pk.hex not in after.replace("-", "")  # gone once shown


def test_the_created_key_page_is_never_cached_and_a_head_does_not_use_up_the_showing(owner_page):
    created_page = owner_page.post("/dashboard/api-keys/new", {"name": "ci"})["Location"]
    assert owner_page.head(created_page).status_code == 200
    shown = owner_page.get(created_page)
    assert "no-store" in shown["Cache-Control"] and _key_in(shown.content.decode()).startswith("svc_key_")


def test_another_member_opening_the_created_key_page_sees_no_key(owner_page, admin_user, page_client, org):
    created_page = owner_page.post("/dashboard/api-keys/new", {"name": "ci"})["Location"]
    assert page_client(admin_user).get(created_page).status_code == 404  # admins manage keys, but not this page
    assert "new-key" in owner_page.get(created_page).content.decode()  # still there for its maker


def test_opening_the_create_address_makes_nothing_and_leads_to_the_form(owner_page, org):
    response = owner_page.get("/dashboard/api-keys/new", follow=True)
    assert response.redirect_chain == [("/dashboard/api-keys", 302)]
    assert "Create a key with the form on this page." in response.content.decode()
    assert ApiKey.objects.for_org(org).count() == 0


def test_users_see_org_keys_but_may_not_create_or_revoke_them(member, page_client, org):
    factories.make_api_key(org=org, name="shared")
    client = page_client(member)
    page = client.get("/dashboard/api-keys").content.decode()
    assert "shared" in page and "Create an organization key" not in page
    assert client.post("/dashboard/api-keys/new", {"name": "x"}).status_code == 403
    key = ApiKey.objects.get(name="shared")
    assert client.post(f"/dashboard/api-keys/{key.pk}/revoke").status_code == 403
    assert key.__class__.objects.get(pk=key.pk).revoked_at is None


def test_revoking_an_org_key_asks_first_then_revokes(admin_user, page_client, org):
    raw = factories.make_api_key(org=org, name="old")
    key = ApiKey.objects.get(name="old")
    client = page_client(admin_user)
    confirm = client.get(f"/dashboard/api-keys/{key.pk}/revoke")
    assert confirm.status_code == 200 and "cannot be undone" in confirm.content.decode()
    assert api_key_for_credential(raw) is not None
    assert client.post(f"/dashboard/api-keys/{key.pk}/revoke")["Location"] == "/dashboard/api-keys"
    assert api_key_for_credential(raw) is None


def test_another_organizations_key_is_not_found(owner_page, other_org):
    factories.make_api_key(org=other_org, name="theirs")
    theirs = ApiKey.objects.get(name="theirs")
    assert owner_page.get(f"/dashboard/api-keys/{theirs.pk}/revoke").status_code == 404
    assert owner_page.post(f"/dashboard/api-keys/{theirs.pk}/revoke").status_code == 404
    assert "theirs" not in owner_page.get("/dashboard/api-keys").content.decode()


def test_personal_keys_are_made_shown_once_and_revoked_by_their_member(member, page_client):
    client = page_client(member)
    response = client.post("/dashboard/api-keys/personal/new")
    key = ApiKey.objects.get(user=member)
    assert response.status_code == 302 and response["Location"] == f"/dashboard/api-keys/{key.pk}/created"
    raw = _key_in(client.get(response["Location"]).content.decode())
    assert api_key_for_credential(raw).pk == key.pk
    assert key.preview in client.get("/dashboard/api-keys").content.decode()
    client.post(f"/dashboard/api-keys/personal/{key.pk}/revoke")
    assert api_key_for_credential(raw) is None


def test_a_members_personal_key_cannot_be_revoked_from_another_members_page(member, owner, page_client, org):
    from accounts.services import personal_api_key_create

    theirs = personal_api_key_create(org=org, user=owner, created_by=owner).api_key
    assert page_client(member).post(f"/dashboard/api-keys/personal/{theirs.pk}/revoke").status_code == 404


# --- generators --------------------------------------------------------------------------------------

def test_registering_a_server_managed_generator_with_chosen_formats(owner_page, org):
    response = owner_page.post("/dashboard/generators", {"name": "diffusion", "supported_formats": ["image", "text"]})
    generator = Generator.objects.for_org(org).get(name="diffusion")
    assert response["Location"] == f"/dashboard/generators/{generator.pk}"
    assert (generator.mode, generator.supported_formats) == ("server", ["image", "text"])
    page = owner_page.get(response["Location"]).content.decode()
    assert generator.keys.get().kid in page and "server-managed" in page


def test_registering_a_client_managed_generator_with_a_pasted_public_key(owner_page, org):
    _, public = crypto.generate_keypair()
    owner_page.post("/dashboard/generators", {"name": "local", "supported_formats": ["image"], "kid": "k1",
                                              "public_key": base64.b64encode(public).decode()})
    generator = Generator.objects.for_org(org).get(name="local")
    assert generator.mode == "client" and generator.keys.get().kid == "k1"


def test_a_bad_public_key_is_shown_on_the_form_and_nothing_is_registered(owner_page, org):
    response = owner_page.post("/dashboard/generators", {"name": "bad", "supported_formats": ["image"],
                                                         "public_key": base64.b64encode(b"short").decode()})
    assert response.status_code == 400 and "1952 bytes" in response.content.decode()
    assert not Generator.objects.for_org(org).exists()


def test_a_hybrid_generator_is_registered_and_shown_and_refused_for_a_pasted_key(owner_page, org):
    response = owner_page.post("/dashboard/generators", {"name": "hybrid", "supported_formats": ["image"],
                                                         "c2pa_signing": "hybrid"})
    generator = Generator.objects.for_org(org).get(name="hybrid")
    assert generator.c2pa_signing == "hybrid"
    assert "ES256 under the deployment" in owner_page.get(response["Location"]).content.decode()
    _, public = crypto.generate_keypair()
    refused = owner_page.post("/dashboard/generators", {"name": "local", "supported_formats": ["image"],
                                                        "c2pa_signing": "hybrid",
                                                        "public_key": base64.b64encode(public).decode()})
    assert refused.status_code == 400 and "server-managed" in refused.content.decode()
    assert not Generator.objects.for_org(org).filter(name="local").exists()


def test_rotating_a_server_managed_generator_retires_the_old_kid(owner_page, org):
    generator = factories.make_generator(org=org)
    old = generator.keys.get().kid
    assert owner_page.post(f"/dashboard/generators/{generator.pk}/rotate").status_code == 302
    keys = list(generator.keys.order_by("created_at"))
    assert keys[0].kid == old and keys[0].retired_at is not None and keys[1].retired_at is None
    assert keys[1].kid in owner_page.get(f"/dashboard/generators/{generator.pk}").content.decode()


def test_rotating_a_client_managed_generator_needs_the_new_public_key(owner_page, org):
    generator, _ = factories.make_client_generator(org=org)
    assert owner_page.post(f"/dashboard/generators/{generator.pk}/rotate").status_code == 400
    _, public = crypto.generate_keypair()
    done = owner_page.post(f"/dashboard/generators/{generator.pk}/rotate",
                           {"public_key": base64.b64encode(public).decode(), "kid": "k2"})
    assert done.status_code == 302 and generator.keys.filter(kid="k2", retired_at__isnull=True).exists()


def test_revoking_needs_the_typed_name(member, page_client, org):
    generator = factories.make_generator(org=org, name="diffusion")
    client = page_client(member)  # like the API, any member manages generators
    assert "Type diffusion to confirm" in client.get(f"/dashboard/generators/{generator.pk}/revoke").content.decode()
    wrong = client.post(f"/dashboard/generators/{generator.pk}/revoke", {"confirmation": "diffusio"})
    assert wrong.status_code == 400
    generator.refresh_from_db()
    assert generator.status == "active"
    client.post(f"/dashboard/generators/{generator.pk}/revoke", {"confirmation": "diffusion"})
    generator.refresh_from_db()
    assert generator.status == "revoked"


def test_another_organizations_generator_is_not_found_on_every_route(owner_page, outsider_generator):
    base = f"/dashboard/generators/{outsider_generator.pk}"
    assert owner_page.get(base).status_code == 404
    assert owner_page.post(f"{base}/rotate").status_code == 404
    assert owner_page.get(f"{base}/revoke").status_code == 404
    assert owner_page.post(f"{base}/revoke", {"confirmation": "theirs"}).status_code == 404
    assert owner_page.get(f"/dashboard/generators/{uuid.uuid4()}").status_code == 404
    outsider_generator.refresh_from_db()
    assert outsider_generator.status == "active" and outsider_generator.keys.count() == 1
    assert "theirs" not in owner_page.get("/dashboard/generators").content.decode()
